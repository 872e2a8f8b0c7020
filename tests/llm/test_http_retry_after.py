"""429/503 from a real HTTP endpoint are retried after the server's ``Retry-After``, through the
project's OpenAILLM and LangChain's ChatOpenAI (a tiny stdlib server on 127.0.0.1)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from diverse_core.llm import LLMError, ManagedLLM, OpenAILLM
from http_fakes import REPLY, send_json


class Busy:
    """Answers the first ``len(statuses)`` requests with those statuses (and Retry-After: 1)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.times: list[float] = []
        busy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                busy.times.append(time.monotonic())
                status = busy.statuses.pop(0) if busy.statuses else 200
                if status == 200:
                    send_json(self, 200, REPLY)
                else:
                    send_json(self, status, {"error": {"message": "busy"}}, {"Retry-After": "1"})

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]


@pytest.fixture
def busy() -> Iterator[Busy]:
    server = Busy([429, 503])
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def _backend(base_url: str) -> OpenAILLM:
    backend = OpenAILLM(model="m", base_url=base_url)
    assert backend.client is not None  # create (import) the client outside the attempts' timeout
    return backend


def test_openai_llm_waits_for_retry_after(busy: Busy) -> None:
    llm = ManagedLLM(_backend(busy.base_url), timeout=10.0, max_retries=3,
                     backoff_base=0.01, backoff_max=5.0)
    out = llm.complete("hi")
    assert out.text == "ok" and out.attempts == 3 and llm.usage().retries == 2
    assert len(busy.times) == 3 and all(g >= 0.95 for g in busy.gaps())  # 1 s asked, not the 0.01 s backoff


async def test_langchain_chat_openai_waits_for_retry_after(busy: Busy) -> None:
    chat_openai = pytest.importorskip("langchain_openai", reason="pip install langchain-openai").ChatOpenAI
    from langchain_diverse.llm import LangChainLLM

    model = chat_openai(model="m", base_url=busy.base_url, api_key="EMPTY", max_retries=0)
    llm = ManagedLLM(LangChainLLM(model), timeout=10.0, max_retries=3, backoff_base=0.01, backoff_max=5.0)
    out = await llm.acomplete("hi")
    assert out.text == "ok" and out.attempts == 3
    assert all(g >= 0.95 for g in busy.gaps())


def test_retries_exhausted_is_a_typed_error() -> None:
    server = Busy([503, 503, 503])
    try:
        llm = ManagedLLM(_backend(server.base_url), timeout=10.0, max_retries=1,
                         backoff_base=0.01, backoff_max=0.05)
        with pytest.raises(LLMError, match="503|InternalServerError|ServiceUnavailable") as info:
            llm.complete("hi")
        assert info.value.attempts == 2 and len(server.times) == 2
        assert all(g < 0.9 for g in server.gaps())  # Retry-After capped at backoff_max
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
