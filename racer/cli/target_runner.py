"""Calling an irace target-runner: the protocol, failures, retries and timeouts.

The runner is executed directly (no shell) in ``execDir`` as

    target-runner <configID> <instanceID> <seed> <instance> [extra instance args] [<bound>] <switches>

(``<bound>``: the run's execution bound, given when the scenario sets ``boundMax``, as irace
does; :mod:`racer.tuning.capping`) with the switches built as irace does (switch and value concatenated, then split on blanks,
which is what the shell irace goes through does). Its **last non-empty line of stdout** must be
``cost`` or ``cost time``; with k >= 2 objectives (the racer option ``objectives``), k
numbers, one per objective, then optionally (under ``maxTime``: necessarily) the time.
Outcomes:

* ``ok``: exit status 0 and a finite cost (and a time when one is required);
* ``inf``: the cost is ``Inf`` -- irace rejects the configuration at once; racer does the same
  (several objectives: ``Inf`` on a minimised objective or ``-Inf`` on a maximised one);
* ``error``: a non-zero exit status, no or unreadable output, ``NaN``/``-Inf``, a missing
  time, a runner that cannot be started, or a timeout. Errors are retried
  ``targetRunnerRetries`` times; what a final error does is the caller's policy.

A timeout (``targetRunnerTimeout`` seconds) kills the runner's whole process group (each run
starts a new session), so a runner's children (the solver it launched) die with it. Because
runs live in their own sessions, killing racer (even ``kill -9``, even its whole process group)
does not reach them; a :class:`Reaper` -- a small watchdog process in a session of its own
that knows the running groups -- kills them when racer's end of its pipe closes, however
racer died. On Linux it also kills every process whose environment carries its token
(``RACER_REAPER_TOKEN``, which every run gets, also a run shipped to a Dask or Ray worker
on this machine): a runner started but not yet registered when racer died, and runners of
worker processes that outlive racer.

>>> import sys, tempfile
>>> d = tempfile.mkdtemp()
>>> runner = TargetRunner([sys.executable, "-c", "import sys; print(len(sys.argv))"], d)
>>> r = runner.run(1, 1, 7, Instance("i.txt"), ["--a", "1"])
>>> r.status, r.cost
('ok', 7.0)
"""

from __future__ import annotations

import dataclasses
import math
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

from racer.cli.scenario import DEFAULT_CMDLINE
from racer.tuning.capping import format_bound
from racer.tuning.objectives import infinite_objectives
from racer.tuning.instances import Instance
from racer.tuning.runner import RunResult, Runner, TargetRunnerError, death_cause

__all__ = ["RunResult", "Runner", "TargetRunner", "TargetRunnerError", "Reaper", "build_command",
           "runner_command", "expand_cmdline", "DEFAULT_CMDLINE"]

# The message of a run stopped by ``TargetRunner.kill_run`` (a look-ahead run no longer needed).
_STOPPED = "stopped: the run was no longer needed (look-ahead)"
# Longest single wait for a runner (see TargetRunner._communicate).
_WAIT_SLICE = 1.0


_WATCHDOG = r"""
import os, signal, sys, time
token = sys.argv[1].encode()
groups = set()
clean = False
for line in sys.stdin:
    op, _, pid = line.strip().partition(" ")
    if op == "+":
        groups.add(int(pid))
    elif op == "-":
        groups.discard(int(pid))
    elif op == "=":
        clean = True  # Reaper.close(): racer is not dying in the middle of starting a run


def tagged():
    # Processes started with our token (Linux: /proc); the runners' groups go with them.
    found = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as f:
                if token in f.read().split(b"\0"):
                    found.add(int(name))
        except OSError:
            pass
    return found


# EOF: racer closed the pipe or died. Whatever still runs goes. A runner whose start racer
# did not live to register is found by its token; it may still be between fork and exec
# (its environment not yet its own) at a look, and on a loaded machine it can stay there for
# a while: unless racer closed the pipe itself, look again until the looks of a whole second
# find nothing tagged (at most about 5 s; two looks 0.5 s apart can let a runner escape under
# load).
quiet = 0
for _ in range(25):
    pids = tagged()
    for pid in pids:
        try:
            pgid = os.getpgid(pid)
        except OSError:
            continue
        if pgid in pids:
            groups.add(pgid)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if clean:
        break
    quiet = 0 if pids else quiet + 1
    if quiet >= 5:
        break
    time.sleep(0.2)
"""

