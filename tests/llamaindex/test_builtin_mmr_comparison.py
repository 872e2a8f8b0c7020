"""Hand-built cases where LlamaIndex's built-in MMR picks wrongly and ours picks rightly.

``llama_index.core.indices.query.embedding_utils.get_top_k_mmr_embeddings`` (also behind
``VectorStoreQueryMode.MMR`` of the default ``SimpleVectorStore``) differs from MMR
(Carbonell & Goldstein) in two ways:

1. the redundancy term uses only the *most recently* picked item, not the maximum over
   every picked item, so a near-duplicate of an earlier pick comes back;
2. the first pick maximises ``threshold * similarity`` with a strict ``>`` from
   ``-inf``; at ``mmr_threshold=0`` every candidate scores 0, so the first *input*
   wins regardless of its relevance.
"""

from __future__ import annotations

from li_fakes import KeyedEmbedding, unit
from llama_index.core import VectorStoreIndex
from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import VectorStoreQueryMode

from llamaindex_diverse import DiverseNodePostprocessor

QUERY = [1.0, 0.0, 0.0]
# A: most relevant. B: near-duplicate of A. C: relevant, other direction.
# D: relevant, orthogonal to the A/C plane: the right third pick.
A = unit([0.95, 0.31, 0.0])
B = unit([0.94, 0.34, 0.0])
C = unit([0.6, -0.8, 0.0])
D = unit([0.7, 0.0, 0.714])
RECENCY_CASE = {"A": A, "B": B, "C": C, "D": D}

# First-pick case: the irrelevant item comes first in the input.
FAR = unit([0.0, 1.0, 0.0])
NEAR = unit([0.9, 0.1, 0.0])


def _nodes(table: dict[str, list[float]]) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=name, text=name, embedding=vec), score=vec[0])
        for name, vec in table.items()
    ]


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_builtin_penalises_only_latest_pick_and_returns_a_near_duplicate() -> None:
    names = list(RECENCY_CASE)
    _, ids = get_top_k_mmr_embeddings(
        QUERY, list(RECENCY_CASE.values()), similarity_top_k=3, mmr_threshold=0.5
    )
    assert [names[i] for i in ids] == ["A", "C", "B"]  # B duplicates A

    pp = DiverseNodePostprocessor(top_n=3, method="mmr", method_params={"lambda_mult": 0.5})
    out = pp.postprocess_nodes(_nodes(RECENCY_CASE), QueryBundle("q", embedding=QUERY))
    assert _ids(out) == ["A", "C", "D"]


def test_builtin_first_pick_is_first_input_at_threshold_zero() -> None:
    _, ids = get_top_k_mmr_embeddings(QUERY, [FAR, NEAR], similarity_top_k=1, mmr_threshold=0.0)
    assert ids == [0]  # FAR, although NEAR is far more relevant

    pp = DiverseNodePostprocessor(top_n=1, method="mmr", method_params={"lambda_mult": 0.0})
    out = pp.postprocess_nodes(_nodes({"FAR": FAR, "NEAR": NEAR}), QueryBundle("q", embedding=QUERY))
    assert _ids(out) == ["NEAR"]


def test_simple_vector_store_mmr_mode_shows_the_same_flaw() -> None:
    """End to end: the default store's MMR mode returns the duplicate; the postprocessor does not."""
    embed = KeyedEmbedding({**RECENCY_CASE, "question": QUERY})
    index = VectorStoreIndex(
        [TextNode(id_=name, text=name) for name in RECENCY_CASE], embed_model=embed
    )
    builtin = index.as_retriever(
        similarity_top_k=3,
        vector_store_query_mode=VectorStoreQueryMode.MMR,
        vector_store_kwargs={"mmr_threshold": 0.5},
    ).retrieve("question")
    assert _ids(builtin) == ["A", "C", "B"]

    fetched = index.as_retriever(similarity_top_k=4).retrieve("question")
    pp = DiverseNodePostprocessor(
        top_n=3, method="mmr", method_params={"lambda_mult": 0.5}, embed_model=embed
    )
    assert _ids(pp.postprocess_nodes(fetched, query_str="question")) == ["A", "C", "D"]

