"""``learned`` without ``model=`` runs the shipped model that fits what the call gives (issue 45 item 1):
titles (in the texts or as ``names``), source ids, both or neither; the model that ran is named in the
details, in the core and in both faces. ``adaptive`` takes ``sources=`` like ``learned``."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.learned import DEFAULT_BY_FORM, DEFAULT_MODELS
from diverse_core.learned.selector import input_form

QUESTION = "Which film did the director of Alien make next?"


def _inputs(form: str, n: int = 20) -> dict[str, object]:
    """A call's inputs in ``form``: titled texts, names and/or source ids, or bare texts only."""
    body = [f"passage {i} on the film crew and the prize of {1990 + i % 5}" for i in range(n)]
    out: dict[str, object] = {"question": QUESTION, "texts": body}
    if form == "titles":
        out["texts"] = [f"Film {i % 5}: {t}" for i, t in enumerate(body)]
    if form == "titles+ids":
        out["names"] = [f"Film {i % 5}" for i in range(n)]
    if form in ("titles+ids", "ids"):
        out["sources"] = [f"page{i % 5}.md" for i in range(n)]
    return out


def _pool(n: int = 20) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.normal(size=16), rng.normal(size=(n, 16))


@pytest.mark.parametrize("form", sorted(DEFAULT_BY_FORM))
def test_core_default_follows_the_inputs(form: str) -> None:
    q, c = _pool()
    kw = _inputs(form)
    assert input_form(kw["texts"], kw.get("sources"), kw.get("names")) == form  # type: ignore[arg-type]
    want = DEFAULT_BY_FORM[form]
    sel = dc.select("learned", q, c, 4, **kw)
    assert sel.details == {"variant": "text", "model": want}
    assert sel.indices.tolist() == dc.select("learned", q, c, 4, model=want, **kw).indices.tolist()
    sw = dc.sweep("learned", q, c, 4, values=[0.5], **kw)
    assert sw.indices[0].tolist() == sel.indices.tolist()
    for other in DEFAULT_MODELS:  # an explicit model always wins
        assert dc.select("learned", q, c, 4, model=other, **kw).details["model"] == other


def test_default_without_texts_and_with_a_file_model(tmp_path: object) -> None:
    q, c = _pool()
    assert dc.select("learned", q, c, 3).details == {"variant": "embedding", "model": DEFAULT_BY_FORM["none"]}
    path = str(DEFAULT_MODELS["paragraphs"])
    assert dc.select("learned", q, c, 3, model=path).details["model"] == path


def test_input_form_reads_blank_metadata_as_missing() -> None:
    texts = ["a", "b", "c"]
    assert input_form(texts, [None, "", None], [None, None, None]) == "none"
    assert input_form(texts, ["x", None, None], None) == "ids"
    assert input_form(["T: a", "U: b", "c"], None, None) == "titles"  # most texts carry a title prefix
    assert input_form(["T: a", "b", "c"], None, None) == "none"


def test_mistyped_model_lists_the_shipped_ones() -> None:
    q, c = _pool()
    with pytest.raises(InvalidParameterError, match="paragraphs-notitle"):
        dc.select("learned", q, c, 3, model="paragraph-notitle")


# -- faces ---------------------------------------------------------------------------------


def _lc_docs(form: str) -> list:  # type: ignore[type-arg]
    from langchain_core.documents import Document

    kw = _inputs(form, 12)
    texts = kw["texts"]
    assert isinstance(texts, list)
    meta = [{} for _ in texts]  # type: list[dict[str, str]]
    for key, field in (("sources", "source"), ("names", "title")):
        for m, v in zip(meta, kw.get(key) or [], strict=False):  # type: ignore[call-overload]
            m[field] = v
    return [Document(page_content=t, metadata=m) for t, m in zip(texts, meta, strict=True)]


