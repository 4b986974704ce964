"""The Python backend's benchmark child: `python -m tunefleet.backend.bench_child`,
one per GPU, started by the worker daemon (through `tunefleet-worker --child
--backend python`, which execs this with CUDA_VISIBLE_DEVICES pinned). It
serves ChildRequests framed on stdin and answers each with one ChildResponse
on the original stdout (fd 1 is pointed at stderr, so kernel prints cannot
corrupt the protocol), under the protocol of docs/measurement.md: inputs
from the spec's init distributions (seeded) or its reference.supply, a
checked run against the reference's output (rtol/atol/max mismatch ratio on
the device, or the spec's reference.check, or none with skip_check), warm-up,
L2 flush before every sample, CUDA events, median/p20/p80, the early-cut
rule, and the clock calibration: after each sample, outside its events, a
device-side sleep of a fixed number of cycles is timed (behind a lead sleep,
so that no host gap is in it), which gives the SM clock the sample ran at. The measurement numbers come in the
PrepareRequest (measure.py).

A Python launch takes tens of microseconds of host time (argument binding,
Triton's specialisation keys, the callable's own code) before its kernel
reaches the stream. So that a sample times the device's work and not that
host time, the stream is kept busy while the host launches: after the L2
flush, a device-side sleep a little longer than the callable's host time
(measured on the timed call and the warm-up calls) is queued before the
start event, and a sample whose launch outran it is taken again with a
longer lead. Host gaps between the callable's own launches stay in its time.

Failure taxonomy, as the CUDA runner's:
  build() raised, or a Triton CompilationError   COMPILE_ERROR (the log)
  Triton OutOfResources (shared memory, ...)     INVALID_CONFIG
  a CUDA error that leaves the context broken    CRASHED, then exit 3
  any other exception while launching            LAUNCH_ERROR
  results outside tolerance (or refused by the
  spec's reference.check)                        WRONG_RESULT
A hang is the daemon's to classify (it kills this process at its deadline:
TIMEOUT), and so is a death by signal (CRASHED).
"""

import bisect
import math
import os
import sys
import tempfile
import time
import traceback

from tunefleet.backend import child_log
from tunefleet.backend import errors
from tunefleet.backend import framing
from tunefleet.backend import measure
from tunefleet.backend import spec as spec_util
from tunefleet.v1 import bench_child_pb2
from tunefleet.v1 import types_pb2

EXIT_OK = 0
EXIT_POISONED = 3
EXIT_PROTOCOL = 4
EXIT_NO_BACKEND = 5

ST = types_pb2


def _error_text(error, limit=8000):
    text = "%s: %s" % (type(error).__name__, error)
    return text[:limit]


