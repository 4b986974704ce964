"""@tunefleet.autotune: the fleet's best config for every call, shaped like
@triton.autotune.

    @tunefleet.autotune(kernel="kernels/triton/matmul", key=["M", "N", "K"],
                        configs=[triton.Config({"BLOCK_M": 128, ...}, num_warps=8), ...])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, ..., BLOCK_M: tl.constexpr, ...):
        ...

    matmul_kernel[grid](a, b, c, M, N, K, ...)

The policy, enforced in one place (Autotuned._choose):

1. The key of a call is the values of the `key` arguments: integers, the
   problem dims (named by the spec's dim names through the `key` mapping).
2. On the first call with a key, the config comes from the first source
   that applies: a best-config table (`table=` or $TUNEFLEET_BEST_TABLE,
   tunefleet.BestTable); nothing (offline) when $TUNEFLEET_OFFLINE=1;
   else the fleet (GetBestConfig: exact key, else nearest tuned shape, else
   the spec's default).
3. An exact or nearest answer is used when it is among the allowed configs:
   `configs` (all of them when none are given) that pass `prune`. Else, or
   when the source has nothing, the DEFAULT tier: `default=`, else the
   spec's default config if allowed (the source's, else the default_config
   of the kernel directory's kernel.textproto), else the first allowed
   config; else FailedPreconditionError.
4. The choice is logged once (logger "tunefleet"), cached for the key for
   the life of the process (the source is not asked again), and exposed as
   `fn.last_choice` (a Choice) and in `fn.cache`. The line is INFO, or a
   WARNING saying which default is served and why when the source is
   offline or the fleet cannot be asked.
5. A fleet that cannot be reached (UNAVAILABLE, DEADLINE_EXCEEDED), that
   refuses the caller (UNAUTHENTICATED, PERMISSION_DENIED) or that cannot
   be asked from this process (grpcio or protobuf not installed:
   FAILED_PRECONDITION) gives the default at once; it is remembered for
   RETRY_SECONDS, during which later keys do not ask it again. Each lookup
   runs under `lookup_deadline` seconds and never waits for a connection.
   No failure of the service, and no missing optional module (grpcio,
   protobuf, torch: each imported only when needed), raises into the
   application while a default can be served; a bad decorator argument
   does.
6. With `submit_on_miss=True`, a key the fleet has not tuned exactly is
   submitted as a tuning job in a background thread, once per (fleet,
   kernel, shape, device model) per process, so that a later process gets
   the fleet's answer. With $TUNEFLEET_ALWAYS_TUNE=1 (or Triton-distributed's
   $TRITON_DIST_AUTOTUNE_ALWAYS_TUNE=1) every key is submitted so, as a
   forced re-tune, exact ones too; the current answer is served meanwhile.

Triton-distributed's and TileLang's dialects (docs/python.md, "Moving over
from another autotuner"): `key_fn(*args, **kwargs)` gives a call's shape
instead of `key`; `prune_fn(config, *args, **kwargs) -> bool` keeps a
config instead of `prune`; a call may pass `autotune=False` (the first
allowed config, else the default tier, without asking; not cached) and
`autotune_verbose=True` (the choice and where it came from, on stderr), which
the wrapped function never sees.

Inside a function decorated with @tunefleet.contextual_autotune (contextual.py)
a kernel's config is the function's: its part of the function's answer is
pinned for the call, no source is asked, and an EXACT or NEAREST one is kept
in the kernel's cache for its own key (where the key has no choice yet).

The wrapped function is called with the config's values as keyword
arguments: a dict's items; for a triton.Config-like object (`.kwargs`,
`.num_warps`, `.num_stages`) its kwargs plus num_warps and num_stages (the
fleet's params of those names). `fn(...)` calls a plain callable;
`fn[grid](...)` and `fn.run(...)` call a Triton JITFunction (or another
launcher with `.run`) as triton.autotune does, `fn.run(*args, **kwargs,
**config.all_kwargs())`.

Thread-safety: a decorated function may be called from several threads.
First calls of keys not yet cached are serialized per decorated function
(one lookup at a time, each under `lookup_deadline`); calls of cached keys
take no lock.
"""

from __future__ import annotations

import functools
import logging
import operator
import os
import sys
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import kernel_dir, records, shapes
from ._call_args import (arg_defaults, arg_names, config_values, key_mapping, launch_values,
                         matches)
from .errors import (Error, FailedPreconditionError, InvalidArgumentError, ResourceExhaustedError,
                     StatusCode)
