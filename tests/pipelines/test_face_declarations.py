"""A pipeline's faces are declarations (issue 36): what a run reports besides its documents is
named from the result (``PipelineResult.fields``), the export tables are built from the core's one
list of pipelines, the old method and class names warn, and DR-RAG has the chain factory its
siblings have."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from diverse_core.pipelines import InMemorySource, PipelineResult, available_pipelines, get_pipeline
from diverse_core.pipelines.vendirag import IterationRecord, VendiRAGResult
from two_search_pipeline import TwoSearch

TEXTS = ["Tales was written by Ann.", "Ann was born in Oslo.", "The weather was mild.", "Oslo is a port."]


def _vec(text: str) -> list[float]:
    return [1.0 + text.count(c) for c in "aeiost"]


# ---------------------------------------------------------------------------- core
def test_fields_read_the_summary_then_the_attributes_as_lists() -> None:
    record = IterationRecord(index=1, s=0.8, query="q", chunk_ids=("a", "b"), texts=("A", "B"),
                             positions=None, vendi_score=1.5, mean_similarity=0.2, mean_relevance=0.5,
                             quality=0.9)
    res = VendiRAGResult(question="q", iterations=(record,), final_iteration=1, quality=0.9,
                         warnings=("w",), stop_reason="threshold")
    got = res.fields(["iterations", "s_trajectory", "quality_trajectory", "stop_reason", "warnings"])
    assert got == {"iterations": [asdict(record)], "s_trajectory": [0.8], "quality_trajectory": [0.9],
                   "stop_reason": "threshold", "warnings": ["w"]}
    assert got["iterations"][0]["chunk_ids"] == ("a", "b")  # as the faces reported it before
    assert PipelineResult(pipeline="toy", question="q").summary() == {}
    assert PipelineResult(pipeline="toy", question="q").fields(()) == {}
    with pytest.raises(AttributeError):
        PipelineResult(pipeline="toy", question="q").fields(["no_such_field"])


def test_the_one_list_names_every_registered_builtin() -> None:
    from diverse_core.pipeline_names import (
        BUILTIN_PIPELINES,
        builtin_pipeline_classes,
        pipeline_faces,
    )

    assert set(BUILTIN_PIPELINES) <= set(available_pipelines())
    for name, cls in builtin_pipeline_classes().items():
        assert get_pipeline(name).__name__ == cls
    assert pipeline_faces("{cls}Retriever")["VendiRAGRetriever"] == ".vendirag"


@pytest.mark.parametrize("face, patterns", [
    ("langchain_diverse", ("{cls}Retriever", "create_{name}_chain")),
    ("llamaindex_diverse", ("{cls}Retriever", "{cls}QueryEngine")),
])
def test_every_builtin_pipeline_face_is_exported(face: str, patterns: tuple[str, ...]) -> None:
    from diverse_core.pipeline_names import pipeline_faces

    mod = pytest.importorskip(face)
    for name in pipeline_faces(*patterns):
        assert name in mod.__all__ and name in dir(mod)
        assert getattr(mod, name) is not None


# ---------------------------------------------------------------------------- LangChain
def _store():  # type: ignore[no-untyped-def]
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class Letters(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vec(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vec(text)

    store = InMemoryVectorStore(Letters())
    store.add_texts(TEXTS)
    return store


def test_langchain_declared_fields_reach_documents_and_chain() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models import FakeListChatModel

    from langchain_diverse import PipelineRetriever

    class Declared(PipelineRetriever):
        pipeline_class = TwoSearch
        document_fields = {"two_warnings": "warnings", "two_question": "question"}
        chain_keys = ("pipeline", "question")

    retriever = Declared(llm=FakeListChatModel(responses=["Oslo"]), vectorstore=_store(), k=2, fetch_k=4)
    docs = retriever.invoke(TEXTS[0])
    assert docs[0].metadata["two_warnings"] == [] and docs[0].metadata["two_question"] == TEXTS[0]
    out = retriever.as_chain().invoke(TEXTS[0])
    assert out["pipeline"] == "two-search" and out["question"] == TEXTS[0] and out["answer"] == "Oslo"


def test_create_drrag_chain_answers_with_drrags_fields() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models import FakeListChatModel

    from langchain_diverse import DRRAGRetriever, create_drrag_chain

    retriever = DRRAGRetriever(llm=FakeListChatModel(responses=["Oslo"]), vectorstore=_store(), k=2,
                               fetch_k=4, k1=1, mode="qdc")
    out = create_drrag_chain(retriever).invoke({"question": "Who is Ann?"})
    assert out["answer"] == "Oslo" and out["mode"] == "qdc" and len(out["stage2_queries"]) == 1
    assert set(out) == set(retriever.as_chain().invoke("Who is Ann?"))


# ---------------------------------------------------------------------------- LlamaIndex
def test_llamaindex_declared_fields_reach_the_response_metadata() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import PipelineQueryEngine, PipelineRetriever

    class Declared(PipelineRetriever):
        pipeline_class = TwoSearch
        llm_default_from_settings = False
        response_fields = ("question", "warnings")
        response_names = {"question": "asked"}

    class Engine(PipelineQueryEngine):
        retriever_class = Declared

    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=emb)
    engine = Engine.from_args(index, llm=lambda prompt: "Oslo", embed_model=emb, k=2, fetch_k=4)
    resp = engine.query("Who is Ann?")
    assert str(resp) == "Oslo"
    assert resp.metadata["two-search_asked"] == "Who is Ann?" and resp.metadata["two-search_warnings"] == []
    assert list(resp.metadata)[:2] == ["two-search_asked", "two-search_warnings"]
    assert {"two-search_cost", "two-search_trace", "two-search_result"} <= set(resp.metadata)


def test_llamaindex_module_response_metadata_is_the_declared_one() -> None:
    pytest.importorskip("llama_index.core")
    from llamaindex_diverse import vendirag

    res = VendiRAGResult(question="q", iterations=(), final_iteration=1, stop_reason="max_iterations")
    meta = vendirag.response_metadata(res)
    assert list(meta)[:6] == ["vendirag_iterations", "vendirag_final_iteration", "vendirag_s_trajectory",
                              "vendirag_quality_trajectory", "vendirag_quality", "vendirag_stop_reason"]
    assert meta["vendirag_result"] is res


def test_drrag_query_engine_reports_mode_queries_and_rejected() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import DRRAGQueryEngine

    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=emb)
    engine = DRRAGQueryEngine.from_args(index, llm=lambda prompt: "Oslo", embed_model=emb, k=2, fetch_k=4,
                                        k1=1, mode="qdc")
    resp = engine.query("Who is Ann?")
    assert resp.metadata["drrag_mode"] == "qdc" and len(resp.metadata["drrag_stage2_queries"]) == 1
    assert resp.metadata["drrag_rejected"] == []


def test_inmemory_source_still_serves_the_declared_test_pipeline() -> None:
    res = TwoSearch(lambda prompt: "x").run(TEXTS[0], InMemorySource(TEXTS, lambda ts: [_vec(t) for t in ts]))
    assert res.fields(("pipeline", "documents"))["pipeline"] == "two-search"


def test_metadata_key_constants_are_named_like_their_keys() -> None:
    dfrag = pytest.importorskip("langchain_diverse.dfrag")
    assert dfrag.DFRAG_LAMBDA_SCORES == "dfrag_lambda_scores"
    for module in ("dfrag", "diva", "vendirag"):
        mod = pytest.importorskip(f"langchain_diverse.{module}")
        for name in mod.__all__:
            value = getattr(mod, name)
            if name.isupper() and isinstance(value, str):
                assert value == name.lower(), (module, name)


def test_every_llamaindex_pipeline_module_has_response_metadata() -> None:
    pytest.importorskip("llama_index.core")
    import importlib

    for module in ("dfrag", "diva", "drrag", "vendirag"):
        mod = importlib.import_module(f"llamaindex_diverse.{module}")
        assert "response_metadata" in mod.__all__ and callable(mod.response_metadata)


@pytest.mark.parametrize("face, names", [
    ("langchain_diverse", ("TwoSearchRetriever", "create_two-search_chain")),
    ("llamaindex_diverse", ("TwoSearchRetriever", "TwoSearchQueryEngine")),
])
def test_a_pipeline_added_to_the_list_gets_its_faces_without_face_code(
    face: str, names: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One line in the core's list (and the pipeline's FACE declaration) is all a new pipeline needs.
    import importlib

    from diverse_core import pipeline_names

    pytest.importorskip(face)
    monkeypatch.setitem(pipeline_names.BUILTIN_PIPELINES, "two-search", "two_search_pipeline:TwoSearch")
    module = importlib.import_module(f"{face}.{'pipeline_retriever' if face == 'langchain_diverse' else 'pipeline_engine'}")
    made = [getattr(module, name) for name in names]
    assert made[0].pipeline_class is TwoSearch and made[0] is getattr(module, names[0])
    assert made[0].__name__ == "TwoSearchRetriever"
