"""The short text form of shapes and configs: "M=1024,N=1024,K=1024".

Parsed as the coordinator and tunectl parse it: comma-separated NAME=VALUE
items, integer values, each name once, blanks around items ignored.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Union

from .errors import InvalidArgumentError, NotFoundError

#: A shape or config as the API takes it: short-form text or name -> integer.
NameValues = Union[str, Mapping[str, int]]


def parse(text: str) -> Dict[str, int]:
    """"M=1,N=2" -> {"M": 1, "N": 2}, in order. InvalidArgumentError when an
    item is not NAME=INTEGER or a name is given twice."""
    items: Dict[str, int] = {}
    if not text.strip():
        return items
    for item in text.split(","):
        item = item.strip()
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise InvalidArgumentError(f'expected NAME=VALUE, got "{item}"')
        try:
            number = int(value, 10)
        except ValueError:
            raise InvalidArgumentError(
                f'value of {name} is not an integer: "{value}"') from None
        if name in items:
            raise InvalidArgumentError(f"{name} given twice")
        items[name] = number
    return items


def parse_or_empty(text: str) -> Dict[str, int]:
    """parse(text), or {} when it does not parse (a stored config's text
    stands as it is, without values, as in the C++ table)."""
    try:
        return parse(text)
    except InvalidArgumentError:
        return {}


def format(values: Mapping[str, int]) -> str:  # noqa: A001 (the module's verb)
    """{"M": 1, "N": 2} -> "M=1,N=2", in the mapping's order."""
    return ",".join(f"{name}={int(value)}" for name, value in values.items())


def read_file(path: str) -> List[str]:
    """A sweep's shapes, one a line ('#' starts a comment, blank lines are
    skipped), as `tunectl submit --shapes-file` reads them
    (client/tunectl/sweep.cc). NotFoundError when the file cannot be read,
    InvalidArgumentError when it holds no shape; each line is checked where
    it is used."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        raise NotFoundError(f"cannot read the shapes file {path}") from None
    listed = [line.partition("#")[0].strip() for line in lines]
    listed = [text for text in listed if text]
    if not listed:
        raise InvalidArgumentError(f"{path} holds no shape")
    return listed


def as_dict(values: NameValues) -> Dict[str, int]:
    """Short-form text or a mapping, as a name -> int dict. Values must be
    integers (bools and floats are refused: a dim or param is never one)."""
    if isinstance(values, str):
        return parse(values)
    out: Dict[str, int] = {}
    for name, value in values.items():
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise InvalidArgumentError(f"value of {name} is not an integer: {value!r}")
        out[str(name)] = value.__index__()
    return out
