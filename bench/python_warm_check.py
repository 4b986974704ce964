#!/usr/bin/env python3
"""Checks the python backend's cache warming on a GPU: one compile process
(tunefleet.backend.compile) for one matmul config with a fresh
TRITON_CACHE_DIR, then a fresh process that launches the same config and
times its first launch (a cache hit takes milliseconds, a compile seconds).

  PYTHONPATH=BUILD/python python3 bench/python_warm_check.py
"""

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = os.path.join(ROOT, "kernels", "triton", "matmul")
CONFIG = "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,GROUP_M=8,num_warps=8,num_stages=3"


def launch_child():
    sys.path.insert(0, KERNEL)
    start = time.perf_counter()
    import torch
    import matmul
    config = dict((k, int(v)) for k, v in (kv.split("=") for kv in CONFIG.split(",")))
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    c = torch.empty(1024, 1024, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    ready = time.perf_counter()
    matmul.build(config, {"M": 1024, "N": 1024, "K": 1024})(a, b, c)
    torch.cuda.synchronize()
    first = time.perf_counter() - ready
    ok = torch.allclose(c.float(), (a @ b).float(), rtol=1e-2, atol=2e-2)
    print("first launch %.3f s (imports %.1f s), correct %s" % (first, ready - start, ok))


def main():
    if sys.argv[1:] == ["launch"]:
        return launch_child()
    from google.protobuf import text_format
    from tunefleet.v1 import bench_child_pb2, kernel_spec_pb2
    spec = text_format.Parse(open(os.path.join(KERNEL, "kernel.textproto")).read(),
                             kernel_spec_pb2.KernelSpec())
    work = tempfile.mkdtemp()
    cache = os.path.join(work, "triton")
    request = bench_child_pb2.PythonCompileRequest(kernel=spec, source_dir=KERNEL,
                                                   output=os.path.join(work, "out.zip"))
    for name in "MNK":
        request.shape.dims.add(name=name, value=1024)
    for kv in CONFIG.split(","):
        name, value = kv.split("=")
        request.config.values.add(name=name, value=int(value))
    with open(os.path.join(work, "req.pb"), "wb") as f:
        f.write(request.SerializeToString())
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "tunefleet.backend.compile",
                             os.path.join(work, "req.pb")], env=env, capture_output=True, text=True)
    print("compile process: exit %d in %.1f s: %s %s" % (
        result.returncode, time.perf_counter() - start, result.stdout.strip()[-1500:],
        result.stderr.strip()[-1500:]))
    entries = sum(len(files) for _, _, files in os.walk(cache)) if os.path.isdir(cache) else 0
    print("cache files after the compile: %d" % entries)
    subprocess.run([sys.executable, os.path.abspath(__file__), "launch"], env=env)
    fresh = dict(os.environ, TRITON_CACHE_DIR=os.path.join(work, "cold"))
    print("cold cache for comparison:", flush=True)
    subprocess.run([sys.executable, os.path.abspath(__file__), "launch"], env=fresh)


if __name__ == "__main__":
    main()
