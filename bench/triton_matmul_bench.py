#!/usr/bin/env python3
"""The python backend on one GPU, all in one run (docs/benchmarks.md):

 1. fleet: tune kernels/triton/matmul's "autotune48" config set (48 configs)
    at M=N=K=4096 through a loopback fleet (tune_bench: a coordinator and one
    --backend python worker), cold: a fresh worker cache, so a fresh
    TRITON_CACHE_DIR;
 2. autotune: @triton.autotune over the same 48 configs on the same kernel,
    in one process with a fresh TRITON_CACHE_DIR: the time of the first call
    (compiles and benchmarks every config) until the device is idle;
 3. compare, in one process: the fleet's winner, autotune's winner and cuBLAS
    (torch.matmul) at 4096^3 fp16, each timed by triton.testing.do_bench
    (median, L2 flushed between runs).

  bench/triton_matmul_bench.py --bin-dir BUILD/bin [--package-dir BUILD/python]
                               [--out DIR] [--sandbox none|bwrap]
                               [--worker-flag=F]... [--tune-bench-flag=F]...
                               [--baseline-from OTHER_OUT/summary.json]
The fleet runs on the GPUs of CUDA_VISIBLE_DEVICES (tune_bench
--worker-per-gpu=N through --tune-bench-flag: one worker per GPU); the
@triton.autotune baseline always on the first of them.
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
KERNEL_DIR = os.path.join(ROOT, "kernels", "triton", "matmul")
SIZE = 4096


def autotune_configs():
    """The spec's autotune48 set, as dicts."""
    text = open(os.path.join(KERNEL_DIR, "kernel.textproto")).read()
    block = text[text.index('name: "autotune48"'):]
    block = block[:block.index("]")]
    return [dict((k, int(v)) for k, v in (kv.split("=") for kv in c.split(",")))
            for c in re.findall(r'"([^"]+=[^"]+)"', block)]


def as_meta(config):
    return dict(config)


