"""Regression tests for ManagedLLM's reliability layer (issue 14 items 1, 4, 5; issue 19 item 9).

Each test names the property it pins. No wall-clock time is asserted: a hung backend blocks
on an event that the test releases only *after* checking that the call already returned;
joins and subprocess limits are hang guards, many times larger than the calls need.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from diverse_core.llm import (
    Completion,
    LLMError,
    LLMTimeoutError,
    LocalGGUFLLM,
    ManagedLLM,
    OpenAILLM,
    is_transient,
)
from diverse_core.llm.errors import retry_after
from hypothesis import given, settings
from hypothesis import strategies as st

GUARD_S = 30.0  # hang guard for joins: far above what any call here needs


class Hung:
    """A sync-only backend that blocks until ``release`` is set; counts invocations."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._cond = threading.Condition()
        self.started = 0
        self.finished = 0

    def complete(self, prompt: str, **kw: object) -> Completion:
        with self._cond:
            self.started += 1
        self.release.wait()
        with self._cond:
            self.finished += 1
            self._cond.notify_all()
        return Completion("late")

    def wait_finished(self) -> None:
        """Block until every started call has returned (after ``release``)."""
        with self._cond:
            assert self._cond.wait_for(lambda: self.finished == self.started, GUARD_S)


@pytest.fixture
def hung() -> Iterator[Hung]:
    backend = Hung()
    yield backend
    backend.release.set()


