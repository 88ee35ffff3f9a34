"""irace's parameter files, forbidden files and configurations files.

A parameter line is ``name "switch" type (domain) | condition  # comment`` where ``type`` is
``c`` (categorical), ``o`` (ordinal), ``i``, ``r``, ``i,log`` or ``r,log``; the condition is an
R expression (see :mod:`racer.tuning.rexpr`). irace 4's sections are read too: ``[global]``
(``digits = 4``) and ``[forbidden]`` (one R expression a line, as in a separate
``forbiddenFile``). Every error names the file, the line and what is wrong.

>>> import os, pathlib, tempfile
>>> d = tempfile.mkdtemp()
>>> path = os.path.join(d, "parameters.txt")
>>> _ = pathlib.Path(path).write_text('''
... algo   "--algo "  c   (sa, hc)
... temp   "--t0="    r,log (0.01, 100) | algo == "sa"
... moves  "--moves " o   (few, some, many)
... [forbidden]
... algo == "hc" & moves == "few"
... ''')
>>> space = read_parameters(path)
>>> [p.name for p in space.params], space.params[1].log, space.is_forbidden(
...     {"algo": "hc", "temp": None, "moves": "few"})
(['algo', 'temp', 'moves'], True, True)
>>> space.command_line({"algo": "sa", "temp": 1.5, "moves": "many"})
['--algo', 'sa', '--t0=1.5', '--moves', 'many']
"""

from __future__ import annotations

import dataclasses
import math
import re
import shlex
from typing import Any, Callable

from racer.tuning import rexpr
from racer.tuning.instances import read_text

__all__ = ["Parameter", "ParameterSpace", "ParameterFileError", "ForbiddenRule", "read_parameters",
           "read_forbidden", "read_configurations", "format_value"]


class ParameterFileError(ValueError):
    """A malformed parameters, forbidden or configurations file; the message names the file
    and line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter: ``type`` is "c", "o", "i" or "r"; ``domain`` the tuple of values (c, o)
    or ``(lower, upper)`` (i, r); ``condition`` the parsed R expression or None."""

    name: str
    switch: str
    type: str
    domain: tuple
    log: bool = False
    condition: Any = None
    condition_text: str = ""
    # Where the parameter was declared (for messages); not part of what the parameter is.
    line: int | None = dataclasses.field(default=None, compare=False)

    @property
    def is_fixed(self) -> bool:
        if self.type in ("c", "o"):
            return len(self.domain) == 1
        return self.domain[0] == self.domain[1]

    @property
    def depends_on(self) -> list[str]:
        return rexpr.names(self.condition) if self.condition is not None else []


class ForbiddenRule(tuple):
    """One forbidden rule: the pair ``(text, tree)`` (it unpacks as one), with the ``path``
    and ``line`` it was read from, for messages.

    >>> rule = ForbiddenRule("x > 1", rexpr.parse("x > 1"), "forbidden.txt", 3)
    >>> text, tree = rule
    >>> text, rule.where
    ('x > 1', 'forbidden.txt:3')
    """

    def __new__(cls, text: str, tree: Any, path: str | None = None, line: int | None = None):
        self = super().__new__(cls, (text, tree))
        self.path, self.line = path, line
        return self

    def __getnewargs__(self):  # pickling keeps the origin
        return (self[0], self[1], self.path, self.line)

    @property
    def where(self) -> str:
        if self.path is None:
            return "forbidden rule"
        return f"{self.path}:{self.line}" if self.line is not None else str(self.path)


def unknown_names(tree: Any, by_name: dict) -> list[str]:
    """Names an expression reads that are not parameters (conditions and forbidden rules)."""
    return [n for n in rexpr.names(tree) if n not in by_name]


def format_value(value: Any) -> str:
    """A value as irace writes it on a command line: integers without a decimal point, reals
    in their shortest form (R's ``as.character``)."""
    if value is None:
        return "NA"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


