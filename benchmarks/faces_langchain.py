"""Per-query cost of the LangChain face: ``DiverseRetriever`` vs the core and vs LangChain's MMR.

Corpus: ``--n-docs`` synthetic texts (default 3000) in ``--topics`` topics of
near-duplicate variants, with fixed-seed 384-d unit vectors served by a lookup-table
``Embeddings``, so no model inference is timed; the face's per-text cache is warmed
before timing. Queries are noisy topic centres. ``k = 10``, ``lambda_mult = 0.5``.

For each ``fetch_k`` in {20, 50, 200} and method (mmr, gmmr) it times, per query
(medians, milliseconds):

* ``core``: ``diverse_core.select`` on the query vector and the ``fetch_k`` candidate
  vectors, both float32 as the face's cache holds them: the floor any face sits on;
* ``fixed``: LangChain's fixed per-call machinery, measured directly: ``invoke`` of a
  do-nothing ``BaseRetriever`` subclass that returns a prebuilt list of ``k``
  documents (callback manager set-up, run start/end, config handling). Every
  LangChain retriever pays it;
* ``face``: ``DiverseRetriever.invoke`` over a store that hands back the same
  prefetched candidates at no cost (``PrefetchedStore``);
* ``own = face - fixed``: the face's own code including the core call (query and
  candidate look-ups in the per-text cache, checks, the core call, annotated
  ``Document`` copies). ``own / core`` is the face's overhead factor over the core
  (target <= 1.10); ``face / core`` is the raw ratio including LangChain's machinery;
* ``face+store``: ``DiverseRetriever.invoke`` over ``InMemoryVectorStore``;
* ``LC MMR``: ``InMemoryVectorStore.max_marginal_relevance_search`` (LangChain's own MMR);
* ``search``: ``InMemoryVectorStore.similarity_search_by_vector`` alone (both of the
  previous two pay it).

Calls are interleaved query by query so load from other processes hits every
variant alike.

A second table (``--stores``, on by default) times ours against each store's own
``max_marginal_relevance_search`` on the same store (InMemory, FAISS, Qdrant in
memory, Chroma in memory; each skipped when its package is missing), ``fetch_k=50``,
``k=10``, lambda 0.5, every query new to the caches, and counts the texts handed to
the embedding model per query: ours reads the stored vectors, so it embeds the query
only, like the built-in MMR; ``ours, embedded`` is the same retriever with
``use_stored_vectors=False`` (what every store but InMemory cost before).
Run::

    python benchmarks/faces_langchain.py            # defaults
    python benchmarks/faces_langchain.py --quick    # smaller corpus, fewer repeats
    python benchmarks/faces_langchain.py --no-face-table   # the store table only
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import diverse_core as dc  # noqa: E402
from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore  # noqa: E402

from langchain_diverse import DiverseRetriever  # noqa: E402

K = 10
LAMBDA = 0.5
FETCH_KS = (20, 50, 200)
METHODS = ("mmr", "gmmr")
DIM = 384


class TableEmbeddings(Embeddings):
    """Fixed vectors looked up by text (stands in for a model; nothing is inferred).

    Counts the texts it is asked to embed (``texts_embedded``).
    """

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.texts_embedded = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts_embedded += len(texts)
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.texts_embedded += 1
        return self.table[text].tolist()


class PrefetchedStore(VectorStore):
    """Returns the candidates set in ``current``: isolates the face's own cost from search."""

    def __init__(self, embeddings: Embeddings) -> None:
        self._embeddings = embeddings
        self.current: list[Document] = []

    @property
    def embeddings(self) -> Embeddings:
        return self._embeddings

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        return self.current[:k]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        raise NotImplementedError

    def add_texts(self, texts: Iterable[str], metadatas: Any = None, **kwargs: Any) -> list[str]:
        raise NotImplementedError

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings, metadatas: Any = None,
                   **kwargs: Any) -> PrefetchedStore:
        raise NotImplementedError


class FixedRetriever(BaseRetriever):
    """Does nothing but return ``docs``: its ``invoke`` time is LangChain's fixed cost."""

    docs: list[Document] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.docs


