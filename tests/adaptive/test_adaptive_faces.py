"""The "adaptive" method through both frameworks' faces (they take any registered method)."""

from __future__ import annotations

from pathlib import Path

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.adaptive import AdaptiveSelector


@pytest.fixture
def model(tmp_path: Path) -> str:
    rng = np.random.default_rng(5)
    qs = [rng.normal(size=16) for _ in range(12)]
    cs = [rng.normal(size=(20, 16)) for _ in range(12)]
    gs = [np.where(rng.random(20) < 0.2, rng.integers(0, 2, 20), -1) for _ in range(12)]
    return str(AdaptiveSelector.fit(qs, cs, gs, k=3, folds=3).save(tmp_path / "m.npz"))


def test_llamaindex_postprocessor_runs_adaptive(model: str) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from llamaindex_diverse import DiverseNodePostprocessor

    rng = np.random.default_rng(0)
    query, cands = rng.normal(size=16), rng.normal(size=(12, 16))
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"c{i}", embedding=v.tolist()), score=0.0)
             for i, v in enumerate(cands)]
    pp = DiverseNodePostprocessor(top_n=3, method="adaptive", method_params={"model": model})
    out = pp.postprocess_nodes(nodes, QueryBundle("q", embedding=query.tolist()))
    expected = dc.select("adaptive", query, cands, 3, model=model).indices
    assert [n.node.node_id for n in out] == [f"n{i}" for i in expected]


def test_langchain_retriever_runs_adaptive(model: str) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import DiverseRetriever

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts([f"text number {i}" for i in range(15)])
    retriever = DiverseRetriever(vectorstore=store, k=3, fetch_k=10, method="adaptive",
                                 method_params={"model": model})
    docs = retriever.invoke("a question")
    assert len(docs) == 3 and len({d.page_content for d in docs}) == 3