@pytest.mark.parametrize("form", sorted(DEFAULT_BY_FORM))
def test_langchain_faces_name_the_default_model(form: str) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import DiverseCompressor, DiverseRetriever

    emb = DeterministicFakeEmbedding(size=16)
    docs = _lc_docs(form)
    out = DiverseCompressor(embeddings=emb, k=3, method="learned").compress_documents(docs, QUESTION)
    assert [d.metadata["selection_params"]["model"] for d in out] == [DEFAULT_BY_FORM[form]] * 3
    store = InMemoryVectorStore(emb)
    store.add_documents(docs)
    got = DiverseRetriever(vectorstore=store, k=3, fetch_k=12, method="learned").invoke(QUESTION)
    assert {d.metadata["selection_params"]["model"] for d in got} == {DEFAULT_BY_FORM[form]}
    pinned = DiverseRetriever(vectorstore=store, k=3, fetch_k=12, method="learned",
                              method_params={"model": "paragraphs"}).invoke(QUESTION)
    assert {d.metadata["selection_params"]["model"] for d in pinned} == {"paragraphs"}


@pytest.mark.parametrize("form", sorted(DEFAULT_BY_FORM))
def test_llamaindex_postprocessor_names_the_default_model(form: str) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import schema

    from llamaindex_diverse import DiverseNodePostprocessor

    kw = _inputs(form, 12)
    rng = np.random.default_rng(2)
    nodes = []
    for i, text in enumerate(kw["texts"]):  # type: ignore[arg-type]
        meta = {"title": kw["names"][i]} if "names" in kw else {}  # type: ignore[index]
        node = schema.TextNode(id_=f"n{i}", text=text, metadata=meta, embedding=rng.normal(size=8).tolist())
        if "sources" in kw:
            node.relationships[schema.NodeRelationship.SOURCE] = schema.RelatedNodeInfo(node_id=kw["sources"][i])  # type: ignore[index]
        nodes.append(schema.NodeWithScore(node=node, score=0.5))
    bundle = schema.QueryBundle(QUESTION, embedding=np.ones(8).tolist())
    out = DiverseNodePostprocessor(top_n=3, method="learned").postprocess_nodes(nodes, bundle)
    assert [n.node.metadata["selection_params"]["model"] for n in out] == [DEFAULT_BY_FORM[form]] * 3


# -- adaptive takes sources= -----------------------------------------------------------------


def test_adaptive_takes_sources_and_names_as_learned_does() -> None:
    q, c = _pool()
    kw = _inputs("titles+ids")
    plain = dc.select("adaptive", q, c, 4, question=QUESTION, texts=kw["texts"])
    given = dc.select("adaptive", q, c, 4, **kw)
    assert given.indices.tolist() == plain.indices.tolist()  # the shipped model reads no source feature
    assert dc.sweep("adaptive", q, c, 4, values=[0.2, 0.8], **kw).indices.shape == (2, 4)
    with pytest.raises(DimensionMismatchError, match="sources"):
        dc.select("adaptive", q, c, 4, question=QUESTION, texts=kw["texts"], sources=["a"])
    with pytest.raises(InvalidParameterError, match="hashable"):
        dc.select("adaptive", q, c, 4, question=QUESTION, texts=kw["texts"], sources=[[i] for i in range(20)])
    with pytest.raises(InvalidParameterError, match="names"):
        dc.select("adaptive", q, c, 4, question=QUESTION, texts=kw["texts"], names=list(range(20)))


def test_faces_hand_adaptive_the_source_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_core")
    from diverse_core.adaptive import AdaptiveSelector
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_diverse import DiverseCompressor

    calls: list[dict[str, object]] = []
    original = AdaptiveSelector.choose_prepared

    def spy(self, prep, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw)
        return original(self, prep, **kw)

    monkeypatch.setattr(AdaptiveSelector, "choose_prepared", spy)
    docs = _lc_docs("titles+ids")
    DiverseCompressor(embeddings=DeterministicFakeEmbedding(size=16), k=3, method="adaptive").compress_documents(
        docs, QUESTION)
    assert calls[-1]["sources"] == [d.metadata["source"] for d in docs]
    assert calls[-1]["names"] == [d.metadata["title"] for d in docs]
