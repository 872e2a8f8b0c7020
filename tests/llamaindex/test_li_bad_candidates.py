"""Issue 46, items 4 and 6 through the LlamaIndex postprocessor: nodes with a NaN, inf or zero
embedding are left out (listed in ``selection_params["dropped"]``), and a metadata value whose
``str()`` fails (an int over the interpreter's digit limit) is a typed error, or no error at all
when that key is not embedded."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import DiverseNodePostprocessor

RNG = np.random.default_rng(3)
QUERY = RNG.normal(size=8).tolist()


@pytest.mark.parametrize("method", ["mmr", "learned", "topk"])
def test_bad_node_embeddings_are_dropped(method: str) -> None:
    embs = RNG.normal(size=(7, 8)).tolist()
    embs[1][2] = float("nan")
    embs[3] = [0.0] * 8
    embs[5][0] = float("-inf")
    nodes = [NodeWithScore(node=TextNode(text=f"text {i} words", embedding=embs[i]), score=1.0) for i in range(7)]
    pp = DiverseNodePostprocessor(embed_model=MockEmbedding(embed_dim=8), method=method, top_n=3)
    out = pp.postprocess_nodes(nodes, query_bundle=QueryBundle("q", embedding=QUERY))
    assert len(out) == 3 and not {n.node.text for n in out} & {"text 1 words", "text 3 words", "text 5 words"}
    dropped = out[0].node.metadata["selection_params"]["dropped"]
    assert dropped == [{"index": 1, "reason": "NaN in vector"}, {"index": 3, "reason": "zero vector"},
                       {"index": 5, "reason": "inf in vector"}]


def _nodes(excluded: bool) -> list[NodeWithScore]:
    huge = 10 ** 5000  # 5,001 digits: str() raises ValueError (sys.get_int_max_str_digits())
    keys = ["source"] if excluded else []
    return [NodeWithScore(node=TextNode(text=f"text {i} words", metadata={"source": huge if i == 1 else f"s{i}"},
                                        excluded_embed_metadata_keys=keys, excluded_llm_metadata_keys=keys),
                          score=1.0) for i in range(5)]


@pytest.mark.parametrize("method", ["learned", "adaptive", "mmr"])
def test_huge_int_metadata(method: str) -> None:
    pp = DiverseNodePostprocessor(embed_model=MockEmbedding(embed_dim=8), method=method, top_n=2, source_key="source")
    with pytest.raises(InvalidParameterError, match=r"position 1\).*cannot be rendered.*excluded_embed_metadata_keys"):
        pp.postprocess_nodes(_nodes(excluded=False), query_bundle=QueryBundle("q"))
    out = pp.postprocess_nodes(_nodes(excluded=True), query_bundle=QueryBundle("q"))
    assert len(out) == 2


@pytest.mark.parametrize("method", ["mmr", "learned", "topk"])
def test_blank_nodes_are_left_out_not_fatal(method: str) -> None:
    """Issue 46 item 4: a node with no embedding and no text no longer fails the query."""
    import asyncio

    texts = ["alpha words", "", "beta words", "   ", "gamma words"]
    nodes = [NodeWithScore(node=TextNode(text=t), score=1.0) for t in texts]
    pp = DiverseNodePostprocessor(embed_model=MockEmbedding(embed_dim=8), method=method, top_n=2,
                                  method_params={} if method == "topk" else {"duplicate_threshold": None})
    out = pp.postprocess_nodes(nodes, query_bundle=QueryBundle("q"))
    assert len(out) == 2 and all(n.node.get_content().strip() for n in out)
    assert out[0].node.metadata["selection_params"]["blank_nodes"] == [1, 3]
    again = asyncio.run(pp.apostprocess_nodes(nodes, query_bundle=QueryBundle("q")))
    assert [n.node.get_content() for n in again] == [n.node.get_content() for n in out]
    with pytest.raises(InvalidParameterError, match="no embedding and no text"):
        pp.postprocess_nodes([nodes[1], nodes[3]], query_bundle=QueryBundle("q"))
