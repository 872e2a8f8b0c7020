"""Latency over a real Postgres + pgvector: the store's own search vs the diverse retrievers, A/B of trees.

What does diversity add to a query over a real store, and did a change of the library move it? One
Postgres server (``pgserver`` in a temporary folder, or ``--host`` / a kept ``--data-dir``) holds
``--n`` synthetic vectors (default 30,000, d = 384: unit vectors around ``n / 50`` fixed-seed topic
centres, texts ``"doc <i> topic <t>"``) in both integrations' tables, filled by one binary COPY each
and indexed with pgvector HNSW (``vector_cosine_ops``, m = 16, ef_construction = 64;
``hnsw.ef_search = max(40, fetch_k)`` per connection):

* LangChain: ``langchain_postgres.PGVector``; LlamaIndex: ``PGVectorStore`` (plus a btree index on
  ``node_id``, which PGVectorStore does not make).

Each tree (``--tree NAME=PATH``, repeatable; default this checkout) runs in its own subprocess
(``benchmarks/trees.py``) against the same database, ``--rounds`` times, the trees' order alternating
round by round (A B, B A, ...) so machine load weighs on both alike. A subprocess times, per query
(``--queries`` noisy topic centres after ``--warmup`` untimed ones; query vectors looked up, never
embedded), with the variants' order rotating query by query:

* ``search``: the store's own search of ``fetch_k`` rows (the peer; what the retrievers start from):
  LangChain ``similarity_search_by_vector``, LlamaIndex ``index.as_retriever(similarity_top_k=fetch_k)``;
* ``gmmr``, ``learned`` (``--methods``): LangChain ``DiverseRetriever(vectorstore=..., k, fetch_k,
  method)`` and LlamaIndex ``DiverseRetriever(base, top_n=k, method)`` over ``DiverseNodePostprocessor``,
  default parameters, embedding caches warm as in a service.

Printed: the median latency per (tree, face, variant) over every timed call of every round (ms), the
spread of the per-round medians, ``+%`` against the same tree's ``search``, and with two trees the
ratio of the last to the first tree's median. The lead's A/B after a merge (issue 44)::

    git worktree add /tmp/issue44-before 16905f1
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/stores.py \\
        --tree before=/tmp/issue44-before --tree after=. --rounds 6 --queries 100 --results-md benchmarks/RESULTS.md
    git worktree remove /tmp/issue44-before

Needs the ``postgres`` extra and ``pgserver`` (in ``dev``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from report import (  # this script's folder is on the path
    ab_table,
    add_output_arguments,
    end_section,
    machine_label,
    publish,
)
from trees import add_arguments, parse_trees, run_child

START, END = "<!-- stores:start (benchmarks/stores.py) -->", "<!-- stores:end -->"
SCRIPT = Path(__file__).resolve()
FACES = ("langchain", "llamaindex")


# ----------------------------------------------------------------------------- data
def make_data(n: int, dim: int, topics: int, n_queries: int, seed: int = 0
              ) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Texts and unit vectors of ``n`` stored documents, and ``n_queries`` query names and vectors."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic = rng.integers(0, topics, size=n)
    vecs = centres[topic] + 0.35 * rng.normal(size=(n, dim)).astype(np.float32) / np.sqrt(dim)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = [f"doc {i} topic {t}" for i, t in enumerate(topic.tolist())]
    q_topic = rng.integers(0, topics, size=n_queries)
    queries = centres[q_topic] + 0.5 * rng.normal(size=(n_queries, dim)).astype(np.float32) / np.sqrt(dim)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return texts, vecs.astype(np.float32), [f"query {i}" for i in range(n_queries)], queries


class LookupEmbeddings:
    """Query vectors looked up by text (both frameworks' embedding interfaces are built on it)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def __call__(self, text: str) -> list[float]:
        return self.table[text]


def langchain_embeddings(lookup: Callable[[str], list[float]]) -> Any:
    from langchain_core.embeddings import Embeddings

    class _Emb(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [lookup(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return lookup(text)

    return _Emb()


def llamaindex_embedding(lookup: Callable[[str], list[float]]) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class _Emb(BaseEmbedding):
        model_name: str = "lookup"

        def _get_query_embedding(self, query: str) -> list[float]:
            return lookup(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return lookup(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return lookup(text)

        async def _aget_text_embedding(self, text: str) -> list[float]:
            return lookup(text)

    return _Emb()


# ----------------------------------------------------------------------------- server
def sql(url: str, *statements: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for s in statements:
            conn.execute(text(s))
    engine.dispose()


def urls(host: str, ef_search: int | None) -> dict[str, str]:
    opt = f"&options=-c%20hnsw.ef_search%3D{ef_search}" if ef_search else ""
    return {
        "psycopg": f"postgresql+psycopg://postgres@/postgres?host={host}{opt}",
        "psycopg2": f"postgresql+psycopg2://postgres@/postgres?host={host}{opt}",
        "asyncpg": f"postgresql+asyncpg://postgres@/postgres?host={host}",
    }


@contextlib.contextmanager
def server(host: str | None, data_dir: str | None) -> Iterator[str]:
    """The socket folder of a Postgres server: ``host`` as given, a kept ``data_dir`` server (left
    running), or a temporary one removed on exit."""
    if host:
        yield host
        return
    from urllib.parse import parse_qs, urlsplit

    import pgserver

    folder = None
    if data_dir:
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        srv = pgserver.get_server(data_dir, cleanup_mode=None)
    else:
        folder = tempfile.mkdtemp(prefix="stores-")
        srv = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        yield parse_qs(urlsplit(srv.get_uri()).query).get("host", [data_dir or folder])[0]
    finally:
        if folder is not None:
            srv.cleanup()
            shutil.rmtree(folder, ignore_errors=True)


def _column_types(conn: Any, table: str, columns: list[str]) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0", (table,)).fetchall()
    types = dict(rows)
    return [types[c] for c in columns]


def loaded(host: str, n: int, frameworks: tuple[str, ...]) -> bool:
    """Whether the tables of ``frameworks`` already hold ``n`` rows (a kept ``--data-dir``)."""
    import psycopg

    counts = {"langchain": "SELECT count(*) FROM langchain_pg_embedding e JOIN langchain_pg_collection c "
                           "ON e.collection_id = c.uuid WHERE c.name = 'scale'",
              "llamaindex": "SELECT count(*) FROM data_scale"}
    with psycopg.connect(host=host, user="postgres", dbname="postgres") as conn:
        for fw in frameworks:
            try:
                (got,) = conn.execute(counts[fw]).fetchone() or (0,)
            except psycopg.errors.UndefinedTable:
                return False
            if got != n:
                return False
    return True


def load(host: str, texts: list[str], vecs: np.ndarray, lookup: LookupEmbeddings,
         frameworks: tuple[str, ...] = FACES) -> dict[str, float]:
    """Create both integrations' tables through their own classes, then fill them with one
    binary COPY each (the integrations' row-by-row inserts take minutes at 100k rows; how
    rows got in does not change how they are searched)."""
    import psycopg
    from langchain_postgres import PGVector
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict
    from llama_index.vector_stores.postgres import PGVectorStore
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Json, Jsonb

    u = urls(host, None)
    sql(u["psycopg"], "CREATE EXTENSION IF NOT EXISTS vector")
    if loaded(host, len(texts), frameworks):
        print(f"reusing the {len(texts)} rows already loaded for {', '.join(frameworks)}", flush=True)
        return {}
    sql(u["psycopg"], "DROP TABLE IF EXISTS data_scale")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    lc = PGVector(langchain_embeddings(lookup), connection=u["psycopg"], collection_name="scale",
                  embedding_length=vecs.shape[1], use_jsonb=True, pre_delete_collection=True)
    lc._engine.dispose()
    li = PGVectorStore(connection_string=u["psycopg2"], async_connection_string=u["asyncpg"],
                       table_name="scale", embed_dim=vecs.shape[1])
    li._initialize()
    li._engine.dispose()
    template = json.dumps(node_to_metadata_dict(TextNode(text="", id_="@@ID@@"), remove_text=True))
    with psycopg.connect(host=host, user="postgres", dbname="postgres") as conn:
        register_vector(conn)
        collection = conn.execute(
            "SELECT uuid FROM langchain_pg_collection WHERE name = 'scale'").fetchone()[0]
        cols = ["id", "collection_id", "embedding", "document", "cmetadata"]
        types = _column_types(conn, "langchain_pg_embedding", cols)
        if "langchain" in frameworks:
            with conn.cursor().copy(f"COPY langchain_pg_embedding ({', '.join(cols)}) FROM STDIN "
                                    "WITH (FORMAT BINARY)") as copy:
                copy.set_types(types)
                for i, (t, v) in enumerate(zip(texts, vecs, strict=True)):
                    copy.write_row((str(i), collection, v, t, Jsonb({"i": i})))
            seconds["langchain load"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        cols = ["text", "metadata_", "node_id", "embedding"]
        types = _column_types(conn, "data_scale", cols)
        wrap = Jsonb if types[1] == "jsonb" else Json
        if "llamaindex" in frameworks:
            with conn.cursor().copy(f"COPY data_scale ({', '.join(cols)}) FROM STDIN "
                                    "WITH (FORMAT BINARY)") as copy:
                copy.set_types(types)
                for i, (t, v) in enumerate(zip(texts, vecs, strict=True)):
                    node_id = f"n{i}"
                    copy.write_row((t, wrap(json.loads(template.replace("@@ID@@", node_id))), node_id, v))
            conn.commit()
            conn.execute("CREATE INDEX IF NOT EXISTS data_scale_node_id ON data_scale (node_id)")
            conn.commit()
            seconds["llamaindex load"] = time.perf_counter() - t0
    sql(u["psycopg"], "ANALYZE")
    return seconds


def build_hnsw(host: str, frameworks: tuple[str, ...] = FACES) -> dict[str, float]:
    u = urls(host, None)["psycopg"]
    out = {}
    for name, stmt in [
        ("langchain hnsw build", "CREATE INDEX IF NOT EXISTS lc_scale_hnsw ON langchain_pg_embedding "
         "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"),
        ("llamaindex hnsw build", "CREATE INDEX IF NOT EXISTS li_scale_hnsw ON data_scale "
         "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"),
    ]:
        if name.split()[0] not in frameworks:
            continue
        t0 = time.perf_counter()
        sql(u, "SET maintenance_work_mem = '1GB'", stmt)
        out[name] = time.perf_counter() - t0
    sql(u, "ANALYZE")
    return out


def pgvector_version(host: str) -> str | None:
    import psycopg

    with psycopg.connect(host=host, user="postgres", dbname="postgres") as conn:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()
    return row[0] if row else None


# ----------------------------------------------------------------------------- child
def face_calls(host: str, fetch_k: int, k: int, methods: list[str], qvecs: dict[str, list[float]]
               ) -> tuple[dict[str, dict[str, Callable[[str], Any]]], Callable[[], None]]:
    """The timed calls per face, built with the faces on this process's path (the tree under test)."""
    from langchain_postgres import PGVector
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import QueryBundle
    from llama_index.vector_stores.postgres import PGVectorStore

    from langchain_diverse import DiverseRetriever as LCRetriever
    from llamaindex_diverse import DiverseRetriever as LIRetriever

    lookup = LookupEmbeddings(qvecs)
    dim = len(next(iter(qvecs.values())))
    u = urls(host, max(40, fetch_k))
    lc = PGVector(langchain_embeddings(lookup), connection=u["psycopg"], collection_name="scale",
                  embedding_length=dim, use_jsonb=True)
    li = PGVectorStore(connection_string=u["psycopg2"], async_connection_string=u["asyncpg"],
                       table_name="scale", embed_dim=dim)
    index = VectorStoreIndex.from_vector_store(li, embed_model=llamaindex_embedding(lookup))
    base = index.as_retriever(similarity_top_k=fetch_k)
    lc_div = {m: LCRetriever(vectorstore=lc, k=k, fetch_k=fetch_k, method=m) for m in methods}
    li_div = {m: LIRetriever(base, top_n=k, method=m, embed_model=index._embed_model) for m in methods}

    def bundle(q: str) -> Any:
        return QueryBundle(q, embedding=qvecs[q])

    calls: dict[str, dict[str, Callable[[str], Any]]] = {
        "langchain": {"search": lambda q: lc.similarity_search_by_vector(qvecs[q], k=fetch_k),
                      **{m: (lambda q, r=r: r.invoke(q)) for m, r in lc_div.items()}},
        "llamaindex": {"search": lambda q: base.retrieve(bundle(q)),
                       **{m: (lambda q, r=r: r.retrieve(bundle(q))) for m, r in li_div.items()}},
    }

    def close() -> None:
        lc._engine.dispose()
        if li._engine is not None:
            li._engine.dispose()

    return calls, close


def child_latency(host: str, fetch_k: int, k: int, methods: list[str], queries_file: str, warmup: int
                  ) -> dict[str, Any]:
    data = json.loads(Path(queries_file).read_text(encoding="utf-8"))
    qvecs: dict[str, list[float]] = data["qvecs"]
    queries = list(qvecs)
    calls, close = face_calls(host, fetch_k, k, methods, qvecs)
    times: dict[str, dict[str, list[float]]] = {f: {v: [] for v in vs} for f, vs in calls.items()}
    try:
        for i, q in enumerate(queries):  # the first ``warmup`` untimed
            for face, vs in calls.items():
                names = list(vs)
                for name in names[i % len(names):] + names[: i % len(names)]:
                    t0 = time.perf_counter()
                    out = vs[name](q)
                    dt = (time.perf_counter() - t0) * 1000
                    want = fetch_k if name == "search" else k
                    if len(out) != want:
                        raise RuntimeError(f"{face} {name} returned {len(out)} results, not {want}")
                    if i >= warmup:
                        times[face][name].append(dt)
    finally:
        close()
    import diverse_core

    import langchain_diverse

    return {"times": times, "core": str(Path(diverse_core.__file__).parent),
            "face": str(Path(langchain_diverse.__file__).parent)}


# ----------------------------------------------------------------------------- report
def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    trees = list(dict.fromkeys(r["tree"] for r in rows))
    by = {(r["tree"], r["face"], r["variant"]): r for r in rows}
    keys = list(dict.fromkeys((r["face"], r["variant"]) for r in rows))

    def cells(t: str, key: tuple[str, ...]) -> list[str] | None:
        r, s = by.get((t, *key)), by.get((t, key[0], "search"))
        if r is None:
            return None
        plus = "-" if key[1] == "search" or s is None else f"{100 * (r['median'] / s['median'] - 1):+.0f}%"
        return [f"{r['median']:.2f} ({r['lo']:.2f}-{r['hi']:.2f})", plus]

    def median(t: str, key: tuple[str, ...]) -> float | None:
        r = by.get((t, *key))
        return r["median"] if r else None

    def per_search(t: str, key: tuple[str, ...]) -> float | None:
        r, s = by.get((t, *key)), by.get((t, key[0], "search"))
        return r["median"] / s["median"] if r and s and key[1] != "search" else None

    lines = [START, "## Stores: latency over Postgres + pgvector", "",
             f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/stores.py {meta['argv']}`",
             "", f"Measured {meta['machine']}; {meta['n']:,} vectors (d = {meta['dim']}), HNSW, pgvector "
             f"{meta['pgvector']} (pgserver, unix socket, same machine); fetch_k = {meta['fetch_k']}, "
             f"k = {meta['k']}; {meta['rounds']} rounds x {meta['queries']} queries per tree, trees alternating. "
             "Median ms over every timed call (range of the per-round medians); `+%` against the same tree's search. "
             "With two trees: the ratio of the medians, and the ratio of each tree's median over its own search "
             "(`vs search`: the search runs in the same processes, so a change of machine load weighs on both).",
             "", *ab_table(["face", "variant"], keys, trees, ["ms (rounds)", "+% search"], cells,
                           {"": median, " (vs search)": per_search})]
    return end_section(lines, meta.get("trees"), END)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=30_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--fetch-k", type=int, default=50)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--methods", nargs="+", default=["gmmr", "learned"])
    ap.add_argument("--rounds", type=int, default=4, help="subprocess runs per tree, trees alternating")
    ap.add_argument("--host", default=None, help="a running server's socket folder (default: start pgserver)")
    ap.add_argument("--data-dir", default=None,
                    help="keep pgserver's data here and leave it running; a later run with the same "
                         "--data-dir and --n reuses the rows and indexes")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per subprocess run")
    add_output_arguments(ap)
    add_arguments(ap)
    args = ap.parse_args(argv)

    if args.child is not None:
        host, fetch_k, k, qfile, warmup, *methods = args.child
        print(json.dumps(child_latency(host, int(fetch_k), int(k), methods, qfile, int(warmup))), flush=True)
        return 0


    trees = parse_trees(args.tree)
    texts, vecs, queries, qv = make_data(args.n, args.dim, max(1, args.n // 50), args.warmup + args.queries)
    qvecs = {q: v.tolist() for q, v in zip(queries, qv, strict=True)}
    pooled: dict[tuple[str, str, str], list[float]] = {}
    per_round: dict[tuple[str, str, str], list[float]] = {}
    with server(args.host, args.data_dir) as host, tempfile.TemporaryDirectory() as tmp:
        print("load:", load(host, texts, vecs, LookupEmbeddings(qvecs)), flush=True)
        print("hnsw:", build_hnsw(host), flush=True)
        pgv = pgvector_version(host)
        qfile = Path(tmp) / "queries.json"
        qfile.write_text(json.dumps({"qvecs": qvecs}), encoding="utf-8")
        for rnd in range(args.rounds):
            for tree in (trees if rnd % 2 == 0 else trees[::-1]):
                out = run_child(tree, SCRIPT, [host, str(args.fetch_k), str(args.k), str(qfile), str(args.warmup),
                                               *args.methods], args.timeout)
                if "times" not in out:
                    raise SystemExit(f"tree {tree.name}, round {rnd + 1}: {out.get('status')}")
                for face, vs in out["times"].items():
                    for variant, ts in vs.items():
                        pooled.setdefault((tree.name, face, variant), []).extend(ts)
                        per_round.setdefault((tree.name, face, variant), []).append(statistics.median(ts))
                print(f"round {rnd + 1} {tree.name} ({out['core']}, {out['face']}): " + ", ".join(
                    f"{f} {v} {statistics.median(ts):.2f}" for f, vs in out["times"].items() for v, ts in vs.items()),
                    flush=True)
    rows = [{"tree": t, "face": f, "variant": v, "median": statistics.median(ts),
             "lo": min(per_round[(t, f, v)]), "hi": max(per_round[(t, f, v)]), "calls": len(ts)}
            for (t, f, v), ts in pooled.items()]
    meta = {"argv": " ".join(argv if argv is not None else sys.argv[1:]), "machine": machine_label(),
            "n": args.n, "dim": args.dim, "pgvector": pgv, "fetch_k": args.fetch_k, "k": args.k,
            "rounds": args.rounds, "queries": args.queries,
            "trees": {t.name: str(t.path) for t in trees} if args.tree else None}
    publish(render(rows, meta), START, END, args.results_md, args.json, {"meta": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
