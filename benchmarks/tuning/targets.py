"""The tuning suite's scenarios as Python target functions: ``target(config, instance, seed)
-> cost``, the signature ``racer.tune``, SMAC3 and an Optuna objective loop all call.

Each function runs the scenario's own ``target-runner`` code in this process: the runner file
is loaded once as a module and its ``main(argv)`` is called with the argument vector irace
would give it (``configID instanceID seed instance --switch value ...``), its standard output
captured; the cost is the first number of the last line printed, as the suite's harness reads
a runner's output. So the Python function and the runner cannot drift apart (the tests compare
the two on a configuration), and a run costs no interpreter start-up.

>>> t = scenario_target("sat-capped")
>>> t.space.names[:2], t.train[:2]
(['solver', 'polarity'], ['uf160-s1.cnf', 'uf175-s1.cnf'])
>>> t.cost({"solver": "minisat22", "polarity": "default"}, t.train[0], 7) > 0
True
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import io
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# Instances are files under instances/ for these scenarios; the others name their instance
# (a BBOB or PBO function, a data set resample) and the runner builds it from the name.
FILE_INSTANCES = {"sat-cadical", "mip-mkp", "mip-gap", "sat-capped"}

_MODULES: dict[str, object] = {}


def _runner_module(name: str):
    """The scenario's ``target-runner`` loaded as a module, once per process (its solver
    imports happen inside ``main``, also once)."""
    if name not in _MODULES:
        path = HERE / name / "target-runner"
        loader = importlib.machinery.SourceFileLoader(f"_tuning_runner_{name.replace('-', '_')}", str(path))
        spec = importlib.util.spec_from_loader(loader.name, loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        _MODULES[name] = module
    return _MODULES[name]


class RunFailed(RuntimeError):
    """The runner exited with an error (it printed its reason on stderr)."""


class ScenarioTarget:
    """One scenario of ``benchmarks/tuning/``: its parameter space (racer's reading of
    ``parameters.txt`` and the forbidden file), first configuration, training and test
    instance names, budget and digits, and :meth:`cost`, the runner's cost of a
    configuration on an instance name with a seed."""

    def __init__(self, name: str):
        from racer.cli.scenario import read_scenario
        from racer.tuning.parameters import read_configurations, read_forbidden, read_parameters

        folder = HERE / name
        if not (folder / "target-runner").is_file():
            raise ValueError(f"scenario must name a folder of benchmarks/tuning/ with a target-runner, got {name!r}")
        self.name, self.folder = name, folder
        sc = read_scenario(str(folder / "scenario.txt"))
        self.digits = int(sc.values["digits"])
        self.parameters_file = folder / "parameters.txt"
        self.forbidden_file = folder / "forbidden.txt" if (folder / "forbidden.txt").is_file() else None
        self.space = read_parameters(str(self.parameters_file), self.digits)
        if self.forbidden_file is not None:
            self.space.add_forbidden(read_forbidden(str(self.forbidden_file)))
        self.default = read_configurations(str(folder / "default.txt"), self.space)[0]
        self.train = (folder / "train.txt").read_text().split()
        self.test = (folder / "test.txt").read_text().split()
        self.budget = int(re.search(r"^maxExperiments\s*=\s*(\d+)", (folder / "scenario.txt").read_text(),
                                    re.M).group(1))

    def instance_argument(self, instance: str) -> str:
        """What the runner gets as ``<instance>``: the file's path, or the name itself."""
        return str(self.folder / "instances" / instance) if self.name in FILE_INSTANCES else instance

    def switches(self, config) -> list[str]:
        """The command-line switches of ``config`` (a mapping of active parameters; None or
        a missing name is inactive), in the parameters file's order, as irace writes them."""
        from racer.tuning.parameters import format_value

        values = dict(config)
        return [w for p in self.space.declared if values.get(p.name) is not None
                for w in (p.switch.strip(), format_value(_plain(values[p.name])))]

    def argv(self, config, instance: str, seed: int) -> list[str]:
        k = self.train.index(instance) + 1 if instance in self.train else 0
        return ["target-runner", "0", str(k), str(int(seed)), self.instance_argument(instance),
                *self.switches(config)]

    def cost(self, config, instance: str, seed: int) -> float:
        """The runner's cost of ``config`` on ``instance`` (a name of train.txt or test.txt)
        with ``seed``; raises :class:`RunFailed` when the runner exits with an error."""
        module = _runner_module(self.name)
        out, err = io.StringIO(), io.StringIO()
        blocked = {k for k, v in sys.modules.items() if v is None}
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                module.main(self.argv(config, instance, seed))
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise RunFailed(f"{self.name} runner failed on {instance} seed {seed}: "
                                f"{err.getvalue().strip()[-300:]}") from None
        finally:
            # bbob-cma's runner blocks imports it does not need (pandas, ...) to start faster
            # as a process; in this shared process that would break the other runners.
            for k in [k for k, v in sys.modules.items() if v is None and k not in blocked]:
                del sys.modules[k]
        lines = out.getvalue().strip().splitlines()
        if not lines:
            raise RunFailed(f"{self.name} runner printed nothing on {instance} seed {seed}")
        return float(lines[-1].split()[0])

    __call__ = cost

    def held_out(self, config, seeds_per_instance: int) -> float:
        """Mean cost of ``config`` on the test instances, test instance ``k`` (0-based) with
        seeds ``1000 + 17 k + s``, ``s < seeds_per_instance``: the seeds of the suite's
        harness (``cli_vs_irace.held_out``), so its recorded irace costs compare. A failed run
        counts as ``inf``, as there."""
        costs = []
        for k, name in enumerate(self.test):
            for s in range(seeds_per_instance):
                try:
                    costs.append(self.cost(config, name, 1000 + 17 * k + s))
                except RunFailed:
                    costs.append(math.inf)
        return sum(costs) / len(costs)


