"""Per-call timeout, retries with exponential backoff, a concurrency limit and accounting
around any :class:`~diverse_core.llm.base.TextLLM`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParameterError
from .base import Completion, TextLLM, as_completion, ensure_llm
from .errors import LLMError, LLMTimeoutError, is_transient

__all__ = ["ManagedLLM", "LLMUsage"]


@dataclass(frozen=True)
class LLMUsage:
    """Cumulative accounting of a :class:`ManagedLLM` (a snapshot).

    Attributes:
        calls: calls that returned a completion.
        failures: calls that raised after their last attempt.
        attempts: attempts made in total (``calls + failures + retries``).
        retries: attempts repeated after a transient error.
        timeouts: attempts that hit the per-call timeout.
        prompt_tokens: prompt tokens summed over calls whose backend reported them.
        completion_tokens: completion tokens summed likewise.
        calls_with_token_counts: calls whose backend reported token counts.
        latency: seconds spent in successful attempts, summed.
        peak_in_flight: the most calls that ran at the same time.
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


def _check_nonneg(value: float | None, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidParameterError(f"{name} must be a number >= 0; got {name}={value!r}")


class ManagedLLM:
    """Wrap a :class:`TextLLM` with timeout, retries, a concurrency limit and accounting.

    Transient failures (timeouts, connection errors, HTTP 429/5xx; see
    :func:`~diverse_core.llm.errors.is_transient`) are retried up to ``max_retries``
    times, sleeping ``min(backoff_max, backoff_base * 2**attempt)`` seconds scaled by a
    random factor in ``[1 - jitter, 1 + jitter]``. Other errors are raised at once as
    :class:`LLMError`; a call that keeps timing out raises :class:`LLMTimeoutError`.

    A synchronous call with a timeout runs in a worker thread; when it times out the
    thread cannot be stopped and finishes in the background (its result is dropped).

    Args:
        llm: the backend (anything with ``complete``; optional native ``acomplete``),
            or a plain callable ``prompt -> str``.
        timeout: seconds allowed per attempt; ``None`` for no limit.
        max_retries: extra attempts after a transient failure.
        backoff_base: first backoff delay in seconds.
        backoff_max: cap on any single backoff delay.
        jitter: relative jitter of each delay, in [0, 1].
        max_concurrency: most calls in flight at once (per event loop for async
            calls, per process for sync calls); ``None`` for no limit.
        seed: seed of the jitter's random generator (for reproducible delays).

    Example:
        >>> llm = ManagedLLM(lambda p: "ok", timeout=5, max_retries=2, max_concurrency=4)
        >>> llm.complete("hi").text, llm.usage().calls
        ('ok', 1)
    """

    def __init__(
        self,
        llm: object,
        *,
        timeout: float | None = 60.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        jitter: float = 0.25,
        max_concurrency: int | None = 4,
        seed: int | None = None,
    ) -> None:
        if isinstance(llm, ManagedLLM):
            llm = llm.inner
        _check_nonneg(timeout, "timeout", allow_none=True)
        if timeout is not None and timeout == 0:
            raise InvalidParameterError(f"timeout must be > 0 or None; got timeout={timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidParameterError(
                f"max_retries must be an integer >= 0; got max_retries={max_retries!r}"
            )
        _check_nonneg(backoff_base, "backoff_base")
        _check_nonneg(backoff_max, "backoff_max")
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)) or not 0 <= jitter <= 1:
            raise InvalidParameterError(f"jitter must be in [0, 1]; got jitter={jitter!r}")
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise InvalidParameterError(
                f"max_concurrency must be a positive integer or None; got max_concurrency={max_concurrency!r}"
            )
        self.inner: TextLLM = ensure_llm(llm)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.jitter = float(jitter)
        self.max_concurrency = max_concurrency
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._usage: dict[str, Any] = {f: getattr(LLMUsage(), f) for f in LLMUsage.__dataclass_fields__}
        self._in_flight = 0
        self._thread_sem = (
            threading.BoundedSemaphore(max_concurrency) if max_concurrency is not None else None
        )
        self._loop_sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ accounting
    def usage(self) -> LLMUsage:
        """A snapshot of the cumulative accounting."""
        with self._lock:
            return LLMUsage(**self._usage)

    def reset_usage(self) -> None:
        """Zero every counter."""
        with self._lock:
            self._usage = {f: getattr(LLMUsage(), f) for f in LLMUsage.__dataclass_fields__}

    def _add(self, **delta: float) -> None:
        with self._lock:
            for key, value in delta.items():
                self._usage[key] += value

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._usage["peak_in_flight"] = max(self._usage["peak_in_flight"], self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record_success(self, out: Completion) -> None:
        known = out.prompt_tokens is not None or out.completion_tokens is not None
        self._add(
            calls=1,
            latency=out.latency,
            prompt_tokens=out.prompt_tokens or 0,
            completion_tokens=out.completion_tokens or 0,
            calls_with_token_counts=int(known),
        )

    # ------------------------------------------------------------------ retry policy
    def _delay(self, attempt: int) -> float:
        base = min(self.backoff_max, self.backoff_base * (2.0**attempt))
        with self._lock:
            factor = 1.0 + self.jitter * (2.0 * self._rng.random() - 1.0)
        return max(0.0, base * factor)

    def _give_up(self, exc: BaseException, timed_out: bool) -> LLMError:
        self._add(failures=1)
        if isinstance(exc, LLMError) and not timed_out:
            return exc
        if timed_out:
            err: LLMError = LLMTimeoutError(
                f"LLM call timed out after {self.timeout}s ({self.max_retries} retries)"
            )
        else:
            err = LLMError(f"LLM call failed: {type(exc).__name__}: {exc}")
        err.__cause__ = exc
        return err

    # ------------------------------------------------------------------ sync
    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(4, (self.max_concurrency or 4) * 2),
                    thread_name_prefix="diverse-rag-llm",
                )
            return self._executor

    def _attempt_sync(self, prompt: str, kwargs: dict[str, Any]) -> Completion:
        start = time.perf_counter()
        if self.timeout is None:
            raw: object = self.inner.complete(prompt, **kwargs)
        else:
            future = self._pool().submit(self.inner.complete, prompt, **kwargs)
            raw = future.result(timeout=self.timeout)
        return self._finish(raw, start)

    def _finish(self, raw: object, start: float) -> Completion:
        out = as_completion(raw)
        latency = time.perf_counter() - start
        return Completion(out.text, out.prompt_tokens, out.completion_tokens, latency, out.attempts)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """Complete ``prompt`` with timeout, retries and the concurrency limit.

        Raises:
            LLMTimeoutError: every attempt timed out.
            LLMError: a non-transient error, or transient errors outlasted the retries.
        """
        if self._thread_sem is not None:
            self._thread_sem.acquire()
        self._enter()
        try:
            attempt = 0
            while True:
                self._add(attempts=1)
                try:
                    out = self._attempt_sync(prompt, kwargs)
                except Exception as exc:  # noqa: BLE001 - classified below
                    timed_out = isinstance(exc, (TimeoutError, concurrent.futures.TimeoutError))
                    self._add(timeouts=int(timed_out))
                    if attempt >= self.max_retries or not is_transient(exc):
                        raise self._give_up(exc, timed_out) from exc
                    self._add(retries=1)
                    time.sleep(self._delay(attempt))
                    attempt += 1
                    continue
                out = Completion(out.text, out.prompt_tokens, out.completion_tokens, out.latency, attempt + 1)
                self._record_success(out)
                return out
        finally:
            self._leave()
            if self._thread_sem is not None:
                self._thread_sem.release()

    # ------------------------------------------------------------------ async
    def _loop_sem(self) -> asyncio.Semaphore | None:
        if self.max_concurrency is None:
            return None
        loop = asyncio.get_running_loop()
        with self._lock:
            sem = self._loop_sems.get(loop)
            if sem is None:
                sem = asyncio.Semaphore(self.max_concurrency)
                self._loop_sems[loop] = sem
            return sem

    async def _attempt_async(self, prompt: str, kwargs: dict[str, Any]) -> Completion:
        start = time.perf_counter()
        native = getattr(self.inner, "acomplete", None)
        if native is not None:
            coro: Any = native(prompt, **kwargs)
        else:
            coro = asyncio.to_thread(self.inner.complete, prompt, **kwargs)
        raw = await (coro if self.timeout is None else asyncio.wait_for(coro, self.timeout))
        return self._finish(raw, start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete`: uses the backend's ``acomplete`` when it has one,
        else runs ``complete`` in a worker thread."""
        sem = self._loop_sem()
        if sem is not None:
            await sem.acquire()
        self._enter()
        try:
            attempt = 0
            while True:
                self._add(attempts=1)
                try:
                    out = await self._attempt_async(prompt, kwargs)
                except Exception as exc:  # noqa: BLE001 - classified below
                    timed_out = isinstance(exc, (TimeoutError, asyncio.TimeoutError))
                    self._add(timeouts=int(timed_out))
                    if attempt >= self.max_retries or not is_transient(exc):
                        raise self._give_up(exc, timed_out) from exc
                    self._add(retries=1)
                    await asyncio.sleep(self._delay(attempt))
                    attempt += 1
                    continue
                out = Completion(out.text, out.prompt_tokens, out.completion_tokens, out.latency, attempt + 1)
                self._record_success(out)
                return out
        finally:
            self._leave()
            if sem is not None:
                sem.release()

    def close(self) -> None:
        """Release the worker threads used for synchronous timeouts."""
        with self._lock:
            pool, self._executor = self._executor, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return (
            f"ManagedLLM({self.inner!r}, timeout={self.timeout}, max_retries={self.max_retries}, "
            f"max_concurrency={self.max_concurrency})"
        )
