"""Per-attempt timeout, retries with backoff (or the server's ``Retry-After``), a concurrency
limit and exact accounting around any :class:`~diverse_core.llm.base.TextLLM`.

The call policy and accounting are :mod:`.policy`, structured negotiation :mod:`.negotiation`,
the worker pool and slots :mod:`.workers`; this module runs attempts on them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import random
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from ..errors import InvalidParameterError
from ..param_checks import check_unit_interval
from .base import Completion, TextLLM, as_completion, ensure_llm
from .negotiation import StructuredNegotiation
from .policy import (
    CallPolicy,
    LLMUsage,
    _AttemptTimeout,
    _Call,
    _check_count,
    _check_nonneg,
    _Job,
    _limit_or_none,
    advise_stacked_retries,
)
from .structured import MethodMemory, declared_methods
from .workers import DaemonPool, Slots, wake_threadsafe

__all__ = ["ManagedLLM", "LLMUsage"]

_POOL_CAP = 32  # worker threads per ManagedLLM when max_concurrency is None

# One slot per serial backend (or per shared ``serial_key``), shared by every ManagedLLM.
_SERIAL_SLOTS: weakref.WeakValueDictionary[Hashable, Slots] = weakref.WeakValueDictionary()
_SERIAL_LOCK = threading.Lock()


def _native_async(backend: object) -> bool:
    """Whether ``backend.acomplete`` is truly asynchronous: its ``native_async`` attribute when
    it has one, else whether it has ``acomplete`` at all."""
    flag = getattr(backend, "native_async", None)
    return flag if isinstance(flag, bool) else callable(getattr(backend, "acomplete", None))


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
            slots = _SERIAL_SLOTS[key] = Slots(1)
        return slots


class ManagedLLM(CallPolicy, StructuredNegotiation):
    """Wrap a :class:`TextLLM` with timeouts, retries, a concurrency limit and accounting.

    **Retries.** Transient failures (timeouts, connection errors, HTTP 408/409/425/429/5xx, an
    unreadable reply; see :func:`~diverse_core.llm.errors.is_transient`) are retried up to
    ``max_retries`` times, after the server's ``Retry-After`` when the error carries one (see
    :func:`~diverse_core.llm.errors.retry_after`), else ``min(backoff_max, backoff_base *
    2**attempt)`` seconds times a random factor in ``[1 - jitter, 1 + jitter]``; no wait is
    longer than ``backoff_max`` or goes past ``total_timeout``. Other errors are raised at once.
    Every :class:`LLMError` names the attempts made and the timeouts in force (also as
    ``.attempts`` / ``.timeout``; ``__cause__`` is the backend's last error). Each retry is
    logged as a warning on the ``"diverse_core"`` logger, and so is, once per client object, a
    backend whose own client also retries (``max_retries > 0`` on it: set one of the two to 0).

    **Timeouts really bound a call.** A backend without native async (only ``complete``, or
    ``native_async = False``) runs in this wrapper's own bounded pool of *daemon* threads, sync
    and async calls alike: a hung call is abandoned at its timeout, never blocks interpreter exit
    and never occupies asyncio's default executor; an attempt still queued when it times out
    never starts. A native ``acomplete`` is cancelled on timeout. An abandoned call keeps its
    worker until the backend returns, so the backend never sees more than ``max_concurrency``
    calls (at most 32 threads with ``max_concurrency=None``).

    **What the clock measures.** The per-attempt ``timeout`` starts once the call holds a
    concurrency slot. A backend that runs one call at a time declares ``serial = True``
    (optionally a ``serial_key`` shared by backends of one model, as
    :class:`~diverse_core.llm.LocalGGUFLLM` does); its calls also wait, unclocked, for its
    single slot, shared by every ManagedLLM, and an attempt of it that times out calls its
    ``interrupt()`` (if any). A backend's ``prepare()`` (idempotent one-time set-up, e.g.
    loading a local model) runs once, before the first attempt, bounded only by ``total_timeout``.

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
        _check_count(max_retries, "max_retries", 0)
        if max_concurrency is not None:
            _check_count(max_concurrency, "max_concurrency", 1)
        if not isinstance(structured, bool):
            raise InvalidParameterError(f"structured must be True or False; got structured={structured!r}")
        self.inner: TextLLM = ensure_llm(llm)
        self.timeout = _limit_or_none(timeout, "timeout")
        self.total_timeout = _limit_or_none(total_timeout, "total_timeout")
        self.max_retries = max_retries
        self.backoff_base = _check_nonneg(backoff_base, "backoff_base")
        self.backoff_max = _check_nonneg(backoff_max, "backoff_max")
        self.jitter = check_unit_interval(jitter, "jitter")
        self.max_concurrency = max_concurrency
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._in_flight = 0
        self.reset_usage()
        self._native = _native_async(self.inner)
        serial = _serial_slots(self.inner)
        self._slots = [s for s in (Slots(max_concurrency) if max_concurrency else None, serial) if s is not None]
        interrupt = getattr(self.inner, "interrupt", None)
        self._interrupt: Callable[[], object] | None = interrupt if callable(interrupt) and serial else None
        prepare = getattr(self.inner, "prepare", None)
        self._prepare: Callable[[], object] | None = prepare if callable(prepare) else None
        self._prepared = False
        self._executor: DaemonPool | None = None
        self.structured = structured
        self.structured_methods: tuple[str, ...] = declared_methods(self.inner) if structured else ()
        self._structured_native = self._native and callable(getattr(self.inner, "acomplete_structured", None))
        self._memory, self._memory_key = self._method_memory(method_memory)
        advise_stacked_retries(self.inner, max_retries)

    # ------------------------------------------------------------------ backend calls
    def _pool(self) -> DaemonPool:
        with self._lock:
            if self._executor is None:
                self._executor = DaemonPool(self.max_concurrency or _POOL_CAP, "diverse-rag-llm")
                # a wrapper built per request (a pipeline per request) lets its idle workers end
                # when it is dropped, not 10 s later (a busy service would pile them up)
                weakref.finalize(self, self._executor.close)
            return self._executor

    @staticmethod
    def _timed(raw: object, start: float) -> Completion:
        out = as_completion(raw)
        return Completion(out.text, out.prompt_tokens, out.completion_tokens, time.perf_counter() - start)

    def _call_backend(self, invoke: Callable[[], object]) -> Completion:
        start = time.perf_counter()
        return self._timed(invoke(), start)

    def _submit(self, call: _Call, invoke: Callable[[], object]) -> concurrent.futures.Future[Any]:
        """Queue one attempt in the worker pool (with the caller's context, for tracing)."""
        return self._pool().submit(contextvars.copy_context().run, self._call_backend, invoke,
                                   on_start=functools.partial(self._received, call))

    def _abandon(self, fut: concurrent.futures.Future[Any]) -> None:
        """Stop waiting for an attempt; one that has not started never will, and a serial
        backend's running one is asked to stop (its ``interrupt()``)."""
        if self._pool().cancel(fut):
            self._add(not_started=1)
        elif self._interrupt is not None and not fut.done():
            self._interrupt()

    def _timed_out(self, limit: float) -> _AttemptTimeout:
        return _AttemptTimeout(f"attempt exceeded its {limit:.3g}s limit (timeout={self.timeout}s)")

    def _result(self, fut: concurrent.futures.Future[Any], done: bool, limit: float | None) -> Completion:
        """A pool attempt's completion; one not done within ``limit`` is abandoned and times out."""
        if not done:
            self._abandon(fut)
            if not fut.done() or fut.cancelled():
                raise self._timed_out(limit or 0.0)
        result: Completion = fut.result()
        return result

    def _attempt_sync(self, job: _Job, call: _Call) -> Completion:
        call.tries += 1
        limit = self._limit(call.deadline)
        if limit is None:
            self._received(call)
            return self._call_backend(job.sync)
        fut = self._submit(call, job.sync)
        try:
            done = bool(concurrent.futures.wait([fut], timeout=limit)[0])
        except BaseException:
            self._abandon(fut)
            raise
        return self._result(fut, done, limit)

    def _native_here(self) -> bool:
        """Whether the backend's own async API may serve a call on the running loop: a backend
        whose async client belongs to one loop says so with ``serves_running_loop()`` (the
        framework adapters); the others always may."""
        check = getattr(self.inner, "serves_running_loop", None)
        return bool(check()) if callable(check) else True

    async def _attempt_async(self, job: _Job, call: _Call) -> Completion:
        call.tries += 1
        limit = self._limit(call.deadline)
        if job.native is not None and self._native_here():
            self._received(call)
            start = time.perf_counter()
            try:
                raw = await asyncio.wait_for(job.native(), limit)
            except asyncio.TimeoutError as exc:
                if limit is None:  # the backend's own
                    raise
                raise self._timed_out(limit) from exc
            return self._timed(raw, start)
        fut = self._submit(call, job.sync)
        try:
            done = await self._wait_for_job(fut, limit)
        except BaseException:  # the caller's task was cancelled
            self._abandon(fut)
            raise
        return self._result(fut, done, limit)

    @staticmethod
    async def _wait_for_job(fut: concurrent.futures.Future[Any], limit: float | None) -> bool:
        """Await a pool job without blocking the loop; ``False`` when ``limit`` passed first."""
        loop = asyncio.get_running_loop()
        signal: asyncio.Future[None] = loop.create_future()
        fut.add_done_callback(lambda _: wake_threadsafe(loop, signal))
        await asyncio.wait({signal}, timeout=limit)
        return fut.done()

    # ------------------------------------------------------------------ one-time preparation
    def _prepare_job(self) -> concurrent.futures.Future[Any] | None:
        """The backend's ``prepare()`` (e.g. loading a local model) as a pool job until it has
        succeeded once; no attempt's clock runs meanwhile (only ``total_timeout`` bounds it)."""
        return None if self._prepare is None or self._prepared else self._pool().submit(self._prepare)

    def _prepared_by(self, fut: concurrent.futures.Future[Any], done: bool, call: _Call) -> None:
        if not done:
            self._pool().cancel(fut)
            self._add(not_started=1)
            raise self._give_up(TimeoutError("the backend's prepare() did not finish"), call, deadline=True)
        exc = fut.exception()
        if exc is not None:
            self._add(not_started=1)
            raise self._give_up(exc, call) from exc
        self._prepared = True

    def _prepare_sync(self, call: _Call) -> None:
        fut = self._prepare_job()
        if fut is not None:
            done = concurrent.futures.wait([fut], timeout=self._remaining(call.deadline))[0]
            self._prepared_by(fut, bool(done), call)

    async def _prepare_async(self, call: _Call) -> None:
        fut = self._prepare_job()
        if fut is None:
            return
        try:
            done = await self._wait_for_job(fut, self._remaining(call.deadline))
        except BaseException:  # the caller's task was cancelled
            self._pool().cancel(fut)
            raise
        self._prepared_by(fut, done, call)

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

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete`: awaits the backend's native ``acomplete`` when it
        has one, else runs ``complete`` in this wrapper's own daemon worker pool."""
        return await self._run_async(self._text_job(prompt, kwargs))

    def _hold(self, held: contextlib.ExitStack, slots: Slots, acquired: bool, call: _Call) -> None:
        """Keep ``slots`` (released when ``held`` closes) or give up: no slot became free."""
        if not acquired:
            self._add(not_started=1)
            raise self._give_up(TimeoutError("no concurrency slot became free"), call, deadline=True)
        held.callback(slots.release)

    def _run_sync(self, job: _Job) -> Completion:
        call = _Call(self._deadline())
        with contextlib.ExitStack() as held:
            for slots in self._slots:
                self._hold(held, slots, slots.acquire(self._remaining(call.deadline)), call)
            self._enter()
            held.callback(self._leave)
            self._prepare_sync(call)
            while True:
                try:
                    out = self._attempt_sync(job, call)
                except Exception as exc:  # noqa: BLE001 - classified in _after_failure
                    time.sleep(self._after_failure(exc, call))
                    continue
                return self._succeed(out, call)

    async def _run_async(self, job: _Job) -> Completion:
        call = _Call(self._deadline())
        with contextlib.ExitStack() as held:
            for slots in self._slots:
                self._hold(held, slots, await slots.aacquire(self._remaining(call.deadline)), call)
            self._enter()
            held.callback(self._leave)
            await self._prepare_async(call)
            while True:
                try:
                    out = await self._attempt_async(job, call)
                except Exception as exc:  # noqa: BLE001 - classified in _after_failure
                    await asyncio.sleep(self._after_failure(exc, call))
                    continue
                return self._succeed(out, call)

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
