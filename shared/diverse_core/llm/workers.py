"""Thread plumbing for :class:`~diverse_core.llm.ManagedLLM`: :class:`DaemonPool`, whose workers
(unlike ``ThreadPoolExecutor``'s, joined at exit) never keep the process alive when stuck in a
hung call, and :class:`Slots`, a limiter shared by threads *and* event loops."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DaemonPool", "Slots", "wake_threadsafe"]

_IDLE_EXIT_S = 10.0  # an idle worker thread ends after this many seconds


class DaemonPool:
    """At most ``max_workers`` daemon threads running submitted jobs in FIFO order.

    Args:
        max_workers: the most threads alive at once (hung jobs included).
        name: thread name prefix.

    Example:
        >>> pool = DaemonPool(2, "demo")
        >>> pool.submit(lambda x: x + 1, 41).result(timeout=5)
        42
    """

    def __init__(self, max_workers: int, name: str) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1; got {max_workers!r}")
        self.max_workers = max_workers
        self.name = name
        self._cond = threading.Condition()
        # Taken while a job turns from queued to running and while it is cancelled, so a
        # job's ``on_start`` and a concurrent ``cancel`` never both happen.
        self._start_lock = threading.Lock()
        self._queue: collections.deque[
            tuple[concurrent.futures.Future[Any], Callable[[], Any], Callable[[], None] | None]
        ] = collections.deque()
        self._threads = 0
        self._idle = 0
        self._closed = False

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, on_start: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> concurrent.futures.Future[Any]:
        """Queue ``fn(*args, **kwargs)``; ``on_start()`` runs just before ``fn`` starts."""
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._cond:
            if self._closed:
                raise RuntimeError(f"{self.name}: the pool is closed")
            self._queue.append((fut, lambda: fn(*args, **kwargs), on_start))
            # each idle worker takes one queued job; start a thread for the rest
            if len(self._queue) > self._idle and self._threads < self.max_workers:
                self._threads += 1
                worker = threading.Thread(
                    target=self._work, name=f"{self.name}-{self._threads}", daemon=True
                )
                worker.start()
            self._cond.notify()
        return fut

    def cancel(self, fut: concurrent.futures.Future[Any]) -> bool:
        """Cancel a job that has not started; ``True`` when it will never run."""
        with self._start_lock:
            return fut.cancel()

    def close(self) -> None:
        """Cancel the queued jobs and let idle workers end (running jobs finish on their own)."""
        with self._cond:
            self._closed = True
            queued = list(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        for fut, _, _ in queued:
            self.cancel(fut)

    @property
    def threads(self) -> int:
        """Worker threads alive now (idle, running or stuck in a hung call)."""
        with self._cond:
            return self._threads

    def _next(self) -> tuple[concurrent.futures.Future[Any], Callable[[], Any], Callable[[], None] | None] | None:
        with self._cond:
            while not self._queue:
                if self._closed:
                    self._threads -= 1
                    return None
                self._idle += 1
                woke = self._cond.wait(_IDLE_EXIT_S)
                self._idle -= 1
                if not woke and not self._queue:
                    self._threads -= 1
                    return None
            return self._queue.popleft()

    def _work(self) -> None:
        while (job := self._next()) is not None:
            fut, call, on_start = job
            with self._start_lock:
                if not fut.set_running_or_notify_cancel():
                    continue  # cancelled while queued: never runs
                if on_start is not None:
                    on_start()
            try:
                result = call()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                fut.set_exception(exc)
            else:
                fut.set_result(result)
            del fut, call, on_start, job


@dataclass(eq=False)
class _Waiter:
    event: threading.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[None] | None = None
    granted: bool = field(default=False)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def wake_threadsafe(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[None]) -> bool:
    """Resolve ``fut`` (a bare signal) from any thread; ``False`` (nothing done) once ``loop``
    is closed: nobody waits for the signal any more."""
    try:
        loop.call_soon_threadsafe(_wake, fut)
    except RuntimeError:
        return False
    return True


class Slots:
    """A counting limiter usable from any thread and any event loop, FIFO.

    Args:
        n: how many holders at once.

    Example:
        >>> slots = Slots(1)
        >>> slots.acquire(), slots.acquire(timeout=0.01)
        (True, False)
        >>> slots.release()
    """

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n!r}")
        self.n = n
        self._free = n
        self._lock = threading.Lock()
        self._waiters: collections.deque[_Waiter] = collections.deque()

    def _try_take(self) -> bool:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    def acquire(self, timeout: float | None = None) -> bool:
        """Block until a slot is free (or ``timeout`` seconds pass: then ``False``)."""
        with self._lock:
            if self._try_take():
                return True
            waiter = _Waiter(event=threading.Event())
            self._waiters.append(waiter)
        assert waiter.event is not None
        try:
            if waiter.event.wait(timeout):
                return True
        except BaseException:  # interrupted while waiting
            self._abandon(waiter, keep=False)
            raise
        return not self._abandon(waiter)

    async def aacquire(self, timeout: float | None = None) -> bool:
        """:meth:`acquire` for a coroutine: waits without blocking the event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._try_take():
                return True
            waiter = _Waiter(loop=loop, future=loop.create_future())
            self._waiters.append(waiter)
        assert waiter.future is not None
        try:
            done, _ = await asyncio.wait({waiter.future}, timeout=timeout)
        except BaseException:  # cancelled while waiting
            self._abandon(waiter, keep=False)
            raise
        return bool(done) or not self._abandon(waiter)

    def _abandon(self, waiter: _Waiter, keep: bool = True) -> bool:
        """Stop waiting; ``True`` when the slot was not granted. A slot granted at the last
        moment is kept (``keep``) or handed on."""
        with self._lock:
            if not waiter.granted:
                self._waiters.remove(waiter)
                return True
            if not keep:
                self._release_locked()
            return False

    def release(self) -> None:
        """Free one slot (hand it to the longest waiter)."""
        with self._lock:
            self._release_locked()

    def _release_locked(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            waiter.granted = True
            if waiter.event is not None:
                waiter.event.set()
                return
            assert waiter.loop is not None and waiter.future is not None
            if wake_threadsafe(waiter.loop, waiter.future):
                return
        self._free += 1
