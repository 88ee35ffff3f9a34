"""A ``concurrent.futures.Executor`` on Ray, for ``racer --executor ray`` and for Python users.

Ray has no ``concurrent.futures.Executor`` of its own (Dask has ``client.get_executor()``), so
racer ships this small one: every ``submit`` is one Ray task asking for one CPU, so a cluster
of ``N`` CPUs runs at most ``N`` target-runner processes at a time (``--parallel N`` with a
local cluster), and its result comes back as a ``concurrent.futures.Future`` the moment the
task ends (``as_completed`` works; nothing polls).

Cancelling a future that has not finished cancels its Ray task (``ray.cancel`` without
``force``): a queued task never starts, and a running one gets a ``KeyboardInterrupt``, on
which :class:`~racer.cli.target_runner.TargetRunner` kills the runner's process group (a
forced cancel would kill the Ray worker before it could do so, leaving the runner behind).

Ray is started by the executor only if it is not running in this process yet, and then
stopped by :meth:`RayExecutor.shutdown` (also at interpreter exit); a Ray that was already
initialised (``ray.init(address=...)`` by the user, a test's cluster) is used and left running.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import threading
from typing import Any, Callable

__all__ = ["RayExecutor"]


def _call(fn: Callable, args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)


class _RayFuture(cf.Future):
    """A Future whose ``cancel`` also cancels the Ray task behind it."""

    def __init__(self, ref: Any, ray: Any) -> None:
        super().__init__()
        self._ref = ref
        self._ray = ray

    def cancel(self) -> bool:
        cancelled = super().cancel()
        if cancelled:
            try:
                self._ray.cancel(self._ref)
            except Exception:  # the task ended meanwhile, or Ray is already down
                pass
        return cancelled


class RayExecutor(cf.Executor):
    """Run ``submit``-ted calls as Ray tasks (one CPU each).

    Parameters
    ----------
    address : str, optional
        An existing Ray cluster (``"auto"``, ``"ray://host:10001"``...). Without it, and if Ray
        is not initialised in this process yet, a local Ray instance is started.
    num_cpus : int, optional
        CPUs of the local instance started here = runs at a time (default: Ray's, every CPU).
    **init_kwargs
        Passed to ``ray.init`` when this executor starts Ray.

    Examples
    --------
    >>> import operator
    >>> from racer.ray_executor import RayExecutor
    >>> with RayExecutor(num_cpus=1, include_dashboard=False) as ex:  # doctest: +SKIP
    ...     ex.submit(operator.add, 2, 3).result()
    5

    With racer's iterated racing: ``Tuner(..., executor=RayExecutor(num_cpus=2))``; with a
    single race: ``racer.Race(..., executor=RayExecutor(address="auto"))``.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None, **init_kwargs: Any) -> None:
        if address is not None and not isinstance(address, str):
            raise TypeError(f"`address` must be a string or None; got {address!r}")
        if num_cpus is not None and (isinstance(num_cpus, bool) or not isinstance(num_cpus, int)
                                     or num_cpus < 1):
            raise ValueError(f"`num_cpus` must be a positive integer or None; got {num_cpus!r}")
        try:
            import ray
        except ImportError:
            raise ImportError("RayExecutor needs Ray: pip install 'bayes-racer[ray]'") from None
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "logging_level": "WARNING", **init_kwargs}
            if address is not None:
                kwargs["address"] = address
            if num_cpus is not None:
                kwargs["num_cpus"] = num_cpus
            ray.init(**kwargs)
            self._owned = True
            atexit.register(self.shutdown)
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_call)
        self._pending: set = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def owns_ray(self) -> bool:
        """True if this executor started Ray (and :meth:`shutdown` stops it)."""
        return self._owned

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> cf.Future:
        if self._closed:
            raise RuntimeError("cannot submit to a RayExecutor after shutdown()")
        ref = self._remote.remote(fn, args, kwargs)
        fut = _RayFuture(ref, self._ray)
        with self._lock:
            self._pending.add(fut)

        def settle(done: cf.Future) -> None:
            with self._lock:
                self._pending.discard(fut)
            if fut.cancelled():
                return
            try:
                exc = done.exception()
            except cf.CancelledError as e:
                exc = e
            try:
                if exc is not None:
                    fut.set_exception(exc)
                else:
                    fut.set_result(done.result())
            except cf.InvalidStateError:  # cancelled in between
                pass

        ref.future().add_done_callback(settle)
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending = list(self._pending)
        if cancel_futures:
            for fut in pending:
                fut.cancel()
        if wait:
            cf.wait([f for f in pending if not f.cancelled()])
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        atexit.unregister(self.shutdown)
