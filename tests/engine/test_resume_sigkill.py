"""Proof that a journaled race survives SIGKILL: kill it several times at random points,
resume, and end exactly where an uninterrupted race with the same seed ends."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from racer.storage import JournalInUseError, read_journal

from _helpers.processes import job_script

pytestmark = [pytest.mark.slow,  # worker processes, subprocesses: `pytest -m "not slow"` skips them
              pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")]

SCRIPT = textwrap.dedent(
    '''
    import json, math, sys, time
    import numpy as np
    from racer import Elimination, Race, RacingTest

    class CoinDrop(RacingTest):
        """Worst mean leaves when the step's rng agrees: decisions use the rng stream."""
        def decide(self, view, rng):
            scores, ids = view.scores, view.ids
            means = scores.mean(axis=0)
            worst, best = int(np.argmin(means)), int(np.argmax(means))
            u = float(rng.random())
            return [Elimination(worst, "dominated", best, u)] if worst != best and u < 0.5 else []
        def get_params(self):
            return {"p": 0.5}

    CALL_LOG = None
    HANG_AT = None  # (candidate, instance) where evaluate blocks, to hold the journal

    def evaluate(candidate, instance):
        if HANG_AT == (candidate, instance):
            time.sleep(600)
        if CALL_LOG is not None:
            with open(CALL_LOG, "a") as fh:
                fh.write(f"{candidate},{instance}\\n")
            time.sleep(0.004)
        return candidate * 0.05 + math.sin(2.3 * instance + candidate)

    def make_race(storage=None):
        return Race(list(range(10)), test=CoinDrop(), first_test=3, max_instances=40,
                    random_state=2024, storage=storage)

    def summarise(res):
        return {
            "history": [[h.candidate_index, h.n_instances, h.reason, h.by_index, h.probability]
                        for h in res.history],
            "scores": np.nan_to_num(res.scores, nan=-999.0).tolist(),
            "best": res.best, "n_evaluations": res.n_evaluations,
        }

    if __name__ == "__main__":
        storage, out, CALL_LOG = sys.argv[1:4]
        if len(sys.argv) > 4:
            HANG_AT = tuple(int(x) for x in sys.argv[4].split(","))
        res = make_race(storage).run(evaluate, range(1000), progress=False)
        with open(out, "w") as fh:
            json.dump(summarise(res), fh)
    '''
)


def journal_count(path):
    if not os.path.exists(path):
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
        try:
            return conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:  # the child may not have created the tables yet
        return 0


def test_sigkill_at_random_points_then_resume_matches_uninterrupted(tmp_path):
    script, job = _load_job(tmp_path)
    expected = job.summarise(job.make_race().run(job.evaluate, range(1000), progress=False))

    storage, out, log = tmp_path / "race.sqlite", tmp_path / "out.json", tmp_path / "calls.log"
    cmd = [sys.executable, str(script), str(storage), str(out), str(log)]
    rng = np.random.default_rng(0)
    kills, runs, last, refused = 0, 0, 0, 0
    while not out.exists():
        runs += 1
        assert runs < 20, "the race never finished"
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
        if kills < 4:
            # Kill at a random point after the child has journaled something new, so each kill
            # lands mid-race rather than during interpreter start-up.
            deadline = time.monotonic() + 20
            while journal_count(storage) <= last and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if proc.poll() is None:
                # A second writer, here in the test's process, is refused while the child lives.
                try:
                    job.make_race(str(storage)).close()
                except JournalInUseError as exc:
                    assert f"{str(storage)!r} is in use: another race" in str(exc)
                    assert f"pid {proc.pid} " in str(exc)
                    refused += 1
                else:
                    assert proc.poll() is not None  # only possible if the child had finished
            time.sleep(float(rng.uniform(0.0, 0.15)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            proc.stderr.close()
            last = journal_count(storage)
        else:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()
    assert kills >= 3  # the race really was interrupted several times
    assert refused >= 3  # and a second writer was refused while it ran

    with open(out) as fh:
        got = json.load(fh)
    assert got == expected  # same decisions, probabilities, scores and cost

    # Nothing journaled was evaluated again: a kill can lose at most the one evaluation that
    # was running (serial execution), so calls exceed journaled evaluations by <= kills.
    calls = log.read_text().split()
    assert len(calls) - expected["n_evaluations"] <= kills
    assert len(set(calls)) == expected["n_evaluations"]


def _load_job(tmp_path):
    return job_script(tmp_path, "race_job", SCRIPT)


def test_a_second_process_is_refused_and_resumes_after_the_holder_is_killed(tmp_path):
    script, job = _load_job(tmp_path)
    order = []

    def evaluate(candidate, instance):
        order.append((candidate, instance))
        return job.evaluate(candidate, instance)

    expected = job.summarise(job.make_race().run(evaluate, range(1000), progress=False))
    n_before_hang = order.index((3, 1))
    storage, log = tmp_path / "race.sqlite", tmp_path / "calls.log"
    out1, out2, out3 = (tmp_path / f"out{k}.json" for k in (1, 2, 3))

    # The holder hangs in evaluate at candidate 3 of instance 1: it has journaled the
    # evaluations before that one and holds the journal's lock.
    holder = subprocess.Popen([sys.executable, str(script), str(storage), str(out1), str(log), "3,1"],
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while journal_count(storage) < n_before_hang and holder.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # the holder is blocked now; nothing more will be journaled
        assert holder.poll() is None and journal_count(storage) == n_before_hang
        before = read_journal(storage)

        second = subprocess.run([sys.executable, str(script), str(storage), str(out2), str(log)],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode != 0 and not out2.exists()
        assert "JournalInUseError" in second.stderr
        assert f"{str(storage)!r} is in use: another race holds its lock" in second.stderr
        assert f"pid {holder.pid} " in second.stderr
        assert read_journal(storage) == before  # the refused process wrote nothing
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    # SIGKILL released the lock: a new process resumes at once and ends like an uninterrupted race.
    third = subprocess.run([sys.executable, str(script), str(storage), str(out3), str(log)],
                           capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stderr
    with open(out3) as fh:
        assert json.load(fh) == expected
    calls = log.read_text().split()
    assert len(calls) == expected["n_evaluations"]  # the journaled ones were not redone
