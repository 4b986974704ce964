"""tunefleet.BestTable: an exported table of best configs, looked up offline.

What an application ships so that it needs no coordinator at start-up: the
JSON document `tunectl export KERNEL > best.json` writes (format
`tunefleet.best_configs`, docs/best-table-format.md). Lookups answer in the
coordinator's tiers, with the semantics of the C++ BestConfigTable
(client/best_config_table.cc):

- EXACT: a row tuned for exactly this shape (ties to the smallest tuning
  key), served as it is;
- NEAREST: else, of the rows nearest first (the distance is the sum over
  dims of |log(a/b)|; rows with other dims are never near; ties to the
  smallest tuning key), the first whose config is valid at the asked shape
  by the spec the table carries (config_fit: the spec's constraints but
  those on device limits alone, evaluated at the asked shape with the row's
  config; device limits take placeholder values, the table carries none);
- DEFAULT: else the kernel's default config, from that spec.

So a fallback answer is never a config the spec forbids at the asked shape.
Empty `device_model` or `toolkit` match any row. The file is trusted as
written: keys are not checked against kernel code. Only the standard
library is used (no protobuf, no grpc); the spec's expressions are parsed
by spec_expr, never passed to `eval`.

The same class loads the Triton-style file `tunectl export KERNEL --format
triton` writes (format `tunefleet.triton_autotune`, docs/best-table-format.md):
its `cache` maps the values of the kernel's dims to the config tuned there
(kwargs plus num_warps and num_stages), for one device model and toolkit.
It carries no spec: lookups answer EXACT for a shape of the cache, else
DEFAULT with the file's `default` config (no nearest row can be shown valid
without the spec's constraints, as for a table without its kernel's spec).

Thread-safety: a loaded table is immutable; lookup may be called from any
thread.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from . import records, shapes
from .config_fit import ConfigFit
from .errors import InvalidArgumentError, NotFoundError

FORMAT = "tunefleet.best_configs"
VERSION = 1  # the newest version this package reads
TRITON_FORMAT = "tunefleet.triton_autotune"
TRITON_VERSION = 1  # the newest Triton-style version this package reads
# A triton.Config's launch options that a spec may tune as params.
_TRITON_LAUNCH_OPTIONS = ("num_warps", "num_stages")


@dataclass(frozen=True)
class _Row:
    kernel: str
    shape: str
    dims: Dict[str, int]
    device_model: str
    toolkit: str
    config: str
    median_seconds: float
    tuning_key: str
    job_id: str
    values: Dict[str, int]  # the config's, {} when it does not parse
    evidence: dict          # BestConfig's evidence fields; {} when the row has none


@dataclass(frozen=True)
class _Kernel:
    default: str
    fit: Optional[ConfigFit]  # None when the spec's constraints do not compile


class BestTable:
    """The rows of one exported table, by kernel."""

    def __init__(self, rows: Mapping[str, List[_Row]], kernels: Mapping[str, _Kernel]):
        self._rows = dict(rows)
        self._kernels = dict(kernels)

    @classmethod
    def load(cls, path: str) -> "BestTable":
        """NotFoundError when the file cannot be read; InvalidArgumentError
        when it is not a table of a version this package reads."""
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError as e:
            raise NotFoundError(f"cannot read {path}: {e.strerror}") from None
        return cls.parse(text)

    @classmethod
    def parse(cls, text) -> "BestTable":
        """A table from its JSON text (str or bytes): a best-config table or
        a Triton-style file."""
        try:
            document = json.loads(text)
        except ValueError as e:
            raise _bad(f"not JSON ({e})") from None
        if isinstance(document, dict) and document.get("format") == TRITON_FORMAT:
            return cls._from_triton(document)
        _check_header(document)
        kernels = document.get("kernels", [])
        configs = document.get("configs", [])
        if not isinstance(kernels, list) or not isinstance(configs, list):
            raise _bad("kernels and configs must be arrays")
        specs = dict(_kernel(kernel) for kernel in kernels)
        rows: Dict[str, List[_Row]] = {}
        for item in configs:
            row = _row(item)
            rows.setdefault(row.kernel, []).append(row)
        return cls(rows, specs)

    @classmethod
    def _from_triton(cls, document: dict) -> "BestTable":
        version = document.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or \
                not 1 <= version <= TRITON_VERSION:
            raise InvalidArgumentError(
                f"Triton-style file version {version} is not supported "
                f"(this package reads 1 to {TRITON_VERSION})")
        kernel, key = document.get("kernel"), document.get("key")
        cache = document.get("cache", {})
        if not isinstance(kernel, str) or not isinstance(key, list) or \
                not all(isinstance(name, str) for name in key) or not isinstance(cache, dict):
            raise _bad_triton('"kernel", "key" (dim names) and "cache" are required')
        device, toolkit = str(document.get("device_model", "")), str(document.get("toolkit", ""))
        rows = [_triton_row(kernel, key, device, toolkit, text, entry)
                for text, entry in cache.items()]
        default = shapes.format(_triton_config(document.get("default", {"kwargs": {}})))
        return cls({kernel: rows}, {kernel: _Kernel(default=default, fit=None)})

    def __len__(self) -> int:
        """How many rows (tuned configs) the table holds."""
        return sum(len(rows) for rows in self._rows.values())

    def kernels(self) -> List[str]:
        """The kernels the table names (with rows or a default)."""
        return sorted(set(self._rows) | set(self._kernels))

    def lookup(self, kernel: str, shape: shapes.NameValues, device_model: str = "",
               toolkit: str = "") -> records.BestConfig:
        """The config for `kernel` at `shape`, in the tiers above.
        NotFoundError when the table carries no spec of the kernel and no row
        tuned for exactly this shape; InvalidArgumentError when `shape` does
        not parse."""
        query = shapes.as_dict(shape)
        near: List[Tuple[float, str, _Row]] = []
        for row in self._rows.get(kernel, ()):
            if (device_model and row.device_model != device_model) or \
                    (toolkit and row.toolkit != toolkit):
                continue
            distance = _distance(query, row.dims)
            if distance != math.inf:
                near.append((distance, row.tuning_key, row))
        near.sort(key=lambda item: item[:2])
        if near and near[0][0] == 0:
            return _answer(near[0][2], 0.0)
        spec = self._kernels.get(kernel)
        if spec is None:
            raise NotFoundError(f"the table has no spec of kernel {kernel}")
        fits: Dict[str, bool] = {}  # by config text: each checked once
        for distance, _, row in near:
            if row.config not in fits:
                fits[row.config] = spec.fit is not None and spec.fit.fits(query, row.values)
            if fits[row.config]:
                return _answer(row, distance)
        return records.BestConfig(tier=records.DEFAULT, config=shapes.parse_or_empty(spec.default),
                                  config_text=spec.default, device_model=device_model,
                                  toolkit=toolkit)


def _distance(query: Mapping[str, int], row: Mapping[str, int]) -> float:
    """Sum over the query's dims of |log(a/b)|; infinite when the row lacks
    one of them or a value is not positive (the C++ table's rule)."""
    if len(query) != len(row):
        return math.inf
    distance = 0.0
    for name, value in query.items():
        other = row.get(name)
        if other is None or value <= 0 or other <= 0:
            return math.inf
        distance += abs(math.log(value / other))
    return distance


def _answer(row: _Row, distance: float) -> records.BestConfig:
    return records.BestConfig(
        tier=records.EXACT if distance == 0 else records.NEAREST,
        config=shapes.parse_or_empty(row.config), config_text=row.config,
        median_seconds=row.median_seconds, tuning_key=row.tuning_key, job_id=row.job_id,
        tuned_shape=row.shape, device_model=row.device_model, toolkit=row.toolkit,
        **row.evidence)


def _bad(what: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"not a best-config table: {what}")


def _check_header(document) -> None:
    if not isinstance(document, dict):
        raise _bad("the document must be a JSON object")
    if document.get("format") != FORMAT:
        raise _bad(f'format is "{document.get("format", "")}"')
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad('"version" is missing or not an integer')
    if version < 1 or version > VERSION:
        raise InvalidArgumentError(
            f"best-config table version {version} is not supported "
            f"(this package reads 1 to {VERSION})")


def _kernel(kernel) -> tuple:
    """(name, _Kernel) of a kernels[] entry, from its spec."""
    spec = kernel.get("spec") if isinstance(kernel, dict) else None
    if not isinstance(spec, dict):
        raise _bad('each kernel needs a "spec" object')
    body = spec.get("kernel", {})
    if not isinstance(body, dict):
        raise _bad("a kernel's spec has no kernel object")
    name = body.get("name", kernel.get("name", ""))
    default = body.get("default_config", body.get("defaultConfig", ""))
    try:
        fit: Optional[ConfigFit] = ConfigFit(body)
    except InvalidArgumentError:
        fit = None  # no nearest row can be shown valid: nearest answers fall to the default
    return name, _Kernel(default=default, fit=fit)


_ROW_STRINGS = ("kernel", "shape", "device_model", "toolkit", "config", "tuning_key")


def _row(item) -> _Row:
    if not isinstance(item, dict):
        raise _bad("each config must be an object")
    for name in _ROW_STRINGS:
        if name not in item:
            raise _bad(f'"{name}" is missing')
        if not isinstance(item[name], str):
            raise _bad(f'"{name}" has the wrong type')
    seconds = item.get("median_seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise _bad('"median_seconds" is missing or has the wrong type')
    try:
        dims = shapes.parse(item["shape"])
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"row {item['tuning_key']}: {e.message}") from None
    return _Row(kernel=item["kernel"], shape=item["shape"], dims=dims,
                device_model=item["device_model"], toolkit=item["toolkit"],
                config=item["config"], median_seconds=float(seconds),
                tuning_key=item["tuning_key"], job_id=str(item.get("job_id", "")),
                values=shapes.parse_or_empty(item["config"]),
                evidence=_evidence(item.get("evidence")))


def _bad_triton(what: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"not a Triton-style best-config file: {what}")


def _triton_config(entry) -> Dict[str, int]:
    """A cache entry ({"kwargs": {...}, "num_warps": 4, ...}) as param -> value:
    the kwargs, then the launch options it has."""
    kwargs = entry.get("kwargs") if isinstance(entry, dict) else None
    if not isinstance(kwargs, dict):
        raise _bad_triton('each config needs a "kwargs" object')
    values = dict(kwargs)
    values.update((name, entry[name]) for name in _TRITON_LAUNCH_OPTIONS if name in entry)
    try:
        return shapes.as_dict(values)
    except InvalidArgumentError as e:
        raise _bad_triton(e.message) from None


def _triton_row(kernel: str, key: List[str], device: str, toolkit: str, text: str,
                entry) -> _Row:
    """The row of one cache entry: `text` holds the values of the `key` dims."""
    items = text.split(",")
    try:
        if len(items) != len(key):
            raise ValueError(text)
        dims = {name: int(value, 10) for name, value in zip(key, items)}
    except ValueError:
        raise _bad_triton(f'cache key "{text}" is not {len(key)} integers') from None
    values = _triton_config(entry)
    seconds = entry.get("median_seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise _bad_triton(f'"median_seconds" of "{text}" is not a number')
    return _Row(kernel=kernel, shape=shapes.format(dims), dims=dims, device_model=device,
                toolkit=toolkit, config=shapes.format(values), median_seconds=float(seconds),
                tuning_key="", job_id="", values=values, evidence={})


def _evidence(item) -> dict:
    """BestConfig's evidence fields from a row's "evidence" (the BestEvidence
    message as JSON, zero fields left out); {} when there is none."""
    if not isinstance(item, dict):
        return {}
    try:
        members = tuple(
            records.TieMember(config_text=str(m.get("config_text", "")),
                              median_seconds=float(m.get("median_seconds", 0)),
                              gap=float(m.get("gap", 0)))
            for m in item.get("tie_set", ()))
        return dict(tie_set=members, configs_in_round=int(item.get("configs_in_round", 0)),
                    rounds=int(item.get("rounds", 0)), rounds_cv=float(item.get("rounds_cv", 0)),
                    measurements=int(item.get("measurements", 0)),
                    devices=int(item.get("devices", 0)),
                    calibration_seconds=float(item.get("calibration_seconds", 0)))
    except (AttributeError, TypeError, ValueError):
        raise _bad("a row's evidence has the wrong type") from None


__all__ = ["BestTable"]
