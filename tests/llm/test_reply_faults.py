"""Issue 46 item 6, the LLM layer's part: a 200 whose body is no completion is retried like a 5xx;
the first ``arun()`` of a process does not import and build the client on the event loop; a
LangChain structured runnable whose parser raises degrades to the text path; DF-RAG's fallback
is logged."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from diverse_core.llm import LLMError, ManagedLLM, OpenAILLM, is_transient
from http_fakes import SchemaServer
from structured_fakes import source

TRUNCATED = b'{"id": "c", "object": "chat.completion", "choices": [{"index": 0, "mess'
NOT_JSON = b"<html>502 Bad Gateway</html>"
WRONG_SHAPE = b'{"error": null}'


@pytest.fixture
def server() -> Iterator[tuple[str, type[SchemaServer]]]:
    handler = type("Faulty", (SchemaServer,), {"faults": [], "requests": 0})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("body", [TRUNCATED, NOT_JSON, WRONG_SHAPE], ids=["truncated", "html", "no-choices"])
@pytest.mark.parametrize("call", ["sync", "async"])
def test_a_200_that_is_no_completion_is_retried(server: tuple[str, Any], body: bytes, call: str) -> None:
    url, handler = server
    handler.faults[:] = [body]
    llm = ManagedLLM(OpenAILLM(model="m", base_url=url), max_retries=2, backoff_base=0.0)
    out = llm.complete("hi") if call == "sync" else asyncio.run(llm.acomplete("hi"))
    assert out.attempts == 2 and handler.requests == 2
    assert llm.usage().retries == 1


@pytest.mark.parametrize("structured", [False, True])
def test_a_200_that_is_no_completion_ends_in_a_typed_error_after_the_retries(
        server: tuple[str, Any], structured: bool) -> None:
    from diverse_core.llm import Message, OutputSchema, RoleRequest

    url, handler = server
    handler.faults[:] = [TRUNCATED] * 3
    llm = ManagedLLM(OpenAILLM(model="m", base_url=url, structured_methods=("json_object",)),
                     max_retries=1, backoff_base=0.0)
    with pytest.raises(LLMError) as info:
        if structured:
            schema = OutputSchema("verdict", {"type": "object", "properties": {"useful": {"type": "boolean"}},
                                              "required": ["useful"]})
            llm.complete_role(RoleRequest("judge", (Message("user", "useful?"),), schema, "useful?"))
        else:
            llm.complete("hi")
    from diverse_core.llm import MalformedReplyError

    assert isinstance(info.value.__cause__, MalformedReplyError) and info.value.attempts == 2
    assert "not a JSON completion" in str(info.value)


def test_unreadable_bodies_count_as_transient() -> None:
    import json

    from diverse_core.llm import MalformedReplyError

    class APIResponseValidationError(Exception):
        status_code = 200

    try:
        json.loads("{")
    except json.JSONDecodeError as exc:
        assert is_transient(exc)
    assert is_transient(APIResponseValidationError()) and is_transient(MalformedReplyError("x"))
    assert not is_transient(ValueError("bad input"))


def test_the_first_async_call_builds_its_client_off_the_event_loop(
        server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing ``openai`` and building ``AsyncOpenAI`` took seconds on a cold start; on the loop
    they stalled every task and timeout of it (``asyncio.wait_for(arun(), 0.3)`` overshot by 4 s)."""
    import diverse_core.llm.openai_llm as mod

    url, _ = server
    where: list[bool] = []
    real = mod._import_openai

    def spy() -> Any:
        try:
            asyncio.get_running_loop()
            where.append(True)
        except RuntimeError:
            where.append(False)
        return real()

    monkeypatch.setattr(mod, "_import_openai", spy)
    llm = OpenAILLM(model="m", base_url=url)

    async def twice() -> None:
        await llm.acomplete("hi")
        await llm.acomplete("hi")  # the loop's client is reused

    asyncio.run(twice())
    assert where == [False]


