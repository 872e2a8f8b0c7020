"""Random candidate texts shared by the learned-selector tests."""

from __future__ import annotations

import numpy as np

__all__ = ["QUESTION", "WORDS", "random_texts", "reference_scale"]

WORDS = ["river", "bridge", "Paris", "Lyon", "novel", "author", "born", "France", "Seine", "Dune", "Herbert"]
QUESTION = "Where was the author of Dune born, near which river in France?"


def random_texts(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` texts of a few :data:`WORDS`, most with a ``"title: "`` prefix (titles shared between texts)."""
    titles = ["Dune", "Paris", "Herbert", "Seine", ""]
    texts = []
    for _ in range(n):
        body = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 8))))
        t = titles[int(rng.integers(0, len(titles)))]
        texts.append(f"{t}: {body}." if t else body + ".")
    return texts


def reference_scale(unit: np.ndarray, rel: np.ndarray) -> tuple[float, float, float, float]:
    """(relevance slope, offset, pair slope, offset) of a pool's common scale, from every pair listed one by one
    (written for the tests: a plain reading of :class:`~diverse_core.trained.scale.PoolScale`)."""
    from diverse_core.trained.scale import REFERENCE

    def affine(values: list[float], target: tuple[float, float]) -> tuple[float, float]:
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        slope = target[1] / std if std > 1e-6 else 1.0
        return slope, target[0] - slope * mean

    n = unit.shape[0]
    pairs = [float(unit[i] @ unit[j]) for i in range(n) for j in range(n) if i != j]
    a_r, b_r = affine([float(r) for r in rel], REFERENCE["relevance"])
    a_s, b_s = affine(pairs, REFERENCE["similarity"]) if pairs else (1.0, 0.0)
    return a_r, b_r, a_s, b_s
