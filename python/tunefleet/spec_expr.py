"""A kernel spec's expressions, parsed and evaluated in Python as the C++
side evaluates them (muParser, common/config_space.cc; the syntax is in
docs/kernel-spec.md, "Expressions").

Nothing is passed to `eval`: a tokenizer and a recursive-descent parser with
muParser's precedence turn the text into a tree of small Python functions,
and the only things such a tree can do are the operators and functions
below. Translating the text to Python source and parsing that with `ast`
would not do: muParser's `a ? b : c`, its left-to-right comparisons
(`3 > 2 > 1` is `(3 > 2) > 1`, 0) and its `^` have no Python spelling that a
textual translation gets right in every nesting.

Grammar, loosest first (muParser 2.3's precedence):

    a ? b : c          (right to left)
    ||
    &&
    == != < > <= >=    (one level, left to right)
    + -
    * / %              (% is fmod, tunefleet's)
    unary - +          (-2^2 is -4)
    ^                  (right to left; 2^-1 is 0.5)
    number, name, function(args...), (expression)

Every value is a float (a C double); a comparison or logical operator gives
1.0 or 0.0, and a value is true when it is not 0 (NaN is true, as in C).
Arithmetic follows IEEE 754 as C does: division by zero gives an infinity
or NaN, not an exception.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Collection, Dict, FrozenSet, List, Mapping, Tuple

from .errors import InvalidArgumentError

_INF = math.inf
_NAN = math.nan

Env = Mapping[str, float]
Node = Callable[[Env], float]


def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return _NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)


def _fmod(a: float, b: float) -> float:
    try:
        return math.fmod(a, b)
    except ValueError:  # b == 0 or a infinite
        return _NAN


def _pow(a: float, b: float) -> float:
    odd = math.isfinite(b) and b == math.floor(b) and int(b) % 2 == 1
    try:
        return math.pow(a, b)
    except OverflowError:
        return -_INF if a < 0 and odd else _INF
    except ValueError:  # 0 to a negative power, or a negative base to a fraction
        if a == 0:
            return math.copysign(_INF, a) if odd else _INF
        return _NAN


def _math(function: Callable[..., float]) -> Callable[..., float]:
    """`function` with C's answers where Python's math raises."""
    def call(*args: float) -> float:
        try:
            return float(function(*args))
        except OverflowError:
            return _INF
        except ValueError:
            return _NAN
    return call


def _log(base_log: Callable[[float], float]) -> Callable[[float], float]:
    def call(x: float) -> float:
        if x == 0:
            return -_INF
        try:
            return base_log(x)
        except ValueError:
            return _NAN
    return call


def _rounding(function: Callable[[float], int]) -> Callable[[float], float]:
    return lambda x: float(function(x)) if math.isfinite(x) else x


def _is_pow2(x: float) -> float:
    if not math.isfinite(x) or x < 1 or x != math.floor(x):
        return 0.0
    v = int(x)
    return 1.0 if v & (v - 1) == 0 else 0.0


def _sign(x: float) -> float:
    return -1.0 if x < 0 else 1.0 if x > 0 else 0.0


def _min(*args: float) -> float:
    out = args[0]
    for x in args[1:]:
        if x < out:
            out = x
    return out


def _max(*args: float) -> float:
    out = args[0]
    for x in args[1:]:
        if x > out:
            out = x
    return out


def _sum(*args: float) -> float:
    out = 0.0
    for x in args:  # left to right, as muParser adds (not Python's compensated sum)
        out += x
    return out


# name -> (function, number of arguments; -1: one or more)
FUNCTIONS: Dict[str, Tuple[Callable[..., float], int]] = {
    # tunefleet's (common/config_space.cc)
    "floor": (_rounding(math.floor), 1),
    "ceil": (_rounding(math.ceil), 1),
    "cdiv": (lambda a, b: _rounding(math.ceil)(_div(a, b)), 2),
    "is_pow2": (_is_pow2, 1),
    # muParser's
    "abs": (abs, 1),
    "sqrt": (_math(math.sqrt), 1),
    "exp": (_math(math.exp), 1),
    "ln": (_log(math.log), 1),
    "log": (_log(math.log), 1),
    "log2": (_log(math.log2), 1),
    "log10": (_log(math.log10), 1),
    "sign": (_sign, 1),
    "rint": (lambda x: _rounding(math.floor)(x + 0.5), 1),
    "sin": (_math(math.sin), 1),
    "cos": (_math(math.cos), 1),
    "tan": (_math(math.tan), 1),
    "asin": (_math(math.asin), 1),
    "acos": (_math(math.acos), 1),
    "atan": (_math(math.atan), 1),
    "atan2": (_math(math.atan2), 2),
    "sinh": (_math(math.sinh), 1),
    "cosh": (_math(math.cosh), 1),
    "tanh": (_math(math.tanh), 1),
    "asinh": (_math(math.asinh), 1),
    "acosh": (_math(math.acosh), 1),
    "atanh": (_math(math.atanh), 1),
    "min": (_min, -1),
    "max": (_max, -1),
    "sum": (_sum, -1),
    "avg": (lambda *args: _sum(*args) / len(args), -1),
}
CONSTANTS: Dict[str, float] = {"_pi": math.pi, "_e": math.e}

_BINARY: Dict[str, Callable[[float, float], float]] = {
    "||": lambda a, b: 1.0 if a != 0 or b != 0 else 0.0,
    "&&": lambda a, b: 1.0 if a != 0 and b != 0 else 0.0,
    "==": lambda a, b: 1.0 if a == b else 0.0,
    "!=": lambda a, b: 1.0 if a != b else 0.0,
    "<": lambda a, b: 1.0 if a < b else 0.0,
    ">": lambda a, b: 1.0 if a > b else 0.0,
    "<=": lambda a, b: 1.0 if a <= b else 0.0,
    ">=": lambda a, b: 1.0 if a >= b else 0.0,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": _fmod,
}
# Binary levels, loosest first; each is left to right.
_LEVELS: List[FrozenSet[str]] = [
    frozenset({"||"}), frozenset({"&&"}),
    frozenset({"==", "!=", "<", ">", "<=", ">="}),
    frozenset({"+", "-"}), frozenset({"*", "/", "%"}),
]

_TOKEN = re.compile(r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z_]))
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%^<>?:(),])
)""", re.VERBOSE)


