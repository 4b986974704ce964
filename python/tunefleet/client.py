"""tunefleet.Client: submit kernel-tuning jobs to a coordinator, follow them,
and ask for the best known config of a kernel.

    client = tunefleet.Client("tuner:7070")
    job = client.submit("kernels/cpu/matmul", {"M": 1024, "N": 1024, "K": 1024})
    job = client.wait(job.id)
    best = client.best("matmul", "M=1024,N=1024,K=1024")
    print(best.tier, best.config)

The Python twin of the C++ client (client/include/tunefleet/client.h).
Every failed call raises a `tunefleet.Error` subclass carrying the
canonical code: UnavailableError (the server cannot be reached; retry),
DeadlineExceededError, NotFoundError, InvalidArgumentError (a bad request,
raised before anything is sent when the client can tell),
UnauthenticatedError, PermissionDeniedError, and whatever else the server
answers, unchanged.

Making a Client does not contact the server: channels connect on the first
call, and every unary call runs under `deadline` seconds and does not wait
for a server that is down (it fails UNAVAILABLE at once).

Thread-safety: a Client may be used from several threads at once.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Sequence, Union

from . import _convert, coordinator_target, kernel_dir, records, settings as settings_mod, shapes
from ._stubs import tuning_grpc, tuning_pb2
from .errors import (FailedPreconditionError, InvalidArgumentError, StatusCode,
                     UnavailableError, error_for)

KernelSource = Union[str, kernel_dir.KernelBundle]


def _import_grpc():
    try:
        import grpc
    except ImportError as e:
        raise FailedPreconditionError(
            f"tunefleet.Client needs grpcio ({e}): install python3-grpcio or the grpcio "
            "wheel; BestTable and autotune(table=...) work without it") from e
    return grpc


@dataclass(frozen=True)
class _JobOptions:
    """The options of a submission: `tunectl submit`'s flags
    (client/tunectl/main.cc, DefineSubmit), each named as the JobSpec field
    it sets, as the C++ client's SubmitRequest sets it (client/convert.cc,
    JobSpecFromRequest). The server checks the values."""
    strategy: str = ""             # --strategy
    budget: int = 0                # --budget
    time_budget_seconds: int = 0   # --time-budget
    plateau_batches: int = 0       # --plateau
    config_set: str = ""           # --config-set
    device_model: str = ""         # --device
    seed: int = 0                  # --seed
    force_retune: bool = False     # --force
    replace_best: bool = False     # --replace
    replace_reason: str = ""       # --replace-reason

    def job_spec(self, bundle: kernel_dir.KernelBundle, shape=None):
        """The JobSpec of `bundle` and `shape` (a tunefleet.v1.Shape; None
        for a sweep's) with these options. InvalidArgumentError for an
        unknown config set, or a replace_reason without replace_best
        (tunectl: --replace-reason needs --replace)."""
        if self.config_set and self.config_set not in [s.name for s in bundle.spec.config_sets]:
            raise InvalidArgumentError(
                f"kernel {bundle.name} has no config set \"{self.config_set}\"")
        if self.replace_reason and not self.replace_best:
            raise InvalidArgumentError("replace_reason needs replace_best")
        spec = tuning_pb2().JobSpec(kernel=bundle.spec, sources=bundle.sources,
                                    **dataclasses.asdict(self))
        if shape is not None:
            spec.shape.CopyFrom(shape)
        return spec


def _load(kernel: KernelSource) -> kernel_dir.KernelBundle:
    return kernel if isinstance(kernel, kernel_dir.KernelBundle) else kernel_dir.load(kernel)


def _is_shape_list(shape) -> bool:
    """A list (or tuple) of shapes, as opposed to one shape (text or mapping)."""
    return isinstance(shape, (list, tuple))


def _shape_list(shape, shapes_file: str) -> List[shapes.NameValues]:
    """The shapes of a sweep: `shape` (one or a list), then the file's, each
    text's lists and ranges expanded."""
    listed = list(shape) if isinstance(shape, (list, tuple)) else \
        ([] if shape is None else [shape])
    listed += shapes.read_file(shapes_file) if shapes_file else []
    return [named for item in listed
            for named in (shapes.expand(item) if isinstance(item, str) else [item])]


class Client:
    """A connection to one tunefleet coordinator."""

    def __init__(self, server: Optional[str] = None, *, token: Optional[str] = None,
                 ca_file: Optional[str] = None, deadline: Optional[float] = None,
                 insecure: Optional[bool] = None, config_file: Optional[str] = None):
        """`server` "host:port" (or "ip:port,ip:port": the coordinators that
        share a database, of which calls reach the leader); `token` a bearer token; `ca_file` the PEM CA
        bundle that signed the coordinator's certificate; `deadline` seconds
        allowed per call (default 10); `insecure` plaintext without
        credentials, for a coordinator started with --insecure. Each one left
        out is resolved as tunectl resolves it (tunefleet.settings).
        InvalidArgumentError when a token would go over plaintext,
        NotFoundError when `ca_file` or a token file cannot be read."""
        grpc = _import_grpc()
        self.settings = settings_mod.resolve(server, token=token, ca_file=ca_file,
                                             deadline=deadline, insecure=insecure,
                                             config_file=config_file)
        self._grpc = grpc
        self._channel = self._make_channel(grpc, self.settings)
        self._stub = tuning_grpc().TuningServiceStub(self._channel)

    @staticmethod
    def _make_channel(grpc, s: settings_mod.Settings):
        target, authority = coordinator_target.parse(s.server)
        options = coordinator_target.channel_options(authority)
        if s.insecure:
            return grpc.insecure_channel(target, options=options)
        roots = None
        if s.ca_file:
            try:
                with open(s.ca_file, "rb") as f:
                    roots = f.read()
            except OSError as e:
                raise error_for(StatusCode.NOT_FOUND,
                                f"cannot read CA file {s.ca_file}: {e.strerror}") from None
        credentials = grpc.ssl_channel_credentials(root_certificates=roots)
        if s.token:
            credentials = grpc.composite_channel_credentials(
                credentials, grpc.access_token_call_credentials(s.token))
        return grpc.secure_channel(target, credentials, options=options)

    @property
    def server(self) -> str:
        return self.settings.server

    def close(self) -> None:
        """Closes the channel; calls in progress fail CANCELLED."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- jobs -------------------------------------------------------------

    def submit(self, kernel: KernelSource,
               shape: Union[shapes.NameValues, Sequence[shapes.NameValues], None] = None, *,
               strategy: str = "", budget: int = 0, time_budget_seconds: int = 0,
               plateau_batches: int = 0, config_set: str = "", device_model: str = "",
               seed: int = 0, force_retune: bool = False, replace_best: bool = False,
               replace_reason: str = "", shapes_file: str = "", wait: bool = False,
               on_update: Optional[Callable[[records.Job], None]] = None,
               ) -> Union[records.Job, records.Sweep]:
        """Reads the kernel directory (its kernel.textproto and every source it
        names) and submits a tuning job for `shape` ("M=1024,N=1024" or a
        dict), as `tunectl submit` does; returns the Job. A list of shapes,
        a text with a dim's list or range ("M=1,2,4,...,4096,N=4096":
        shapes.expand), or `shapes_file`, submits a sweep instead
        (submit_sweep) and returns the Sweep. The options are tunectl submit's flags, each setting the
        JobSpec field of the same name (see _JobOptions):

            strategy             --strategy        "" is the server's default (exhaustive);
                                                   "random", "model", "evolutionary",
                                                   "coordinate"
            budget               --budget          configs to try (0: the server's 64;
                                                   coordinate: at most, 0 until it converges)
            time_budget_seconds  --time-budget     stop proposing after this many seconds
                                                   of the job's running time (0: none)
            plateau_batches      --plateau         stop after this many batches in a row
                                                   improve the best by <= 1 % (0: none)
            config_set           --config-set      tune only this named config set
            device_model         --device          "" tunes on every matching worker
            seed                 --seed            the random strategy's and the inputs'
            force_retune         --force           measure even when the key is tuned
            replace_best         --replace         serve this job's best even if slower
                                                   (implies force_retune)
            replace_reason       --replace-reason  why, for the coordinator's log (needs
                                                   replace_best)
            shape=[A, B]         --shape A --shape B  a sweep: SubmitSweepRequest.shapes
            shape="M=1,2,...,8"  --shape "M=1,2,...,8"  a sweep over a dim's range
            shapes_file          --shapes-file     more of its shapes, one a line, after
                                                   the list's
            wait, on_update      --wait            follow the job (or the sweep's jobs)
                                                   to the end: returns wait()'s answer

        A key already tuned is answered from the store (the job's targets say
        `cached`) unless `force_retune`. A retune replaces the served best
        only when it is faster (a slower one is kept as a record: its targets
        say `retune` "regressed"), unless `replace_best`. NotFoundError for a
        missing file and InvalidArgumentError for a bad spec, shape or config
        set, or a replace_reason without replace_best, before anything is
        sent; the server checks the strategy and the budgets
        (InvalidArgumentError; ResourceExhaustedError over its trial cap) and
        answers NotFoundError for a `device_model` that no worker has and no
        stored best config names (a model it knows is accepted and waits for
        its workers)."""
        options = _JobOptions(strategy=strategy, budget=budget,
                              time_budget_seconds=time_budget_seconds,
                              plateau_batches=plateau_batches, config_set=config_set,
                              device_model=device_model, seed=seed, force_retune=force_retune,
                              replace_best=replace_best, replace_reason=replace_reason)
        if isinstance(shape, str):
            named = shapes.expand(shape)  # a dim's list or range names several
            shape = named if len(named) > 1 else shape
        if shapes_file or _is_shape_list(shape):
            sweep = self._submit_sweep(kernel, _shape_list(shape, shapes_file), options)
            return self.wait(sweep, on_update) if wait else sweep
        if shape is None:
            raise InvalidArgumentError("submit needs a shape (or a list of them, or shapes_file)")
        bundle = _load(kernel)
        dims = kernel_dir.normalize_shape(bundle.spec, shape)
        spec = options.job_spec(bundle, _convert.shape_message(dims))
        response = self._call(self._stub.SubmitJob, tuning_pb2().SubmitJobRequest(spec=spec))
        job = _convert.job(response.job)
        return self.wait(job, on_update) if wait else job

    def submit_sweep(self, kernel: KernelSource,
                     shape_list: Optional[Sequence[shapes.NameValues]] = None, *,
                     shapes_file: str = "", wait: bool = False,
                     on_update: Optional[Callable[[records.Job], None]] = None,
                     **options) -> records.Sweep:
        """Submits the kernel over every shape of `shape_list`, then of
        `shapes_file` (one a line, '#' comments), as one sweep: one job per
        shape, each with its own key and best, made all or none (`options`
        as for submit: strategy, budget, ...). The jobs are scheduled as one
        pool of work over the fleet; jobs(sweep_id=...) lists them later;
        `wait` follows them to the end. InvalidArgumentError names a bad or
        repeated shape."""
        sweep = self._submit_sweep(kernel, _shape_list(shape_list, shapes_file),
                                   _JobOptions(**options))
        return self.wait(sweep, on_update) if wait else sweep

    def _submit_sweep(self, kernel: KernelSource, shape_list: List[shapes.NameValues],
                      options: _JobOptions) -> records.Sweep:
        bundle = _load(kernel)
        if not shape_list:
            raise InvalidArgumentError("a sweep needs at least one shape")
        dims = [kernel_dir.normalize_shape(bundle.spec, shape) for shape in shape_list]
        request = tuning_pb2().SubmitSweepRequest(
            spec=options.job_spec(bundle), shapes=[_convert.shape_message(d) for d in dims])
        response = self._call(self._stub.SubmitSweep, request)
        return records.Sweep(id=response.sweep_id,
                             jobs=[_convert.job(j) for j in response.jobs])

    def job(self, job_id: str) -> records.Job:
        """NotFoundError for an unknown job."""
        response = self._call(self._stub.GetJob, tuning_pb2().GetJobRequest(job_id=job_id))
        return _convert.job(response.job)

    def cancel(self, job_id: str) -> records.Job:
        """Asks the server to stop a job; returns its state afterwards."""
        response = self._call(self._stub.CancelJob,
                              tuning_pb2().CancelJobRequest(job_id=job_id))
        return _convert.job(response.job)

    def watch(self, job_id: str) -> Iterator[records.Job]:
        """The job's states, the current one first, then one at every change,
        ending after a final one (SUCCEEDED, FAILED, CANCELLED). The current
        state is fetched under the per-call deadline, so an unreachable server
        or an unknown job fails fast; the stream that follows has none.
        UnavailableError when the stream breaks before a final state. Leaving
        the loop early cancels the stream."""
        current = self.job(job_id)
        if current.final:
            yield current
            return
        call = self._stub.WatchJob(tuning_pb2().WatchJobRequest(job_id=job_id))
        try:
            for event in call:
                job = _convert.job(event.job)
                yield job
                if job.final:
                    return
        except self._grpc.RpcError as e:
            raise self._error(e) from None
        finally:
            call.cancel()
        raise UnavailableError(
            f"tunefleet server {self.server}: watch of job {job_id} ended before the job finished")

    def wait(self, job: Union[str, records.Job, records.Sweep],
             on_update: Optional[Callable[[records.Job], None]] = None,
             ) -> Union[records.Job, records.Sweep]:
        """Follows a job (its id, or a Job) until it is final and returns
        that state, passing every state to `on_update` when given: what
        `tunectl submit --wait` and `tunectl watch` do. A Sweep is followed
        job by job, and returned with every job's final state (`tunectl
        sweep --wait`)."""
        if isinstance(job, records.Sweep):
            return records.Sweep(id=job.id, jobs=[self.wait(j, on_update) for j in job.jobs])
        last = None
        for last in self.watch(job.id if isinstance(job, records.Job) else job):
            if on_update is not None:
                on_update(last)
        return last

    def jobs(self, *, state: str = "", kernel: str = "", owner: str = "",
             device_model: str = "", limit: int = 0,
             page_token: str = "", sweep_id: str = "") -> records.JobPage:
        """One page of jobs, newest first, matching every filter given:
        `state` ("queued", "RUNNING", ...), `kernel`, `owner`, `device_model`
        (jobs with a target on it; a page may then hold fewer than `limit`
        jobs), `sweep_id`. `limit` 0 is the server's page size (100), at most
        1000; `page_token` a previous page's next_page_token.
        InvalidArgumentError for an unknown state; NotFoundError for a kernel
        or device model the fleet does not know (the message lists the known
        names)."""
        request = tuning_pb2().ListJobsRequest(
            limit=limit, state=_convert.job_state_value(state), kernel_name=kernel,
            owner=owner, device_model=device_model, page_token=page_token,
            sweep_id=sweep_id)
        response = self._call(self._stub.ListJobs, request)
        return records.JobPage(jobs=[_convert.job(j) for j in response.jobs],
                               next_page_token=response.next_page_token)

    def trials(self, job_id: str, *, status: str = "", page_size: int = 0,
               page_token: str = "") -> records.TrialPage:
        """One page of a job's trials in the order they were stored; `status`
        ("ok", "COMPILE_ERROR", ...; "" for all) keeps only that outcome.
        `page_size` 0 is the server's default (1000), at most 10000.
        NotFoundError for an unknown job; InvalidArgumentError for an unknown
        status."""
        request = tuning_pb2().ListTrialsRequest(
            job_id=job_id, status=_convert.trial_status_value(status), page_size=page_size,
            page_token=page_token)
        response = self._call(self._stub.ListTrials, request)
        return records.TrialPage(trials=[_convert.trial(t) for t in response.trials],
                                 next_page_token=response.next_page_token)

    def all_trials(self, job_id: str, *, status: str = "") -> List[records.Trial]:
        """Every trial of the job: trials() page after page."""
        out: List[records.Trial] = []
        token = ""
        while True:
            page = self.trials(job_id, status=status, page_token=token)
            out.extend(page.trials)
            token = page.next_page_token
            if not token:
                return out

    # --- best configs and the fleet ----------------------------------------

    def best(self, kernel: str, shape: shapes.NameValues, *, device_model: str = "",
             toolkit: str = "", deadline: Optional[float] = None) -> records.BestConfig:
        """The config to use for `kernel` at `shape`: tuned for this very key
        (tier EXACT), else for the nearest tuned shape of the same kernel and
        device (NEAREST), else the spec's default config (DEFAULT). Empty
        `device_model` or `toolkit` match any. NotFoundError when the server
        knows no such kernel or device model (the message lists the known
        names); InvalidArgumentError for a bad shape.
        `deadline` overrides the client's for this call."""
        request = tuning_pb2().GetBestConfigRequest(
            kernel_name=kernel, shape=_convert.shape_message(shapes.as_dict(shape)),
            device_model=device_model, toolkit=toolkit)
        response = self._call(self._stub.GetBestConfig, request, deadline)
        return _convert.best(response)

    def export(self, kernel: str = "", *, device_model: str = "") -> str:
        """The best configs the coordinator serves for `kernel` ("" every
        kernel) on `device_model` ("" every model), as the JSON document
        BestTable reads (what `tunectl export` prints). NotFoundError for a
        kernel or device model the server does not know."""
        response = self._call(self._stub.ExportBest, tuning_pb2().ExportBestRequest(
            kernel_name=kernel, device_model=device_model))
        return json.dumps(_convert.best_table_document(response), indent=2,
                          ensure_ascii=False) + "\n"

    def workers(self) -> List[records.WorkerInfo]:
        """The workers the coordinator knows, alive or recently gone."""
        response = self._call(self._stub.ListWorkers, tuning_pb2().ListWorkersRequest())
        return [_convert.worker(w) for w in response.workers]

    def server_version(self) -> str:
        """The coordinator's tunefleet version."""
        response = self._call(self._stub.GetServerInfo, tuning_pb2().GetServerInfoRequest())
        return response.version

    # --- plumbing -----------------------------------------------------------

    def _call(self, method, request, deadline: Optional[float] = None):
        try:
            return method(request, timeout=deadline or self.settings.deadline)
        except self._grpc.RpcError as e:
            raise self._error(e) from None

    def _error(self, e):
        code = e.code()
        name = code.name if code is not None else "UNKNOWN"
        message = e.details() or name
        if name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            message = f"tunefleet server {self.server}: {message}"
        return error_for(name, message)


__all__ = ["Client"]
