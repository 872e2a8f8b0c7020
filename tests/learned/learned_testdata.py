"""Random candidate texts shared by the learned-selector tests."""

from __future__ import annotations

import numpy as np

__all__ = ["QUESTION", "WORDS", "random_texts"]

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
