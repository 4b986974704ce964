"""A Python-backend kernel that needs neither torch nor triton, for the
compile step's tests: build() returns a plain function, or raises for
MODE=1 (a build that fails: COMPILE_ERROR with the traceback), kills its
process for MODE=2 (SIGSEGV) and hangs for MODE=3."""

import os
import signal
import time


def build(config, shape):
    if config["MODE"] == 1:
        raise ValueError("MODE=1 cannot be built for n=%d" % shape["n"])
    if config["MODE"] == 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    if config["MODE"] == 3:
        time.sleep(3600)
    return lambda x, y: None


def reference(x, y):
    pass
