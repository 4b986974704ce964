#!/usr/bin/env python3
"""A serving engine's MoE sweep, through the fleet and in one process, in one
run (docs/benchmarks.md, "A fleet faster than its parts"):

 1. loop: kernels/triton/fused_moe's "sweep48" configs tuned shape after
    shape in one process, the way serving engines' MoE tuning scripts do it:
    for each batch size, for each config, a first call (compile, routing),
    a CUDA graph of 10 calls, 5 warm-up replays and --loop-iters timed
    replays; the fastest mean wins. A fresh TRITON_CACHE_DIR, the last GPU
    and its 16 cores, beside the fleet runs that do not need them.
 2. fleet: the same 48 configs at the same batch sizes, submitted as one
    sweep to a loopback fleet (tune_bench --sweep --backend python) on
    1, 2, ... GPUs, 16 cores per GPU, a worker per GPU and/or one worker for
    all (--layouts), cold (fresh worker caches), the workers up
    --settle-seconds before the submission.
 3. compare, in one process on the first GPU: every shape's winners (the
    loop's and each fleet run's) timed again by triton.testing.do_bench.

  bench/moe_sweep_bench.py --bin-dir BUILD/bin [--package-dir BUILD/python]
                           [--out DIR] [--gpus 1,2,4] [--layouts per-gpu,shared]
                           [--batch-sizes 1,2,...] [--loop-iters 100] [--skip-loop]
Prints a table per part and writes DIR/summary.json.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNEL_DIR = os.path.join(ROOT, "kernels", "triton", "fused_moe")
CONFIG_SET = "sweep48"
# The batch sizes serving engines tune their fused-MoE configs for.
BATCH_SIZES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096]
CORES_PER_GPU = 16


def config_set():
    """The spec's sweep48 set, as short-form strings."""
    text = open(os.path.join(KERNEL_DIR, "kernel.textproto")).read()
    block = text[text.index('name: "%s"' % CONFIG_SET):]
    block = block[:block.index("]")]
    return re.findall(r'"([^"]+=[^"]+)"', block)


def as_dict(short):
    """A short-form config or shape ("A=1,B=2") as a dict of ints."""
    return dict((k, int(v)) for k, v in (kv.split("=") for kv in short.split(",")))


def brief(short):
    """BLOCK_SIZE_M/N/K, GROUP_SIZE_M, warps and stages as 64/128/64 g16 w4 s3."""
    if not short:
        return "-"
    c = as_dict(short)
    return "%d/%d/%d g%d w%d s%d" % (c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["BLOCK_SIZE_K"],
                                     c["GROUP_SIZE_M"], c["num_warps"], c["num_stages"])


def shape_text(dims):
    return ",".join("%s=%d" % kv for kv in dims.items())


def shapes_of(args):
    return [dict(M=m, N=args.n, K=args.k, E=args.experts, TOPK=args.topk)
            for m in args.batch_sizes]


# The inputs as the fleet's benchmark child draws them for a job of seed 0
# (python/tunefleet/backend/bench_child.py: argument i from a CUDA generator
# seeded i, floats drawn in fp32 and rounded), so that the loop, the fleet and
# the comparison tune the same routing: which BLOCK_SIZE_M pads least depends
# on how many pairs each expert got.
def _drawn(torch, dims, seed, normal=False):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    out = torch.empty(dims, dtype=torch.float32, device="cuda")
    if normal:
        return out.normal_(0.0, 1.0, generator=gen)
    return out.uniform_(-1.0, 1.0, generator=gen)


def make_inputs(torch, dims):
    hidden = _drawn(torch, [dims["M"], dims["K"]], 0).half()
    logits = _drawn(torch, [dims["M"], dims["E"]], 2, normal=True)
    out = torch.empty(dims["M"], dims["TOPK"], dims["N"], device="cuda", dtype=torch.float16)
    return hidden, logits, out


def make_weights(torch, dims):
    return _drawn(torch, [dims["E"], dims["N"], dims["K"]], 1).half()