def _plain(value):
    """numpy scalars (from ConfigSpace) as Python numbers, so they format as irace's."""
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def scenario_target(name: str) -> ScenarioTarget:
    """The :class:`ScenarioTarget` of scenario ``name`` (a folder of benchmarks/tuning/)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a scenario's folder name (str), got {type(name).__name__}")
    return ScenarioTarget(name)


def configspace(target: ScenarioTarget, seed: int | None = None):
    """The scenario's parameters as a ``ConfigSpace.ConfigurationSpace``: c -> categorical
    and o -> ordinal (values as the file writes them, as text), i -> integer, r -> float
    (``log`` kept), conditions ``x == "v"``, ``x %in% c(...)`` and ``x > number``; the
    default is ``default.txt``'s configuration (the middle of the range where it is NA).
    Forbidden rules are left out (ConfigSpace cannot state ``cxpb + mutpb > 1``): the tools
    meet them as failed runs, as they would meet the runner's refusal.

    >>> cs = configspace(scenario_target("sat-capped"))
    >>> sorted(cs.keys())[:3], cs.get_default_configuration()["solver"]
    (['cd_rephase', 'cd_stabilize', 'cd_target'], 'minisat22')
    """
    import ConfigSpace as CS

    cs = CS.ConfigurationSpace(seed=seed)
    hps = {}
    for p in target.space.declared:
        d = target.default.get(p.name)
        if p.type in ("c", "o"):
            values = [str(v) for v in p.domain]
            default = str(d) if d is not None else values[0]
            hp = (CS.CategoricalHyperparameter(p.name, values, default_value=default) if p.type == "c"
                  else CS.OrdinalHyperparameter(p.name, values, default_value=default))
        else:
            lo, hi = p.domain
            if d is None:
                d = math.sqrt(lo * hi) if p.log else (lo + hi) / 2
            if p.type == "i":
                hp = CS.UniformIntegerHyperparameter(p.name, int(lo), int(hi), default_value=int(round(d)), log=p.log)
            else:
                hp = CS.UniformFloatHyperparameter(p.name, float(lo), float(hi), default_value=float(d), log=p.log)
        hps[p.name] = hp
    cs.add(list(hps.values()))
    conditions = []
    for p in target.space.declared:
        text = p.condition_text.strip()
        if not text:
            continue
        if m := re.fullmatch(r'(\w+)\s*==\s*"([^"]*)"', text):
            conditions.append(CS.EqualsCondition(hps[p.name], hps[m[1]], m[2]))
        elif m := re.fullmatch(r'(\w+)\s*%in%\s*c\((.*)\)', text):
            values = [v.strip().strip('"') for v in m[2].split(",")]
            conditions.append(CS.InCondition(hps[p.name], hps[m[1]], values))
        elif m := re.fullmatch(r'(\w+)\s*>\s*([-\d.]+)', text):
            parent = hps[m[1]]
            bound = float(m[2])
            conditions.append(CS.GreaterThanCondition(hps[p.name], parent,
                                                      int(bound) if isinstance(parent, CS.UniformIntegerHyperparameter)
                                                      else bound))
        else:
            raise ValueError(f"{target.name}: condition {text!r} of {p.name!r} has no ConfigSpace translation here")
    cs.add(conditions)
    return cs


if __name__ == "__main__":  # python benchmarks/tuning/targets.py SCENARIO INSTANCE SEED --switch value ...
    t = scenario_target(sys.argv[1])
    words = sys.argv[4:]
    names = {p.switch.strip(): p.name for p in t.space.declared}
    print(t.cost({names[k]: v for k, v in zip(words[::2], words[1::2])}, sys.argv[2], int(sys.argv[3])))
