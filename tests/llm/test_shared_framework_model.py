"""One framework model shared by every request (issue 46 item 5): a service builds a pipeline
retriever per request around one ``ChatOpenAI`` / ``OpenAILike``. Each synchronous run has an
event loop of its own; the model's async client kept its pooled connection on the first run's
loop, so the next run's first call failed with ``Connection error`` (``max_retries=0``: every
second request raised ``LLMError``). A keep-alive stdlib server on 127.0.0.1 reproduces it; the
same against llama-cpp-python's server is in ``tests/realserver/test_real_server_shared_model.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from framework_embeddings import langchain_embeddings, llamaindex_embedding
from http_fakes import SchemaServer
from structured_fakes import CORPUS, hash_embed

FACES = ["DFRAGRetriever", "DIVARetriever", "VendiRAGRetriever", "DRRAGRetriever"]
SMALL: dict[str, dict[str, Any]] = {
    "DFRAGRetriever": {"lambdas": [0.2, 0.8]},
    "DIVARetriever": {},
    "VendiRAGRetriever": {"max_iterations": 1},
    "DRRAGRetriever": {"mode": "qdc", "generate": True},
}
QUESTION = "In which city was the author of Dracula born?"
REQUESTS = 3


@pytest.fixture
def base_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), SchemaServer)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def _langchain_retriever(face: str, model: Any) -> Any:
    from langchain_core.vectorstores import InMemoryVectorStore

    import langchain_diverse

    store = InMemoryVectorStore(langchain_embeddings(hash_embed))
    store.add_texts(CORPUS)
    options = {k: v for k, v in SMALL[face].items() if k != "generate"}
    return getattr(langchain_diverse, face)(llm=model, vectorstore=store, k=3, fetch_k=8, max_retries=0,
                                            timeout=30.0, **options)


def _llamaindex_retriever(face: str, llm: Any) -> Any:
    from llama_index.core import Document, VectorStoreIndex

    import llamaindex_diverse

    model = llamaindex_embedding(hash_embed)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in CORPUS], embed_model=model)
    options = {k: v for k, v in SMALL[face].items() if k != "generate"}
    return getattr(llamaindex_diverse, face)(index, llm=llm, embed_model=model, k=3, fetch_k=8, max_retries=0,
                                             timeout=30.0, **options)


def _chat_openai(base_url: str) -> Any:
    chat_openai = pytest.importorskip("langchain_openai", reason="pip install langchain-openai").ChatOpenAI
    return chat_openai(model="m", base_url=base_url, api_key="EMPTY", max_retries=0, temperature=0.0)


def _openai_like(base_url: str) -> Any:
    openai_like = pytest.importorskip("llama_index.llms.openai_like",
                                      reason="pip install llama-index-llms-openai-like").OpenAILike
    return openai_like(model="m", api_base=base_url, api_key="EMPTY", is_chat_model=True, max_retries=0,
                       timeout=30.0)


def _requests(build: Any, call: str) -> None:
    """``REQUESTS`` answered questions, each through a retriever of its own (as a service's
    handler builds them): its chain (LangChain) or query engine (LlamaIndex). With
    ``max_retries=0`` a call that met a stale connection raises."""
    for _ in range(REQUESTS):
        retriever = build()
        if hasattr(retriever, "as_chain"):
            chain = retriever.as_chain()
            out = chain.invoke(QUESTION) if call == "sync" else asyncio.run(chain.ainvoke(QUESTION))
            assert out["context"] and all(e.error is None for e in out["trace"])
            assert out["cost"]["retries"] == 0 and out["cost"]["failed_calls"] == 0
        else:
            import llamaindex_diverse

            engine = getattr(llamaindex_diverse, type(retriever).__name__.replace("Retriever", "QueryEngine"))(
                retriever)
            response = engine.query(QUESTION) if call == "sync" else asyncio.run(engine.aquery(QUESTION))
            assert response.source_nodes


@pytest.mark.parametrize("call", ["sync", "async"])
@pytest.mark.parametrize("face", FACES)
def test_one_chat_openai_serves_a_retriever_per_request(base_url: str, face: str, call: str) -> None:
    pytest.importorskip("langchain_core")
    model = _chat_openai(base_url)
    _requests(lambda: _langchain_retriever(face, model), call)


@pytest.mark.parametrize("call", ["sync", "async"])
@pytest.mark.parametrize("face", FACES)
def test_one_openai_like_serves_a_retriever_per_request(base_url: str, face: str, call: str) -> None:
    pytest.importorskip("llama_index.core")
    llm = _openai_like(base_url)
    _requests(lambda: _llamaindex_retriever(face, llm), call)


def test_threads_and_loops_at_once_share_one_model(base_url: str) -> None:
    """Eight threads, each with its own event loops and sync runs, one ``ChatOpenAI``."""
    pytest.importorskip("langchain_core")
    model = _chat_openai(base_url)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            _requests(lambda: _langchain_retriever("DFRAGRetriever", model), "sync" if i % 2 else "async")
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_a_model_serves_the_first_loop_only_and_never_a_private_one() -> None:
    from diverse_core.llm.loops import on_private_loop, private_loop, serves_running_loop

    class Model:
        pass

    model, other = Model(), Model()

    async def ask(m: Any) -> bool:
        return serves_running_loop(m)

    async def on_own_loop() -> tuple[bool, bool]:
        with private_loop(asyncio.get_running_loop()):
            return on_private_loop(), serves_running_loop(other)

    assert asyncio.run(on_own_loop()) == (True, False)  # a private loop binds nothing
    assert asyncio.run(ask(other))  # so the next loop is the first
    assert not asyncio.run(ask(other))

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(ask(model)) and loop.run_until_complete(ask(model))
        assert not asyncio.run(ask(model))  # another loop, while the first is alive
    finally:
        loop.close()
    assert not asyncio.run(ask(model))  # and after it closed: its connections may be stale
    assert not serves_running_loop(model) and not on_private_loop()  # no running loop
