"""Issue 45 item 5 through the LlamaIndex postprocessor: near-identical windows of one page are
never picked twice by a diversity method; ``duplicate_threshold=None`` turns the guard off."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import DiverseNodePostprocessor

RNG = np.random.default_rng(11)
PAGES = RNG.normal(size=(10, 16))
VECS = np.repeat(PAGES, 5, axis=0) + RNG.normal(scale=0.01, size=(50, 16))
QUERY = (PAGES[:3].sum(axis=0) + RNG.normal(scale=0.5, size=16)).tolist()


def _nodes() -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=f"page {i // 5} window {i % 5}", embedding=VECS[i].tolist(),
                                        metadata={"source": f"p{i // 5}"}), score=1.0) for i in range(50)]


def _pages(out: list[NodeWithScore]) -> set[str]:
    return {n.node.get_content().split(" window")[0] for n in out}


@pytest.mark.parametrize("method", [m for m in dc.available_methods() if m != "topk"])
def test_every_method_returns_distinct_pages(method: str) -> None:
    pp = DiverseNodePostprocessor(embed_model=MockEmbedding(embed_dim=16), method=method, top_n=5)
    out = pp.postprocess_nodes(_nodes(), query_bundle=QueryBundle("which pages?", embedding=QUERY))
    assert len(out) == 5 and len(_pages(out)) == 5


def test_the_opt_out() -> None:
    pp = DiverseNodePostprocessor(embed_model=MockEmbedding(embed_dim=16), method="dartboard", top_n=5,
                                  method_params={"duplicate_threshold": None})
    out = pp.postprocess_nodes(_nodes(), query_bundle=QueryBundle("which pages?", embedding=QUERY))
    assert len(_pages(out)) < 5
