"""A user's parameter space, translated once into racer's own: irace's parameter space.

:func:`parameter_space` takes what Python users of algorithm configuration already write --
an irace parameters file or its text, a dict of Optuna distributions, a
``ConfigSpace.ConfigurationSpace`` (the space of SMAC3, DEHB, auto-sklearn) -- and gives the
:class:`~racer.tuning.parameters.ParameterSpace` that irace's sampler (:mod:`racer.tuning.sampler`)
and the iterated tuner work on. Conditions and forbidden clauses become irace's R expressions
(:mod:`racer.tuning.rexpr`). What irace's sampler cannot draw as the user's space says (a normal
or beta prior, weighted categories, a stepped grid too fine to list, a value that R's
comparisons would confuse with another) is a ``ValueError`` naming the parameter, the
construct and what to write instead: a distribution is never changed silently.

The way back: ``space.native(values)`` writes a configuration as the user's space does (a
dict of the active parameters, or a ``ConfigSpace.Configuration``), and ``space.default`` is
the user's default configuration (ConfigSpace declares one), ready to be raced first.

>>> space = parameter_space('''
... algo  "--algo "  c      (sa, hc)
... temp  "--t0="    r,log  (0.01, 100) | algo == "sa"
... ''')
>>> [(p.name, p.type, p.log) for p in space.params]
[('algo', 'c', False), ('temp', 'r', True)]
>>> space.native({"algo": "hc", "temp": None})
{'algo': 'hc'}
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import os
import re
from collections.abc import Mapping
from typing import Any

from racer.tuning import rexpr
from racer.tuning.checks import MAX_DIGITS
from racer.tuning.parameters import (
    ForbiddenRule,
    Parameter,
    ParameterSpace,
    read_forbidden,
    read_forbidden_lines,
    read_parameters,
)

__all__ = ["parameter_space", "MAX_GRID"]

# A stepped Optuna distribution becomes an ordinal parameter listing its values (irace has no
# stepped numbers); past this many values the list is refused rather than built.
MAX_GRID = 10_000

# irace's default decimals for real parameters; the automatic choice never goes below it.
_IRACE_DIGITS = 4


def parameter_space(space: Any, *, forbidden: str | os.PathLike | None = None,
                    digits: int | None = None) -> ParameterSpace:
    """racer's parameter space for ``space``, translated once.

    ``space`` is one of:

    * a :class:`~racer.tuning.parameters.ParameterSpace`: returned as is, or a copy with the
      ``forbidden`` rules added (``digits`` must be None: they are its own);
    * irace's parameters: an ``os.PathLike`` (``pathlib.Path``), or a ``str`` without a
      newline that names an existing file, is the path of a parameters file; any other
      ``str`` is their text;
    * a dict of Optuna distributions (``FloatDistribution``, ``IntDistribution``,
      ``CategoricalDistribution``), name -> distribution;
    * a ``ConfigSpace.ConfigurationSpace`` (ConfigSpace 1.x), with its conditions, forbidden
      clauses and default configuration (``.default`` of the result).

    ``forbidden``: more forbidden rules, irace's R expressions over the parameter names, one a
    line; text or a path, told apart as for ``space``. ``digits``: the decimals real
    parameters are rounded to (irace's ``digits``). None: for irace's parameters, the file's
    ``[global] digits`` or irace's 4; for Optuna and ConfigSpace, 4, or more where a real
    parameter needs them to keep a step of at most 1/1000 of its linear range or of its log
    range's lower bound (``(1e-5, 1e-1)`` on a log scale: 8). An explicit ``digits`` that
    leaves such a parameter fewer than 10 values is refused.

    The table of what maps to what, and what is refused, is in docs/spaces.md.

    >>> space = parameter_space(__import__("pathlib").Path("no-such-file.txt"))
    Traceback (most recent call last):
    racer.tuning.parameters.ParameterFileError: no-such-file.txt: file not found
    """
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, numbers.Integral)
                               or not 1 <= digits <= MAX_DIGITS):
        raise ValueError(f"`digits` must be an integer in irace's range 1..{MAX_DIGITS}, or None; "
                         f"got {digits!r}")
    if forbidden is not None and not isinstance(forbidden, (str, os.PathLike)):
        raise TypeError(f"`forbidden` must be irace's forbidden rules as text (str) or a path; "
                        f"got {type(forbidden).__name__}")
    if isinstance(space, ParameterSpace):
        if digits is not None:
            raise ValueError("`digits` applies to a space being translated; a ParameterSpace "
                             "has its own")
        if forbidden is None:
            return space
        # More rules go on a copy: the caller's space is never changed.
        result = copy.copy(space)
        result.forbidden = list(space.forbidden)
    elif isinstance(space, (str, os.PathLike)):
        result = _from_irace(space, digits)
    elif _is_configspace(space):  # before Mapping: a ConfigurationSpace is one
        result = _from_configspace(space, digits)
    elif isinstance(space, Mapping):
        result = _from_optuna(space, digits)
    else:
        raise TypeError(
            "`space` must be irace's parameters (text or a path), a dict of Optuna "
            "distributions, a ConfigSpace.ConfigurationSpace or a ParameterSpace; got "
            f"{type(space).__name__}")
    if forbidden is not None:
        _read_text_or_path(forbidden, "forbidden", lambda text, source: result.add_forbidden(
            read_forbidden(source) if text is None
            else read_forbidden_lines(list(enumerate(text.splitlines(), 1)), source)))
    return result


# ------------------------------------------------------------------------------- irace's own

def _text_or_path(value: str | os.PathLike, argument: str) -> tuple[str | None, str]:
    """(text, name for messages) for text, (None, path) for a path: an ``os.PathLike``, or a
    ``str`` without a newline that names an existing file, is a path; any other ``str`` is
    text (a one-line forbidden rule such as ``"a > 1"`` included)."""
    if isinstance(value, os.PathLike) or ("\n" not in value and os.path.isfile(value)):
        return None, os.fspath(value)
    return value, f"`{argument}`"


def _read_text_or_path(value: str | os.PathLike, argument: str, read):
    """``read(text, source)``; a one-line ``str`` that does not read is said to name no file
    either (it may be a mistyped path)."""
    text, source = _text_or_path(value, argument)
    try:
        return read(text, source)
    except ValueError as exc:
        if text is None or "\n" in text:
            raise
        raise ValueError(f"{exc} ({text!r} names no file, so it was read as irace's "
                         "text)") from exc


def _from_irace(space: str | os.PathLike, digits: int | None) -> ParameterSpace:
    result = _read_text_or_path(space, "space", lambda text, source: read_parameters(
        source, digits, text=text))
    if digits is not None and result.digits_origin is not None and result.digits != digits:
        raise ValueError(f"`digits={digits}` contradicts `digits = {result.digits}` of the "
                         f"[global] section of {result.source}; give one of them")
    return result


# ---------------------------------------------------------------------------------- Optuna

def _from_optuna(space: Mapping, digits: int | None) -> ParameterSpace:
    kinds = "FloatDistribution, IntDistribution or CategoricalDistribution"
    try:
        from optuna import distributions as od
    except ImportError:  # the values cannot be Optuna distributions then
        od = None
    if not space:
        raise ValueError("`space` is an empty dict: name at least one parameter")
    params = []
    for name, dist in space.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"`space` maps parameter names (non-empty str) to distributions; "
                            f"got the key {name!r}")
        where = f"parameter {name!r} ({dist!r})"
        if od is not None and isinstance(dist, od.FloatDistribution):
            params.append(_number(name, "r", dist.low, dist.high, dist.log, dist.step, where))
        elif od is not None and isinstance(dist, od.IntDistribution):
            params.append(_number(name, "i", dist.low, dist.high, dist.log,
                                  None if dist.step == 1 else dist.step, where))
        elif od is not None and isinstance(dist, od.CategoricalDistribution):
            params.append(_choices(name, "c", dist.choices, where))
        else:
            raise TypeError(f"`space[{name!r}]` is a {type(dist).__name__}; a dict space maps "
                            f"each name to an Optuna {kinds}")
    return ParameterSpace(params, digits=_digits(params, digits), source="<Optuna distributions>")


def _number(name: str, ptype: str, low, high, log: bool, step, where: str) -> Parameter:
    """A real or integer parameter; with a step, the ordinal of its values."""
    if step is None:
        domain = (float(low), float(high)) if ptype == "r" else (int(low), int(high))
        return Parameter(name, _switch(name), ptype, domain, bool(log))
    # irace's numbers have no step: the values are listed as an ordinal, which irace's
    # sampler draws uniformly at first and then from a normal over their order, as it does
    # an integer. Optuna's values are low + k * step (its high is cut to the last one).
    n = int(math.floor((high - low) / step + 1e-9))
    if n + 1 > MAX_GRID:
        raise ValueError(
            f"{where}: step={step} gives {n + 1} values; irace's space holds a stepped number "
            f"as the list of its values, at most {MAX_GRID}: use a larger step, or no step "
            "(a real is rounded to `digits` decimals, an integer has step 1)")
    if ptype == "i":
        values = tuple(int(low) + k * int(step) for k in range(n + 1))
    else:
        values = tuple(min(float(low) + k * float(step), float(high)) for k in range(n + 1))
    return Parameter(name, _switch(name), "o", values)


def _choices(name: str, ptype: str, values, where: str) -> Parameter:
    """A categorical or ordinal parameter, after checking that R's comparisons of its values
    (conditions, forbidden rules) mean what Python's do."""
    values = tuple(_plain(v) for v in values)
    for v in values:
        if v is None:
            raise ValueError(
                f"{where}: the choice None cannot be held: None marks an inactive parameter in "
                "racer's configurations; name the choice with a string (e.g. 'none') and map "
                "it back in your code")
        if not isinstance(v, (str, bool, numbers.Real)) or (
                isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(
                f"{where}: the choice {v!r} is not a str, int, finite float or bool, the "
                "values irace's conditions and forbidden rules compare; name it with a string "
                "and map it back in your code")
    # Two values R's `==` finds equal (racer.tuning.rexpr._compare: numbers, and strings that
    # read as numbers, compare as numbers; anything else as its text) would be one value for
    # conditions and forbidden rules: each value is filed under every key it compares by.
    seen: dict = {}
    for v in values:
        number = rexpr._num(v)
        keys = [("number", number) if number is not None else ("text", str(v))]
        if isinstance(v, bool):
            keys.append(("text", str(v)))
        for key in keys:
            if key in seen:
                raise ValueError(
                    f"{where}: the choices {seen[key]!r} and {v!r} are equal for R's "
                    "comparisons (a string and a number, or two spellings of one number); "
                    "give them distinct names")
        seen.update(dict.fromkeys(keys, v))
    return Parameter(name, _switch(name), ptype, values)


def _plain(value):
    """A NumPy scalar as the Python value it holds (ConfigSpace hands out np.str_ and such)."""
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item):
        return item()
    return value


def _switch(name: str) -> str:
    # Only a command line would show it (a Python space reaches no target-runner).
    return f"--{name}="


def _r_compare(op: str, a, b):
    """What ``a op b`` is for racer's R evaluator (None: NA)."""
    return rexpr.truthy(rexpr.evaluate(("bin", op, ("lit", a), ("lit", b)), {}))


def _digits(params: list[Parameter], digits: int | None) -> int:
    """Automatic ``digits``, or the check of an explicit one (see parameter_space)."""
    chosen = _IRACE_DIGITS if digits is None else int(digits)
    for p in params:
        if p.type != "r" or p.is_fixed:
            continue
        scale = p.domain[0] if p.log else p.domain[1] - p.domain[0]
        # 10^-d <= scale / 10^k  <=>  d >= k - log10(scale); the 1e-9 absorbs log10's error.
        needed = max(0, math.ceil(3 - math.log10(scale) - 1e-9))
        if digits is None and needed > MAX_DIGITS:
            what = "the lower bound of its log range" if p.log else "its range"
            raise ValueError(
                f"parameter {p.name!r}: {what} ({scale!r}) needs {needed} decimals, more than "
                f"the {MAX_DIGITS} a double carries (irace's limit); rescale it (tune its "
                "logarithm, or the value in other units) and convert in your code")
        if digits is None:
            chosen = max(chosen, needed)
        elif 10.0 ** -digits > scale / 10:
            what = "the lower bound of its log range" if p.log else "its range"
            raise ValueError(
                f"`digits={digits}` rounds parameter {p.name!r} to steps of 10^-{digits}, "
                f"more than a tenth of {what} ({scale!r}): its distribution would collapse "
                f"onto a few values; use digits={needed} or more, or digits=None")
    return chosen


# ------------------------------------------------------------------------------ ConfigSpace

def _is_configspace(space: Any) -> bool:
    # Without importing ConfigSpace for the other kinds of space (it may not be installed).
    if not any(c.__module__.split(".")[0] == "ConfigSpace" for c in type(space).__mro__):
        return False
    from ConfigSpace import ConfigurationSpace

    return isinstance(space, ConfigurationSpace)


class ConfigSpaceParameters(ParameterSpace):
    """A space translated from a ``ConfigSpace.ConfigurationSpace``: ``configspace`` is that
    space, ``native`` gives ``ConfigSpace.Configuration`` objects, ``default`` is its
    default configuration."""

    def __init__(self, params, forbidden, digits: int, configspace: Any) -> None:
        super().__init__(params, forbidden, digits=digits, source="<ConfigurationSpace>")
        self.configspace = configspace

    def native(self, values: dict) -> Any:
        """``values`` as a ``ConfigSpace.Configuration`` of :attr:`configspace` (which checks
        it)."""
        from ConfigSpace import Configuration

        return Configuration(self.configspace, values=super().native(values))


def _from_configspace(cs: Any, digits: int | None) -> ParameterSpace:
    import ConfigSpace as CS

    if len(cs) == 0:
        raise ValueError("`space` is an empty ConfigurationSpace: add at least one hyperparameter")
    conditions = {}
    for cond in cs.conditions:
        conditions[cond.child.name] = _condition(cond, cs, CS)
    params = []
    for name, hp in cs.items():
        text = conditions.get(name)
        params.append(dataclasses.replace(
            _configspace_kind(hp, CS), condition=None if text is None else rexpr.parse(text),
            condition_text=text or ""))
    rules = [_forbidden_rule(f, CS) for f in cs.forbidden_clauses]
    result = ConfigSpaceParameters(params, rules, _digits(params, digits), cs)
    default = dict.fromkeys(result.names)
    for name, value in cs.get_default_configuration().items():
        p = result.by_name[name]
        value = _plain(value)
        default[name] = (p.domain[p.domain.index(value)] if p.type in ("c", "o")
                         else int(value) if p.type == "i" else float(value))
    reason = result.check(default)
    if reason is not None:
        raise ValueError(f"the default configuration of the ConfigurationSpace is not valid "
                         f"in its translation: {reason}")
    result.default = default
    return result


def _configspace_kind(hp: Any, CS: Any) -> Parameter:
    H = CS.hyperparameters
    where = f"hyperparameter {hp.name!r} ({type(hp).__name__})"
    if isinstance(hp, H.UniformFloatHyperparameter):
        return _number(hp.name, "r", hp.lower, hp.upper, hp.log, None, where)
    if isinstance(hp, H.UniformIntegerHyperparameter):
        return _number(hp.name, "i", hp.lower, hp.upper, hp.log, None, where)
    if isinstance(hp, H.CategoricalHyperparameter):
        weights = hp.weights
        if weights is not None and len(set(weights)) > 1:
            raise ValueError(
                f"{where}: weights {tuple(weights)}: irace's sampler draws categories "
                "uniformly at first (then learns their probabilities from the elites); "
                "drop the weights, or list a favoured value as the default configuration")
        return _choices(hp.name, "c", hp.choices, where)
    if isinstance(hp, H.OrdinalHyperparameter):
        return _choices(hp.name, "o", hp.sequence, where)
    if isinstance(hp, H.Constant):
        return _choices(hp.name, "c", (hp.value,), where)
    if isinstance(hp, (H.NormalFloatHyperparameter, H.NormalIntegerHyperparameter)):
        instead = "a uniform range (Float/Integer with bounds) and, for its mean, the default"
    elif isinstance(hp, (H.BetaFloatHyperparameter, H.BetaIntegerHyperparameter)):
        instead = "a uniform range (Float/Integer with bounds)"
    else:
        instead = "a uniform Float or Integer, a Categorical, an Ordinal or a Constant"
    raise ValueError(f"{where}: irace's sampler draws numbers uniformly (on a linear or log "
                     f"scale), with no prior; use {instead}")


def _r_name(name: str) -> str:
    """A parameter's name as an R expression reads it (backquoted unless a plain name)."""
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9._]*", name) and name not in rexpr._CONSTANTS:
        return name
    if "`" in name:
        raise ValueError(f"parameter {name!r}: a name holding a backquote cannot appear in "
                         "irace's conditions and forbidden rules; rename it")
    return f"`{name}`"


