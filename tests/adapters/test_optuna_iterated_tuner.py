"""IteratedRace is racer's one Tuner with an Optuna sampler: the same races
as the Tuner driven directly, a resume that replays the interrupted run, a small space raced
to the end."""

from __future__ import annotations

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import CategoricalDistribution, IntDistribution  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

import racer  # noqa: E402
from racer.adapters.optuna import IteratedRace  # noqa: E402
from racer.adapters.optuna._common import SCORES_ATTR  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {"x": IntDistribution(0, 200), "k": CategoricalDistribution(["a", "b", "c"])}


def _problem(n_instances=20, seed=0):
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 1.0, size=n_instances)
    calls = []

    def evaluate(params, instance):
        calls.append((tuple(sorted(params.items())), instance))
        return ((params["x"] - 120) ** 2 / 2000 + {"a": 0.0, "b": 0.3, "c": 0.6}[params["k"]]
                + noise[instance])

    return evaluate, list(range(n_instances)), calls


@pytest.mark.slow
def test_iterated_race_races_as_the_tuner_with_an_optuna_sampler(tmp_path):
    # Proof that there is one loop: the command line's Tuner, given Optuna's RandomSampler
    # through --sampler optuna's OptunaSampler and racer.tune's runner of a function, races
    # the same configurations in every race and ends with the same elites as IteratedRace
    # with that sampler. (RandomSampler ignores what it is told, so the two samplers' own
    # conventions - a COMPLETE mean there, PRUNED here - cannot make them differ; an int and
    # a categorical parameter, so OptunaSampler's rounding of reals to `digits` cannot.)
    from racer.tuning.tuner import Settings, Tuner
    from racer.tuning.sampler import OptunaSampler
    from racer.tuning.instances import Instance
    from racer.racing.registry import make_test
    from racer.tuning.spaces import parameter_space
    from racer.tuning.runner import CallableRunner as _CallableRunner

    evaluate, instances, _ = _problem()
    res = IteratedRace(evaluate, SPACE, instances, budget=400, random_state=3,
                       sampler=optuna.samplers.RandomSampler(seed=7), progress=False).run()

    space = parameter_space(SPACE)
    train = [Instance(f"#{k}") for k in instances]
    runner = _CallableRunner(lambda config, instance, seed: evaluate(config, instance), instances,
                             {inst: k for k, inst in enumerate(train)}, n_workers=0,
                             timeout=None, retries=0, need_time=False, exec_dir=str(tmp_path),
                             name="evaluate")
    # IteratedRace's settings (adapters/optuna/iterated.py): irace's defaults but each
    # instance once per configuration, failures raced as worst, racer's small-budget rule.
    settings = Settings(max_experiments=400, seed=3, deterministic=True, error_policy="worst",
                        lookahead=False, race_used_up=True, budget_rule="racer")
    test, winner = make_test("t-test")
    tuner = Tuner(space, runner, train, settings, test, journal_dir=str(tmp_path / "journal"),
                  winner=winner,
                  sampler=OptunaSampler(space, sampler=optuna.samplers.RandomSampler(seed=7)))
    direct = tuner.run()

    assert len(direct.races) == len(res.races) == res.n_iterations >= 3
    params = {t.number: t.params for t in res.study.trials}
    for (_it, race, candidates), ours in zip(direct.races, res.races):
        assert [c.values for c in candidates] == [params[n] for n in ours.candidates]
        assert [c.values for c in race.survivors] == [params[n] for n in ours.survivors]
        np.testing.assert_array_equal(race.scores, ours.scores)  # same instances, same order
    assert [e.values for e in direct.elites] == res.elites
    assert direct.experiments == res.n_evaluations <= 400


