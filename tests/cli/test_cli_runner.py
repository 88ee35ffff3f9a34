"""The target-runner protocol as irace defines it: argv, the last line of stdout, failures,
retries and a timeout that kills the runner's whole process group."""

import os
import sys
import textwrap
import time

import pytest

from racer.tuning.instances import Instance
from racer.cli.target_runner import TargetRunner, TargetRunnerError, build_command

from _helpers import ROOT
from _helpers.processes import alive


def script(tmp_path, body, name="runner.py"):
    """An executable Python runner whose #! is this interpreter (no pyenv shim)."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport os, sys, time\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


@pytest.mark.slow
def test_argv_is_irace_order_without_a_shell(tmp_path):
    runner_path = script(tmp_path, """
        import json
        json.dump(sys.argv[1:], open("argv.json", "w"))
        print("some log line")
        print("12.5 0.25")
        print()
        """)
    runner = TargetRunner([runner_path], str(tmp_path))
    inst = Instance("dir/inst 1.tsp", ("--opt", "5"))
    res = runner.run(7, 3, 123, inst, ["--alpha", "0.5", "--name=$HOME;x"])
    assert (res.status, res.cost, res.time) == ("ok", 12.5, 0.25)
    import json
    argv = json.loads((tmp_path / "argv.json").read_text())
    # No shell: a space inside the instance name and $HOME;x reach the runner verbatim.
    assert argv == ["7", "3", "123", "dir/inst 1.tsp", "--opt", "5", "--alpha", "0.5", "--name=$HOME;x"]


@pytest.mark.parametrize("body, status, fragment", [
    ('print("Inf")', "inf", "rejected"),
    ('print("nan")', "error", "returned the cost 'nan'"),
    ('print("-Inf")', "error", "returned the cost '-Inf'"),
    ('print("cost: 3")', "error", "last line of stdout is 'cost: 3'"),
    ('print("1 2 3")', "error", "expected `cost` or `cost time`"),
    ('pass', "error", "printed nothing on stdout"),
    ('print("1.0"); print("boom", file=sys.stderr); sys.exit(4)', "error", "exited with status 4"),
])
@pytest.mark.slow
def test_outcomes(tmp_path, body, status, fragment):
    runner = TargetRunner([script(tmp_path, body)], str(tmp_path))
    res = runner.run(1, 1, 1, Instance("i"), [])
    assert res.status == status
    assert fragment in res.message


@pytest.mark.slow
def test_error_report_shows_command_status_and_output_tails(tmp_path):
    path = script(tmp_path, """
        for i in range(30):
            print(f"out line {i}")
        print("Traceback: solver exploded", file=sys.stderr)
        sys.exit(2)
        """)
    runner = TargetRunner([path], str(tmp_path))
    res = runner.run(4, 2, 99, Instance("x.tsp"), ["--a", "1"])
    err = TargetRunnerError(res, str(tmp_path))
    text = str(err)
    assert f"{path} 4 2 99 x.tsp --a 1" in text
    assert "exit status: 2" in text
    assert "out line 29" in text and "out line 19" not in text  # the last 10 lines only
    assert "Traceback: solver exploded" in text


@pytest.mark.slow
def test_retries_then_success(tmp_path):
    path = script(tmp_path, """
        n = int(open("count").read()) if os.path.exists("count") else 0
        open("count", "w").write(str(n + 1))
        if n < 2:
            sys.exit(1)
        print(5)
        """)
    res = TargetRunner([path], str(tmp_path), retries=2).run(1, 1, 1, Instance("i"), [])
    assert (res.status, res.cost, res.attempts) == ("ok", 5.0, 3)
    (tmp_path / "count").unlink()
    res = TargetRunner([path], str(tmp_path), retries=1).run(1, 1, 1, Instance("i"), [])
    assert (res.status, res.attempts) == ("error", 2)


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path):
    path = script(tmp_path, """
        import subprocess
        child = subprocess.Popen(["sleep", "30"])
        open("child.pid", "w").write(str(child.pid))
        sys.stdout.write("0.5\\n"); sys.stdout.flush()
        time.sleep(30)
        """)
    runner = TargetRunner([path], str(tmp_path), timeout=1.0)
    res = runner.run(1, 1, 1, Instance("i"), [])
    assert res.status == "error" and "timed out after 1 s" in res.message
    assert res.stdout.strip() == "0.5"  # output so far is kept for the report
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


@pytest.mark.slow
def test_not_executable_and_launcher(tmp_path):
    path = tmp_path / "plain.py"
    path.write_text("print(3)\n")
    res = TargetRunner([str(path)], str(tmp_path)).run(1, 1, 1, Instance("i"), [])
    assert res.status == "error" and "chmod +x" in res.message
    cmd = build_command(str(path), sys.executable, "{targetRunner} {targetRunnerArgs}")
    assert cmd == [sys.executable, str(path)]
    assert TargetRunner(cmd, str(tmp_path)).run(1, 1, 1, Instance("i"), []).cost == 3.0
    with pytest.raises(ValueError, match="must end with"):
        build_command(str(path), sys.executable, "{targetRunnerArgs} {targetRunner}")


def test_input_validation():
    with pytest.raises(TypeError, match="command"):
        TargetRunner([], ".")
    with pytest.raises(ValueError, match="retries"):
        TargetRunner(["x"], ".", retries=-1)
    with pytest.raises(ValueError, match="timeout"):
        TargetRunner(["x"], ".", timeout=0)


PARENT = """
import sys
from racer.tuning.instances import Instance
from racer.cli.target_runner import Reaper, TargetRunner

runner = TargetRunner([sys.argv[1]], sys.argv[2], reaper=Reaper())
runner.run(1, 1, 1, Instance("i"), [])
"""


@pytest.mark.slow
def test_runners_die_with_a_killed_racer(tmp_path):
    import signal
    import subprocess

    path = script(tmp_path, """
        import subprocess
        child = subprocess.Popen(["sleep", "60"])
        open("pids.tmp", "w").write(f"{os.getpid()} {child.pid}")
        os.rename("pids.tmp", "pids")
        time.sleep(60)
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, path, str(tmp_path)], env=env,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "pids").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        # kill -9 racer's whole process group: the runner's own session is not in it.
        os.killpg(parent.pid, signal.SIGKILL)
    finally:
        parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids)