class Runner:
    """The KernelRunner of worker/backend.h, for Python kernels."""

    def __init__(self, torch):
        self.torch = torch
        self.poisoned = False
        self.root = tempfile.mkdtemp(prefix="tunefleet-py-")
        self.prepared = None
        self.flush = None
        self.last_measured = None  # time.perf_counter() when the last run's samples ended
        self.sleep_cycles_per_second = None  # torch.cuda._sleep's rate here; 0: none

    # ---- start -----------------------------------------------------------
    def warm_up(self):
        """Pays, when the child starts (the daemon starts one per device
        ahead of its first lease), what the first prepare and run would
        otherwise pay on the job's time: the CUDA context, cuBLAS's handle
        (references are mostly torch), the sleep rate of the launch lead
        and Triton's import. Returns what it did, for the daemon's log."""
        torch = self.torch
        start = time.perf_counter()
        a = torch.ones(64, 64, dtype=torch.float16, device="cuda")
        (a @ a).sum().item()
        self._sleep_rate()
        done = ["context, cuBLAS, launch lead in %.2f s" % (time.perf_counter() - start)]
        start = time.perf_counter()
        try:
            import triton  # noqa: F401  (most kernels import it: paid here)
            from triton.runtime import driver
            driver.active.get_current_device()  # loads Triton's CUDA helpers
            done.append("triton ready in %.2f s" % (time.perf_counter() - start))
        except Exception as error:
            done.append("no triton (%s)" % error)
        return "; ".join(done)

    # ---- the launch lead --------------------------------------------------
    MAX_LEAD_SECONDS = 0.005

    def _sleep_rate(self):
        """Cycles of torch.cuda._sleep per second on this device, measured once
        (0 where torch has no _sleep: samples then start with the launch)."""
        if self.sleep_cycles_per_second is None:
            torch = self.torch
            sleep = getattr(torch.cuda, "_sleep", None)
            rate = 0.0
            if sleep is not None:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                sleep(100000)
                cycles = 2000000
                start.record()
                sleep(cycles)
                end.record()
                end.synchronize()
                seconds = start.elapsed_time(end) / 1e3
                rate = cycles / seconds if seconds > 0 else 0.0
            self.sleep_cycles_per_second = rate
        return self.sleep_cycles_per_second

    def _lead(self, seconds):
        """Queues a device-side sleep of `seconds` (see the module doc)."""
        rate = self._sleep_rate()
        if rate > 0 and seconds > 0:
            self.torch.cuda._sleep(int(seconds * rate))

    @classmethod
    def _lead_for(cls, host_seconds):
        return min(cls.MAX_LEAD_SECONDS, 2 * host_seconds + 20e-6)

    # ---- classification -------------------------------------------------
    def _classify(self, error, building):
        """(status, poisoned) for an exception raised by build or a launch."""
        if errors.is_out_of_resources(error):
            return ST.TRIAL_STATUS_INVALID_CONFIG, False
        if building:
            return ST.TRIAL_STATUS_COMPILE_ERROR, False
        if errors.is_compile_error(error):
            # Compiled at first launch (the compile step could not warm it):
            # the context is untouched.
            return ST.TRIAL_STATUS_COMPILE_ERROR, False
        if not self._context_alive():
            return ST.TRIAL_STATUS_CRASHED, True
        return ST.TRIAL_STATUS_LAUNCH_ERROR, False

    def _context_alive(self):
        try:
            self.torch.cuda.synchronize()
            self.torch.zeros(1, device="cuda").add_(1).item()
            return True
        except Exception:
            return False

    # ---- prepare --------------------------------------------------------
    def _generate(self, tensor, dims, seed):
        torch = self.torch
        dtype = getattr(torch, spec_util.TORCH_DTYPES[tensor.dtype])
        kind = tensor.init.kind
        dist = tensor.init
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        kinds = spec_util.kernel_spec_pb2.Distribution
        if tensor.role == spec_util.ROLE_OUT:
            return torch.empty(dims, dtype=dtype, device="cuda")
        if kind == kinds.KIND_ZEROS:
            return torch.zeros(dims, dtype=dtype, device="cuda")
        if kind == kinds.KIND_ONES:
            return torch.ones(dims, dtype=dtype, device="cuda")
        if kind == kinds.KIND_ARANGE:
            count = 1
            for d in dims:
                count *= d
            values = torch.arange(count, device="cuda", dtype=torch.float64)
            if dtype == torch.float16:
                values = values.remainder(1024)
            return values.to(dtype).reshape(dims)
        if dtype.is_floating_point:
            out = torch.empty(dims, dtype=torch.float32, device="cuda")
            if kind == kinds.KIND_NORMAL:
                out.normal_(dist.low, dist.high, generator=gen)
            else:
                low, high = (dist.low, dist.high) if kind == kinds.KIND_UNIFORM else (-1.0, 1.0)
                out.uniform_(low, high, generator=gen)
            return out.to(dtype)
        low, high = (int(dist.low), int(dist.high)) if kind == kinds.KIND_UNIFORM else (-8, 8)
        return torch.randint(low, max(high, low + 1), dims, dtype=dtype, device="cuda",
                             generator=gen)

    def prepare(self, request):
        torch = self.torch
        self.prepared = None
        spec = request.kernel
        default_config = types_pb2.Config()
        for part in filter(None, spec.default_config.split(",")):
            name, value = part.split("=")
            v = default_config.values.add()
            v.name, v.value = name.strip(), int(value)
        names = spec_util.names_of(spec, default_config, request.shape, request.limits)
        args = spec_util.tensor_args(spec, names)
        directory = spec_util.unpack_artifact(request.reference_artifact, self.root)

        def user_function(entry):
            return spec_util.load_sources(directory, spec_util.kernel_files(spec, True), entry,
                                          os.path.basename(directory)[:16])

        if spec.reference.supply:
            tensors = self._supplied(user_function(spec.reference.supply), request, args)
        else:
            tensors = [self._generate(tensor, dims, (request.seed * 1000003 + i) % (1 << 63))
                       for i, (_, tensor, dims) in enumerate(args)]
        saved = {i: tensors[i].clone() for i, (_, a, _) in enumerate(args)
                 if a.role == spec_util.ROLE_INOUT}
        reference = user_function(spec.reference.entry)
        check = user_function(spec.reference.check) if spec.reference.check else None
        reference(*tensors)
        torch.cuda.synchronize()
        outputs = {i: tensors[i].clone() for i, (_, a, _) in enumerate(args)
                   if a.role in (spec_util.ROLE_OUT, spec_util.ROLE_INOUT)}
        l2 = 0
        for limit in request.limits:
            if limit.name == "l2_bytes":
                l2 = int(limit.value)
        if l2 <= 0:
            l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20)
        self.flush = torch.empty(2 * l2, dtype=torch.int8, device="cuda")
        self.prepared = {
            "spec": spec, "shape": request.shape, "args": args, "tensors": tensors,
            "saved": saved, "expected": outputs, "check": check,
            "options": measure.with_defaults(request.measure),
        }

    def remeasure(self, options):
        """Takes `options` (a MeasureOptions) for the prepared job."""
        self.prepared["options"] = measure.with_defaults(options)

    def _supplied(self, supply, request, args):
        """The tensor arguments that the spec's `reference.supply` makes for
        the shape, checked to be one CUDA tensor per tensor argument."""
        torch = self.torch
        shape = spec_util.shape_dict(request.shape)
        tensors = list(supply(dict(shape), int(request.seed)))
        if len(tensors) != len(args):
            raise ValueError("%s(shape, seed) returned %d values for the %d tensor arguments (%s)"
                             % (request.kernel.reference.supply, len(tensors), len(args),
                                ", ".join(name for name, _, _ in args)))
        for (name, _, _), tensor in zip(args, tensors):
            if not isinstance(tensor, torch.Tensor) or not tensor.is_cuda:
                raise ValueError("%s(shape, seed): argument %s is %s, not a CUDA tensor"
                                 % (request.kernel.reference.supply, name, type(tensor).__name__))
        return tensors

    # ---- run ------------------------------------------------------------
    def _restore(self, poison):
        p = self.prepared
        for i, (_, arg, _) in enumerate(p["args"]):
            if arg.role == spec_util.ROLE_INOUT:
                p["tensors"][i].copy_(p["saved"][i])
            elif arg.role == spec_util.ROLE_OUT and poison:
                t = p["tensors"][i]
                if t.dtype.is_floating_point:
                    t.fill_(float("nan"))
                else:
                    t.fill_(-1)

    def _check(self, tolerance):
        """None when the outputs of the checked run are right, else what is
        wrong: the spec's `reference.check` decides when it names one, no
        one with `skip_check`, else rtol/atol/max_mismatch_ratio."""
        torch = self.torch
        p = self.prepared
        if tolerance.skip_check:
            return None
        if p["check"] is not None:
            order = sorted(p["expected"])
            name = p["spec"].reference.check
            try:
                verdict = p["check"]([p["tensors"][i] for i in order],
                                     [p["expected"][i] for i in order])
            except Exception as error:
                return "%s(outputs, expected) raised %s" % (name, _error_text(error))
            if verdict is None or verdict is True:
                return None
            return ("%s(outputs, expected) returned False" % name if verdict is False
                    else "%s: %s" % (name, str(verdict)[:8000]))
        for i, expected in p["expected"].items():
            got = p["tensors"][i]
            g = got.to(torch.float32)
            e = expected.to(torch.float32)
            ok = (g - e).abs() <= (tolerance.atol + tolerance.rtol * e.abs())
            bad = int((~ok).sum().item())
            ratio = bad / max(1, ok.numel())
            if bad and ratio > tolerance.max_mismatch_ratio:
                flat = (~ok).flatten().nonzero()
                first = int(flat[0].item())
                return ("%s: %d of %d elements outside rtol=%g atol=%g (ratio %.3g > %g); "
                        "first at flat index %d: got %r, expected %r" % (
                            p["args"][i][0], bad, ok.numel(), tolerance.rtol, tolerance.atol,
                            ratio, tolerance.max_mismatch_ratio, first,
                            g.flatten()[first].item(), e.flatten()[first].item()))
        return None

    def _measure(self, fn, options, best_seconds, checked, phases):
        """Times `fn` (after its checked run, which ended at `checked`) under
        `options`: one timed call to fit the deadline, the warm-up, then
        samples until the stop rules say so. Returns (samples, their SM
        clocks in MHz (0: unknown), cut early); fills `phases` (a
        TrialPhases)."""
        torch = self.torch
        tensors = self.prepared["tensors"]
        # One call timed, to fit the protocol into the daemon's deadline.
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        self._restore(poison=False)
        start.record()
        launched = time.perf_counter()
        fn(*tensors)
        host_seconds = time.perf_counter() - launched
        end.record()
        end.synchronize()
        call_seconds = start.elapsed_time(end) / 1e3
        options = measure.fit_to_deadline(options, call_seconds)
        # Warm-up: full after the device idled, a few calls while it measures on.
        idle = (math.inf if self.last_measured is None
                else time.perf_counter() - self.last_measured)
        warmup = measure.warmup_seconds(options, idle, call_seconds)
        began = time.perf_counter()
        while time.perf_counter() - began < warmup:
            self._restore(poison=False)
            launched = time.perf_counter()
            fn(*tensors)
            host_seconds = max(host_seconds, time.perf_counter() - launched)
            torch.cuda.synchronize()
        # Samples: L2 flushed and in-out tensors restored outside the
        # events, the launch queued behind a device-side lead.
        lead = self._lead_for(host_seconds)
        samples = []
        clocks = []
        ordered = []
        cut = False
        began = time.perf_counter()
        phases.warmup_seconds = began - checked
        while measure.want_more_samples(options, ordered, time.perf_counter() - began):
            self._restore(poison=False)
            self.flush.zero_()
            self._lead(lead)
            start.record()
            launched = time.perf_counter()
            fn(*tensors)
            host_seconds = time.perf_counter() - launched
            end.record()
            clock = self._probe_clock()
            end.synchronize()
            if host_seconds > lead and lead < self.MAX_LEAD_SECONDS:
                lead = self._lead_for(host_seconds)  # outran: again, longer
                continue
            seconds = start.elapsed_time(end) / 1e3
            samples.append(seconds)
            clocks.append(clock())
            bisect.insort(ordered, seconds)
            if measure.cut_early(options, best_seconds, ordered):
                cut = True
                break
        self.last_measured = time.perf_counter()
        phases.sampling_seconds = self.last_measured - began
        return samples, clocks, cut

    PROBE_SECONDS = 20e-6

    def _probe_clock(self):
        """Queues the clock probe behind a sample: a device-side sleep of a
        fixed number of cycles (about PROBE_SECONDS) between two events,
        behind a lead sleep of the same length that keeps the stream busy
        while the host queues them (a stream gone idle before the first event
        would time the host's gap as well: bench/python_clock_probe.py,
        docs/benchmarks.md "Calibration"). Returns a
        function that gives the SM clock in MHz once the stream has run it
        (0 where torch has no _sleep)."""
        rate = self._sleep_rate()
        if rate <= 0:
            return lambda: 0.0
        torch = self.torch
        cycles = max(1000, int(self.PROBE_SECONDS * rate))
        before = torch.cuda.Event(enable_timing=True)
        after = torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        before.record()
        torch.cuda._sleep(cycles)
        after.record()

        def mhz():
            after.synchronize()
            seconds = before.elapsed_time(after) / 1e3
            return cycles / seconds / 1e6 if seconds > 0 else 0.0
        return mhz

    def run(self, request, result, phases):
        """Runs one config into `result`, and its wall time phase by phase into
        `phases` (a TrialPhases)."""
        torch = self.torch
        result.config.CopyFrom(request.config)
        p = self.prepared
        if p is None:
            result.status = ST.TRIAL_STATUS_LAUNCH_ERROR
            result.error = "run before a successful prepare"
            return
        began_run = time.perf_counter()
        spec = p["spec"]
        config = spec_util.config_dict(request.config)
        shape = spec_util.shape_dict(p["shape"])
        try:
            directory = spec_util.unpack_artifact(request.artifact, self.root)
            build = spec_util.load_sources(directory, spec_util.kernel_files(spec, False),
                                           spec.entry, os.path.basename(directory)[:16])
            fn = build(config, shape)
            if not callable(fn):
                raise TypeError("%s(config, shape) returned %r, not a callable" % (spec.entry, fn))
        except Exception as error:
            status, self.poisoned = self._classify(error, building=True)
            result.status = status
            result.error = traceback.format_exc()[-8000:]
            return
        tensors = p["tensors"]
        options = p["options"]
        loaded = time.perf_counter()
        phases.load_seconds = loaded - began_run
        try:
            # The checked run (its first launch loads the compiled kernel).
            self._restore(poison=True)
            fn(*tensors)
            torch.cuda.synchronize()
            mismatch = self._check(spec.tolerance)
            checked = time.perf_counter()
            phases.check_seconds = checked - loaded
            if mismatch is not None:
                result.status = ST.TRIAL_STATUS_WRONG_RESULT
                result.error = mismatch
                return
            samples, clocks, result.cut_early = self._measure(fn, options, request.best_seconds,
                                                              checked, phases)
        except Exception as error:
            status, self.poisoned = self._classify(error, building=False)
            result.status = status
            result.error = traceback.format_exc()[-8000:]
            return
        result.status = ST.TRIAL_STATUS_OK
        measure.summarize(samples, result.measurement)
        result.measurement.calibration_seconds = measure.clock_calibration(
            result.measurement.median_seconds, samples, clocks)