# ---- 1. the single-process loop --------------------------------------------
def graph_mean_seconds(torch, fn, iters):
    """A serving engine's tuning script's timing of one config: a CUDA graph of
    10 calls, 5 warm-up replays, then `iters` replays each between events;
    the mean per call."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(10):
            fn()
    torch.cuda.synchronize()
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    total = 0.0
    for _ in range(iters):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        total += start.elapsed_time(end) / 1e3
    graph.reset()
    return total / iters / 10


def child_loop(shapes_json, iters, out_path):
    """Runs in a fresh process with a fresh TRITON_CACHE_DIR."""
    began = time.perf_counter()
    sys.path.insert(0, KERNEL_DIR)
    import torch
    import fused_moe
    imported = time.perf_counter() - began
    shapes = json.loads(shapes_json)
    configs = config_set()
    weights = make_weights(torch, shapes[0])
    results = []
    start = time.perf_counter()
    for number, dims in enumerate(shapes):
        shape_began = time.perf_counter()
        hidden, logits, out = make_inputs(torch, dims)
        best = None
        failed = 0
        for short in configs:
            try:
                run = fused_moe.build(as_dict(short), dims)
                run(hidden, weights, logits, out)  # compiles, routes
                torch.cuda.synchronize()
                seconds = graph_mean_seconds(torch, lambda: run(hidden, weights, logits, out),
                                             iters)
            except Exception as error:  # out of resources: the engines skip it too
                failed += 1
                print("loop: %s %s: %s" % (shape_text(dims), short, str(error)[:200]), flush=True)
                continue
            if best is None or seconds < best[1]:
                best = (short, seconds)
        results.append({"shape": shape_text(dims), "winner": best[0] if best else None,
                        "ms": best[1] * 1e3 if best else None, "failed": failed,
                        "seconds": time.perf_counter() - shape_began})
        print("loop: %s -> %s (%.2f s)" % (results[-1]["shape"], results[-1]["winner"],
                                           results[-1]["seconds"]), flush=True)
    json.dump({"seconds": time.perf_counter() - start, "import_seconds": imported,
               "iters": iters, "shapes": results}, open(out_path, "w"), indent=1)


class Loop:
    """The loop, started in the background on the last GPU and its 16 cores,
    so that fleet runs on the other GPUs and cores go on beside it."""

    def __init__(self, args, out_dir):
        self.out_path = os.path.join(out_dir, "loop.json")
        self.device = len(args.devices) - 1
        cores = "%d-%d" % (self.device * CORES_PER_GPU, (self.device + 1) * CORES_PER_GPU - 1)
        env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-loop-"),
                   CUDA_VISIBLE_DEVICES=args.devices[self.device])
        command = ["taskset", "-c", cores, args.python, os.path.abspath(__file__),
                   "--loop-child", json.dumps(shapes_of(args)), str(args.loop_iters),
                   self.out_path]
        print("$ CUDA_VISIBLE_DEVICES=%s %s" % (env["CUDA_VISIBLE_DEVICES"], " ".join(command)),
              flush=True)
        self.began = time.perf_counter()
        self.log = open(os.path.join(out_dir, "loop.log"), "w")
        self.process = subprocess.Popen(command, env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT)

    def wait(self):
        if self.process.wait() != 0:
            raise SystemExit("the loop failed: see loop.log")
        loop = json.load(open(self.out_path))
        loop["process_seconds"] = time.perf_counter() - self.began
        loop["device_index"] = self.device
        return loop


# ---- 2. the fleet ------------------------------------------------------------
def run_fleet(args, gpus, layout, out_dir):
    command = ["taskset", "-c", "0-%d" % (gpus * CORES_PER_GPU - 1),
               os.path.join(args.bin_dir, "tune_bench"), "--kernel", KERNEL_DIR,
               "--backend", "python", "--config-set", CONFIG_SET, "--sweep",
               "--bin-dir", args.bin_dir, "--measure-budget", str(args.measure_budget),
               "--worker-flag=--sandbox=%s" % args.sandbox,
               "--worker-flag=--log-level=debug",  # each trial's phases in the child
               "--settle-seconds", str(args.settle_seconds)]
    for dims in shapes_of(args):
        command += ["--shape", shape_text(dims)]
    if layout == "per-gpu" and gpus > 1:
        command += ["--worker-per-gpu", str(gpus)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(args.devices[:gpus]))
    print("$ CUDA_VISIBLE_DEVICES=%s %s" % (env["CUDA_VISIBLE_DEVICES"], " ".join(command)),
          flush=True)
    began = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    process_seconds = time.perf_counter() - began
    with open(os.path.join(out_dir, "fleet-%dgpu-%s.log" % (gpus, layout)), "w") as log:
        log.write(result.stdout + "\n" + result.stderr)
    if result.returncode != 0:
        print(result.stdout[-4000:], result.stderr[-4000:])
        raise SystemExit("tune_bench failed on %d GPU(s)" % gpus)
    shapes = []
    for line in result.stdout.splitlines():
        # | shape | state | done at s | ok/trials | best config | best ms |
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("M="):
            shapes.append({"shape": cells[0], "state": cells[1], "done_at": float(cells[2]),
                           "ok_trials": cells[3], "winner": cells[4] if "=" in cells[4] else None,
                           "ms": float(cells[5])})
    match = re.search(r"sweep wall ([\d.]+) s, device idle ([\d.]+) s", result.stdout)
    if not match or not shapes:
        print(result.stdout[-4000:])
        raise SystemExit("no sweep rows from tune_bench")
    return {"gpus": gpus, "layout": layout if gpus > 1 else "one worker",
            "wall_seconds": float(match.group(1)), "device_idle_seconds": float(match.group(2)),
            "process_seconds": process_seconds, "shapes": shapes,
            "first_result_seconds": first_result_seconds(result.stdout + result.stderr),
            "phases": child_phases(result.stdout + result.stderr)}


def _log_time(line):
    """Seconds since midnight of a daemon log line (2026-11-27T00:47:59.408 ...)."""
    clock = line[11:23]
    hours, minutes, seconds = clock.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def first_result_seconds(log):
    """From the sweep's first submission to the first trial result."""
    submitted = result = None
    for line in log.splitlines():
        if submitted is None and "coordinator: job" in line and "submitted by" in line:
            submitted = _log_time(line)
        elif submitted is not None and re.search(r"worker: trial \d+: ", line):
            result = _log_time(line)
            break
    if submitted is None or result is None:
        return None
    return (result - submitted) % 86400  # across midnight too