class ParameterSpace:
    """The parameters of a scenario, in sampling order (a parameter after those its condition
    reads), with the forbidden rules and ``digits``."""

    #: A configuration to race first (every parameter, None where inactive): the user's
    #: defaults when the space was translated from one that declares them (a ConfigSpace
    #: space, :func:`racer.tuning.spaces.parameter_space`); None otherwise.
    default: dict | None = None

    def __init__(self, params: list[Parameter], forbidden: list[tuple[str, Any]] | None = None,
                 digits: int = 4, source: str = "<parameters>") -> None:
        self.source = source
        self.digits = digits
        self.declared = list(params)  # file order, for headers and command lines
        self.by_name = {p.name: p for p in params}
        self.params = _dependency_order(params, source)
        self.forbidden: list[tuple[str, Any]] = []
        # Where digits was set (path, line), for messages; None: the default.
        self.digits_origin: tuple | None = None
        self.add_forbidden(list(forbidden or []))

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.declared]

    @property
    def n_variable(self) -> int:
        """Non-fixed parameters (irace's ``nbVariable``)."""
        return sum(not p.is_fixed for p in self.declared)

    def add_forbidden(self, rules: list[tuple[str, Any]]) -> None:
        """Add forbidden rules; a rule reading a name that is not a parameter is a
        ParameterFileError naming the rule's file and line (irace would fail when it first
        evaluates it)."""
        for rule in rules:
            unknown = unknown_names(rule[1], self.by_name)
            if unknown:
                raise ParameterFileError(
                    getattr(rule, "path", None) or self.source, getattr(rule, "line", None),
                    f"the forbidden rule `{rule[0]}` uses {unknown[0]!r}, which is not a parameter"
                    + _known(self.by_name, unknown[0]))
        self.forbidden.extend(rules)

    def is_active(self, param: Parameter, values: dict) -> bool:
        if param.condition is None:
            return True
        return rexpr.truthy(rexpr.evaluate(param.condition, values)) is True

    def is_forbidden(self, values: dict) -> bool:
        """True if any forbidden rule is TRUE for ``values`` (NA does not forbid)."""
        for _text, tree in self.forbidden:
            if rexpr.truthy(rexpr.evaluate(tree, values)) is True:
                return True
        return False

    def forbidding_rule(self, values: dict) -> str | None:
        for text, tree in self.forbidden:
            if rexpr.truthy(rexpr.evaluate(tree, values)) is True:
                return text
        return None

    def check(self, values: dict) -> str | None:
        """Why ``values`` is not a valid configuration, or None."""
        for p in self.params:
            v = values.get(p.name)
            active = self.is_active(p, values)
            if not active:
                if v is not None:
                    return f"parameter {p.name} is inactive (condition {p.condition_text}) but has value {format_value(v)}"
                continue
            if v is None:
                return f"parameter {p.name} is active but NA"
            if p.type in ("c", "o"):
                if v not in p.domain:
                    return f"parameter {p.name} = {v!r} is not one of {list(p.domain)}"
            else:
                lo, hi = p.domain
                if not isinstance(v, (int, float)) or not lo <= v <= hi:
                    return f"parameter {p.name} = {v!r} is outside [{format_value(lo)}, {format_value(hi)}]"
                if p.type == "i" and float(v) != int(v):
                    return f"parameter {p.name} = {v!r} is not an integer"
        rule = self.forbidding_rule(values)
        if rule is not None:
            return f"it is forbidden by the rule {rule!r}"
        return None

    def native(self, values: dict) -> Any:
        """A configuration as the user's own space writes one: here its active parameters
        (inactive ones, None, left out), integers as ``int`` and reals as ``float`` (also
        when read back as another type); a space translated from ConfigSpace gives a
        ``ConfigSpace.Configuration`` (:func:`racer.tuning.spaces.parameter_space`).

        >>> space = ParameterSpace([Parameter("x", "", "i", (1, 3)), Parameter("y", "", "r", (0, 1))])
        >>> space.native({"x": 2.0, "y": None})
        {'x': 2}
        """
        out = {}
        for name, value in values.items():
            p = self.by_name.get(name)
            if p is None:
                raise ValueError(f"`values` names {name!r}, which is not a parameter"
                                 + _known(self.by_name, name))
            if value is not None:
                out[name] = int(value) if p.type == "i" else float(value) if p.type == "r" else value
        return out

    def command_line(self, values: dict) -> list[str]:
        """The switches of ``values`` as argv words: switch and value are concatenated and
        split on blanks, as the shell irace calls the target-runner through would do."""
        words: list[str] = []
        for p in self.declared:
            v = values.get(p.name)
            if v is None:
                continue
            words.extend((p.switch + format_value(v)).split())
        return words

    def parse_value(self, param: Parameter, text: str) -> Any:
        """A value read from a file, typed for ``param`` (ValueError if it does not fit)."""
        if text in ("NA", "<NA>"):
            return None
        if param.type in ("c", "o"):
            return text
        x = float(text)
        if param.type == "i":
            if not x.is_integer():
                raise ValueError(f"{text!r} is not an integer")
            return int(x)
        return x