def _r_value(value) -> str:
    """A Python value as the R literal racer's evaluator reads back as that value."""
    value = _plain(value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, numbers.Integral):
        return str(int(value))  # "-3" reads as a negation: the same number
    if isinstance(value, numbers.Real):
        return repr(float(value))  # the shortest text that reads back as this float
    # unicode_escape: a backslash, a newline or a non-ASCII letter, all escaped, are read back
    # by the evaluator's decoding; the quote is escaped apart.
    return '"' + str(value).encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _r_vector(values) -> str:
    return "c(" + ", ".join(_r_value(v) for v in values) + ")"


def _condition(cond: Any, cs: Any, CS: Any) -> str:
    """A ConfigSpace condition as irace's condition: the same configurations active."""
    if isinstance(cond, (CS.AndConjunction, CS.OrConjunction)):
        joint = " & " if isinstance(cond, CS.AndConjunction) else " | "
        return joint.join(f"({_condition(c, cs, CS)})" for c in cond.components)
    parent = cond.parent
    name = _r_name(parent.name)
    if isinstance(cond, CS.InCondition):
        return f"{name} %in% {_r_vector(cond.values)}"
    if isinstance(cond, CS.EqualsCondition):
        return f"{name} == {_r_value(cond.value)}"
    if isinstance(cond, CS.NotEqualsCondition):
        # ConfigSpace 1.x activates the child of `parent != v` when the parent is inactive
        # (NaN != v); R's NA != v is NA, not satisfied: is.na says it (tests cross-check).
        return f"is.na({name}) | {name} != {_r_value(cond.value)}"
    if isinstance(cond, (CS.LessThanCondition, CS.GreaterThanCondition)):
        op = "<" if isinstance(cond, CS.LessThanCondition) else ">"
        return _ordered(name, op, parent, cond.value, CS)
    raise ValueError(f"the condition {cond!r} of {cond.child.name!r} ({type(cond).__name__}) "
                     "has no irace equivalent; use Equals, NotEquals, In, LessThan, "
                     "GreaterThan conditions and And/Or conjunctions of them")