TOKEN_VARIABLE = "RACER_REAPER_TOKEN"


class Reaper:
    """A watchdog process that kills the registered process groups when this process's end of
    its pipe closes (normal exit, exception, ``kill -9``). Runs in a session of its own, so a
    signal to racer's process group does not kill it first."""

    def __init__(self) -> None:
        # Unique to this watchdog: the runs it guards carry it in their environment.
        self.token = f"{TOKEN_VARIABLE}={uuid.uuid4().hex}"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, self.token], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, text=True, bufsize=1)
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except (OSError, ValueError):  # the watchdog is gone: nothing to tell
                pass

    def add(self, pgid: int) -> None:
        self._send(f"+ {pgid}\n")

    def remove(self, pgid: int) -> None:
        self._send(f"- {pgid}\n")

    def close(self) -> None:
        self._send("=\n")
        with self._lock:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self._proc.kill()


def _parse_number(word: str) -> float | None:
    w = word.strip()
    if w in ("Inf", "inf", "+Inf", "+inf"):
        return math.inf
    try:
        x = float(w)
    except ValueError:
        return None
    return x


def _start_failure(exc: OSError) -> str:
    """Why the target-runner could not be started, with what to check."""
    hint = ""
    if isinstance(exc, PermissionError):
        hint = " (is it executable? chmod +x it, or set targetRunnerLauncher)"
    elif isinstance(exc, FileNotFoundError):
        hint = " (check targetRunner and its #! line)"
    return f"cannot start the target-runner: {exc}{hint}"