def _known(by_name: dict, name: str) -> str:
    """`` (did you mean ...?)`` or the list of parameters, for a name that is not one."""
    import difflib

    close = difflib.get_close_matches(name, list(by_name), n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    return f" (parameters: {', '.join(by_name)})"


def _dependency_order(params: list[Parameter], source: str) -> list[Parameter]:
    by_name = {p.name: p for p in params}
    for p in params:
        unknown = unknown_names(p.condition, by_name) if p.condition is not None else []
        if unknown:
            raise ParameterFileError(
                source, p.line, f"the condition of {p.name} ({p.condition_text}) uses "
                f"{unknown[0]!r}, which is not a parameter" + _known(by_name, unknown[0]))
    order: list[Parameter] = []
    state: dict[str, int] = {}

    def visit(p: Parameter, chain: list[str]) -> None:
        s = state.get(p.name, 0)
        if s == 2:
            return
        if s == 1:
            raise ParameterFileError(
                source, p.line, "conditions form a cycle: " + " -> ".join(chain + [p.name]))
        state[p.name] = 1
        for dep in p.depends_on:
            visit(by_name[dep], chain + [p.name])
        state[p.name] = 2
        order.append(p)

    for p in params:
        visit(p, [])
    return order


_PARAM_LINE = re.compile(
    r"""^\s*(?P<name>[A-Za-z0-9._]+)\s+
        (?P<switch>"[^"]*"|'[^']*')\s+
        (?P<type>[cior])\s*(?P<log>,\s*log)?\s*
        \((?P<domain>.*?)\)\s*
        (?:\|\s*(?P<cond>.*?))?\s*$""",
    re.VERBOSE,
)


def _split_domain(text: str) -> list[str]:
    lex = shlex.shlex(text, posix=True)
    lex.whitespace = ","
    lex.whitespace_split = True
    lex.commenters = ""
    return [w.strip() for w in lex]


def read_forbidden_lines(lines: list[tuple[int, str]], path: str) -> list[tuple[str, Any]]:
    rules = []
    for lineno, raw in lines:
        text = rexpr.strip_comment(raw).strip()
        if not text:
            continue
        try:
            rules.append(ForbiddenRule(text, rexpr.parse(text), path, lineno))
        except rexpr.RSyntaxError as exc:
            raise ParameterFileError(path, lineno, f"forbidden rule: {exc}") from None
    return rules


def read_forbidden(path: str) -> list[tuple[str, Any]]:
    """Rules of a ``forbiddenFile``: one R expression a line; ``#`` comments."""
    text = read_text(path, lambda line, message: ParameterFileError(path, line, message))
    return read_forbidden_lines(list(enumerate(text.splitlines(), start=1)), path)


def read_parameters(path: str, digits: int | None = None, *, text: str | None = None) -> ParameterSpace:
    """Read an irace parameters file (with optional ``[global]`` and ``[forbidden]``
    sections). ``digits`` (the scenario's) is overridden by ``[global] digits``. With
    ``text``, that text is read instead of the file, ``path`` naming it in messages."""
    if text is None:
        text = read_text(path, lambda line, message: ParameterFileError(path, line, message))
    params: list[Parameter] = []
    forbidden_lines: list[tuple[int, str]] = []
    section = "parameters"
    file_digits = None
    digits_line = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = rexpr.strip_comment(raw).strip()
        if not line:
            continue
        m = re.fullmatch(r"\[\s*(\w+)\s*\]", line)
        if m:
            section = m.group(1).lower()
            if section not in ("global", "forbidden", "parameters"):
                raise ParameterFileError(path, lineno, f"unknown section [{m.group(1)}] "
                                         "(known: [global], [forbidden])")
            continue
        if section == "forbidden":
            forbidden_lines.append((lineno, line))
            continue
        if section == "global":
            gm = re.fullmatch(r"(\w+)\s*=\s*(.+)", line)
            if not gm:
                raise ParameterFileError(path, lineno, f"expected `name = value` in [global]; got {line!r}")
            if gm.group(1) != "digits":
                raise ParameterFileError(path, lineno, f"unknown [global] option {gm.group(1)!r} (known: digits)")
            try:
                file_digits, digits_line = int(gm.group(2)), lineno
            except ValueError:
                raise ParameterFileError(path, lineno, f"digits must be an integer; got {gm.group(2)!r}") from None
            continue
        params.append(_parse_param_line(line, lineno, path, params))
    if not params:
        raise ParameterFileError(path, None, "no parameters defined")
    space = ParameterSpace(params, read_forbidden_lines(forbidden_lines, path),
                           digits=file_digits if file_digits is not None else (4 if digits is None else digits),
                           source=path)
    if digits_line is not None:
        space.digits_origin = (path, digits_line)
    return space


def _parse_param_line(line: str, lineno: int, path: str, previous: list[Parameter]) -> Parameter:
    m = _PARAM_LINE.match(line)
    if not m:
        raise ParameterFileError(
            path, lineno, f"cannot read {line!r}: expected `name \"switch\" type (domain) "
            "[| condition]` with type c, o, i, r, i,log or r,log" + _diagnose(line))
    name = m.group("name")
    if any(p.name == name for p in previous):
        raise ParameterFileError(path, lineno, f"parameter {name!r} defined twice")
    ptype = m.group("type")
    log = m.group("log") is not None
    if log and ptype not in ("i", "r"):
        raise ParameterFileError(path, lineno, f"{name}: ',log' applies to i and r only, not {ptype}")

    def error(message: str) -> ParameterFileError:
        return ParameterFileError(path, lineno, f"{name}: {message}")

    text = m.group("domain")
    try:
        values = _split_domain(text)
    except ValueError as exc:
        raise error(f"cannot read the domain: {exc}") from None
    domain = (_categorical_domain(values, error) if ptype in ("c", "o")
              else _numeric_domain(values, text, ptype, log, error))
    cond_text = (m.group("cond") or "").strip()
    cond = None
    if cond_text:
        try:
            cond = rexpr.parse(cond_text)
        except rexpr.RSyntaxError as exc:
            raise error(f"condition: {exc}") from None
    return Parameter(name, m.group("switch")[1:-1], ptype, domain, log, cond, cond_text, line=lineno)


def _categorical_domain(values: list, error: Callable[[str], Exception]) -> tuple:
    """The domain of a c or o parameter: its values, none repeated."""
    if not values:
        raise error("empty domain")
    if len(set(values)) != len(values):
        raise error(f"repeated values in {values}")
    return tuple(values)


def _numeric_domain(values: list, text: str, ptype: str, log: bool,
                    error: Callable[[str], Exception]) -> tuple:
    """The ``(lower, upper)`` of an i or r parameter (``text``: the domain as written)."""
    if len(values) != 2:
        raise error(f"type {ptype} needs (lower, upper); got ({text}) "
                    "(dependent domains of irace 4 are not supported)")
    try:
        lo, hi = (float(v) for v in values)
    except ValueError:
        raise error(f"bounds must be numbers; got ({text})") from None
    if ptype == "i" and not (lo.is_integer() and hi.is_integer()):
        raise error(f"integer bounds must be integers; got ({text})")
    if lo > hi:
        raise error(f"lower bound {values[0]} > upper bound {values[1]}")
    if log and lo <= 0:
        raise error(f"a log-scale domain must be positive; got ({text})")
    return (int(lo), int(hi)) if ptype == "i" else (lo, hi)


def _diagnose(line: str) -> str:
    """What is most likely wrong with a parameter line the pattern refused ("" if unsure).

    >>> _diagnose('x --x r (1, 2)'), _diagnose('x "--x " f (1, 2)'), _diagnose('x "--x " r (1, 2')
    ('; the switch must be quoted, e.g. "--x "', "; unknown type 'f'", '; the domain needs a closing )')
    """
    m = re.match(r"""\s*([A-Za-z0-9._]+)\s+(\S)""", line)
    if not m:
        return "; a name (letters, digits, . and _) must start the line"
    if m.group(2) not in "\"'":
        return f'; the switch must be quoted, e.g. "--{m.group(1)} "'
    rest = re.match(r"""\s*[A-Za-z0-9._]+\s+("[^"]*"|'[^']*')\s*(.*)$""", line)
    if not rest:
        return "; the switch's closing quote is missing"
    after = rest.group(2)
    word = re.match(r"[A-Za-z]+", after)
    if word is None or word.group() not in ("c", "o", "i", "r"):
        return f"; unknown type {word.group() if word else after[:1]!r}" if after else "; the type and domain are missing"
    if "(" not in after:
        return "; the domain must be in parentheses, e.g. (1, 10) or (a, b)"
    if ")" not in after[after.index("("):]:
        return "; the domain needs a closing )"
    tail = after[after.rindex(")") + 1:].strip()
    if tail and not tail.startswith("|"):
        return "; after the domain only a condition may follow, starting with |"
    return ""


def read_configurations(path: str, space: ParameterSpace, discarded: list | None = None) -> list[dict]:
    """Configurations of a ``configurationsFile``: a header of parameter names, one
    configuration a row, ``NA`` for inactive parameters. Omitted columns are NA (fixed
    parameters take their value). Each row is checked against conditions and domains. A
    forbidden row is an error, or, when a ``discarded`` list is given, dropped and recorded
    there as ``(line, rule)`` (irace discards them with a warning)."""
    rows = _configuration_rows(path)
    header_line, header = rows[0]
    for name in header:
        if name not in space.by_name:
            raise ParameterFileError(path, header_line, f"column {name!r} is not a parameter of {space.source}")
    if len(set(header)) != len(header):
        raise ParameterFileError(path, header_line, "repeated column names")
    configs = []
    seen: dict[tuple, int] = {}
    for lineno, words in rows[1:]:
        values = _configuration_values(path, lineno, words, header, space)
        problem = space.check(values)
        if problem is not None and discarded is not None and problem.startswith("it is forbidden"):
            discarded.append((lineno, space.forbidding_rule(values)))
            continue
        if problem is not None:
            raise ParameterFileError(path, lineno, f"invalid configuration: {problem}")
        key = tuple(values[n] for n in space.names)
        if key in seen:
            raise ParameterFileError(path, lineno, f"duplicate of the configuration on line {seen[key]}")
        seen[key] = lineno
        configs.append(values)
    if not configs and not discarded:
        raise ParameterFileError(path, None, "no configurations after the header")
    return configs


def _configuration_rows(path: str) -> list[tuple[int, list[str]]]:
    """``(line number, words)`` of the non-empty lines of a configurations file (shell
    quoting and ``#`` comments), the header first."""
    text = read_text(path, lambda line, message: ParameterFileError(path, line, message))
    rows = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        try:
            words = shlex.split(raw, comments=True)
        except ValueError as exc:
            raise ParameterFileError(path, lineno, str(exc)) from None
        if words:
            rows.append((lineno, words))
    if not rows:
        raise ParameterFileError(path, None, "no header line")
    return rows


def _configuration_values(path: str, lineno: int, words: list, header: list,
                          space: ParameterSpace) -> dict:
    """Every parameter's value on one row: the header's columns parsed, a fixed parameter
    left out taking its value (NA when its condition fails), the others NA."""
    if len(words) != len(header):
        raise ParameterFileError(path, lineno, f"{len(words)} values for {len(header)} columns")
    values: dict = {p.name: None for p in space.declared}
    for name, word in zip(header, words):
        try:
            values[name] = space.parse_value(space.by_name[name], word)
        except ValueError as exc:
            raise ParameterFileError(path, lineno, f"{name}: {exc}") from None
    for p in space.declared:
        if p.name not in header and p.is_fixed:
            values[p.name] = p.domain[0]
    # Fixed parameters whose condition fails are NA.
    for p in space.params:
        if p.is_fixed and p.name not in header and not space.is_active(p, values):
            values[p.name] = None
    return values


def is_finite_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
