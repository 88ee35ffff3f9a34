"""Mistakes in a parameter space that irace runs with without a word, found before racing.

:func:`check_space` returns warnings (racer prints each once, naming the file and line, and
goes on) and raises :class:`~racer.tuning.parameters.ParameterFileError` for a space nothing can
be sampled from:

* ``digits`` outside irace's range 1..15 is an error, as in irace (``digits = 0`` would round
  every real parameter to an integer; a double carries no more than 15);
* two parameters with the same switch that can be active together (the target-runner would
  get the switch twice);
* a condition or forbidden rule that compares a parameter with a value outside its domain
  (``mode == "c"`` when mode is one of a, b): a typo, as a rule;
* a condition that can never hold (its parameter is never active);
* a forbidden rule that can never hold (it forbids nothing): a warning; one that always holds,
  or rules that together hold for every configuration: an error (everything is forbidden).

"Never" and "always" are decided on every combination of the values that matter: the whole
domain of a categorical or ordinal parameter, NA when the parameter can be inactive, and for a
numeric parameter its bounds, each constant of the expression that falls inside them (rounded
to ``digits`` for a real, as sampled values are), its neighbours one step away (1 for an
integer, 10^-digits for a real) and a point between each two of these. For expressions that
compare parameters with constants -- irace's conditions and forbidden rules are such -- this
is exact; arithmetic between two parameters is judged on the same points. Spaces whose
combinations exceed :data:`MAX_COMBINATIONS` are not judged.

>>> from racer.tuning.parameters import ParameterSpace, Parameter, ForbiddenRule
>>> from racer.tuning import rexpr
>>> def rule(text):
...     return ForbiddenRule(text, rexpr.parse(text), "forbidden.txt", 1)
>>> space = ParameterSpace([Parameter("mode", "--mode ", "c", ("a", "b"), line=1),
...                         Parameter("x", "--x ", "r", (0.0, 1.0), line=2)],
...                        [rule('mode == "c" & x > 0.5')], source="parameters.txt")
>>> for w in check_space(space):
...     print(w)
forbidden.txt:1: the forbidden rule `mode == "c" & x > 0.5` can never hold, so it forbids nothing: mode is compared with "c", which is not one of its values (a, b)
>>> space.forbidden = [rule("x >= 0")]
>>> check_space(space)
Traceback (most recent call last):
racer.tuning.parameters.ParameterFileError: forbidden.txt:1: the forbidden rule `x >= 0` holds for every configuration (x is in [0, 1]), so every configuration is forbidden
"""

from __future__ import annotations

import math
from typing import Any

from racer.tuning import rexpr
from racer.tuning.parameters import Parameter, ParameterFileError, ParameterSpace, format_value

__all__ = ["check_space", "MAX_COMBINATIONS", "MAX_DIGITS"]

MAX_COMBINATIONS = 20_000
MAX_DIGITS = 15


class _TooMany(Exception):
    pass


def check_space(space: ParameterSpace) -> list[str]:
    """Warnings about ``space`` (file:line first); ParameterFileError if ``digits`` is outside
    1..15 or every configuration is forbidden. See the module docstring."""
    if not isinstance(space, ParameterSpace):
        raise TypeError(f"`space` must be a ParameterSpace; got {space!r}")
    warnings: list[str] = []
    warnings.extend(_digits(space))
    warnings.extend(_repeated_switches(space))
    warnings.extend(_conditions(space))
    warnings.extend(_forbidden(space))
    return warnings


# ---------------------------------------------------------------------------- digits

def _digits(space: ParameterSpace) -> list[str]:
    path, line = space.digits_origin or (space.source, None)
    if space.digits < 1:
        raise ParameterFileError(
            path, line, f"digits = {space.digits} is outside irace's range 1..15 (irace refuses it "
            "too): it would round every real parameter to an integer (declare integer parameters "
            "with type i instead)")
    if space.digits > MAX_DIGITS:
        raise ParameterFileError(
            path, line, f"digits = {space.digits} is outside irace's range 1..15 (irace refuses it "
            "too): a real number carries about 15 significant digits; use digits = 15")
    return []


# ---------------------------------------------------------------------------- the points to try

