"""A corpus with known answers and counting embedders for the Postgres tests.

The query "q" points along the first axis. Three near-duplicates are the most relevant,
"bridge" is less relevant but covers another direction, and a few hundred filler
documents point away from the query (negative first component), so every search with
``fetch_k >= 4`` finds the duplicates and the bridge first. A diverse k=2 selection
returns one duplicate, then the bridge; a top-k one returns two duplicates.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np

DIM = 16
N_FILLER = 300


def _unit(v: np.ndarray) -> list[float]:
    return (v / np.linalg.norm(v)).astype(float).tolist()


def _planted() -> dict[str, list[float]]:
    base = np.zeros((5, DIM))
    base[0, :2] = [0.9, 0.436]
    base[1, :3] = [0.9, 0.43, 0.01]
    base[2, [0, 1, 3]] = [0.9, 0.433, 0.01]
    base[3, [0, 2]] = [0.7, 0.714]
    base[4, [0, 4]] = [0.05, 1.0]
    names = ["dup a", "dup b", "dup c", "bridge", "noise"]
    return {n: _unit(v) for n, v in zip(names, base, strict=True)}


def _filler() -> dict[str, list[float]]:
    rng = np.random.default_rng(7)
    out = {}
    for i in range(N_FILLER):
        v = np.zeros(DIM)
        v[5:] = rng.normal(size=DIM - 5)
        v = 0.436 * v / np.linalg.norm(v)
        v[0] = -0.9  # away from the query and from the planted documents
        out[f"filler document {i}"] = _unit(v)
    return out


PLANTED = _planted()
TABLE: dict[str, list[float]] = {"q": _unit(np.eye(DIM)[0]), **PLANTED, **_filler()}
CORPUS = [t for t in TABLE if t != "q"]
DUPS = {"dup a", "dup b", "dup c"}


def vector_of(text: str) -> list[float]:
    """The table's vector, else a unit vector seeded by the text's hash (e.g. DR-RAG's
    concatenated stage-2 queries)."""
    if text in TABLE:
        return list(TABLE[text])
    seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=DIM)
    v[0] = abs(v[0]) + 0.5  # near the query side, so stage-2 searches find the planted docs
    return _unit(v)


class Calls:
    """What an embedder was asked: query texts and document texts, sync and async."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: Counter[str] = Counter()

    def clear(self) -> None:
        self.queries.clear()
        self.documents.clear()
