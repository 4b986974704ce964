"""What a decorated function's configs and arguments say, read from the
objects users pass: Triton `Config`s (or plain mappings), `key=` in its
three forms, and a function's (or a Triton JITFunction's) argument names
and defaults. Shared by `autotune` and `contextual`."""

import inspect
from typing import Any, Dict, List, Mapping


def config_values(config) -> Dict[str, Any]:
    """A listed config as param -> value (for matching the fleet's answer)."""
    if isinstance(config, Mapping):
        return dict(config)
    values = dict(getattr(config, "kwargs", {}))
    for name in ("num_warps", "num_stages"):
        value = getattr(config, name, None)
        if value is not None:
            values[name] = value
    return values


def launch_values(config) -> Dict[str, Any]:
    """What triton.autotune passes to JITFunction.run for this config."""
    all_kwargs = getattr(config, "all_kwargs", None)
    return dict(all_kwargs()) if callable(all_kwargs) else config_values(config)


def matches(config, answer: Mapping[str, int]) -> bool:
    values = config_values(config)
    return all(name in values and values[name] == value for name, value in answer.items())


def key_mapping(key) -> Dict[str, str]:
    """`key` as argument name -> dim name."""
    if isinstance(key, str):
        key = [key]
    if isinstance(key, Mapping):
        return {str(a): str(d) for a, d in key.items()}
    out = {}
    for item in key:
        arg, dim = (item, item) if isinstance(item, str) else item
        out[str(arg)] = str(dim)
    return out


def arg_names(fn) -> List[str]:
    names = getattr(fn, "arg_names", None)  # a Triton JITFunction
    if names is not None:
        return list(names)
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def arg_defaults(fn) -> Dict[str, Any]:
    fn = getattr(fn, "fn", fn) if hasattr(fn, "arg_names") else fn  # a JITFunction's Python function
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not p.empty}
