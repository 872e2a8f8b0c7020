"""Per-attempt timeout, retries with backoff (or the server's ``Retry-After``), a concurrency
limit and exact accounting around any :class:`~diverse_core.llm.base.TextLLM`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParameterError
from .base import Completion, TextLLM, as_completion, ensure_llm
from .errors import LLMError, LLMTimeoutError, is_transient, retry_after
from .structured import (
    SHARED_MEMORY,
    MethodMemory,
    RoleCompletion,
    RoleRequest,
    StructuredOutputUnsupported,
    declared_methods,
    decode_json,
    token_budget,
)
from .workers import DaemonPool, Slots, wake_threadsafe

__all__ = ["ManagedLLM", "LLMUsage"]

_log = logging.getLogger("diverse_core")
_POOL_CAP = 32  # worker threads per ManagedLLM when max_concurrency is None

# One slot per serial backend (or per shared ``serial_key``), shared by every ManagedLLM.
_SERIAL_SLOTS: weakref.WeakValueDictionary[Hashable, Slots] = weakref.WeakValueDictionary()
_SERIAL_LOCK = threading.Lock()


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


@dataclass(frozen=True)
class _Job:
    """One backend invocation: a sync call and, for native-async backends, its coroutine."""

    sync: Callable[[], object]
    native: Callable[[], Awaitable[object]] | None = None


def _structured_out(raw: object) -> object:
    """A structured backend's return value as a Completion (a decoded object is re-serialised)."""
    if isinstance(raw, (Completion, str)):
        return raw
    dump = getattr(raw, "model_dump", None)  # a pydantic model from a framework adapter
    if callable(dump):
        raw = dump()
    if isinstance(raw, Mapping):
        return Completion(text=json.dumps(dict(raw)))
    raise TypeError(
        "complete_structured must return a Completion, a JSON str or a mapping; "
        f"got {type(raw).__name__}"
    )


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


def _native_async(backend: object) -> bool:
    """Whether ``backend.acomplete`` is truly asynchronous (not a sync call in a thread).

    A backend says so with a ``native_async`` attribute; without one, having ``acomplete``
    counts as native."""
    flag = getattr(backend, "native_async", None)
    if isinstance(flag, bool):
        return flag
    return callable(getattr(backend, "acomplete", None))


def _serial_slots(backend: object) -> Slots | None:
    """The shared one-call slot of a backend that declares ``serial = True``."""
    if getattr(backend, "serial", False) is not True:
        return None
    key: Hashable = ("id", id(backend))
    shared = getattr(backend, "serial_key", None)
    if shared is not None:
        try:
            hash(shared)
            key = ("key", shared)
        except TypeError:
            pass
    with _SERIAL_LOCK:
        slots = _SERIAL_SLOTS.get(key)
        if slots is None:
            slots = Slots(1)
            _SERIAL_SLOTS[key] = slots
        return slots


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


