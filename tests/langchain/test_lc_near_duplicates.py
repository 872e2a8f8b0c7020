"""Issue 45 item 5 through the LangChain face: ten pages of five near-identical windows each
(cosine ~0.99, as overlapping chunk windows give); every diversity method returns five distinct
pages, ``topk`` is unchanged, and ``duplicate_threshold=None`` restores the method's own picks."""

from __future__ import annotations

from typing import Any

import diverse_core as dc
import numpy as np
import pytest
from langchain_core.callbacks.manager import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from lc_fakes import TableEmbeddings

from langchain_diverse import DiverseRetriever

RNG = np.random.default_rng(7)
PAGES = RNG.normal(size=(10, 16))
VECS = np.repeat(PAGES, 5, axis=0) + RNG.normal(scale=0.01, size=(50, 16))
TEXTS = [f"page {i // 5} window {i % 5}" for i in range(50)]
TABLE = {t: v.tolist() for t, v in zip(TEXTS, VECS, strict=True)}
TABLE["which pages?"] = (PAGES[:3].sum(axis=0) + RNG.normal(scale=0.5, size=16)).tolist()


class ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return list(self.docs)


def _retriever(method: str, **params: Any) -> DiverseRetriever:
    docs = [Document(page_content=t, metadata={"source": f"p{i // 5}"}) for i, t in enumerate(TEXTS)]
    return DiverseRetriever(base_retriever=ListRetriever(docs=docs), embeddings=TableEmbeddings(TABLE),
                            k=5, fetch_k=50, method=method, method_params=params)


def _pages(docs: list[Document]) -> set[str]:
    return {d.page_content.split(" window")[0] for d in docs}


@pytest.mark.parametrize("method", [m for m in dc.available_methods() if m != "topk"])
def test_every_method_returns_distinct_pages(method: str) -> None:
    docs = _retriever(method).invoke("which pages?")
    assert len(docs) == 5 and len(_pages(docs)) == 5


def test_topk_and_the_opt_out_keep_the_old_picks() -> None:
    assert len(_pages(_retriever("topk").invoke("which pages?"))) < 5
    off = _retriever("dartboard", duplicate_threshold=None).invoke("which pages?")
    assert len(_pages(off)) < 5  # dartboard alone repeats pages on this pool
    on = _retriever("dartboard").invoke("which pages?")
    assert on[0].metadata["selection_params"]["near_duplicates"]