class TargetRunner:
    """Runs ``command`` (a list of words: the runner, or launcher words then the runner) with
    irace's arguments appended.

    Parameters
    ----------
    command : list of str
        The executable and any fixed leading arguments.
    exec_dir : str
        Working directory of every run.
    retries : int
        Extra attempts after a failed run (``targetRunnerRetries``).
    timeout : float or None
        Seconds before the run's process group is killed (``targetRunnerTimeout``).
    need_time : bool or str
        Whether the output must give a time (``maxTime`` budgets, ``capping``); a str names
        the option that needs it in the error message (default "maxTime").
    reaper : Reaper, optional
        Told about every running process group, so none outlives this process.
    objectives : racer.tuning.objectives.Objectives, optional
        A tuning on several objectives: the runner prints one number per objective (then
        the time). None: one cost.
    cmdline : str or None
        irace 4's ``targetCmdline``: the template of the arguments after ``command``
        (:func:`expand_cmdline`; ``{targetRunner}`` already replaced, see
        :func:`runner_command`). None: irace's fixed order (module docstring).
    """

    def __init__(self, command: list, exec_dir: str, *, retries: int = 0,
                 timeout: float | None = None, need_time: bool | str = False,
                 reaper: Reaper | None = None, objectives: Any = None,
                 cmdline: str | None = None) -> None:
        if not command or not all(isinstance(w, str) for w in command):
            raise TypeError(f"`command` must be a non-empty list of str; got {command!r}")
        if retries < 0:
            raise ValueError(f"`retries` must be >= 0; got {retries}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"`timeout` must be positive or None; got {timeout}")
        if cmdline is not None and not isinstance(cmdline, str):
            raise TypeError(f"`cmdline` must be a str or None; got {cmdline!r}")
        self.command = list(command)
        # Split once: a template word is expanded alone, so no value is ever split again.
        self.cmdline = None if cmdline is None else shlex.split(cmdline)
        self.exec_dir = exec_dir
        self.retries = retries
        self.timeout = timeout
        self.need_time = need_time
        self.reaper = reaper
        self.objectives = objectives
        # Travels with the runner to Dask/Ray workers (the reaper does not): a run started
        # there carries it too, so racer's reaper finds it on this machine (see Reaper).
        self.reaper_token = reaper.token if reaper is not None else None
        self._live: dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._closing = False
        # Runs started with a ``tag`` (the tuner's look-ahead runs), by tag: the process group
        # running it, so that ``kill_run(tag)`` stops that one run; tags asked to stop.
        self._tagged: dict = {}
        self._stopped_tags: set = set()

    def __getstate__(self) -> dict:
        # Shipped to another process (a Dask worker): the lock, the live processes and the
        # watchdog stay here; the worker's runs are its own.
        state = dict(self.__dict__)
        state.update(_live={}, _lock=None, reaper=None, _closing=False, _tagged={},
                     _stopped_tags=set())
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def argv(self, config_id: int, instance_id: int, seed: int, instance: Instance,
             switches: list, bound: float | None = None) -> list:
        # irace: paste(id, instance id, seed, instance, bound, switches); no bound, no word.
        words = [] if bound is None else [format_bound(bound)]
        if self.cmdline is not None:
            return self.command + expand_cmdline(self.cmdline, {
                "configurationID": [str(config_id)], "instanceID": [str(instance_id)],
                "seed": [str(seed)], "instance": [instance.name, *instance.extra],
                "bound": words, "targetRunnerArgs": list(switches)})
        return (self.command + [str(config_id), str(instance_id), str(seed), instance.name]
                + list(instance.extra) + words + list(switches))

    def run(self, config_id: int, instance_id: int, seed: int, instance: Instance,
            switches: list, tag: object = None, bound: float | None = None) -> RunResult:
        """Run once, retrying errors; never raises for a failing runner. A run given a
        hashable ``tag`` can be stopped alone with :meth:`kill_run`; ``bound`` (a number of
        seconds, irace's execution bound) is passed to the runner after the instance."""
        result = self._run(config_id, instance_id, seed, instance, switches, tag, bound)
        result.bound = bound
        return result

    def _run(self, config_id, instance_id, seed, instance, switches, tag, bound) -> RunResult:
        argv = self.argv(config_id, instance_id, seed, instance, switches, bound)
        attempts = 0
        if self._closing:
            return RunResult("error", None, None, "not started: racer is shutting down", argv,
                             None, "", "", 0.0, 0)
        try:
            while True:
                if tag is not None and tag in self._stopped_tags:
                    return RunResult("error", None, None, _STOPPED, argv, None, "", "", 0.0, attempts)
                attempts += 1
                result = self._run_once(argv, tag)
                result.attempts = attempts
                if tag is not None and tag in self._stopped_tags:
                    result.status, result.message = "error", _STOPPED
                    return result
                if result.status != "error" or attempts > self.retries or self._closing:
                    return result
        finally:
            if tag is not None:
                with self._lock:
                    self._stopped_tags.discard(tag)

    def kill_run(self, tag: object) -> None:
        """Stop the run started with ``tag``: kill its process group if it is running, or make
        it return at once (status "error") if it has not started yet. Only runs of this process
        (not those shipped to Dask or Ray workers) can be reached."""
        with self._lock:
            self._stopped_tags.add(tag)
            pid = self._tagged.get(tag)
        if pid is not None:
            self._kill_group(pid)

    def _run_once(self, argv: list, tag: object = None) -> RunResult:
        start = time.perf_counter()
        try:
            proc = self._start(argv)
        except OSError as exc:
            return RunResult("error", None, None, _start_failure(exc), argv, None, "", "",
                             time.perf_counter() - start)
        out, err, timed_out = self._wait_for(proc, tag)
        wall = time.perf_counter() - start
        return self._outcome(argv, proc.returncode, out, err, wall, timed_out)

    def _start(self, argv: list) -> subprocess.Popen:
        """Start the run in a session of its own (so its whole group can be killed), with the
        reaper's token in its environment."""
        env = None
        if self.reaper_token is not None:
            name, _, value = self.reaper_token.partition("=")
            env = {**os.environ, name: value}
        return subprocess.Popen(
            argv, cwd=self.exec_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, text=True, errors="replace",
            env=env)

    def _wait_for(self, proc: subprocess.Popen, tag: object) -> tuple[str, str, bool]:
        """``(stdout, stderr, timed_out)`` of the started run ``proc``, which is known to the
        reaper, to :meth:`kill_all` and (with a ``tag``) to :meth:`kill_run` while it runs;
        its process group is killed when it ends."""
        if self.reaper is not None:
            self.reaper.add(proc.pid)
        with self._lock:
            self._live[proc.pid] = proc
            if tag is not None:
                self._tagged[tag] = proc.pid
                stopped = tag in self._stopped_tags
        if tag is not None and stopped:  # kill_run came between the check in run() and here
            self._kill_group(proc.pid)
        timed_out = False
        try:
            try:
                out, err = self._communicate(proc)
            except subprocess.TimeoutExpired:
                timed_out = True
                self._kill_group(proc.pid)
                out, err = proc.communicate()
        finally:
            # Whatever the runner left behind in its session goes too.
            self._kill_group(proc.pid)
            if self.reaper is not None:
                self.reaper.remove(proc.pid)
            with self._lock:
                self._live.pop(proc.pid, None)
                if tag is not None:
                    self._tagged.pop(tag, None)
        return out, err, timed_out

    def _outcome(self, argv: list, code: int | None, out: str, err: str, wall: float,
                 timed_out: bool) -> RunResult:
        """The result of a run that ended with exit status ``code``: a failure of the process
        (time-out, shutdown, signal, status), or what its last line of stdout says."""

        def fail(message: str) -> RunResult:
            return RunResult("error", None, None, message, argv, code, out, err, wall)

        if timed_out:
            return fail(f"the target-runner timed out after {self.timeout:g} s; its process group was killed")
        if self._closing:
            return fail("the target-runner was stopped (racer is shutting down)")
        if code is not None and code < 0:
            # Named as the Python API names a dead worker: "killed by SIGSEGV".
            hint = (" (the system's out-of-memory killer sends SIGKILL too: see dmesg)"
                    if code == -signal.SIGKILL else "")
            return fail(f"the target-runner was {death_cause(code)} (signal {-code}){hint}")
        if code != 0:
            return fail(f"the target-runner exited with status {code}")
        lines = [ln for ln in out.splitlines() if ln.strip()]
        if not lines:
            return fail("the target-runner printed nothing on stdout (expected `cost [time]` as its last line)")
        if self.objectives is not None:
            return self._objective_result(argv, code, out, err, wall, lines[-1])
        return self._cost_result(argv, code, out, err, wall, lines[-1])

    def _cost_result(self, argv: list, code: int, out: str, err: str, wall: float,
                     line: str) -> RunResult:
        """The outcome of a run of a tuning on one objective whose last line of stdout is
        ``line``: the cost, then the time, which is optional unless ``need_time``."""

        def fail(message: str) -> RunResult:
            return RunResult("error", None, None, message, argv, code, out, err, wall)

        words = line.split()
        numbers = [_parse_number(w) for w in words]
        if len(words) > 2 or any(x is None for x in numbers):
            return fail(f"the last line of stdout is {line!r}; expected `cost` or `cost time` (numbers)")
        cost = numbers[0]
        run_time = numbers[1] if len(numbers) == 2 else None
        if math.isnan(cost) or cost == -math.inf:
            return fail(f"the target-runner returned the cost {words[0]!r}")
        if self.need_time and (run_time is None or not math.isfinite(run_time) or run_time < 0):
            why = self.need_time if isinstance(self.need_time, str) else "maxTime"
            return fail(f"{why} needs the time of each run: print `cost time` on the last line")
        if cost == math.inf:
            return RunResult("inf", cost, run_time, "cost Inf: configuration rejected", argv, code, out, err, wall)
        return RunResult("ok", cost, run_time, "", argv, code, out, err, wall)

    def _objective_result(self, argv: list, code: int, out: str, err: str, wall: float,
                          line: str) -> RunResult:
        """The outcome of a run of a tuning on several objectives whose last line of stdout
        is ``line``: k numbers (one per objective, in the order of ``objectives``), then the
        time, which is optional unless ``need_time``."""
        names, directions = self.objectives.names, self.objectives.directions
        k = len(names)
        words = line.split()
        numbers = [_parse_number(w) for w in words]
        n = len(argv) - len(self.command)
        # Under a targetCmdline the words are where the template puts them.
        where = (f"configuration {argv[len(self.command)]} on instance "
                 f"{argv[len(self.command) + 3]}" if n >= 4 and self.cmdline is None
                 else "the run")
        expected = (f"{k} numbers ({' '.join(names)})"
                    + (", then the run time" if self.need_time else ", optionally then the run time"))

        def fail(message: str) -> RunResult:
            return RunResult("error", None, None, message, argv, code, out, err, wall)

        if len(words) not in (k, k + 1) or any(x is None for x in numbers):
            return fail(f"{where}: the last line of the target-runner's stdout is {line!r} "
                        f"({len(words)} word{'s' if len(words) != 1 else ''}); expected {expected}")
        values, run_time = numbers[:k], (numbers[k] if len(numbers) > k else None)
        for name, x, w in zip(names, values, words):
            if math.isnan(x):
                return fail(f"{where}: the target-runner returned {w!r} for the objective {name}")
        if self.need_time and (run_time is None or not math.isfinite(run_time) or run_time < 0):
            why = self.need_time if isinstance(self.need_time, str) else "maxTime"
            return fail(f"{where}: {why} needs the time of each run: print {expected} on the last line")
        rejecting, impossible = infinite_objectives(values, directions)
        if impossible is not None:
            return fail(f"{where}: the target-runner returned {words[impossible]!r} for the "
                        f"objective {names[impossible]}, better than any value "
                        f"({directions[impossible]}d)")
        result = RunResult("inf" if rejecting is not None else "ok", values[0], run_time,
                           "" if rejecting is None else
                           f"{names[rejecting]} {words[rejecting]}: configuration rejected",
                           argv, code, out, err, wall)
        result.objectives = tuple(values)
        return result

    def _communicate(self, proc: subprocess.Popen) -> tuple:
        """``proc.communicate(timeout=self.timeout)``, waiting in slices of at most
        ``_WAIT_SLICE`` seconds. Why: a Ray task is cancelled by an asynchronous KeyboardInterrupt,
        which Python delivers only between bytecodes, never inside one long blocking wait; in
        slices it arrives within a slice and the ``finally`` above kills the runner's group
        (checked: with a single blocking wait a cancelled run went on to its end). A retried
        ``communicate`` loses no output, and a run that ends returns at once, not at a slice end."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            step = _WAIT_SLICE if deadline is None else max(0.0, min(_WAIT_SLICE, deadline - time.monotonic()))
            try:
                return proc.communicate(timeout=step)
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def _kill_group(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill_all(self) -> None:
        """Kill every running runner's process group (on interruption)."""
        self._closing = True
        with self._lock:
            pids = list(self._live)
        for pid in pids:
            self._kill_group(pid)


def build_command(target_runner: str, launcher: str = "", launcher_args: str = "") -> list:
    """The runner's leading words: the runner itself, or ``targetRunnerLauncher`` with
    ``targetRunnerLauncherArgs`` (``{targetRunner}`` replaced; ``{targetRunnerArgs}`` marks
    where irace's arguments go and must come last)."""
    if not launcher:
        return [target_runner]
    template = launcher_args or "{targetRunner} {targetRunnerArgs}"
    words = shlex.split(template)
    if not words or words[-1] != "{targetRunnerArgs}":
        raise ValueError(
            f"targetRunnerLauncherArgs must end with {{targetRunnerArgs}}; got {template!r}")
    return [launcher] + [w.replace("{targetRunner}", target_runner) for w in words[:-1]]


_FIELDS = ("configurationID", "instanceID", "seed", "instance", "bound", "targetRunnerArgs")


def expand_cmdline(template: list, values: dict) -> list:
    """The words of one run from the words of a ``targetCmdline`` template: a word that is
    exactly ``{name}`` becomes the value's words (``{instance}``: the instance, then its
    extra arguments; ``{bound}`` without a bound and ``{targetRunnerArgs}`` without an
    active switch: no word); ``{name}`` inside a word is replaced by the value's words
    joined by blanks (``--cutoff={bound}``). irace pastes the values into one string and
    lets the shell split it; racer runs no shell, so an instance name with a blank stays
    one word, as it does without a template. Other ``{...}`` are left as they are (irace
    does too).

    >>> expand_cmdline(["-i", "{instance}", "--seed={seed}", "{bound}", "{targetRunnerArgs}"],
    ...                {"instance": ["a.cnf", "x"], "seed": ["7"], "bound": [],
    ...                 "targetRunnerArgs": ["--p", "1"]})
    ['-i', 'a.cnf', 'x', '--seed=7', '--p', '1']
    """
    out: list = []
    for word in template:
        name = word[1:-1] if word.startswith("{") and word.endswith("}") else None
        if name in values:
            out.extend(values[name])
            continue
        for key, value in values.items():
            word = word.replace("{" + key + "}", " ".join(value))
        out.append(word)
    return out


def runner_command(target_runner: str, launcher: str = "", launcher_args: str = "",
                   cmdline: str = DEFAULT_CMDLINE, *, capping: bool = False) -> tuple:
    """``(command, template)`` for :class:`TargetRunner`: the leading words and the
    ``cmdline`` argument, from the scenario's ``targetRunner``, ``targetRunnerLauncher``,
    ``targetRunnerLauncherArgs`` and ``targetCmdline``.

    irace 4's default ``targetCmdline`` gives today's words: ``(build_command(...), None)``,
    ``targetRunnerLauncherArgs`` included. Any other ``targetCmdline`` is irace 4's way: the
    runner (or the launcher) followed by the template, where ``{targetRunner}`` stands for
    the runner (with a launcher and no ``{targetRunner}``, it is put first, as irace 4 does
    for irace 3.5's scenarios). A template without ``{seed}``, ``{instance}`` or
    ``{targetRunnerArgs}`` (``{bound}`` too under ``capping``) is refused, as irace refuses
    it; so is a ``targetCmdline`` beside a ``targetRunnerLauncherArgs`` of its own (which of
    the two would say where the arguments go?). ValueError naming the option.

    >>> runner_command("/r/run.py", "python3", cmdline="-m {targetRunner} {instance} {seed} {targetRunnerArgs}")
    (['python3'], '-m /r/run.py {instance} {seed} {targetRunnerArgs}')
    >>> runner_command("/r/run", cmdline="{instance} {seed} {targetRunnerArgs}")
    (['/r/run'], '{instance} {seed} {targetRunnerArgs}')
    >>> runner_command("/r/run")
    (['/r/run'], None)
    """
    if not isinstance(cmdline, str):
        raise TypeError(f"targetCmdline must be a str; got {cmdline!r}")
    if " ".join(cmdline.split()) == DEFAULT_CMDLINE:
        return build_command(target_runner, launcher, launcher_args), None
    if launcher_args and " ".join(launcher_args.split()) != "{targetRunner} {targetRunnerArgs}":
        raise ValueError(f"targetCmdline = {cmdline!r} and targetRunnerLauncherArgs = "
                         f"{launcher_args!r} both say where the runner's arguments go: keep "
                         "targetCmdline (irace 4's) and leave targetRunnerLauncherArgs unset")
    required = ("seed", "instance", "targetRunnerArgs") + (("bound",) if capping else ())
    for name in required:
        if "{" + name + "}" not in cmdline:
            why = " (capping passes each run its bound)" if name == "bound" else ""
            raise ValueError(f"targetCmdline = {cmdline!r} must contain {{{name}}}{why}, as "
                             "irace requires")
    try:
        shlex.split(cmdline)
    except ValueError as exc:
        raise ValueError(f"targetCmdline = {cmdline!r} cannot be split into words: {exc}") from None
    template = cmdline
    if launcher and "{targetRunner}" not in template:
        template = "{targetRunner} " + template
    template = template.replace("{targetRunner}", shlex.quote(target_runner))
    return [launcher or target_runner], template