def run_guarded(fn: Callable[[], Any]) -> tuple[bool, dict[str, Any]]:
    """Run ``fn`` in a thread; (still running after the guard?, {"value"/"error": ...})."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(GUARD_S)
    return worker.is_alive(), box


# ---------------------------------------------------------------- 1. timeouts bound the call
def test_llm_timeout_bounds_sync_and_async_call_on_hung_sync_backend(hung):
    llm = ManagedLLM(hung, timeout=0.2, max_retries=1, backoff_base=0.01)
    with pytest.raises(LLMTimeoutError):
        llm.complete("p")
    # asyncio.run must return too: the old code ran the backend on asyncio's default
    # executor, which asyncio.run joins on shutdown, so it waited for the hung backend.
    still_running, box = run_guarded(lambda: asyncio.run(llm.acomplete("p")))
    assert not still_running, "asyncio.run(acomplete) waited for the hung backend"
    assert isinstance(box.get("error"), LLMTimeoutError)
    assert not hung.release.is_set() and hung.finished == 0  # returned while still hung
    assert llm.usage().timeouts == 4 and llm.usage().failures == 2


def test_llm_timeout_process_exits_with_hung_backend():
    script = textwrap.dedent(
        """
        import asyncio, threading
        from diverse_core.llm import LLMTimeoutError, ManagedLLM

        never = threading.Event()

        class Hung:
            def complete(self, prompt, **kw):
                never.wait()

        llm = ManagedLLM(Hung(), timeout=0.2, max_retries=1, backoff_base=0.01)
        for call in (lambda: llm.complete("p"), lambda: asyncio.run(llm.acomplete("p"))):
            try:
                call()
            except LLMTimeoutError as exc:
                print("timed out after", exc.attempts, "attempts", flush=True)
        print("done", flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the interpreter did not exit with a hung backend call; output: {exc.stdout!r}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["timed out after 2 attempts"] * 2 + ["done"]


def test_llm_timeout_hung_calls_do_not_starve_other_roles(hung):
    evaluator = ManagedLLM(hung, timeout=0.2, max_retries=0, max_concurrency=40)
    generator = ManagedLLM(lambda p: "answer", timeout=2.0, max_retries=0)

    async def main() -> tuple[list[Any], str]:
        try:
            hung_calls = await asyncio.gather(
                *(evaluator.acomplete(str(i)) for i in range(40)), return_exceptions=True
            )
            answer = await generator.acomplete("question")  # 40 hung threads are still running
            return hung_calls, answer.text
        finally:
            hung.release.set()

    hung_calls, answer = asyncio.run(main())
    assert all(isinstance(r, LLMTimeoutError) for r in hung_calls)
    assert answer == "answer"


def test_llm_timeout_queued_attempt_never_starts_later(hung):
    llm = ManagedLLM(hung, timeout=0.2, max_retries=0, max_concurrency=1)
    errors = []
    for _ in range(5):  # the first call hangs its worker; the next four wait in its queue
        with pytest.raises(LLMTimeoutError) as info:
            llm.complete("p")
        errors.append(info.value)
    assert hung.started == 1
    assert [(e.attempts, e.received) for e in errors] == [(1, 1)] + [(1, 0)] * 4
    assert "1 attempt, 0 reaching the backend" in str(errors[-1])
    hung.release.set()
    hung.wait_finished()
    assert llm.complete("sentinel").text == "late"  # queued behind anything left (FIFO)
    u = llm.usage()
    assert hung.started == 2, "a timed-out queued attempt ran after all"
    assert (u.attempts, u.not_started, u.timeouts, u.failures, u.calls) == (2, 4, 5, 5, 1)


class SerialBackend:
    """One call at a time (like a local model), 0.15 s each."""

    serial = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0

    def complete(self, prompt: str, **kw: object) -> Completion:
        with self._lock:
            time.sleep(0.15)
            self.calls += 1
        return Completion(prompt)


@pytest.mark.parametrize("mode", ["threads", "async"])
def test_llm_timeout_starts_when_serial_backend_is_free(mode):
    backend = SerialBackend()
    llm = ManagedLLM(backend, timeout=0.25, max_retries=0, max_concurrency=4)
    prompts = [str(i) for i in range(4)]
    if mode == "async":

        async def main() -> list[Completion]:
            return list(await asyncio.gather(*(llm.acomplete(p) for p in prompts)))

        outs = asyncio.run(main())
    else:
        outs_by_prompt: dict[str, Completion] = {}
        threads = [
            threading.Thread(target=lambda p=p: outs_by_prompt.__setitem__(p, llm.complete(p)))
            for p in prompts
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(GUARD_S)
        outs = [outs_by_prompt[p] for p in prompts]
    assert [o.text for o in outs] == prompts
    u = llm.usage()
    assert (u.calls, u.timeouts, u.retries, backend.calls) == (4, 0, 0, 4)


def test_llm_timeout_local_gguf_queued_calls_do_not_time_out(tmp_path):
    """The 184 s case: LocalGGUFLLM's lock made queued calls time out and retry."""
    model_file = tmp_path / "fake.gguf"
    model_file.write_bytes(b"")
    first = LocalGGUFLLM(str(model_file), backend="transformers")
    second = LocalGGUFLLM(str(model_file), backend="transformers")  # same loaded model
    for llm in (first, second):
        llm._load = lambda: None  # type: ignore[method-assign]
        llm._generate = lambda prompt, limit, schema: (time.sleep(0.15), Completion(prompt))[1]  # type: ignore[method-assign]
    second._lock = first._lock  # loading shares one lock per model file
    managed = [ManagedLLM(m, timeout=0.25, max_retries=0, max_concurrency=4) for m in (first, second)]

    async def main() -> list[Completion]:
        return list(await asyncio.gather(*(m.acomplete("q") for m in managed for _ in range(2))))

    assert [o.text for o in asyncio.run(main())] == ["q"] * 4
    assert [m.usage().timeouts for m in managed] == [0, 0]


class SlowToLoad:
    """Loads itself on first use (like LocalGGUFLLM); the load takes longer than a call's timeout."""

    def __init__(self) -> None:
        self.loads = 0
        self._lock = threading.Lock()

    def prepare(self) -> None:
        with self._lock:
            if self.loads == 0:
                time.sleep(0.4)
                self.loads += 1

    def complete(self, prompt: str, **kw: object) -> Completion:
        self.prepare()
        return Completion(prompt)


@pytest.mark.parametrize("call", ["sync", "async"])
def test_llm_timeout_does_not_count_the_model_load(call):
    backend = SlowToLoad()
    llm = ManagedLLM(backend, timeout=0.2, max_retries=0)
    for prompt in ("first", "second"):
        out = llm.complete(prompt) if call == "sync" else asyncio.run(llm.acomplete(prompt))
        assert out.text == prompt
    assert backend.loads == 1 and llm.usage().timeouts == 0


def test_llm_prepare_failure_is_a_clear_llm_error():
    class Broken:
        def prepare(self) -> None:
            raise ImportError("install the llm extra")

        def complete(self, prompt: str, **kw: object) -> Completion:
            raise AssertionError("never called")

    llm = ManagedLLM(Broken(), max_retries=3)
    with pytest.raises(LLMError, match="ImportError: install the llm extra") as info:
        asyncio.run(llm.acomplete("x"))
    assert isinstance(info.value.__cause__, ImportError)
    u = llm.usage()
    assert (u.attempts, u.failures, u.not_started) == (0, 1, 1)


class FakeTransformersModel:
    """Stands in for a transformers model: one step per 10 ms, honouring stopping criteria."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def generate(self, input_ids: Any, max_new_tokens: int, stopping_criteria: Any, **kw: Any) -> Any:
        import torch

        ids = input_ids
        for _ in range(max_new_tokens):
            time.sleep(0.01)
            ids = torch.cat([ids, torch.zeros((1, 1), dtype=torch.long)], dim=1)
            if bool(stopping_criteria(ids, None).all()):
                break
        self.steps.append(int(ids.shape[1] - input_ids.shape[1]))
        return ids


class FakeTokenizer:
    pad_token_id = 0
    eos_token_id = 0

    def apply_chat_template(self, messages: Any, **kw: Any) -> dict[str, Any]:
        import torch

        return {"input_ids": torch.zeros((1, 3), dtype=torch.long)}

    def decode(self, ids: Any, **kw: Any) -> str:
        return "x" * int(ids.shape[0])


def test_llm_timeout_interrupts_abandoned_local_generation(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    model_file = tmp_path / "fake.gguf"
    model_file.write_bytes(b"")
    local = LocalGGUFLLM(str(model_file), backend="transformers", max_new_tokens=5000)
    model = FakeTransformersModel()
    local._model, local._tokenizer = model, FakeTokenizer()
    local._load = lambda: None  # type: ignore[method-assign]
    llm = ManagedLLM(local, timeout=0.3, max_retries=0)
    with pytest.raises(LLMTimeoutError):
        llm.complete("long answer please")  # 5000 steps = 50 s if nobody stops it
    assert local._lock.acquire(timeout=GUARD_S)  # the abandoned generation stopped early
    local._lock.release()
    assert len(model.steps) == 1 and model.steps[0] < 5000
    assert llm.complete("short", max_new_tokens=2).text == "xx"  # the flag is cleared for the next


# ---------------------------------------------------------------- 2. exact accounting
class FailingBackend:
    def __init__(self, status: int) -> None:
        self.status, self.invocations = status, 0

    def complete(self, prompt: str, **kw: object) -> Completion:
        self.invocations += 1
        if prompt == "ok":
            return Completion("fine")
        err = RuntimeError(f"HTTP {self.status}")
        err.status_code = self.status  # type: ignore[attr-defined]
        raise err


def test_llm_accounting_counts_retries_of_failed_calls():
    backend = FailingBackend(503)
    llm = ManagedLLM(backend, max_retries=2, backoff_base=0.001)
    errors = []
    for prompt in ("x", "ok", "y"):
        try:
            llm.complete(prompt)
        except LLMError as exc:
            errors.append(exc)
    assert [e.attempts for e in errors] == [3, 3]  # the failed calls' retries travel with them
    u = llm.usage()
    assert u.attempts == backend.invocations == 7
    assert (u.calls, u.failures, u.retries) == (1, 2, 4)
    assert u.calls + u.failures + u.retries == u.attempts + u.not_started


def test_llm_accounting_counts_exactly_what_the_backend_received(hung):
    llm = ManagedLLM(hung, timeout=0.2, max_retries=1, backoff_base=0.01, max_concurrency=None)

    async def main() -> list[Any]:
        try:
            return list(
                await asyncio.gather(*(llm.acomplete(str(i)) for i in range(40)), return_exceptions=True)
            )
        finally:
            hung.release.set()

    results = asyncio.run(main())
    assert all(isinstance(r, LLMTimeoutError) for r in results)
    hung.wait_finished()
    assert llm.complete("sentinel").text == "late"  # behind anything still queued (FIFO)
    u = llm.usage()
    assert u.attempts == hung.started, "attempts counted that the backend never received"
    assert sum(r.attempts for r in results) == 80
    assert sum(r.received for r in results) == u.attempts - 1  # all but the sentinel's
    assert u.calls + u.failures + u.retries == u.attempts + u.not_started


class Counting:
    """Measures the backend's own peak concurrency."""

    def __init__(self, delay: float = 0.02) -> None:
        self.delay = delay
        self._lock = threading.Lock()
        self.now = self.peak = self.calls = 0

    def _enter(self) -> None:
        with self._lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)

    def _leave(self) -> None:
        with self._lock:
            self.now -= 1

    def complete(self, prompt: str, **kw: object) -> Completion:
        self._enter()
        try:
            time.sleep(self.delay)
        finally:
            self._leave()
        return Completion(prompt)


class CountingAsync(Counting):
    async def acomplete(self, prompt: str, **kw: object) -> Completion:
        self._enter()
        try:
            await asyncio.sleep(self.delay)
        finally:
            self._leave()
        return Completion(prompt)


@pytest.mark.parametrize("backend_cls", [Counting, CountingAsync])
@pytest.mark.parametrize("timeout", [5.0, None])
def test_llm_accounting_max_concurrency_across_threads_and_loops(backend_cls, timeout):
    backend = backend_cls()
    llm = ManagedLLM(backend, timeout=timeout, max_concurrency=3)

    async def three() -> None:
        await asyncio.gather(*(llm.acomplete("a") for _ in range(3)))

    def in_own_loop() -> None:
        asyncio.run(three())

    def sync_calls() -> None:
        for _ in range(3):
            llm.complete("s")

    threads = [threading.Thread(target=in_own_loop) for _ in range(8)]
    threads += [threading.Thread(target=sync_calls) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GUARD_S)
    u = llm.usage()
    assert backend.calls == u.calls == u.attempts == 36
    assert backend.peak <= 3 and u.peak_in_flight <= 3


class Rendezvous:
    """Every call waits until ``n`` calls are inside the backend at once."""

    def __init__(self, n: int) -> None:
        self.barrier = threading.Barrier(n, timeout=GUARD_S)

    def complete(self, prompt: str, **kw: object) -> Completion:
        if prompt != "warm-up":
            self.barrier.wait()  # BrokenBarrierError if the calls were serialised
        return Completion(prompt)


def test_llm_concurrency_warm_pool_runs_calls_in_parallel():
    llm = ManagedLLM(Rendezvous(4), timeout=GUARD_S, max_retries=0, max_concurrency=4)
    assert llm.complete("warm-up").text == "warm-up"  # leaves one idle worker thread

    async def main() -> list[Completion]:
        return list(await asyncio.gather(*(llm.acomplete(str(i)) for i in range(4))))

    assert [o.text for o in asyncio.run(main())] == ["0", "1", "2", "3"]


def test_llm_accounting_cancelled_callers_leak_no_slot(hung):
    llm = ManagedLLM(hung, timeout=None, max_retries=0, max_concurrency=1)

    async def main() -> str:
        first = asyncio.create_task(llm.acomplete("hangs"))  # holds the only slot
        waiting = [asyncio.create_task(llm.acomplete(str(i))) for i in range(3)]
        await asyncio.sleep(0.05)
        for task in [first, *waiting]:
            task.cancel()
        await asyncio.gather(first, *waiting, return_exceptions=True)
        hung.release.set()
        return (await llm.acomplete("after")).text

    assert asyncio.run(main()) == "late"
    assert hung.started == 2  # the hung call and "after"; the cancelled waiters never ran


class Scripted:
    """Replies from a script of outcomes: "ok", "busy" (HTTP 429), "bad" (HTTP 400)."""

    def __init__(self, script: list[str]) -> None:
        self.script, self.invocations = list(script), 0
        self._lock = threading.Lock()

    def complete(self, prompt: str, **kw: object) -> Completion:
        with self._lock:
            self.invocations += 1
            outcome = self.script.pop(0) if self.script else "ok"
        if outcome == "ok":
            return Completion("ok")
        err = RuntimeError(outcome)
        err.status_code = 429 if outcome == "busy" else 400  # type: ignore[attr-defined]
        raise err


@settings(max_examples=60, deadline=None)
@given(
    script=st.lists(st.sampled_from(["ok", "busy", "bad"]), max_size=24),
    calls=st.integers(1, 8),
    max_retries=st.integers(0, 3),
    mode=st.sampled_from(["sync", "async"]),
)
def test_llm_accounting_invariants_hold_for_any_outcome_sequence(script, calls, max_retries, mode):
    backend = Scripted(script)
    llm = ManagedLLM(backend, timeout=5.0, max_retries=max_retries, backoff_base=0.0)
    errors: list[LLMError] = []

    async def one_async() -> None:
        try:
            await llm.acomplete("p")
        except LLMError as exc:
            errors.append(exc)

    for _ in range(calls):
        if mode == "async":
            asyncio.run(one_async())
        else:
            try:
                llm.complete("p")
            except LLMError as exc:
                errors.append(exc)
    u = llm.usage()
    assert u.attempts == backend.invocations
    assert u.calls + u.failures == calls and u.failures == len(errors)
    assert u.calls + u.failures + u.retries == u.attempts + u.not_started
    assert all(1 <= e.attempts <= max_retries + 1 and e.received == e.attempts for e in errors)


# ---------------------------------------------------------------- 3. retry classification
def _exc(name: str, bases: tuple[type, ...] = (Exception,), **attrs: Any) -> BaseException:
    """A look-alike of another library's error: same class name, given attributes."""
    return _with(type(name, bases, {})(), attrs)


def _with(exc: BaseException, attrs: dict[str, Any]) -> BaseException:
    for key, value in attrs.items():
        setattr(exc, key, value)
    return exc


_requests_connection = type("ConnectionError", (OSError,), {})  # requests' is not builtin's
_aiohttp_connection = type("ClientConnectionError", (Exception,), {})
_aiohttp_connector = type("ClientConnectorError", (_aiohttp_connection,), {})


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_exc("ApiError", code=429), True),
        (_exc("ApiError", code="429"), True),
        (_exc("ApiError", status=429), True),
        (_exc("ApiError", status="503"), True),
        (_exc("ApiError", status_code="429"), True),
        (_exc("ApiError", response=SimpleNamespace(status_code=429)), True),
        (_exc("ClientResponseError", response=SimpleNamespace(status=502)), True),
        (_exc("ApiError", code=400), False),
        (_exc("ApiError", status="404"), False),
        (_exc("ApiError", code="rate_limit_exceeded", status_code=429), True),
        (_requests_connection(), True),
        (_exc("Timeout", (OSError,)), True),
        (_exc("ConnectTimeout", (_requests_connection,)), True),
        (_exc("ReadTimeout"), True),
        (_exc("SSLError", (_requests_connection,)), False),
        (_exc("ConnectError"), True),
        (_exc("RemoteProtocolError"), True),
        (_exc("PoolTimeout"), True),
        (_aiohttp_connection(), True),
        (_aiohttp_connector(), True),
        (_exc("ServerDisconnectedError", (_aiohttp_connection,)), True),
        (_exc("ServerTimeoutError", (_aiohttp_connection,)), True),
        (_exc("MyProxyHiccup", (_aiohttp_connector,)), True),  # subclass counts (MRO)
        (_exc("ClientConnectorCertificateError", (_aiohttp_connector,)), False),
        (ValueError("bad prompt"), False),
    ],
)
def test_llm_retry_classification_common_client_shapes(exc, expected):
    assert is_transient(exc) is expected


