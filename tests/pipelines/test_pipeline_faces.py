"""A test-only pipeline runs through both frameworks' generic faces and the harness, with no
face code of its own beyond declaring it; every source adapter, sync and async."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from typing import Any

import numpy as np
import pytest
from two_search_pipeline import SECOND_QUERY_PREFIX, TwoSearch

TEXTS = [f"fact {i}: the {w} river" for i, w in enumerate(
    ["red", "blue", "green", "long", "short", "wide", "cold", "warm", "deep", "old"])]


def _vec(text: str, dim: int = 16) -> list[float]:
    seed = int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)
    v = np.random.default_rng(seed).normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


# ---------------------------------------------------------------------------- LangChain
lc = pytest.importorskip("langchain_core")
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.language_models import FakeListChatModel  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from langchain_diverse import PipelineRetriever, create_pipeline_chain  # noqa: E402


class HashEmbeddings(Embeddings):
    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return [_vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return _vec(text)


class TwoSearchRetriever(PipelineRetriever):
    """The whole LangChain face of the test pipeline: a declaration."""

    pipeline_class = TwoSearch
    tag: str = "x"


class Starts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.llm_parents: list[Any] = []
        self.retriever_runs: list[Any] = []
        self._lock = threading.Lock()

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        with self._lock:
            self.llm_parents.append(parent_run_id)

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        self.retriever_runs.append(run_id)


@pytest.fixture
def lc_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_texts(TEXTS)
    return store


def _faiss_store() -> Any:
    pytest.importorskip("faiss", reason="faiss-cpu is not installed")
    from langchain_community.vectorstores import FAISS

    return FAISS.from_texts(TEXTS, HashEmbeddings())


@pytest.mark.filterwarnings("ignore:.*sunset:DeprecationWarning")
@pytest.mark.parametrize("origin", ["inmemory", "retriever", "faiss"])
def test_langchain_generic_face_runs_the_test_pipeline(origin, lc_store):
    if origin == "inmemory":
        kw: dict[str, Any] = {"vectorstore": lc_store}
    elif origin == "retriever":
        kw = {"base_retriever": lc_store.as_retriever(search_kwargs={"k": 6}), "embeddings": lc_store.embeddings}
    else:
        kw = {"vectorstore": _faiss_store()}
    retriever = TwoSearchRetriever(k=2, fetch_k=6, tag="lc", **kw)
    docs = retriever.invoke(TEXTS[3])
    adocs = asyncio.run(retriever.ainvoke(TEXTS[3]))
    assert [d.page_content for d in docs] == [d.page_content for d in adocs]
    assert docs[0].page_content == TEXTS[3] and len(docs) == 2
    meta = docs[1].metadata
    assert meta["selection_method"] == "two-search" and meta["selection_rank"] == 1
    assert meta["pipeline_reason"] == {"stage": 2, "tag": "lc"} and meta["pipeline_warnings"] == []
    assert meta["selection_params"]["k"] == 2 and isinstance(meta["relevance_score"], float)
    assert len(retriever.invoke(TEXTS[3], k=1)) == 1  # per-call k


@pytest.mark.filterwarnings("ignore:.*sunset:DeprecationWarning")
@pytest.mark.parametrize("origin", ["inmemory", "faiss"])
def test_langchain_source_reads_stored_vectors_instead_of_re_embedding(origin, lc_store):
    store = lc_store if origin == "inmemory" else _faiss_store()
    emb = store.embeddings
    emb.documents = 0
    TwoSearchRetriever(vectorstore=store, k=2, fetch_k=6).invoke(TEXTS[2])
    assert emb.documents == 0 and len(emb.queries) == 2  # one query embedding per search, nothing else


def test_langchain_second_search_uses_its_own_query_text(lc_store):
    emb = lc_store.embeddings
    TwoSearchRetriever(vectorstore=lc_store, k=2, fetch_k=5).invoke(TEXTS[0])
    assert emb.queries[-2:] == [TEXTS[0], SECOND_QUERY_PREFIX + TEXTS[0]]


def test_langchain_chain_llm_call_is_a_child_run(lc_store):
    model = FakeListChatModel(responses=["the answer"])
    retriever = TwoSearchRetriever(llm=model, vectorstore=lc_store, k=2, fetch_k=5)
    handler = Starts()
    docs = retriever.invoke(TEXTS[1], config={"callbacks": [handler]})
    assert len(docs) == 2 and handler.llm_parents == []  # retrieval only: no LLM call
    out = create_pipeline_chain(retriever).invoke({"question": TEXTS[1]}, config={"callbacks": [handler]})
    assert out["answer"] == "the answer" and len(out["context"]) == 2
    assert out["cost"]["writer_calls"] == 1 and out["cost"]["searches"] == 2
    assert len(handler.llm_parents) == 1 and handler.llm_parents[0] is not None
    a = asyncio.run(retriever.as_chain().ainvoke(TEXTS[1]))
    assert a["answer"] == "the answer" and [t.stage for t in a["trace"]] == ["search", "search", "write"]


# ---------------------------------------------------------------------------- LlamaIndex
pytest.importorskip("llama_index.core")
from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import BaseEmbedding  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402

from llamaindex_diverse import PipelineQueryEngine  # noqa: E402
from llamaindex_diverse import PipelineRetriever as LIPipelineRetriever  # noqa: E402


class LIHash(BaseEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        return _vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return _vec(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return _vec(text)


class LITwoSearchRetriever(LIPipelineRetriever):
    """The whole LlamaIndex face of the test pipeline: declarations."""

    pipeline_class = TwoSearch
    options = ("tag",)


class LITwoSearchEngine(PipelineQueryEngine):
    retriever_class = LITwoSearchRetriever


@pytest.fixture
def li_index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=LIHash())


@pytest.mark.parametrize("origin", ["index", "retriever"])
def test_llamaindex_generic_face_runs_the_test_pipeline(origin, li_index):
    base = li_index if origin == "index" else li_index.as_retriever(similarity_top_k=6)
    retriever = LITwoSearchRetriever(base, llm=MockLLM(max_tokens=3), embed_model=LIHash(), k=2,
                                     fetch_k=6, tag="li")
    nodes = retriever.retrieve(TEXTS[3])
    anodes = asyncio.run(retriever.aretrieve(TEXTS[3]))
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in anodes]
    assert nodes[0].node.get_content() == TEXTS[3] and len(nodes) == 2
    meta = nodes[1].node.metadata
    assert meta["selection_method"] == "two-search" and meta["selection_params"]["stage"] == 2
    engine = LITwoSearchEngine.from_args(base, llm=MockLLM(max_tokens=3), embed_model=LIHash(), k=2, tag="li")
    resp = engine.query(TEXTS[3])
    aresp = asyncio.run(engine.aquery(TEXTS[3]))
    assert resp.response == aresp.response == "text text text"
    assert resp.metadata["two-search_cost"]["writer_calls"] == 1
    assert resp.metadata["two-search_warnings"] == [] and len(resp.source_nodes) == 2


def test_llamaindex_bad_options_are_rejected(li_index):
    from diverse_core.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="unknown option"):
        LITwoSearchRetriever(li_index, llm=MockLLM(), colour="red")
    with pytest.raises(InvalidParameterError, match="LITwoSearchRetriever"):
        LITwoSearchEngine(li_index.as_retriever())


# ---------------------------------------------------------------------------- harness
def test_harness_runs_the_test_pipeline_as_a_method(tmp_path):
    from diverse_core.eval import BenchConfig, declare_pipeline_method, parse_method, run_benchmark
    from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord

    declare_pipeline_method(
        "two-search",
        lambda params, k: TwoSearch(params.get("llm"), k=k, tag=str(params.get("tag", "x"))),
        options={"tag"},
        needs_llm=False,
    )
    b = CorpusBuilder()
    ids = [b.add(f"T{i}", t) for i, t in enumerate(TEXTS)]
    recs = tuple(QARecord(f"q{i}", TEXTS[i], ("river",), (ids[i],), (), (("answer",), ("lake",)))
                 for i in range(4))
    bench = Benchmark("toy", recs, b.docs, ("paragraphs",), "recall")

    def embed(texts: list[str]) -> np.ndarray:  # one-hot of the fact's number, plus a constant
        out = np.full((len(texts), 16), 0.1, dtype=np.float32)
        for row, t in enumerate(texts):
            out[row, int(re.search(r"fact (\d+)", t).group(1))] += 1.0  # type: ignore[union-attr]
        return out

    def run(spec: str) -> Any:
        cfg = BenchConfig(
            tasks=[("toy", "paragraphs")], benchmarks={"toy": bench}, k=2, fetch_k=5, embedder=embed,
            model_name="hash", cache_dir=tmp_path / "c", out_dir=tmp_path / "o", results_md=tmp_path / "R.md",
            progress=False, plots=False, methods=[parse_method(spec)],
        )
        (setting,) = run_benchmark(cfg).tasks[0].settings
        return setting

    retrieval = run("two-search@tag=h")
    assert retrieval.mean("recall") == 1.0  # each question's own paragraph is its first hit
    info = retrieval.info[0]
    assert info["cost"]["searches"] == 2 and info["reasons"][1] == {"stage": 2, "tag": "h"}
    assert "answer" not in info
    generated = run("two-search@tag=g@generate=true@llm=simulated:0")
    assert generated.info[0]["answer"] == "answer"
    # str-EM: one of the two answer groups ("answer", "lake") occurs in the generated answer
    assert generated.mean("str_em") == 0.5 and np.isnan(retrieval.mean("str_em"))
    # a real pipeline declared the same way: DR-RAG searches the pooled corpus again per stage-1 unit
    drrag = run("drrag@mode=qdc@k1=1")
    assert drrag.info[0]["cost"]["searches"] == 2 and drrag.info[0]["n_returned"] == 2
    assert [r["stage"] for r in drrag.info[0]["reasons"]] == [1, 2] and drrag.mean("recall") == 1.0