@pytest.mark.parametrize("make_sampler,exact", [
    (lambda: optuna.samplers.TPESampler(seed=2), False),
    # QMC's proposals depend on the study only (its position is a study attribute): the
    # resumed run ends exactly as an uninterrupted one.
    (lambda: optuna.samplers.QMCSampler(seed=2, warn_independent_sampling=False), True),
], ids=["tpe", "qmc"])
@pytest.mark.slow
def test_a_resumed_run_replays_the_interrupted_one(tmp_path, make_sampler, exact):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    evaluate, instances, calls = _problem()
    options = dict(budget=400, random_state=0, progress=False)
    whole = IteratedRace(evaluate, SPACE, instances, sampler=make_sampler(), **options).run()
    n_whole = len(calls)
    crash_at = n_whole // 2
    races_before = next(k for k, r in enumerate(whole.races)
                        if sum(x.n_evaluations for x in whole.races[:k + 1]) > crash_at)

    class Crash(BaseException):
        pass

    def crashing(params, instance):
        if len(calls) - n_whole == crash_at:
            raise Crash
        return evaluate(params, instance)

    storage = JournalStorage(JournalFileBackend(str(tmp_path / "race.log")))
    with pytest.raises(Crash):
        IteratedRace(crashing, SPACE, instances, storage=storage, study_name="s",
                     sampler=make_sampler(), **options).run()
    resumed = IteratedRace(evaluate, SPACE, instances, storage=storage, study_name="s",
                           sampler=make_sampler(), **options).run()
    second = calls[n_whole:]
    assert len(set(second)) == len(second)  # nothing recorded is evaluated again
    assert resumed.n_evaluations == len(second) <= 400
    # The races the interrupted run finished are replayed as they ran: same trials, same
    # survivors (the elites the interrupted run had), and no evaluation.
    for ours, theirs in zip(resumed.races[:races_before], whole.races[:races_before]):
        assert ours.candidates == theirs.candidates and ours.survivors == theirs.survivors
        np.testing.assert_array_equal(ours.scores, theirs.scores)
    if exact:
        assert resumed.elites == whole.elites
        assert resumed.n_evaluations == whole.n_evaluations
    assert all(t.state != TrialState.RUNNING for t in resumed.study.trials)
    assert resumed.study.best_trial.params == resumed.best_params


@pytest.mark.slow
def test_a_used_up_space_races_its_elites_on_every_instance():
    # Four configurations: the space is used up in the first iteration. The shared Tuner then
    # races the elites on the instances they have not seen (race_used_up), down to one,
    # instead of stopping with elites compared on the first race's few instances.
    rng = np.random.default_rng(4)
    offsets = {"a": 0.0, "b": 0.1, "c": 0.25, "d": 0.5}
    noise = rng.normal(0.0, 0.3, size=(4, 40))

    def evaluate(params, instance):
        k = params["k"]
        return offsets[k] + noise["abcd".index(k), instance]

    res = IteratedRace(evaluate, {"k": CategoricalDistribution(list(offsets))},
                       list(range(40)), budget=160, random_state=0, progress=False).run()
    assert res.n_iterations >= 2 and res.n_evaluations <= 160
    truth = {k: offsets[k] + noise["abcd".index(k)].mean() for k in offsets}
    assert res.best_n_instances > res.races[0].n_instances + 5
    assert len(res.races[-1].survivors) == 1 or res.best_n_instances == 40
    assert res.best["k"] == min(truth, key=truth.get)


@pytest.mark.slow
def test_a_used_up_space_revives_survivors_that_were_not_kept_as_elites():
    # Survivors of a race beyond the elites' count were never eliminated, only not kept. Once
    # the space is used up, they race again with the elites (race_used_up): a configuration
    # alive at the end of an earlier race but not among its elites is raced later.
    rng = np.random.default_rng(6)
    levels = [f"v{k}" for k in range(8)]
    offsets = np.linspace(0.0, 0.35, 8)
    noise = rng.normal(0.0, 0.3, size=(8, 40))

    def evaluate(params, instance):
        k = levels.index(params["k"])
        return offsets[k] + noise[k, instance]

    res = IteratedRace(evaluate, {"k": CategoricalDistribution(levels)}, list(range(40)),
                       budget=300, min_survivors=2, random_state=0, progress=False).run()
    revived = set()
    for before, after in zip(res.races, res.races[1:]):
        not_kept = set(before.survivors[2:])
        revived |= not_kept & set(after.candidates) - set(before.survivors[:2])
    assert revived
    assert res.n_evaluations <= 300


