"""The retriever's per-call behaviour: the plan follows changed settings, document copies, text checks."""

from __future__ import annotations

from typing import Any

import pytest
from diverse_core.errors import InvalidParameterError
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from lc_fakes import DUPS

from langchain_diverse import SELECTION_METADATA_KEYS, DiverseRetriever, EmptyDocumentError
from langchain_diverse.selection import document_texts


def names(docs: list[Document]) -> list[str]:
    return [d.page_content for d in docs]


# -- the plan is built again when the settings change -----------------
def test_reassigned_fields_take_effect_after_a_call(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, method="gmmr",
                                 method_params={"lambda_mult": 0.5})
    assert "bridge" in names(retriever.invoke("q"))
    retriever.k = 1
    assert len(retriever.invoke("q")) == 1
    retriever.k = 2
    retriever.method = "topk"  # gmmr's lambda_mult is not a topk parameter
    with pytest.raises(InvalidParameterError, match="lambda_mult"):
        retriever.invoke("q")
    retriever.method_params = {}
    assert set(names(retriever.invoke("q"))) <= DUPS
    assert retriever.invoke("q")[0].metadata["selection_method"] == "topk"


def test_method_params_edited_in_place_take_effect(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, method="mmr",
                                 method_params={"lambda_mult": 0.5, "duplicate_threshold": None})
    assert "bridge" in names(retriever.invoke("q"))
    retriever.method_params["lambda_mult"] = 1.0  # pure relevance, unguarded: the bridge goes
    docs = retriever.invoke("q")
    assert set(names(docs)) <= DUPS
    assert docs[0].metadata["selection_params"] == {"lambda_mult": 1.0}
    retriever.method_params["lambda_mult"] = 2.0
    with pytest.raises(InvalidParameterError, match="lambda_mult"):
        retriever.invoke("q")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [("k", True, "k=True"), ("fetch_k", 5.0, "fetch_k=5.0"), ("method_params", {"lambda_mult": True},
                                                               "lambda_mult=True")],
)
def test_equal_values_of_another_type_are_validated_again(
    store: InMemoryVectorStore, field: str, value: Any, match: str
) -> None:
    # True == 1 and 5.0 == 5: a plan validated for 1 or 5 must not be reused for them.
    retriever = DiverseRetriever(vectorstore=store, k=1, fetch_k=5, method="mmr",
                                 method_params={"lambda_mult": 1})
    retriever.invoke("q")
    object.__setattr__(retriever, field, value)  # bypass pydantic, as an in-place edit would
    with pytest.raises(InvalidParameterError, match=match):
        retriever.invoke("q")


# -- returned documents --------------------------------------------------------------------
def test_every_document_has_complete_metadata_of_its_own(store: InMemoryVectorStore) -> None:
    docs = DiverseRetriever(vectorstore=store, k=3, fetch_k=5, method="gmmr",
                            method_params={"lambda_mult": 0.4}).invoke("q")
    for rank, d in enumerate(docs):
        assert set(SELECTION_METADATA_KEYS) <= set(d.metadata)
        assert d.metadata["selection_rank"] == rank
        assert d.metadata["selection_params"] == {"lambda_mult": 0.4}
        assert isinstance(d.metadata["relevance_score"], float)
        assert isinstance(d.metadata["selection_score"], float)
    docs[0].metadata["selection_params"]["lambda_mult"] = 9.0  # one document's dict only
    assert docs[1].metadata["selection_params"] == {"lambda_mult": 0.4}


def test_returned_documents_are_copies_that_leave_the_store_alone(store: InMemoryVectorStore) -> None:
    docs = DiverseRetriever(vectorstore=store, k=2, fetch_k=5).invoke("q")
    docs[0].metadata["selection_rank"] = 99
    again = DiverseRetriever(vectorstore=store, k=2, fetch_k=5).invoke("q")
    assert again[0].metadata["selection_rank"] == 0
    assert all(not set(SELECTION_METADATA_KEYS) & set(d["metadata"]) for d in store.store.values())


# -- candidate texts -----------------------------------------------------------------------
def test_document_texts_accepts_real_text() -> None:
    docs = [Document(page_content=t) for t in ["a", " b ", "c\n"]]
    assert document_texts(docs) == ["a", " b ", "c\n"]


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_document_texts_names_the_blank_document(bad: str) -> None:
    docs = [Document(page_content="fine"), Document.model_construct(page_content=bad, id="x")]
    with pytest.raises(EmptyDocumentError, match=r"document 1 \(id='x'\)"):
        document_texts(docs)


@pytest.mark.parametrize("bad", [None, 3, b"bytes"])
def test_document_texts_rejects_non_text_content(bad: object) -> None:
    docs = [Document(page_content="fine"), Document.model_construct(page_content=bad)]
    with pytest.raises(EmptyDocumentError, match="document 1"):
        document_texts(docs)


def test_document_texts_rejects_objects_without_page_content() -> None:
    with pytest.raises(EmptyDocumentError, match="document 0"):
        document_texts(["just a string"])  # type: ignore[list-item]