def test_llm_retry_classification_real_client_errors():
    requests = pytest.importorskip("requests")
    httpx = pytest.importorskip("httpx")
    aiohttp = pytest.importorskip("aiohttp")
    request = httpx.Request("GET", "http://127.0.0.1:9")
    transient = [
        requests.ConnectionError("refused"),
        requests.ReadTimeout("slow"),
        httpx.ConnectError("refused", request=request),
        httpx.ReadTimeout("slow", request=request),
        httpx.PoolTimeout("busy", request=request),
        httpx.RemoteProtocolError("eof", request=request),
        aiohttp.ServerDisconnectedError(),
        aiohttp.ServerTimeoutError(),
        aiohttp.ClientConnectionError(),
    ]
    assert all(is_transient(e) for e in transient), [type(e) for e in transient if not is_transient(e)]
    assert not is_transient(requests.exceptions.InvalidURL("nope"))


# ---------------------------------------------------------------- 4. Retry-After
class FailOnceWith:
    def __init__(self, exc: BaseException) -> None:
        self.exc, self.invocations = exc, 0

    def complete(self, prompt: str, **kw: object) -> Completion:
        self.invocations += 1
        if self.invocations == 1:
            raise self.exc
        return Completion("ok")


def _rate_limited(**attrs: Any) -> BaseException:
    return _with(_exc("RateLimitError"), {"status_code": 429, **attrs})


