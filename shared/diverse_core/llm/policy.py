"""The call policy of :class:`~diverse_core.llm.ManagedLLM`: parameter checks, deadlines and
per-attempt limits, the retry decision and its wait, the final error, the accounting
(:class:`LLMUsage`) - and the advice when a backend's own client also retries."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from typing import Any

from ..errors import InvalidParameterError
from ..param_checks import check_positive
from .base import Completion
from .errors import LLMError, LLMTimeoutError, is_transient, retry_after
from .structured import StructuredOutputUnsupported

__all__ = ["CallPolicy", "LLMUsage"]

_log = logging.getLogger("diverse_core")


@dataclass(frozen=True)
class LLMUsage:
    """Cumulative accounting of a :class:`ManagedLLM` (a snapshot).

    Every call either succeeds (``calls``) or fails (``failures``); each of its tries is an
    attempt the backend received (``attempts``) or one that timed out before any worker
    could start it (``not_started``), and a refused structured try counts in ``rejections``, so
    ``calls + failures + retries + rejections == attempts + not_started`` over calls that
    returned or raised (a call whose caller cancelled it counts its attempts only).

    Attributes:
        calls: calls that returned a completion.
        failures: calls that raised after their last attempt.
        attempts: backend invocations, retries of failed calls included.
        retries: attempts repeated after a transient error.
        timeouts: attempts that hit the per-attempt timeout (or the total deadline).
        prompt_tokens: prompt tokens summed over calls whose backend reported them.
        completion_tokens: completion tokens summed likewise.
        calls_with_token_counts: calls whose backend reported token counts.
        latency: seconds spent in successful attempts, summed.
        peak_in_flight: the most calls that ran at the same time.
        not_started: attempts that timed out while queued behind hung calls (the backend
            never received them), plus calls whose total deadline passed while they waited
            for a concurrency slot.
        rejections: structured attempts the backend refused (paid once per method and model).

    Example:
        >>> LLMUsage().calls
        0
    """

    calls: int = 0
    failures: int = 0
    attempts: int = 0
    retries: int = 0
    timeouts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls_with_token_counts: int = 0
    latency: float = 0.0
    peak_in_flight: int = 0
    not_started: int = 0
    rejections: int = 0


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


def _limit_or_none(value: float | None, name: str) -> float | None:
    """``value`` if > 0; ``None`` for ``None`` or infinity (no limit)."""
    return None if value is None or value == float("inf") else check_positive(value, name)


def _check_count(value: object, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidParameterError(f"{name} must be an integer >= {low}; got {name}={value!r}")


def _check_nonneg(value: object, name: str) -> float:
    """``value`` as a float >= 0 (infinity allowed: no cap)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidParameterError(f"{name} must be a number >= 0; got {name}={value!r}")
    return float(value)


def _client_retries(backend: object) -> tuple[str, int, object] | None:
    """A retry count > 0 that the backend's own client applies, with the object that holds it
    (read from instance attributes only, so no lazy client is created), e.g.
    ``OpenAILLM(client=OpenAI())`` or a LangChain ``ChatOpenAI(max_retries=2)`` inside
    ``LangChainLLM``."""

    def attrs(obj: object) -> dict[str, Any]:
        found = getattr(obj, "__dict__", None)
        return found if isinstance(found, dict) else {}

    top = attrs(backend)
    owners: list[tuple[str, object]] = [("", backend)]
    for attr in ("client", "_client", "async_client", "_async_client", "model", "llm", "_model"):
        if top.get(attr) is not None:
            owners.append((f"{attr}.", top[attr]))
    for prefix, owner in owners:
        value = attrs(owner).get("max_retries")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return f"{prefix}max_retries", value, owner
    return None


# The ids of the clients whose stacked retries were already reported (once per client object,
# however many ManagedLLM wrap it: a face builds one per pipeline, a service one per request).
_ADVISED: set[int] = set()
_ADVISED_LOCK = threading.Lock()


def _first_advice(owner: object) -> bool:
    """``True`` the first time ``owner``'s stacked retries are reported in this process."""
    with _ADVISED_LOCK:
        if id(owner) in _ADVISED:
            return False
        _ADVISED.add(id(owner))
    with contextlib.suppress(TypeError):  # forgotten with the object (when it takes a weak reference)
        weakref.finalize(owner, _ADVISED.discard, id(owner))
    return True


def advise_stacked_retries(backend: object, max_retries: int) -> None:
    """Warn once per client when ``backend``'s own client also retries (see ManagedLLM)."""
    stacked = _client_retries(backend) if max_retries > 0 else None
    if stacked is not None and _first_advice(stacked[2]):
        _log.warning(
            "ManagedLLM(max_retries=%d) wraps %r whose client also retries (%s=%d): "
            "up to %d requests per call; set one of the two to 0",
            max_retries, backend, stacked[0], stacked[1], (max_retries + 1) * (stacked[1] + 1),
        )


class CallPolicy:
    """Timeouts, deadlines, retries and accounting of one call (a base of ``ManagedLLM``,
    which sets the attributes below)."""

    timeout: float | None
    total_timeout: float | None
    max_retries: int
    backoff_base: float
    backoff_max: float
    jitter: float
    _rng: random.Random
    _lock: threading.Lock
    _usage: dict[str, Any]
    _in_flight: int

    # ------------------------------------------------------------------ accounting
    def usage(self) -> LLMUsage:
        """A snapshot of the cumulative accounting."""
        with self._lock:
            return LLMUsage(**self._usage)

    def reset_usage(self) -> None:
        """Zero every counter."""
        with self._lock:
            self._usage = {f.name: f.default for f in fields(LLMUsage)}

    def _add(self, **delta: float) -> None:
        with self._lock:
            for key, value in delta.items():
                self._usage[key] += value

    def _received(self, call: _Call) -> None:
        """An attempt reached the backend (runs just before it is invoked)."""
        call.received += 1
        self._add(attempts=1)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._usage["peak_in_flight"] = max(self._usage["peak_in_flight"], self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _succeed(self, out: Completion, call: _Call) -> Completion:
        out = Completion(out.text, out.prompt_tokens, out.completion_tokens, out.latency, call.tries)
        self._add(
            calls=1,
            latency=out.latency,
            prompt_tokens=out.prompt_tokens or 0,
            completion_tokens=out.completion_tokens or 0,
            calls_with_token_counts=int(out.prompt_tokens is not None or out.completion_tokens is not None),
        )
        return out

    # ------------------------------------------------------------------ deadlines and retries
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

    def _give_up(self, exc: BaseException, call: _Call, *, deadline: bool = False) -> LLMError:
        self._add(failures=1)
        timed_out = deadline or isinstance(exc, _TIMEOUTS)
        what = "hit its total_timeout" if deadline else ("timed out" if timed_out else "failed")
        tries = f"{call.tries} attempt{'' if call.tries == 1 else 's'}"
        if call.received != call.tries:
            tries += f", {call.received} reaching the backend"
        budget = f"timeout={self.timeout}s per attempt"
        if self.total_timeout is not None:
            budget += f", total_timeout={self.total_timeout}s"
        err = (LLMTimeoutError if timed_out else LLMError)(
            f"LLM call {what} after {tries} ({budget}, max_retries={self.max_retries}): "
            f"{type(exc).__name__}: {exc}",
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
