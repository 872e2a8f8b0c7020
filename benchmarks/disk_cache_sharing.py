"""Rows a :class:`~diverse_core.eval.disk_cache.DiskEmbeddingCache` holds in memory when two caches
share one folder (issue 46, item 3).

Two cache objects share nothing but the folder, as two processes would; each round each embeds
three new texts and one text of the other (so it reads the other's shards), merging its shards
once it knows more than four. Prints the rows each holds against the distinct texts.

Run: ``PYTHONPATH=shared python benchmarks/disk_cache_sharing.py``
"""

import hashlib
import tempfile

import numpy as np
from diverse_core.eval.disk_cache import DiskEmbeddingCache


def fake(ts):
    """Deterministic 8-d vectors from each text's sha1."""
    return np.array([np.random.default_rng(int(hashlib.sha1(t.encode()).hexdigest()[:8], 16)).normal(size=8)
                     for t in ts], np.float32)


for rounds in (50, 100, 200):
    with tempfile.TemporaryDirectory() as d:
        a = DiskEmbeddingCache(fake, "fake", d, batch_size=2, progress=False, merge_above=4)
        b = DiskEmbeddingCache(fake, "fake", d, batch_size=2, progress=False, merge_above=4)
        distinct = set()
        for r in range(rounds):
            for name, c in (("a", a), ("b", b)):
                texts = [f"{name}{r}-{i}" for i in range(3)]
                distinct.update(texts)
                c.embed(texts)
                c.embed(["b0-0"] if name == "a" else ["a0-0"])  # reads the other's shards
        held = [sum(x.shape[0] for x in c._blocks) for c in (a, b)]
        print(f"{rounds} rounds: distinct {len(distinct)}, rows held a={held[0]} b={held[1]} ({max(held)/len(distinct):.1f}x)")
