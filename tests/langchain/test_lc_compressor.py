"""DiverseCompressor alone, inside ContextualCompressionRetriever and DocumentCompressorPipeline."""

from __future__ import annotations

import pytest
from diverse_core.errors import InvalidParameterError, UnknownMethodError
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from lc_fakes import DIVERSE, DUPS, TableEmbeddings
from pydantic import ValidationError

from langchain_diverse import SELECTION_METADATA_KEYS, DiverseCompressor, EmptyDocumentError

classic = pytest.importorskip("langchain_classic", reason="langchain-classic is not installed")
from langchain_classic.retrievers import ContextualCompressionRetriever  # noqa: E402
from langchain_classic.retrievers.document_compressors import (  # noqa: E402
    DocumentCompressorPipeline,
    EmbeddingsFilter,
)


def names(docs: object) -> list[str]:
    return [d.page_content for d in docs]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("method", "params"), DIVERSE)
def test_compressor_known_answer(table_embeddings: TableEmbeddings, corpus_docs: list[Document],
                                 method: str, params: dict[str, float]) -> None:
    compressor = DiverseCompressor(embeddings=table_embeddings, k=2, method=method,
                                   method_params=params)
    out = compressor.compress_documents(corpus_docs, "q")
    assert names(out)[0] in DUPS and names(out)[1] == "bridge"
    for rank, doc in enumerate(out):
        assert set(SELECTION_METADATA_KEYS) <= set(doc.metadata)
        assert doc.metadata["selection_rank"] == rank
        assert doc.metadata["selection_method"] == method
    topk = DiverseCompressor(embeddings=table_embeddings, k=2, method="topk")
    assert set(names(topk.compress_documents(corpus_docs, "q"))) <= DUPS


def test_compressor_does_not_mutate_and_handles_small_inputs(
    table_embeddings: TableEmbeddings, corpus_docs: list[Document]
) -> None:
    before = [d.model_copy(deep=True) for d in corpus_docs]
    compressor = DiverseCompressor(embeddings=table_embeddings, k=10)
    out = compressor.compress_documents(corpus_docs, "q")
    assert len(out) == len(corpus_docs)  # k > available returns what exists
    assert corpus_docs == before
    assert compressor.compress_documents([], "q") == []


def test_compressor_errors(table_embeddings: TableEmbeddings) -> None:
    with pytest.raises(UnknownMethodError):
        DiverseCompressor(embeddings=table_embeddings, method="no_such_method")
    with pytest.raises(InvalidParameterError, match="lambda"):
        DiverseCompressor(embeddings=table_embeddings, method="mmr", method_params={"lambda": 1})
    with pytest.raises(InvalidParameterError, match="k must be a positive integer"):
        DiverseCompressor(embeddings=table_embeddings, k=0)
    with pytest.raises(ValidationError):
        DiverseCompressor(embeddings=table_embeddings, fetch_k=3)  # not a compressor field
    compressor = DiverseCompressor(embeddings=table_embeddings)
    with pytest.raises(EmptyDocumentError, match="document 0"):
        compressor.compress_documents([Document(page_content="")], "q")


async def test_compressor_async(table_embeddings: TableEmbeddings,
                                corpus_docs: list[Document]) -> None:
    compressor = DiverseCompressor(embeddings=table_embeddings, k=2, method="mmr")
    out = await compressor.acompress_documents(corpus_docs, "q")
    assert names(out)[1] == "bridge"
    assert {kind for kind, _ in table_embeddings.calls} == {"aembed_query", "aembed_documents"}
    assert out == compressor.compress_documents(corpus_docs, "q")


async def test_contextual_compression_retriever(store: InMemoryVectorStore,
                                                table_embeddings: TableEmbeddings) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=DiverseCompressor(embeddings=table_embeddings, k=2, method="gmmr"),
        base_retriever=store.as_retriever(search_kwargs={"k": 5}),
    )
    for docs in (retriever.invoke("q"), await retriever.ainvoke("q")):
        assert names(docs)[0] in DUPS and names(docs)[1] == "bridge"
        assert docs[1].metadata["selection_rank"] == 1


# langchain-classic's EmbeddingsFilter imports langchain-community, which now warns that
# it is being sunset; the warning is about that package, not about this composition.
@pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset:DeprecationWarning")
def test_document_compressor_pipeline(store: InMemoryVectorStore,
                                      table_embeddings: TableEmbeddings) -> None:
    diverse = DiverseCompressor(embeddings=table_embeddings, k=3, method="gmmr")
    base = store.as_retriever(search_kwargs={"k": 5})
    # Without a filter, gMMR's third pick is the off-topic "noise" document ...
    alone = ContextualCompressionRetriever(base_compressor=diverse, base_retriever=base)
    assert "noise" in names(alone.invoke("q"))
    # ... a relevance filter first removes it, and the diverse step still finds the bridge.
    pipeline = DocumentCompressorPipeline(transformers=[
        EmbeddingsFilter(embeddings=table_embeddings, similarity_threshold=0.5),
        diverse,
    ])
    docs = ContextualCompressionRetriever(base_compressor=pipeline, base_retriever=base).invoke("q")
    assert "noise" not in names(docs)
    assert "bridge" in names(docs)
    assert [d.metadata["selection_rank"] for d in docs] == [0, 1, 2]
