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

import json
from typing import Callable, Iterator, List, Optional, Sequence, Union

from . import _convert, kernel_dir, records, settings as settings_mod, shapes
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


class Client:
    """A connection to one tunefleet coordinator."""

    def __init__(self, server: Optional[str] = None, *, token: Optional[str] = None,
                 ca_file: Optional[str] = None, deadline: Optional[float] = None,
                 insecure: Optional[bool] = None, config_file: Optional[str] = None):
        """`server` "host:port"; `token` a bearer token; `ca_file` the PEM CA
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
        if s.insecure:
            return grpc.insecure_channel(s.server)
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
        return grpc.secure_channel(s.server, credentials)

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

    def submit(self, kernel: KernelSource, shape: shapes.NameValues, *,
               device_model: str = "", strategy: str = "", budget: int = 0,
               force_retune: bool = False, config_set: str = "",
               seed: int = 0, replace_best: bool = False,
               replace_reason: str = "") -> records.Job:
        """Reads the kernel directory (its kernel.textproto and every source it
        names) and submits a tuning job for `shape` ("M=1024,N=1024" or a
        dict). `strategy` "" is the server's default (exhaustive); `budget`
        0 the server's default (64) for the strategies that take one;
        `device_model` "" tunes on every matching worker. A key already tuned
        is answered from the store (the job's targets say `cached`) unless
        `force_retune`. A retune replaces the served best only when it is
        faster (a slower one is kept as a record: its targets say `retune`
        "regressed"), unless `replace_best` (which implies `force_retune`;
        `replace_reason` says why, for the coordinator's log). NotFoundError for a missing file and
        InvalidArgumentError for a bad spec, shape or config set, before
        anything is sent; NotFoundError from the server for a `device_model`
        that no worker has and no stored best config names (a model it knows
        is accepted and waits for its workers)."""
        bundle = kernel if isinstance(kernel, kernel_dir.KernelBundle) else kernel_dir.load(kernel)
        dims = kernel_dir.normalize_shape(bundle.spec, shape)
        if config_set and config_set not in [s.name for s in bundle.spec.config_sets]:
            raise InvalidArgumentError(
                f"kernel {bundle.name} has no config set \"{config_set}\"")
        spec = tuning_pb2().JobSpec(
            kernel=bundle.spec, sources=bundle.sources, shape=_convert.shape_message(dims),
            strategy=strategy, budget=budget, force_retune=force_retune,
            config_set=config_set, seed=seed, device_model=device_model,
            replace_best=replace_best, replace_reason=replace_reason)
        response = self._call(self._stub.SubmitJob, tuning_pb2().SubmitJobRequest(spec=spec))
        return _convert.job(response.job)

    def submit_sweep(self, kernel: KernelSource, shape_list: Sequence[shapes.NameValues], *,
                     device_model: str = "", strategy: str = "", budget: int = 0,
                     force_retune: bool = False, config_set: str = "",
                     seed: int = 0) -> records.Sweep:
        """Submits the kernel over every shape of `shape_list` as one sweep:
        one job per shape, each with its own key and best, made all or none
        (the options as for submit). The jobs are scheduled as one pool of
        work over the fleet; jobs(sweep_id=...) lists them later.
        InvalidArgumentError names a bad or repeated shape."""
        bundle = kernel if isinstance(kernel, kernel_dir.KernelBundle) else kernel_dir.load(kernel)
        if not shape_list:
            raise InvalidArgumentError("a sweep needs at least one shape")
        dims = [kernel_dir.normalize_shape(bundle.spec, shape) for shape in shape_list]
        if config_set and config_set not in [s.name for s in bundle.spec.config_sets]:
            raise InvalidArgumentError(
                f"kernel {bundle.name} has no config set \"{config_set}\"")
        spec = tuning_pb2().JobSpec(
            kernel=bundle.spec, sources=bundle.sources, strategy=strategy, budget=budget,
            force_retune=force_retune, config_set=config_set, seed=seed,
            device_model=device_model)
        request = tuning_pb2().SubmitSweepRequest(
            spec=spec, shapes=[_convert.shape_message(d) for d in dims])
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

    def wait(self, job_id: str,
             on_update: Optional[Callable[[records.Job], None]] = None) -> records.Job:
        """Follows the job (watch) until it is final and returns that state,
        passing every state to `on_update` when given."""
        last = None
        for last in self.watch(job_id):
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
