"""What a tuning in an execDir was started with, so that the same command resumes it, a larger
budget continues it, and anything else is refused in the user's own words.

``<execDir>/racer-journal/settings.json`` records, when a tuning starts, every setting that
decides its runs as the user gave it: the scenario options that shape the races, racer's own
options, the seed, the parameters, forbidden rules, initial configurations, training and test
instances and the target-runner command; and the budget of every session, oldest first
(``budgets``). A later ``racer`` command on the same execDir is compared with it before
anything runs:

* the same settings resume the tuning (the journals replay every run already made);
* the same settings with a larger ``maxExperiments`` (or ``maxTime``) continue it: the new
  budget is appended to ``budgets`` before any new run, and the tuner replays the earlier
  sessions under their own budgets, then goes on with the extra budget
  (:class:`racer.tuning.tuner.Tuner`);
* anything else is refused with a :class:`ResumeError` that says first how to start over
  (``--fresh`` or another execDir), then each change as ``name: old -> new``.

An execDir written by a racer without this file (journals, no ``settings.json``) is resumed as
before, checked race by race by the journals themselves; it cannot be continued with a larger
budget (its earlier budget is not known).
"""

from __future__ import annotations

import json
import os
import shlex

from racer._text import clip

__all__ = ["SETTINGS_FILE", "ResumeError", "check_resume", "settings_of", "write_settings"]

SETTINGS_FILE = "settings.json"
_VERSION = 1

# Scenario options that decide which runs a tuning makes (irace's names). Not here: paths
# (their content is compared instead), parallelism, retries, timeouts, quiet, the budget
# (handled apart), and options racer does not implement.
_TUNING_OPTIONS = (
    "firstTest", "eachTest", "mu", "minNbSurvival", "nbIterations", "nbConfigurations",
    "nbExperimentsPerIteration", "elitist", "elitistNewInstances", "elitistLimit",
    "deterministic", "sampleInstances", "testType", "confidence", "digits", "softRestart",
    "softRestartThreshold", "testNbElites", "minMeasurableTime",
    # Added with capping: a journal written before has none of them, and a name missing
    # from the old settings is not compared (resume._changes), so it still resumes.
    "capping", "cappingAfterFirstTest", "cappingType", "boundType", "boundMax", "boundDigits", "boundPar", "boundAsTimeout",
    # Added with several objectives (racer.tuning.objectives), alike.
    "objectives",
    # irace 4's, alike.
    "minExperiments", "blockSize", "postselection",
)


class ResumeError(ValueError):
    """The execDir holds a tuning that the command's settings cannot resume or continue."""


def _budget_of(values: dict) -> dict:
    if values["maxTime"] > 0:
        return {"maxTime": values["maxTime"]}
    return {"maxExperiments": values["maxExperiments"]}


def _describe_parameter(p) -> str:
    from racer.tuning.parameters import format_value

    # format_value: exact (shortest repr), so that any change of a bound is seen.
    domain = "(" + ", ".join(format_value(x) if isinstance(x, (int, float)) else str(x)
                             for x in p.domain) + ")"
    text = f'"{p.switch}" {p.type}{",log" if p.log else ""} {domain}'
    return text + (f" | {p.condition_text}" if p.condition_text else "")


def _instance_text(inst) -> str:
    return " ".join([inst.name, *inst.extra])


def settings_of(loaded: dict, args, seed: int, runner_command: list) -> dict:
    """The settings of this command, as recorded in ``settings.json`` (without ``budgets``)."""
    sc, space = loaded["scenario"], loaded["space"]
    v = sc.values
    from racer.tuning.parameters import format_value

    return {
        "version": _VERSION,
        "seed": int(seed),
        "seed_given": v["seed"] is not None,
        "budget": _budget_of(v),
        "options": {name: v[name] for name in _TUNING_OPTIONS},
        "racer": {"--racing-test": args.racing_test, "--on-error": args.on_error,
                  "--sampler": args.sampler, "--fixed-list": bool(args.fixed_list),
                  # Recorded since the option exists; a settings.json without it resumes.
                  "--outlier-factor": getattr(args, "outlier_factor", None),
                  # Pipelined blocks charge runs otherwise: a resume must keep the setting.
                  "--pipelined": bool(getattr(args, "pipelined", False)),
                  "--pipelined-iterations": bool(getattr(args, "pipelined_iterations", False))},
        "parameterFile": [sc.values["parameterFile"],
                          {p.name: _describe_parameter(p) for p in space.declared}],
        "forbiddenFile": [sc.values["forbiddenFile"], [text for text, _ in space.forbidden]],
        "configurationsFile": [sc.values["configurationsFile"],
                               [" ".join(f"{k}={format_value(x)}" for k, x in c.items())
                                for c in loaded["initial"]]],
        "trainInstances": [sc.values["trainInstancesFile"] or sc.values["trainInstancesDir"],
                           [_instance_text(i) for i in loaded["train"]]],
        "testInstances": [sc.values["testInstancesFile"] or sc.values["testInstancesDir"],
                          [_instance_text(i) for i in loaded["test"]]],
        "targetRunner": shlex.join(runner_command),
    }


def _short(value, width: int = 50) -> str:
    return clip(value if isinstance(value, str) else json.dumps(value), width)


