"""Issue 24: which persistent store should hold the harness' embedding cache?

Compares, on N texts (default 40,000, d=384, float32) and one fast fake embedder (so the store's
own cost is what is measured), the cold fill (embed + write everything into an empty folder) and
the warm read (a new object / connection reading every vector back as one (N, d) matrix) of:

* ``numpy-shards``: today's :class:`~diverse_core.eval.disk_cache.DiskEmbeddingCache` (atomic
  ``.npz`` shards, now thread- and process-safe);
* ``sqlite-wal``: one SQLite table (sha1 key, vector blob) in WAL mode, the obvious process-safe
  alternative (a minimal store written here for the comparison);
* ``diskcache``: the ``diskcache`` package's ``Cache`` (SQLite index + files; ``pip install diskcache``);
* ``langchain-cbe``: LangChain's ``CacheBackedEmbeddings`` over a ``LocalFileStore`` (one file
  per vector; the LangChain face's maintained option).

It also times the packaged MiniLM on a sample of real-length texts, to put the stores' cost next
to what computing the vectors costs. Run (from the repository root)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=shared:. python benchmarks/cache_store.py --n 40000 --repeats 3 --out /tmp/store
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from diverse_core.eval.disk_cache import DiskEmbeddingCache, text_key

DIM = 384


_TABLE = np.random.default_rng(0).standard_normal((65_536, DIM), dtype=np.float32)


def fake_embed(texts: list[str]) -> np.ndarray:
    """Fast per-text deterministic vectors (a row of a random table picked by the text's sha1)."""
    rows = [int.from_bytes(hashlib.sha1(t.encode()).digest()[:2], "little") for t in texts]
    return _TABLE[rows]


def numpy_shards(folder: Path, texts: list[str]) -> tuple[float, float, np.ndarray]:
    t0 = time.perf_counter()
    DiskEmbeddingCache(fake_embed, "fake", folder, progress=False).embed(texts)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = DiskEmbeddingCache(fake_embed, "fake", folder, progress=False).embed(texts)
    return cold, time.perf_counter() - t0, out


def sqlite_wal(folder: Path, texts: list[str]) -> tuple[float, float, np.ndarray]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vectors.sqlite"
    t0 = time.perf_counter()
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB) WITHOUT ROWID")
    keys = [text_key(t) for t in texts]
    for i in range(0, len(texts), 1024):
        vecs = fake_embed(texts[i : i + 1024])
        with con:
            con.executemany("INSERT OR IGNORE INTO v VALUES (?, ?)",
                            zip(keys[i : i + 1024], (r.tobytes() for r in vecs), strict=True))
    con.close()
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    con = sqlite3.connect(path)
    found: dict[str, bytes] = {}
    for i in range(0, len(keys), 900):
        part = keys[i : i + 900]
        found.update(con.execute(f"SELECT k, vec FROM v WHERE k IN ({','.join('?' * len(part))})", part))
    out = np.frombuffer(b"".join(found[k] for k in keys), dtype=np.float32).reshape(len(keys), DIM)
    con.close()
    return cold, time.perf_counter() - t0, out


def disk_cache_pkg(folder: Path, texts: list[str]) -> tuple[float, float, np.ndarray]:
    import diskcache

    keys = [text_key(t) for t in texts]
    t0 = time.perf_counter()
    with diskcache.Cache(str(folder)) as cache:
        for i in range(0, len(texts), 1024):
            vecs = fake_embed(texts[i : i + 1024])
            with cache.transact():
                for k, r in zip(keys[i : i + 1024], vecs, strict=True):
                    cache.set(k, r.tobytes())
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    with diskcache.Cache(str(folder)) as cache:
        out = np.frombuffer(b"".join(cache[k] for k in keys), dtype=np.float32).reshape(len(keys), DIM)
    return cold, time.perf_counter() - t0, out


def langchain_cbe(folder: Path, texts: list[str]) -> tuple[float, float, np.ndarray]:
    from langchain_classic.embeddings import CacheBackedEmbeddings
    from langchain_classic.storage import LocalFileStore
    from langchain_core.embeddings import Embeddings

    class Fake(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return fake_embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return fake_embed([text])[0].tolist()

    def make() -> CacheBackedEmbeddings:
        return CacheBackedEmbeddings.from_bytes_store(
            Fake(), LocalFileStore(str(folder)), namespace="fake", batch_size=1024, key_encoder="sha256"
        )

    t0 = time.perf_counter()
    make().embed_documents(texts)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = np.asarray(make().embed_documents(texts), dtype=np.float32)
    return cold, time.perf_counter() - t0, out


STORES: dict[str, Callable[[Path, list[str]], tuple[float, float, np.ndarray]]] = {
    "numpy-shards": numpy_shards,
    "sqlite-wal": sqlite_wal,
    "diskcache": disk_cache_pkg,
    "langchain-cbe": langchain_cbe,
}


def minilm_rate(sample: int) -> float | None:
    """Texts per second of the packaged MiniLM on ``sample`` paragraph-length texts."""
    try:
        from diverse_core.embedders import get_default_embedder

        model = get_default_embedder()
    except Exception:  # noqa: BLE001 - the embeddings extra is optional here
        return None
    words = "the river flows past the old town and the bridge crosses it near the mill".split()
    texts = [" ".join(words[(i + j) % len(words)] for j in range(90)) + f" {i}" for i in range(sample)]
    model(texts[:8])  # load + warm up
    t0 = time.perf_counter()
    model(texts)
    return sample / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, default=40_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stores", nargs="+", default=list(STORES))
    ap.add_argument("--minilm-sample", type=int, default=256)
    ap.add_argument("--out", type=Path, default=Path("/tmp/diverse-rag-store-bench"))
    args = ap.parse_args()
    texts = [f"passage {i}: " + "lorem ipsum " * (i % 7) for i in range(args.n)]
    print(f"| store ({args.n} texts, d={DIM}, fake embedder) | cold fill s (median of {args.repeats}) "
          f"| warm read s (median) | warm read s (best) |")
    print("|---|---:|---:|---:|")
    reference = None
    for name in args.stores:
        colds, warms = [], []
        try:
            for r in range(args.repeats):
                folder = args.out / f"{name}-{r}"
                shutil.rmtree(folder, ignore_errors=True)
                cold, warm, got = STORES[name](folder, texts)
                if reference is None:
                    reference = got
                elif not np.array_equal(got, reference):
                    raise AssertionError(f"{name}: vectors differ from numpy-shards")
                colds.append(cold)
                warms.append(warm)
                shutil.rmtree(folder, ignore_errors=True)
        except ImportError as exc:
            print(f"| {name} | not installed ({exc}) | | |")
            continue
        print(f"| {name} | {statistics.median(colds):.2f} | {statistics.median(warms):.3f} | {min(warms):.3f} |")
    rate = minilm_rate(args.minilm_sample) if args.minilm_sample else None
    if rate is not None:
        print(f"\nMiniLM (packaged all-MiniLM-L6-v2, CPU): {rate:.0f} texts/s on {args.minilm_sample} "
              f"~90-word texts -> about {args.n / rate:.0f} s to embed {args.n} texts")


if __name__ == "__main__":
    main()
