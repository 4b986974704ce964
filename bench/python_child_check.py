#!/usr/bin/env python3
"""Drives the python backend's Python processes on a GPU without the C++
daemon: a stand-in for it, in Python, that compiles configs in a pool of
`python -m tunefleet.backend.compile` processes (one per config, 16 at a
time) into a fresh TRITON_CACHE_DIR, then runs them in one
`python -m tunefleet.backend.bench_child` over the bench_child.proto pipe
protocol with a per-run deadline, classifying deaths and hangs and
respawning the child as the daemon does. For checking the Python side on a
machine where the worker binaries cannot run; the fleet path is
tests/gpu/python_backend_test.py and bench/triton_matmul_bench.py.

  PYTHONPATH=BUILD/python python3 bench/python_child_check.py [faulty|matmul48|softmax]...
"""

import concurrent.futures
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

from google.protobuf import text_format
from tunefleet.backend import framing
from tunefleet.v1 import bench_child_pb2, kernel_spec_pb2, types_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
ENV = dict(os.environ)


def load(kernel_dir):
    spec = text_format.Parse(open(os.path.join(kernel_dir, "kernel.textproto")).read(),
                             kernel_spec_pb2.KernelSpec())
    return spec


def config_of(text):
    config = types_pb2.Config()
    for kv in text.split(","):
        k, v = kv.split("=")
        config.values.add(name=k, value=int(v))
    return config