def child_phases(log):
    """Mean milliseconds per trial of each phase in the benchmark children
    and the rest of the worker's wait for them (the workers' debug lines
    "trial N: ms: load a, check b, warm-up c, samples d, outside the child e")."""
    sums, count = {}, 0
    for match in re.finditer(r"ms: load ([\d.]+), check ([\d.]+), warm-up ([\d.]+), "
                             r"samples ([\d.]+), outside the child (-?[\d.]+)", log):
        count += 1
        for name, value in zip(("load", "check", "warm-up", "samples", "outside"),
                               match.groups()):
            sums[name] = sums.get(name, 0.0) + float(value)
    return {"trials": count, **{k: v / count for k, v in sums.items()}} if count else None


# ---- 3. the winners timed side by side ---------------------------------------
def child_compare(candidates_json, out_path):
    sys.path.insert(0, KERNEL_DIR)
    import torch
    import triton
    import fused_moe
    candidates = json.loads(candidates_json)  # shape -> [short configs]
    first = as_dict(next(iter(candidates)))
    weights = make_weights(torch, first)
    times = {}
    for number, (shape, configs) in enumerate(candidates.items()):
        dims = as_dict(shape)
        hidden, logits, out = make_inputs(torch, dims)
        expected = torch.empty_like(out)
        fused_moe.reference(hidden, weights, logits, expected)
        times[shape] = {}
        for short in configs:
            run = fused_moe.build(as_dict(short), dims)
            run(hidden, weights, logits, out)
            torch.cuda.synchronize()
            error = ((out.float() - expected.float()).norm() / expected.float().norm()).item()
            ms = triton.testing.do_bench(lambda: run(hidden, weights, logits, out), warmup=25,
                                         rep=200, return_mode="median")
            times[shape][short] = {"ms": ms, "rel_err": error}
    json.dump({"device": torch.cuda.get_device_name(), "times": times,
               "versions": {"torch": torch.__version__, "triton": triton.__version__}},
              open(out_path, "w"), indent=1)


