"""Usage accounting of :class:`~diverse_core.llm.ManagedLLM`: the :class:`LLMUsage` snapshot and
the thread-safe counters behind it."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .base import Completion
from .policy import _Call

__all__ = ["LLMUsage", "UsageMeter"]


@dataclass(frozen=True)
class LLMUsage:
    """Cumulative accounting of a :class:`ManagedLLM` (a snapshot).

    Every call either succeeds (``calls``) or fails (``failures``); each of its tries is an
    attempt the backend received (``attempts``) or one that timed out before any worker
    could start it (``not_started``), so ``calls + failures + retries == attempts +
    not_started`` over calls that returned or raised (a call whose caller cancelled it
    counts its attempts only). A structured attempt the backend refuses
    (:class:`~diverse_core.llm.structured.StructuredOutputUnsupported`) counts in
    ``rejections`` instead: ``calls + failures + retries + rejections == attempts + not_started``.

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


class UsageMeter:
    """The counters of :class:`LLMUsage`, kept under ``self._lock`` (a mixin of ``ManagedLLM``,
    which sets ``_lock``, ``_usage`` and ``_in_flight``)."""

    _lock: threading.Lock
    _usage: dict[str, Any]
    _in_flight: int

    @staticmethod
    def _zero_usage() -> dict[str, Any]:
        return {f: getattr(LLMUsage(), f) for f in LLMUsage.__dataclass_fields__}

    def usage(self) -> LLMUsage:
        """A snapshot of the cumulative accounting."""
        with self._lock:
            return LLMUsage(**self._usage)

    def reset_usage(self) -> None:
        """Zero every counter."""
        with self._lock:
            self._usage = self._zero_usage()

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
        known = out.prompt_tokens is not None or out.completion_tokens is not None
        self._add(
            calls=1,
            latency=out.latency,
            prompt_tokens=out.prompt_tokens or 0,
            completion_tokens=out.completion_tokens or 0,
            calls_with_token_counts=int(known),
        )
        return out
