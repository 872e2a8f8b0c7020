"""LangChain's standard retriever suite (``RetrieversIntegrationTests``) for the DF-RAG retriever
(the generic pipeline face), over a vector store and over a wrapped retriever."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_tests")

from dfrag_fakes import role_of, score_reply  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from langchain_diverse import DFRAGRetriever  # noqa: E402

TEXTS = [f"Fact {i} about {topic}." for i, topic in enumerate(
    ["Paris", "France", "the Louvre", "Berlin", "Germany", "Tokyo", "Japan", "rivers", "cells", "oceans"])]


class ScriptedChat(BaseChatModel):
    """Planner, evaluator and generator replies by the prompt's role."""

    @property
    def _llm_type(self) -> str:
        return "scripted-dfrag"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:
        role = role_of(str(messages[-1].content))
        text = {"planner": "1) Find it", "evaluator": score_reply(4, 1)}.get(role, "an answer")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_texts(TEXTS)
    return store


class TestDFRAGRetrieverOverAStore(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return DFRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"llm": ScriptedChat(), "vectorstore": _store(), "fetch_k": 8}

    @property
    def retriever_query_example(self) -> str:
        return "What is there to see in Paris?"


class TestDFRAGRetrieverOverAWrappedRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return DFRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = _store()
        return {"llm": ScriptedChat(), "base_retriever": store.as_retriever(search_kwargs={"k": 8}),
                "embeddings": store.embeddings, "fetch_k": 8}

    @property
    def retriever_query_example(self) -> str:
        return "What is there to see in Paris?"
