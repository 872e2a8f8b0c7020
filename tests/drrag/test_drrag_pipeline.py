"""The DR-RAG pipeline on hand-built corpora with known answers, its faces and its harness method."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.pipelines import InMemorySource
from diverse_core.pipelines.drrag import DRRAG, concat_query

Q = "Who wrote Tales, and where was the author born?"
A = "Tales was written by Ann."          # most similar to the question
D1 = "Tales is a book with a red cover."
D2 = "Tales has three long chapters."
B = "Ann was born in Oslo."               # the bridge: far from the question alone
D3 = "The weather was mild."
VECTORS = {
    Q: [1.0, 0.0, 0.5],
    A: [1.0, 0.3, 0.3],
    D1: [1.0, 0.0, 0.1],
    D2: [1.0, 0.0, -0.1],
    B: [0.0, 1.0, 0.6],
    D3: [0.0, -1.0, 0.0],
    concat_query(Q, A): [0.5, 1.0, 0.6],  # the question + A now points at Ann
    concat_query(Q, D1): [1.0, 0.0, 0.2],
}
TEXTS = [A, D1, D2, B, D3]


def embed(texts: list[str]) -> np.ndarray:
    return np.asarray([VECTORS[t] for t in texts], dtype=np.float64)


class Counting:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return "Oslo"


@pytest.fixture
def source() -> InMemorySource:
    return InMemorySource(TEXTS, embed)


def accept_bridge(question: str, a: str, b: str) -> float:
    return 0.9 if {a, b} == {A, B} else 0.1


def test_drrag_qdc_finds_the_bridge_the_question_alone_ranks_below_k(source):
    top2 = [c for c in source.search(Q, k=2).texts]
    assert B not in top2
    res = DRRAG(k=2, k1=1, mode="qdc").run(Q, source, generate=False)
    assert [d.text for d in res.documents] == [A, B]
    first, second = res.documents
    assert (first.reason["stage"], second.reason["stage"]) == (1, 2)
    assert second.reason["via"] == first.id and res.stage2_queries == (concat_query(Q, A),)
    assert res.cost.searches == 2 and res.cost.llm_calls == 0


def test_drrag_cfs_adds_nothing_when_every_hit_is_rejected(source):
    res = DRRAG(k=2, k1=1, mode="cfs", classifier=lambda q, a, b: 0.0).run(Q, source, generate=False)
    assert [d.text for d in res.documents] == [A] and B in [t for t in TEXTS]
    assert res.pairs_scored > 0 and res.rejected
    accepted = DRRAG(k=2, k1=1, mode="cfs", classifier=accept_bridge).run(Q, source, generate=False)
    assert [d.text for d in accepted.documents] == [A, B]
    assert accepted.documents[1].reason["probability"] == pytest.approx(0.9)


def test_drrag_cfs_fill_tops_up_from_the_question_ranking(source):
    res = DRRAG(k=2, k1=1, mode="cfs", classifier=lambda q, a, b: 0.0, fill=True).run(Q, source, generate=False)
    assert [d.text for d in res.documents] == [A, D1] and res.documents[1].reason["filled"] is True


def test_drrag_cis_drops_a_rejected_document(source):
    kept = DRRAG(k=2, k1=1, mode="cis", classifier=accept_bridge).run(Q, source, generate=False)
    assert [d.text for d in kept.documents] == [A, B]
    dropped = DRRAG(k=2, k1=1, mode="cis", classifier=lambda q, a, b: 0.2).run(Q, source, generate=False)
    assert [d.text for d in dropped.documents] == [A]


def test_drrag_makes_exactly_one_llm_call_when_generating_and_none_otherwise(source):
    llm = Counting()
    res = DRRAG(llm, k=2, k1=1, mode="qdc").run(Q, source)
    assert res.answer == "Oslo" and len(llm.prompts) == 1 and res.cost.generator_calls == 1
    assert A in llm.prompts[0] and B in llm.prompts[0]
    DRRAG(llm, k=2, k1=1, mode="qdc").run(Q, source, generate=False)
    assert len(llm.prompts) == 1
    ares = asyncio.run(DRRAG(llm, k=2, k1=1, mode="qdc").arun(Q, source))
    assert [d.id for d in ares.documents] == [d.id for d in res.documents]
    with pytest.raises(InvalidParameterError, match="no LLM"):
        DRRAG(None, k=2).run(Q, source)


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"k1": 0}, "k1"), ({"k": 2, "k1": 3}, "k1"), ({"m": 0}, "m must"), ({"threshold": 1.5}, "threshold"),
     ({"mode": "forward"}, "mode"), ({"per_doc": "each"}, "per_doc"), ({"cis_rule": "x"}, "cis_rule"),
     ({"classifier": 3}, "classifier")],
)
def test_drrag_bad_settings_raise_typed_errors_naming_the_value(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        DRRAG(**kw)


def test_drrag_shipped_classifier_runs_end_to_end(source):
    res = DRRAG(k=2, k1=1).run(Q, source, generate=False)  # the shipped classifier, default threshold
    assert 1 <= len(res.documents) <= 2 and res.documents[0].text == A
    assert all(d.reason["mode"] == "cfs" for d in res.documents)


def test_drrag_langchain_face_and_chain():
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import DRRAGRetriever

    class Table(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

    store = InMemoryVectorStore(Table())
    store.add_texts(TEXTS)
    retriever = DRRAGRetriever(vectorstore=store, k=2, fetch_k=5, k1=1, mode="cfs", classifier=accept_bridge)
    docs = retriever.invoke(Q)
    assert [d.page_content for d in docs] == [A, B]
    assert docs[1].metadata["selection_params"]["stage"] == 2 and docs[1].metadata["selection_method"] == "drrag"
    chained = DRRAGRetriever(llm=FakeListChatModel(responses=["Oslo"]), vectorstore=store, k=2, fetch_k=5,
                             k1=1, mode="qdc").as_chain().invoke(Q)
    assert chained["answer"] == "Oslo" and chained["cost"]["llm_calls"] == 1 and chained["mode"] == "qdc"


def test_drrag_llamaindex_retriever_needs_no_llm():
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding

    from llamaindex_diverse import DRRAGRetriever

    class Table(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embed([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=Table())
    nodes = DRRAGRetriever(index, embed_model=Table(), k=2, fetch_k=5, k1=1, mode="qdc").retrieve(Q)
    assert [n.node.get_content() for n in nodes] == [A, B]


def _letters(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in embedder: letter counts (no model)."""
    return np.asarray([[1.0 + t.count(c) for c in "aeiost"] for t in texts], dtype=np.float64)


