"""The persistent embedding cache: a second run embeds nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError
from diverse_core.eval.disk_cache import DiskEmbeddingCache


def test_second_run_embeds_nothing(tmp_path: Path, fake_embedder: Any, make_fake: Any) -> None:
    texts = [f"text {i}" for i in range(25)] + ["text 3"]
    first = DiskEmbeddingCache(fake_embedder, "fake", tmp_path, batch_size=10, progress=False)
    a = first.embed(texts)
    assert first.embedded == 25 and fake_embedder.calls == [10, 10, 5]
    again = make_fake()
    second = DiskEmbeddingCache(again, "fake", tmp_path, progress=False)
    b = second.embed(list(reversed(texts)))
    assert again.calls == [] and second.embedded == 0 and second.hits == 26
    np.testing.assert_array_equal(b, a[::-1])
    # a new text is embedded alone; the model name separates caches
    second.embed(["new one", "text 1"])
    assert again.calls == [1]
    other = DiskEmbeddingCache(make_fake(), "other-model", tmp_path, progress=False)
    other.embed(["text 1"])
    assert other.embedded == 1


def test_many_shards_are_merged(tmp_path: Path, fake_embedder: Any, make_fake: Any) -> None:
    cache = DiskEmbeddingCache(fake_embedder, "fake", tmp_path, batch_size=1, progress=False, merge_above=4)
    vecs = cache.embed([f"t{i}" for i in range(9)])
    assert len(list((tmp_path / "fake").glob("shard-*.npz"))) == 1
    fresh = DiskEmbeddingCache(make_fake(), "fake", tmp_path, progress=False)
    np.testing.assert_array_equal(fresh.embed([f"t{i}" for i in range(9)]), vecs)
    assert len(fresh) == 9


def test_bad_embedder_output(tmp_path: Path) -> None:
    cache = DiskEmbeddingCache(lambda ts: np.zeros((1, 3)), "bad", tmp_path, progress=False)
    with pytest.raises(DimensionMismatchError, match="2 texts"):
        cache.embed(["a", "b"])
    with pytest.raises(ValueError, match="model_name"):
        DiskEmbeddingCache(lambda ts: ts, "///", tmp_path)
