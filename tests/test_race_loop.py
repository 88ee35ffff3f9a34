"""The one race loop (racer/race_loop.py): what drive() does for every front end."""

import concurrent.futures as cf

import pytest

from racer import Race
from racer.race_loop import InProcess, NotRun, OnExecutor, backend_for, drive
from racer.racing.base import KeepAll


def loss(c, i):
    return abs(c - 2) + 0.1 * i


def fresh(**options):
    return Race([1, 2, 3, 4], test=KeepAll(), first_test=2, instances=range(6), random_state=0,
                **options)


def test_a_thread_pool_and_in_process_give_the_same_race():
    here = fresh()
    assert drive(here, InProcess(loss)) is True
    with cf.ThreadPoolExecutor(3) as pool:
        there = fresh()
        assert drive(there, OnExecutor.of(pool, loss)) is True
    assert there.finished and here.finished
    assert (there.result().scores == here.result().scores).all()
    assert there.n_evaluations == here.n_evaluations == 24


def test_known_cells_are_told_without_running():
    ran = []

    def evaluate(c, i):
        ran.append((c, i))
        return loss(c, i)

    race = fresh()
    drive(race, InProcess(evaluate), known=lambda ev: (True, 0.0) if ev.candidate == 1 else None)
    assert race.n_evaluations == 24 and len(ran) == 18
    assert all(c != 1 for c, _ in ran)
    assert (race.result().scores[:, 0] == 0.0).all()


def test_before_runs_can_end_the_driving_before_a_block():
    blocks = []

    def can_pay(race, runs):
        blocks.append(len(runs))
        return len(blocks) < 3

    race = fresh()
    assert drive(race, InProcess(loss), before_runs=can_pay) is False
    assert blocks == [8, 4, 4]  # first_test=2 rows x 4, then one row per block
    assert not race.finished and race.n_evaluations == 12


def test_a_back_end_may_skip_an_evaluation_uncharged():
    class SkipsCandidateThree:
        def results(self, batch):
            for ev in batch:
                if ev.candidate == 3:
                    yield ev, False, NotRun("not run: skipped")
                else:
                    yield ev, True, loss(ev.candidate, ev.instance)

    race = fresh(budget=40, on_error="worst")
    drive(race, SkipsCandidateThree())
    assert race.n_evaluations == 24 and race.n_charged == 18
    assert {msg for _, _, msg in race.result().failures} == {"not run: skipped"}


def test_raise_errors_raises_what_evaluate_raised_and_closes_the_back_end():
    closed = []

    class Watched(InProcess):
        def results(self, batch):
            try:
                yield from super().results(batch)
            finally:
                closed.append(True)

    def evaluate(c, i):
        if c == 3 and i == 1:
            raise KeyError("three")
        return loss(c, i)

    with pytest.raises(KeyError, match="three"):
        drive(fresh(on_error="raise"), Watched(evaluate), raise_errors=True)
    assert closed == [True]
    # Without raise_errors the failure is told; on_error decides (here: eliminated).
    race = fresh(on_error="eliminate")
    drive(race, InProcess(evaluate))
    assert race.finished and 2 not in race.survivor_indices.tolist()


def test_backend_for_refuses_what_cannot_work_together():
    with pytest.raises(ValueError, match="either `executor` or `n_jobs`"):
        backend_for(loss, executor=cf.ThreadPoolExecutor(1), n_jobs=2)
    with pytest.raises(ValueError, match="`timeout`=1.0 cannot be combined with a user `executor`"):
        backend_for(loss, executor=cf.ThreadPoolExecutor(1), timeout=1.0)
    backend, close = backend_for(loss, executor=cf.ThreadPoolExecutor(1))
    assert isinstance(backend, OnExecutor)
    close()