def _ordered(name: str, op: str, hp: Any, value, CS: Any) -> str:
    """``hp op value``: an ordinal compares by its order (ConfigSpace's meaning), so the
    values on the right side of ``value`` are listed; a number compares as a number."""
    if isinstance(hp, CS.OrdinalHyperparameter):
        seq = [_plain(v) for v in hp.sequence]
        at = seq.index(_plain(value))
        keep = {"<": seq[:at], "<=": seq[:at + 1], ">": seq[at + 1:], ">=": seq[at:]}[op]
        return f"{name} %in% {_r_vector(keep)}"
    if isinstance(hp, (CS.UniformFloatHyperparameter, CS.UniformIntegerHyperparameter)):
        return f"{name} {op} {_r_value(value)}"
    raise ValueError(f"`{hp.name} {op} {value!r}`: {type(hp).__name__} {hp.name!r} has no order "
                     "that irace's conditions and forbidden rules share; use Equals/In")


_RELATIONS = (("ForbiddenLessThanEqualsRelation", "<="), ("ForbiddenGreaterThanEqualsRelation", ">="),
              ("ForbiddenLessThanRelation", "<"), ("ForbiddenGreaterThanRelation", ">"),
              ("ForbiddenEqualsRelation", "=="))
_CLAUSES = (("ForbiddenLessThanEqualsClause", "<="), ("ForbiddenGreaterThanEqualsClause", ">="),
            ("ForbiddenLessThanClause", "<"), ("ForbiddenGreaterThanClause", ">"))