def _value(value) -> str:
    """An option's value as a scenario file would say it."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if value is None:
        return "(default)"
    if value == "":
        return '""'
    return _short(value)


def _list_change(label: str, what: str, old: list, new: list) -> str:
    at = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    if at < min(len(old), len(new)):
        detail = f"{what} #{at + 1}: {_short(old[at])} -> {_short(new[at])}"
    elif len(new) > len(old):
        detail = f"{what} #{at + 1} {_short(new[at])} is new"
    else:
        detail = f"{what} #{at + 1} {_short(old[at])} is gone"
    count = f"{len(old)} -> {len(new)} {what}s; " if len(old) != len(new) else ""
    return f"{label}: {count}{detail}"


def _changes(old: dict, new: dict) -> list[str]:
    """One line per difference, in the scenario's words (see the module docstring)."""
    lines = []
    if old["seed"] != new["seed"]:
        how = "" if old.get("seed_given") else " (drawn at random by the first run)"
        lines.append(f"seed: {old['seed']}{how} -> {new['seed']}")
    lines += _budget_changes(old["budget"], new["budget"])
    for group in ("options", "racer"):
        for name, value in old[group].items():
            if new[group].get(name) != value:
                lines.append(f"{name}: {_value(value)} -> {_value(new[group].get(name))}")
    lines += _file_changes(old, new)
    if old["targetRunner"] != new["targetRunner"]:
        lines.append(f"targetRunner: {_short(old['targetRunner'], 70)} -> "
                     f"{_short(new['targetRunner'], 70)}")
    return lines


def _budget_changes(old: dict, new: dict) -> list[str]:
    """A budget of another kind, or smaller: a tuning continues only with a larger one."""
    (old_kind, old_budget), = old.items()
    (new_kind, new_budget), = new.items()
    if old_kind != new_kind:
        return [f"budget: {old_kind} = {old_budget:g} -> {new_kind} = {new_budget:g} (a "
                f"tuning continues only with a larger {old_kind})"]
    if new_budget < old_budget:
        return [f"{old_kind}: {old_budget:g} -> {new_budget:g} (to continue, give "
                f"{old_budget:g} or more: a tuning continues only with a larger budget)"]
    return []


def _file_changes(old: dict, new: dict) -> list[str]:
    """The differences in what the scenario's files hold (parameters, forbidden rules,
    configurations, instances), one line per file."""
    lines = []
    for name, what in (("parameterFile", None), ("forbiddenFile", "rule"),
                       ("configurationsFile", "configuration"),
                       ("trainInstances", "instance"), ("testInstances", "instance")):
        (old_path, old_items), (new_path, new_items) = old[name], new[name]
        if old_items == new_items:
            continue
        label = {"trainInstances": "training instances", "testInstances": "test instances"}.get(
            name, name)
        label += f" ({new_path})" if new_path and new_path == old_path else (
            f" ({old_path or 'none'} -> {new_path or 'none'})")
        if name == "parameterFile":
            lines.append(f"{label}: " + _parameter_changes(old_items, new_items))
        else:
            lines.append(_list_change(label, what, old_items, new_items))
    return lines


def _parameter_changes(old: dict, new: dict) -> str:
    """The parameters new, gone or changed (the first three, and how many more)."""
    details = []
    for pname in dict.fromkeys([*old, *new]):
        a, b = old.get(pname), new.get(pname)
        if a == b:
            continue
        details.append(f"parameter {pname} is new: {_short(b)}" if a is None else
                       f"parameter {pname} is gone" if b is None else
                       f"parameter {pname}: {_short(a)} -> {_short(b)}")
    more = f"; and {len(details) - 3} more" if len(details) > 3 else ""
    return "; ".join(details[:3]) + more


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ResumeError(f"{path} cannot be read ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        raise ResumeError(f"{path} was written by another version of racer (resume with that "
                          "version)")
    return data


def write_settings(journal_dir: str, settings: dict, budgets: list) -> None:
    """Write ``settings.json`` whole or not at all (a kill never leaves half of it)."""
    os.makedirs(journal_dir, exist_ok=True)
    path = os.path.join(journal_dir, SETTINGS_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump({**settings, "budgets": budgets}, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def check_resume(journal_dir: str, settings: dict, *, resuming: bool, exec_dir: str,
                 command: list, start_over: str | None = None) -> list:
    """Compare this command with the tuning in ``journal_dir`` and record it.

    Returns the budgets of the earlier sessions that the tuner must replay before this
    command's budget (oldest first; ``[]`` for a new tuning, a plain resume, or an execDir of
    an older racer), after recording this command's budget in ``settings.json``. Raises
    :class:`ResumeError` when the tuning cannot be resumed or continued: the message starts
    with the commands to start over (``start_over``, else ``command`` with ``--fresh``), then
    lists each change as ``name: old -> new``."""
    path = os.path.join(journal_dir, SETTINGS_FILE)
    fresh = start_over if start_over is not None else shlex.join(["racer", *command, "--fresh"])
    try:
        old = _read(path) if resuming else None
    except ResumeError as exc:
        raise ResumeError(f"the tuning in execDir {exec_dir} cannot be resumed. To start over: "
                          f"{fresh} (or set another execDir). {exc}") from None
    if old is None:
        if not resuming:
            write_settings(journal_dir, settings, [settings["budget"]])
        return []  # a new tuning, or an older racer's execDir: the journals check themselves
    changes = _changes(old, settings)
    if changes:
        raise ResumeError(
            f"the tuning in execDir {exec_dir} was started with other settings. To start over: "
            f"{fresh} (or set another execDir). To continue it, undo these changes:\n  "
            + "\n  ".join(changes))
    budgets = list(old["budgets"])
    (kind, value), = settings["budget"].items()
    earlier = [b[kind] for b in budgets]
    if value > earlier[-1]:
        budgets.append(settings["budget"])
        # Recorded before any new run, so that a session killed from here on resumes with the
        # same budgets (and a smaller one is refused).
        write_settings(journal_dir, settings, budgets)
        return earlier
    return earlier[:-1]
