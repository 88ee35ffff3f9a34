"""racer.progress: a bar on a terminal, a few lines in logs."""


from racer import Race
from racer.racing.base import KeepAll, RacingTest
from racer.progress import ProgressLine

from _helpers.terminal import Stream


def _drive(race, stream, max_blocks=200):
    """Run ``race`` (candidate c scores c) with a ProgressLine on ``stream``; return what it wrote."""
    bar = ProgressLine(race, stream=stream)
    for _ in range(max_blocks):
        batch = race.ask()
        if not batch:
            break
        for ev in batch:
            race.tell(ev, float(ev.candidate))
            bar.update()
    bar.close()
    return stream.getvalue()


def _run(stream, **options):
    race = Race([0, 1, 2], test=KeepAll(), first_test=2, random_state=0, **options)
    return race, _drive(race, stream)


def test_log_gets_quarter_lines_and_a_final_line():
    race, text = _run(Stream(tty=False), instances=range(40))
    lines = text.splitlines()
    # 25%, 50%, 75% and the final line: quiet whatever the race's length.
    assert len(lines) == 4
    assert [line.split("| ")[1].split("%")[0].strip() for line in lines[:3]] == ["25", "50", "75"]
    assert "100% of instances" in lines[-1] and "done: instances_exhausted" in lines[-1]
    assert "\r" not in text
    assert f"{race.n_evaluations} evaluations" in lines[-1]


def test_log_without_a_known_total_gets_the_final_line_only():
    def endless():
        i = 0
        while True:
            yield i
            i += 1

    race = Race([0, 1], test=KeepAll(), first_test=2, random_state=0)
    race.add_instances(endless())
    stream = Stream(tty=False)
    bar = ProgressLine(race, stream=stream)
    for _ in range(10):
        for ev in race.ask():
            race.tell(ev, 1.0)
        bar.update()
    assert bar.fraction() is None
    assert stream.getvalue() == ""
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "|#" not in lines[0] and "evaluations" in lines[0]


def test_budget_drives_the_bar():
    race, text = _run(Stream(tty=False), instances=range(100), budget=30)
    assert race.stop_reason == "budget"
    lines = text.splitlines()
    assert f"{race.n_evaluations}/30 evaluations" in lines[-1]
    # Quarter lines measure the budget: the first one at 25% or more of 30 evaluations.
    first = int(lines[0].split("| ")[1].split("/")[0])
    assert len(lines) >= 2 and 7.5 <= first < 15


def test_terminal_gets_a_bar_redrawn_in_place():
    race, text = _run(Stream(tty=True), instances=range(12))
    assert text.startswith("\r[racer] |")
    assert text.endswith("\n") and text.count("\n") == 1  # one line, redrawn
    final = text.rsplit("\r", 1)[1]
    assert "|" + "#" * 24 + "| 100% of instances" in final and "done: instances_exhausted" in final


def test_an_early_stop_shows_what_was_used():
    from racer.racing.base import Elimination

    class DropWorst(RacingTest):
        def decide(self, view, rng):
            means = view.scores.mean(axis=0)
            return [Elimination(int(means.argmin()), "dominated", int(means.argmax()), 1.0)]

        def get_params(self):
            return {}

    race = Race([0, 1, 2], test=DropWorst(), first_test=2, instances=range(40), random_state=0)
    (line,) = _drive(race, Stream(tty=False), max_blocks=50).splitlines()  # stopped before 25%: the final line only
    assert race.stop_reason == "min_survivors" and race.n_instances == 3
    assert "|" + "#" * 2 + "-" * 22 + "| 8% of instances" in line  # 3 of 40 instances
    assert "done: min_survivors" in line