from .table import BestTable

logger = logging.getLogger("tunefleet")

#: How long a fleet that failed is left alone before a new key asks again.
RETRY_SECONDS = 60.0
#: Seconds allowed for one lookup on the fleet.
DEFAULT_LOOKUP_DEADLINE = 1.0
#: Misses of one decorated function within this many seconds of the first
#: are submitted together, as one sweep (a serving engine's warm-up calls
#: shape after shape).
SWEEP_WINDOW_SECONDS = 0.25

_MISSING = object()
# What the warning of a served default calls each Choice.default_from.
_DEFAULT_NAMES = {"argument": "the default= config", "spec": "the spec's default config",
                  "configs": "the first allowed config"}
# Environment variables that make every key a forced re-tune (the second is
# Triton-distributed's).
_ALWAYS_TUNE = ("TUNEFLEET_ALWAYS_TUNE", "TRITON_DIST_AUTOTUNE_ALWAYS_TUNE")


# Inside a contextual function's call: kernel name -> (its part of the
# function's config as param -> value, the function's Choice, the
# function's kernel name).
_pins: ContextVar[Optional[Dict[str, Tuple[Dict[str, Any], "Choice", str]]]] = \
    ContextVar("tunefleet_pins", default=None)


def _always_tune() -> bool:
    return any(os.environ.get(name, "").lower() in ("1", "true", "yes") for name in _ALWAYS_TUNE)


# Codes after which the fleet is left alone for RETRY_SECONDS.
_FLEET_DOWN = frozenset({StatusCode.UNAVAILABLE, StatusCode.DEADLINE_EXCEEDED,
                         StatusCode.UNAUTHENTICATED, StatusCode.PERMISSION_DENIED,
                         StatusCode.FAILED_PRECONDITION})


@dataclass(frozen=True)
class Choice:
    """The config picked for one key, and why."""
    config: Any               # the listed config object (dict or triton.Config), or a dict
    tier: str                 # records.EXACT, NEAREST or DEFAULT
    source: str               # "fleet", "table", "offline" or "unreachable"
    kwargs: Dict[str, Any]    # what the wrapped callable receives
    shape: Dict[str, int]     # the key as the spec's dims
    median_seconds: float = 0.0
    tuning_key: str = ""
    reason: str = ""          # why the default was used, when it was
    # Which default the DEFAULT tier served: "argument" (default=), "spec"
    # (the spec's default config) or "configs" (the first allowed config);
    # "" for EXACT and NEAREST.
    default_from: str = ""
    launch_kwargs: Dict[str, Any] = field(default_factory=dict, repr=False)
    # The fleet's (or table's) whole answer behind an EXACT or NEAREST
    # choice: the job, shape and evidence it came from.
    answer: Optional[records.BestConfig] = field(default=None, repr=False)


def describe(choice: Choice) -> str:
    """One line: the config a call got and where it came from (what
    autotune_verbose=True prints)."""
    text = ",".join(f"{k}={v}" for k, v in choice.kwargs.items())
    where = f"{choice.tier} {text} for {shapes.format(choice.shape)} from {choice.source}"
    best = choice.answer
    if best is None or choice.tier == records.DEFAULT:
        default = _DEFAULT_NAMES.get(choice.default_from, "")
        return f"{where}: {default}" + (f" ({choice.reason})" if choice.reason else "")
    facts = [f"{best.median_seconds * 1e3:.4g} ms"]
    if best.tuned_shape:
        facts.append(f"tuned at {best.tuned_shape}")
    if best.job_id:
        facts.append(f"job {best.job_id}")
    if best.tie_set:
        facts.append(f"tie set of {len(best.tie_set)}")
    if best.measurements:
        facts.append(f"{best.measurements} measurements on {best.devices} device(s)")
    facts.append(f"key {best.tuning_key}")
    return f"{where}: " + ", ".join(facts)


class _Fleet:
    """One coordinator as the decorators of this process share it: a lazily
    made Client and the memory of its failure."""

    def __init__(self, server: Optional[str], deadline: float):
        self._server = server
        self._deadline = deadline
        self._lock = threading.Lock()
        self._client = None
        self._down_until = 0.0
        self._down_reason = ""

    def down_reason(self) -> str:
        """Why the fleet is not asked now; "" when it may be."""
        return self._down_reason if time.monotonic() < self._down_until else ""

    def mark_down(self, reason: str) -> None:
        self._down_until = time.monotonic() + RETRY_SECONDS
        self._down_reason = reason

    def client(self):
        with self._lock:
            if self._client is None:
                from .client import Client
                self._client = Client(self._server, deadline=self._deadline)
            return self._client