class Expr:
    """One compiled expression: `names` are the variables it reads."""

    def __init__(self, text: str, node: Node, names: FrozenSet[str]):
        self.text = text
        self.names = names
        self._node = node

    def evaluate(self, env: Env) -> float:
        """Its value with the variables of `env` (floats); NaN where the
        evaluation fails. REQUIRES: every name of `names` in `env`."""
        try:
            return self._node(env)
        except (ArithmeticError, ValueError):
            return _NAN


def compile_expr(text: str, names: Collection[str], what: str = "expression") -> Expr:
    """Parses `text`; `names` are the variables it may read. InvalidArgumentError
    naming `what` when it does not parse or reads another name."""
    try:
        parser = _Parser(text, names)
        node = parser.expression()
        if parser.peek() is not None:
            raise parser.error(f'unexpected "{parser.peek()[1]}"')
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f'{what} "{text}": {e.message}') from None
    return Expr(text, node, frozenset(parser.used))


class _Parser:
    def __init__(self, text: str, names: Collection[str]):
        self.tokens: List[Tuple[str, str]] = []
        self.names = names
        self.used: set = set()
        self.at = 0
        position = 0
        text = text.rstrip()
        if not text:
            raise InvalidArgumentError("is empty")
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise InvalidArgumentError(f"unexpected text at position {position}")
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind)))
            position = match.end()

    def error(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(message)

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, op: str) -> bool:
        token = self.peek()
        if token == ("op", op):
            self.at += 1
            return True
        return False

    def expect(self, op: str) -> None:
        if not self.take(op):
            token = self.peek()
            found = "the end" if token is None else f'"{token[1]}"'
            raise self.error(f'expected "{op}", found {found}')

    def expression(self) -> Node:
        condition = self.binary(0)
        if not self.take("?"):
            return condition
        then = self.expression()
        self.expect(":")
        otherwise = self.expression()
        return lambda env: then(env) if condition(env) != 0 else otherwise(env)

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            token = self.peek()
            if token is None or token[0] != "op" or token[1] not in _LEVELS[level]:
                return left
            self.at += 1
            right = self.binary(level + 1)
            left = _apply(_BINARY[token[1]], left, right)

    def unary(self) -> Node:
        if self.take("-"):
            operand = self.power()
            return lambda env: -operand(env)
        if self.take("+"):
            return self.power()
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        if not self.take("^"):
            return base
        exponent = self.unary()
        return _apply(_pow, base, exponent)

    def primary(self) -> Node:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of expression")
        self.at += 1
        kind, text = token
        if kind == "number":
            value = float(text)
            return lambda env: value
        if kind == "name":
            return self.name(text)
        if text == "(":
            inner = self.expression()
            self.expect(")")
            return inner
        raise self.error(f'unexpected "{text}"')

    def name(self, name: str) -> Node:
        if self.take("("):
            return self.call(name)
        if name in self.names:
            self.used.add(name)
            return lambda env: env[name]
        if name in CONSTANTS:
            value = CONSTANTS[name]
            return lambda env: value
        raise self.error(f'unknown name "{name}"')

    def call(self, name: str) -> Node:
        if name not in FUNCTIONS:
            raise self.error(f'unknown function "{name}"')
        function, arity = FUNCTIONS[name]
        args: List[Node] = []
        if not self.take(")"):
            args.append(self.expression())
            while self.take(","):
                args.append(self.expression())
            self.expect(")")
        if (arity < 0 and not args) or (arity >= 0 and len(args) != arity):
            raise self.error(f'wrong number of arguments to "{name}"')
        return lambda env: float(function(*(arg(env) for arg in args)))


def _apply(operator: Callable[[float, float], float], left: Node, right: Node) -> Node:
    return lambda env: operator(left(env), right(env))


__all__ = ["CONSTANTS", "Expr", "FUNCTIONS", "compile_expr"]
