"""The Python backend's compile step.

  python -m tunefleet.backend.compile --serve   a compile server: imports
      torch and triton once, says so (a PythonCompileResult with ready set),
      then answers PythonCompileRequest frames on
      stdin with PythonCompileResult frames on stdout (the varint-delimited
      framing of worker/child_protocol.h), one at a time, until EOF. What
      the compiles print goes into each result's log; the process's own
      stderr holds only what escaped that (fd-level output, a fatal signal's
      traceback). The daemon supervises it (worker/python/compile_server.h).
  python -m tunefleet.backend.compile REQUEST   one request read from a file.

One compile packs the kernel's staged sources into the artifact (a zip the
benchmark child imports from) and, for a config, imports the kernel module,
calls build(config, shape) and calls what it returns once on meta tensors
with Triton in warm-up mode: every Triton kernel it launches is compiled
(into TRITON_CACHE_DIR, the worker's cache) but not run, so the benchmark
child's first launch is a cache hit and no GPU time is spent here.

Result code (the exit status of the one-request form): 0 compiled, 1 the
config does not compile (a Triton CompilationError, or build() raised: the
log says why), 2 the request itself is unusable.
"""

import os
import sys
import time
import traceback
import zipfile

from tunefleet.backend import errors
from tunefleet.backend import spec as spec_util
from tunefleet.v1 import bench_child_pb2


def _pack(request):
    files = sorted(set(list(request.kernel.sources) + list(request.kernel.reference.sources)))
    temp = request.output + ".tmp"
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_STORED) as archive:
        for path in files:
            archive.write(os.path.join(request.source_dir, path), path)
    os.replace(temp, request.output)


class _WarmOnly:
    """Makes every Triton launch a compile-only warm-up while active."""

    def __init__(self, torch):
        from triton.runtime import jit
        self.jit = jit
        self.torch = torch
        self.original = jit.JITFunction.run

    def __enter__(self):
        original = self.original
        torch = self.torch
        mock = getattr(self.jit, "MockTensor", None)

        def wrap(value):
            if isinstance(value, torch.Tensor) and mock is not None:
                return mock(value.dtype)
            return value

        def run(fn, *args, grid, warmup, **kwargs):
            return original(fn, *[wrap(a) for a in args], grid=grid, warmup=True,
                            **{k: wrap(v) for k, v in kwargs.items()})

        self.jit.JITFunction.run = run
        return self

    def __exit__(self, *exc):
        self.jit.JITFunction.run = self.original
        return False


def _warm(request, build):
    try:
        import torch
        import triton  # noqa: F401  (the warm-up needs it)
    except Exception as error:
        print("not warmed (no torch/triton here: %s); the benchmark child compiles" % error)
        return
    names = spec_util.names_of(request.kernel, request.config, request.shape, request.limits)
    tensors = []
    for _, tensor, dims in spec_util.tensor_args(request.kernel, names):
        dtype = getattr(torch, spec_util.TORCH_DTYPES[tensor.dtype])
        tensors.append(torch.empty(dims, dtype=dtype, device="meta"))
    start = time.time()
    try:
        with _WarmOnly(torch):
            build(*tensors)
    except Exception as error:
        if errors.is_compile_error(error):
            raise
        print("not warmed (%s: %s); the benchmark child compiles on first launch"
              % (type(error).__name__, error))
        return
    print("warmed in %.2f s" % (time.time() - start))


def compile_one(request):
    """Runs one request; returns the result code (see the module doc)."""
    try:
        _pack(request)
    except Exception as error:
        print("compile request unusable: %s" % error)
        return 2
    kernel = request.kernel
    files = spec_util.kernel_files(kernel, request.reference)
    entry = kernel.reference.entry if request.reference else kernel.entry
    try:
        function = spec_util.load_sources(request.source_dir, files, entry, "compile")
        if request.reference:
            return 0
        build = function(spec_util.config_dict(request.config),
                         spec_util.shape_dict(request.shape))
        if not callable(build):
            print("%s(config, shape) returned %r, not a callable" % (entry, build))
            return 1
        _warm(request, build)
    except Exception as error:
        traceback.print_exc(file=sys.stdout)
        if errors.is_compile_error(error):
            print("\nTriton compile error:\n%s" % error)
        return 1
    return 0


def serve():
    """The compile server loop (see the module doc)."""
    import contextlib
    import faulthandler
    import io

    from tunefleet.backend import framing

    sys.stdout.flush()
    frames_out = os.dup(1)
    os.dup2(2, 1)  # stray prints (fd-level too) must not corrupt the frames
    faulthandler.enable(file=sys.stderr)
    start = time.time()
    try:
        import torch  # noqa: F401  (paid once here, not per compile)
        import triton  # noqa: F401
        note = "torch and triton imported in %.2f s" % (time.time() - start)
    except Exception as error:
        note = "no torch/triton (%s)" % error
    print("compile server %d: %s" % (os.getpid(), note), file=sys.stderr)
    framing.write_message(frames_out, bench_child_pb2.PythonCompileResult(ready=True, log=note))
    while True:
        request = bench_child_pb2.PythonCompileRequest()
        try:
            if not framing.read_message(0, request):
                return 0
        except Exception as error:
            print("compile server: unreadable request: %s" % error, file=sys.stderr)
            return 2
        log = io.StringIO()
        start = time.time()
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            try:
                code = compile_one(request)
            except BaseException:  # SystemExit from kernel code, say
                traceback.print_exc(file=log)
                code = 1
        result = bench_child_pb2.PythonCompileResult(
            code=code, log=log.getvalue(), seconds=time.time() - start)
        framing.write_message(frames_out, result)


def main(argv):
    if len(argv) == 2 and argv[1] == "--serve":
        return serve()
    if len(argv) != 2:
        print("usage: python -m tunefleet.backend.compile --serve | REQUEST", file=sys.stderr)
        return 2
    request = bench_child_pb2.PythonCompileRequest()
    try:
        with open(argv[1], "rb") as f:
            request.ParseFromString(f.read())
    except Exception as error:
        print("compile request unusable: %s" % error, file=sys.stderr)
        return 2
    return compile_one(request)


if __name__ == "__main__":
    sys.stdout = os.fdopen(sys.stdout.fileno(), "w", buffering=1)
    sys.exit(main(sys.argv))
