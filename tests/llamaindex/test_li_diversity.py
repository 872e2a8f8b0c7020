"""The shared diversity knob in the LlamaIndex faces (issue 36 item 4)."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import ConflictingParametersError, InvalidParameterError
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import DiverseNodePostprocessor


def _nodes(cands: np.ndarray) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"chunk {i}", embedding=v.tolist()), score=0.0)
            for i, v in enumerate(cands)]


@pytest.mark.parametrize("method", ["mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist"])
@pytest.mark.parametrize("diversity", [0.0, 0.4, 1.0])
def test_postprocessor_diversity_matches_core(method: str, diversity: float) -> None:
    rng = np.random.default_rng(1)
    query, cands = rng.normal(size=6), rng.normal(size=(15, 6))
    expected = dc.select(method, query, cands, 4, diversity=diversity)
    pp = DiverseNodePostprocessor(top_n=4, method=method, diversity=diversity)
    out = pp.postprocess_nodes(_nodes(cands), QueryBundle("q", embedding=query.tolist()))
    assert [n.node.node_id for n in out] == [f"n{i}" for i in expected.indices]
    shown = out[0].node.metadata["selection_params"]
    assert {k: shown[k] for k in expected.params} == expected.params  # the native parameter


def test_retriever_takes_diversity_and_conflicts_are_typed() -> None:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import DiverseRetriever

    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in "abcdef"], embed_model=emb)
    r = DiverseRetriever.from_index(index, top_n=2, fetch_k=6, method="vendi", diversity=0.3, embed_model=emb)
    assert r.postprocessor.method_params == {"diversity": 0.3}
    assert len(r.retrieve("q")) == 2
    with pytest.raises(ConflictingParametersError):
        DiverseNodePostprocessor(method="vendi", diversity=0.3, method_params={"s": 0.5})
    with pytest.raises(InvalidParameterError, match="diversity must be in"):
        DiverseNodePostprocessor(method="adaptive", diversity=1.3)
    with pytest.raises(InvalidParameterError, match="not both"):
        DiverseRetriever(index.as_retriever(), DiverseNodePostprocessor(), diversity=0.3)


def test_the_plan_is_resolved_once_and_again_only_when_settings_change(resolved_methods: list[str]) -> None:
    resolved = resolved_methods
    rng = np.random.default_rng(3)
    nodes = [NodeWithScore(node=TextNode(text=f"t{i}", embedding=rng.normal(size=4).tolist()), score=0.5)
             for i in range(6)]
    bundle = QueryBundle("q", embedding=rng.normal(size=4).tolist())
    pp = DiverseNodePostprocessor(top_n=2, method="vendi", diversity=0.3)
    assert resolved == ["vendi"]
    for _ in range(3):
        pp.postprocess_nodes(nodes, bundle)
    assert resolved == ["vendi"]
    pp.method = "gmmr"
    assert pp.postprocess_nodes(nodes, bundle)[0].node.metadata["selection_params"] == {"lambda_mult": 0.7}
    assert resolved == ["vendi", "gmmr"]