def test_a_langchain_parser_error_degrades_to_the_text_path() -> None:
    """A model whose own ``with_structured_output`` raises ``OutputParserException``: the run goes
    on with the text prompts and says so, instead of failing with ``LLMError``."""
    pytest.importorskip("langchain_core")
    from diverse_core.pipelines.dfrag import DFRAG
    from langchain_core.exceptions import OutputParserException
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.runnables import RunnableLambda

    from langchain_diverse.llm import LangChainLLM

    def unparsed(quoted: str) -> Any:
        class Unparsed(FakeListChatModel):
            def with_structured_output(self, schema: Any, *, method: str = "json_schema",
                                       include_raw: bool = False, **kwargs: Any) -> Any:
                def fail(_: Any) -> Any:
                    raise OutputParserException("Invalid json output: Total Score: 3", llm_output=quoted)

                return RunnableLambda(fail)

        return Unparsed(responses=["1) Who wrote Dracula?\n2) Where was he born?\nTotal Score: 3\nAnswer: Dublin"])

    for quoted in ("1) Who wrote Dracula?\nTotal Score: 3", ""):  # with the reply quoted, and without
        model = unparsed(quoted)
        result = DFRAG(LangChainLLM(model), k=2, lambdas=[0.2, 0.8], max_retries=0).run(
            "Where was the author of Dracula born?", source())
        assert result.documents and result.warnings, result.warnings
        assert result.cost.failed_calls == 0


def test_dfrag_logs_its_fallback(caplog: pytest.LogCaptureFixture) -> None:
    """An Evaluator that answers junk: the grid's median is used, in the result and in the log."""
    from diverse_core.pipelines.dfrag import DFRAG

    with caplog.at_level(logging.INFO, logger="diverse_core"):
        result = DFRAG(lambda p: "I cannot help with that.", k=2, lambdas=[0.2, 0.8], max_retries=0).run(
            "Where was the author of Dracula born?", source())
    assert result.lambda_source == "fallback"
    logged = [r for r in caplog.records if r.name == "diverse_core" and "fallback" in r.getMessage()]
    assert logged and logged[0].levelno == logging.WARNING


@pytest.mark.parametrize("face", ["langchain", "llamaindex"])
@pytest.mark.parametrize("body", [TRUNCATED, NOT_JSON], ids=["truncated", "html"])
def test_a_framework_models_unreadable_200_is_retried_on_the_structured_path(
        server: tuple[str, Any], face: str, body: bytes) -> None:
    """Through ``OpenAILike`` the client's decoder error was taken for an unparseable *model*
    reply: the role fell to its text parser and DF-RAG scored that lambda 0 (seen in the soak)."""
    from diverse_core.llm import Message, OutputSchema, RoleRequest

    url, handler = server
    if face == "langchain":
        pytest.importorskip("langchain_openai", reason="pip install langchain-openai")
        from langchain_openai import ChatOpenAI

        from langchain_diverse.llm import as_backend

        backend = as_backend(ChatOpenAI(model="m", base_url=url, api_key="EMPTY", max_retries=0))
    else:
        pytest.importorskip("llama_index.llms.openai_like", reason="pip install llama-index-llms-openai-like")
        from llama_index.llms.openai_like import OpenAILike

        from llamaindex_diverse.llm import as_backend as li_backend

        backend = li_backend(OpenAILike(model="m", api_base=url, api_key="EMPTY", is_chat_model=True,
                                        max_retries=0))
    schema = OutputSchema("rating", {"type": "object", "properties": {
        "score": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["score"]})
    request = RoleRequest("judge", (Message("user", "rate it"),), schema, "rate it")
    handler.faults[:] = [body]
    out = ManagedLLM(backend, max_retries=1, backoff_base=0.0).complete_role(request)
    assert out.path == "structured" and out.value == {"score": 3} and not out.problems
    assert out.attempts == 2 and handler.requests == 2
