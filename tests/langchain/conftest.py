"""Fixtures for the LangChain face tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest.importorskip("langchain_core")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from lc_fakes import CORPUS, TableEmbeddings  # noqa: E402

from langchain_diverse import clear_embedding_caches  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    clear_embedding_caches()
    yield
    clear_embedding_caches()


@pytest.fixture
def table_embeddings() -> TableEmbeddings:
    return TableEmbeddings()


@pytest.fixture
def corpus_docs() -> list[Document]:
    return [Document(page_content=t, metadata={"name": t, "nested": {"x": 1}}) for t in CORPUS]


@pytest.fixture
def store(table_embeddings: TableEmbeddings, corpus_docs: list[Document]) -> InMemoryVectorStore:
    vs = InMemoryVectorStore(table_embeddings)
    vs.add_documents(corpus_docs)
    table_embeddings.calls.clear()
    return vs
