#!/usr/bin/env python3
"""A stand-in for `python -m tunefleet.backend.bench_child` that needs no GPU,
torch or triton: it speaks the same pipe protocol (tunefleet.backend.framing)
and misbehaves on purpose by the run's MODE param, so that the daemon's
supervision of a Python child can be tested anywhere:
  MODE=0 answers OK (a fixed measurement)
  MODE=1 dies by SIGSEGV before answering
  MODE=2 hangs
  MODE=3 answers CRASHED and exits 3 (a poisoned context)
It is started through `tunefleet-worker --child --backend python` with
TUNEFLEET_PYTHON pointing here, so it receives `-m tunefleet.backend.bench_child`
as arguments and ignores them."""

import os
import signal
import sys
import time

from tunefleet.backend import framing
from tunefleet.v1 import bench_child_pb2
from tunefleet.v1 import types_pb2


def main():
    out = os.dup(1)
    os.dup2(2, 1)
    print("stub child pid %d args %s" % (os.getpid(), sys.argv[1:]), file=sys.stderr)
    while True:
        request = bench_child_pb2.ChildRequest()
        if not framing.read_message(0, request):
            return 0
        response = bench_child_pb2.ChildResponse()
        if request.WhichOneof("kind") == "run":
            mode = {v.name: v.value for v in request.run.config.values}.get("MODE", 0)
            response.index = request.run.index
            response.result.config.CopyFrom(request.run.config)
            if mode == 1:
                os.kill(os.getpid(), signal.SIGSEGV)
            if mode == 2:
                time.sleep(3600)
            if mode == 3:
                response.result.status = types_pb2.TRIAL_STATUS_CRASHED
                response.result.error = "stub: illegal memory access"
                response.exiting = True
            else:
                response.result.status = types_pb2.TRIAL_STATUS_OK
                response.result.measurement.median_seconds = 0.001
                response.result.measurement.samples = 5
        framing.write_message(out, response)
        if response.exiting:
            return 3


if __name__ == "__main__":
    sys.exit(main())
