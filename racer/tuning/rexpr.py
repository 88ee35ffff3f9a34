"""A small, safe evaluator for the R expressions of irace's conditions and forbidden rules.

irace evaluates ``| algorithm == "acs"`` and forbidden lines such as
``(alpha == 0.0) & (beta == 0.0)`` with R's ``eval()``. Calling Python's ``eval()`` on them
would be unsafe and wrong (R's ``&``, ``%in%``, ``NA``), so they are parsed here into a tree
of tuples and evaluated over a dict of parameter values with R's three-valued logic: ``None``
stands for ``NA`` (an inactive parameter); ``NA & FALSE`` is ``FALSE``, ``NA | TRUE`` is
``TRUE``, and a comparison with ``NA`` is ``NA``. Callers decide what a final ``NA`` means
(irace: a condition that is ``NA`` is not satisfied; a forbidden rule that is ``NA`` does not
forbid).

Supported: numbers (``1``, ``2.5``, ``1e-3``, ``5L``), strings in single or double quotes,
``TRUE``/``FALSE``/``T``/``F``, ``NA``, ``Inf``, names (letters, digits, ``.`` and ``_``;
backquoted names too), ``c(...)``, ``( )``, unary ``-``/``+``/``!``, ``^``, ``* / %% %/%``,
``+ -``, comparisons, ``%in%``, ``& &&``, ``| ||``, and the functions ``is.na``, ``abs``,
``log``, ``log2``, ``log10``, ``exp``, ``sqrt``, ``floor``, ``ceiling``, ``round``, ``min``,
``max``, ``nchar``, ``as.numeric``, ``as.integer``, ``as.character``, ``isTRUE``, ``isFALSE``.
Anything else is a :class:`RSyntaxError` at parse time, naming the column.

>>> expr = parse('mode %in% c("x1", "x2") && real > 2.5')
>>> evaluate(expr, {"mode": "x1", "real": 3.0})
True
>>> evaluate(expr, {"mode": "x3", "real": None})
False
>>> names(parse("a + b > 2 | is.na(c)"))
['a', 'b', 'c']
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["RSyntaxError", "parse", "evaluate", "names", "strip_comment", "truthy"]


class RSyntaxError(ValueError):
    """An expression outside the supported subset of R; ``column`` is 1-based."""

    def __init__(self, message: str, text: str, column: int) -> None:
        super().__init__(f"{message} at column {column} of {text!r}")
        self.column = column


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?L?)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<bq>`[^`]+`)
  | (?P<name>[A-Za-z.][A-Za-z0-9._]*)
  | (?P<op>%in%|%%|%/%|&&|\|\||==|!=|<=|>=|[-+*/^<>!&|(),])
    """,
    re.VERBOSE,
)

_FUNCTIONS = {
    "is.na", "abs", "log", "log2", "log10", "exp", "sqrt", "floor", "ceiling", "round",
    "min", "max", "nchar", "as.numeric", "as.integer", "as.character", "isTRUE", "isFALSE", "c",
}
_CONSTANTS = {"TRUE": True, "T": True, "FALSE": False, "F": False, "NA": None, "Inf": math.inf,
              "NaN": math.nan, "NULL": ()}
# Binding powers (R's precedence, lowest first): | || < & && < ! < comparisons < + - <
# * / < %op% < unary minus < ^.
_BINARY = {
    "|": 1, "||": 1, "&": 2, "&&": 2,
    "==": 4, "!=": 4, "<": 4, ">": 4, "<=": 4, ">=": 4,
    "+": 5, "-": 5, "*": 6, "/": 6, "%%": 7, "%/%": 7, "%in%": 7, "^": 9,
}


def _tokenize(text: str) -> list[tuple[str, Any, int]]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise RSyntaxError(f"unexpected character {_describe_char(text[pos])}", text, pos + 1)
        kind = m.lastgroup
        value = m.group()
        if kind == "num":
            value = float(value.rstrip("L"))
        elif kind == "str":
            value = bytes(value[1:-1], "utf-8").decode("unicode_escape")
        elif kind == "bq":
            kind, value = "name", value[1:-1]
        if kind != "ws":
            out.append((kind, value, pos + 1))
        pos = m.end()
    out.append(("end", None, len(text) + 1))
    return out