@given(seconds=st.floats(0, 1e6, allow_nan=False), spelled=st.sampled_from(["attr", "header", "ms"]))
def test_llm_retry_after_reads_any_non_negative_number(seconds, spelled):
    if spelled == "attr":
        exc = _rate_limited(retry_after=seconds)
    elif spelled == "header":
        exc = _rate_limited(response=SimpleNamespace(headers={"Retry-After": repr(seconds)}))
    else:
        exc = _rate_limited(response=SimpleNamespace(headers={"retry-after-ms": repr(seconds * 1000)}))
    assert retry_after(exc) == pytest.approx(seconds, rel=1e-9, abs=1e-9)


def test_llm_retry_after_is_read_from_the_error():
    when = "Wed, 21 Oct 2015 07:28:00 GMT"
    now = 1445412480.0 - 5.0  # five seconds before `when`
    headers = {"Retry-After": "2"}
    assert retry_after(_rate_limited(retry_after=3)) == 3.0
    assert retry_after(_rate_limited(response=SimpleNamespace(headers=headers))) == 2.0
    assert retry_after(_rate_limited(response=SimpleNamespace(headers={"retry-after": when})), now=now) == 5.0
    assert retry_after(_rate_limited(response=SimpleNamespace(headers={"retry-after-ms": "250"}))) == 0.25
    assert retry_after(_rate_limited(response=SimpleNamespace(headers={}))) is None
    assert retry_after(_rate_limited(response=SimpleNamespace(headers={"retry-after": "soon"}))) is None
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    response = httpx.Response(
        429, headers={"retry-after": "1.5"}, request=httpx.Request("POST", "http://x/v1")
    )
    assert retry_after(openai.RateLimitError("slow down", response=response, body=None)) == 1.5