def _forbidden_rule(clause: Any, CS: Any) -> ForbiddenRule:
    text = _forbidden(clause, CS)
    return ForbiddenRule(text, rexpr.parse(text), "<ConfigurationSpace>")


def _forbidden(clause: Any, CS: Any) -> str:
    """A ConfigSpace forbidden clause as irace's forbidden expression; an inactive parameter
    (NA) never forbids, in either."""
    if isinstance(clause, (CS.ForbiddenAndConjunction, CS.ForbiddenOrConjunction)):
        joint = " & " if isinstance(clause, CS.ForbiddenAndConjunction) else " | "
        return joint.join(f"({_forbidden(c, CS)})" for c in clause.components)
    if isinstance(clause, CS.ForbiddenEqualsClause):
        return f"{_r_name(clause.hyperparameter.name)} == {_r_value(clause.value)}"
    if isinstance(clause, CS.ForbiddenInClause):
        return f"{_r_name(clause.hyperparameter.name)} %in% {_r_vector(clause.values)}"
    for cls_name, op in _CLAUSES:
        cls = getattr(CS, cls_name, None)
        if cls is not None and isinstance(clause, cls):
            hp = clause.hyperparameter
            return _ordered(_r_name(hp.name), op, hp, clause.value, CS)
    for cls_name, op in _RELATIONS:
        cls = getattr(CS, cls_name, None)
        if cls is not None and isinstance(clause, cls):
            _check_relation(clause.left, clause.right, op, CS)
            return f"{_r_name(clause.left.name)} {op} {_r_name(clause.right.name)}"
    raise ValueError(f"the forbidden clause {clause!r} ({type(clause).__name__}) has no irace "
                     "equivalent; use Equals/In/LessThan/GreaterThan clauses, relations, and "
                     "And/Or conjunctions of them")


