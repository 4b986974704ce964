"""tunefleet: ask a GPU-kernel tuning fleet for the best config of a kernel.

    import tunefleet

    client = tunefleet.Client("tuner:7070")          # needs grpcio
    best = client.best("matmul", {"M": 1024, "N": 1024, "K": 1024})

    table = tunefleet.BestTable.load("best.json")    # offline, stdlib only
    best = table.lookup("matmul", "M=1024,N=1024,K=1024")

    @tunefleet.autotune(kernel="kernels/triton/matmul", key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(...): ...

    @tunefleet.contextual_autotune(kernel="kernels/triton/attention", key=["M", "N"])
    def attention(q, k, v, out, M, N): ...   # launches several autotuned kernels

Importing the package needs only the standard library; the message stubs
(tunefleet.v1.*_pb2, generated from proto/ when the project is built) need
protobuf, and grpcio is imported only when a Client is made. docs/python.md
is the guide.
"""

from . import settings, shapes
from .autotune import Autotuned, Choice, autotune
from .client import Client
from .contextual import ContextualAutotuned, contextual_autotune
from .errors import (AbortedError, AlreadyExistsError, CancelledError,
                     DeadlineExceededError, Error, FailedPreconditionError,
                     InternalError, InvalidArgumentError, NotFoundError,
                     PermissionDeniedError, ResourceExhaustedError, StatusCode,
                     UnauthenticatedError, UnavailableError, UnimplementedError)
from .records import (DEFAULT, EXACT, NEAREST, BestConfig, DeviceInfo, Job, JobPage,
                      JobTarget, Sweep, Trial, TrialPage, TrialSummary, WorkerInfo)
from .table import BestTable

__version__ = "0.1.0"

__all__ = [
    "settings", "shapes", "autotune", "Autotuned", "Choice", "contextual_autotune",
    "ContextualAutotuned", "Client", "BestTable", "BestConfig", "Job",
    "JobPage", "JobTarget", "Sweep", "Trial", "TrialPage", "TrialSummary", "WorkerInfo",
    "DeviceInfo", "EXACT", "NEAREST", "DEFAULT", "StatusCode", "Error",
    "AbortedError", "AlreadyExistsError", "CancelledError", "DeadlineExceededError",
    "FailedPreconditionError", "InternalError", "InvalidArgumentError", "NotFoundError",
    "PermissionDeniedError", "ResourceExhaustedError", "UnauthenticatedError",
    "UnavailableError", "UnimplementedError",
]
