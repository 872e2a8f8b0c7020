"""A value built once per process, on first use, under a lock: the shared default objects (the
packaged embedder's cache, the shipped DR-RAG classifier) that are too costly to build at import."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Once"]

T = TypeVar("T")


class Once(Generic[T]):
    """``build()`` run on the first call only; every later call (from any thread) returns its
    value. Threads that ask during the build wait for it; a build that raises is tried again on
    the next call.

    Args:
        build: makes the value (no arguments).

    Example:
        >>> calls = []
        >>> answer = Once(lambda: calls.append(1) or 42)
        >>> answer(), answer(), len(calls)
        (42, 42, 1)
    """

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def __call__(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value