def _job_of(prepare):
    """A PrepareRequest without its measure options: what a job's inputs and
    expected outputs are made from, the reference file's version included
    (one built again where it was is another reference)."""
    job = bench_child_pb2.PrepareRequest()
    job.CopyFrom(prepare)
    job.ClearField("measure")
    if job.reference_artifact:
        try:
            stat = os.stat(job.reference_artifact)
            job.reference_artifact += "@%d-%d-%d-%d" % (stat.st_dev, stat.st_ino,
                                                         stat.st_mtime_ns, stat.st_size)
        except OSError:
            pass
    return job


def serve(runner, in_fd, out_fd):
    # _job_of the last successful prepare, while every run since was OK: a
    # config that failed may have written past its outputs into the job's
    # inputs or expected outputs, so the job is not kept past a failure.
    prepared = None
    while True:
        request = bench_child_pb2.ChildRequest()
        try:
            if not framing.read_message(in_fd, request):
                return EXIT_OK
        except Exception as error:
            print("bench child: %s" % error, file=sys.stderr)
            return EXIT_PROTOCOL
        response = bench_child_pb2.ChildResponse()
        kind = request.WhichOneof("kind")
        if kind == "prepare":
            job = _job_of(request.prepare)
            try:
                # The job held already, with other measure options (a
                # finalists round, a verification): its inputs and expected
                # outputs are kept.
                if prepared is not None and job == prepared and runner.prepared is not None:
                    runner.remeasure(request.prepare.measure)
                else:
                    prepared = None
                    runner.prepare(request.prepare)
                    prepared = job
            except Exception as error:
                response.error = "prepare failed: %s\n%s" % (
                    _error_text(error), traceback.format_exc()[-4000:])
                if not runner._context_alive():
                    runner.poisoned = True
        elif kind == "run":
            response.index = request.run.index
            runner.run(request.run, response.result, response.phases)
            if response.result.status != ST.TRIAL_STATUS_OK:
                prepared = None
            response.exiting = response.result.status in (
                ST.TRIAL_STATUS_CRASHED, ST.TRIAL_STATUS_TIMEOUT)
        else:
            response.error = "empty request"
        if runner.poisoned:
            response.exiting = True
        try:
            framing.write_message(out_fd, response)
        except OSError:
            return EXIT_OK  # the daemon is gone
        if response.exiting:
            return EXIT_POISONED


def main():
    protocol_out = os.dup(1)
    child_log.route()  # fd 2 (and so fd 1 below) in the daemon's log format
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        torch.cuda.init()
        runner = Runner(torch)
        print("bench child: warmed up: %s" % runner.warm_up(), file=sys.stderr)
    except Exception as error:
        print("bench child: no Python GPU backend: %s" % error, file=sys.stderr)
        return EXIT_NO_BACKEND
    return serve(runner, 0, protocol_out)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