_PY_OPS = {"==": lambda a, b: a == b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
           "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}


def _check_relation(left: Any, right: Any, op: str, CS: Any) -> None:
    """ConfigSpace compares the two values in Python; R's comparison agrees on numbers but
    may not on strings (R compares numeric-looking strings as numbers): every pair of values
    of two finite parameters is checked, and a number is compared with numbers only."""
    numeric = (CS.UniformFloatHyperparameter, CS.UniformIntegerHyperparameter)

    def values(hp):
        if isinstance(hp, numeric):
            return None
        seq = (hp.choices if isinstance(hp, CS.CategoricalHyperparameter) else
               hp.sequence if isinstance(hp, CS.OrdinalHyperparameter) else (hp.value,))
        return [_plain(v) for v in seq]

    lv, rv = values(left), values(right)
    problem = None
    if lv is None or rv is None:
        finite = lv if lv is not None else rv
        if finite is not None and not all(isinstance(v, numbers.Real) for v in finite):
            problem = "a number compared with non-numbers"
    else:
        for a in lv:
            for b in rv:
                try:
                    same = _PY_OPS[op](a, b) == (_r_compare(op, a, b) is True)
                except TypeError:
                    same = False
                if not same:
                    problem = f"{a!r} {op} {b!r} differs between Python and R"
                    break
            if problem:
                break
    if problem:
        raise ValueError(f"the forbidden relation `{left.name} {op} {right.name}`: {problem}; "
                         "compare numbers, or list the forbidden pairs with "
                         "ForbiddenAndConjunction of ForbiddenEqualsClause")