def _constants(tree) -> list[float]:
    """The numbers an expression compares with: every subexpression without names, folded."""
    if not rexpr.names(tree):
        try:
            value = rexpr.evaluate(tree, {})
        except (ValueError, TypeError):
            return []
        return [float(v) for v in (value if isinstance(value, tuple) else (value,))
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    return [c for child in rexpr.children(tree) for c in _constants(child)]


def _points(p: Parameter, constants: list[float], digits: int) -> list:
    """The values of ``p`` to try (see the module docstring)."""
    if p.type in ("c", "o"):
        return list(p.domain)
    lo, hi = p.domain
    if p.type == "i":
        found = {lo, hi}
        for c in constants:
            found.update(v for v in (math.floor(c) - 1, math.floor(c), math.ceil(c), math.ceil(c) + 1)
                         if lo <= v <= hi)
        ordered = sorted(found)
        mids = {(a + b) // 2 for a, b in zip(ordered, ordered[1:]) if b - a > 1}
        return sorted(found | mids)
    step = 10.0 ** -digits
    found = {float(lo), float(hi)}
    for c in constants:
        found.update(v for v in (round(c - step, digits), round(c, digits), round(c + step, digits))
                     if lo <= v <= hi)
    ordered = sorted(found)
    mids = {m for a, b in zip(ordered, ordered[1:]) if a < (m := round((a + b) / 2, digits)) < b}
    return sorted(found | mids)


def _combinations(space: ParameterSpace, trees: list):
    """Every combination (a dict) of the points of the parameters ``trees`` read, with the
    parameters their conditions read; an inactive parameter is None. Raises _TooMany beyond
    MAX_COMBINATIONS."""
    wanted: set[str] = set()
    stack = [n for tree in trees for n in rexpr.names(tree)]
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(space.by_name[name].depends_on)
    order = [p for p in space.params if p.name in wanted]
    constants = [c for tree in trees for c in _constants(tree)]
    points = {p.name: _points(p, constants, space.digits) for p in order}
    count = 0

    def walk(i: int, values: dict):
        nonlocal count
        if i == len(order):
            count += 1
            if count > MAX_COMBINATIONS:
                raise _TooMany
            yield values
            return
        p = order[i]
        if not space.is_active(p, values):
            values[p.name] = None
            yield from walk(i + 1, values)
            return
        for v in points[p.name]:
            values[p.name] = v
            yield from walk(i + 1, values)
        values[p.name] = None

    return walk(0, {})


def _outcomes(space: ParameterSpace, trees: list, judge) -> tuple[bool, bool] | None:
    """``(held for some, held for all)`` of ``judge(values)`` over the combinations, or None
    when there are too many to judge."""
    some, every = False, True
    try:
        for values in _combinations(space, trees):
            if judge(values):
                some = True
            else:
                every = False
            if some and not every:
                break
    except _TooMany:
        return None
    return some, every


def _holds(tree, values: dict) -> bool:
    return rexpr.truthy(rexpr.evaluate(tree, values)) is True


# ---------------------------------------------------------------------------- values outside domains

def _outside(space: ParameterSpace, tree) -> list[str]:
    """``name is compared with value, which is not ...`` for each ``==``, ``!=`` or ``%in%``
    between a parameter and a constant the parameter can never take."""
    found: list[str] = []

    def check(name_side, other) -> None:
        if name_side[0] != "name" or rexpr.names(other):
            return
        p = space.by_name[name_side[1]]
        try:
            value = rexpr.evaluate(other, {})
        except (ValueError, TypeError):
            return
        for v in value if isinstance(value, tuple) else (value,):
            problem = _not_in_domain(p, v, space.digits)
            if problem and problem not in found:
                found.append(problem)

    for node in rexpr.nodes(tree):
        if node[0] == "bin" and node[1] in ("==", "!=", "%in%"):
            check(node[2], node[3])
            if node[1] != "%in%":  # `"a" == mode` too; `"a" %in% mode` is no domain test
                check(node[3], node[2])
    return found


def _not_in_domain(p: Parameter, v: Any, digits: int) -> str | None:
    if v is None or isinstance(v, bool):
        return None
    shown = f'"{v}"' if isinstance(v, str) else format_value(v)
    if p.type in ("c", "o"):
        if any(rexpr.evaluate(("bin", "==", ("lit", d), ("lit", v)), {}) is True for d in p.domain):
            return None
        return f"{p.name} is compared with {shown}, which is not one of its values ({', '.join(p.domain)})"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return f"{p.name} (a number) is compared with {shown}"
    lo, hi = p.domain
    if not lo <= x <= hi:
        return f"{p.name} is compared with {shown}, outside its range [{format_value(lo)}, {format_value(hi)}]"
    if p.type == "i" and not x.is_integer():
        return f"{p.name} is compared with {shown}, but it takes integer values"
    if p.type == "r" and round(x, digits) != x:
        return f"{p.name} is compared with {shown}, but its values have {digits} decimals (digits)"
    return None


def _ranges(space: ParameterSpace, tree) -> str:
    """`` (x is in [0, 1]; mode is one of a, b)``: the domains an always/never verdict rests on."""
    parts = []
    for name in rexpr.names(tree):
        p = space.by_name[name]
        if p.type in ("c", "o"):
            part = f"{name} is one of {', '.join(p.domain)}"
        else:
            part = f"{name} is in [{format_value(p.domain[0])}, {format_value(p.domain[1])}]"
        # A conditional parameter is NA elsewhere, and NA never satisfies a comparison.
        parts.append(part + (f", when {p.condition_text}" if p.condition is not None else ""))
    return f" ({'; '.join(parts)})" if parts else ""


# ---------------------------------------------------------------------------- the checks

def _repeated_switches(space: ParameterSpace) -> list[str]:
    out = []
    seen: dict[str, list[Parameter]] = {}
    for p in space.declared:
        switch = p.switch.strip()
        if not switch:  # positional values: irace's empty switch, legitimately shared
            continue
        for q in seen.get(switch, []):
            trees = [t.condition for t in (p, q) if t.condition is not None]
            both = _outcomes(space, trees, lambda v, p=p, q=q: space.is_active(p, v) and space.is_active(q, v))
            if both is not None and not both[0]:
                continue  # never active together (e.g. one switch for two algorithms' options)
            where = f"{space.source}:{p.line}" if p.line is not None else space.source
            out.append(f"{where}: parameters {q.name} (line {q.line}) and {p.name} "
                       f"have the same switch {p.switch!r}: when both are active the target-runner "
                       "gets it twice (give each parameter its own switch)")
        seen.setdefault(switch, []).append(p)
    return out


def _conditions(space: ParameterSpace) -> list[str]:
    out = []
    for p in space.declared:  # file order, as the messages' lines
        if p.condition is None:
            continue
        where = f"{space.source}:{p.line}" if p.line is not None else space.source
        outside = _outside(space, p.condition)
        result = _evaluated(space, [p.condition], lambda v, t=p.condition: _holds(t, v),
                            space.source, p.line, f"the condition of {p.name}")
        detail = f": {'; '.join(outside)}" if outside else _ranges(space, p.condition)
        if result is not None and not result[0]:
            out.append(f"{where}: {p.name} can never be active: its condition `{p.condition_text}` "
                       f"never holds{detail}")
        elif outside:
            out.append(f"{where}: the condition of {p.name} (`{p.condition_text}`){detail}")
    return out


def _forbidden(space: ParameterSpace) -> list[str]:
    out = []
    for rule in space.forbidden:
        text, tree = rule
        where = getattr(rule, "where", space.source)
        path, line = getattr(rule, "path", None) or space.source, getattr(rule, "line", None)
        outside = _outside(space, tree)
        result = _evaluated(space, [tree], lambda v, t=tree: _holds(t, v), path, line,
                            f"the forbidden rule `{text}`")
        if result is not None and result[1]:
            raise ParameterFileError(path, line, f"the forbidden rule `{text}` holds for every "
                                     f"configuration{_ranges(space, tree)}, so every configuration "
                                     "is forbidden")
        detail = f": {'; '.join(outside)}" if outside else _ranges(space, tree)
        if result is not None and not result[0]:
            out.append(f"{where}: the forbidden rule `{text}` can never hold, so it forbids "
                       f"nothing{detail}")
        elif outside:
            out.append(f"{where}: the forbidden rule `{text}`{detail}")
    if len(space.forbidden) > 1:
        trees = [tree for _text, tree in space.forbidden]
        result = _outcomes(space, trees, space.is_forbidden)
        if result is not None and result[1]:
            first = space.forbidden[0]
            raise ParameterFileError(
                getattr(first, "path", None) or space.source, None,
                "the forbidden rules together hold for every configuration, so every "
                "configuration is forbidden: "
                + "; ".join(f"`{text}` ({getattr(r, 'where', '?')})" for r in space.forbidden
                            for text in [r[0]]))
    return out


def _evaluated(space, trees, judge, path, line, what: str):
    """_outcomes, with an expression R would refuse (``abs(x, y)``) reported at its line."""
    try:
        return _outcomes(space, trees, judge)
    except (ValueError, TypeError) as exc:
        raise ParameterFileError(path, line, f"{what} cannot be evaluated: {exc}") from None