def _describe_char(ch: str) -> str:
    """A character as a message shows it: invisible and non-ASCII ones by their Unicode name
    (a byte-order mark or a no-break space pasted from a web page looks like nothing).

    >>> _describe_char("$"), _describe_char("\\ufeff")
    ("'$'", "'\\\\ufeff' (a byte-order mark: save the file as UTF-8 without BOM)")
    """
    if ch == "\ufeff":
        return f"{ch!r} (a byte-order mark: save the file as UTF-8 without BOM)"
    if ch.isascii() and ch.isprintable():
        return repr(ch)
    import unicodedata

    name = unicodedata.name(ch, "U+%04X" % ord(ch))
    if "QUOTATION MARK" in name or "APOSTROPHE" in name:
        name += ": R strings take straight quotes \" or '"
    return f"{ch!r} ({name})"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self):
        return self.tokens[self.i]

    def take(self):
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, op: str) -> None:
        kind, value, col = self.take()
        if kind != "op" or value != op:
            shown = "end of expression" if kind == "end" else repr(value)
            raise RSyntaxError(f"expected {op!r}, found {shown}", self.text, col)

    def expression(self, min_bp: int = 0):
        left = self.prefix()
        while True:
            kind, value, col = self.peek()
            if kind != "op" or value not in _BINARY:
                return left
            bp = _BINARY[value]
            if bp < min_bp:
                return left
            self.take()
            # ^ is right-associative; everything else left-associative.
            right = self.expression(bp if value == "^" else bp + 1)
            left = ("bin", value, left, right)

    def prefix(self):
        kind, value, col = self.take()
        if kind == "num" or kind == "str":
            return ("lit", value)
        if kind == "name":
            if self.peek()[0] == "op" and self.peek()[1] == "(":
                if value not in _FUNCTIONS:
                    raise RSyntaxError(f"unsupported function {value}()", self.text, col)
                self.take()
                args = []
                if not (self.peek()[0] == "op" and self.peek()[1] == ")"):
                    args.append(self.expression())
                    while self.peek()[0] == "op" and self.peek()[1] == ",":
                        self.take()
                        args.append(self.expression())
                self.expect(")")
                return ("call", value, tuple(args))
            if value in _CONSTANTS:
                return ("lit", _CONSTANTS[value])
            return ("name", value)
        if kind == "op":
            if value == "(":
                inner = self.expression()
                self.expect(")")
                return inner
            if value in ("-", "+"):
                return ("neg" if value == "-" else "pos", self.expression(8))
            if value == "!":
                return ("not", self.expression(3))
        shown = "end of expression" if kind == "end" else repr(value)
        raise RSyntaxError(f"unexpected {shown}", self.text, col)


def parse(text: str):
    """Parse ``text`` (one R expression) into a tree; raise :class:`RSyntaxError` if outside
    the supported subset."""
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a str; got {text!r}")
    p = _Parser(text)
    if p.peek()[0] == "end":
        raise RSyntaxError("empty expression", text, 1)
    tree = p.expression()
    kind, value, col = p.peek()
    if kind != "end":
        raise RSyntaxError(f"unexpected {value!r} after a complete expression", text, col)
    return tree


def children(node) -> tuple:
    """The subexpressions of one node of a parsed tree (none for a name or a constant)."""
    tag = node[0]
    if tag == "bin":
        return (node[2], node[3])
    if tag in ("neg", "pos", "not"):
        return (node[1],)
    if tag == "call":
        return tuple(node[2])
    return ()


def nodes(tree):
    """Every node of a parsed tree, parents before their children, left to right."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def names(tree) -> list[str]:
    """Names the expression reads, in order of first use."""
    return list(dict.fromkeys(node[1] for node in nodes(tree) if node[0] == "name"))


def _vec(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def _num(x):
    if x is None or isinstance(x, bool):
        return None if x is None else float(x)
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _compare(op: str, a, b):
    if a is None or b is None:
        return None
    na, nb = _num(a), _num(b)
    if isinstance(a, str) or isinstance(b, str):
        # R compares a number with a string as strings; irace's categorical values are
        # strings, so `localsearch == 1` must match the value "1".
        if na is not None and nb is not None:
            a, b = na, nb
        else:
            a, b = str(a), str(b)
    else:
        a, b = na, nb
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op == "<=":
        return a <= b
    return a >= b


def _equal(a, b) -> bool:
    return _compare("==", a, b) is True


def _and(a, b):
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a, b):
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _logical(x):
    if x is None or isinstance(x, bool):
        return x
    n = _num(x)
    if n is None or math.isnan(n):
        return None
    return n != 0


def _elementwise(f, a, b):
    va, vb = _vec(a), _vec(b)
    if not va or not vb:
        return ()
    n = max(len(va), len(vb))
    out = tuple(f(va[i % len(va)], vb[i % len(vb)]) for i in range(n))
    return out[0] if n == 1 else out


def _arith(op: str, a, b):
    x, y = _num(a), _num(b)
    if x is None or y is None:
        return None
    try:
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if op == "/":
            return x / y if y != 0 else (math.nan if x == 0 else math.copysign(math.inf, x))
        if op == "^":
            return x ** y
        if op == "%%":
            return x - math.floor(x / y) * y if y != 0 else math.nan
        return float(math.floor(x / y)) if y != 0 else math.nan
    except (OverflowError, ZeroDivisionError, ValueError):
        return math.nan


def _call(name: str, args: list):
    if name == "c":
        out: list = []
        for a in args:
            out.extend(_vec(a))
        return out[0] if len(out) == 1 else tuple(out)
    if name in ("min", "max"):
        vals = [_num(v) for a in args for v in _vec(a)]
        if any(v is None for v in vals):
            return None
        return (min if name == "min" else max)(vals)
    if len(args) != 1 and not (name == "round" and len(args) == 2):
        raise ValueError(f"{name}() takes one argument; got {len(args)}")
    x = args[0]
    if name == "isTRUE":
        return x is True
    if name == "isFALSE":
        return x is False
    if name == "round":
        digits = int(_num(args[1]) or 0) if len(args) == 2 else 0
        return _elementwise(lambda v, _: None if _num(v) is None else round(_num(v), digits), x, 0)
    return _elementwise(_ELEMENTWISE[name], x, 0)


def _numeric(f):
    """R's numeric function ``f`` of one element: NA stays NA, a domain error is NaN."""
    def one(v, _):
        n = _num(v)
        if n is None:
            return None
        try:
            return float(f(n))
        except (ValueError, OverflowError):
            return math.nan

    return one


