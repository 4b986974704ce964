"""Which exceptions of a Python kernel are compile failures."""

import traceback

# Frames in these parts of Triton mean the exception came out of compiling
# (front end, MLIR passes, ptxas), not out of running a kernel.
_COMPILER_PATHS = ("/triton/compiler/", "/triton/backends/", "/triton/language/")


def is_out_of_resources(error):
    return type(error).__name__ == "OutOfResources"


def is_compile_error(error):
    """A Triton CompilationError (or subclass), or any exception raised from
    inside Triton's compiler (an MLIR pass or ptxas failing)."""
    for cls in type(error).__mro__:
        if cls.__name__ in ("CompilationError", "PTXASError"):
            return True
    for frame in traceback.extract_tb(error.__traceback__)[-6:]:
        path = frame.filename.replace("\\", "/")
        if any(part in path for part in _COMPILER_PATHS):
            return True
    return False
