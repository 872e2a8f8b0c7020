"""DF-RAG with the LLM-free evaluator: the trained set scorer chooses lambda."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from dfrag_fakes import ScriptedLLM, score_reply
from diverse_core.adaptive import AdaptiveSelector
from diverse_core.dfrag import DFRAG
from diverse_core.errors import InvalidParameterError


def test_dfrag_adaptive_evaluator_needs_no_llm_to_retrieve(pool):
    texts, query, cands = pool
    res = DFRAG(None, k=4, evaluator="adaptive").run("q?", texts, query, cands, generate=False)
    choice = AdaptiveSelector.default().choose(query, cands, 4, question="q?", texts=texts)
    assert res.lambda_source == "adaptive" and res.lambda_star == pytest.approx(choice.lambda_mult)
    assert list(res.indices) == choice.indices.tolist() and res.cost.llm_calls == 0
    assert res.plan == () and len(res.lambda_scores) == len(choice.lambdas)
    expected = dict(zip(choice.lambdas.tolist(), choice.predicted.tolist(), strict=True))
    assert res.lambda_scores == pytest.approx(expected, abs=1e-5)  # float32 pool vs float64 here
    assert res.documents[0].reason == {"lambda_mult": res.lambda_star, "lambda_source": "adaptive",
                                       "variant": "text"}


def test_dfrag_adaptive_evaluator_reads_the_question_and_the_texts(pool, monkeypatch):
    """The selector gets the question and the candidates' texts; the trace records the text variant."""
    texts, query, cands = pool
    seen: list[tuple[object, object]] = []
    original = AdaptiveSelector.choose_prepared

    def spy(self, prep, *, question=None, texts=None, variant="auto", **kw):
        seen.append((question, None if texts is None else list(texts)))
        return original(self, prep, question=question, texts=texts, variant=variant, **kw)

    monkeypatch.setattr(AdaptiveSelector, "choose_prepared", spy)
    for run in (lambda p: p.run("Which chunk?", texts, query, cands, generate=False),
                lambda p: asyncio.run(p.arun("Which chunk?", texts, query, cands, generate=False))):
        seen.clear()
        res = run(DFRAG(None, k=4, evaluator="adaptive"))
        assert seen == [("Which chunk?", texts)]
        stages = [e for e in res.trace if e.stage == "adaptive"]
        assert len(stages) == 1 and stages[0].parsed["variant"] == "text"
        assert stages[0].parsed["chosen"] == res.lambda_star


def test_dfrag_adaptive_evaluator_with_an_llm_only_generates(pool):
    texts, query, cands = pool
    llm = ScriptedLLM(lambda ps: score_reply(5))
    res = DFRAG(llm, k=4, evaluator="adaptive").run("q?", texts, query, cands)
    assert res.answer == "the answer" and llm.calls == {"planner": 0, "evaluator": 0, "generator": 1}
    with pytest.raises(InvalidParameterError, match="no LLM"):
        DFRAG(None, evaluator="adaptive").run("q?", texts, query, cands)
    with pytest.raises(InvalidParameterError, match="evaluator"):
        DFRAG(llm, evaluator="oracle")
    assert np.isfinite(list(res.lambda_scores.values())).all()


def test_dfrag_adaptive_evaluator_in_both_faces():
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from langchain_diverse import DFRAGRetriever
    from llamaindex_diverse import DFRAGRetriever as LIDFRAGRetriever

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts([f"fact {i}" for i in range(12)])
    docs = DFRAGRetriever(vectorstore=store, k=3, fetch_k=12, evaluator="adaptive").invoke("fact")
    assert len(docs) == 3 and docs[0].metadata["selection_params"]["lambda_source"] == "adaptive"
    assert docs[0].metadata["selection_params"]["variant"] == "text"
    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=f"f{i}") for i in range(8)], embed_model=emb)
    nodes = LIDFRAGRetriever(index, embed_model=emb, k=3, evaluator="adaptive").retrieve("f1")
    assert len(nodes) == 3 and nodes[0].node.metadata["selection_params"]["variant"] == "text"
