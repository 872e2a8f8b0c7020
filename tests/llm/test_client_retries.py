"""Library defaults that compose with the clients' own retries (issue 33, item 9), against a
counting stdlib HTTP server that refuses every structured request the way llama.cpp's server
refuses ``json_schema`` (HTTP 500 naming ``response_format``):

* a refused structured probe costs one request, not one per client retry (``ChatOpenAI`` at its
  defaults retries twice: three HTTP 500s; LlamaIndex ``OpenAILike`` retries itself and through
  its client; an ``openai.OpenAI(max_retries=2)`` given to ``OpenAILLM``);
* the double-retry advice is logged once per client object, not once per question.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from diverse_core.llm import ManagedLLM, Message, OpenAILLM, RoleRequest
from diverse_core.pipelines.drrag.pipeline import DRRAG
from diverse_core.pipelines.structured import ANSWER_SCHEMA
from http_fakes import REPLY, send_json
from structured_fakes import source

REFUSAL = {"error": {"message": "response_format type must be 'text' or 'json_object'", "type": "server_error",
                     "code": 500}}
REQ = RoleRequest("generator", (Message("system", "Answer."), Message("user", "Q?")), ANSWER_SCHEMA, "Q? Answer:")


class _Counting(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    structured = 0  # requests with a response_format or tools (all refused)
    plain = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        cls = type(self)
        if "response_format" in body or "tools" in body:
            with _LOCK:
                cls.structured += 1
            _send(self, 500, REFUSAL)
        else:
            with _LOCK:
                cls.plain += 1
            _send(self, 200, REPLY)

    def log_message(self, *args: Any) -> None:
        pass


_LOCK = threading.Lock()


def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    del handler.headers["Content-Length"]  # the body is read already: send_json reads nothing more
    handler.headers["Content-Length"] = "0"
    send_json(handler, status, payload)


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Counting]]]:
    handler = type("Handler", (_Counting,), {"structured": 0, "plain": 0})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    httpd.shutdown()
    httpd.server_close()


def _one_role_call(backend: Any) -> Any:
    llm = ManagedLLM(backend, max_retries=0, method_memory=None)
    llm.method_memory.forget()
    return llm.complete_role(REQ)


def test_openai_llm_given_a_retrying_client_probes_once(server: tuple[str, type[_Counting]]) -> None:
    openai = pytest.importorskip("openai")
    base_url, counts = server
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=2)
    llm = OpenAILLM(model="probe-sync", client=client, structured_methods=("json_schema",))
    out = _one_role_call(llm)
    assert out.path == "text" and out.text == "ok"
    assert counts.structured == 1 and counts.plain == 1  # not 3 json_schema requests
    assert client.max_retries == 2  # the caller's client is untouched
    client.close()


def test_openai_llm_given_a_retrying_async_client_probes_once(server: tuple[str, type[_Counting]]) -> None:
    import asyncio

    openai = pytest.importorskip("openai")
    base_url, counts = server

    async def go() -> Any:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=2)
        llm = OpenAILLM(model="probe-async", async_client=client, client=openai.OpenAI(base_url=base_url,
                        api_key="x", max_retries=0), structured_methods=("json_schema",))
        managed = ManagedLLM(llm, max_retries=0)
        managed.method_memory.forget()
        out = await managed.acomplete_role(REQ)
        await client.close()
        llm.close()
        return out

    assert asyncio.run(go()).path == "text"
    assert counts.structured == 1


def test_langchain_chat_openai_defaults_probe_once(server: tuple[str, type[_Counting]]) -> None:
    lc = pytest.importorskip("langchain_openai")
    from langchain_diverse.llm import LangChainLLM

    base_url, counts = server
    chat = lc.ChatOpenAI(model="probe-lc", base_url=base_url, api_key="x")  # max_retries: the client's 2
    assert chat.root_client.max_retries == 2
    backend = LangChainLLM(chat, structured_methods=("json_schema",))
    out = _one_role_call(backend)
    assert out.path == "text" and out.text == "ok"
    assert counts.structured == 1, counts.structured  # was 3: one request and two client retries
    assert chat.root_client.max_retries == 2  # the caller's model keeps its retries for text calls


def test_llamaindex_openai_like_probes_once(server: tuple[str, type[_Counting]]) -> None:
    oll = pytest.importorskip("llama_index.llms.openai_like")
    from llamaindex_diverse.llm import LlamaIndexLLM

    base_url, counts = server
    # max_retries=1 keeps the old behaviour's cost small ((1 + 1) x (1 + 1) = 4 requests, with
    # waits); the default, 3, made up to 16
    llm = oll.OpenAILike(model="probe-li", api_base=base_url, api_key="x", is_chat_model=True, max_retries=1)
    backend = LlamaIndexLLM(llm)
    assert backend.structured_methods == ("json_object",)
    out = _one_role_call(backend)
    assert out.path == "text"
    assert counts.structured == 1, counts.structured
    assert llm.max_retries == 1


def test_double_retry_advice_once_per_client(caplog: pytest.LogCaptureFixture) -> None:
    oll = pytest.importorskip("llama_index.llms.openai_like")
    from llamaindex_diverse.llm import LlamaIndexLLM

    llm = oll.OpenAILike(model="m", api_base="http://127.0.0.1:9/v1", api_key="x", is_chat_model=True)
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        for _ in range(5):  # a pipeline built per question, as a service or a face does
            DRRAG(LlamaIndexLLM(llm), k=2)
    advice = [r for r in caplog.records if "also retries" in r.getMessage()]
    assert len(advice) == 1 and "llm.max_retries=3" in advice[0].getMessage()
    other = oll.OpenAILike(model="m", api_base="http://127.0.0.1:9/v1", api_key="x", is_chat_model=True)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        ManagedLLM(LlamaIndexLLM(other))  # another client object: told once more
    assert len([r for r in caplog.records if "also retries" in r.getMessage()]) == 1


def test_a_pipeline_run_per_question_logs_the_advice_once(caplog: pytest.LogCaptureFixture,
                                                          server: tuple[str, type[_Counting]]) -> None:
    oll = pytest.importorskip("llama_index.llms.openai_like")
    from llamaindex_diverse.llm import LlamaIndexLLM

    base_url, _ = server
    llm = oll.OpenAILike(model="m2", api_base=base_url, api_key="x", is_chat_model=True, max_retries=1)
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        for _ in range(3):
            DRRAG(LlamaIndexLLM(llm, structured_methods=()), k=2).run("Who?", source())
    assert len([r for r in caplog.records if "also retries" in r.getMessage()]) == 1