def make_corpus(n_docs: int, topics: int, n_queries: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Texts -> unit float32 vectors: ``n_docs`` documents and ``n_queries`` queries."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, DIM))
    table: dict[str, np.ndarray] = {}
    for i in range(n_docs):
        t = i % topics
        v = centres[t] + 0.35 * rng.normal(size=DIM)
        table[f"topic {t} variant {i // topics}"] = (v / np.linalg.norm(v)).astype(np.float32)
    for j in range(n_queries):
        v = centres[j % topics] + 0.8 * rng.normal(size=DIM)
        table[f"query {j}"] = (v / np.linalg.norm(v)).astype(np.float32)
    return table


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(n_docs: int, topics: int, n_queries: int, repeats: int, store_queries: int) -> list[dict[str, Any]]:
    """Time every variant; returns one row per (fetch_k, method)."""
    table = make_corpus(n_docs, topics, n_queries)
    emb = TableEmbeddings(table)
    doc_texts = [t for t in table if t.startswith("topic")]
    queries = [t for t in table if t.startswith("query")]
    store = InMemoryVectorStore(emb)
    store.add_texts(doc_texts)
    pre = PrefetchedStore(emb)
    rows = []
    for fetch_k in FETCH_KS:
        cands = {q: store.similarity_search_by_vector(table[q].tolist(), k=fetch_k) for q in queries}
        vecs = {q: np.stack([table[d.page_content] for d in cands[q]]) for q in queries}
        for method in METHODS:
            params = {"lambda_mult": LAMBDA}
            face = DiverseRetriever(vectorstore=pre, k=K, fetch_k=fetch_k, method=method,
                                    method_params=params)
            face_store = DiverseRetriever(vectorstore=store, k=K, fetch_k=fetch_k, method=method,
                                          method_params=params)
            fixed: dict[str, FixedRetriever] = {}
            for q in queries:  # warm the caches and check both paths agree with the core
                pre.current = cands[q]
                out = face.invoke(q)
                sel = dc.select(method, table[q], vecs[q], K, **params)
                assert [d.page_content for d in out] == [cands[q][i].page_content for i in sel.indices]
                fixed[q] = FixedRetriever(docs=out)
                fixed[q].invoke(q)
            t: dict[str, list[float]] = {"core": [], "fixed": [], "face": [],
                                         "face+store": [], "LC MMR": [], "search": []}
            for r in range(repeats):
                for qi, q in enumerate(queries):
                    qv, cv = table[q], vecs[q]
                    pre.current = cands[q]
                    t["core"].append(_time(partial(dc.select, method, qv, cv, K, **params)))
                    t["fixed"].append(_time(partial(fixed[q].invoke, q)))
                    t["face"].append(_time(partial(face.invoke, q)))
                    if r == 0 and qi < store_queries:
                        t["face+store"].append(_time(partial(face_store.invoke, q)))
                        if method == METHODS[0]:
                            t["LC MMR"].append(_time(partial(
                                store.max_marginal_relevance_search,
                                q, k=K, fetch_k=fetch_k, lambda_mult=LAMBDA)))
                            t["search"].append(_time(partial(
                                store.similarity_search_by_vector, qv.tolist(), k=fetch_k)))
            row: dict[str, Any] = {"fetch_k": fetch_k, "method": method}
            row.update({name: statistics.median(v) * 1e3 for name, v in t.items() if v})
            row["own"] = row["face"] - row["fixed"]
            rows.append(row)
        # LangChain's MMR and the bare search do not depend on our method: share them.
        for row in rows[-len(METHODS):]:
            row.setdefault("LC MMR", rows[-len(METHODS)]["LC MMR"])
            row.setdefault("search", rows[-len(METHODS)]["search"])
    return rows


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table with ratios (``own = face - fixed``)."""
    lines = [
        "| fetch_k | method | core ms | fixed ms | face ms | own ms | own / core | face / core "
        "| face+store ms | LC MMR ms | face+store / LC MMR | search ms |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['fetch_k']} | {r['method']} | {r['core']:.3f} | {r['fixed']:.3f} "
            f"| {r['face']:.3f} | {r['own']:.3f} | {r['own'] / r['core']:.2f} "
            f"| {r['face'] / r['core']:.2f} | {r['face+store']:.1f} | {r['LC MMR']:.1f} "
            f"| {r['face+store'] / r['LC MMR']:.2f} | {r['search']:.1f} |"
        )
    return "\n".join(lines)


STORE_FETCH_K = 50


def _stores(emb: TableEmbeddings, texts: list[str]) -> dict[str, VectorStore]:
    """The stores to compare on, each holding ``texts``; a store whose package is missing is left out."""
    import uuid
    import warnings

    stores: dict[str, VectorStore] = {}
    memory = InMemoryVectorStore(emb)
    memory.add_texts(texts)
    stores["InMemory"] = memory
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langchain_community.vectorstores import FAISS
        stores["FAISS"] = FAISS.from_texts(texts, emb)
    except ImportError:
        pass
    try:
        from langchain_qdrant import QdrantVectorStore

        emb.table.setdefault("dummy_text", np.ones(DIM, dtype=np.float32) / DIM**0.5)
        stores["Qdrant (:memory:)"] = QdrantVectorStore.from_texts(
            texts, emb, location=":memory:", collection_name=f"bench{uuid.uuid4().hex}")
    except ImportError:
        pass
    try:
        from chromadb.config import Settings
        from langchain_chroma import Chroma

        stores["Chroma (in memory)"] = Chroma.from_texts(
            texts, emb, collection_name=f"bench{uuid.uuid4().hex}",
            client_settings=Settings(anonymized_telemetry=False, is_persistent=False))
    except ImportError:
        pass
    return stores


def run_stores(n_docs: int, topics: int, n_queries: int) -> list[dict[str, Any]]:
    """Ours vs each store's built-in MMR on the same store: ms and texts embedded per query."""
    from langchain_diverse import clear_embedding_caches

    table = make_corpus(n_docs, topics, 3 * n_queries, seed=1)
    texts = [t for t in table if t.startswith("topic")]
    queries = [t for t in table if t.startswith("query")]
    rows = []
    for name, store in _stores(TableEmbeddings(table), texts).items():
        emb = store.embeddings
        assert isinstance(emb, TableEmbeddings)
        variants: dict[str, Callable[[str], Any]] = {
            "ours": DiverseRetriever(vectorstore=store, k=K, fetch_k=STORE_FETCH_K, method="mmr",
                                     method_params={"lambda_mult": LAMBDA}).invoke,
            "built-in MMR": partial(store.max_marginal_relevance_search, k=K,
                                    fetch_k=STORE_FETCH_K, lambda_mult=LAMBDA),
            "ours, embedded": DiverseRetriever(
                vectorstore=store, k=K, fetch_k=STORE_FETCH_K, method="mmr",
                method_params={"lambda_mult": LAMBDA}, use_stored_vectors=False).invoke,
        }
        row: dict[str, Any] = {"store": name}
        # Each variant gets queries of its own, so every query is new to every cache.
        for v, (label, fn) in enumerate(variants.items()):
            clear_embedding_caches()
            own = queries[v * n_queries:(v + 1) * n_queries]
            fn(own[0])  # warm-up (imports, first allocations)
            emb.texts_embedded = 0
            times = [_time(partial(fn, q)) for q in own[1:]]
            row[label] = statistics.median(times) * 1e3
            row[f"{label} texts"] = emb.texts_embedded / (len(own) - 1)
        rows.append(row)
    return rows


def stores_markdown(rows: list[dict[str, Any]]) -> str:
    """The store comparison as a Markdown table."""
    lines = [
        "| store | ours ms | built-in MMR ms | ours / built-in | texts embedded per query: "
        "ours / built-in / ours with use_stored_vectors=False | ours, embedded ms |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['store']} | {r['ours']:.2f} | {r['built-in MMR']:.2f} "
            f"| {r['ours'] / r['built-in MMR']:.2f} | {r['ours texts']:.0f} / "
            f"{r['built-in MMR texts']:.0f} / {r['ours, embedded texts']:.0f} "
            f"| {r['ours, embedded']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the benchmark and print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-docs", type=int, default=3000)
    parser.add_argument("--topics", type=int, default=150)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--store-queries", type=int, default=10,
                        help="queries timed through InMemoryVectorStore (its search is slow)")
    parser.add_argument("--quick", action="store_true", help="1000 docs, 10 queries, 4 repeats")
    parser.add_argument("--no-face-table", action="store_true", help="only the store table")
    parser.add_argument("--no-stores", action="store_true", help="only the face table")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_docs, args.queries, args.repeats, args.store_queries = 1000, 10, 4, 5
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    if not args.no_face_table:
        rows = run(args.n_docs, args.topics, args.queries, args.repeats, args.store_queries)
        print(f"LangChain face, k={K}, lambda_mult={LAMBDA}, {args.n_docs} docs x {DIM}-d, "
              f"{args.queries} queries x {args.repeats} repeats; medians per query ({machine})\n")
        print(to_markdown(rows))
    if not args.no_stores:
        n_queries = max(args.queries, 6)
        store_rows = run_stores(args.n_docs, args.topics, n_queries)
        print(f"\nStored vectors: ours (mmr) vs the store's own max_marginal_relevance_search, "
              f"k={K}, fetch_k={STORE_FETCH_K}, lambda_mult={LAMBDA}, {args.n_docs} docs x "
              f"{DIM}-d, median of {n_queries - 1} queries new to the caches ({machine})\n")
        print(stores_markdown(store_rows))


if __name__ == "__main__":
    main()
