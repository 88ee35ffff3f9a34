"""The command line's tuner without processes: an in-process stand-in for the target runner
(the tuner only calls ``run``/``kill_all`` and reads ``exec_dir``), a parameter space and a
training set."""

import random
import threading
import time

from racer.tuning.parameters import Parameter, ParameterSpace
from racer.tuning.instances import Instance
from racer.tuning.runner import RunResult


def _cost(opts: dict, instance, rng: random.Random) -> float:
    """(x - 1)^2 + (mode b: 0.5) + the instance's offset + noise drawn from ``rng``."""
    cost = (float(opts["--x"]) - 1.0) ** 2 + (0.5 if opts["--mode"] == "b" else 0.0)
    return cost + float(instance.name) + rng.gauss(0, 0.1)


class FakeRunner:
    """cost = (x - 1)^2 + (mode b: 0.5) + instance offset + noise from (seed, config)."""

    exec_dir = "."

    def __init__(self, interrupt_after=None, timed=False):
        self.calls = []
        self.interrupt_after = interrupt_after
        self.timed = timed

    def run(self, config_id, instance_id, seed, instance, switches):
        if self.interrupt_after is not None and len(self.calls) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append((config_id, instance_id, seed))
        opts = dict(zip(switches[::2], switches[1::2]))
        rng = random.Random(seed * 7919 + config_id)
        cost = _cost(opts, instance, rng)
        # Reported time: mode b is twice as slow, with a little jitter.
        run_time = (1.0 if opts["--mode"] == "b" else 0.5) * (1 + 0.1 * rng.random()) if self.timed else None
        return RunResult("ok", cost, run_time, "", [], 0, "", "", 0.0)

    def kill_all(self):
        pass


SPACE = ParameterSpace([Parameter("mode", "--mode ", "c", ("a", "b")),
                        Parameter("x", "--x ", "r", (-4.0, 4.0))], digits=3)
TRAIN = [Instance(str(i)) for i in range(10)]


class CountingRunner:
    """cost = (x - 1)^2 + (mode b: 0.5) + instance offset + noise from (seed, config), after
    ``delay`` seconds; counts every call (a look-ahead run included)."""

    exec_dir = "."

    def __init__(self, delay=0.0):
        self.delay = delay
        self.calls = []
        self._lock = threading.Lock()

    def run(self, config_id, instance_id, seed, instance, switches):
        with self._lock:
            self.calls.append((config_id, instance_id, seed))
        if self.delay:
            time.sleep(self.delay)
        opts = dict(zip(switches[::2], switches[1::2]))
        cost = _cost(opts, instance, random.Random(seed * 7919 + config_id))
        return RunResult("ok", cost, None, "", [], 0, "", "", 0.0)

    def kill_all(self):
        pass


class JitteryRunner(CountingRunner):
    """A CountingRunner whose runs take a random time (0 to 4 ms, not seeded: every tuning
    meets other timings, so look-ahead's runs go unused in other numbers each time), and that
    raises KeyboardInterrupt at call ``interrupt_at`` (1-based) if given."""

    def __init__(self, interrupt_at=None):
        super().__init__()
        self.interrupt_at = interrupt_at
        self._rng = random.Random()  # seeded from the OS: other timings each tuning

    def run(self, config_id, instance_id, seed, instance, switches):
        with self._lock:
            if self.interrupt_at is not None and len(self.calls) + 1 >= self.interrupt_at:
                raise KeyboardInterrupt
            pause = self._rng.uniform(0.0, 0.004)
        time.sleep(pause)
        return super().run(config_id, instance_id, seed, instance, switches)
