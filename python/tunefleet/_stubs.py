"""The generated tunefleet.v1 modules, imported on first use.

The stubs are generated into the assembled package at build time
(python/CMakeLists.txt). Message modules need only protobuf; the gRPC
modules (`*_pb2_grpc`) need grpcio and are imported only when a Client is
made, so that `import tunefleet` works where grpcio is not installed.
"""

from __future__ import annotations

import importlib

from .errors import FailedPreconditionError

_modules = {}


def _load(name: str):
    module = _modules.get(name)
    if module is None:
        try:
            module = importlib.import_module(f"tunefleet.v1.{name}")
        except ImportError as e:
            raise FailedPreconditionError(
                f"cannot import tunefleet.v1.{name} ({e}); the stubs are generated "
                "when the project is built: use the package in <build>/python") from e
        _modules[name] = module
    return module


def kernel_spec_pb2():
    return _load("kernel_spec_pb2")


def types_pb2():
    return _load("types_pb2")


def tuning_pb2():
    return _load("tuning_service_pb2")


def tuning_grpc():
    """REQUIRES: grpcio is installed."""
    return _load("tuning_service_pb2_grpc")
