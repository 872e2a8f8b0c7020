"""Shared fixtures of the evaluation-harness tests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    env = os.environ.get("DIVERSE_RAG_DATA")
    return Path(env) if env else (REPO / ".." / "shared" / "data").resolve()


@pytest.fixture
def real_data() -> Path:
    path = data_dir()
    if not (path / "hotpotqa" / "hotpot.json").is_file():
        pytest.skip(f"benchmark data not found at {path} (set DIVERSE_RAG_DATA)")
    return path


class FakeEmbedder:
    """Deterministic 32-d unit vectors from the sha1 of each text; counts what it embeds."""

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim
        self.calls: list[int] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int(hashlib.sha1(t.encode("utf-8")).hexdigest()[:12], 16)
            v = np.random.default_rng(seed).normal(size=self.dim)
            out[i] = v / np.linalg.norm(v)
        return out

    @property
    def embedded(self) -> int:
        return sum(self.calls)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def make_fake() -> type[FakeEmbedder]:
    """The fake embedder class, for tests that need several instances."""
    return FakeEmbedder
