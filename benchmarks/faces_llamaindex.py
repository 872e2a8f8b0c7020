"""Per-query cost of the LlamaIndex face: DiverseNodePostprocessor vs the core and LlamaIndex's MMR.

Setup (synthetic, fixed seed, no model inference): ``fetch_k`` documents with 384-d
unit vectors drawn around 10 topics, indexed in LlamaIndex's default in-memory
``SimpleVectorStore`` through a table-lookup embedding model; query vectors are given
in the ``QueryBundle``, and the postprocessor's text cache is warmed before timing.
``k = 5`` picks per query, lambda 0.5 everywhere.

Table 1 (end to end, per query), the candidate pool is the ``fetch_k`` documents
for both sides, since ``VectorStoreQueryMode.MMR`` runs MMR over the whole store:

* ``MMR mode``: ``index.as_retriever(similarity_top_k=k, vector_store_query_mode="mmr",
  vector_store_kwargs={"mmr_threshold": 0.5})`` (``get_top_k_mmr_embeddings``);
* ``ours``: ``DiverseRetriever(index.as_retriever(similarity_top_k=fetch_k), method=...)``,
  i.e. dense top-``fetch_k`` then the postprocessor (nodes come back from the docstore
  without embeddings, so vectors come from the per-text cache).

Table 2 (postprocessor alone vs the core on the same vectors, mmr and gmmr):

* ``core``: ``diverse_core.select`` on what the postprocessor hands it: the float32
  query and the float32 rows of its embedding cache for the ``fetch_k`` nodes;
* ``fixed``: LlamaIndex's fixed per-call machinery, measured directly:
  ``postprocess_nodes`` of a do-nothing ``BaseNodePostprocessor`` subclass that returns
  its input (argument handling and the instrumentation span every postprocessor gets);
* ``pp``: ``DiverseNodePostprocessor.postprocess_nodes`` on the retrieved nodes (no
  embeddings: embed text rendered, vectors from the cache, all hits);
* ``own = pp - fixed``: the postprocessor's own code including the core call;
  ``own / core`` is its overhead factor over the core (target <= 1.10) and ``pp / core``
  the raw ratio including LlamaIndex's machinery;
* ``core(lists)`` and ``own(embedded)``: the same for nodes that carry their
  ``embedding`` lists (what a caller who extracts node embeddings by hand would pass
  to ``select``; both sides convert Python lists to an array).

Medians over interleaved rounds (every function once per round).

Table 3 (stored vectors, ``--no-stores`` to skip): per store (``SimpleVectorStore``,
Qdrant in memory, FAISS; each skipped when its package is missing), 1000 documents,
``fetch_k=50``, ``k=5``, every query new to the caches and given as text (so each
side embeds it): ours (``DiverseRetriever.from_index``, mmr, node vectors read from
the store) against the store's built-in MMR mode where it has one (only
``SimpleVectorStore``; Qdrant and FAISS offer none, so their row shows the plain
top-``k`` search instead), with the texts handed to the embedding model per query;
``ours, embedded`` wraps the same index retriever with another embedding-model object
(identical vectors), which cannot use the stored vectors: what every store cost before.
Run::

    python benchmarks/faces_llamaindex.py            # 20 queries x 15 rounds
    python benchmarks/faces_llamaindex.py --quick    # 5 queries x 9 rounds
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import diverse_core as dc
import numpy as np
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import VectorStoreQueryMode

from llamaindex_diverse import DiverseNodePostprocessor, DiverseRetriever

__all__ = ["main"]

FETCH_KS = (20, 50, 200)
METHODS = ("mmr", "gmmr")
K = 5
LAMBDA = 0.5
DIM = 384


class TableEmbedding(BaseEmbedding):
    """Looks vectors up in a precomputed table: excludes model inference from timings.

    ``texts_embedded`` counts the texts and queries it was asked to embed.
    """

    model_name: str = "precomputed-table"
    texts_embedded: int = 0
    _table: dict[str, list[float]] = PrivateAttr(default_factory=dict)

    def __init__(self, table: dict[str, list[float]]) -> None:
        super().__init__()
        self._table = table

    @classmethod
    def class_name(cls) -> str:
        return "TableEmbedding"

    def _get_text_embedding(self, text: str) -> Embedding:
        self.texts_embedded += 1
        return self._table[text]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        self.texts_embedded += len(texts)
        return [self._table[t] for t in texts]

    def _get_query_embedding(self, query: str) -> Embedding:
        self.texts_embedded += 1
        return self._table[query]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        self.texts_embedded += 1
        return self._table[query]


class NoopPostprocessor(BaseNodePostprocessor):
    """Returns its input: its ``postprocess_nodes`` time is LlamaIndex's fixed cost."""

    @classmethod
    def class_name(cls) -> str:
        return "NoopPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return nodes