# The functions of one argument applied element by element, as ``_elementwise`` calls them.
_ELEMENTWISE = {
    "is.na": lambda v, _: v is None or (isinstance(v, float) and math.isnan(v)),
    "as.character": lambda v, _: None if v is None else _fmt(v),
    "nchar": lambda v, _: None if v is None else float(len(_fmt(v))),
    **{name: _numeric(f) for name, f in {
        "abs": abs, "log": math.log, "log2": math.log2, "log10": math.log10, "exp": math.exp,
        "sqrt": math.sqrt, "floor": math.floor, "ceiling": math.ceil,
        "as.numeric": float, "as.integer": lambda v: float(int(v)),
    }.items()},
}


def _fmt(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _eval(node, env: dict):
    tag = node[0]
    if tag == "lit":
        return node[1]
    if tag == "name":
        if node[1] not in env:
            raise KeyError(node[1])
        return env[node[1]]
    if tag == "pos":
        return _eval(node[1], env)
    if tag == "neg":
        return _elementwise(lambda v, _: None if _num(v) is None else -_num(v), _eval(node[1], env), 0)
    if tag == "not":
        return _elementwise(lambda v, _: None if _logical(v) is None else not _logical(v),
                            _eval(node[1], env), 0)
    if tag == "call":
        return _call(node[1], [_eval(a, env) for a in node[2]])
    op, left, right = node[1], node[2], node[3]
    if op in ("&&", "||"):
        return _short_circuit(op, left, right, env)
    return _binary(op, _eval(left, env), _eval(right, env))


def _short_circuit(op: str, left, right, env: dict):
    """``&&`` and ``||`` as R evaluates them: ``FALSE && x`` never evaluates x."""
    a = _logical(_first(_eval(left, env)))
    if op == "&&" and a is False:
        return False
    if op == "||" and a is True:
        return True
    b = _logical(_first(_eval(right, env)))
    return _and(a, b) if op == "&&" else _or(a, b)


def _binary(op: str, a, b):
    """``a op b`` element by element (R's recycling: ``_elementwise``)."""
    if op == "%in%":
        table = _vec(b)
        return _elementwise(lambda v, _: any(_equal(v, t) for t in table), a, 0)
    if op == "&":
        return _elementwise(lambda x, y: _and(_logical(x), _logical(y)), a, b)
    if op == "|":
        return _elementwise(lambda x, y: _or(_logical(x), _logical(y)), a, b)
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return _elementwise(lambda x, y: _compare(op, x, y), a, b)
    return _elementwise(lambda x, y: _arith(op, x, y), a, b)


def _first(x):
    v = _vec(x)
    return v[0] if v else None


def evaluate(tree, env: dict):
    """Value of a parsed expression over ``env`` (name -> value; None is NA).

    Returns a scalar (bool, float, str or None for NA) or a tuple for a vector. A name missing
    from ``env`` raises KeyError naming it.
    """
    return _eval(tree, env)


def truthy(value) -> bool | None:
    """R's logical value of a (scalar or length-1) result: True, False or None (NA)."""
    v = _vec(value)
    if len(v) != 1:
        return None if not v else _logical(v[0])
    return _logical(v[0])


def strip_comment(line: str) -> str:
    """Drop an R comment (``#`` to the end of the line) that is not inside a quoted string;
    a backslash inside a string escapes the next character, as in R."""
    quote = None
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line
