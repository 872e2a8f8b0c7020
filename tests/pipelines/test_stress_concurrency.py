"""Issue 24 stress test: many concurrent runs of every LLM pipeline share one source and one cache.

For each of DF-RAG, DIVA, Vendi-RAG and DR-RAG (scripted fake LLM: plumbing, not quality), N
``arun`` calls run at once on one :class:`InMemorySource` whose new texts go through one fresh
:class:`DiskEmbeddingCache`; then the same through the LangChain and LlamaIndex faces (one
retriever, N concurrent ``ainvoke``/``aretrieve``) and through the harness. Zero errors, the
same picks as a serial run, every vector equal to the embedder's, each new text embedded once.
The two-process case is in ``tests/core/test_cache_concurrency.py``.

Small by default (N=4: seconds on an idle machine); ``DIVERSE_RAG_STRESS_N=50`` runs the issue's size.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.eval.disk_cache import DiskEmbeddingCache
from diverse_core.eval.pipeline_plugin import SimulatedEndpoint
from diverse_core.pipelines import InMemorySource
from diverse_core.pipelines.dfrag import DFRAG
from diverse_core.pipelines.diva import DIVA
from diverse_core.pipelines.drrag import DRRAG
from diverse_core.pipelines.vendirag import VendiRAG

N = int(os.environ.get("DIVERSE_RAG_STRESS_N", "4"))
DIM = 24
WORDS = ["red", "blue", "green", "long", "short", "wide", "cold", "warm", "deep", "old", "new", "dry"]
TEXTS = [f"fact {i}: the {w} river flows past town {i % 5}." for i, w in enumerate(WORDS * 2)]
QUESTIONS = [f"Which river is {WORDS[i % len(WORDS)]} near town {i % 5}?" for i in range(N)]


def vec(text: str) -> np.ndarray:
    seed = int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:12], 16)
    v = np.random.default_rng(seed).normal(size=DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


class CountingEmbedder:
    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.seen.update(texts)
        return np.stack([vec(t) for t in texts])


def PIPELINES() -> dict[str, Any]:
    llm = SimulatedEndpoint(0.001)
    return {
        "dfrag": lambda: DFRAG(llm, k=3, lambdas=[0.2, 0.8]),
        "diva": lambda: DIVA(llm, k=3),
        "vendirag": lambda: VendiRAG(llm, k=3, max_iterations=2),
        "drrag": lambda: DRRAG(None, k=4, k1=2, mode="qdc", fill=True),
    }


GENERATE = {"dfrag": True, "diva": True, "vendirag": True, "drrag": False}


def _picks(result: Any) -> list[str]:
    return [d.text for d in result.documents]


def _source(tmp: Path) -> tuple[InMemorySource, DiskEmbeddingCache, CountingEmbedder]:
    emb = CountingEmbedder()
    disk = DiskEmbeddingCache(emb, "fake", tmp, progress=False, batch_size=4, merge_above=3)
    return InMemorySource(TEXTS, disk.embed, default_k=8), disk, emb


def _check_cache(disk: DiskEmbeddingCache, emb: CountingEmbedder) -> None:
    assert max(emb.seen.values()) == 1, [t for t, n in emb.seen.items() if n > 1][:3]
    texts = sorted(emb.seen)
    np.testing.assert_array_equal(disk.embed(texts), np.stack([vec(t) for t in texts]))


@pytest.mark.parametrize("name", ["dfrag", "diva", "vendirag", "drrag"])
def test_core_concurrent_aruns_match_serial(name: str, tmp_path: Path) -> None:
    make = PIPELINES()[name]
    src, _, _ = _source(tmp_path / "serial")
    pipe = make()

    async def serial() -> list[list[str]]:
        return [_picks(await pipe.arun(q, src, generate=GENERATE[name])) for q in QUESTIONS]

    want = asyncio.run(serial())
    shared, disk, emb = _source(tmp_path / "shared")

    async def concurrent() -> list[Any]:
        return await asyncio.gather(*(pipe.arun(q, shared, generate=GENERATE[name]) for q in QUESTIONS), return_exceptions=True)

    got = asyncio.run(concurrent())
    errors = [g for g in got if isinstance(g, BaseException)]
    assert not errors, errors[:2]
    assert [_picks(g) for g in got] == want
    _check_cache(disk, emb)


# ---------------------------------------------------------------------------- faces
FACES = ["DFRAGRetriever", "DIVARetriever", "VendiRAGRetriever", "DRRAGRetriever"]
FACE_KW: dict[str, dict[str, Any]] = {
    "DFRAGRetriever": {"lambdas": [0.2, 0.8]},
    "DIVARetriever": {},
    "VendiRAGRetriever": {"max_iterations": 2},
    "DRRAGRetriever": {"k1": 2, "mode": "qdc", "fill": True},
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("face", FACES)
def test_langchain_face_concurrent_ainvokes_match_serial(face: str) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    import langchain_diverse

    class Hash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [vec(t).tolist() for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return vec(text).tolist()

    store = InMemoryVectorStore(Hash())
    store.add_texts(TEXTS)
    cls = getattr(langchain_diverse, face)
    llm = None if face == "DRRAGRetriever" else SimulatedEndpoint(0.001)
    retriever = cls(llm=llm, vectorstore=store, k=3 if face != "DRRAGRetriever" else 4, fetch_k=8, **FACE_KW[face])

    async def run_all() -> tuple[list[Any], list[Any]]:
        serial = [await retriever.ainvoke(q) for q in QUESTIONS]
        conc = await asyncio.gather(*(retriever.ainvoke(q) for q in QUESTIONS), return_exceptions=True)
        return serial, list(conc)

    serial, conc = asyncio.run(run_all())
    assert not [c for c in conc if isinstance(c, BaseException)]
    assert [[d.page_content for d in docs] for docs in conc] == [[d.page_content for d in docs] for docs in serial]


@pytest.mark.parametrize("face", FACES)
def test_llamaindex_face_concurrent_aretrieves_match_serial(face: str) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding

    import llamaindex_diverse

    class Hash(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return vec(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return vec(query).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return vec(text).tolist()

    model = Hash()
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=model)
    cls = getattr(llamaindex_diverse, face)
    llm = None if face == "DRRAGRetriever" else SimulatedEndpoint(0.001)
    retriever = cls(index, llm=llm, embed_model=model, k=3 if face != "DRRAGRetriever" else 4, fetch_k=8,
                    **FACE_KW[face])

    async def run_all() -> tuple[list[Any], list[Any]]:
        serial = [await retriever.aretrieve(q) for q in QUESTIONS]
        conc = await asyncio.gather(*(retriever.aretrieve(q) for q in QUESTIONS), return_exceptions=True)
        return serial, list(conc)

    serial, conc = asyncio.run(run_all())
    assert not [c for c in conc if isinstance(c, BaseException)]
    assert [[n.node.get_content() for n in ns] for ns in conc] == [[n.node.get_content() for n in ns] for ns in serial]


# ---------------------------------------------------------------------------- harness
def test_harness_pipelines_on_one_fresh_disk_cache_match_a_serial_run(tmp_path: Path) -> None:
    """The harness runs every pipeline on the pooled corpus (new query texts through the disk cache);
    two harness runs at once in threads on one fresh folder give the serial run's picks."""
    from concurrent.futures import ThreadPoolExecutor

    from diverse_core.eval import BenchConfig, parse_method, run_benchmark
    from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord

    b = CorpusBuilder()
    ids = [b.add(f"T{i}", t) for i, t in enumerate(TEXTS)]
    recs = tuple(QARecord(f"q{i}", QUESTIONS[i], ("river",), (ids[i % len(ids)],), (), (("river",),))
                 for i in range(N))
    bench = Benchmark("toy", recs, b.docs, ("paragraphs",), "recall")
    specs = ["drrag@mode=qdc@k1=2@fill=true", "dfrag@llm=simulated:0.001", "diva@llm=simulated:0.001",
             "vendirag@llm=simulated:0.001"]

    def run(cache: Path, out: Path) -> list[Any]:
        cfg = BenchConfig(
            tasks=[("toy", "paragraphs")], benchmarks={"toy": bench}, k=3, fetch_k=8, embedder=CountingEmbedder(),
            model_name="fake", cache_dir=cache, out_dir=None, progress=False, plots=False,
            methods=[parse_method(s) for s in specs],
        )
        return [s.picks for s in run_benchmark(cfg).tasks[0].settings]

    want = run(tmp_path / "serial", tmp_path / "o0")
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda i: run(tmp_path / "shared", tmp_path / f"o{i}"), range(2)))
    assert got == [want, want]