@pytest.mark.parametrize("call", ["sync", "async"])
def test_llm_retry_after_replaces_the_backoff(call, caplog):
    backend = FailOnceWith(_rate_limited(retry_after=0.05))
    llm = ManagedLLM(backend, max_retries=2, backoff_base=10.0, jitter=0.0, timeout=5)
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        out = llm.complete("p") if call == "sync" else asyncio.run(llm.acomplete("p"))
    assert out.text == "ok" and out.attempts == 2
    assert "retrying in 0.05s" in caplog.text  # not the 10 s exponential delay


def test_llm_retry_after_is_capped_by_backoff_max_and_total_timeout(caplog):
    backend = FailOnceWith(_rate_limited(retry_after=120))
    llm = ManagedLLM(backend, max_retries=1, backoff_max=0.05, jitter=0.0)
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        assert llm.complete("p").text == "ok"
    assert "retrying in 0.05s" in caplog.text
    # a wait beyond the whole call's deadline is not taken: give up at once, clearly
    backend = FailOnceWith(_rate_limited(retry_after=30))
    llm = ManagedLLM(backend, max_retries=3, backoff_max=60, total_timeout=1.0)
    with pytest.raises(LLMTimeoutError, match=r"total_timeout=1\.0s") as info:
        llm.complete("p")
    assert backend.invocations == 1 and info.value.attempts == 1