_fleets: Dict[Tuple[Optional[str], float], _Fleet] = {}
_tables: Dict[str, BestTable] = {}
_submitted: Dict[tuple, "Submission"] = {}
_registry_lock = threading.Lock()


def _fleet_for(server: Optional[str], deadline: float) -> _Fleet:
    with _registry_lock:
        return _fleets.setdefault((server, deadline), _Fleet(server, deadline))


def _table_for(path: str) -> BestTable:
    with _registry_lock:
        if path not in _tables:
            _tables[path] = BestTable.load(path)
        return _tables[path]


class Submission:
    """A tuning job submitted for a missed key, in a background thread."""

    def __init__(self):
        self.done = threading.Event()
        self.job: Optional[records.Job] = None
        self.error: Optional[BaseException] = None


def _device_model() -> str:
    """The current CUDA device as workers name it, "<name> sm_<major><minor>"."""
    try:
        import torch
    except ImportError:
        raise FailedPreconditionError(
            "autotune needs device= (the fleet's device model) where torch is not "
            "installed") from None
    if not torch.cuda.is_available():
        raise FailedPreconditionError("autotune needs device=: torch sees no CUDA device")
    major, minor = torch.cuda.get_device_capability()
    return f"{torch.cuda.get_device_name()} sm_{major}{minor}"