UNTITLED = ["Ruleta is a song by Inna.", "Inna was born in Mangalia.", "Mangalia is a port.", "Hot is a single."]


@pytest.mark.parametrize("mode", ["cfs", "cis"])
def test_drrag_says_when_the_shipped_classifier_has_no_titles_to_read(mode):
    """The shipped pair classifier compares titles with passages; without any it accepts few pairs."""
    from diverse_core.pipelines.drrag import UNTITLED_WARNING

    q = "Where was the singer of Ruleta born?"
    res = DRRAG(k=3, mode=mode).run(q, InMemorySource(UNTITLED, _letters), generate=False)
    # untitled passages are a normal input: a note, not a warning, so ok stays a health signal
    assert res.notes == (UNTITLED_WARNING.format(n=4),) and res.warnings == () and res.ok
    assert any(e.stage == "note" for e in res.trace)
    titled = [f"{t.split()[0]}: {t}" for t in UNTITLED]
    assert DRRAG(k=3, mode=mode).run(q, InMemorySource(titled, _letters), generate=False).notes == ()
    # QDC reads no classifier; a classifier of one's own may read anything
    assert DRRAG(k=3, mode="qdc").run(q, InMemorySource(UNTITLED, _letters), generate=False).notes == ()
    own = DRRAG(k=3, mode=mode, classifier=lambda qq, a, b: 0.9)
    assert own.run(q, InMemorySource(UNTITLED, _letters), generate=False).notes == ()


def test_drrag_ok_is_false_when_something_failed():
    """ok is a health signal: untitled passages leave it true, an empty answer makes it false."""
    q = "Where was the singer of Ruleta born?"
    res = DRRAG(lambda p: "  ", k=3).run(q, InMemorySource(UNTITLED, _letters), generate=True)
    assert not res.ok and res.warnings == ("generator: the answer is empty",)
