"""The LLM layer under DF-RAG: ManagedLLM retries/timeouts/concurrency/accounting, adapters."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.llm import (
    CallableLLM,
    Completion,
    LLMError,
    LLMTimeoutError,
    ManagedLLM,
    OpenAILLM,
    TransientLLMError,
    is_transient,
)


class HTTPError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class FailNTimes:
    def __init__(self, n: int, exc: Exception) -> None:
        self.n, self.exc, self.attempts = n, exc, 0

    def complete(self, prompt: str, **kw: object) -> Completion:
        self.attempts += 1
        if self.attempts <= self.n:
            raise self.exc
        return Completion("ok", prompt_tokens=5, completion_tokens=1)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (HTTPError(429), True),
        (HTTPError(503), True),
        (HTTPError(500), True),
        (HTTPError(400), False),
        (HTTPError(401), False),
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (TransientLLMError("busy"), True),
        (ValueError("bad"), False),
        (type("RateLimitError", (Exception,), {})(), True),
    ],
)
def test_dfrag_llm_transient_classification(exc, expected):
    assert is_transient(exc) is expected


def test_dfrag_llm_retries_transient_then_succeeds_sync_and_async():
    for call in ("sync", "async"):
        backend = FailNTimes(2, HTTPError(429))
        llm = ManagedLLM(backend, max_retries=3, backoff_base=0.001, seed=0)
        out = llm.complete("p") if call == "sync" else asyncio.run(llm.acomplete("p"))
        assert out.text == "ok" and out.attempts == 3 and backend.attempts == 3
        u = llm.usage()
        assert (u.calls, u.retries, u.attempts, u.failures) == (1, 2, 3, 0)
        assert (u.prompt_tokens, u.completion_tokens, u.calls_with_token_counts) == (5, 1, 1)


def test_dfrag_llm_gives_up_after_max_retries():
    backend = FailNTimes(10, HTTPError(503))
    llm = ManagedLLM(backend, max_retries=2, backoff_base=0.001)
    with pytest.raises(LLMError, match="HTTP 503") as info:
        llm.complete("p")
    assert isinstance(info.value.__cause__, HTTPError)
    assert backend.attempts == 3 and llm.usage().failures == 1


def test_dfrag_llm_non_transient_error_is_not_retried():
    backend = FailNTimes(10, HTTPError(400))
    llm = ManagedLLM(backend, max_retries=5, backoff_base=0.001)
    with pytest.raises(LLMError):
        asyncio.run(llm.acomplete("p"))
    assert backend.attempts == 1


def test_dfrag_llm_timeout_sync_and_async():
    def slow(prompt: str) -> str:
        time.sleep(0.5)
        return "late"

    llm = ManagedLLM(slow, timeout=0.05, max_retries=1, backoff_base=0.001)
    with pytest.raises(LLMTimeoutError, match="timed out"):
        llm.complete("p")
    assert llm.usage().timeouts == 2

    async def aslow(prompt: str) -> str:
        await asyncio.sleep(5)
        return "late"

    allm = ManagedLLM(aslow, timeout=0.05, max_retries=2, backoff_base=0.001)
    with pytest.raises(LLMTimeoutError):
        asyncio.run(allm.acomplete("p"))
    u = allm.usage()
    assert (u.timeouts, u.attempts, u.failures, u.calls) == (3, 3, 1, 0)
    llm.close()


def test_dfrag_llm_backoff_is_exponential_and_capped():
    llm = ManagedLLM(lambda p: "x", backoff_base=0.1, backoff_max=0.3, jitter=0.0)
    assert [llm._delay(a) for a in range(4)] == [0.1, 0.2, 0.3, 0.3]
    jittery = ManagedLLM(lambda p: "x", backoff_base=1.0, jitter=0.5, seed=3)
    delays = [jittery._delay(0) for _ in range(50)]
    assert all(0.5 <= d <= 1.5 for d in delays) and len(set(delays)) > 1


def test_dfrag_llm_async_concurrency_limit():
    state = {"now": 0, "peak": 0}

    async def fn(prompt: str) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return prompt

    llm = ManagedLLM(fn, max_concurrency=3)

    async def main():
        return await asyncio.gather(*(llm.acomplete(str(i)) for i in range(12)))

    outs = asyncio.run(main())
    assert [o.text for o in outs] == [str(i) for i in range(12)]
    assert state["peak"] == 3 and llm.usage().peak_in_flight == 3
    # a second event loop gets its own semaphore (no cross-loop errors)
    assert len(asyncio.run(main())) == 12


def test_dfrag_llm_sync_concurrency_limit_across_threads():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def fn(prompt: str) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.01)
        with lock:
            state["now"] -= 1
        return "x"

    llm = ManagedLLM(fn, max_concurrency=2, timeout=None)
    threads = [threading.Thread(target=llm.complete, args=("p",)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["peak"] == 2 and llm.usage().calls == 8


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"timeout": 0}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"jitter": 2}, "jitter"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"backoff_base": -0.1}, "backoff_base"),
    ],
)
def test_dfrag_llm_bad_parameters(kw, name):
    with pytest.raises(InvalidParameterError, match=name):
        ManagedLLM(lambda p: "x", **kw)


def test_dfrag_llm_callable_adapter_and_bad_return():
    assert CallableLLM(lambda p: p.upper()).complete("a").text == "A"

    async def afn(p: str) -> str:
        return p * 2

    assert asyncio.run(CallableLLM(afn).acomplete("ab")).text == "abab"
    assert CallableLLM(afn).complete("c").text == "cc"
    with pytest.raises(LLMError, match="Completion or a str"):
        ManagedLLM(lambda p: 42, max_retries=0).complete("x")
    # a ManagedLLM given a ManagedLLM wraps the inner model, not the wrapper
    inner = CallableLLM(lambda p: "x")
    assert ManagedLLM(ManagedLLM(inner)).inner is inner


class _FakeCompletions:
    def __init__(self, chat: bool) -> None:
        self.chat = chat
        self.bodies: list[dict] = []

    def create(self, **body):
        self.bodies.append(body)
        usage = SimpleNamespace(prompt_tokens=11, completion_tokens=2)
        choice = SimpleNamespace(message=SimpleNamespace(content="Paris")) if self.chat else SimpleNamespace(text="Rome")
        return SimpleNamespace(choices=[choice], usage=usage)


class _AsyncFakeCompletions(_FakeCompletions):
    async def create(self, **body):  # type: ignore[override]
        return super().create(**body)


def test_dfrag_openai_adapter_with_fake_client(monkeypatch):
    comp = _FakeCompletions(chat=True)
    client = SimpleNamespace(chat=SimpleNamespace(completions=comp))
    llm = OpenAILLM("my-model", client=client, max_tokens=20, top_p=0.9)
    out = llm.complete("Capital of France?", max_tokens=5)
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("Paris", 11, 2)
    body = comp.bodies[0]
    assert body["model"] == "my-model" and body["max_tokens"] == 5 and body["top_p"] == 0.9
    assert body["messages"] == [{"role": "user", "content": "Capital of France?"}]
    acomp = _AsyncFakeCompletions(chat=False)
    allm = OpenAILLM("m", chat=False, async_client=SimpleNamespace(completions=acomp))
    assert asyncio.run(allm.acomplete("x")).text == "Rome"
    assert acomp.bodies[0]["prompt"] == "x"
    monkeypatch.delenv("DIVERSE_RAG_LLM_MODEL", raising=False)
    with pytest.raises(ValueError, match="DIVERSE_RAG_LLM_MODEL"):
        OpenAILLM()
    monkeypatch.setenv("DIVERSE_RAG_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    env_llm = OpenAILLM()
    assert env_llm.model == "env-model"
    assert str(env_llm.client.base_url).startswith("http://127.0.0.1:9/v1")
    assert env_llm.client.max_retries == 0


def test_dfrag_openai_real_client_connection_error_is_retried_then_raised(monkeypatch):
    # port 9 (discard) on localhost refuses connections: no network needed
    llm = ManagedLLM(
        OpenAILLM("m", base_url="http://127.0.0.1:9/v1", api_key="EMPTY"),
        max_retries=1, backoff_base=0.001, timeout=10,
    )
    with pytest.raises(LLMError):
        llm.complete("hi")
    assert llm.usage().retries == 1
