"""What the number behind each elimination is: every racing test declares it
(``RacingTest.elimination_statistic``), the report reads the declaration from the class a journal
names, and labels the numbers by it (a p-value is not called a probability)."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import racer.racing
from racer import Race, report
from racer.racing.base import KeepAll, ProtectElites, RacingTest
from racer.racing.cv import EarlyMargin, HalvingFloor, ImpreciseEquivalence, ScoreResolution
from racer.racing.outliers import OutlierGuard
from racer.racing.posterior_best import PosteriorBestTest
from racer.racing.registry import RACING_TESTS
from racer.racing.trace import TRaceTest
from racer.storage import journal_data, race_fingerprint
from racer.racing.capped import CappedTest

STATISTICS = ("posterior probability", "p-value")


def _score(c, i):  # candidate c is better by 0.1 per step, in [0, 1] as the hierarchical model needs
    block = i[1] * 10 + i[0] if isinstance(i, tuple) else i
    return 0.5 + 0.1 * c + np.random.default_rng([c, block]).normal(0, 0.05)


def _scores2(c, i):
    rng = np.random.default_rng([c, i])
    return (-c + rng.normal(0, 0.1), -c + rng.normal(0, 0.1))


def _journaled_race(entry, path):
    """A race of four candidates, clearly apart, with ``entry``'s test, journaled at ``path``."""
    options = {"test_fraction": 0.2, "n_warmup": 100, "n_draws": 100, "top": 2} \
        if entry.name == "hierarchical" else {}
    test = entry.build(**options)
    if test.objectives == "multi":
        race = Race([0, 1, 2, 3], test=test, storage=path, random_state=0,
                    direction=["maximize", "maximize"])
        return race.run(_scores2, range(20), progress=False)
    instances = [(d, f) for f in range(5) for d in range(4)] if entry.name == "hierarchical" \
        else range(20)
    race = Race([0, 1, 2, 3], test=test, storage=path, random_state=0, direction="maximize")
    return race.run(_score, instances, progress=False)


def _fingerprint(test):
    return race_fingerprint([0, 1], test, {}, 0, {})


def _racing_test_classes():
    """Every RacingTest subclass defined in racer.racing's modules, and CappedTest."""
    found = {CappedTest}
    for module in pkgutil.iter_modules(racer.racing.__path__):
        mod = importlib.import_module(f"racer.racing.{module.name}")
        found |= {cls for _, cls in inspect.getmembers(mod, inspect.isclass)
                  if issubclass(cls, RacingTest) and cls is not RacingTest
                  and cls.__module__ == mod.__name__}
    return found


# Each wrapper of racer, built around a given test: it passes that test's decisions on.
WRAPPERS = {
    ProtectElites: lambda inner: ProtectElites(inner, n_elites=1, until=3),
    CappedTest: lambda inner: CappedTest(inner, min_survivors=1),
    ScoreResolution: lambda inner: ScoreResolution(inner, rope=0.01),
    EarlyMargin: lambda inner: EarlyMargin(inner, margin=0.01),
    ImpreciseEquivalence: lambda inner: ImpreciseEquivalence(inner, credibility=0.9, eps=0.05),
    HalvingFloor: lambda inner: HalvingFloor(inner, n_candidates=8, splits_per_level=2,
                                             n_levels=3, factor=2),
    OutlierGuard: lambda inner: OutlierGuard(inner, factor=1000.0),
}


@pytest.mark.parametrize("entry", [
    pytest.param(e, id=e.name, marks=[pytest.mark.slow] if e.name == "hierarchical" else [])
    for e in RACING_TESTS])
def test_every_registered_test_declares_its_number_and_the_report_labels_it(entry, tmp_path):
    declared = entry.test_class.elimination_statistic
    assert declared in STATISTICS
    path = str(tmp_path / "race.sqlite")
    result = _journaled_race(entry, path)
    assert result.history, "the race must eliminate someone for its numbers to be labelled"
    # The declaration says what the numbers are: a p-value that eliminates is small, a
    # posterior probability that eliminates is large.
    numbers = np.array([rec.probability for rec in result.history])
    numbers = numbers[np.isfinite(numbers)]
    assert numbers.size
    assert np.all(numbers <= 0.1) if declared == "p-value" else np.all(numbers >= 0.9)

    assert report.elimination_statistic(path) == declared
    data = journal_data(path)
    section = "\n".join(report._eliminations_section(report._race_page(path, data, result)))
    assert f"<th>{declared}</th>" in section
    assert f"with the {declared} the test reported" in section
    for other in set(STATISTICS) - {declared}:
        assert other not in section
    assert report.race_record(path)["elimination_statistic"] == declared


