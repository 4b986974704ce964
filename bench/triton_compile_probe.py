#!/usr/bin/env python3
"""A host's compile servers starting together (docs/benchmarks.md, "The MoE
sweep without CUDA contexts in the compile servers"): n Python processes,
pinned to the given cores, each import torch and triton and then warm three
kernels/triton/fused_moe configs on meta tensors in Triton's warm-up mode,
as python/tunefleet/backend/compile.py does; "stock" lets Triton ask CUDA
for the device, stream and target (which creates a CUDA context), "patched"
tells it the target. Prints the import time, the first and later compiles,
and how many processes ended with a CUDA context.

  bench/triton_compile_probe.py        (on a GPU host with torch and triton)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KDIR = os.path.join(ROOT, "kernels", "triton", "fused_moe")

CONFIGS = [dict(BLOCK_SIZE_M=m, BLOCK_SIZE_N=n, BLOCK_SIZE_K=k, GROUP_SIZE_M=g, num_warps=w,
                num_stages=3)
           for m in (16, 64, 128) for n in (64, 128) for k in (64, 128) for g in (1, 16)
           for w in (4, 8)]
SHAPE = dict(M=1, N=3584, K=4096, E=8, TOPK=2)


def child(index, capability, count):
    """Imports torch and triton, then warms `count` configs; capability 0
    leaves Triton to ask CUDA. Prints one JSON line."""
    began = time.time()
    import torch
    import triton  # noqa: F401
    imported = time.time() - began
    from triton.runtime import jit
    if capability:
        from triton.backends.compiler import GPUTarget
        from triton.runtime import driver
        target = GPUTarget("cuda", capability, 32)
        active = driver.active
        active.get_current_device = lambda: 0
        active.get_current_stream = lambda device=None: 0
        active.get_current_target = lambda: target
    sys.path.insert(0, KDIR)
    import fused_moe
    mock = jit.MockTensor
    original = jit.JITFunction.run

    def wrap(value):
        return mock(value.dtype) if isinstance(value, torch.Tensor) else value

    def run(fn, *args, grid, warmup, **kwargs):
        return original(fn, *[wrap(a) for a in args], grid=grid, warmup=True,
                        **{k: wrap(v) for k, v in kwargs.items()})

    jit.JITFunction.run = run
    M, N, K, E, TOPK = (SHAPE[d] for d in ("M", "N", "K", "E", "TOPK"))
    args = [torch.empty(M, K, dtype=torch.float16, device="meta"),
            torch.empty(E, N, K, dtype=torch.float16, device="meta"),
            torch.empty(M, E, dtype=torch.float32, device="meta"),
            torch.empty(M, TOPK, N, dtype=torch.float16, device="meta")]
    times = []
    for j in range(count):
        started = time.time()
        fused_moe.build(CONFIGS[(index * count + j) % len(CONFIGS)], SHAPE)(*args)
        times.append(time.time() - started)
    print(json.dumps(dict(import_s=imported, compile_s=times,
                          cuda_init=torch.cuda.is_initialized())))


def group(n, cores, patch, capability, count, tag):
    """n children at once, child i pinned to cores[i % len(cores)], each with
    its own fresh TRITON_CACHE_DIR; prints one line of medians."""
    base = tempfile.mkdtemp(prefix="tc-")
    began = time.time()
    procs = []
    for i in range(n):
        env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(base, str(i)))
        procs.append(subprocess.Popen(
            ["taskset", "-c", cores[i % len(cores)], sys.executable, __file__, "child", str(i),
             str(capability if patch else 0), str(count)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate()[0] for p in procs]
    wall = time.time() - began
    rows = []
    for out in outs:
        found = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if not found:
            print(out[-2000:])
        rows += found
    first = sorted(r["compile_s"][0] for r in rows)
    rest = sorted(x for r in rows for x in r["compile_s"][1:])
    imported = sorted(r["import_s"] for r in rows)

    def med(values):
        return values[len(values) // 2] if values else float("nan")

    print("%-30s wall %6.2f s | import med %5.2f max %5.2f | first compile med %5.2f max %5.2f"
          " | later med %5.2f | CUDA context in %d of %d"
          % (tag, wall, med(imported), imported[-1], med(first), first[-1], med(rest),
             sum(r["cuda_init"] for r in rows), len(rows)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    major, minor = subprocess.run(
        ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
        capture_output=True, text=True, check=True).stdout.split()[0].split(".")
    capability = int(major) * 10 + int(minor)
    for patch in (False, True):
        how = "told the target" if patch else "stock"
        for n, cores, where in ((1, ["0-15"], "16 cores"), (16, ["0-15"], "16 cores"),
                                (64, ["0-15", "16-31", "32-47", "48-63"], "4 x 16 cores"),
                                (64, ["0-63"], "64 cores")):
            group(n, cores, patch, capability, 3, "%d on %s, %s" % (n, where, how))