def child_autotune(out_path):
    """Runs in a fresh process with a fresh TRITON_CACHE_DIR."""
    sys.path.insert(0, KERNEL_DIR)
    start = time.perf_counter()
    import torch
    import triton
    import matmul as mm
    imported = time.perf_counter() - start
    configs = [triton.Config({k: c[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")},
                             num_warps=c["num_warps"], num_stages=c["num_stages"])
               for c in autotune_configs()]
    tuned = triton.autotune(configs=configs, key=["M", "N", "K"])(mm.matmul_kernel)
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    start = time.perf_counter()
    mm.launch(tuned, a, b, c)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    best = tuned.best_config
    winner = dict(best.kwargs, num_warps=best.num_warps, num_stages=best.num_stages)
    json.dump({"seconds": seconds, "import_seconds": imported, "winner": winner,
               "configs": len(configs)}, open(out_path, "w"))


def child_compare(fleet_json, autotune_json, out_path):
    sys.path.insert(0, KERNEL_DIR)
    import torch
    import triton
    import matmul as mm
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    flops = 2.0 * SIZE ** 3
    results = {}
    expected = torch.matmul(a, b)
    for name, config in (("fleet", json.loads(fleet_json)), ("autotune", json.loads(autotune_json))):
        run = mm.build(config, {"M": SIZE, "N": SIZE, "K": SIZE})
        run(a, b, c)
        torch.cuda.synchronize()
        err = ((c.float() - expected.float()).norm() / expected.float().norm()).item()
        ms = triton.testing.do_bench(lambda: run(a, b, c), warmup=100, rep=1000,
                                     return_mode="median")
        results[name] = {"config": config, "ms": ms, "tflops": flops / ms / 1e9, "rel_err": err}
    ms = triton.testing.do_bench(lambda: torch.matmul(a, b, out=c), warmup=100, rep=1000,
                                 return_mode="median")
    results["cublas"] = {"ms": ms, "tflops": flops / ms / 1e9}
    results["device"] = torch.cuda.get_device_name()
    results["versions"] = {"torch": torch.__version__, "triton": triton.__version__,
                           "python": sys.version.split()[0]}
    json.dump(results, open(out_path, "w"))


def run_fleet(args, log):
    command = [os.path.join(args.bin_dir, "tune_bench"), "--kernel", KERNEL_DIR,
               "--shape", "M=%d,N=%d,K=%d" % (SIZE, SIZE, SIZE), "--backend", "python",
               "--config-set", "autotune48", "--bin-dir", args.bin_dir,
               "--measure-budget", str(args.measure_budget), "--trials",
               "--worker-flag=--sandbox=%s" % args.sandbox,
               "--settle-seconds", str(args.settle_seconds)]
    command += ["--worker-flag=%s" % flag for flag in args.worker_flag]
    command += args.tune_bench_flag
    print("$ " + " ".join(command), flush=True)
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    total = time.perf_counter() - start
    log.write(result.stdout + "\n" + result.stderr)
    if result.returncode != 0:
        print(result.stdout, result.stderr[-3000:])
        raise SystemExit("tune_bench failed")
    row = [l for l in result.stdout.splitlines() if l.startswith("| 1 |")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    if cells[1] != "SUCCEEDED" or "=" not in cells[10]:
        print(result.stdout[-6000:], result.stderr[-6000:])
        raise SystemExit("the fleet's tuning job %s" % cells[1])
    winner = dict((k, int(v)) for k, v in (kv.split("=") for kv in cells[10].split(",")))
    statuses = re.findall(r"^\| \S+=\S+ \| ([A-Z_]+) \|", result.stdout, re.M)
    return {"wall_seconds": float(cells[2]), "process_seconds": total, "ok_trials": cells[3],
            "compile_seconds": float(cells[6]), "best_ms": float(cells[11]), "winner": winner,
            "statuses": {s: statuses.count(s) for s in set(statuses)}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir")
    parser.add_argument("--package-dir", default="")
    parser.add_argument("--out", default=".")
    parser.add_argument("--sandbox", default="none")
    parser.add_argument("--measure-budget", type=float, default=0.1)
    # 0: the job is submitted as soon as the worker registered; more: the
    # worker has been up that long (its benchmark child started ahead).
    parser.add_argument("--settle-seconds", type=float, default=0)
    # Passed on to each worker (e.g. --compile-threads=64) and to tune_bench
    # (e.g. --worker-per-gpu=4); repeatable.
    parser.add_argument("--worker-flag", action="append", default=[])
    parser.add_argument("--tune-bench-flag", action="append", default=[])
    # A summary.json of an earlier run on the same machine: its
    # @triton.autotune figures are reused instead of measured again.
    parser.add_argument("--baseline-from", default="")
    parser.add_argument("--autotune-child")
    parser.add_argument("--compare-child", nargs=3)
    args = parser.parse_args()
    if args.autotune_child:
        return child_autotune(args.autotune_child)
    if args.compare_child:
        return child_compare(*args.compare_child)

    args.bin_dir = os.path.abspath(args.bin_dir)
    package = args.package_dir or os.path.join(os.path.dirname(args.bin_dir), "python")
    os.environ["TUNEFLEET_PYTHON_PACKAGE"] = os.path.abspath(package)
    os.makedirs(args.out, exist_ok=True)
    python = os.environ.get("TUNEFLEET_PYTHON", sys.executable)
    log = open(os.path.join(args.out, "triton_matmul_bench.log"), "w")

    fleet = run_fleet(args, log)
    print("fleet: %s" % json.dumps(fleet), flush=True)

    autotune_out = os.path.join(args.out, "autotune.json")
    if args.baseline_from:
        autotune = json.load(open(os.path.join(os.path.dirname(args.baseline_from),
                                               "autotune.json")))
    else:
        cache = tempfile.mkdtemp(prefix="triton-cache-")
        env = dict(os.environ, TRITON_CACHE_DIR=cache)
        start = time.perf_counter()
        subprocess.run([python, os.path.abspath(__file__), "--autotune-child", autotune_out],
                       env=env, check=True)
        autotune = json.load(open(autotune_out))
        autotune["process_seconds"] = time.perf_counter() - start
        json.dump(autotune, open(autotune_out, "w"))
    print("autotune: %s" % json.dumps(autotune), flush=True)

    compare_out = os.path.join(args.out, "compare.json")
    subprocess.run([python, os.path.abspath(__file__), "--compare-child",
                    json.dumps(fleet["winner"]), json.dumps(autotune["winner"]), compare_out],
                   check=True)
    compare = json.load(open(compare_out))
    print("compare: %s" % json.dumps(compare), flush=True)

    f, a, c = compare["fleet"], compare["autotune"], compare["cublas"]
    summary = {
        "device": compare["device"], "versions": compare["versions"],
        "fleet_tune_s": fleet["wall_seconds"], "fleet_process_s": fleet["process_seconds"],
        "autotune_tune_s": autotune["seconds"], "autotune_process_s": autotune["process_seconds"],
        "speedup_tune": autotune["seconds"] / fleet["wall_seconds"],
        "speedup_process": autotune["process_seconds"] / fleet["process_seconds"],
        "fleet_winner": fleet["winner"], "autotune_winner": autotune["winner"],
        "fleet_tflops": f["tflops"], "autotune_tflops": a["tflops"], "cublas_tflops": c["tflops"],
        "fleet_vs_cublas": c["ms"] / f["ms"], "winner_gap": f["ms"] / a["ms"] - 1,
        "fleet_statuses": fleet["statuses"],
    }
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    print("\n| what | value |\n|---|---|")
    for k, v in summary.items():
        print("| %s | %s |" % (k, v if not isinstance(v, float) else "%.4g" % v))


if __name__ == "__main__":
    sys.exit(main())