class ManagedLLM:
    """Wrap a :class:`TextLLM` with timeouts, retries, a concurrency limit and accounting.

    **Retries.** Transient failures (timeouts, connection errors, HTTP 408/409/425/429/5xx;
    see :func:`~diverse_core.llm.errors.is_transient`) are retried up to ``max_retries``
    times. Before a retry it waits what the server asked for when the error carries a
    ``Retry-After`` (see :func:`~diverse_core.llm.errors.retry_after`), capped at
    ``backoff_max``; otherwise ``min(backoff_max, backoff_base * 2**attempt)`` seconds scaled
    by a random factor in ``[1 - jitter, 1 + jitter]``. No wait goes past ``total_timeout``.
    Other errors are raised at once. Every :class:`LLMError` raised names the attempts made
    and the timeouts in force (also as ``.attempts`` / ``.timeout``); ``__cause__`` is the
    backend's last error. Each retry is logged as a warning on the ``"diverse_core"`` logger.

    **Client retries are not silently stacked.** When ``max_retries > 0`` and the backend's
    own client also retries (an ``OpenAILLM`` given a ``client=`` with ``max_retries > 0``, a
    LangChain ``ChatOpenAI`` with ``max_retries=2``, anything exposing ``max_retries`` > 0),
    a warning is logged once per client object (at the first ``ManagedLLM`` that wraps it, not
    again for later ones), naming both counts; the client is *not* changed (it is the caller's
    object). Set one of the two to 0. ``OpenAILLM`` builds its own clients with
    ``max_retries=0``, and the adapters send a structured method's first requests without the
    client's retries, so a refusal costs one request.

    **Timeouts really bound a call.** A backend without native async (only ``complete``,
    or a ``native_async = False`` attribute) runs in this wrapper's own bounded pool of
    *daemon* threads, for both :meth:`complete` and :meth:`acomplete`: a hung backend call
    is abandoned when its attempt times out, never blocks interpreter exit, and never
    occupies asyncio's default executor (other models keep working). An attempt still
    queued when it times out is cancelled and never starts. A native ``acomplete`` is
    cancelled on timeout. A thread cannot be killed: an abandoned call keeps its worker
    until the backend returns, and while hung calls hold every worker new attempts wait in
    the queue and time out (so the backend never sees more than ``max_concurrency`` calls;
    with ``max_concurrency=None`` the pool holds at most 32 threads).

    **What the clock measures.** The per-attempt ``timeout`` starts once the call holds a
    concurrency slot, so waiting for one is free. A backend that runs one call at a time
    declares ``serial = True`` (optionally ``serial_key``: backends with equal keys share
    one model, e.g. :class:`~diverse_core.llm.LocalGGUFLLM` on the same file); its calls
    then also wait, unclocked, for that backend's single slot, shared by every ManagedLLM.
    When an attempt on a serial backend times out, its ``interrupt()`` (if any) is called
    so the abandoned call frees the model early. A backend's ``prepare()`` (idempotent
    one-time set-up, e.g. loading a local model) runs once, before the first attempt and
    outside its clock (only ``total_timeout`` bounds it).

    A call abandoned inside native code may still run when the interpreter exits; daemon
    threads do not delay the exit, but a C++ library killed mid-call can abort the process.
    :class:`~diverse_core.llm.LocalGGUFLLM` therefore stops its generations at exit.

    **Concurrency.** At most ``max_concurrency`` calls are in flight at once across all
    threads and event loops sharing this object, sync and async calls together.

    Args:
        llm: the backend (anything with ``complete``; optional native ``acomplete``),
            or a plain callable ``prompt -> str``.
        timeout: seconds allowed per attempt; ``None`` for no limit.
        max_retries: extra attempts after a transient failure.
        backoff_base: first backoff delay in seconds.
        backoff_max: cap on any single wait between attempts (``Retry-After`` included).
        jitter: relative jitter of each backoff delay, in [0, 1].
        max_concurrency: most calls in flight at once; ``None`` for no limit.
        seed: seed of the jitter's random generator (for reproducible delays).
        total_timeout: optional deadline in seconds for a whole call (slot waits, attempts
            and waits between them); ``None`` (default) for none.

    Raises:
        InvalidParameterError: a parameter out of range, named with its value.

    Example:
        >>> llm = ManagedLLM(lambda p: "ok", timeout=5, max_retries=2, max_concurrency=4)
        >>> llm.complete("hi").text, llm.usage().calls, llm.usage().attempts
        ('ok', 1, 1)
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
        total_timeout: float | None = None,
        structured: bool = True,
        method_memory: MethodMemory | None = None,
    ) -> None:
        if isinstance(llm, ManagedLLM):
            llm = llm.inner
        timeout = _check_positive(timeout, "timeout")
        total_timeout = _check_positive(total_timeout, "total_timeout")
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
                "max_concurrency must be a positive integer or None; "
                f"got max_concurrency={max_concurrency!r}"
            )
        self.inner: TextLLM = ensure_llm(llm)
        self.timeout = timeout
        self.total_timeout = total_timeout
        self.max_retries = max_retries
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.jitter = float(jitter)
        self.max_concurrency = max_concurrency
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._usage: dict[str, Any] = self._zero_usage()
        self._in_flight = 0
        self._native = _native_async(self.inner)
        serial = _serial_slots(self.inner)
        self._slots = [
            s for s in (Slots(max_concurrency) if max_concurrency else None, serial) if s is not None
        ]
        interrupt = getattr(self.inner, "interrupt", None)
        self._interrupt: Callable[[], object] | None = (
            interrupt if callable(interrupt) and serial is not None else None
        )
        prepare = getattr(self.inner, "prepare", None)
        self._prepare: Callable[[], object] | None = prepare if callable(prepare) else None
        self._prepared = False
        self._executor: DaemonPool | None = None
        if not isinstance(structured, bool):
            raise InvalidParameterError(f"structured must be True or False; got structured={structured!r}")
        self.structured = structured
        self.structured_methods: tuple[str, ...] = declared_methods(self.inner) if structured else ()
        self._structured_native = self._native and callable(getattr(self.inner, "acomplete_structured", None))
        self._memory, self._memory_key = self._method_memory(method_memory)
        stacked = _client_retries(self.inner) if max_retries > 0 else None
        if stacked is not None and _first_advice(stacked[2]):
            _log.warning(
                "ManagedLLM(max_retries=%d) wraps %r whose client also retries (%s=%d): "
                "up to %d requests per call; set one of the two to 0",
                max_retries, self.inner, stacked[0], stacked[1],
                (max_retries + 1) * (stacked[1] + 1),
            )

    # ------------------------------------------------------------------ accounting
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

    # ------------------------------------------------------------------ retry policy
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

    # ------------------------------------------------------------------ backend calls
    def _pool(self) -> DaemonPool:
        with self._lock:
            if self._executor is None:
                self._executor = DaemonPool(self.max_concurrency or _POOL_CAP, "diverse-rag-llm")
            return self._executor

    def _call_backend(self, invoke: Callable[[], object]) -> Completion:
        start = time.perf_counter()
        out = as_completion(invoke())
        latency = time.perf_counter() - start
        return Completion(out.text, out.prompt_tokens, out.completion_tokens, latency, out.attempts)

    def _abandon(self, pool: DaemonPool, fut: concurrent.futures.Future[Any]) -> None:
        """Stop waiting for an attempt; one that has not started never will, and a serial
        backend's running one is asked to stop (its ``interrupt()``)."""
        if pool.cancel(fut):
            self._add(not_started=1)
        elif self._interrupt is not None and not fut.done():
            self._interrupt()

    def _timed_out(self, limit: float) -> _AttemptTimeout:
        return _AttemptTimeout(f"attempt exceeded its {limit:.3g}s limit (timeout={self.timeout}s)")

    def _attempt_sync(self, job: _Job, call: _Call) -> Completion:
        call.tries += 1
        limit = self._limit(call.deadline)
        if limit is None:
            self._received(call)
            return self._call_backend(job.sync)
        pool = self._pool()
        fut = pool.submit(
            self._call_backend, job.sync, on_start=functools.partial(self._received, call)
        )
        try:
            done, _ = concurrent.futures.wait([fut], timeout=limit)
        except BaseException:
            self._abandon(pool, fut)
            raise
        if not done:
            self._abandon(pool, fut)
            if not fut.done() or fut.cancelled():
                raise self._timed_out(limit)
        result: Completion = fut.result()
        return result

    async def _attempt_async(self, job: _Job, call: _Call) -> Completion:
        call.tries += 1
        limit = self._limit(call.deadline)
        if job.native is not None:
            self._received(call)
            start = time.perf_counter()
            coro = job.native()
            if limit is None:
                raw = await coro
            else:
                try:
                    raw = await asyncio.wait_for(coro, limit)
                except asyncio.TimeoutError as exc:
                    raise self._timed_out(limit) from exc
            out = as_completion(raw)
            latency = time.perf_counter() - start
            return Completion(out.text, out.prompt_tokens, out.completion_tokens, latency)
        pool = self._pool()
        fut = pool.submit(
            self._call_backend, job.sync, on_start=functools.partial(self._received, call)
        )
        try:
            done = await self._wait_for_job(fut, limit)
        except BaseException:  # the caller's task was cancelled
            self._abandon(pool, fut)
            raise
        if not done:
            self._abandon(pool, fut)
            if not fut.done() or fut.cancelled():
                raise self._timed_out(limit or 0.0)
        result: Completion = fut.result()
        return result

    @staticmethod
    async def _wait_for_job(fut: concurrent.futures.Future[Any], limit: float | None) -> bool:
        """Await a pool job without blocking the loop; ``False`` when ``limit`` passed first."""
        loop = asyncio.get_running_loop()
        signal: asyncio.Future[None] = loop.create_future()
        fut.add_done_callback(lambda _: wake_threadsafe(loop, signal))
        await asyncio.wait({signal}, timeout=limit)
        return fut.done()

    # ------------------------------------------------------------------ one-time preparation
    def _prepare_failed(self, exc: BaseException, call: _Call, *, deadline: bool = False) -> LLMError:
        self._add(not_started=1)
        return self._give_up(exc, call, deadline=deadline)

    def _prepare_sync(self, call: _Call) -> None:
        """Run the backend's ``prepare()`` (e.g. loading a local model) once, unclocked."""
        if self._prepare is None or self._prepared:
            return
        try:
            self._prepare()
        except Exception as exc:  # noqa: BLE001 - reported as the call's failure
            raise self._prepare_failed(exc, call) from exc
        self._prepared = True

    async def _prepare_async(self, call: _Call) -> None:
        """:meth:`_prepare_sync` in a worker thread; only ``total_timeout`` bounds it."""
        if self._prepare is None or self._prepared:
            return
        pool = self._pool()
        fut = pool.submit(self._prepare)
        try:
            done = await self._wait_for_job(fut, self._remaining(call.deadline))
        except BaseException:  # the caller's task was cancelled
            pool.cancel(fut)
            raise
        if not done:
            pool.cancel(fut)
            stuck = TimeoutError("the backend's prepare() did not finish")
            raise self._prepare_failed(stuck, call, deadline=True)
        exc = fut.exception()
        if exc is not None:
            raise self._prepare_failed(exc, call) from exc
        self._prepared = True

    # ------------------------------------------------------------------ public calls
    def _text_job(self, prompt: str, kwargs: dict[str, Any]) -> _Job:
        backend: Any = self.inner
        native = (lambda: backend.acomplete(prompt, **kwargs)) if self._native else None
        return _Job(lambda: backend.complete(prompt, **kwargs), native)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """Complete ``prompt`` with timeout, retries and the concurrency limit.

        Raises:
            LLMTimeoutError: the last attempt timed out, or the total deadline passed.
            LLMError: a non-transient error, or transient errors outlasted the retries.
        """
        return self._run_sync(self._text_job(prompt, kwargs))

    def _run_sync(self, job: _Job) -> Completion:
        call = _Call(self._deadline())
        acquired: list[Slots] = []
        try:
            for slots in self._slots:
                if not slots.acquire(self._remaining(call.deadline)):
                    raise self._slot_timeout(call)
                acquired.append(slots)
        except BaseException:
            self._release(acquired)
            raise
        self._enter()
        try:
            self._prepare_sync(call)
            while True:
                try:
                    out = self._attempt_sync(job, call)
                except Exception as exc:  # noqa: BLE001 - classified in _after_failure
                    time.sleep(self._after_failure(exc, call))
                    continue
                return self._succeed(out, call)
        finally:
            self._leave()
            self._release(acquired)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete`: awaits the backend's native ``acomplete`` when it
        has one, else runs ``complete`` in this wrapper's own daemon worker pool."""
        return await self._run_async(self._text_job(prompt, kwargs))

    async def _run_async(self, job: _Job) -> Completion:
        call = _Call(self._deadline())
        acquired: list[Slots] = []
        try:
            for slots in self._slots:
                if not await slots.aacquire(self._remaining(call.deadline)):
                    raise self._slot_timeout(call)
                acquired.append(slots)
        except BaseException:
            self._release(acquired)
            raise
        self._enter()
        try:
            await self._prepare_async(call)
            while True:
                try:
                    out = await self._attempt_async(job, call)
                except Exception as exc:  # noqa: BLE001 - classified in _after_failure
                    await asyncio.sleep(self._after_failure(exc, call))
                    continue
                return self._succeed(out, call)
        finally:
            self._leave()
            self._release(acquired)

    # ------------------------------------------------------------------ structured role calls
    def _method_memory(self, given: MethodMemory | None) -> tuple[MethodMemory, Hashable]:
        """Where refusals are remembered: the backend's ``structured_key`` in the shared
        memory (every wrapper of that model learns at once), else this wrapper's own."""
        key = getattr(self.inner, "structured_key", None)
        if key is not None:
            try:
                hash(key)
            except TypeError:
                key = None
        if key is None:
            return given or MethodMemory(), ("backend", id(self.inner))
        return given or SHARED_MEMORY, ("key", key)

    @property
    def method_memory(self) -> MethodMemory:
        """The memory of refused methods this wrapper consults."""
        return self._memory

    def refused_methods(self) -> dict[str, str]:
        """The structured methods this model refused so far, with the reasons."""
        return self._memory.rejected(self._memory_key)

    def role_methods(self, request: RoleRequest) -> tuple[str, ...]:
        """The structured methods ``request`` would try now, strongest first (``()``: text)."""
        if not request.structured or not self.structured_methods:
            return ()
        return self._memory.usable(self._memory_key, self.structured_methods)

    def _structured_job(self, request: RoleRequest, method: str, kwargs: dict[str, Any]) -> _Job:
        backend: Any = self.inner
        assert request.schema is not None  # structured requests have one
        args = (request.messages, request.schema.grammar_safe(budget=self._token_budget(kwargs)))

        def sync() -> object:
            return _structured_out(backend.complete_structured(*args, method=method, **kwargs))

        async def native() -> object:
            return _structured_out(await backend.acomplete_structured(*args, method=method, **kwargs))

        return _Job(sync, native if self._structured_native else None)

    def _token_budget(self, kwargs: Mapping[str, Any]) -> int | None:
        """The call's ``max_tokens`` (its own, else the backend's), which the grammar-bound
        schema is fitted to (:meth:`OutputSchema.grammar_safe`); ``None`` when unknown."""
        return token_budget(kwargs.get("max_tokens"), kwargs.get("max_new_tokens"),
                            getattr(self.inner, "max_tokens", None), getattr(self.inner, "max_new_tokens", None))

    def _refused(self, exc: StructuredOutputUnsupported, method: str, rejected: list[str]) -> None:
        self._memory.reject(self._memory_key, method, exc.reason or str(exc))
        rejected.append(method)
        _log.info("%r refused structured method %r (%s); trying the next one", self.inner, method, exc)

    def _structured_reply(self, out: Completion, request: RoleRequest, method: str,
                          rejected: list[str]) -> RoleCompletion:
        self._memory.confirm(self._memory_key, method)
        assert request.schema is not None  # structured requests have one
        value, problems = decode_json(out.text, request.schema)
        return RoleCompletion(
            out.text, out.prompt_tokens, out.completion_tokens, out.latency, out.attempts,
            path="structured", method=method, value=value, problems=problems, rejected=tuple(rejected),
        )

    def _text_reply(self, out: Completion, request: RoleRequest, rejected: list[str]) -> RoleCompletion:
        fell_back = request.structured and bool(self.structured_methods)
        if fell_back and self._memory.first_warning(self._memory_key):
            refused = self._memory.rejected(self._memory_key)
            _log.warning(
                "%r refused every structured method (%s); its roles use the text prompts and parsers",
                self.inner, "; ".join(f"{m}: {why}" for m, why in refused.items()) or "none usable",
            )
        return RoleCompletion(
            out.text, out.prompt_tokens, out.completion_tokens, out.latency, out.attempts,
            path="text", method="text", fell_back=fell_back, rejected=tuple(rejected),
        )

    def _gate(self, request: RoleRequest) -> Slots | None:
        """The model's probe gate while no structured method is known to work for it."""
        if not self.role_methods(request) or self._memory.confirmed(self._memory_key) is not None:
            return None
        return self._memory.gate(self._memory_key)

    def complete_role(self, request: RoleRequest, **kwargs: Any) -> RoleCompletion:
        """One role call, structured when the backend can take it (see
        :mod:`diverse_core.llm.structured`): the strongest method this model has not
        refused, stepping down on a refusal (remembered, paid once per model), then the
        text prompt (``fell_back=True``, logged once per model as a warning).

        Raises:
            LLMTimeoutError / LLMError: as :meth:`complete`.
        """
        rejected: list[str] = []
        gate = self._gate(request)
        if gate is not None:
            gate.acquire()
            if self._memory.confirmed(self._memory_key) is not None:
                gate.release()
                gate = None
        try:
            for method in self.role_methods(request):
                try:
                    out = self._run_sync(self._structured_job(request, method, kwargs))
                except StructuredOutputUnsupported as exc:
                    self._refused(exc, method, rejected)
                    continue
                return self._structured_reply(out, request, method, rejected)
        finally:
            if gate is not None:
                gate.release()
        return self._text_reply(self._run_sync(self._text_job(request.prompt, kwargs)), request, rejected)

    async def acomplete_role(self, request: RoleRequest, **kwargs: Any) -> RoleCompletion:
        """Asynchronous :meth:`complete_role`."""
        rejected: list[str] = []
        gate = self._gate(request)
        if gate is not None:
            await gate.aacquire()
            if self._memory.confirmed(self._memory_key) is not None:
                gate.release()
                gate = None
        try:
            for method in self.role_methods(request):
                try:
                    out = await self._run_async(self._structured_job(request, method, kwargs))
                except StructuredOutputUnsupported as exc:
                    self._refused(exc, method, rejected)
                    continue
                return self._structured_reply(out, request, method, rejected)
        finally:
            if gate is not None:
                gate.release()
        out = await self._run_async(self._text_job(request.prompt, kwargs))
        return self._text_reply(out, request, rejected)

    def close(self) -> None:
        """Cancel queued attempts and let this wrapper's idle worker threads end."""
        with self._lock:
            pool, self._executor = self._executor, None
        if pool is not None:
            pool.close()

    def __repr__(self) -> str:
        return (
            f"ManagedLLM({self.inner!r}, timeout={self.timeout}, max_retries={self.max_retries}, "
            f"max_concurrency={self.max_concurrency})"
        )
