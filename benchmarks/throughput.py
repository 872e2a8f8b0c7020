"""Throughput under concurrency: plain similarity search vs the diverse retrievers, both faces.

For each store (``--stores``: ``pgvector`` = Postgres + pgvector, ``--n`` vectors, HNSW
m=16, ef_construction=64, loaded and indexed by ``benchmarks/stores.py``'s code, so
``--data-dir`` reuses a kept server's rows and indexes; ``memory`` = LangChain's
``InMemoryVectorStore`` / LlamaIndex's ``SimpleVectorStore`` holding ``--memory-n`` of
the same vectors), each face and each ``fetch_k``, these calls are timed at 1, 4 and 16
concurrent callers (threads, each running whole queries; ``--callers``):

* ``search``: the store's own similarity search of ``fetch_k`` rows (LangChain
  ``similarity_search_by_vector``; LlamaIndex ``index.as_retriever(similarity_top_k=fetch_k)``
  with the query vector in the bundle): what the diverse retrievers start from;
* ``gmmr``, ``learned``: the faces' ``DiverseRetriever`` (k=10 of ``fetch_k``);
* ``drrag``: ``DRRAGRetriever`` retrieval-only (no LLM; ``mode="cfs"``, ``k1=2``,
  ``fill=True``, the shipped pair classifier): one search for the question plus one per
  stage-1 document, so three searches per query.

Queries are noisy topic centres (looked up, not computed: no model inference is timed;
DR-RAG's concatenated stage-2 queries get a hash-seeded vector). Every variant runs the
same queries per batch (``--per-caller`` calls per caller), and the variants are
interleaved batch by batch (the order reversed every other round) until each made
``--total`` calls, so the ratios compare calls made under the same machine load.
Embedding caches are left warm, as in a service (candidate vectors come with the search
rows over pgvector either way). Reported: queries/s (all calls of all rounds / their wall
time), p50 and p95 latency per call (ms), the calling thread's CPU time per call (the
client's work, not Postgres'), and each variant's queries/s as a ratio of ``search``'s at
the same store, face, ``fetch_k`` and callers.

Run (this machine sets OpenBLAS variables that users don't; one BLAS thread)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/throughput.py --data-dir /tmp/pgscale/data --memory-n 2000 \\
        --results-md benchmarks/RESULTS.md

Needs the ``postgres`` extra and ``pgserver`` (in ``dev``) for ``pgvector``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "shared", REPO, REPO / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import stores as scale  # noqa: E402
from report import publish, replace_section  # noqa: E402

START, END = "<!-- throughput:start -->", "<!-- throughput:end -->"
K = 10
LAMBDA = 0.5
VARIANTS = ("search", "gmmr", "learned", "drrag")


# ----------------------------------------------------------------------------- embeddings
class Vectors:
    """Query vectors by text; other texts (DR-RAG's stage-2 queries) get a hash-seeded unit vector."""

    def __init__(self, table: dict[str, list[float]], dim: int) -> None:
        self.table = table
        self.dim = dim

    def __call__(self, text: str) -> list[float]:
        hit = self.table.get(text)
        if hit is not None:
            return hit
        seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=self.dim)
        return (v / np.linalg.norm(v)).tolist()


# ----------------------------------------------------------------------------- variants
def _methods(make: Callable[[str], Any]) -> dict[str, Any]:
    return {m: make(m) for m in ("gmmr", "learned")}


def langchain_calls(store: Any, fetch_k: int, qvecs: dict[str, list[float]]) -> dict[str, Callable[[str], Any]]:
    from langchain_diverse import DiverseRetriever
    from langchain_diverse.drrag import DRRAGRetriever

    div = _methods(lambda m: DiverseRetriever(
        vectorstore=store, k=K, fetch_k=fetch_k, method=m,
        **({"method_params": {"lambda_mult": LAMBDA}} if m == "gmmr" else {})))
    drrag = DRRAGRetriever(vectorstore=store, k=K, fetch_k=fetch_k, mode="cfs", k1=2, fill=True)
    return {
        "search": lambda q: store.similarity_search_by_vector(qvecs[q], k=fetch_k),
        "gmmr": lambda q: div["gmmr"].invoke(q),
        "learned": lambda q: div["learned"].invoke(q),
        "drrag": lambda q: drrag.invoke(q),
    }