def test_the_p_values_of_irace_t_test_are_not_called_probabilities(tmp_path):
    # The command line's default test: its numbers were once labelled "probability" because
    # the report guessed from the class path.
    path = str(tmp_path / "t.sqlite")
    Race([0, 1, 2, 3], test=TRaceTest(), storage=path, random_state=0,
         direction="maximize").run(_score, range(20), progress=False)
    text = open(report.write_report(path, tmp_path / "t.html"), encoding="utf-8").read()
    assert "<th>p-value</th>" in text
    assert "<th>probability</th>" not in text and "<th>posterior probability</th>" not in text
    assert "label: p-value and who beat" in text  # the timeline's caption


def test_every_racing_test_class_declares_or_passes_on_its_inner_test():
    classes = _racing_test_classes()
    takes_inner = {cls for cls in classes if "inner" in inspect.signature(cls).parameters}
    assert takes_inner == set(WRAPPERS)  # a new wrapper must be added to WRAPPERS
    for cls in classes - takes_inner:
        assert cls.elimination_statistic in STATISTICS, cls
        fp = {"test": f"{cls.__module__}.{cls.__qualname__}", "test_params": {}}
        assert report._fingerprint_statistic(fp) == cls.elimination_statistic, cls
    for cls, wrap in WRAPPERS.items():
        for inner in (TRaceTest(), PosteriorBestTest()):
            fp = _fingerprint(wrap(inner))
            assert fp["test"].endswith(cls.__qualname__)
            assert report._fingerprint_statistic(fp) == inner.elimination_statistic, (cls, inner)


def test_nested_wrappers_reach_the_test_that_decides():
    inner = CappedTest(TRaceTest(adjust="holm"), min_survivors=2)
    assert report._fingerprint_statistic(_fingerprint(ProtectElites(inner, 1, 3))) == "p-value"
    fp = _fingerprint(ScoreResolution(EarlyMargin(TRaceTest(), margin=0.1), rope=0.01))
    assert report._fingerprint_statistic(fp) == "p-value"
    fp = _fingerprint(ProtectElites(ScoreResolution(PosteriorBestTest(), rope=0.01), 1, 3))
    assert report._fingerprint_statistic(fp) == "posterior probability"


def test_a_test_racer_cannot_import_or_find_is_unknown(tmp_path):
    gone = {"test": "no_such_package.tests.MyTest", "test_params": {}}
    assert report._fingerprint_statistic(gone) == "unknown"
    not_a_test = {"test": "collections.OrderedDict", "test_params": {}}
    assert report._fingerprint_statistic(not_a_test) == "unknown"
    lost_inner = _fingerprint(ProtectElites(TRaceTest(), 1, 3))
    lost_inner["test_params"]["inner"] = repr("NoSuchTest[('alpha', 0.05)]")
    assert report._fingerprint_statistic(lost_inner) == "unknown"
    assert report._fingerprint_statistic({"test_params": {}}) == "unknown"
    # KeepAll eliminates nothing and says so by the default; its journal is still labelled.
    assert report._fingerprint_statistic(_fingerprint(KeepAll())) == "posterior probability"

    # The page says it does not know, rather than guess.
    path = str(tmp_path / "r.sqlite")
    result = Race([0, 1, 2, 3], test=TRaceTest(), storage=path, random_state=0,
                  direction="maximize").run(_score, range(20), progress=False)
    data = journal_data(path)
    data["fingerprint"] = {**data["fingerprint"], "test": "no_such_package.MyTest"}
    section = "\n".join(report._eliminations_section(report._race_page(path, data, result)))
    assert "<th>p-value or probability (unknown)</th>" in section
    assert "p-value</th>" not in section.replace("p-value or probability (unknown)", "")
