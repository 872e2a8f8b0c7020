"""Keys being computed right now: a caller that misses a key another caller is computing waits
for that caller's value instead of computing it again (threads and coroutines alike)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

__all__ = ["InFlight", "Waiting", "await_for", "ready", "wait_for"]

K = TypeVar("K", bound=Hashable)


class _Batch:
    """The keys one :meth:`InFlight.claim` took: one future, set with ``{key: value}`` when the
    last of them is resolved or failed."""

    __slots__ = ("future", "left", "values")

    def __init__(self) -> None:
        self.future: Future[dict[Any, Any]] = Future()
        self.left = 0
        self.values: dict[Any, Any] = {}


#: What a waiter holds: (the owner's batch future, the owner's thread id, the key).
Waiting = tuple["Future[dict[Any, Any]]", int, Any]


class InFlight(Generic[K]):
    """Keys being computed right now, so concurrent callers wait instead of computing them twice.

    Not locked itself: the owning cache calls :meth:`claim`, :meth:`resolve` and :meth:`fail`
    while holding its own lock (so "is it cached?" and "is someone computing it?" are one
    atomic question). A caller waits with :func:`wait_for` (threads) or :func:`await_for`
    (coroutines); a failed owner hands ``None`` to its waiters, which then compute the key
    themselves (and meet the error themselves, if it persists). The keys of one claim share
    one future, set when the last of them is resolved or failed (an owner settles its keys
    together), so a claim of 200 texts makes one future, not 200.

    Example:
        >>> flight: InFlight[str] = InFlight()
        >>> mine, theirs = flight.claim(["a", "b"])
        >>> mine, theirs, flight.claim(["a"])[0]
        (['a', 'b'], {}, [])
        >>> flight.resolve("a", 1.0); len(flight)
        1
    """

    def __init__(self) -> None:
        self._futures: dict[K, tuple[_Batch, int]] = {}

    def __len__(self) -> int:
        return len(self._futures)

    def claim(self, keys: Sequence[K]) -> tuple[list[K], dict[K, Waiting]]:
        """Split ``keys`` into those the caller must compute and what to wait on for the others."""
        mine: list[K] = []
        theirs: dict[K, Waiting] = {}
        me = threading.get_ident()
        batch: _Batch | None = None
        for key in keys:
            entry = self._futures.get(key)
            if entry is None:
                if batch is None:
                    batch = _Batch()
                batch.left += 1
                self._futures[key] = (batch, me)
                mine.append(key)
            else:
                theirs[key] = (entry[0].future, entry[1], key)
        return mine, theirs

    def resolve(self, key: K, value: Any) -> None:
        """Hand ``value`` to the waiters of ``key`` and forget it."""
        self._settle(key, value)

    def fail(self, keys: Sequence[K]) -> None:
        """The owner of ``keys`` failed: its waiters get ``None`` (and compute the keys themselves)."""
        for key in keys:
            self._settle(key, None)

    def _settle(self, key: K, value: Any) -> None:
        entry = self._futures.pop(key, None)
        if entry is None:
            return
        batch = entry[0]
        batch.values[key] = value
        batch.left -= 1
        if batch.left == 0:
            batch.future.set_result(batch.values)


def ready(key: Any, value: Any) -> Waiting:
    """A :data:`Waiting` whose value is already there."""
    done: Future[dict[Any, Any]] = Future()
    done.set_result({key: value})
    return (done, 0, key)


def wait_for(entry: Waiting) -> Any:
    """The value another thread computes for a key (``None``: compute it yourself).

    A caller on the owner's own thread (e.g. a sync call inside the event loop where the owning
    coroutine is suspended) must not block on it: it gets ``None`` unless the value is ready.
    """
    future, owner, key = entry
    if not future.done() and owner == threading.get_ident():
        return None
    return future.result().get(key)


async def await_for(entry: Waiting) -> Any:
    """Async :func:`wait_for`: awaits the value without blocking the event loop."""
    return (await asyncio.wrap_future(entry[0])).get(entry[2])

