"""The disk embedding cache on storage that fails (issue 46, item 3): a folder that cannot be
written, a full disk, a folder shared by two processes, a shard of another dimension, and a text
with no UTF-8 encoding."""

from __future__ import annotations

import errno
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core import errors
from diverse_core.eval import disk_cache
from diverse_core.eval.disk_cache import DiskEmbeddingCache


def _full_disk(monkeypatch: pytest.MonkeyPatch, code: int = errno.ENOSPC) -> list[Path]:
    """Make every shard write put a few bytes down and then fail with ``code``; returns the paths tried."""
    tried: list[Path] = []

    def savez(path: Any, **arrays: Any) -> None:
        tried.append(Path(path))
        Path(path).write_bytes(b"PK\x03\x04partial")
        raise OSError(code, "No space left on device" if code == errno.ENOSPC else "Read-only file system")

    monkeypatch.setattr(disk_cache.np, "savez", savez)
    return tried


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_failed_writes_return_vectors_warn_once_and_leave_no_temporary_file(
    tmp_path: Path, fake_embedder: Any, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    tried = _full_disk(monkeypatch, code)
    cache = DiskEmbeddingCache(fake_embedder, "fake", tmp_path, batch_size=2, progress=False)
    texts = [f"t{i}" for i in range(7)]
    with pytest.warns(RuntimeWarning, match="cannot be written") as caught:
        first = cache.embed(texts)
        again = cache.embed(texts + ["t8", "t9"])
    assert len([w for w in caught if "cannot be written" in str(w.message)]) == 1
    assert len(tried) == 1 and not cache.writable  # one failed try, then nothing more is written
    np.testing.assert_array_equal(first, fake_embedder(texts))
    np.testing.assert_array_equal(again[:7], first)  # kept in memory: not embedded again
    assert cache.embedded == 9 and len(cache) == 9
    assert not list((tmp_path / "fake").glob("tmp-*")) and not list((tmp_path / "fake").glob("*.npz"))


def test_unwritable_folder_that_cannot_be_created(tmp_path: Path, fake_embedder: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = DiskEmbeddingCache(fake_embedder, "fake", blocker, progress=False)
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        out = cache.embed(["a", "b"])
    assert out.shape == (2, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.embed(["c"])  # no second warning


def test_failed_merge_keeps_the_shards(tmp_path: Path, fake_embedder: Any, make_fake: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    DiskEmbeddingCache(fake_embedder, "fake", tmp_path, batch_size=1, progress=False, merge_above=100).embed(
        [f"t{i}" for i in range(6)])
    shards = sorted((tmp_path / "fake").glob("shard-*.npz"))
    _full_disk(monkeypatch)
    reader = DiskEmbeddingCache(make_fake(), "fake", tmp_path, progress=False, merge_above=2)
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        reader.embed(["t0", "new"])
    assert sorted((tmp_path / "fake").glob("shard-*.npz")) == shards  # nothing merged away
    assert not list((tmp_path / "fake").glob("tmp-*"))


def _held(cache: DiskEmbeddingCache) -> int:
    """Vector rows the cache holds in memory."""
    return sum(block.shape[0] for block in cache._blocks)


def test_two_processes_sharing_a_folder_hold_each_text_once(tmp_path: Path, make_fake: Any) -> None:
    # Two cache objects share nothing but the folder, like two processes. Each round both embed
    # a few new texts; each merges its shards (which include the other's) once there are many.
    a = DiskEmbeddingCache(make_fake(), "fake", tmp_path, batch_size=2, progress=False, merge_above=4)
    b = DiskEmbeddingCache(make_fake(), "fake", tmp_path, batch_size=2, progress=False, merge_above=4)
    distinct: set[str] = set()
    for round_ in range(50):
        for name, cache in (("a", a), ("b", b)):
            texts = [f"{name}{round_}-{i}" for i in range(3)] + sorted(distinct)[:2]
            distinct.update(texts)
            cache.embed(texts)
            cache.embed(["b0-0"] if name == "a" else ["a0-0"])  # reads the other's shards
    for cache in (a, b):
        assert len(cache) == len(distinct)
        assert _held(cache) == len(distinct)  # base: 6x and more after 50 rounds


def test_shard_of_another_dimension_is_skipped_with_its_name(tmp_path: Path, make_fake: Any) -> None:
    DiskEmbeddingCache(make_fake(32), "fake", tmp_path, progress=False).embed(["a", "b"])
    DiskEmbeddingCache(make_fake(8), "fake2", tmp_path, progress=False).embed(["c"])
    foreign = next((tmp_path / "fake2").glob("shard-*.npz"))
    target = tmp_path / "fake" / "shard-99999999999999999999-foreign.npz"
    with np.load(foreign) as data:
        np.savez(target, keys=data["keys"], vectors=data["vectors"], model=np.array("fake"))
    cache = DiskEmbeddingCache(make_fake(32), "fake", tmp_path, progress=False)
    with pytest.warns(UserWarning, match=r"shard-99999999999999999999-foreign\.npz.*dimension 8"):
        out = cache.embed(["a", "b", "c"])
    assert out.shape == (3, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.embed(["d", "c"]).shape == (2, 32)  # later calls work, no warning again


def test_foreign_dimension_read_first_gives_way_to_the_model(tmp_path: Path, make_fake: Any) -> None:
    DiskEmbeddingCache(make_fake(8), "fake", tmp_path, progress=False).embed(["x"])
    cache = DiskEmbeddingCache(make_fake(32), "fake", tmp_path, progress=False)
    with pytest.warns(UserWarning, match=r"dimension 8 \(.*shard-.*\.npz\)"):
        out = cache.embed(["x", "y"])
    assert out.shape == (2, 32)
    np.testing.assert_array_equal(out, make_fake(32)(["x", "y"]))


def test_lone_surrogate_is_a_typed_error_naming_the_record(tmp_path: Path, fake_embedder: Any) -> None:
    cache = DiskEmbeddingCache(fake_embedder, "fake", tmp_path, progress=False)
    with pytest.raises(getattr(errors, "InvalidTextError", ()), match=r"text 2 .*'\\ud800' at character 3"):
        cache.embed(["fine", "also fine", "bad\ud800text"])
    with pytest.raises(getattr(errors, "InvalidTextError", ()), match="text 1 is not a string"):
        cache.embed(["fine", None])  # type: ignore[list-item]
    assert fake_embedder.calls == []


def test_in_memory_cache_names_a_lone_surrogate_too() -> None:
    from diverse_core.embedding_cache import EmbeddingCache

    calls: list[list[str]] = []
    cache = EmbeddingCache(lambda ts: calls.append(list(ts)) or [[1.0, 0.0]] * len(ts))
    with pytest.raises(getattr(errors, "InvalidTextError", ()), match=r"text 3 is not valid Unicode"):
        cache.embed(["a", "b", "a", "x\udfff"])
    assert calls == [] and cache.embed(["a"]).shape == (1, 2)
