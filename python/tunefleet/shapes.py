"""The short text form of shapes and configs: "M=1024,N=1024,K=1024".

Parsed as the coordinator and tunectl parse it: comma-separated NAME=VALUE
items, integer values, each name once, blanks around items ignored.
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Tuple, Union

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


_INT64_MAX = 2**63 - 1
_NUMBER = re.compile(r"[+-]?[0-9]+")
_ASCII_BLANKS = " \t\n\v\f\r"


def _dim_values(dim: str, terms: List[str], max_values: int) -> List[int]:
    """The values of one dim's terms ("1", "2", "4", "...", "4096"), as
    tunectl reads them (64-bit integers, ASCII digits)."""
    def bad(why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"shape dim {dim}={','.join(terms)}: {why}")

    values: List[int] = []
    dots = None
    for i, term in enumerate(terms):
        if term == "...":
            if dots is not None:
                raise bad('one "..." at most')
            dots = i
            continue
        value = int(term) if _NUMBER.fullmatch(term) else None
        if value is None or not -_INT64_MAX - 1 <= value <= _INT64_MAX:
            raise bad(f"'{term}' is not a number")
        values.append(value)
    if dots is None:
        return values
    if dots < 2 or dots != len(terms) - 2:
        raise bad('a range is two or more terms, "...", then the last term')
    if any(value < 0 for value in values):
        raise bad("a range's terms are not negative")
    last = values.pop()
    step = values[1] - values[0]
    arithmetic = step != 0
    geometric = values[0] > 0 and values[1] % values[0] == 0 and values[1] // values[0] > 1
    ratio = values[1] // values[0] if geometric else 0
    for previous, value in zip(values, values[1:]):
        arithmetic = arithmetic and value - previous == step
        geometric = geometric and value == previous * ratio
    if not arithmetic and not geometric:
        raise bad('the terms before "..." have neither one difference nor one integer ratio')
    value = values[-1]
    growing = not arithmetic or step > 0
    while value != last:
        value = value + step if arithmetic else value * ratio
        if value > _INT64_MAX or (value > last if growing else value < last):
            raise bad(f"{last} is not a term of the range")
        if len(values) >= max_values:
            raise bad(f"more than {max_values} terms")
        values.append(value)
    return values


def expand(text: str, max_shapes: int = 1024) -> List[str]:
    """The shapes one shape text names, as `tunectl submit --shape` reads it
    (client/tunectl/sweep.h ExpandShapes): a dim takes one value, a list
    ("M=16,32,64") or a range ending "...,LAST" ("M=1,2,4,...,4096",
    geometric; "M=64,128,...,512", arithmetic; its terms not negative); the
    shapes are every combination, the first dim varying slowest. A text
    without lists is returned as written. InvalidArgumentError names what
    does not parse, and more than `max_shapes` shapes."""
    if not text.strip(_ASCII_BLANKS):
        return [text]
    dims: List[Tuple[str, List[str]]] = []
    for part in text.split(","):
        term = part.strip(_ASCII_BLANKS)
        name, equals, value = term.partition("=")
        if equals:
            dims.append((name.strip(_ASCII_BLANKS), [value.strip(_ASCII_BLANKS)]))
        elif dims:
            dims[-1][1].append(term)
        else:
            raise InvalidArgumentError(f"shape '{text}': it starts with NAME=VALUE")
    if not any(len(terms) > 1 for _, terms in dims):
        return [text]
    out = [""]
    for name, terms in dims:
        values = _dim_values(name, terms, max_shapes)
        if len(out) * len(values) > max_shapes:
            raise InvalidArgumentError(f"shape '{text}' names more than {max_shapes} shapes")
        out = [f"{shape}{',' if shape else ''}{name}={value}" for shape in out for value in values]
    return out


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
