#!/usr/bin/env python3
"""Every shipped CUDA kernel beside the best library for its job, in one run
on one GPU (scripts/gpu-bench.sh share): the fleet tunes each kernel with
bench/tune_bench (a coordinator and a CUDA worker on loopback), then

  gemm_f16         its best config and cuBLAS (the spec's reference, fp32
                   accumulation) are timed in one tunefleet-cuda-trial
                   process, on the same inputs, under the same protocol;
  flash_attn_fwd   torch's SDPA with the flash backend, and with cuDNN's
                   attention where torch and the device have it, timed here
                   with CUDA events (L2 not flushed: the library's favour);
  softmax          a device copy of the same bytes (the bandwidth bound) and
                   torch.softmax, timed likewise.

share = library time / our time (1.0: as fast; over 1: faster). Prints one
markdown table; docs/benchmarks.md ("The kernel library beside the best
libraries") keeps the figures.

  bench/library_share.py --bin-dir bundle/bin [--runner bundle/run.sh]
      [--budget 64] [--measure-budget 0.05] [--only gemm,flash,softmax]
      [--gemm-shapes M=4096,N=4096,K=4096 ...]
"""

import argparse
import os
import re
import subprocess
import sys

GEMM_SHAPES = [
    "M=4096,N=4096,K=4096", "M=8192,N=8192,K=8192", "M=3072,N=5120,K=2048",
    "M=4096,N=4096,K=1024", "M=4096,N=4096,K=8192",
    "M=1,N=4096,K=4096", "M=16,N=4096,K=4096", "M=64,N=4096,K=4096", "M=128,N=4096,K=4096",
    "M=1000,N=1032,K=1000",
]
FLASH_SHAPE = "BATCH=4,HEADS=16,SEQ=4096"
SOFTMAX_SHAPE = "ROWS=8192,COLS=8192"


def tool(args, name):
    """The command that runs a tunefleet binary (through the bundle's runner)."""
    return ([args.runner] if args.runner else []) + [os.path.join(args.bin_dir, name)]


def run(command, timeout):
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
    return done


def tune(args, kernel, shape, extra=()):
    """(best config, best ms, 'ok/trials') of one tune_bench run, or None."""
    command = tool(args, "tune_bench") + [
        "--backend", "cuda", "--bin-dir", os.path.abspath(args.bin_dir), "--kernel", kernel,
        "--shape", shape, "--measure-budget", str(args.measure_budget)] + list(extra)
    done = run(command, 600)
    for line in done.stdout.splitlines():
        if re.match(r"^\| 1 \|", line):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[1] == "SUCCEEDED" and cells[10] != "-":
                return cells[10], float(cells[11]), cells[3]
    return None


def gemm_rows(args):
    rows = []
    for shape in args.gemm_shapes:
        best = tune(args, "kernels/cuda/gemm_f16", shape,
                    ["--strategy", "model", "--budget", str(args.budget)])
        if best is None:
            rows.append(("gemm_f16", shape, "-", "-", "tuning failed", "-", "-"))
            continue
        config, _, trials = best
        # Our best and cuBLAS in one process, on the same inputs.
        done = run(tool(args, "tunefleet-cuda-trial") + [
            "--kernel", "kernels/cuda/gemm_f16", "--shape", shape, "--reference", "--budget",
            "0.3", "--config", config], 300)
        ref = re.search(r"^REFERENCE median_us=([0-9.]+)", done.stdout, re.M)
        ours = re.search(r"^RESULT OK +median_us=([0-9.]+)", done.stdout, re.M)
        if not ref or not ours:
            rows.append(("gemm_f16", shape, config, trials, "side-by-side run failed", "-", "-"))
            continue
        ref_us, our_us = float(ref.group(1)), float(ours.group(1))
        rows.append(("gemm_f16", shape, config, trials, "cuBLAS %.1f us" % ref_us,
                     "%.1f us" % our_us, "%.3f" % (ref_us / our_us)))
    return rows


def torch_median(fn, n):
    import torch
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    times.sort()
    return times[len(times) // 2]


def flash_rows(args):
    best = tune(args, "kernels/cuda/flash_attn_fwd", FLASH_SHAPE,
                ["--strategy", "model", "--budget", str(args.budget)])
    import torch
    import torch.nn.functional as F
    q, k, v = (torch.randn(4, 16, 4096, 128, dtype=torch.float16, device="cuda")
               for _ in range(3))
    libraries = []
    for name, attr in (("flash", "FLASH_ATTENTION"), ("cuDNN", "CUDNN_ATTENTION")):
        backend = getattr(torch.nn.attention.SDPBackend, attr, None)
        if backend is None:  # a backend this torch lacks
            libraries.append(("torch SDPA %s: not in torch %s" % (name, torch.__version__), None))
            continue
        try:
            with torch.nn.attention.sdpa_kernel(backend):
                us = torch_median(lambda: F.scaled_dot_product_attention(q, k, v), 30)
            libraries.append(("torch SDPA %s %.1f us" % (name, us), us))
        except RuntimeError as e:  # a backend this torch or device lacks
            libraries.append(("torch SDPA %s: %s" % (name, str(e).splitlines()[0][:80]), None))
    if best is None:
        return [("flash_attn_fwd", FLASH_SHAPE, "-", "-", library, "tuning failed", "-")
                for library, _ in libraries]
    config, best_ms, trials = best
    return [("flash_attn_fwd", FLASH_SHAPE, config, trials, library, "%.1f us" % (best_ms * 1e3),
             "%.3f" % (us / (best_ms * 1e3)) if us else "-") for library, us in libraries]


def softmax_rows(args):
    best = tune(args, "kernels/cuda/softmax", SOFTMAX_SHAPE)
    import torch
    a = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
    b = torch.empty_like(a)
    copy_us = torch_median(lambda: b.copy_(a), 50)
    softmax_us = torch_median(lambda: torch.softmax(a, dim=1), 50)
    if best is None:
        return [("softmax", SOFTMAX_SHAPE, "-", "-", "-", "tuning failed", "-")]
    config, best_ms, trials = best
    ours = best_ms * 1e3
    return [("softmax", SOFTMAX_SHAPE, config, trials, "device copy %.1f us" % copy_us,
             "%.1f us" % ours, "%.3f" % (copy_us / ours)),
            ("softmax", SOFTMAX_SHAPE, config, trials, "torch.softmax %.1f us" % softmax_us,
             "%.1f us" % ours, "%.3f" % (softmax_us / ours))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--runner", default="")
    parser.add_argument("--budget", type=int, default=64)
    parser.add_argument("--measure-budget", type=float, default=0.05)
    parser.add_argument("--only", default="gemm,flash,softmax")
    parser.add_argument("--gemm-shapes", nargs="*", default=GEMM_SHAPES)
    args = parser.parse_args()
    rows = []
    steps = {"gemm": gemm_rows, "flash": flash_rows, "softmax": softmax_rows}
    for name in args.only.split(","):
        rows += steps[name](args)
    print("| kernel | shape | best config found | ok/trials | library, same run | ours | share |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