def limits():
    out = subprocess.run([PY, "-m", "tunefleet.backend.probe", "devices"], env=ENV,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("device\t"):
            fields = line.split("\t")
            return [types_pb2.DeviceLimit(name=k, value=float(v)) for k, v in
                    (kv.split("=") for kv in fields[4].split(","))]
    raise SystemExit("no device: " + out)


def compile_one(spec, kernel_dir, shape, config, reference, work, lims):
    out = tempfile.mkdtemp(dir=work)
    req = bench_child_pb2.PythonCompileRequest(kernel=spec, shape=shape, config=config,
                                               reference=reference, source_dir=kernel_dir,
                                               output=os.path.join(out, "a.zip"))
    req.limits.extend(lims)
    with open(os.path.join(out, "req.pb"), "wb") as f:
        f.write(req.SerializeToString())
    start = time.perf_counter()
    r = subprocess.run([PY, "-m", "tunefleet.backend.compile", os.path.join(out, "req.pb")],
                       env=ENV, capture_output=True, text=True, cwd=out)
    return r.returncode, time.perf_counter() - start, (r.stdout + r.stderr)[-600:], \
        os.path.join(out, "a.zip")


class Child:
    def __init__(self):
        self.proc = None
        self.starts = 0

    def call(self, request, deadline):
        if self.proc is None:
            self.proc = subprocess.Popen([PY, "-m", "tunefleet.backend.bench_child"], env=ENV,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self.starts += 1
        try:
            framing.write_message(self.proc.stdin.fileno(), request)
        except OSError:
            return self.died()
        ready, _, _ = select.select([self.proc.stdout], [], [], deadline)
        if not ready:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return "TIMEOUT", None
        response = bench_child_pb2.ChildResponse()
        try:
            if not framing.read_message(self.proc.stdout.fileno(), response):
                return self.died()
        except framing.ProtocolError:
            return self.died()
        if response.exiting:
            self.proc.wait()
            self.proc = None
        return "ANSWER", response

    def died(self):
        code = self.proc.wait()
        self.proc = None
        return ("CRASHED(%s)" % (signal.Signals(-code).name if code < 0 else "exit %d" % code)), None


def run_kernel(name, kernel_dir, shape_text, configs, budget=0.1):
    spec = load(kernel_dir)
    shape = types_pb2.Shape()
    for kv in shape_text.split(","):
        k, v = kv.split("=")
        shape.dims.add(name=k, value=int(v))
    lims = limits()
    work = tempfile.mkdtemp()
    ENV["TRITON_CACHE_DIR"] = os.path.join(work, "triton")
    t0 = time.perf_counter()
    ref = compile_one(spec, kernel_dir, shape, config_of(spec.default_config), True, work, lims)
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        compiled = list(pool.map(lambda c: compile_one(spec, kernel_dir, shape, config_of(c),
                                                       False, work, lims), configs))
    t_compile = time.perf_counter() - t0
    child = Child()
    prepare = bench_child_pb2.ChildRequest()
    p = prepare.prepare
    p.kernel.CopyFrom(spec)
    p.shape.CopyFrom(shape)
    p.seed = 7
    p.limits.extend(lims)
    p.reference_artifact = ref[3]
    p.measure.budget_seconds = budget
    p.measure.run_seconds_limit = 10
    prepared = False
    results = []
    best = 0
    for i, (text, (code, secs, log, artifact)) in enumerate(zip(configs, compiled)):
        if code != 0:
            results.append((text, "COMPILE_ERROR", secs, None, log.strip().splitlines()[-1:]))
            continue
        if not prepared:
            kind, response = child.call(prepare, 120)
            if kind != "ANSWER" or response.error:
                results.append((text, "PREPARE " + kind, secs, None,
                                [response.error[:400] if response else ""]))
                continue
            prepared = True
        req = bench_child_pb2.ChildRequest()
        req.run.index = i
        req.run.config.CopyFrom(config_of(text))
        req.run.artifact = artifact
        req.run.best_seconds = best
        kind, response = child.call(req, 20)
        if kind != "ANSWER":
            prepared = False
            results.append((text, kind, secs, None, []))
            continue
        if response.exiting:
            prepared = False
        r = response.result
        status = types_pb2.TrialStatus.Name(r.status)[len("TRIAL_STATUS_"):]
        med = r.measurement.median_seconds if r.status == types_pb2.TRIAL_STATUS_OK else None
        if med and not r.cut_early and (best == 0 or med < best):
            best = med
        results.append((text, status + (" cut" if r.cut_early else ""), secs, med,
                        r.error.strip().splitlines()[-2:]))
    total = time.perf_counter() - t0
    if child.proc:
        child.proc.stdin.close()
        child.proc.wait()
    print("\n## %s %s: %d configs, compile wall %.1f s (16 processes), total %.1f s, "
          "child starts %d" % (name, shape_text, len(configs), t_compile, total, child.starts))
    ok = [r for r in results if r[3]]
    for text, status, secs, med, err in results:
        print("%-70s %-14s compile %5.1fs %s %s" % (text, status, secs,
              "%.4f ms" % (med * 1e3) if med else "", " / ".join(err)[:200]))
    if ok:
        w = min(ok, key=lambda r: r[3])
        print("winner %s %.4f ms" % (w[0], w[3] * 1e3))
    return {"total": total, "compile": t_compile,
            "winner": min(ok, key=lambda r: r[3])[0] if ok else None}


def main():
    which = sys.argv[1:] or ["faulty", "matmul48", "softmax"]
    summary = {}
    if "faulty" in which:
        d = os.path.join(ROOT, "tests/gpu/faulty_triton")
        spec = load(d)
        configs = [c for s in spec.config_sets if s.name == "failures" for c in s.configs]
        summary["faulty"] = run_kernel("faulty", d, "n=100000", configs)
    if "matmul48" in which:
        d = os.path.join(ROOT, "kernels/triton/matmul")
        spec = load(d)
        configs = [c for s in spec.config_sets if s.name == "autotune48" for c in s.configs]
        summary["matmul48"] = run_kernel("matmul", d, "M=4096,N=4096,K=4096", configs)
    if "softmax" in which:
        d = os.path.join(ROOT, "kernels/triton/softmax")
        configs = ["BLOCK_N=%d,ROWS=%d,num_warps=%d" % (b, r, w)
                   for b in (512, 1024, 4096) for r in (1, 4) for w in (4, 8)]
        summary["softmax"] = run_kernel("softmax", d, "M=4096,N=4096", configs)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
