"""Random inputs shared by the adaptive-selector tests."""

from __future__ import annotations

import numpy as np
from diverse_core.adaptive import TextView

__all__ = ["random_view", "unit_rows"]


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to unit length."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def random_view(rng: np.random.Generator, n: int, n_terms: int, n_names: int) -> TextView:
    """A TextView of ``n`` candidates with random hit matrices (``n_terms``/``n_names`` may be 0)."""
    return TextView(
        terms=tuple(f"t{i}" for i in range(n_terms)),
        names=tuple(f"n{i}" for i in range(n_names)),
        term_hits=rng.random((n, n_terms)) < 0.4,
        name_hits=rng.random((n, n_names)) < 0.3,
        other_names=rng.random((n, int(rng.integers(1, 6)))) < 0.3,
    )


_NAMES = ("Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas")
_FILLER = ("river", "castle", "engine", "harvest", "violin", "glacier", "market", "ledger")


def text_questions(
    count: int, n: int = 20, dim: int = 8, seed: int = 0
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[str], list[list[str]]]:
    """``count`` synthetic questions: (queries, candidates, gold_groups, questions, texts).

    Each question asks about two names; its gold candidates (two passages, the first in
    two chunks) mention one of them and a shared bridge name, the others filler words.
    """
    rng = np.random.default_rng(seed)
    queries, cands, groups, questions, texts = [], [], [], [], []
    for _ in range(count):
        a, b, bridge = rng.choice(_NAMES, size=3, replace=False)
        gold = rng.choice(n, size=3, replace=False)
        g = np.full(n, -1)
        g[gold] = [0, 0, 1]
        q = rng.normal(size=dim)
        c = rng.normal(size=(n, dim)) + 0.5 * np.outer(g >= 0, q)
        t = [" ".join(rng.choice(_FILLER, size=4)) for _ in range(n)]
        for j, name in zip(gold, (a, a, b), strict=True):
            t[j] = f"{name} met {bridge} near the {rng.choice(_FILLER)}."
        queries.append(q)
        cands.append(c)
        groups.append(g)
        questions.append(f"Where did {a} and {b} meet?")
        texts.append(t)
    return queries, cands, groups, questions, texts