def test_n_elites_is_the_former_name_of_min_survivors():
    # racer's one name for the elites kept is min_survivors (docs/conventions.md); the former
    # name still works, with a FutureWarning, and means the same.
    evaluate, instances, _ = _problem(12)
    settings = dict(budget=150, random_state=0, progress=False)
    one = IteratedRace(evaluate, SPACE, instances, min_survivors=1, **settings).run()
    new = IteratedRace(evaluate, SPACE, instances, min_survivors=3, **settings).run()
    with pytest.warns(FutureWarning, match="`n_elites` is renamed `min_survivors`"):
        driver = IteratedRace(evaluate, SPACE, instances, n_elites=3, **settings)
    old = driver.run()
    assert one.n_evaluations != new.n_evaluations  # the setting reaches the tuner
    assert old.elite_trial_numbers == new.elite_trial_numbers
    assert old.n_evaluations == new.n_evaluations
    with pytest.raises(TypeError, match="give `min_survivors` only"):
        IteratedRace(evaluate, SPACE, instances, n_elites=3, min_survivors=2, **settings)
    # best_params stays as Optuna's name of the answer.
    assert new.best_params == new.best == new.elites[0]
    assert "best=" in repr(new)


def _failing(flaky):
    """A problem whose configurations with x > 150 fail on instance 3 while ``flaky[0]``."""
    evaluate, instances, calls = _problem(12)

    def failing(params, instance):
        if params["x"] > 150 and instance == 3 and flaky[0]:
            raise ValueError(f"x={params['x']} fails on 3")
        return evaluate(params, instance)

    return failing, instances, calls


@pytest.mark.parametrize("on_error", ["worst", "eliminate"])
def test_on_error_worst_ranks_a_failure_last_and_eliminate_drops_its_trial(on_error):
    failing, instances, _ = _failing([True])
    raised = []

    def counted(params, instance):
        try:
            return failing(params, instance)
        except ValueError:
            raised.append(params["x"])
            raise

    res = IteratedRace(counted, SPACE, instances, budget=200, random_state=0, progress=False,
                       on_error=on_error).run()
    assert raised  # some configuration failed on instance 3
    dropped = [h.candidate for race in res.races for h in race.history if h.reason == "failed"]
    if on_error == "eliminate":
        assert dropped and all(res.study.trials[n].params["x"] > 150 for n in dropped)
    else:
        assert not dropped
    assert res.n_evaluations <= 200 and res.best["x"] <= 150


def test_on_error_raise_stops_naming_the_trial_and_a_rerun_resumes():
    flaky = [True]
    failing, instances, calls = _failing(flaky)

    def qmc():
        return optuna.samplers.QMCSampler(seed=2, warn_independent_sampling=False)

    settings = dict(budget=200, random_state=0, progress=False, on_error="raise")
    study = optuna.create_study(sampler=qmc())
    with pytest.raises(racer.EvaluationError, match=r"instances\[3\]\) failed(.|\n)*fails on 3"):
        IteratedRace(failing, SPACE, instances, study=study, **settings).run()
    first = list(calls)
    stored = {(tuple(sorted(t.params.items())), int(k)) for t in study.trials
              for k in t.user_attrs.get(SCORES_ATTR, {})}
    assert stored and stored <= set(first)
    # The failure is not stored: once evaluate works, the same driver on the same study
    # resumes, evaluates nothing stored again, and ends as a run that never failed.
    flaky[0] = False
    resumed = IteratedRace(failing, SPACE, instances, study=study, **settings).run()
    second = calls[len(first):]
    assert not stored & set(second)
    del calls[:]
    whole = IteratedRace(failing, SPACE, instances, study=optuna.create_study(sampler=qmc()),
                         **settings).run()
    assert set(first) | set(second) == set(calls)
    assert resumed.elites == whole.elites and resumed.best == whole.best


def test_on_error_takes_racers_three_values():
    evaluate, instances, _ = _problem(5)
    with pytest.raises(ValueError, match="`on_error` must be one of 'raise', 'eliminate', "
                                         "'worst'; got 'stop'"):
        IteratedRace(evaluate, SPACE, instances, budget=100, on_error="stop")
