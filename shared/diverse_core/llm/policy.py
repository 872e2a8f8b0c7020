"""The call policy of :class:`~diverse_core.llm.ManagedLLM`: one call's state, parameter checks,
deadlines and per-attempt limits, the retry decision and its wait, the final error - and the
advice when a backend's own client also retries."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParameterError
from .errors import LLMError, LLMTimeoutError, is_transient, retry_after
from .structured import StructuredOutputUnsupported
from .workers import Slots

__all__ = ["CallPolicy"]

_log = logging.getLogger("diverse_core")


@dataclass(frozen=True)
class _Job:
    """One backend invocation: a sync call and, for native-async backends, its coroutine."""

    sync: Callable[[], object]
    native: Callable[[], Awaitable[object]] | None = None


class _AttemptTimeout(TimeoutError):
    """One attempt exceeded its time limit (raised by ManagedLLM, not by a backend)."""


@dataclass
class _Call:
    """One call's progress: its deadline, tries so far, tries the backend received."""

    deadline: float | None
    tries: int = 0
    received: int = 0


# Distinct classes before Python 3.11.
_TIMEOUTS = (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError)


def _check_nonneg(value: float | None, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidParameterError(f"{name} must be a number >= 0; got {name}={value!r}")


def _check_positive(value: float | None, name: str) -> float | None:
    """``value`` if > 0; ``None`` for ``None`` or infinity (no limit)."""
    _check_nonneg(value, name, allow_none=True)
    if value is not None and value == 0:
        raise InvalidParameterError(f"{name} must be > 0 or None; got {name}={value!r}")
    return None if value is None or value == float("inf") else value


def _client_retries(backend: object) -> tuple[str, int, object] | None:
    """A retry count > 0 that the backend's own client applies, with the object that holds it
    (read from instance attributes only, so no lazy client is created), e.g.
    ``OpenAILLM(client=OpenAI())`` or a LangChain ``ChatOpenAI(max_retries=2)`` inside
    ``LangChainLLM``."""

    def fields(obj: object) -> dict[str, Any]:
        found = getattr(obj, "__dict__", None)
        return found if isinstance(found, dict) else {}

    top = fields(backend)
    owners: list[tuple[str, object]] = [("", backend)]
    for attr in ("client", "_client", "async_client", "_async_client", "model", "llm", "_model"):
        if top.get(attr) is not None:
            owners.append((f"{attr}.", top[attr]))
    for prefix, owner in owners:
        value = fields(owner).get("max_retries")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return f"{prefix}max_retries", value, owner
    return None


# The clients whose stacked retries were already reported (once per client object, however
# many ManagedLLM wrap it: a face builds one per pipeline, a service one per request).
_ADVISED: weakref.WeakSet[Any] = weakref.WeakSet()
_ADVISED_IDS: set[int] = set()  # owners that take no weak reference
_ADVISED_LOCK = threading.Lock()


def _first_advice(owner: object) -> bool:
    """``True`` the first time ``owner``'s stacked retries are reported in this process."""
    with _ADVISED_LOCK:
        try:
            if owner in _ADVISED:
                return False
            _ADVISED.add(owner)
        except TypeError:  # not weak-referenceable (or unhashable): remembered by id
            if id(owner) in _ADVISED_IDS:
                return False
            _ADVISED_IDS.add(id(owner))
        return True


class CallPolicy:
    """Timeouts, deadlines and retries of one call (a mixin of ``ManagedLLM``, which sets the
    policy's attributes; accounting comes from :class:`~diverse_core.llm.usage.UsageMeter`)."""

    timeout: float | None
    total_timeout: float | None
    max_retries: int
    backoff_base: float
    backoff_max: float
    jitter: float
    _rng: random.Random
    _lock: threading.Lock

    def _add(self, **delta: float) -> None:
        raise NotImplementedError  # UsageMeter's

    def _delay(self, attempt: int) -> float:
        base = min(self.backoff_max, self.backoff_base * (2.0**attempt))
        with self._lock:
            factor = 1.0 + self.jitter * (2.0 * self._rng.random() - 1.0)
        return max(0.0, base * factor)

    def _retry_delay(self, exc: BaseException, attempt: int) -> float:
        """The server's ``Retry-After`` (capped at ``backoff_max``), else the backoff."""
        hint = retry_after(exc)
        return min(hint, self.backoff_max) if hint is not None else self._delay(attempt)

    def _deadline(self) -> float | None:
        return None if self.total_timeout is None else time.monotonic() + self.total_timeout

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def _limit(self, deadline: float | None) -> float | None:
        """This attempt's time limit: the per-attempt timeout, within the total deadline."""
        left = self._remaining(deadline)
        if left is None:
            return self.timeout
        return left if self.timeout is None else min(self.timeout, left)

    def _budget(self) -> str:
        text = f"timeout={self.timeout}s per attempt"
        if self.total_timeout is not None:
            text += f", total_timeout={self.total_timeout}s"
        return f"{text}, max_retries={self.max_retries}"

    def _give_up(self, exc: BaseException, call: _Call, *, deadline: bool = False) -> LLMError:
        self._add(failures=1)
        timed_out = deadline or isinstance(exc, _TIMEOUTS)
        what = "hit its total_timeout" if deadline else ("timed out" if timed_out else "failed")
        tries = f"{call.tries} attempt{'' if call.tries == 1 else 's'}"
        if call.received != call.tries:
            tries += f", {call.received} reaching the backend"
        err = (LLMTimeoutError if timed_out else LLMError)(
            f"LLM call {what} after {tries} ({self._budget()}): {type(exc).__name__}: {exc}",
            attempts=call.tries,
            timeout=self.timeout,
            received=call.received,
        )
        err.__cause__ = exc
        return err

    def _after_failure(self, exc: BaseException, call: _Call) -> float:
        """Account a failed attempt; return the wait before the next one, or raise the
        call's final :class:`LLMError` (from within the caller's ``except`` block)."""
        if isinstance(exc, StructuredOutputUnsupported):  # negotiation steps down; never retried
            self._add(rejections=1)
            raise exc
        self._add(timeouts=int(isinstance(exc, _TIMEOUTS)))
        if call.tries > self.max_retries or not is_transient(exc):
            raise self._give_up(exc, call)
        delay = self._retry_delay(exc, call.tries - 1)
        left = self._remaining(call.deadline)
        if left is not None and delay >= left:
            raise self._give_up(exc, call, deadline=True)
        self._add(retries=1)
        _log.warning(
            "LLM attempt %d of %d failed (%s: %s); retrying in %.2fs",
            call.tries, self.max_retries + 1, type(exc).__name__, exc, delay,
        )
        return delay

    def _slot_timeout(self, call: _Call) -> LLMError:
        self._add(not_started=1)
        return self._give_up(TimeoutError("no concurrency slot became free"), call, deadline=True)

    @staticmethod
    def _release(acquired: list[Slots]) -> None:
        for slots in reversed(acquired):
            slots.release()