def llamaindex_calls(index: Any, fetch_k: int, qvecs: dict[str, list[float]]) -> dict[str, Callable[[str], Any]]:
    from llama_index.core.schema import QueryBundle

    from llamaindex_diverse import DiverseRetriever
    from llamaindex_diverse.drrag import DRRAGRetriever

    base = index.as_retriever(similarity_top_k=fetch_k)
    div = _methods(lambda m: DiverseRetriever(
        base, top_n=K, method=m, embed_model=index._embed_model,
        **({"method_params": {"lambda_mult": LAMBDA}} if m == "gmmr" else {})))
    drrag = DRRAGRetriever(index, k=K, fetch_k=fetch_k, mode="cfs", k1=2, fill=True)

    def bundle(q: str) -> Any:
        return QueryBundle(q, embedding=qvecs[q])

    return {
        "search": lambda q: base.retrieve(bundle(q)),
        "gmmr": lambda q: div["gmmr"].retrieve(bundle(q)),
        "learned": lambda q: div["learned"].retrieve(bundle(q)),
        "drrag": lambda q: drrag.retrieve(q),
    }


def pg_stores(host: str, fetch_k: int, vec: Vectors, qvecs: dict[str, list[float]], dim: int
              ) -> tuple[dict[str, dict[str, Callable[[str], Any]]], Callable[[], None]]:
    from langchain_postgres import PGVector
    from llama_index.core import VectorStoreIndex
    from llama_index.vector_stores.postgres import PGVectorStore

    # ef_search = max(40, fetch_k) per connection, as in stores.py (the plain search too)
    u = scale.urls(host, max(40, fetch_k))
    pool = {"pool_size": 20, "max_overflow": 10}  # 16 callers never wait for a connection
    lc = PGVector(scale.langchain_embeddings(vec), connection=u["psycopg"], collection_name="scale",
                  embedding_length=dim, use_jsonb=True, engine_args=pool)
    li = PGVectorStore(connection_string=u["psycopg2"], async_connection_string=u["asyncpg"],
                       table_name="scale", embed_dim=dim, create_engine_kwargs=pool)
    index = VectorStoreIndex.from_vector_store(li, embed_model=scale.llamaindex_embedding(vec))

    def close() -> None:
        lc._engine.dispose()
        if li._engine is not None:
            li._engine.dispose()

    return {"langchain": langchain_calls(lc, fetch_k, qvecs),
            "llamaindex": llamaindex_calls(index, fetch_k, qvecs)}, close


def memory_stores(texts: list[str], vecs: np.ndarray, fetch_k: int, vec: Vectors,
                  qvecs: dict[str, list[float]]) -> dict[str, dict[str, Callable[[str], Any]]]:
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    lc = InMemoryVectorStore(scale.langchain_embeddings(vec))
    for t, v in zip(texts, vecs.tolist(), strict=True):  # what add_texts stores, without embedding
        i = str(uuid.uuid4())
        lc.store[i] = {"id": i, "vector": v, "text": t, "metadata": {}}
    index = VectorStoreIndex([TextNode(text=t, embedding=v) for t, v in zip(texts, vecs.tolist(), strict=True)],
                             embed_model=scale.llamaindex_embedding(vec))
    return {"langchain": langchain_calls(lc, fetch_k, qvecs),
            "llamaindex": llamaindex_calls(index, fetch_k, qvecs)}


