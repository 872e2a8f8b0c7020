"""Rows a :class:`~diverse_core.eval.disk_cache.DiskEmbeddingCache` holds in memory when two
processes share one cache folder (issue 46, item 3).

Two worker processes (``multiprocessing``, spawn) each hold one cache over the same folder. In
each round, taken in turn, a worker embeds three new texts of its own and one text of the other
(so it reads the other's shards), merging its shards once it knows more than four. At the end
each reports the vector rows it holds, printed against the distinct texts.

Run: ``PYTHONPATH=shared python benchmarks/disk_cache_sharing.py``
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import sys
import tempfile
from multiprocessing.connection import Connection

import numpy as np


def fake(texts: list[str]) -> np.ndarray:
    """Deterministic 8-d vectors from each text's sha1."""
    return np.array([np.random.default_rng(int(hashlib.sha1(t.encode()).hexdigest()[:8], 16)).normal(size=8)
                     for t in texts], np.float32)


def worker(name: str, other: str, folder: str, conn: Connection) -> None:
    from diverse_core.eval.disk_cache import DiskEmbeddingCache

    cache = DiskEmbeddingCache(fake, "fake", folder, batch_size=2, progress=False, merge_above=4)
    while (msg := conn.recv()) is not None:
        cache.embed([f"{name}{msg}-{i}" for i in range(3)])
        cache.embed([f"{other}0-0"])  # reads the other's shards
        conn.send(True)
    conn.send((len(cache), sum(block.shape[0] for block in cache._blocks)))


def main() -> None:
    ctx = mp.get_context("spawn")
    for rounds in (50, 100, 200):
        with tempfile.TemporaryDirectory() as folder:
            ends, procs = [], []
            for name, other in (("a", "b"), ("b", "a")):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=worker, args=(name, other, folder, theirs))
                proc.start()
                ends.append(mine)
                procs.append(proc)
            for r in range(rounds):
                for end in ends:
                    end.send(r)
                    end.recv()
            held = []
            for end, proc in zip(ends, procs, strict=True):
                end.send(None)
                held.append(end.recv())
                proc.join()
            distinct = 2 * 3 * rounds
            worst = max(rows for _, rows in held)
            print(f"{rounds} rounds: {distinct} distinct texts; rows held a={held[0][1]} b={held[1][1]} "
                  f"({worst / distinct:.1f}x the distinct texts)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