class Autotuned:
    """A function decorated with @tunefleet.autotune (see the module doc)."""

    def __init__(self, fn, *, kernel: str, configs, key, prune, default, device,
                 toolkit: str, submit_on_miss: bool, table, server: Optional[str],
                 client, kernel_dir_path: Optional[str], lookup_deadline: float,
                 submit_options: Optional[Mapping[str, Any]], key_fn=None, prune_fn=None,
                 checks: Optional[Mapping[str, Any]] = None):
        self.fn = fn
        functools.update_wrapper(self, fn, updated=())
        self.arg_names = arg_names(fn)
        self.key = key_mapping(key)
        self._key_fn = key_fn
        if key_fn is not None and self.key:
            raise InvalidArgumentError("autotune takes key= or key_fn=, not both")
        if key_fn is not None and not callable(key_fn):
            raise InvalidArgumentError("autotune key_fn= must be callable")
        if prune is not None and prune_fn is not None:
            raise InvalidArgumentError("autotune takes prune= or prune_fn=, not both")
        self._prune_fn = prune_fn
        if not self.key and key_fn is None:
            raise InvalidArgumentError(
                "autotune needs key= (the arguments giving the problem dims) or key_fn=")
        unknown = [a for a in self.key if a not in self.arg_names]
        if unknown:
            raise InvalidArgumentError(
                f"autotune key argument {unknown[0]} is not an argument of {self.__name__}")
        defaults = arg_defaults(fn)
        # (position, name, default) of each key argument, for the fast path.
        self._key_args = tuple((self.arg_names.index(a), a, defaults.get(a, _MISSING))
                               for a in self.key)
        positions = [position for position, _, _ in self._key_args] or [0]
        self._all_positional = max(positions) + 1  # len(args) from which itemgetter works
        self._get_positional = operator.itemgetter(*positions) if len(positions) > 1 else \
            (lambda args, i=positions[0]: (args[i],))
        self._kernel = kernel
        self._kernel_dir = kernel_dir_path
        if kernel_dir.is_kernel_dir(kernel):
            self._kernel_dir = kernel
        elif "/" in kernel:  # kernel names are identifiers: this was meant as a directory
            raise InvalidArgumentError(f"autotune kernel={kernel}: no {kernel_dir.SPEC_FILE_NAME} "
                                       "there (give a kernel directory or a kernel name)")
        self._configs_arg = configs
        self._configs: Optional[list] = None
        self._prune = prune
        self._default = default
        self._device = device
        self._toolkit = toolkit
        self._submit_on_miss = submit_on_miss
        self._table = table
        self._server = server
        self._client = client
        self._lookup_deadline = lookup_deadline
        self._submit_options = dict(submit_options or {})
        self._checks = _spec_checks(checks or {})
        self._kernel_name: Optional[str] = None
        self._kernel_summary: Optional[kernel_dir.SpecSummary] = None
        self._kernel_bundle: Optional[kernel_dir.KernelBundle] = None
        self._lock = threading.Lock()
        # Misses waiting for their sweep's window to close, by force_retune.
        self._batch_lock = threading.Lock()
        self._batches: Dict[bool, List[Tuple[Submission, Dict[str, int]]]] = {}
        self.cache: Dict[tuple, Choice] = {}
        # Choices pinned by contextual functions, by (key, the function's
        # tuning key, the pinned values).
        self._pinned_cache: Dict[tuple, Choice] = {}
        self.last_choice: Optional[Choice] = None
        self.submissions: Dict[tuple, Submission] = {}

    # --- calling -------------------------------------------------------------

    def _key_of(self, args, kwargs) -> tuple:
        if self._key_fn is not None:
            return tuple(sorted(self._shape_from_key_fn(args, kwargs).items()))
        if len(args) >= self._all_positional:
            return self._get_positional(args)
        n = len(args)
        return tuple([args[i] if i < n else kwargs.get(name, default)
                      for i, name, default in self._key_args])

    def _shape_from_key_fn(self, args, kwargs) -> Dict[str, int]:
        shape = self._key_fn(*args, **kwargs)
        if not isinstance(shape, Mapping) or not shape:
            raise InvalidArgumentError(
                f"autotune key_fn of {self.__name__} must return the call's shape as "
                f"{{dim: integer}}, got {type(shape).__name__}")
        out = {}
        for dim, value in shape.items():
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise InvalidArgumentError(
                    f"autotune key_fn of {self.__name__}: dim {dim} must be an integer, got "
                    f"{type(value).__name__}")
            out[str(dim)] = value.__index__()
        return out

    def _choice_for_call(self, args, kwargs) -> Choice:
        """The config of this call; takes the per-call options out of `kwargs`."""
        tune = kwargs.pop("autotune", True)
        verbose = kwargs.pop("autotune_verbose", False)
        pins = _pins.get()
        pinned = pins.get(self.kernel_name) if pins else None
        choice = self._pinned(*pinned, args, kwargs) if pinned is not None else None
        if choice is None and tune:
            key = self._key_of(args, kwargs)
            choice = self.cache.get(key) or self._choose(key, args, kwargs)
        elif choice is None:
            choice = self._untuned(args, kwargs)
        self.last_choice = choice
        if verbose:
            print(f"tunefleet: {self.__name__}: {describe(choice)}", file=sys.stderr)
        return choice

    def __call__(self, *args, **kwargs):
        choice = self._choice_for_call(args, kwargs)
        return self.fn(*args, **kwargs, **choice.kwargs)

    def run(self, *args, **kwargs):
        """Launches a Triton JITFunction (fn.run) with the key's config, as
        triton.autotune's Autotuner.run does."""
        choice = self._choice_for_call(args, kwargs)
        return self.fn.run(*args, **kwargs, **choice.launch_kwargs)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def cache_clear(self) -> None:
        """Forgets every key's choice: the next call of each asks again."""
        with self._lock:
            self.cache.clear()
            self._pinned_cache.clear()
            self.last_choice = None

    def wait_for_submissions(self, timeout: Optional[float] = None) -> List[Submission]:
        """Waits until every background submission has finished (or
        `timeout` seconds); returns them."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for submission in list(self.submissions.values()):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            submission.done.wait(left)
        return list(self.submissions.values())

    # --- the policy ----------------------------------------------------------

    def _choose(self, key: tuple, args, kwargs) -> Choice:
        with self._lock:
            choice = self.cache.get(key)
            if choice is not None:
                return choice
            shape = dict(key) if self._key_fn is not None else self._shape_of(key)
            allowed = self._allowed(args, kwargs)
            answer, source, reason = self._ask(shape)
            choice = self._pick(answer, source, reason, allowed, shape)
            self._log(choice)
            self.cache[key] = choice
        if source == "fleet" and _always_tune():
            self._submit(shape, force_retune=True)
        elif self._submit_on_miss and source == "fleet" and choice.tier != records.EXACT:
            self._submit(shape)
        return choice

    def _pinned(self, values: Dict[str, Any], function: Choice, function_name: str, args,
                kwargs) -> Optional[Choice]:
        """This kernel's part of a contextual function's choice: the listed
        config with those values (a dict of them when no configs are
        listed), with the function's tier and answer. An EXACT or NEAREST
        answer of the fleet or a table becomes the kernel's choice for its
        own key unless the key has one. A part that is not among the allowed
        configs (`configs`, `prune`) is refused as `_pick` refuses an
        answer: None (the kernel chooses as if alone), or, for a trial's
        config (the function's `build`), InvalidArgumentError."""
        key = self._key_of(args, kwargs)
        cache_key = (key, function_name, function.source, function.tier, function.tuning_key,
                     tuple(values.items()))
        cached = self._pinned_cache.get(cache_key)
        if cached is not None:
            return cached
        shape = dict(key) if self._key_fn is not None else self._shape_of(key)
        allowed = self._allowed(args, kwargs)
        config = None
        if allowed is not None:
            config = next((c for c in allowed if matches(c, values)), None)
            if config is None:
                text = ",".join(f"{k}={v}" for k, v in values.items())
                if function.source == "build":
                    raise InvalidArgumentError(
                        f"{self.kernel_name}: {text} (of {function_name}'s config) is not among "
                        f"its allowed configs for {shapes.format(shape)}")
                logger.warning("%s %s: %s's part %s is not among the allowed configs; the "
                               "kernel chooses alone", self.kernel_name, shapes.format(shape),
                               function_name, text)
                return None
        choice = self._make(config if config is not None else dict(values), function.tier,
                            "context", f"pinned by {function_name} at {shapes.format(function.shape)}",
                            function.answer, shape, function.default_from)
        with self._lock:
            self._pinned_cache[cache_key] = choice
            if function.source in ("fleet", "table") and function.tier != records.DEFAULT:
                self.cache.setdefault(key, choice)
        return choice

    def _untuned(self, args, kwargs) -> Choice:
        """A call with autotune=False: the first allowed config, else the
        default tier, without asking any source."""
        shape = self._shape_from_key_fn(args, kwargs) if self._key_fn is not None else \
            self._shape_of(self._key_of(args, kwargs))
        allowed = self._allowed(args, kwargs)
        if allowed:
            return self._make(allowed[0], records.DEFAULT, "caller", "autotune=False", None,
                              shape, "configs")
        return self._pick(None, "caller", "autotune=False", allowed, shape)

    def _shape_of(self, key: tuple) -> Dict[str, int]:
        shape = {}
        for (arg, dim), value in zip(self.key.items(), key):
            if value is _MISSING:
                raise TypeError(f"{self.__name__}() missing key argument '{arg}'")
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise InvalidArgumentError(
                    f"autotune key argument {arg} must be an integer, got {type(value).__name__}")
            shape[dim] = value.__index__()
        return shape

    def _allowed(self, args, kwargs) -> Optional[list]:
        """The listed configs that pass prune (or prune_fn); None when none
        are listed."""
        if self._configs is None and self._configs_arg is not None:
            configs = self._configs_arg() if callable(self._configs_arg) else self._configs_arg
            self._configs = list(configs)
        if self._configs is None:
            return None
        if self._prune_fn is not None:
            return [c for c in self._configs if self._prune_fn(c, *args, **kwargs)]
        if self._prune is None:
            return self._configs
        return list(self._prune(self._configs, dict(zip(self.arg_names, args), **kwargs)))

    def _ask(self, shape: Dict[str, int]):
        """(answer or None, source, reason) from the first source that applies."""
        table = self._table if self._table is not None else \
            os.environ.get("TUNEFLEET_BEST_TABLE") or None
        if table is not None:  # (an empty BestTable is falsy)
            if not isinstance(table, BestTable):
                table = _table_for(table)
            return self._ask_table(table, shape)
        if os.environ.get("TUNEFLEET_OFFLINE", "").lower() in ("1", "true", "yes"):
            return None, "offline", "TUNEFLEET_OFFLINE is set"
        return self._ask_fleet(shape)

    def _ask_table(self, table: BestTable, shape):
        try:
            return table.lookup(self.kernel_name, shape, self.device_model, self._toolkit), \
                "table", ""
        except Error as e:
            return None, "table", str(e)

    def _ask_fleet(self, shape):
        fleet = None if self._client is not None else \
            _fleet_for(self._server, self._lookup_deadline)
        down = fleet.down_reason() if fleet is not None else ""
        if down:
            return None, "unreachable", down
        try:
            client = self._client if fleet is None else fleet.client()
        except Error as e:  # no grpcio, an unreadable CA or token file
            fleet.mark_down(str(e))
            return None, "unreachable", str(e)
        try:
            device = self.device_model
        except Error as e:  # no device= and no torch: this decorator's lack, not the fleet's
            return None, "unreachable", str(e)
        try:
            answer = client.best(self.kernel_name, shape, device_model=device,
                                 toolkit=self._toolkit, deadline=self._lookup_deadline)
            return answer, "fleet", ""
        except Error as e:
            if e.code in _FLEET_DOWN:
                if fleet is not None:
                    fleet.mark_down(str(e))
                return None, "unreachable", str(e)
            if e.code == StatusCode.NOT_FOUND:
                return None, "fleet", str(e)
            logger.warning("%s: the fleet's answer failed: %s", self.kernel_name, e)
            return None, "fleet", str(e)

    @staticmethod
    def _make(config, tier: str, source: str, why: str, best: Optional[records.BestConfig],
              shape: Dict[str, int], default_from: str = "") -> Choice:
        return Choice(config=config, tier=tier, source=source, kwargs=config_values(config),
                      shape=shape, reason=why, launch_kwargs=launch_values(config),
                      median_seconds=best.median_seconds if best else 0.0,
                      tuning_key=best.tuning_key if best else "",
                      default_from=default_from, answer=best)

    def _pick(self, answer: Optional[records.BestConfig], source: str, reason: str,
              allowed: Optional[list], shape: Dict[str, int]) -> Choice:
        def make(config, tier, why="", best=None, default_from=""):
            return self._make(config, tier, source, why, best, shape, default_from)

        def accept(values):
            if allowed is None:
                return dict(values)
            return next((c for c in allowed if matches(c, values)), None)

        if answer is not None and answer.tier != records.DEFAULT:
            config = accept(answer.config)
            if config is not None:
                return make(config, answer.tier, best=answer)
            reason = f"the {answer.tier} config {answer.config_text} is not among the allowed configs"
        reason = reason or "nothing tuned"
        if self._default is not None:
            return make(self._default, records.DEFAULT, reason, default_from="argument")
        for spec_default in self._spec_defaults(answer):
            config = accept(spec_default)
            if config is not None:
                return make(config, records.DEFAULT, reason, default_from="spec")
        if allowed:
            return make(allowed[0], records.DEFAULT, reason, default_from="configs")
        raise FailedPreconditionError(
            f"autotune has no config for {self.kernel_name} "
            f"{shapes.format(shape)} ({reason}): give default= or configs=")

    def _spec_defaults(self, answer: Optional[records.BestConfig]):
        """The spec's default config as the source answered it, then as the
        kernel directory's kernel.textproto has it (read only if needed)."""
        if answer is not None and answer.tier == records.DEFAULT and answer.config:
            yield answer.config
        if self._kernel_dir is not None:
            config = shapes.parse_or_empty(self._summary().default_config)
            if config:
                yield config

    def _log(self, choice: Choice) -> None:
        text = ",".join(f"{k}={v}" for k, v in choice.kwargs.items())
        device = self._device if isinstance(self._device, str) else None  # offline: unresolved
        where = f"{self.kernel_name} {shapes.format(choice.shape)} on {device or 'any device'}"
        if choice.source in ("offline", "unreachable"):
            why = choice.reason if choice.source == "offline" else \
                f"the fleet cannot be asked: {choice.reason}"
            logger.warning("%s: serving %s %s because %s", where,
                           _DEFAULT_NAMES[choice.default_from], text, why)
            return
        detail = choice.source
        if choice.median_seconds:
            detail += f", {choice.median_seconds * 1e3:.4g} ms, key {choice.tuning_key}"
        if choice.reason:
            detail += f": {choice.reason}"
        logger.info("%s: %s %s (%s)", where, choice.tier, text, detail)

    # --- names, lazily -------------------------------------------------------

    @property
    def kernel_name(self) -> str:
        """The fleet's kernel name: the spec's, when `kernel` is a directory."""
        if self._kernel_name is None:
            if self._kernel_dir is not None and self._kernel == self._kernel_dir:
                self._kernel_name = self._summary().name
            else:
                self._kernel_name = self._kernel
        return self._kernel_name

    def _summary(self) -> kernel_dir.SpecSummary:
        """The kernel directory's name and default config, read once (without
        protobuf too). REQUIRES: a kernel directory."""
        if self._kernel_summary is None:
            self._kernel_summary = kernel_dir.read_summary(self._kernel_dir)
        return self._kernel_summary

    def _bundle(self) -> kernel_dir.KernelBundle:
        """The kernel directory's spec and sources, read once.
        REQUIRES: a kernel directory."""
        if self._kernel_bundle is None:
            bundle = kernel_dir.load(self._kernel_dir)
            for field, value in self._checks.items():
                message, name = field.split(".")
                setattr(getattr(bundle.spec, message), name, value)
            self._kernel_bundle = bundle
        return self._kernel_bundle

    @property
    def device_model(self) -> str:
        if self._device is None:
            self._device = _device_model()
        elif callable(self._device):
            self._device = self._device()
        return self._device

    # --- submit on miss ------------------------------------------------------

    def _submit(self, shape: Dict[str, int], force_retune: bool = False) -> None:
        if self._kernel_dir is None:
            logger.warning("%s: %s needs the kernel directory (kernel= or kernel_dir=); "
                           "nothing submitted", self.kernel_name,
                           "always-tune" if force_retune else "submit_on_miss")
            return
        key = (self._server, self.kernel_name, shapes.format(shape), self.device_model,
               force_retune)
        with _registry_lock:
            if key in _submitted:
                return
            submission = _submitted[key] = Submission()
        self.submissions[key] = submission
        with self._batch_lock:
            batch = self._batches.setdefault(force_retune, [])
            batch.append((submission, shape))
            if len(batch) > 1:
                return  # the window of the batch's first miss is open
        thread = threading.Thread(target=self._submit_in_background, args=(force_retune,),
                                  daemon=True, name=f"tunefleet-submit-{self.kernel_name}")
        thread.start()

    def _submit_in_background(self, force_retune: bool) -> None:
        """After SWEEP_WINDOW_SECONDS, submits the misses gathered meanwhile:
        one as a job, several as one sweep (each Submission gets its
        shape's job). A sweep is made all or none: when it is refused, each
        shape is submitted alone, so that one bad shape fails only itself."""
        time.sleep(SWEEP_WINDOW_SECONDS)
        with self._batch_lock:
            batch = self._batches.pop(force_retune, [])
        try:
            options = dict(device_model=self.device_model, **self._submit_options)
            if force_retune:
                options["force_retune"] = True
            client = self._client or _fleet_for(self._server, self._lookup_deadline).client()
            if len(batch) > 1:
                try:
                    sweep = client.submit_sweep(self._bundle(), [shape for _, shape in batch],
                                                **options)
                except (InvalidArgumentError, ResourceExhaustedError) as e:
                    # Refused whole (one bad shape, or a cap): each shape alone.
                    logger.warning("%s: the sweep of %d shapes was refused (%s); submitting "
                                   "each alone", self.kernel_name, len(batch), e)
                else:
                    for (submission, _), job in zip(batch, sweep.jobs):
                        submission.job = job
                    logger.info("%s: submitted %d shapes as sweep %s", self.kernel_name,
                                len(batch), sweep.id)
                    return
            for submission, shape in batch:
                self._submit_one(client, submission, shape, options)
        except Exception as e:  # noqa: BLE001 (a background thread reports, never raises)
            logger.warning("%s: submitting %d tuning job(s) failed: %s", self.kernel_name,
                           len(batch), e)
            for submission, _ in batch:
                if submission.job is None and submission.error is None:
                    submission.error = e
        finally:
            for submission, _ in batch:
                submission.done.set()

    def _submit_one(self, client, submission: Submission, shape: Dict[str, int],
                    options: Dict[str, Any]) -> None:
        try:
            submission.job = client.submit(self._bundle(), shape, **options)
            logger.info("%s %s: submitted tuning job %s", self.kernel_name,
                        shapes.format(shape), submission.job.id)
        except Exception as e:  # noqa: BLE001 (a background thread reports, never raises)
            submission.error = e
            logger.warning("%s %s: submitting a tuning job failed: %s", self.kernel_name,
                           shapes.format(shape), e)


def _spec_checks(checks: Mapping[str, Any]) -> Dict[str, Any]:
    """The decorator's input and checking options as the spec fields they
    set in what submit_on_miss submits (docs/python-backend.md, "Inputs and
    checks from your program"): a function is named, so it must be one of
    the reference's first source; None leaves the spec's own."""
    fields = {"supply": "reference.supply", "check": "reference.check",
              "skip_check": "tolerance.skip_check", "rtol": "tolerance.rtol",
              "atol": "tolerance.atol", "max_mismatch_ratio": "tolerance.max_mismatch_ratio"}
    out = {}
    for option, value in checks.items():
        if value is None:
            continue
        if option in ("supply", "check"):
            name = value if isinstance(value, str) else getattr(value, "__name__", None)
            if not name or not name.isidentifier():
                raise InvalidArgumentError(
                    f"autotune {option}= names a function of the kernel's reference source "
                    f"(a name or a function defined there), not {value!r}")
            value = name
        elif option == "skip_check":
            value = bool(value)
        else:
            value = float(value)
        out[fields[option]] = value
    return out


def autotune(kernel: str, configs: Union[Sequence[Any], Callable[[], Sequence[Any]], None] = None,
             key: Union[Sequence[Any], Mapping[str, str]] = (), *,
             prune: Optional[Callable[[list, Dict[str, Any]], Sequence[Any]]] = None,
             default: Any = None, device: Union[str, Callable[[], str], None] = None,
             toolkit: str = "", submit_on_miss: bool = False,
             table: Union[str, BestTable, None] = None, server: Optional[str] = None,
             client=None, kernel_dir: Optional[str] = None,
             lookup_deadline: float = DEFAULT_LOOKUP_DEADLINE,
             submit_options: Optional[Mapping[str, Any]] = None,
             key_fn: Optional[Callable[..., Mapping[str, int]]] = None,
             prune_fn: Optional[Callable[..., bool]] = None,
             supply: Union[str, Callable, None] = None, check: Union[str, Callable, None] = None,
             skip_check: Optional[bool] = None, rtol: Optional[float] = None,
             atol: Optional[float] = None, max_mismatch_ratio: Optional[float] = None):
    """Decorates a kernel launcher or a Triton JITFunction (see the module doc).

    kernel: the fleet's kernel name, or its kernel directory (then the name
        is the spec's, its default config is served when the source has
        nothing, offline too, and submit_on_miss can submit it).
    configs: the allowed configs, a list or a callable returning one; dicts of
        param -> value or triton.Config-like objects. None: any the fleet says.
    key: argument names giving the problem dims, e.g. ["M", "N", "K"]; a
        mapping {argument: dim} (or (argument, dim) pairs) where they differ.
    prune: prune(configs, named_args) -> the configs allowed for this call.
    default: the config when the source has nothing (else the spec's
        default, else the first allowed config).
    device: the fleet's device model (a string, or a callable returning one);
        default: the current torch CUDA device, "<name> sm_<cc>". "" matches
        any model.
    toolkit: the toolkit to match ("" any).
    submit_on_miss: submit a tuning job for a key not tuned exactly (the
        misses within SWEEP_WINDOW_SECONDS of the first, as one sweep).
    table: a best-config table (path or BestTable) instead of a fleet;
        default $TUNEFLEET_BEST_TABLE.
    server, client: the fleet (default: resolved as tunectl resolves it).
    kernel_dir: the kernel directory, when `kernel` is a name.
    lookup_deadline: seconds allowed for one lookup (default 1).
    submit_options: more Client.submit arguments (strategy, budget, ...).
    key_fn: key_fn(*args, **kwargs) -> {dim: integer}, the call's shape,
        instead of key (Triton-distributed's key_fn; its other parts, dtypes
        or ranks, belong in the kernel's spec or in device=).
    prune_fn: prune_fn(config, *args, **kwargs) -> bool, True to keep the
        config for this call, instead of prune (Triton-distributed's).
    supply, check, skip_check, rtol, atol, max_mismatch_ratio: what the
        jobs submit_on_miss submits measure with, over the kernel
        directory's spec (TileLang's supply_prog, manual_check_prog,
        skip_check, rtol, atol, max_mismatched_ratio): supply and check
        name functions of the reference's first source (a name, or the
        function itself, whose name is taken); Python kernels only, as the
        spec fields they set (docs/python-backend.md).
    """
    def decorate(fn) -> Autotuned:
        return Autotuned(fn, kernel=kernel, configs=configs, key=key, prune=prune,
                         default=default, device=device, toolkit=toolkit,
                         submit_on_miss=submit_on_miss, table=table, server=server,
                         client=client, kernel_dir_path=kernel_dir,
                         lookup_deadline=lookup_deadline, submit_options=submit_options,
                         key_fn=key_fn, prune_fn=prune_fn,
                         checks=dict(supply=supply, check=check, skip_check=skip_check,
                                     rtol=rtol, atol=atol,
                                     max_mismatch_ratio=max_mismatch_ratio))
    return decorate


__all__ = ["autotune", "Autotuned", "Choice", "Submission", "describe"]
