"""Keys being computed right now: a caller that misses a key another caller is computing waits
for that caller's value instead of computing it again (threads and coroutines alike)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

__all__ = ["InFlight", "Waiting", "await_for", "wait_for"]

K = TypeVar("K", bound=Hashable)

#: What a waiter holds: (the key's future, the owner's thread id).
Waiting = tuple["Future[Any]", int]


class InFlight(Generic[K]):
    """Keys being computed right now, so concurrent callers wait instead of computing them twice.

    Not locked itself: the owning cache calls :meth:`claim`, :meth:`resolve` and :meth:`fail`
    while holding its own lock (so "is it cached?" and "is someone computing it?" are one
    atomic question). A caller waits with :func:`wait_for` (threads) or :func:`await_for`
    (coroutines); a failed owner hands ``None`` to its waiters, which then compute the key
    themselves (and meet the error themselves, if it persists).

    Example:
        >>> flight: InFlight[str] = InFlight()
        >>> mine, theirs = flight.claim(["a", "b"])
        >>> mine, theirs, flight.claim(["a"])[0]
        (['a', 'b'], {}, [])
        >>> flight.resolve("a", 1.0); len(flight)
        1
    """

    def __init__(self) -> None:
        self._futures: dict[K, Waiting] = {}

    def __len__(self) -> int:
        return len(self._futures)

    def claim(self, keys: Sequence[K]) -> tuple[list[K], dict[K, Waiting]]:
        """Split ``keys`` into those the caller must compute and what to wait on for the others."""
        mine: list[K] = []
        theirs: dict[K, Waiting] = {}
        me = threading.get_ident()
        for key in keys:
            entry = self._futures.get(key)
            if entry is None:
                self._futures[key] = (Future(), me)
                mine.append(key)
            else:
                theirs[key] = entry
        return mine, theirs

    def resolve(self, key: K, value: Any) -> None:
        """Hand ``value`` to the waiters of ``key`` and forget it."""
        entry = self._futures.pop(key, None)
        if entry is not None:
            entry[0].set_result(value)

    def fail(self, keys: Sequence[K]) -> None:
        """The owner of ``keys`` failed: its waiters get ``None`` (and compute the keys themselves)."""
        for key in keys:
            self.resolve(key, None)


def wait_for(entry: Waiting) -> Any:
    """The value another thread computes for a key (``None``: compute it yourself).

    A caller on the owner's own thread (e.g. a sync call inside the event loop where the owning
    coroutine is suspended) must not block on it: it gets ``None`` unless the value is ready.
    """
    future, owner = entry
    if not future.done() and owner == threading.get_ident():
        return None
    return future.result()


async def await_for(entry: Waiting) -> Any:
    """Async :func:`wait_for`: awaits the value without blocking the event loop."""
    return await asyncio.wrap_future(entry[0])
