"""@tunefleet.contextual_autotune: a function that launches several
@tunefleet.autotune kernels, tuned as one (Triton-distributed's
contextual_autotune, on the fleet).

    @tunefleet.autotune(kernel="qk", key=["M", "N"], configs=[...])
    @triton.jit
    def qk_kernel(...): ...

    @tunefleet.autotune(kernel="pv", key=["M", "N"], configs=[...])
    @triton.jit
    def pv_kernel(...): ...

    @tunefleet.contextual_autotune(kernel="kernels/triton/attention_pair", key=["M", "N"])
    def attention(q, k, v, out, M, N):
        qk_kernel[grid](q, k, scores, M, N)
        pv_kernel[grid](scores, v, out, M, N)

Kernels that cannot be timed alone (one reads what the other writes, or
they talk to each other) are tuned in their function's context: the whole
function is the timed unit. The function is a kernel of the fleet of its
own, with a spec (kernel.textproto) whose params are the kernels' params
named "<kernel>__<param>" ("qk__BLOCK_M", "pv__num_warps"; a param without
the prefix is the function's own, passed to it as a keyword argument), and
whose entry is the function's `build` (`build = attention.build` in the
spec's source). Its jobs use the coordinate strategy (docs/python.md,
"Tuning a function of several kernels"): kernel after kernel, each over
its own params, the others held at their best so far, round after round
until no kernel alone can do better.

A call of the function gets the function's config as @tunefleet.autotune
gets a kernel's (the same sources, tiers, defaults, logging, per-call
options and submit_on_miss; the key is the function's), then runs the
function with each kernel's part of it pinned: the kernels launch with
those values, ask nothing, and keep an EXACT or NEAREST part as their own
choice for their own key (as Triton-distributed fills each autotuner's
cache). One answer, the function's, is stored by the fleet and served to
every rank and every host.

The pins are context-local (contextvars): they reach the kernels the
function launches from its own thread, and from threads it starts through
contextvars.copy_context().run; a kernel launched from a thread started
otherwise (a plain threading.Thread, an executor's worker) chooses alone.
A kernel's part that its own `configs`/`prune` do not allow is not launched:
the kernel chooses alone (a warning says why), and a trial of such a config
fails.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import records
from .autotune import DEFAULT_LOOKUP_DEADLINE, Autotuned, Choice, _pins
from .errors import InvalidArgumentError
from .table import BestTable

#: Separates a kernel's name from its param's in the function's spec (the
#: coordinator's param groups, server/coordinate_strategy.h).
SEPARATOR = "__"
#: The strategy the function's jobs use unless submit_options names one.
STRATEGY = "coordinate"


def split_config(values: Mapping[str, Any]) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
    """({kernel: {param: value}}, {the function's own param: value}) of a
    function's config."""
    kernels: Dict[str, Dict[str, Any]] = {}
    own: Dict[str, Any] = {}
    for name, value in values.items():
        at = name.find(SEPARATOR)
        if at <= 0:
            own[name] = value
        else:
            kernels.setdefault(name[:at], {})[name[at + len(SEPARATOR):]] = value
    return kernels, own


class ContextualAutotuned(Autotuned):
    """A function decorated with @tunefleet.contextual_autotune (see the
    module doc)."""

    def __call__(self, *args, **kwargs):
        choice = self._choice_for_call(args, kwargs)
        return self._run_pinned(choice, args, kwargs)

    def run(self, *args, **kwargs):
        raise TypeError(f"{self.__name__} is a contextual function: call it, it launches "
                        "its kernels itself")

    def __getitem__(self, grid):
        raise TypeError(f"{self.__name__} is a contextual function: call it, not "
                        f"{self.__name__}[grid]")

    def _run_pinned(self, choice: Choice, args, kwargs):
        kernels, own = split_config(choice.kwargs)
        pins = dict(_pins.get() or {})  # a contextual function inside another: both pin
        for kernel, values in kernels.items():
            pins[kernel] = (values, choice, self.kernel_name)
        token = _pins.set(pins)
        try:
            return self.fn(*args, **kwargs, **own)
        finally:
            _pins.reset(token)

    def build(self, config: Mapping[str, int], shape: Mapping[str, int]) -> Callable:
        """The Python backend's entry for the function's spec
        (`build = attention.build`): a callable of the spec's tensor
        arguments that calls the function with `config` pinned, passing the
        key arguments from `shape` (by the key's mapping, else the dims
        whose names are the function's parameters)."""
        values = {str(name): int(value) for name, value in config.items()}
        dims = {str(name): int(value) for name, value in shape.items()}
        if self.key:
            missing = [dim for dim in self.key.values() if dim not in dims]
            if missing:
                raise InvalidArgumentError(
                    f"{self.__name__}.build: the shape has no dim {missing[0]} "
                    f"(key {self.key})")
            scalars = {arg: dims[dim] for arg, dim in self.key.items()}
        else:
            scalars = {name: value for name, value in dims.items() if name in self.arg_names}
        choice = self._make(values, records.EXACT, "build", "", None, dims)

        def run(*tensors):
            return self._run_pinned(choice, tensors, dict(scalars))
        run.__name__ = f"{self.__name__}_pinned"
        return run


def contextual_autotune(kernel: str, key: Union[Sequence[Any], Mapping[str, str]] = (), *,
                        key_fn: Optional[Callable[..., Mapping[str, int]]] = None,
                        configs: Union[Sequence[Any], Callable[[], Sequence[Any]], None] = None,
                        prune: Optional[Callable[[list, Dict[str, Any]], Sequence[Any]]] = None,
                        prune_fn: Optional[Callable[..., bool]] = None,
                        default: Any = None, device: Union[str, Callable[[], str], None] = None,
                        toolkit: str = "", submit_on_miss: bool = False,
                        table: Union[str, BestTable, None] = None, server: Optional[str] = None,
                        client=None, kernel_dir: Optional[str] = None,
                        lookup_deadline: float = DEFAULT_LOOKUP_DEADLINE,
                        submit_options: Optional[Mapping[str, Any]] = None):
    """Decorates a function that launches @tunefleet.autotune kernels (see
    the module doc). The arguments are @tunefleet.autotune's, for the
    function: `kernel` is the function's kernel (a name, or its kernel
    directory), `key`/`key_fn` give the function's shape, `configs` (dicts
    of "<kernel>__<param>" -> value), when given, limit its allowed configs,
    and submit_on_miss submits jobs with the coordinate strategy unless
    `submit_options` names another (and its budget, 0: until it converges)."""
    options = dict(submit_options or {})
    options.setdefault("strategy", STRATEGY)

    def decorate(fn) -> ContextualAutotuned:
        if hasattr(fn, "arg_names") and not inspect.isfunction(fn):
            raise InvalidArgumentError(
                "contextual_autotune decorates a Python function that launches kernels, "
                f"not a kernel ({type(fn).__name__}): use tunefleet.autotune for that")
        return ContextualAutotuned(fn, kernel=kernel, configs=configs, key=key, prune=prune,
                                   default=default, device=device, toolkit=toolkit,
                                   submit_on_miss=submit_on_miss, table=table, server=server,
                                   client=client, kernel_dir_path=kernel_dir,
                                   lookup_deadline=lookup_deadline, submit_options=options,
                                   key_fn=key_fn, prune_fn=prune_fn)
    return decorate


__all__ = ["contextual_autotune", "ContextualAutotuned", "split_config", "SEPARATOR"]
