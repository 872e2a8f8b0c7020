"""Source identity from metadata (issue 34): ``sources=``/``names=`` in the core, filled by both faces."""

from __future__ import annotations

import asyncio

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.learned import LearnedSelector, PairView, pair_view
from diverse_core.registry import get_method
from diverse_core.text import source_inputs

#: MockEmbedding gives every text the same vector, so the faces' near-duplicate guard would leave
#: the method one candidate; these tests check what the method is handed.
NO_GUARD = {"duplicate_threshold": None}


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    calls: list[dict[str, object]] = []
    original = LearnedSelector.choose_prepared

    def choose_prepared(self, prep, **kw):  # type: ignore[no-untyped-def]
        choice = original(self, prep, **kw)
        calls.append({**kw, "choice": choice})
        return choice

    monkeypatch.setattr(LearnedSelector, "choose_prepared", choose_prepared)
    return calls


# -- core ----------------------------------------------------------------------------------



def _same(pv: PairView) -> list[list[int]]:
    return [pv.row("same_source", j).astype(int).tolist() for j in range(pv.n)]

def test_sources_decide_same_source_without_title_prefixes() -> None:
    texts = ["Dune is a novel by Frank Herbert.", "It was published in 1965.", "Herbert lived in Tacoma."]
    plain = pair_view("Who wrote Dune?", texts)
    assert _same(plain) == np.eye(3, dtype=int).tolist()  # no prefix, no ids: unknown
    ids = pair_view("Who wrote Dune?", texts, sources=["dune.md", "dune.md", "herbert.md"])
    assert _same(ids) == [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    # a missing id (None / "") is a source of its own, never "the same" as another missing one
    part = pair_view("q?", texts, sources=[None, "", "x"])
    assert _same(part) == np.eye(3, dtype=int).tolist()


def test_sources_override_the_title_prefix() -> None:
    texts = ["Paris: the capital.", "Paris: a city of lights.", "Lyon: a city."]
    assert pair_view("q?", texts).row("same_source", 0)[1]
    # the ids say the two "Paris" windows come from different files: the ids win
    assert not pair_view("q?", texts, sources=["a", "b", "c"]).row("same_source", 0)[1]


def test_names_give_the_titles_a_pick_may_mention() -> None:
    texts = ["The film was directed by Ridley Scott.", "He was born in South Shields.", "A cat."]
    without = pair_view("Who directed Alien?", texts)
    assert all(without.row("title_in", j).max() == 0.0 for j in range(3))  # no prefix: no title to find
    named = pair_view("Who directed Alien?", texts, names=["Alien", "Ridley Scott", None])
    # text 0's body names text 1's title ("Ridley Scott"): 2/2 title words found
    assert named.row("title_in", 0)[1] == pytest.approx(1.0)
    assert named.row("title_in", 1)[0] == 0.0


def test_pair_view_rejects_bad_sources() -> None:
    with pytest.raises(DimensionMismatchError, match="sources"):
        pair_view("q", ["a", "b"], sources=["x"])
    with pytest.raises(InvalidParameterError, match="sources"):
        pair_view("q", ["a", "b"], sources="ab")
    with pytest.raises(InvalidParameterError, match="hashable"):
        pair_view("q", ["a", "b"], sources=[["x"], ["y"]])
    with pytest.raises(InvalidParameterError, match="names"):
        pair_view("q", ["a", "b"], names=[1, 2])  # type: ignore[list-item]


def test_select_passes_sources_and_they_change_the_picks() -> None:
    """Five windows of one page rank first; with their page id given, the model trained with page ids spreads."""
    rng = np.random.default_rng(0)
    q = rng.normal(size=16)
    q /= np.linalg.norm(q)
    page = q + 0.25 * rng.normal(size=(5, 16))
    other = q + 0.9 * rng.normal(size=(15, 16))
    cands = np.vstack([page, other])
    texts = [f"window {i} of the Alpha page about the Beta prize." for i in range(5)] + [
        f"other text {i} mentions Gamma." for i in range(15)]
    sources = ["alpha"] * 5 + [f"doc{i}" for i in range(15)]
    plain = dc.select("learned", q, cands, 4, question="Who won the Beta prize?", texts=texts,
                      model="chunks-notitle")
    grouped = dc.select("learned", q, cands, 4, question="Who won the Beta prize?", texts=texts, sources=sources,
                        model="chunks-notitle")
    assert int(np.sum(plain.indices < 5)) > int(np.sum(grouped.indices < 5))
    assert int(np.sum(grouped.indices < 5)) <= 1


def test_select_rejects_sources_in_face_params() -> None:
    spec = get_method("learned")
    assert spec.reads_sources and "sources" not in spec.setting_defaults
    with pytest.raises(InvalidParameterError, match="source_key"):
        spec.resolve_params({"sources": ["a"]}, face=True)


def test_source_inputs() -> None:
    assert source_inputs([None, None]) == {}
    assert source_inputs(["a", 3, None, ""], ["T", "", None, 5]) == {"sources": ["a", 3, None, None],
                                                                      "names": ["T", None, None, None]}
    assert source_inputs([["x"], {"p": 1}]) == {"sources": ["['x']", "{'p': 1}"]}


# -- LangChain -----------------------------------------------------------------------------


def _lc_docs() -> list:  # type: ignore[type-arg]
    from langchain_core.documents import Document

    return [Document(page_content=f"chunk {i} about the Alien film crew", metadata={"source": f"file{i % 3}.md",
                                                                                     "file": f"f{i % 2}"})
            for i in range(9)]


def test_langchain_retriever_passes_source_ids(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import DiverseRetriever

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    docs = _lc_docs()
    store.add_documents(docs)
    retriever = DiverseRetriever(vectorstore=store, k=3, fetch_k=9, method="learned")
    retriever.invoke("Who directed Alien?")
    cands = store.similarity_search("Who directed Alien?", k=9)
    expected = [d.metadata["source"] for d in cands]
    assert spy[-1]["sources"] == expected and spy[-1].get("names") is None
    asyncio.run(retriever.ainvoke("Who directed Alien?"))
    assert len(spy) == 2 and spy[-1]["sources"] == expected
    custom = DiverseRetriever(vectorstore=store, k=3, fetch_k=9, method="learned", source_key="file")
    custom.invoke("Who directed Alien?")
    assert spy[-1]["sources"] == [d.metadata["file"] for d in cands]
    off = DiverseRetriever(vectorstore=store, k=3, fetch_k=9, method="learned", source_key=None)
    off.invoke("Who directed Alien?")
    assert spy[-1].get("sources") is None


def test_langchain_compressor_passes_source_ids_and_titles(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_diverse import DiverseCompressor

    docs = [Document(page_content=f"text {i}", metadata={"source": f"s{i // 2}", "title": f"Page {i // 2}"})
            for i in range(6)]
    comp = DiverseCompressor(embeddings=DeterministicFakeEmbedding(size=16), k=2, method="learned")
    comp.compress_documents(docs, "q?")
    assert spy[-1]["sources"] == [f"s{i // 2}" for i in range(6)]
    assert spy[-1]["names"] == [f"Page {i // 2}" for i in range(6)]
    asyncio.run(comp.acompress_documents(docs, "q?"))
    assert spy[-1]["sources"] == [f"s{i // 2}" for i in range(6)]


def test_langchain_compressor_async_reads_its_own_source_and_title_keys(spy: list[dict[str, object]]) -> None:
    """``acompress_documents`` reads ``source_key``/``title_key`` as ``compress_documents`` does
    (it used to fall back to ``"source"``/``"title"``)."""
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_diverse import DiverseCompressor

    docs = [Document(page_content=f"text {i}", metadata={"source": f"s{i}", "file": f"f{i // 2}",
                                                         "title": f"Page {i}", "name": f"Name {i // 3}"})
            for i in range(6)]
    comp = DiverseCompressor(embeddings=DeterministicFakeEmbedding(size=16), k=2, method="learned",
                             source_key="file", title_key="name")
    comp.compress_documents(docs, "q?")
    sync = spy[-1]
    asyncio.run(comp.acompress_documents(docs, "q?"))
    assert sync["sources"] == [f"f{i // 2}" for i in range(6)] and sync["names"] == [f"Name {i // 3}" for i in range(6)]
    assert spy[-1]["sources"] == sync["sources"] and spy[-1]["names"] == sync["names"]


# -- LlamaIndex ----------------------------------------------------------------------------


def test_llamaindex_retriever_passes_ref_doc_ids(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    from llamaindex_diverse import DiverseRetriever

    emb = MockEmbedding(embed_dim=8)
    long = " ".join(f"Sentence {i} about the Alien film and its crew." for i in range(40))
    docs = [Document(text=long, doc_id="doc-a"), Document(text=long.replace("Alien", "Aliens"), doc_id="doc-b")]
    index = VectorStoreIndex.from_documents(docs, embed_model=emb,
                                            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)])
    retriever = DiverseRetriever.from_index(index, top_n=3, fetch_k=8, method="learned",
                                            method_params=NO_GUARD)
    base = index.as_retriever(similarity_top_k=8).retrieve("Alien?")
    expected = [n.node.ref_doc_id for n in base]
    assert set(expected) == {"doc-a", "doc-b"}
    retriever.retrieve("Alien?")
    assert spy[-1]["sources"] == expected
    asyncio.run(retriever.aretrieve("Alien?"))
    assert len(spy) == 2 and spy[-1]["sources"] == expected


def test_llamaindex_postprocessor_source_key_and_titles(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )

    from llamaindex_diverse import DiverseNodePostprocessor

    rng = np.random.default_rng(1)
    nodes = []
    for i in range(6):
        node = TextNode(id_=f"n{i}", text=f"scene {i}", metadata={"title": f"Film {i % 2}", "url": f"u{i % 3}"},
                        embedding=rng.normal(size=8).tolist())
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc{i % 2}")
        nodes.append(NodeWithScore(node=node, score=0.5))
    bundle = QueryBundle("Which film?", embedding=np.ones(8).tolist())
    DiverseNodePostprocessor(top_n=2, method="learned").postprocess_nodes(nodes, bundle)
    assert spy[-1]["sources"] == [f"doc{i % 2}" for i in range(6)]
    assert spy[-1]["names"] == [f"Film {i % 2}" for i in range(6)]
    pp = DiverseNodePostprocessor(top_n=2, method="learned", source_key="url", title_key=None)
    asyncio.run(pp.apostprocess_nodes(nodes, query_bundle=bundle))
    assert spy[-1]["sources"] == [f"u{i % 3}" for i in range(6)] and spy[-1].get("names") is None


def test_llamaindex_retriever_source_key(spy: list[dict[str, object]]) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import DiverseRetriever

    emb = MockEmbedding(embed_dim=8)
    docs = [Document(text=f"Alien fact {i}", metadata={"url": f"u{i % 2}"}) for i in range(6)]
    index = VectorStoreIndex.from_documents(docs, embed_model=emb)
    retriever = DiverseRetriever.from_index(index, top_n=2, fetch_k=6, method="learned", source_key="url",
                                            method_params=NO_GUARD)
    base = index.as_retriever(similarity_top_k=6).retrieve("Alien?")
    retriever.retrieve("Alien?")
    assert spy[-1]["sources"] == [n.node.metadata["url"] for n in base]
