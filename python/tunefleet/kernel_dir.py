"""Reading a kernel directory: kernel.textproto and the sources it names.

The same files tunectl submits (common/spec_loader.cc): the spec is parsed
as protobuf text format, every path in `sources` and `reference.sources` is
read relative to the directory and sent with its SHA-256 digest. The
coordinator validates the spec in full; this module checks only what it
needs to build the request, and the shape against the spec's problem dims,
so that a bad shape fails before anything is sent.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Dict, List

from . import shapes
from ._stubs import kernel_spec_pb2, types_pb2
from .errors import InvalidArgumentError, NotFoundError, PermissionDeniedError

SPEC_FILE_NAME = "kernel.textproto"


@dataclass
class KernelBundle:
    """A parsed spec (tunefleet.v1.KernelSpec) and its source files
    (tunefleet.v1.SourceFile, with contents)."""
    spec: object
    sources: List[object]

    @property
    def name(self) -> str:
        return self.spec.name


def is_kernel_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, SPEC_FILE_NAME))


def load(directory: str) -> KernelBundle:
    """Reads `directory`/kernel.textproto and its sources. NotFoundError for
    a missing file, InvalidArgumentError for a spec that does not parse or a
    source path leaving the directory."""
    from google.protobuf import text_format

    spec_path = os.path.join(directory, SPEC_FILE_NAME)
    text = _read(spec_path).decode("utf-8", errors="replace")
    spec = kernel_spec_pb2().KernelSpec()
    try:
        text_format.Parse(text, spec)
    except text_format.ParseError as e:
        raise InvalidArgumentError(f"{spec_path}:{e}") from None
    if not spec.name:
        raise InvalidArgumentError(f"{spec_path}: kernel name is not set")
    sources = []
    for path in _file_paths(spec):
        if not path or path.startswith("/") or ".." in path:
            raise InvalidArgumentError(
                f'{spec_path}: source path "{path}" must stay inside {directory}')
        content = _read(os.path.join(directory, path))
        source = types_pb2().SourceFile(path=path, content=content,
                                        digest=hashlib.sha256(content).hexdigest())
        sources.append(source)
    return KernelBundle(spec=spec, sources=sources)


def normalize_shape(spec, shape: shapes.NameValues) -> Dict[str, int]:
    """`shape` ordered as the spec's problem dims. InvalidArgumentError when a
    dim is missing, unknown, or not positive (the coordinator's rule); a
    missing or unknown dim's message lists the kernel's dims."""
    given = shapes.as_dict(shape)
    dims = [dim.name for dim in spec.problem]
    unknown = [name for name in given if name not in dims]
    if unknown:
        raise InvalidArgumentError(
            f"unknown dim {unknown[0]} for kernel {spec.name} (dims: {', '.join(dims)})")
    out: Dict[str, int] = {}
    for name in dims:
        if name not in given:
            raise InvalidArgumentError(
                f"shape lacks dim {name} of kernel {spec.name} (dims: {', '.join(dims)})")
        if given[name] <= 0:
            raise InvalidArgumentError(f"dim {name} must be positive, got {given[name]}")
        out[name] = given[name]
    return out


def _file_paths(spec) -> List[str]:
    paths = list(spec.sources)
    for path in spec.reference.sources:
        if path not in paths:
            paths.append(path)
    return paths


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except PermissionError as e:
        raise PermissionDeniedError(f"cannot read {path}: {e.strerror}") from None
    except OSError as e:
        raise NotFoundError(f"cannot read {path}: {e.strerror}") from None
