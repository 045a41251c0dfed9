"""One background thread per retrieval engine, for store calls that release the GIL.

chromadb's Rust binding releases the GIL for the duration of ``query`` and ``get``
(``py.allow_threads`` around the request), so a query overlaps pure-Python work when started as below
(docs/PERFORMANCE.md). The retrieval engine therefore starts the vector query on this
worker and computes the in-memory candidates (fingerprint index, failing action,
personalized PageRank) on the calling thread meanwhile, then joins.

Starting matters under the GIL: a freshly submitted task waits for the GIL, and the
submitting thread keeps it until it blocks or the interpreter's switch interval
(5 ms) expires, which is longer than the work to overlap. ``submit`` therefore waits
(releasing the GIL) until the worker has begun the task; the worker then runs the
store client's Python preamble and releases the GIL in the Rust call, and the caller
carries on. ``HANDOFF_TIMEOUT_S`` bounds that wait when the worker is busy with
another caller's task.

Results are the same as calling the function directly: the caller joins before it
uses them, and exceptions are re-raised by ``Future.result``.

Example:
    >>> w = Worker("example")
    >>> w.submit(sum, [1, 2, 3]).result()
    6
    >>> w.close(); w.submit(sum, [4]).result()  # after close: run inline
    4
"""

from __future__ import annotations

import statistics
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

HANDOFF_TIMEOUT_S = 0.005
"""Longest the caller waits for the worker to begin a task before carrying on anyway."""


class Worker:
    """A lazily started single-thread executor with a GIL handoff on submit; ``close`` stops it.

    Args:
        name: Thread name prefix (shows in stack dumps).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``fn(*args)`` on the worker thread; return once it has started (or after the timeout).

        After ``close`` (or if the thread cannot be started) the call runs inline and
        the returned future is already done, so callers need no second code path.
        """
        pool = self._executor()
        if pool is None:
            return run_inline(fn, *args)
        started = threading.Event()

        def run() -> T:
            started.set()
            return fn(*args)

        try:
            fut = pool.submit(run)
        except RuntimeError:  # shut down between _executor() and submit: interpreter exit or close()
            return run_inline(fn, *args)
        started.wait(HANDOFF_TIMEOUT_S)
        return fut

    def close(self) -> None:
        """Finish queued tasks and stop the thread; later submits run inline."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor | None:
        if self._pool is not None:
            return self._pool
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            return self._pool


class StrategyTimer:
    """Chooses between running store calls on the worker and inline, by measured wall time.

    The two give the same results; which is faster depends on the machine. On an idle
    machine the overlap saves most of the Chroma query; when other processes keep the cores
    busy, every thread wake-up waits for the scheduler and the overlap costs more than it
    saves. So the engine times each on-error retrieval,
    keeps the last ``window`` wall times per strategy, uses the one with the lower
    median, and tries the other every ``explore_every``-th call so a change of load is
    noticed.

    Example:
        >>> t = StrategyTimer(window=3, explore_every=4)
        >>> t.choose()  # each strategy is tried first
        True
        >>> t.record(True, 5.0)
        >>> t.choose()
        False
        >>> t.record(False, 3.0)
        >>> [t.choose() for _ in range(4)]  # inline is faster; every 4th call tries the worker
        [False, True, False, False]
    """

    def __init__(self, *, window: int = 9, explore_every: int = 8) -> None:
        self._times: dict[bool, deque[float]] = {True: deque(maxlen=window), False: deque(maxlen=window)}
        self._explore_every = max(2, explore_every)
        self._calls = 0
        self._lock = threading.Lock()  # retrievals may run on several threads

    def choose(self) -> bool:
        """True: overlap on the worker; False: inline."""
        with self._lock:
            self._calls += 1
            for strategy in (True, False):
                if not self._times[strategy]:
                    return strategy
            best = statistics.median(self._times[True]) <= statistics.median(self._times[False])
            return (not best) if self._calls % self._explore_every == 0 else best

    def record(self, strategy: bool, ms: float) -> None:
        """The wall time one retrieval took with ``strategy``."""
        with self._lock:
            self._times[strategy].append(ms)


def run_inline(fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on this thread, as an already finished future (its result or exception)."""
    fut: Future[T] = Future()
    try:
        fut.set_result(fn(*args))
    except Exception as exc:  # re-raised by fut.result(), as from the worker
        fut.set_exception(exc)
    return fut


__all__ = ["HANDOFF_TIMEOUT_S", "StrategyTimer", "Worker", "run_inline"]