def compare(args, loop, fleets, out_dir):
    candidates = {}
    for run in ([loop] if loop else []) + fleets:
        for row in run["shapes"]:
            if row.get("winner"):
                candidates.setdefault(row["shape"], [])
                if row["winner"] not in candidates[row["shape"]]:
                    candidates[row["shape"]].append(row["winner"])
    out_path = os.path.join(out_dir, "compare.json")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=args.devices[0],
               TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-compare-"))
    subprocess.run([args.python, os.path.abspath(__file__), "--compare-child",
                    json.dumps(candidates), out_path], env=env, check=True)
    return json.load(open(out_path))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir")
    parser.add_argument("--package-dir", default="")
    parser.add_argument("--out", default=".")
    parser.add_argument("--sandbox", default="none")
    parser.add_argument("--measure-budget", type=float, default=0.1)
    parser.add_argument("--gpus", default="1,2,4", help="fleet runs: GPU counts")
    # per-gpu: a worker per GPU, each with its 16 cores (a fleet of one-GPU
    # hosts); shared: one worker with every GPU and core. Runs of more than
    # one GPU are made in each layout listed.
    parser.add_argument("--layouts", default="per-gpu")
    parser.add_argument("--batch-sizes", default=",".join(map(str, BATCH_SIZES)))
    parser.add_argument("--n", type=int, default=3584, help="output features per expert")
    parser.add_argument("--k", type=int, default=4096, help="hidden size")
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--topk", type=int, default=2)
    # The workers run this long before the sweep is submitted, as a fleet's
    # have (their benchmark children started, torch imported), just as the
    # loop's time starts after its imports.
    parser.add_argument("--settle-seconds", type=float, default=20)
    parser.add_argument("--loop-iters", type=int, default=100)
    parser.add_argument("--skip-loop", action="store_true")
    parser.add_argument("--loop-child", nargs=3)
    parser.add_argument("--compare-child", nargs=2)
    args = parser.parse_args()
    if args.loop_child:
        return child_loop(args.loop_child[0], int(args.loop_child[1]), args.loop_child[2])
    if args.compare_child:
        return child_compare(*args.compare_child)

    args.batch_sizes = [int(m) for m in args.batch_sizes.split(",")]
    args.bin_dir = os.path.abspath(args.bin_dir)
    args.python = os.environ.get("TUNEFLEET_PYTHON", sys.executable)
    package = args.package_dir or os.path.join(os.path.dirname(args.bin_dir), "python")
    os.environ["TUNEFLEET_PYTHON_PACKAGE"] = os.path.abspath(package)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    gpu_counts = [int(g) for g in args.gpus.split(",")]
    args.devices = visible.split(",") if visible else [str(i) for i in range(max(gpu_counts))]
    os.makedirs(args.out, exist_ok=True)

    # The loop runs on the last GPU beside the fleet runs that leave it free.
    background = None if args.skip_loop else Loop(args, args.out)
    loop = None
    fleets = []
    runs = [(gpus, layout) for gpus in sorted(gpu_counts)
            for layout in (args.layouts.split(",") if gpus > 1 else ["shared"])]
    for gpus, layout in runs:
        if background and gpus > background.device:
            loop, background = background.wait(), None
        fleets.append(run_fleet(args, gpus, layout, args.out))
        print("fleet %d GPU(s), %s: sweep %.2f s, process %.2f s, device idle %.2f s" % (
            gpus, layout, fleets[-1]["wall_seconds"], fleets[-1]["process_seconds"],
            fleets[-1]["device_idle_seconds"]), flush=True)
    if background:
        loop = background.wait()
    gpu_counts = sorted(gpu_counts)
    if loop:
        print("loop: %.2f s (process %.2f s)" % (loop["seconds"], loop["process_seconds"]),
              flush=True)
    timed = compare(args, loop, fleets, args.out)

    base = fleets[0]["wall_seconds"]
    print("\n%d shapes x %d configs (%s), N=%d K=%d E=%d TOPK=%d, %s" % (
        len(args.batch_sizes), len(config_set()), CONFIG_SET, args.n, args.k, args.experts,
        args.topk, timed["device"]))
    print("\n| run | GPUs | layout | tune s | process s | vs %d GPU | vs loop | device idle s |"
          % gpu_counts[0])
    print("|---|---|---|---|---|---|---|---|")
    if loop:
        print("| loop (one process, %d iters) | 1 | - | %.2f | %.2f | - | 1.00x | - |" % (
            loop["iters"], loop["seconds"], loop["process_seconds"]))
    for f in fleets:
        print("| fleet sweep | %d | %s | %.2f | %.2f | %.2fx | %s | %.2f |" % (
            f["gpus"], f["layout"], f["wall_seconds"], f["process_seconds"],
            base / f["wall_seconds"],
            "%.2fx" % (loop["seconds"] / f["wall_seconds"]) if loop else "-",
            f["device_idle_seconds"]))

    print("\nWhere a trial's time went: the first result after the submission, the"
          " benchmark children's mean milliseconds per trial, and the rest of the worker's"
          " wait for them (outside).")
    print("\n| run | first result s | trials | load ms | check ms | warm-up ms | samples ms"
          " | outside ms |")
    print("|---|---|---|---|---|---|---|---|")
    for f in fleets:
        ph = f["phases"] or {}
        first = f["first_result_seconds"]
        print("| %d GPU %s | %s | %s | %s |" % (
            f["gpus"], f["layout"], "%.2f" % first if first is not None else "-",
            ph.get("trials", "-"), " | ".join(
                "%.1f" % ph[k] if k in ph else "-"
                for k in ("load", "check", "warm-up", "samples", "outside"))))

    print("\nWinners as BLOCK_SIZE_M/N/K, GROUP_SIZE_M, warps, stages; each gap is the"
          " fleet winner's time over the loop winner's, both timed again here.")
    print("\n| shape | loop winner | loop ms | %s |" % " | ".join(
        "fleet %d GPU %s winner | gap" % (f["gpus"], f["layout"]) for f in fleets))
    print("|---|---|---|" + "---|---|" * len(fleets))
    gaps = []
    for number, dims in enumerate(shapes_of(args)):
        shape = shape_text(dims)
        times = timed["times"].get(shape, {})
        loop_row = next((r for r in loop["shapes"] if r["shape"] == shape), {}) if loop else {}
        reference = loop_row.get("winner")
        ref_ms = times.get(reference, {}).get("ms")
        cells = ["M=%d" % dims["M"], brief(reference),
                 "%.4f" % ref_ms if ref_ms else "-"]
        for f in fleets:
            row = next((r for r in f["shapes"] if r["shape"] == shape), {})
            got = times.get(row.get("winner"), {}).get("ms")
            gap = (got / ref_ms - 1) if got and ref_ms else None
            if gap is not None:
                gaps.append(gap)
            cells += [brief(row.get("winner")),
                      "%+.1f%%" % (100 * gap) if gap is not None else "-"]
        print("| %s |" % " | ".join(cells))
    summary = {"device": timed["device"], "versions": timed["versions"],
               "loop": loop, "fleets": fleets, "timed": timed["times"],
               "worst_gap": max(gaps) if gaps else None}
    errors = [t["rel_err"] for configs in timed["times"].values() for t in configs.values()]
    summary["worst_rel_err"] = max(errors) if errors else None
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    if gaps:
        print("\nworst winner gap against the loop's: %+.2f%%" % (100 * max(gaps)))
    if errors:
        print("largest relative error of a winner against the reference: %.2g" % max(errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