class _ClientWithRetries:
    def __init__(self, max_retries: int) -> None:
        self.max_retries = max_retries


def test_llm_retry_does_not_stack_on_client_retries_silently(caplog):
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        ManagedLLM(OpenAILLM("m", client=_ClientWithRetries(2)), max_retries=3)
    stacked = [r for r in caplog.records if "also retries" in r.getMessage()]
    assert len(stacked) == 1 and "_client.max_retries=2" in stacked[0].getMessage()
    assert "up to 12 requests per call" in stacked[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        ManagedLLM(OpenAILLM("m", client=_ClientWithRetries(2)), max_retries=0)  # no stacking
        ManagedLLM(OpenAILLM("m", client=_ClientWithRetries(0)), max_retries=3)
        ManagedLLM(OpenAILLM("m", base_url="http://127.0.0.1:9/v1"), max_retries=3)  # own client: 0
    assert not [r for r in caplog.records if "also retries" in r.getMessage()]
    # a framework model holding its own retries (LangChain ChatOpenAI(max_retries=2) style)
    wrapped = SimpleNamespace(model=_ClientWithRetries(2), complete=lambda p, **kw: "x")
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        ManagedLLM(wrapped, max_retries=1)
    assert "model.max_retries=2" in caplog.text
    # the library configures no output: at most the NullHandler the logging HOWTO recommends
    assert all(isinstance(h, logging.NullHandler) for h in logging.getLogger("diverse_core").handlers)


# ---------------------------------------------------------------- 5. errors name things
def test_llm_errors_name_attempts_and_timeout(hung):
    with pytest.raises(LLMError, match=r"after 1 attempt \(timeout=7.0s per attempt") as info:
        ManagedLLM(FailingBackend(400), timeout=7.0, max_retries=4).complete("x")
    assert (info.value.attempts, info.value.timeout) == (1, 7.0)
    with pytest.raises(LLMError, match=r"failed after 3 attempts \(timeout=60.0s .*max_retries=2"):
        ManagedLLM(FailingBackend(503), max_retries=2, backoff_base=0.001).complete("x")
    with pytest.raises(LLMTimeoutError, match=r"timed out after 2 attempts \(timeout=0.2s") as tinfo:
        ManagedLLM(hung, timeout=0.2, max_retries=1, backoff_base=0.001).complete("x")
    assert (tinfo.value.attempts, tinfo.value.timeout) == (2, 0.2)
    with pytest.raises(LLMError, match=r"after 1 attempt \(timeout=None"):
        ManagedLLM(FailingBackend(401), timeout=None).complete("x")


def test_llm_total_timeout_bounds_the_whole_call(hung):
    llm = ManagedLLM(hung, timeout=10.0, total_timeout=0.3, max_retries=5, backoff_base=0.01)
    with pytest.raises(LLMTimeoutError, match=r"total_timeout=0.3s"):
        llm.complete("x")
    still_running, box = run_guarded(lambda: asyncio.run(llm.acomplete("x")))
    assert not still_running and isinstance(box.get("error"), LLMTimeoutError)
    assert not hung.release.is_set()  # both returned while the backend was still hung


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), "5", True])
def test_llm_total_timeout_bad_values_are_typed_errors(value):
    from diverse_core.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=rf"total_timeout={value!r}"):
        ManagedLLM(lambda p: "x", total_timeout=value)
    assert ManagedLLM(lambda p: "x", timeout=float("inf")).timeout is None  # inf = no limit
