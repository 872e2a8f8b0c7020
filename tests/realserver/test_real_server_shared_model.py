"""One framework model shared by a retriever per request, against llama-cpp-python's real server
(issue 46 item 5): LangChain's ``ChatOpenAI`` and LlamaIndex's ``OpenAILike`` with
``max_retries=0`` everywhere, so a call that met a connection left on another request's event
loop raises instead of being retried. DR-RAG's chain / query engine (one Generator call per
question) keeps the suite's budget; the four pipelines against a fake keep-alive server are in
``tests/llm/test_shared_framework_model.py``."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import pytest
from llama_server import LlamaCppServer
from tiny_corpus import PASSAGES, QUESTION, hash_embedder

_spec = importlib.util.spec_from_file_location(
    "framework_embeddings", Path(__file__).resolve().parents[1] / "llm" / "framework_embeddings.py")
assert _spec is not None and _spec.loader is not None
framework_embeddings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(framework_embeddings)

pytestmark = pytest.mark.real_server

MAX_TOKENS = 48
SYNC_REQUESTS, ASYNC_REQUESTS = 3, 2
POLICY: dict[str, Any] = {"k": 3, "fetch_k": 6, "mode": "qdc", "max_retries": 0, "timeout": 240.0}


def _langchain_answers(server: LlamaCppServer) -> list[dict[str, Any]]:
    chat_openai = pytest.importorskip("langchain_openai", reason="pip install langchain-openai").ChatOpenAI
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import DRRAGRetriever

    class Hash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return hash_embedder(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return hash_embedder([text])[0].tolist()

    store = InMemoryVectorStore(Hash())
    store.add_texts(PASSAGES)
    model = chat_openai(model=server.alias, base_url=server.base_url, api_key="EMPTY", max_tokens=MAX_TOKENS,
                        temperature=0.0, max_retries=0)
    outs = []
    for i in range(SYNC_REQUESTS + ASYNC_REQUESTS):
        chain = DRRAGRetriever(llm=model, vectorstore=store, **POLICY).as_chain()  # one per request
        outs.append(chain.invoke(QUESTION) if i < SYNC_REQUESTS else asyncio.run(chain.ainvoke(QUESTION)))
    return outs


def _llamaindex_answers(server: LlamaCppServer) -> list[Any]:
    openai_like = pytest.importorskip("llama_index.llms.openai_like",
                                      reason="pip install llama-index-llms-openai-like").OpenAILike
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding

    from llamaindex_diverse import DRRAGQueryEngine, DRRAGRetriever

    class Hash(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return hash_embedder([text])[0].tolist()

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    embed = Hash(model_name="hash")
    index = VectorStoreIndex.from_documents([Document(text=t) for t in PASSAGES], embed_model=embed)
    llm = openai_like(model=server.alias, api_base=server.base_url, api_key="EMPTY", max_tokens=MAX_TOKENS,
                      temperature=0.0, is_chat_model=True, max_retries=0, timeout=240.0)
    outs = []
    for i in range(SYNC_REQUESTS + ASYNC_REQUESTS):
        engine = DRRAGQueryEngine(DRRAGRetriever(index, llm=llm, embed_model=embed, **POLICY))  # one per request
        outs.append(engine.query(QUESTION) if i < SYNC_REQUESTS else asyncio.run(engine.aquery(QUESTION)))
    return outs


def test_one_chat_openai_serves_a_retriever_per_request(llama_server: LlamaCppServer) -> None:
    outs = _langchain_answers(llama_server)
    assert len(outs) == SYNC_REQUESTS + ASYNC_REQUESTS
    for out in outs:
        assert out["cost"]["failed_calls"] == 0 and out["cost"]["llm_calls"] == 1, out["cost"]
        assert all(e.error is None for e in out["trace"])


def test_one_openai_like_serves_a_retriever_per_request(llama_server: LlamaCppServer) -> None:
    outs = _llamaindex_answers(llama_server)
    assert len(outs) == SYNC_REQUESTS + ASYNC_REQUESTS
    assert all(r.source_nodes for r in outs)
