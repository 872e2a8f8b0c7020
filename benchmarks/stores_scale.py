"""Scale on a real Postgres + pgvector: the store's own search vs the same search plus diversity.

``--n`` stored vectors (default 100,000; d = ``--dim``, default 384) are synthetic: unit
vectors around ``--topics`` fixed-seed topic centres (near-duplicates inside a topic),
short texts ``"doc <i> topic <t>"``. Each integration creates its own tables (its own
class), which are then filled by one binary COPY each, into one Postgres server (``pgserver``, started in a temporary folder and removed
afterwards, unless ``--host`` names a running server's socket folder or host):

* LangChain: ``langchain_postgres.PGVector`` (``embedding_length`` set so the column can
  carry an index);
* LlamaIndex: ``llama_index.vector_stores.postgres.PGVectorStore`` (rows with the node
  metadata its ``add`` writes), plus a btree index on ``node_id`` (PGVectorStore makes
  none; without it the read of the candidates' vectors by node id scans the table).

For each index (``--index``: ``exact`` = no index, a sequential scan; ``hnsw`` = pgvector
HNSW, ``vector_cosine_ops``, m=16, ef_construction=64, built after loading, and
``hnsw.ef_search = max(40, fetch_k)`` set per connection so a search can return fetch_k
rows) and each ``fetch_k`` in ``--fetch-k`` (default 50 200), ``--queries`` queries (noisy
topic centres, default 100) are timed, interleaved query by query (k = 10, lambda 0.5):

* ``search``: the store's own similarity search by vector, fetch_k rows
  (LangChain: ``similarity_search_by_vector``; LlamaIndex: ``index.as_retriever(
  similarity_top_k=fetch_k).retrieve`` with the query vector in the bundle);
* ``mmr`` / ``gmmr`` / ``adaptive`` / ``learned``: the faces' ``DiverseRetriever`` over the same store
  (the same search, the candidates' stored vectors, the selection, annotated copies).
  The embedding caches are cleared before every call, so every candidate's vector comes
  from Postgres, with the search rows in both faces (LangChain: the store's own query,
  vector column kept; LlamaIndex: ``PGVectorStore``'s vector-keeping query, the one its
  MMR mode runs, instead of a second read by node id);
* ``builtin mmr``: each integration's own MMR (LangChain
  ``max_marginal_relevance_search_by_vector``; LlamaIndex ``vector_store_query_mode="mmr"``
  with ``mmr_prefetch_k = fetch_k``).

Medians over the queries, in milliseconds; ``+%`` is ``median(diverse) / median(search) - 1``.
Query vectors are looked up, not computed: no model inference is timed.

Run (this machine sets OpenBLAS variables that users don't; one thread)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/stores_scale.py --results-md benchmarks/RESULTS.md

``--data-dir DIR`` keeps the server's data in ``DIR`` and leaves the server running: a later
run with the same ``--data-dir`` and ``--n`` reuses the loaded rows and HNSW indexes
(``--load-only`` loads and indexes, times nothing; ``benchmarks/throughput.py`` reads the
same folder). ``--frameworks`` times only the named faces (their tables alone are loaded and indexed);
``--from-json`` re-renders the section from earlier runs' JSON files, rows of a later file
replacing those of an earlier one with the same framework, index and fetch_k (each row is
labelled with its run).

Needs the ``postgres`` extra and ``pgserver`` (in ``dev``).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "shared", REPO):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

START, END = "<!-- stores-scale:start -->", "<!-- stores-scale:end -->"
METHODS = ("mmr", "gmmr", "adaptive", "learned")
LAMBDA_METHODS = ("mmr", "gmmr")  # the methods given lambda_mult
K = 10
LAMBDA = 0.5


# ----------------------------------------------------------------------------- data
def make_data(n: int, dim: int, topics: int, n_queries: int, seed: int = 0
              ) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
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


def langchain_embeddings(lookup: LookupEmbeddings) -> Any:
    from langchain_core.embeddings import Embeddings

    class _Emb(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("the benchmark must not embed documents")

        def embed_query(self, text: str) -> list[float]:
            return lookup(text)

    return _Emb()


def llamaindex_embedding(lookup: LookupEmbeddings) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class _Emb(BaseEmbedding):
        model_name: str = "lookup"

        def _get_query_embedding(self, query: str) -> list[float]:
            return lookup(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return lookup(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            raise RuntimeError("the benchmark must not embed documents")

        async def _aget_text_embedding(self, text: str) -> list[float]:
            raise RuntimeError("the benchmark must not embed documents")

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
         frameworks: tuple[str, ...] = ("langchain", "llamaindex")) -> dict[str, float]:
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
            # PGVectorStore makes no index on node_id; a postprocessor given the store reads
            # the candidates' vectors by node id (the retriever gets them with the search).
            conn.execute("CREATE INDEX IF NOT EXISTS data_scale_node_id ON data_scale (node_id)")
            conn.commit()
            seconds["llamaindex load"] = time.perf_counter() - t0
    sql(u["psycopg"], "ANALYZE")
    return seconds


def build_hnsw(host: str, frameworks: tuple[str, ...] = ("langchain", "llamaindex")) -> dict[str, float]:
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


# ----------------------------------------------------------------------------- timing
def _with_vectors(base: Any, bundle: Any) -> Any:
    """The search DiverseRetriever runs over PGVectorStore (rows and vectors), nothing else."""
    from llamaindex_diverse._pg_rows import collecting, searching_with_vectors

    stand_in = searching_with_vectors(base, None)
    if stand_in is None:
        raise RuntimeError("PGVectorStore's vector-keeping query is not available")
    with collecting() as found:
        out = stand_in.retrieve(bundle)
    if len(found) != len(out):
        raise RuntimeError(f"{len(found)} vectors for {len(out)} rows")
    return out


def variants(host: str, fetch_k: int, ef_search: int | None, lookup: LookupEmbeddings,
             qvecs: dict[str, list[float]]
             ) -> tuple[dict[str, dict[str, Callable[[str], Any]]], Callable[[], None], Callable[[], None]]:
    from langchain_postgres import PGVector
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import QueryBundle
    from llama_index.vector_stores.postgres import PGVectorStore

    from langchain_diverse import DiverseRetriever as LCRetriever
    from llamaindex_diverse import DiverseRetriever as LIRetriever

    u = urls(host, ef_search)
    lc = PGVector(langchain_embeddings(lookup), connection=u["psycopg"], collection_name="scale",
                  embedding_length=len(next(iter(qvecs.values()))), use_jsonb=True)
    li = PGVectorStore(connection_string=u["psycopg2"], async_connection_string=u["asyncpg"],
                       table_name="scale", embed_dim=len(next(iter(qvecs.values()))))
    index = VectorStoreIndex.from_vector_store(li, embed_model=llamaindex_embedding(lookup))
    base = index.as_retriever(similarity_top_k=fetch_k)
    lc_div = {m: LCRetriever(vectorstore=lc, k=K, fetch_k=fetch_k, method=m,
                             **({"method_params": {"lambda_mult": LAMBDA}} if m in LAMBDA_METHODS else {}))
              for m in METHODS}
    li_div = {m: LIRetriever(base, top_n=K, method=m, embed_model=index._embed_model,
                             **({"method_params": {"lambda_mult": LAMBDA}} if m in LAMBDA_METHODS else {}))
              for m in METHODS}
    li_mmr = index.as_retriever(vector_store_query_mode="mmr", similarity_top_k=K,
                                vector_store_kwargs={"mmr_prefetch_k": fetch_k, "mmr_threshold": LAMBDA})

    def bundle(q: str) -> Any:
        return QueryBundle(q, embedding=qvecs[q])

    out: dict[str, dict[str, Callable[[str], Any]]] = {
        "langchain": {
            "search": lambda q: lc.similarity_search_by_vector(qvecs[q], k=fetch_k),
            **{m: (lambda q, r=r: r.invoke(q)) for m, r in lc_div.items()},
            "builtin mmr": lambda q: lc.max_marginal_relevance_search_by_vector(
                qvecs[q], k=K, fetch_k=fetch_k, lambda_mult=LAMBDA),
        },
        "llamaindex": {
            "search": lambda q: base.retrieve(bundle(q)),
            "search with vectors": lambda q: _with_vectors(base, bundle(q)),
            **{m: (lambda q, r=r: r.retrieve(bundle(q))) for m, r in li_div.items()},
            "builtin mmr": lambda q: li_mmr.retrieve(bundle(q)),
        },
    }

    li_model = index._embed_model

    def reset() -> None:
        """Empty the candidate caches the retrievers hold (each keeps the cache it started with)."""
        for r in lc_div.values():
            r._embedder().document_cache.clear()
        for r in li_div.values():
            r.postprocessor._private()["_cache"].for_model(li_model).cache.clear()

    def close() -> None:
        lc._engine.dispose()
        if li._engine is not None:
            li._engine.dispose()

    return out, reset, close


def time_all(calls: dict[str, dict[str, Callable[[str], Any]]], queries: list[str],
             warmup: int, fetch_k: int, reset: Callable[[], None]) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {fw: {v: [] for v in vs} for fw, vs in calls.items()}
    for i, q in enumerate(queries[:warmup] + queries):
        for fw, vs in calls.items():
            names = list(vs)
            # The first call of a query warms Postgres' buffers for its neighbourhood: rotate the
            # order query by query so no variant is always first.
            for name in names[i % len(names):] + names[: i % len(names)]:
                fn = vs[name]
                reset()  # every candidate vector comes from Postgres
                t0 = time.perf_counter()
                out = fn(q)
                dt = time.perf_counter() - t0
                want = fetch_k if name.startswith("search") else K
                if len(out) != want:
                    raise RuntimeError(f"{fw} {name} returned {len(out)} results, not {want}")
                if i >= warmup:
                    times[fw][name].append(dt * 1000)
    return times


# ----------------------------------------------------------------------------- report
def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [START, "## Postgres + pgvector at scale (issues 27, 35)", "",
             f"{meta['n']:,} stored vectors (d={meta['dim']}, synthetic: {meta['topics']} topics), "
             f"{meta['queries']} queries (medians, ms; k={K}, lambda {LAMBDA}), one pgvector "
             f"{meta['pgvector']} server (pgserver, unix socket, same machine), "
             f"{meta['machine']}. Embedding caches cleared before every call: every candidate vector "
             "is read from Postgres, with the search rows (LangChain: the store's own query; "
             "LlamaIndex: PGVectorStore's vector-keeping query). `+%` = median(search + diversity) / "
             "median(search) - 1; `search with vectors` (LlamaIndex) is that query alone, no selection.",
             ""]
    argv = meta["argv"] if isinstance(meta["argv"], list) else [meta["argv"]]
    prefix = "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 python benchmarks/stores_scale.py "
    if len(argv) == 1:
        lines += [f"Command: {prefix}{argv[0]}`", ""]
    else:
        lines += ["Commands (column `run`):", ""] + [f"{i}. {prefix}{a}`" for i, a in enumerate(argv, 1)] + [""]
    runs = any("run" in r for r in rows)
    lines += [("| run " if runs else "") + "| framework | index | fetch_k | search | search with vectors (+%) "
              "| mmr (+%) | gmmr (+%) | adaptive (+%) | learned (+%) | builtin mmr (+%) |",
              ("|---:" if runs else "") + "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        s = r["search"]

        def cell(name: str, r: dict[str, Any] = r, s: float = s) -> str:
            if name not in r:
                return "-"
            return f"{r[name]:.1f} ({100 * (r[name] / s - 1):+.0f}%)"

        lines.append((f"| {r.get('run', '')} " if runs else "")
                     + f"| {r['framework']} | {r['index']} | {r['fetch_k']} | {s:.1f} | "
                     f"{cell('search with vectors')} | {cell('mmr')} | "
                     f"{cell('gmmr')} | {cell('adaptive')} | {cell('learned')} | {cell('builtin mmr')} |")
    timed = {k: v for k, v in meta["setup"].items() if v >= 1.0}  # under 1 s: reused (--data-dir)
    lines += ["", ("Load and index build (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timed.items()))
              if timed else "Rows and HNSW indexes reused from a kept `--data-dir` (see the note).", ""]
    if meta.get("note"):
        lines += [meta["note"].strip(), ""]
    lines.append(END)
    return "\n".join(lines)


def replace_section(md_path: Path, section: str) -> None:
    replace_section_between(md_path, section, START, END)


def replace_section_between(md_path: Path, section: str, start: str, end: str) -> None:
    """Replace the text from ``start`` to ``end`` in ``md_path`` with ``section`` (or append it)."""
    text = md_path.read_text(encoding="utf-8") if md_path.is_file() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    md_path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--fetch-k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--index", nargs="+", default=["exact", "hnsw"], choices=["exact", "hnsw"])
    ap.add_argument("--frameworks", nargs="+", default=["langchain", "llamaindex"],
                    choices=["langchain", "llamaindex"], help="faces to load and time")
    ap.add_argument("--host", default=None, help="a running server's socket folder (default: start pgserver)")
    ap.add_argument("--data-dir", default=None,
                    help="keep pgserver's data in this folder and leave it running: a later run with the "
                         "same --data-dir and --n reuses the loaded rows and the HNSW indexes")
    ap.add_argument("--load-only", action="store_true", help="load and index, time nothing")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "stores_scale.json"))
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--note", default=None, help="a Markdown file appended to the section")
    ap.add_argument("--from-json", nargs="+", default=None,
                    help="only re-render the section from earlier runs' JSON files (rows concatenated)")
    args = ap.parse_args(argv)

    if args.from_json:
        runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.from_json]
        meta = dict(runs[0]["meta"])
        meta["argv"] = [r["meta"]["argv"] for r in runs]
        meta["setup"] = {}
        for r in runs:
            meta["setup"].update(r["meta"]["setup"])
        meta["note"] = Path(args.note).read_text(encoding="utf-8") if args.note else meta.get("note")
        merged: dict[tuple[str, str, int], dict[str, Any]] = {}
        for number, r in enumerate(runs, 1):
            for row in r["rows"]:
                label = {"run": number} if len(runs) > 1 else {}
                merged[(row["framework"], row["index"], row["fetch_k"])] = {**row, **label}
        order = {"langchain": 0, "llamaindex": 1}
        rows_ = sorted(merged.values(), key=lambda x: (x["index"], x["fetch_k"], order[x["framework"]]))
        section = render(rows_, meta)
        print(section)
        if args.results_md:
            replace_section(Path(args.results_md), section)
        return 0

    frameworks = tuple(args.frameworks)
    texts, vecs, queries, qv = make_data(args.n, args.dim, args.topics, args.queries)
    qvecs = {q: v.tolist() for q, v in zip(queries, qv, strict=True)}
    lookup = LookupEmbeddings(qvecs)
    folder, server = None, None
    if args.host is None:
        import pgserver

        if args.data_dir:  # kept (and left running) for later runs: loads and indexes are reused
            Path(args.data_dir).mkdir(parents=True, exist_ok=True)
            kept = pgserver.get_server(args.data_dir, cleanup_mode=None)
            from urllib.parse import parse_qs, urlsplit

            host = parse_qs(urlsplit(kept.get_uri()).query).get("host", [args.data_dir])[0]
        else:
            folder = tempfile.mkdtemp(prefix="stores-scale-")
            server = pgserver.get_server(folder, cleanup_mode="delete")
            from urllib.parse import parse_qs, urlsplit

            host = parse_qs(urlsplit(server.get_uri()).query).get("host", [folder])[0]
    else:
        host = args.host
    try:
        sql(urls(host, None)["psycopg"], "CREATE EXTENSION IF NOT EXISTS vector")
        setup = load(host, texts, vecs, lookup, frameworks)
        print("loaded:", setup, flush=True)
        rows: list[dict[str, Any]] = []
        for index in args.index:
            if index == "hnsw":
                setup.update(build_hnsw(host, frameworks))
                print("hnsw:", setup, flush=True)
            for fetch_k in ([] if args.load_only else args.fetch_k):
                ef = max(40, fetch_k) if index == "hnsw" else None
                calls, reset, close = variants(host, fetch_k, ef, lookup, qvecs)
                calls = {fw: vs for fw, vs in calls.items() if fw in frameworks}
                try:
                    times = time_all(calls, queries, args.warmup, fetch_k, reset)
                finally:
                    close()
                for fw, per in times.items():
                    row = {"framework": fw, "index": index, "fetch_k": fetch_k,
                           **{name: statistics.median(ts) for name, ts in per.items()}}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        pgv = "0.6.2"
        try:
            from sqlalchemy import create_engine, text

            eng = create_engine(urls(host, None)["psycopg"])
            with eng.connect() as conn:
                pgv = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname='vector'")).scalar()
            eng.dispose()
        except Exception:  # noqa: BLE001 - the version is only a label
            pass
    finally:
        if server is not None:
            server.cleanup()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    if args.load_only:
        return 0
    meta = {"n": args.n, "dim": args.dim, "topics": args.topics, "queries": args.queries,
            "pgvector": pgv, "machine": f"{platform.machine()}, {platform.python_version()}",
            "argv": " ".join(argv if argv is not None else sys.argv[1:]), "setup": setup,
            "note": Path(args.note).read_text(encoding="utf-8") if args.note else None}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1), encoding="utf-8")
    section = render(rows, meta)
    print(section)
    if args.results_md:
        replace_section(Path(args.results_md), section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