def _corpus(n: int, rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    topics = rng.normal(size=(10, DIM))
    vecs = topics[rng.integers(0, 10, size=n)] + 0.6 * rng.normal(size=(n, DIM))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = [f"document {i}: " + " ".join(f"w{j}" for j in rng.integers(0, 500, 60)) for i in range(n)]
    return texts, vecs.astype(np.float32)


def _time_interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each function; one call of each per round."""
    for fn in fns.values():  # warm-up
        fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


def _per_query(fn: Callable[[QueryBundle], Any], bundles: Sequence[QueryBundle]) -> Callable[[], None]:
    def run() -> None:
        for bundle in bundles:
            fn(bundle)

    return run


def bench_fetch_k(fetch_k: int, n_queries: int, rounds: int, seed: int = 0) -> dict[str, float]:
    """Milliseconds per query of every measured variant at one ``fetch_k``."""
    rng = np.random.default_rng(seed + fetch_k)
    texts, vecs = _corpus(fetch_k, rng)
    embed = TableEmbedding({t: v.tolist() for t, v in zip(texts, vecs, strict=True)})
    index = VectorStoreIndex([TextNode(text=t) for t in texts], embed_model=embed)
    queries = rng.normal(size=(n_queries, DIM))
    bundles = [QueryBundle(f"query {i}", embedding=q.tolist()) for i, q in enumerate(queries)]

    builtin = index.as_retriever(
        similarity_top_k=K,
        vector_store_query_mode=VectorStoreQueryMode.MMR,
        vector_store_kwargs={"mmr_threshold": LAMBDA},
    )
    ours = {
        m: DiverseRetriever(
            index.as_retriever(similarity_top_k=fetch_k),
            top_n=K, method=m, method_params={"lambda_mult": LAMBDA}, embed_model=embed,
        )
        for m in ("gmmr", "mmr")
    }
    # Selection-only inputs: the fetched nodes of each query, with and without embeddings.
    fetched = [index.as_retriever(similarity_top_k=fetch_k).retrieve(b) for b in bundles]
    position = {t: i for i, t in enumerate(texts)}
    with_emb = [
        [NodeWithScore(node=n.node.model_copy(update={"embedding": embed._table[n.node.text]}),
                       score=n.score) for n in nodes]
        for nodes in fetched
    ]
    matrices = [vecs[[position[n.node.text] for n in nodes]] for nodes in fetched]
    queries32 = [np.asarray(b.embedding, dtype=np.float32) for b in bundles]
    noop = NoopPostprocessor()

    def run_all(fn: Callable[[int], Any]) -> Callable[[], None]:
        def run() -> None:
            for i in range(len(bundles)):
                fn(i)

        return run

    fns: dict[str, Callable[[], None]] = {
        "MMR mode": _per_query(builtin.retrieve, bundles),
        "ours gmmr": _per_query(ours["gmmr"].retrieve, bundles),
        "ours mmr": _per_query(ours["mmr"].retrieve, bundles),
        "fixed": run_all(lambda i: noop.postprocess_nodes(fetched[i], bundles[i])),
    }
    for m in METHODS:
        pp = DiverseNodePostprocessor(top_n=K, method=m, method_params={"lambda_mult": LAMBDA},
                                      embed_model=embed)
        for i, nodes in enumerate(fetched):  # warm the cache; check it agrees with the core
            got = [n.node.node_id for n in pp.postprocess_nodes(nodes, bundles[i])]
            sel = dc.select(m, queries32[i], matrices[i], K, lambda_mult=LAMBDA)
            assert got == [nodes[j].node.node_id for j in sel.indices], (m, i)
        fns[f"core {m}"] = run_all(
            lambda i, m=m: dc.select(m, queries32[i], matrices[i], K, lambda_mult=LAMBDA))
        fns[f"pp {m}"] = run_all(lambda i, pp=pp: pp.postprocess_nodes(fetched[i], bundles[i]))
        fns[f"core(lists) {m}"] = run_all(lambda i, m=m: dc.select(
            m, bundles[i].embedding, [n.node.embedding for n in with_emb[i]], K,
            lambda_mult=LAMBDA))
        fns[f"pp(embedded) {m}"] = run_all(
            lambda i, pp=pp: pp.postprocess_nodes(with_emb[i], bundles[i]))
    times = _time_interleaved(fns, rounds)
    out = {name: 1e3 * t / n_queries for name, t in times.items()}
    for m in METHODS:
        out[f"own {m}"] = out[f"pp {m}"] - out["fixed"]
        out[f"own(embedded) {m}"] = out[f"pp(embedded) {m}"] - out["fixed"]
    return out


def _tables(results: dict[int, dict[str, float]]) -> str:
    lines = [
        f"Table 1: end to end, ms per query (k={K}, lambda={LAMBDA}, pool = fetch_k docs)",
        "",
        "| fetch_k | MMR mode (built-in) | ours gmmr | ours mmr | MMR mode / ours gmmr | MMR mode / ours mmr |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for fk, r in results.items():
        lines.append(
            f"| {fk} | {r['MMR mode']:.3f} | {r['ours gmmr']:.3f} | {r['ours mmr']:.3f} | "
            f"{r['MMR mode'] / r['ours gmmr']:.2f}x | {r['MMR mode'] / r['ours mmr']:.2f}x |"
        )
    lines += [
        "",
        "Table 2: postprocessor vs diverse_core.select on the same vectors, ms per query "
        "(own = pp - fixed)",
        "",
        "| fetch_k | method | core | fixed | pp | own | own / core | pp / core "
        "| core(lists) | own(embedded) | own(embedded) / core(lists) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fk, r in results.items():
        for m in METHODS:
            core, own, pp = r[f"core {m}"], r[f"own {m}"], r[f"pp {m}"]
            lists, own_emb = r[f"core(lists) {m}"], r[f"own(embedded) {m}"]
            lines.append(
                f"| {fk} | {m} | {core:.3f} | {r['fixed']:.3f} | {pp:.3f} | {own:.3f} "
                f"| {own / core:.2f} | {pp / core:.2f} | {lists:.3f} | {own_emb:.3f} "
                f"| {own_emb / lists:.2f} |"
            )
    return "\n".join(lines)


STORE_DOCS, STORE_FETCH_K = 1000, 50


def _store_indexes(embed: TableEmbedding, texts: list[str]) -> dict[str, VectorStoreIndex]:
    """One index per store over ``texts``; a store whose package is missing is left out."""
    from llama_index.core import StorageContext

    def build(store: Any = None) -> VectorStoreIndex:
        nodes = [TextNode(text=t) for t in texts]
        if store is None:
            return VectorStoreIndex(nodes, embed_model=embed)
        context = StorageContext.from_defaults(vector_store=store)
        return VectorStoreIndex(nodes, embed_model=embed, storage_context=context)

    out = {"SimpleVectorStore": build()}
    try:
        import qdrant_client
        from llama_index.vector_stores.qdrant import QdrantVectorStore

        out["Qdrant (:memory:)"] = build(QdrantVectorStore(
            client=qdrant_client.QdrantClient(location=":memory:"), collection_name="bench"))
    except ImportError:
        pass
    try:
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        out["FAISS"] = build(FaissVectorStore(faiss_index=faiss.IndexFlatIP(DIM)))
    except ImportError:
        pass
    return out


def bench_stores(n_queries: int, seed: int = 7) -> list[dict[str, Any]]:
    """Ours vs the store's built-in MMR (or plain search): ms and texts embedded per query."""
    import warnings

    from diverse_core.embedding_cache import clear_model_caches

    rng = np.random.default_rng(seed)
    texts, vecs = _corpus(STORE_DOCS, rng)
    queries = [f"query {i}" for i in range(3 * (n_queries + 1))]
    table = {t: v.tolist() for t, v in zip(texts, vecs, strict=True)}
    table.update({q: v.tolist() for q, v in zip(queries, rng.normal(size=(len(queries), DIM)),
                                                  strict=True)})
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # local Qdrant's payload-index notice
        indexes = _store_indexes(TableEmbedding(table), texts)
    for name, index in indexes.items():
        embed = index._embed_model
        assert isinstance(embed, TableEmbedding)
        twin = TableEmbedding(table)  # same vectors, another object: stored vectors unusable
        mmr_mode = name == "SimpleVectorStore"
        builtin = index.as_retriever(
            similarity_top_k=K if mmr_mode else STORE_FETCH_K,
            **({"vector_store_query_mode": VectorStoreQueryMode.MMR,
                "vector_store_kwargs": {"mmr_threshold": LAMBDA}} if mmr_mode else {}))
        variants: dict[str, Callable[[str], Any]] = {
            "ours": DiverseRetriever.from_index(index, top_n=K, fetch_k=STORE_FETCH_K,
                                                method="mmr",
                                                method_params={"lambda_mult": LAMBDA}).retrieve,
            "built-in": builtin.retrieve,
            "ours, embedded": DiverseRetriever.from_index(
                index, top_n=K, fetch_k=STORE_FETCH_K, method="mmr",
                method_params={"lambda_mult": LAMBDA}, embed_model=twin).retrieve,
        }
        row: dict[str, Any] = {"store": name, "builtin": "MMR mode" if mmr_mode else
                               f"top-{STORE_FETCH_K} search (no MMR mode)"}
        for v, (label, fn) in enumerate(variants.items()):
            clear_model_caches()
            own = queries[v * (n_queries + 1):(v + 1) * (n_queries + 1)]
            fn(own[0])  # warm-up
            embed.texts_embedded = twin.texts_embedded = 0
            times = []
            for q in own[1:]:
                start = time.perf_counter()
                fn(q)
                times.append(time.perf_counter() - start)
            row[label] = 1e3 * statistics.median(times)
            row[f"{label} texts"] = (embed.texts_embedded + twin.texts_embedded) / n_queries
        rows.append(row)
    return rows


def _store_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"Table 3: stored vectors, ms per query ({STORE_DOCS} docs, fetch_k={STORE_FETCH_K}, "
        f"k={K}, lambda={LAMBDA}, queries new to the caches)",
        "",
        "| store | ours | built-in | built-in is | ours / built-in | texts embedded per query: "
        "ours / built-in / ours, embedded | ours, embedded |",
        "|---|---:|---:|---|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['store']} | {r['ours']:.2f} | {r['built-in']:.2f} | {r['builtin']} "
            f"| {r['ours'] / r['built-in']:.2f} | {r['ours texts']:.0f} / "
            f"{r['built-in texts']:.0f} / {r['ours, embedded texts']:.0f} "
            f"| {r['ours, embedded']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[int, dict[str, float]]:
    """Run the benchmark, print Markdown tables and return ms per query per variant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 queries x 9 rounds")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-stores", action="store_true", help="skip Table 3")
    parser.add_argument("--stores-only", action="store_true", help="only Table 3")
    args = parser.parse_args(argv)
    n_queries, rounds = (5, 9) if args.quick else (args.queries, args.rounds)
    print(f"# LlamaIndex face timings ({platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, {n_queries} queries x {rounds} rounds)\n")
    results: dict[int, dict[str, float]] = {}
    if not args.stores_only:
        results = {fk: bench_fetch_k(fk, n_queries, rounds) for fk in FETCH_KS}
        print(_tables(results))
    if not args.no_stores:
        print()
        print(_store_table(bench_stores(max(n_queries, 5))))
    return results


if __name__ == "__main__":
    main()
