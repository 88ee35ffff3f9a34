"""Proof that a journaled race survives SIGKILL: kill it several times at random points,
resume, and end exactly where an uninterrupted race with the same seed ends."""

from __future__ import annotations

import importlib.util
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

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")

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

    def evaluate(candidate, instance):
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
    script = tmp_path / "race_job.py"
    script.write_text(SCRIPT)
    spec = importlib.util.spec_from_file_location("race_job", script)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    expected = job.summarise(job.make_race().run(job.evaluate, range(1000), progress=False))

    storage, out, log = tmp_path / "race.sqlite", tmp_path / "out.json", tmp_path / "calls.log"
    cmd = [sys.executable, str(script), str(storage), str(out), str(log)]
    rng = np.random.default_rng(0)
    kills, runs, last = 0, 0, 0
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
            time.sleep(float(rng.uniform(0.0, 0.15)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            last = journal_count(storage)
        else:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()
    assert kills >= 3  # the race really was interrupted several times

    with open(out) as fh:
        got = json.load(fh)
    assert got == expected  # same decisions, probabilities, scores and cost

    # Nothing journaled was evaluated again: a kill can lose at most the one evaluation that
    # was running (serial execution), so calls exceed journaled evaluations by <= kills.
    calls = log.read_text().split()
    assert len(calls) - expected["n_evaluations"] <= kills
    assert len(set(calls)) == expected["n_evaluations"]
