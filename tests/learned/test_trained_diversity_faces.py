"""``diversity=`` for the trained selectors (adaptive, learned) through both faces and the harness (issue 36 item 4).

Each face hands the method the query text and the candidates' texts; with ``diversity`` the picks
must equal ``dc.select`` given the same texts and the same ``diversity``, and the selection
metadata must show it.
"""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.eval import parse_method
from diverse_core.eval.plugins import MethodInput
from diverse_core.eval.runner import _picks_for_grid

TRAINED = ["adaptive", "learned"]
QUESTION = "Who directed Alien, and where was he born?"


def _texts(n: int) -> list[str]:
    names = ["Alien", "Ridley Scott", "South Shields", "Blade Runner", "Sigourney Weaver"]
    return [f"{names[i % 5]}: passage {i} about {names[(i * 3) % 5]} and film {i % 4}" for i in range(n)]


@pytest.mark.parametrize("method", TRAINED)
def test_harness_grid_rows_equal_select_with_texts(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from diverse_core.adaptive import AdaptiveSelector
    from diverse_core.learned import LearnedSelector

    cls = AdaptiveSelector if method == "adaptive" else LearnedSelector
    seen: list[object] = []
    original = cls.sweep_prepared

    def spy(self, prep, diversities, **kw):  # type: ignore[no-untyped-def]
        seen.append(kw.get("texts"))
        return original(self, prep, diversities, **kw)

    monkeypatch.setattr(cls, "sweep_prepared", spy)
    rng = np.random.default_rng(7)
    q, c = rng.normal(size=8), rng.normal(size=(24, 8))
    texts = _texts(24)
    grid = parse_method(f"{method}@diversity=0:1:0.5")
    assert grid.over == "diversity" and grid.values == (0.0, 0.5, 1.0)
    assert [grid.label(p) for p in grid.settings()] == ["diversity=0", "diversity=0.5", "diversity=1"]
    assert parse_method(method).label({}) == "model=None, variant=auto"  # the native rows read as before
    inp = MethodInput(question=QUESTION, query_embedding=q, texts=texts, embeddings=c, relevance=c @ q, k=5)
    rows = _picks_for_grid(grid, inp)
    assert seen == [texts]  # one sweep, given the candidates' texts
    for params, local, _, _ in rows:
        want = dc.select(method, q, c, 5, question=QUESTION, texts=texts, diversity=params["diversity"])
        assert list(local) == want.indices.tolist(), params


def test_command_line_takes_a_trained_selector_grid(tmp_path: object) -> None:
    from diverse_core.cli import build_parser
    from diverse_core.eval.cli import config_from_args

    args = build_parser().parse_args(["bench", "--datasets", "hotpotqa", "--methods", "learned@diversity=0:1:0.5",
                                      "adaptive@diversity=0.25", "--out", str(tmp_path), "--data-dir", str(tmp_path)])
    cfg = config_from_args(args)
    assert cfg.methods[0].over == "diversity" and cfg.methods[0].values == (0.0, 0.5, 1.0)
    assert cfg.methods[1].params == {"diversity": 0.25}
    cfg.validate(require_tasks=False)


@pytest.mark.parametrize("method", TRAINED)
@pytest.mark.parametrize("diversity", [0.0, 0.3, 1.0])
def test_langchain_retriever_compressor_and_selector(method: str, diversity: float) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import DiverseCompressor, DiverseRetriever, DiverseSelector

    emb = DeterministicFakeEmbedding(size=16)
    texts = _texts(12)
    store = InMemoryVectorStore(emb)
    store.add_texts(texts)
    cands = store.similarity_search(QUESTION, k=12)
    cand_texts = [d.page_content for d in cands]
    q = np.asarray(emb.embed_query(QUESTION))
    c = np.asarray(emb.embed_documents(cand_texts))
    want = dc.select(method, q, c, 4, question=QUESTION, texts=cand_texts, diversity=diversity)
    expected = [cand_texts[i] for i in want.indices]
    for retriever in (DiverseRetriever(vectorstore=store, method=method, k=4, fetch_k=12, diversity=diversity),
                      DiverseRetriever(vectorstore=store, method=method,
                                       search_kwargs={"k": 4, "fetch_k": 12, "diversity": diversity})):
        docs = retriever.invoke(QUESTION)
        assert [d.page_content for d in docs] == expected
        assert docs[0].metadata["selection_params"]["diversity"] == diversity
    docs_in = [Document(page_content=t) for t in cand_texts]
    comp = DiverseCompressor(embeddings=emb, k=4, method=method, diversity=diversity)
    assert [d.page_content for d in comp.compress_documents(docs_in, QUESTION)] == expected
    sel = DiverseSelector(embeddings=emb, k=4, method=method, diversity=diversity)
    assert [d.page_content for d in sel.invoke({"query": QUESTION, "documents": docs_in})] == expected


@pytest.mark.parametrize("method", TRAINED)
@pytest.mark.parametrize("diversity", [0.0, 0.3, 1.0])
def test_llamaindex_postprocessor_and_retriever(method: str, diversity: float) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from llamaindex_diverse import DiverseNodePostprocessor, DiverseRetriever

    rng = np.random.default_rng(3)
    q, c = rng.normal(size=8), rng.normal(size=(12, 8))
    texts = _texts(12)
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=t, embedding=v.tolist()), score=0.0)
             for i, (t, v) in enumerate(zip(texts, c, strict=True))]
    want = dc.select(method, q, c, 4, question=QUESTION, texts=texts, diversity=diversity)
    pp = DiverseNodePostprocessor(top_n=4, method=method, diversity=diversity)
    out = pp.postprocess_nodes(nodes, QueryBundle(QUESTION, embedding=q.tolist()))
    assert [n.node.node_id for n in out] == [f"n{i}" for i in want.indices]
    assert out[0].node.metadata["selection_params"]["diversity"] == diversity
    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in texts[:6]], embed_model=emb)
    r = DiverseRetriever.from_index(index, top_n=2, fetch_k=6, method=method, diversity=diversity, embed_model=emb)
    assert r.postprocessor.method_params == {"diversity": diversity}
    assert len(r.retrieve(QUESTION)) == 2
