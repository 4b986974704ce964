"""A Python-backend kernel that needs neither torch nor triton, for the
compile step's tests: build() returns a plain function, or raises for
MODE=1 (a build that fails: COMPILE_ERROR with the traceback)."""


def build(config, shape):
    if config["MODE"] == 1:
        raise ValueError("MODE=1 cannot be built for n=%d" % shape["n"])
    return lambda x, y: None


def reference(x, y):
    pass
