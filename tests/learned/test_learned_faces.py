"""The "learned" method through both frameworks' faces: each hands it the query and the candidate texts."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.learned import DEFAULT_BY_FORM, LearnedSelector, default_model
from diverse_core.registry import get_method

#: MockEmbedding gives every text the same vector, so the faces' near-duplicate guard would leave
#: the method one candidate; these tests check what the method is handed.
NO_GUARD = {"duplicate_threshold": None}

# The shipped model has the text variant: every face must hand it the query text and the
# candidates' texts (recorded by a spy on LearnedSelector.choose_prepared), sync and async.


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    calls: list[dict[str, object]] = []
    original = LearnedSelector.choose_prepared

    def choose_prepared(self, prep, *, question=None, texts=None, variant="auto", **kw):  # type: ignore[no-untyped-def]
        choice = original(self, prep, question=question, texts=texts, variant=variant, **kw)
        calls.append({"question": question, "texts": None if texts is None else list(texts), "choice": choice, **kw})
        return choice

    monkeypatch.setattr(LearnedSelector, "choose_prepared", choose_prepared)
    return calls


def _check_params(params: dict[str, object], call: dict[str, object]) -> None:
    """selection_params shows the model that ran (the default for the call's input form) and the variant,
    never the texts."""
    assert params == {"model": default_model(call), "variant": "text"}


def test_core_selection_reports_variant() -> None:
    rng = np.random.default_rng(3)
    q, c = rng.normal(size=8), rng.normal(size=(20, 8))
    texts = [f"T{i % 4}: text {i}" for i in range(20)]
    sel = dc.select("learned", q, c, 4, question="q?", texts=texts)
    choice = LearnedSelector.default(DEFAULT_BY_FORM["titles"]).choose(q, c, 4, question="q?", texts=texts)
    assert sel.details == {"variant": "text", "model": DEFAULT_BY_FORM["titles"]}
    assert sel.indices.tolist() == choice.indices.tolist()
    assert np.allclose(sel.scores, choice.scores)
    assert dc.select("learned", q, c, 4).details["variant"] == "embedding"


def test_face_params_reject_and_hide_the_text_params() -> None:
    from diverse_core.errors import InvalidParameterError

    spec = get_method("learned")
    assert spec.reads_text
    assert spec.resolve_params({}, face=True) == {"model": None, "variant": "auto"}
    for bad in ({"question": "q"}, {"texts": ["a"]}):
        with pytest.raises(InvalidParameterError, match=str(sorted(bad))[1:-1]):
            spec.resolve_params(bad, face=True)


def _lc_store():  # type: ignore[no-untyped-def]
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts([f"Alien was directed by person {i}" for i in range(15)])
    return store


def _check_lc(docs: list, call: dict[str, object], question: str, n: int) -> None:  # type: ignore[type-arg]
    texts = call["texts"]
    choice = call["choice"]
    assert call["question"] == question
    assert isinstance(texts, list) and len(texts) == n
    assert [d.page_content for d in docs] == [texts[i] for i in choice.indices]  # type: ignore[attr-defined]
    for d in docs:
        _check_params(d.metadata["selection_params"], call)
        assert not any(isinstance(v, list) and v == texts for v in d.metadata.values())


def test_langchain_retriever_passes_query_and_texts(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("langchain_core")
    import asyncio

    from langchain_diverse import DiverseRetriever

    store = _lc_store()
    retriever = DiverseRetriever(vectorstore=store, k=3, fetch_k=10, method="learned")
    docs = retriever.invoke("Who directed Alien?")
    assert len(spy) == 1
    _check_lc(docs, spy[0], "Who directed Alien?", 10)
    cands = store.similarity_search("Who directed Alien?", k=10)
    assert spy[0]["texts"] == [d.page_content for d in cands]
    adocs = asyncio.run(retriever.ainvoke("Who directed Alien?"))
    assert len(spy) == 2
    _check_lc(adocs, spy[1], "Who directed Alien?", 10)
    assert [d.page_content for d in adocs] == [d.page_content for d in docs]


def test_langchain_compressor_and_selector_pass_query_and_texts(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("langchain_core")
    import asyncio

    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_diverse import DiverseCompressor, DiverseSelector

    emb = DeterministicFakeEmbedding(size=16)
    cands = [Document(page_content=f"passage {i} about Ridley Scott") for i in range(9)]
    texts = [d.page_content for d in cands]
    comp = DiverseCompressor(embeddings=emb, k=3, method="learned")
    out = comp.compress_documents(cands, "Who is Ridley Scott?")
    assert spy[-1]["texts"] == texts
    _check_lc(list(out), spy[-1], "Who is Ridley Scott?", 9)
    out = asyncio.run(comp.acompress_documents(cands, "Who is Ridley Scott?"))
    assert len(spy) == 2 and spy[-1]["texts"] == texts
    _check_lc(list(out), spy[-1], "Who is Ridley Scott?", 9)
    selector = DiverseSelector(embeddings=emb, k=2, method="learned")
    out = selector.invoke({"query": "Ridley?", "documents": cands})
    _check_lc(out, spy[-1], "Ridley?", 9)
    out = asyncio.run(selector.ainvoke({"query": "Ridley?", "documents": cands}))
    assert len(spy) == 4
    _check_lc(out, spy[-1], "Ridley?", 9)


def test_langchain_rejects_question_or_texts_in_method_params() -> None:
    pytest.importorskip("langchain_core")
    from diverse_core.errors import InvalidParameterError
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_diverse import DiverseCompressor, DiverseRetriever

    store = _lc_store()
    with pytest.raises(InvalidParameterError, match="'question'"):
        DiverseRetriever(vectorstore=store, k=3, fetch_k=10, method="learned",
                         method_params={"question": "q"})
    retriever = DiverseRetriever(vectorstore=store, k=3, fetch_k=10, method="learned")
    with pytest.raises(InvalidParameterError, match="'texts'.*per-call"):
        retriever.invoke("q", method_params={"texts": ["a"]})
    with pytest.raises(InvalidParameterError, match="'question', 'texts'"):
        DiverseCompressor(embeddings=DeterministicFakeEmbedding(size=16), method="learned",
                          method_params={"texts": [], "question": "q"})


def _li_nodes(n: int):  # type: ignore[no-untyped-def]
    from llama_index.core.schema import NodeWithScore, TextNode

    rng = np.random.default_rng(2)
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"Alien scene {i}", metadata={"title": f"T{i}"},
                                        embedding=rng.normal(size=16).tolist()), score=0.5)
            for i in range(n)]


def _check_li(out: list, call: dict[str, object], question: str, texts: list[str]) -> None:  # type: ignore[type-arg]
    choice = call["choice"]
    assert call["question"] == question and call["texts"] == texts
    assert [n.node.get_content(metadata_mode=_embed_mode()) for n in out] == [
        texts[i] for i in choice.indices  # type: ignore[attr-defined]
    ]
    for n in out:
        _check_params(n.node.metadata["selection_params"], call)


def _embed_mode():  # type: ignore[no-untyped-def]
    from llama_index.core.schema import MetadataMode

    return MetadataMode.EMBED


def test_llamaindex_postprocessor_passes_query_and_texts(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("llama_index.core")
    import asyncio

    from llama_index.core.schema import QueryBundle

    from llamaindex_diverse import DiverseNodePostprocessor

    nodes = _li_nodes(10)
    texts = [n.node.get_content(metadata_mode=_embed_mode()) for n in nodes]
    assert "T0" in texts[0]  # the embedded content: metadata included, as the vectors saw it
    bundle = QueryBundle("Who directed Alien?", embedding=np.ones(16).tolist())
    pp = DiverseNodePostprocessor(top_n=3, method="learned")
    out = pp.postprocess_nodes(nodes, bundle)
    _check_li(out, spy[-1], "Who directed Alien?", texts)
    aout = asyncio.run(pp.apostprocess_nodes(nodes, query_bundle=bundle))
    assert len(spy) == 2
    _check_li(aout, spy[-1], "Who directed Alien?", texts)
    assert [n.node.node_id for n in aout] == [n.node.node_id for n in out]


def test_llamaindex_retriever_passes_query_and_texts(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("llama_index.core")
    import asyncio

    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import DiverseRetriever

    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=f"Alien fact {i}") for i in range(8)],
                                            embed_model=emb)
    retriever = DiverseRetriever.from_index(index, top_n=3, fetch_k=6, method="learned",
                                            method_params=NO_GUARD)
    base = index.as_retriever(similarity_top_k=6)
    texts = [n.node.get_content(metadata_mode=_embed_mode()) for n in base.retrieve("Alien?")]
    out = retriever.retrieve("Alien?")
    _check_li(out, spy[-1], "Alien?", texts)
    aout = asyncio.run(retriever.aretrieve("Alien?"))
    assert len(spy) == 2
    _check_li(aout, spy[-1], "Alien?", texts)


def test_llamaindex_rejects_question_or_texts_in_method_params() -> None:
    pytest.importorskip("llama_index.core")
    from diverse_core.errors import InvalidParameterError
    from llama_index.core.schema import QueryBundle

    from llamaindex_diverse import DiverseNodePostprocessor

    with pytest.raises(InvalidParameterError, match="'question'"):
        DiverseNodePostprocessor(top_n=2, method="learned", method_params={"question": "q"})
    pp = DiverseNodePostprocessor(top_n=2, method="learned")
    pp.method_params = {"texts": ["a"]}  # reassigned after construction: checked per call
    with pytest.raises(InvalidParameterError, match="'texts'"):
        pp.postprocess_nodes(_li_nodes(4), QueryBundle("q", embedding=np.ones(16).tolist()))
