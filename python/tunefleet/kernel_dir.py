"""Reading a kernel directory: kernel.textproto and the sources it names.

The same files tunectl submits (common/spec_loader.cc): the spec is parsed
as protobuf text format, every path in `sources` and `reference.sources` is
read relative to the directory and sent with its SHA-256 digest. The
coordinator validates the spec in full; this module checks only what it
needs to build the request, and the shape against the spec's problem dims,
so that a bad shape fails before anything is sent.

The decorator needs only the spec's name and default config to serve a
default without a fleet (read_summary); where protobuf is not installed,
those two top-level fields are read by a scan of the text format, so that
an application without protobuf still gets the spec's default.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Dict, List

from . import shapes
from ._stubs import kernel_spec_pb2, types_pb2
from .errors import (FailedPreconditionError, InvalidArgumentError, NotFoundError,
                     PermissionDeniedError)

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


@dataclass(frozen=True)
class SpecSummary:
    """What serving a default needs of a spec."""
    name: str
    default_config: str  # short form, "BLOCK_M=32,..."; "" when the spec has none


def is_kernel_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, SPEC_FILE_NAME))


def load(directory: str) -> KernelBundle:
    """Reads `directory`/kernel.textproto and its sources. NotFoundError for
    a missing file, InvalidArgumentError for a spec that does not parse or a
    source path leaving the directory, FailedPreconditionError where
    protobuf (or the generated stubs) cannot be imported."""
    spec_path = os.path.join(directory, SPEC_FILE_NAME)
    spec = _parse_spec(spec_path, _read(spec_path).decode("utf-8", errors="replace"))
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


def read_summary(directory: str) -> SpecSummary:
    """The spec's name and default config: parsed with protobuf (errors as
    load's), or, where protobuf or the stubs cannot be imported, scanned
    from the spec's top-level fields (InvalidArgumentError when the text
    cannot be scanned or names no kernel)."""
    spec_path = os.path.join(directory, SPEC_FILE_NAME)
    text = _read(spec_path).decode("utf-8", errors="replace")
    try:
        spec = _parse_spec(spec_path, text)
    except FailedPreconditionError:
        fields = _scan_top_level_strings(spec_path, text)
        if not fields.get("name"):
            raise InvalidArgumentError(f"{spec_path}: kernel name is not set") from None
        return SpecSummary(name=fields["name"], default_config=fields.get("default_config", ""))
    return SpecSummary(name=spec.name, default_config=spec.default_config)


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


def _parse_spec(spec_path: str, text: str):
    """kernel.textproto as a tunefleet.v1.KernelSpec."""
    try:
        from google.protobuf import text_format
    except ImportError as e:
        raise FailedPreconditionError(
            f"reading {spec_path} needs protobuf ({e}): install python3-protobuf or "
            "the protobuf wheel") from e
    spec = kernel_spec_pb2().KernelSpec()
    try:
        text_format.Parse(text, spec)
    except text_format.ParseError as e:
        raise InvalidArgumentError(f"{spec_path}:{e}") from None
    if not spec.name:
        raise InvalidArgumentError(f"{spec_path}: kernel name is not set")
    return spec


# The tokens of protobuf's text format that a scan of top-level fields tells
# apart; every character of a well-formed spec is in one of them.
_TOKEN = re.compile(r"""
    (?P<blank>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<open>[{<\[])
  | (?P<close>[}>\]])
  | (?P<word>[^\s{}<>\[\]:"'\#,;]+)
  | (?P<punctuation>[:,;])
""", re.VERBOSE)
_ESCAPE = re.compile(r"\\(.)")


def _scan_top_level_strings(spec_path: str, text: str) -> Dict[str, str]:
    """The string-valued fields outside every message and list, as field ->
    value (adjacent strings concatenate, as in the text format). Escapes are
    read as the escaped character (\\" is "), which is exact for the plain
    ASCII of a kernel name and a config. InvalidArgumentError for text that
    does not scan."""
    fields: Dict[str, str] = {}
    depth, field, previous = 0, "", ""
    for kind, token in _tokens(spec_path, text):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        elif kind == "word":
            field = token if depth == 0 else ""
        elif kind == "string" and depth == 0 and field:
            value = _ESCAPE.sub(r"\1", token[1:-1])
            fields[field] = (fields[field] if previous == "string" else "") + value
        previous = kind
    if depth != 0:
        raise InvalidArgumentError(f"{spec_path}: unbalanced braces or brackets")
    return fields


def _tokens(spec_path: str, text: str):
    """(kind, text) of each token of `text` but blanks and comments."""
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidArgumentError(
                f"{spec_path}: cannot read the text format at offset {position} "
                "(without protobuf only the name and default_config fields are read)")
        if match.lastgroup != "blank":
            yield match.lastgroup, match.group()
        position = match.end()


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