# ----------------------------------------------------------------------------- timing
def run_batch(pool: ThreadPoolExecutor, callers: int, fn: Callable[[str], Any], queries: list[str],
              want: int) -> tuple[float, list[float], list[float], float]:
    """Run ``queries`` with ``callers`` concurrent callers; (wall seconds, per-call ms, per-call
    CPU ms of the calling thread: the client's own work, not Postgres', and the process's CPU
    seconds over the batch: with the work of any worker threads a call hands off to)."""
    slices = [queries[i::callers] for i in range(callers)]

    def caller(qs: list[str]) -> list[tuple[float, float]]:
        out = []
        for q in qs:
            c0, t0 = time.thread_time(), time.perf_counter()
            got = fn(q)
            out.append(((time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000))
            if len(got) != want:
                raise RuntimeError(f"{len(got)} results, not {want}")
        return out

    t0, p0 = time.perf_counter(), time.process_time()
    futures = [pool.submit(caller, s) for s in slices]
    pairs = [x for f in futures for x in f.result()]
    return time.perf_counter() - t0, [w for w, _ in pairs], [c for _, c in pairs], time.process_time() - p0


def time_store(calls: dict[str, dict[str, Callable[[str], Any]]], queries: list[str], callers: list[int],
               per_caller: int, total: int, fetch_k: int, variants: tuple[str, ...]) -> list[dict[str, Any]]:
    """Batches of ``per_caller`` calls per caller, variants interleaved batch by batch (the
    order reversed every other round), until each variant made ``total`` calls."""
    rows = []
    for fw, per in calls.items():
        for c in callers:
            n_calls = per_caller * c
            rounds = max(2, -(-total // n_calls))
            with ThreadPoolExecutor(max_workers=c) as pool:
                for name in variants:  # warm-up: connections, caches, models
                    run_batch(pool, c, per[name], queries[:c], fetch_k if name == "search" else K)
                wall = dict.fromkeys(variants, 0.0)
                proc = dict.fromkeys(variants, 0.0)
                lat: dict[str, list[float]] = {v: [] for v in variants}
                cpu: dict[str, list[float]] = {v: [] for v in variants}
                for r in range(rounds):
                    start = (r * n_calls) % len(queries)
                    batch = [queries[(start + i) % len(queries)] for i in range(n_calls)]
                    order = variants if r % 2 == 0 else tuple(reversed(variants))
                    for name in order:
                        w, ls, cs, pc = run_batch(pool, c, per[name], batch, fetch_k if name == "search" else K)
                        wall[name] += w
                        proc[name] += pc
                        lat[name] += ls
                        cpu[name] += cs
            base_qps = rounds * n_calls / wall["search"]
            for name in variants:
                qps = rounds * n_calls / wall[name]
                row = {"framework": fw, "fetch_k": fetch_k, "callers": c, "variant": name,
                       "calls": rounds * n_calls, "batches": rounds, "qps": qps, "ratio": qps / base_qps,
                       "p50": statistics.median(lat[name]),
                       "p95": float(np.percentile(lat[name], 95)),
                       "p50_ratio": statistics.median(lat[name]) / statistics.median(lat["search"]),
                       "cpu": statistics.median(cpu[name]),
                       "cpu_ratio": statistics.median(cpu[name]) / statistics.median(cpu["search"]),
                       "proc_cpu": proc[name] * 1000 / (rounds * n_calls),
                       "proc_cpu_ratio": proc[name] / proc["search"]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


# ----------------------------------------------------------------------------- report
def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [START, "## Throughput under concurrency (issue 35)", "",
             f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 "
             f"python benchmarks/throughput.py {meta['argv']}`", "",
             f"pgvector: {meta['n']:,} vectors (d={meta['dim']}), HNSW m=16, ef_construction=64, "
             "`hnsw.ef_search = max(40, fetch_k)` per connection, pgvector "
             f"{meta.get('pgvector', '?')} (pgserver, unix socket, same machine); memory: "
             f"{meta['memory_n']:,} of the same vectors. k={K}; batches of {meta['per_caller']} calls per "
             f"caller, variants interleaved batch by batch (order reversed every other round) until each "
             f"made at least {meta['total']} calls (column `calls`); {meta['machine']}; "
             f"load average before / after: {meta['load_before']} / {meta['load_after']}.",
             "`q/s` = calls / wall time of their batches; `x search` = q/s / the plain search's q/s "
             "(same store, face, fetch_k, callers); p50 / p95 per call in ms; `client CPU ms` = median "
             "CPU time of the calling thread per call (the retriever's own work; Postgres' is not "
             "in it; work a call hands to worker threads is not either), `CPU x search` its ratio to "
             "the plain search's; `process CPU ms` = the client process's CPU time over the variant's "
             "batches per call (worker threads included), `proc x search` its ratio.", ""]
    lines += ["| store | framework | fetch_k | callers | variant | calls | q/s | x search | p50 ms | p95 ms "
              "| p50 x search | client CPU ms | CPU x search | process CPU ms | proc x search |",
              "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        proc = (f"{r['proc_cpu']:.1f} | {r['proc_cpu_ratio']:.2f}" if "proc_cpu" in r else "- | -")
        lines.append(f"| {r['store']} | {r['framework']} | {r['fetch_k']} | {r['callers']} | {r['variant']} | "
                     f"{r['calls']} | {r['qps']:.1f} | {r['ratio']:.2f} | {r['p50']:.1f} | {r['p95']:.1f} | "
                     f"{r['p50_ratio']:.2f} | {r['cpu']:.1f} | {r['cpu_ratio']:.2f} | {proc} |")
    lines.append("")
    if meta.get("note"):
        lines += [meta["note"].strip(), ""]
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stores", nargs="+", default=["pgvector", "memory"], choices=["pgvector", "memory"])
    ap.add_argument("--frameworks", nargs="+", default=["langchain", "llamaindex"],
                    choices=["langchain", "llamaindex"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--memory-n", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--fetch-k", type=int, nargs="+", default=[50])
    ap.add_argument("--callers", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--per-caller", type=int, default=2, help="calls per caller in one batch")
    ap.add_argument("--total", type=int, default=128, help="calls per variant (rounded up to whole batches)")
    ap.add_argument("--data-dir", default=None, help="a kept pgserver folder (see stores.py --data-dir)")
    ap.add_argument("--host", default=None, help="a running server's socket folder")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "throughput.json"))
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--note", default=None, help="a Markdown file appended to the section")
    ap.add_argument("--from-json", default=None, help="only re-render the section from a run's JSON")
    args = ap.parse_args(argv)

    if args.from_json:
        run = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        meta = run["meta"]
        if args.note:
            meta["note"] = Path(args.note).read_text(encoding="utf-8")
        section = render(run["rows"], meta)
        print(section)
        if args.results_md:
            replace_section(Path(args.results_md), section, START, END)
        return 0

    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    texts, vecs, queries, qv = scale.make_data(args.n, args.dim, args.topics, args.queries)
    qvecs = {q: v.tolist() for q, v in zip(queries, qv, strict=True)}
    vec = Vectors(qvecs, args.dim)
    variants = tuple(args.variants) if "search" in args.variants else ("search", *args.variants)
    rows: list[dict[str, Any]] = []
    pgv = None
    frameworks = set(args.frameworks)
    if "pgvector" in args.stores:
        folder, server = None, None
        if args.host:
            host = args.host
        else:
            from urllib.parse import parse_qs, urlsplit

            import pgserver

            if args.data_dir:
                Path(args.data_dir).mkdir(parents=True, exist_ok=True)
                srv = pgserver.get_server(args.data_dir, cleanup_mode=None)
            else:
                folder = tempfile.mkdtemp(prefix="throughput-")
                srv = server = pgserver.get_server(folder, cleanup_mode="delete")
            host = parse_qs(urlsplit(srv.get_uri()).query).get("host", [args.data_dir or folder])[0]
        try:
            scale.sql(scale.urls(host, None)["psycopg"], "CREATE EXTENSION IF NOT EXISTS vector")
            print("load:", scale.load(host, texts, vecs, scale.LookupEmbeddings(qvecs)), flush=True)
            print("hnsw:", scale.build_hnsw(host), flush=True)
            import psycopg

            with psycopg.connect(host=host, user="postgres", dbname="postgres") as conn:
                row = conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()
                pgv = row[0] if row else None
            for fetch_k in args.fetch_k:
                calls, close = pg_stores(host, fetch_k, vec, qvecs, args.dim)
                try:
                    got = time_store({f: c for f, c in calls.items() if f in frameworks}, queries,
                                     args.callers, args.per_caller, args.total, fetch_k, variants)
                finally:
                    close()
                rows += [{"store": "pgvector", **r} for r in got]
        finally:
            if server is not None:
                server.cleanup()
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
    if "memory" in args.stores:
        m = args.memory_n
        for fetch_k in args.fetch_k:
            calls = memory_stores(texts[:m], vecs[:m], fetch_k, vec, qvecs)
            got = time_store({f: c for f, c in calls.items() if f in frameworks}, queries,
                             args.callers, args.per_caller, args.total, fetch_k, variants)
            rows += [{"store": "memory", **r} for r in got]
    meta = {"n": args.n, "memory_n": args.memory_n, "dim": args.dim, "per_caller": args.per_caller,
            "total": args.total, "pgvector": pgv, "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}",
            "argv": " ".join(argv if argv is not None else sys.argv[1:]),
            "load_before": load_before, "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "note": Path(args.note).read_text(encoding="utf-8") if args.note else None}
    publish(render(rows, meta), START, END, args.results_md, args.json, {"meta": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
