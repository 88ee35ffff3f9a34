"""Continuing a finished race with a larger budget (``Race``/``race`` on the same ``storage``),
and the refusals of a resume, which say first how to continue or start over, then what changed,
in the words of ``Race``'s arguments."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from racer.racing.frace import FRaceTest
from racer.racing.trace import TRaceTest

import racer
from racer import PosteriorBestTest, Race
from racer.storage import read_journal

CANDIDATES = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.3]


class Counting:
    """``evaluate`` that records every call (candidate, instance); noisy, so races take a while."""

    def __init__(self, stop_after=None):
        self.calls = []
        self.stop_after = stop_after

    def __call__(self, c, i):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt  # stands for a crash: nothing of this call is journaled
        self.calls.append((c, i))
        return c + np.random.default_rng([int(c * 100), i]).normal(0.0, 3.0)


def run(path, evaluate, *, budget, test=None, instances=range(300), **options):
    with Race(CANDIDATES, test=test or FRaceTest(), budget=budget, random_state=7,
              storage=path, **options) as r:
        return r.run(evaluate, instances, progress=False)


def same_race(a, b):
    assert a.best_index == b.best_index and a.n_evaluations == b.n_evaluations
    assert a.stop_reason == b.stop_reason and a.history == b.history
    np.testing.assert_array_equal(a.scores, b.scores)


@pytest.mark.parametrize("make_test", [FRaceTest, TRaceTest], ids=["frace", "trace"])
def test_a_larger_budget_continues_the_race_one_larger_race_would_have_run(tmp_path, make_test):
    # Tests whose decisions do not read the budget left: the continued race is, bit for bit,
    # the race one run with the larger budget makes, and pays only for what is new.
    path = tmp_path / "race.sqlite"
    first = Counting()
    small = run(path, first, budget=90, test=make_test())
    assert small.stop_reason == "budget" and len(first.calls) == small.n_evaluations
    more = Counting()
    continued = run(path, more, budget=260, test=make_test())
    assert set(more.calls).isdisjoint(first.calls)  # nothing evaluated twice
    assert len(more.calls) == continued.n_evaluations - small.n_evaluations > 0
    whole = Counting()
    same_race(continued, run(None, whole, budget=260, test=make_test()))
    assert sorted(first.calls + more.calls) == sorted(whole.calls)
    assert read_journal(path)["fingerprint"]["budget"] == 260
    # The same budget again: a plain resume, nothing to evaluate.
    again = Counting()
    same_race(run(path, again, budget=260, test=make_test()), continued)
    assert again.calls == []


def test_the_default_test_keeps_its_eliminations_and_goes_on(tmp_path):
    # PosteriorBestTest reads the budget left (its per-step level): a continued race keeps the
    # eliminations made under the smaller budget and decides the later steps under the larger.
    path = tmp_path / "race.sqlite"
    first = Counting()
    small = run(path, first, budget=150, test=PosteriorBestTest())
    assert small.stop_reason == "budget"
    more = Counting()
    continued = run(path, more, budget=300, test=PosteriorBestTest())
    assert continued.history[: len(small.history)] == small.history
    assert set(more.calls).isdisjoint(first.calls) and more.calls
    assert continued.n_evaluations == small.n_evaluations + len(more.calls)
    eliminated = {h.candidate_index for h in small.history}
    assert not eliminated & {c for c, _ in more.calls if CANDIDATES.index(c) in eliminated}


def test_an_interrupted_continuation_resumes_to_the_uninterrupted_one(tmp_path):
    paths = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    for path in paths:
        small = run(path, Counting(), budget=150, test=PosteriorBestTest())
    whole = run(paths[0], Counting(), budget=280, test=PosteriorBestTest())
    with pytest.raises(KeyboardInterrupt):
        run(paths[1], Counting(stop_after=50), budget=280, test=PosteriorBestTest())
    rest = Counting()
    same_race(run(paths[1], rest, budget=280, test=PosteriorBestTest()), whole)
    assert len(rest.calls) == whole.n_evaluations - small.n_evaluations - 50


def test_a_race_that_ended_with_one_survivor_has_nothing_to_continue(tmp_path):
    path = tmp_path / "race.sqlite"
    done = run(path, Counting(), budget=2000, test=TRaceTest())
    assert done.stop_reason == "min_survivors"
    calls = Counting()
    same_race(run(path, calls, budget=5000, test=TRaceTest()), done)
    assert calls.calls == []


def test_instances_exhausted_continues_only_with_more_instances(tmp_path):
    path = tmp_path / "race.sqlite"
    done = run(path, Counting(), budget=None, instances=range(8))
    assert done.stop_reason == "instances_exhausted"
    same = Counting()
    assert run(path, same, budget=5000, instances=range(8)).n_evaluations == done.n_evaluations
    assert same.calls == []
    more = Counting()
    longer = run(path, more, budget=None, instances=range(12))
    assert {i for _, i in more.calls} <= set(range(8, 12)) and more.calls
    same_race(longer, run(None, Counting(), budget=None, instances=range(12)))


def test_a_larger_max_instances_continues_and_a_smaller_one_than_raced_is_refused(tmp_path):
    path = tmp_path / "race.sqlite"
    done = run(path, Counting(), budget=None, max_instances=8)
    assert done.stop_reason == "max_instances"
    more = Counting()
    same_race(run(path, more, budget=None, max_instances=14),
              run(None, Counting(), budget=None, max_instances=14))
    assert {i for _, i in more.calls} <= set(range(8, 14))
    with pytest.raises(ValueError, match=r"^To continue the race journaled in `storage`=.*pass "
                                         r"max_instances >= 14 \(or max_instances=None\); to "
                                         r"start over, pass another `storage=` path"):
        run(path, Counting(), budget=None, max_instances=10)


def test_a_budget_below_what_was_spent_is_refused_in_plain_words(tmp_path):
    path = tmp_path / "race.sqlite"
    done = run(path, Counting(), budget=150)
    before = read_journal(path)
    with pytest.raises(ValueError) as err:
        run(path, Counting(), budget=100)
    message = str(err.value)
    assert message.startswith(f"To continue the race journaled in `storage`={str(path)!r}, pass "
                              f"budget >= {done.n_evaluations} (or budget=None); to start over, "
                              "pass another `storage=` path")
    assert f"It already spent {done.n_evaluations} evaluations (its budget was 150)" in message
    assert read_journal(path) == before  # refused before anything was written


def test_a_budget_that_cannot_pay_for_a_block_the_journal_began_is_refused(tmp_path):
    # Interrupted in the middle of a block: a budget at least what was spent but too small
    # for that block would leave journaled evaluations unused; it is refused, saying how much.
    path = tmp_path / "race.sqlite"
    with pytest.raises(KeyboardInterrupt):
        run(path, Counting(stop_after=7 * 5 + 3), budget=200)
    calls = Counting()
    with pytest.raises(ValueError, match=r"^To continue the race journaled in `storage`=.*pass "
                                         r"budget >= 42 \(or budget=None\).*cannot pay for the "
                                         r"block of 7 survivors x 1 instance\(s\)"):
        run(path, calls, budget=40)
    assert calls.calls == []
    rest = Counting()
    same_race(run(path, rest, budget=200), run(None, Counting(), budget=200))
    assert len(rest.calls) == run(None, Counting(), budget=200).n_evaluations - 38


# -------------------------------------------------------------------------- refusals

BASE = dict(test=FRaceTest(), first_test=5, budget=120, random_state=7)


@pytest.mark.parametrize("change, line", [
    (dict(random_state=8), "random_state: journal 7, now 8"),
    (dict(first_test=4), "first_test: journal 5, now 4"),
    (dict(each_test=2), "each_test: journal 1, now 2"),
    (dict(direction="maximize"),
     "direction: journal 'minimize', now 'maximize' (pass direction='minimize' to continue it)"),
    (dict(test=FRaceTest(alpha=0.1)), "test parameter alpha: journal 0.05, now 0.1"),
    (dict(test=TRaceTest()), "test: journal FRaceTest, now TRaceTest"),
    (dict(candidates=CANDIDATES[:-1]), "candidates: journal 7, now 6 (#6 is gone: 1.3)"),
    (dict(candidates=[*CANDIDATES[:2], 0.45, *CANDIDATES[3:]]),
     "candidates: 7 each (#2: journal 0.4, now 0.45)"),
    (dict(metadata={"data": "v2"}), "metadata['data']: journal has none, now 'v2'"),
    (dict(on_error="eliminate"), "on_error: journal worst, now eliminate"),
])
def test_each_refusal_says_how_to_start_over_first_then_old_and_new_value(tmp_path, change, line):
    path = tmp_path / "race.sqlite"
    racer.race(Counting(), CANDIDATES, range(100), storage=path, progress=False, **BASE)
    options = {**BASE, **change}
    cands = options.pop("candidates", CANDIDATES)
    with pytest.raises(ValueError) as err:
        racer.race(Counting(), cands, range(100), storage=path, progress=False, **options)
    message = str(err.value)
    head, _, changes = message.partition("\n")
    assert head == (f"`storage`={str(path)!r} holds a race with other settings. To start over, "
                    f"pass another `storage=` path (or delete {str(path)!r}); to continue the "
                    "journaled race, pass the settings it was started with:")
    assert changes.splitlines() == [f"  {line}"]


def test_a_generator_random_state_is_named_not_its_seed(tmp_path):
    path = tmp_path / "race.sqlite"
    options = {**BASE, "random_state": np.random.default_rng(1)}
    racer.race(Counting(), CANDIDATES, range(100), storage=path, progress=False, **options)
    options["random_state"] = np.random.default_rng(2)
    with pytest.raises(ValueError, match=r"\n  random_state: it gives another seed than the "
                                         r"journal's race \(pass random_state=None to take the "
                                         r"journal's seed\)$"):
        racer.race(Counting(), CANDIDATES, range(100), storage=path, progress=False, **options)


def test_other_instances_are_refused_naming_the_first_that_differs(tmp_path):
    path = tmp_path / "race.sqlite"
    racer.race(Counting(), CANDIDATES, range(100), storage=path, progress=False, **BASE)
    with pytest.raises(ValueError) as err:
        racer.race(Counting(), CANDIDATES, [0, 1, 2, 30, *range(4, 100)], storage=path,
                   progress=False, **BASE)
    assert str(err.value).splitlines() == [
        (f"`storage`={str(path)!r} holds a race on other instances. To start over, pass another "
         f"`storage=` path (or delete {str(path)!r}); to continue the journaled race, pass the "
         "instances it raced, in the same order:"),
        "  instance #3: journal 3, now 30",
    ]


def test_long_values_are_cut_around_their_first_difference(tmp_path):
    path = tmp_path / "race.sqlite"
    long = {"space": "x" * 200 + "(-5, 5)" + "y" * 100}
    racer.race(Counting(), CANDIDATES, range(100), storage=path, progress=False,
               metadata=long, **BASE)
    changed = {"space": "x" * 200 + "(-5, 9)" + "y" * 100}
    with pytest.raises(ValueError) as err:
        racer.race(Counting(), CANDIDATES, range(100), storage=path, progress=False,
                   metadata=changed, **BASE)
    line = str(err.value).splitlines()[-1]
    # 10 characters before the first difference (the second 5), 40 in all.
    assert line == ("  metadata['space']: journal ...xxxxx(-5, 5)" + "y" * 28 + "..., "
                    "now ...xxxxx(-5, 9)" + "y" * 28 + "...")


@pytest.mark.slow
def test_an_iterated_race_continues_on_its_study_with_a_larger_budget():
    # IteratedRace rebuilds its state from the study (scores, elites, iteration), so running it
    # again on the same study with a larger budget goes on from its last iteration.
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution
    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    calls = []

    def evaluate(params, instance):
        calls.append((params["x"], instance))
        return (params["x"] - 1.0) ** 2 + 0.1 * instance

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    options = dict(search_space={"x": FloatDistribution(-5, 5)}, instances=list(range(20)),
                   study=study, random_state=0, progress=False)
    first = IteratedRace(evaluate, budget=150, **options).run()
    n_first = len(calls)
    more = IteratedRace(evaluate, budget=400, **options).run()
    assert n_first == first.n_evaluations < more.n_evaluations <= 400
    assert len(calls) == more.n_evaluations and len(set(calls)) == len(calls)


CONTINUE_JOB = '''
import json, sys, time
import numpy as np
from racer import PosteriorBestTest, Race

def evaluate(c, i):
    with open(sys.argv[4], "a") as fh:
        fh.write(f"{c},{i}\\n")
    time.sleep(0.004)
    return c + np.random.default_rng([int(c * 100), i]).normal(0.0, 3.0)

res = Race(CANDIDATES, test=PosteriorBestTest(), budget=int(sys.argv[2]), random_state=7,
           storage=sys.argv[1]).run(evaluate, range(300), progress=False)
with open(sys.argv[3], "w") as fh:
    json.dump({"history": [[h.candidate_index, h.n_instances, h.probability] for h in res.history],
               "scores": np.nan_to_num(res.scores, nan=-999.0).tolist(),
               "n_evaluations": res.n_evaluations, "stop_reason": res.stop_reason}, fh)
'''.replace("CANDIDATES", repr(CANDIDATES))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_a_continuation_killed_with_sigkill_resumes_to_the_uninterrupted_one(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(CONTINUE_JOB)

    def job(storage, budget, out, log):
        return [sys.executable, str(script), str(storage), str(budget), str(out), str(log)]

    first = tmp_path / "first.sqlite"
    subprocess.run(job(first, 150, tmp_path / "small.json", tmp_path / "small.log"), check=True)
    small = json.loads((tmp_path / "small.json").read_text())
    ref, killed = tmp_path / "ref.sqlite", tmp_path / "killed.sqlite"
    shutil.copy(first, ref)
    shutil.copy(first, killed)
    subprocess.run(job(ref, 320, tmp_path / "ref.json", tmp_path / "ref.log"), check=True)
    log, out = tmp_path / "killed.log", tmp_path / "killed.json"
    kills = 0
    while not out.exists():
        proc = subprocess.Popen(job(killed, 320, out, log), stderr=subprocess.DEVNULL)
        if kills < 3:
            seen = len(log.read_text().split()) if log.exists() else 0
            deadline = time.monotonic() + 30
            while (proc.poll() is None and time.monotonic() < deadline
                   and (len(log.read_text().split()) if log.exists() else 0) < seen + 15):
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        proc.wait()
    assert kills == 3
    expected = json.loads((tmp_path / "ref.json").read_text())
    assert json.loads(out.read_text()) == expected
    calls = log.read_text().split()
    new = expected["n_evaluations"] - small["n_evaluations"]
    # Only the continuation's evaluations, each once, but for one in flight per kill.
    assert set(calls).isdisjoint((tmp_path / "small.log").read_text().split())
    assert len(set(calls)) == new and len(calls) <= new + kills
