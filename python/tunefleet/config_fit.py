"""ConfigFit: whether a config tuned at one shape is valid at another shape,
by the spec's constraints. The rule of the C++ ConfigFit
(common/config_fit.h), which the coordinator and the C++ BestConfigTable
check every nearest-shape answer with; tests/data/nearest_fallback.json holds
the cases the three pass.

A config fits a shape when it names every param of the spec once, each with
one of the param's listed values, names no other param, and every checked
constraint holds at that shape with the config's values. Checked:
every constraint except one that names a device limit and no problem dim
(directly or through derived values); such a constraint does not depend on
the shape, and it held on the device the config was measured on. The limits
a checked constraint names are the device's where the caller knows them,
else the backend's placeholders (PLACEHOLDER_LIMITS).

The spec is a KernelSpec as protobuf's JSON mapping writes it (what an
exported table carries, docs/best-table-format.md). Its expressions are
compiled once (spec_expr), never passed to `eval`.

Thread-safety: immutable after construction; `fits` may be called from any
thread.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Optional, Tuple

from . import spec_expr
from .errors import InvalidArgumentError

# PlaceholderLimits of common/config_space.cc, by backend: what stands in for
# a device's limits before any device is known.
_CPU_LIMITS: Dict[str, float] = {
    "cores": 64, "l1d_bytes": 49152, "l2_bytes": 2097152, "l3_bytes": 33554432,
}
_CUDA_LIMITS: Dict[str, float] = {
    "max_threads_per_block": 1024, "max_smem_per_block": 49152,
    "max_smem_per_block_optin": 232448, "smem_per_sm": 233472, "regs_per_block": 65536,
    "regs_per_sm": 65536, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
    "sm_count": 132, "l2_bytes": 52428800, "warp_size": 32, "cc_major": 9, "cc_minor": 0,
}
PLACEHOLDER_LIMITS: Dict[str, Dict[str, float]] = {
    "BACKEND_CPU": _CPU_LIMITS, "BACKEND_CUDA": _CUDA_LIMITS, "BACKEND_PYTHON": _CUDA_LIMITS,
}
_BACKENDS = {1: "BACKEND_CPU", 2: "BACKEND_CUDA", 3: "BACKEND_PYTHON"}


def placeholder_limits(backend) -> Dict[str, float]:
    """The placeholder limits of a backend (its enum name or number): CUDA's
    for CUDA and Python kernels, the CPU's for anything else."""
    name = _BACKENDS.get(backend, backend) if isinstance(backend, int) else backend
    return dict(PLACEHOLDER_LIMITS.get(name, _CPU_LIMITS))


class ConfigFit:
    """The compiled constraints of one spec."""

    def __init__(self, spec: Mapping):
        """`spec`: the KernelSpec (JSON mapping). InvalidArgumentError, naming
        the expression, when a derived value or constraint does not compile
        with the backend's placeholder limits."""
        self._dims: List[str] = [_str(dim, "name") for dim in _list(spec, "problem")]
        self._params: Dict[str, frozenset] = {
            _str(param, "name"): frozenset(_int(v) for v in _list(param, "values"))
            for param in _list(spec, "params")}
        self._limits = placeholder_limits(spec.get("backend", "BACKEND_CPU"))
        visible = set(self._limits) | set(self._dims) | set(self._params)
        derived: List[Tuple[str, spec_expr.Expr]] = []
        for item in _list(spec, "derived"):
            name = _str(item, "name")
            derived.append((name, spec_expr.compile_expr(
                _str(item, "expr"), visible, f"derived {name}")))
            visible.add(name)
        constraints = [spec_expr.compile_expr(_str(item, "expr"), visible, f"constraint #{i + 1}")
                       for i, item in enumerate(_list(spec, "constraints"))]
        self._plan(derived, constraints)

    def _plan(self, derived: List[Tuple[str, spec_expr.Expr]],
              constraints: List[spec_expr.Expr]) -> None:
        # What each derived value names, directly or through earlier ones.
        dims, limits = set(self._dims), set(self._limits)
        named: Dict[str, Tuple[bool, bool]] = {}  # name -> (a dim, a limit)

        def names_of(expr: spec_expr.Expr) -> Tuple[bool, bool]:
            dim = any(n in dims or named.get(n, (False, False))[0] for n in expr.names)
            limit = any(n in limits or named.get(n, (False, False))[1] for n in expr.names)
            return dim, limit

        for name, expr in derived:
            named[name] = names_of(expr)
        self._constraints = []
        self.uses_limits = False
        needed = set()
        for expr in constraints:
            dim, limit = names_of(expr)
            if limit and not dim:
                continue  # held where the config was measured
            self._constraints.append(expr)
            self.uses_limits |= limit
            needed |= expr.names
        for name, expr in reversed(derived):  # a derived value names only earlier ones
            if name in needed:
                needed |= expr.names
        self._derived = [(name, expr) for name, expr in derived if name in needed]

    def fits(self, dims: Mapping[str, int], config: Mapping[str, int],
             limits: Optional[Mapping[str, float]] = None) -> bool:
        """Whether `config` (param -> value) fits the shape `dims` (dim ->
        value: exactly the spec's dims, each positive). `limits`: the
        device's where known; a name it lacks takes the placeholder value."""
        if set(dims) != set(self._dims) or any(dims[name] <= 0 for name in self._dims):
            return False
        if set(config) != set(self._params) or \
                any(value not in self._params[name] for name, value in config.items()):
            return False
        env: Dict[str, float] = dict(self._limits)
        if limits:
            env.update((name, float(limits[name])) for name in self._limits if name in limits)
        env.update((name, float(value)) for name, value in dims.items())
        env.update((name, float(value)) for name, value in config.items())
        for name, expr in self._derived:
            env[name] = expr.evaluate(env)
        for expr in self._constraints:
            value = expr.evaluate(env)
            if value == 0 or math.isnan(value):
                return False
        return True


def _list(message: Mapping, name: str) -> list:
    value = message.get(name, [])
    if not isinstance(value, list):
        raise InvalidArgumentError(f'a spec\'s "{name}" must be an array')
    return value


def _int(value) -> int:
    """An int64 as protobuf's JSON mapping writes it: a number or a string."""
    if isinstance(value, bool):
        raise InvalidArgumentError("a param's values must be integers")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError("a param's values must be integers") from None


def _str(message, name: str) -> str:
    value = message.get(name, "") if isinstance(message, Mapping) else None
    if not isinstance(value, str):
        raise InvalidArgumentError(f'a spec\'s "{name}" must be a string')
    return value


__all__ = ["ConfigFit", "PLACEHOLDER_LIMITS", "placeholder_limits"]
