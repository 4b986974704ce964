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
child's first launch is a cache hit and no GPU time is spent here. Nor is
the GPU touched: Triton's driver is told the device's target (the request's
cc_major, cc_minor and warp_size limits) instead of asking CUDA, so a
compile server never creates a CUDA context. Contexts are created one at a
time by the driver: the first compiles of 64 servers that each created one
took 25-30 s on a 4-GPU host, against about 1 s without. Each compiled
kernel's launcher (a C module Triton builds with the host's compiler) is
built here too, so the benchmark child's first launch finds it cached. A
server runs at a lower CPU priority than the benchmark child beside it.

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


COMPILE_NICENESS = 10


def _pack(request):
    files = sorted(set(list(request.kernel.sources) + list(request.kernel.reference.sources)))
    temp = request.output + ".tmp"
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_STORED) as archive:
        for path in files:
            archive.write(os.path.join(request.source_dir, path), path)
    os.replace(temp, request.output)


def device_target(limits):
    """(compute capability as 90, warp size) from a request's DeviceLimits,
    or None when they do not say (a CPU-only probe)."""
    values = {limit.name: int(limit.value) for limit in limits}
    if "cc_major" not in values:
        return None
    return values["cc_major"] * 10 + values.get("cc_minor", 0), values.get("warp_size", 32)


class _WarmOnly:
    """While active, every Triton launch is a compile-only warm-up for
    `target` ((capability, warp size), or None to let Triton ask the
    device), and Triton's CUDA driver answers the current device, stream
    and target without creating a CUDA context."""

    def __init__(self, torch, target):
        from triton.runtime import jit
        self.jit = jit
        self.torch = torch
        self.target = target
        self.original = jit.JITFunction.run
        self.driver = None

    def __enter__(self):
        original = self.original
        torch = self.torch
        mock = getattr(self.jit, "MockTensor", None)

        def wrap(value):
            if isinstance(value, torch.Tensor) and mock is not None:
                return mock(value.dtype)
            return value

        def run(fn, *args, grid, warmup, **kwargs):
            kernel = original(fn, *[wrap(a) for a in args], grid=grid, warmup=True,
                              **{k: wrap(v) for k, v in kwargs.items()})
            self._build_launcher(kernel)
            return kernel

        self.jit.JITFunction.run = run
        self._detach_driver()
        return self

    def _detach_driver(self):
        if self.target is None:
            return
        from triton.backends.compiler import GPUTarget
        from triton.runtime.driver import driver
        active = driver.active
        if "nvidia" not in type(active).__module__:
            return  # another vendor's driver: let it ask its device
        capability, warp_size = self.target
        target = GPUTarget("cuda", capability, warp_size)
        self.driver = active
        active.get_current_device = lambda: 0
        active.get_current_stream = lambda device=None: 0
        active.get_current_target = lambda: target

    def _build_launcher(self, kernel):
        """Builds the compiled kernel's launcher (a small C module that
        Triton compiles with the host's compiler, once per signature, and
        caches in TRITON_CACHE_DIR) here, where it needs no device, instead
        of at the benchmark child's first launch."""
        launcher = getattr(self.driver, "launcher_cls", None)
        if kernel is None or launcher is None:
            return
        try:
            launcher(kernel.src, kernel.metadata)
        except Exception as error:
            print("launcher not built ahead (%s: %s); the benchmark child builds it"
                  % (type(error).__name__, error))

    def __exit__(self, *exc):
        self.jit.JITFunction.run = self.original
        if self.driver is not None:
            for name in ("get_current_device", "get_current_stream", "get_current_target"):
                self.driver.__dict__.pop(name, None)
            self.driver = None
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
        with _WarmOnly(torch, device_target(request.limits)):
            build(*tensors)
    except Exception as error:
        if errors.is_compile_error(error):
            raise
        print("not warmed (%s: %s); the benchmark child compiles on first launch"
              % (type(error).__name__, error))
        return
    seconds = time.time() - start
    # torch.cuda.is_initialized() itself initialises nothing.
    touched = "; this process holds a CUDA context" if torch.cuda.is_initialized() else ""
    print("warmed in %.2f s%s" % (seconds, touched))


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


def _driver_ready():
    """Makes Triton's driver before the first request: it builds and loads
    its CUDA helper module (a C extension compiled with the host's compiler
    into TRITON_CACHE_DIR), which creates no CUDA context but would
    otherwise cost the first compile a second or more while the host's other
    servers compile too. Returns a note for the ready frame."""
    start = time.time()
    try:
        from triton.runtime import driver
        driver.active.utils  # noqa: B018  (built and loaded on first use)
    except Exception as error:  # no GPU driver here: the first compile says so
        return "; Triton's driver not ready (%s: %s)" % (type(error).__name__, error)
    return "; Triton's driver ready in %.2f s" % (time.time() - start)


def serve():
    """The compile server loop (see the module doc)."""
    import contextlib
    import faulthandler
    import io

    from tunefleet.backend import framing

    # Compiles are throughput work; the benchmark child shares these cores
    # and is on the device's critical path, so it gets the CPU first.
    os.nice(COMPILE_NICENESS)
    sys.stdout.flush()
    frames_out = os.dup(1)
    os.dup2(2, 1)  # stray prints (fd-level too) must not corrupt the frames
    faulthandler.enable(file=sys.stderr)
    start = time.time()
    try:
        import torch  # noqa: F401  (paid once here, not per compile)
        import triton  # noqa: F401
        note = "torch and triton imported in %.2f s" % (time.time() - start)
        note += _driver_ready()
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
