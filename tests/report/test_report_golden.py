"""The report's pages are kept as they were: the pages of two races (irace's t-test with
failures under ``on_error="worst"``; the Pareto test on two objectives) and of a ``racer
--scenario`` execDir are compared with the pages stored in ``tests/report/golden/``.

What is compared is the page's text: the figures are cut out (their SVG depends on the
installed Matplotlib; tests/report/test_plot.py checks what they draw), and so are the paths
of the temporary folders and the time the page was read. Any other change to the words, the
tables or the numbers shows up here as a diff. When it is meant, regenerate the pages with

    RACER_REGENERATE_GOLDEN=1 pytest tests/report/test_report_golden.py

and read the diff of ``tests/report/golden/`` before committing it.
"""

import os
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from racer import Race, report  # noqa: E402
from racer.racing.pareto import ParetoTest  # noqa: E402
from racer.racing.trace import TRaceTest  # noqa: E402

from _helpers.races import NOISY_CANDIDATES, noisy_score  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
REGENERATE = os.environ.get("RACER_REGENERATE_GOLDEN") == "1"


def _text(page: str, folder) -> str:
    """The page without its figures, its temporary paths and its time of reading."""
    page = re.sub(r"<svg.*?</svg>", "<svg/>", page, flags=re.DOTALL)
    page = page.replace(os.path.abspath(str(folder)), "TMP").replace(str(folder), "TMP")
    page = re.sub(r"read \d{4}-\d\d-\d\d \d\d:\d\d UTC", "read NOW", page)
    # One tag a line: a diff then points at the row that changed.
    return page.replace("><", ">\n<")


def _check(name: str, page: str, folder) -> None:
    text = _text(page, folder)
    path = os.path.join(GOLDEN, name)
    if REGENERATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        pytest.skip(f"wrote {path}")
    with open(path, encoding="utf-8") as fh:
        expected = fh.read()
    assert text.splitlines() == expected.splitlines()


def _failing_score(c, inst):
    if c["id"] == 3 and inst % 4 == 1:
        raise RuntimeError("solver crashed")
    return noisy_score(c, inst)


def _two_objectives(c, inst):
    rng = np.random.default_rng([inst, c["id"]])
    penalty = 0.4 if c["id"] % 3 == 0 else 0.0
    return (c["mu"] + penalty + rng.normal(0, 0.05), 1.0 - c["mu"] + penalty + rng.normal(0, 0.05))


def test_the_page_of_a_t_race_with_failures_is_unchanged(tmp_path):
    candidates = [{"mu": float(m), "id": i} for i, m in enumerate(np.linspace(0.0, 1.0, 12))]
    path = str(tmp_path / "race.sqlite")
    Race(candidates, test=TRaceTest(), on_error="worst", random_state=0, storage=path,
         direction="maximize").run(_failing_score, range(40), progress=False)
    page = open(report.write_report(path, tmp_path / "r.html"), encoding="utf-8").read()
    _check("t-race.html", page, tmp_path)


def test_the_page_of_a_race_on_two_objectives_is_unchanged(tmp_path):
    path = str(tmp_path / "race.sqlite")
    Race(NOISY_CANDIDATES, direction=["minimize", "minimize"], random_state=0, storage=path,
         test=ParetoTest(min_instances=5, credibility=0.95),
         metadata={"objective_names": ["cost", "time"]}).run(_two_objectives, range(25),
                                                             progress=False)
    page = open(report.write_report(path, tmp_path / "r.html"), encoding="utf-8").read()
    _check("pareto-race.html", page, tmp_path)


@pytest.mark.slow  # a tuning through the command line, target-runner processes
def test_the_page_of_an_exec_dir_is_unchanged(tmp_path):
    from racer.cli import EXIT_OK, main

    from _helpers.cli import make_scenario

    scenario = make_scenario(tmp_path)
    assert main(["--scenario", scenario, "--quiet", "1"]) == EXIT_OK
    page = open(report.write_report(tmp_path / "arena", tmp_path / "r.html"),
                encoding="utf-8").read()
    _check("exec-dir.html", page, tmp_path)
