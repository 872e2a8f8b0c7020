"""Issue 24: the embedding caches under many threads, event loops and processes.

The unit-level reproduction of the DR-RAG crash (``IndexError: index 7668 is out of bounds``
in ``DiskEmbeddingCache.embed``): many threads embed new texts through one cache at once, with
a fake embedder that yields the GIL mid-call. Every vector must equal the embedder's, no call
may fail, and every distinct text must be embedded exactly once (also when two threads ask
for the same new text at the same moment).
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing as mp
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.embedding_cache import EmbeddingCache
from diverse_core.eval.disk_cache import DiskEmbeddingCache
from diverse_core.pipelines import InMemorySource

DIM = 16


def vector_of(text: str) -> np.ndarray:
    seed = int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:12], 16)
    return np.random.default_rng(seed).normal(size=DIM).astype(np.float32)


class SlowFake:
    """Deterministic per-text vectors; sleeps inside each call (threads interleave); counts texts."""

    def __init__(self, delay: float = 0.002) -> None:
        self.delay = delay
        self.seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.seen.update(texts)
        time.sleep(self.delay)
        return np.stack([vector_of(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    async def acall(self, texts: list[str]) -> np.ndarray:
        await asyncio.sleep(self.delay)
        with self._lock:
            self.seen.update(texts)
        return np.stack([vector_of(t) for t in texts])


def _requests(n_threads: int, per_thread: int, shared: int) -> list[list[str]]:
    """Each thread: some texts of its own, some every thread asks for, in a thread-specific order."""
    out = []
    for t in range(n_threads):
        own = [f"thread {t} text {i}" for i in range(per_thread)]
        common = [f"common text {i}" for i in range(shared)]
        texts = own + common
        rng = np.random.default_rng(t)
        out.append([texts[i] for i in rng.permutation(len(texts))])
    return out


def _hammer(embed: Any, requests: list[list[str]], chunk: int) -> list[tuple[list[str], np.ndarray]]:
    start = threading.Barrier(len(requests))

    def work(texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        start.wait()
        return [(texts[i : i + chunk], embed(texts[i : i + chunk])) for i in range(0, len(texts), chunk)]

    with ThreadPoolExecutor(len(requests)) as pool:
        results = list(pool.map(work, requests, timeout=120))
    return [pair for r in results for pair in r]


def _check(pairs: list[tuple[list[str], np.ndarray]], fake: SlowFake) -> None:
    for texts, got in pairs:
        assert got.shape == (len(texts), DIM)
        np.testing.assert_array_equal(got, np.stack([vector_of(t) for t in texts]))
    twice = {t: n for t, n in fake.seen.items() if n > 1}
    assert not twice, f"{len(twice)} texts embedded more than once, e.g. {next(iter(twice.items()))}"


def test_disk_cache_many_threads_new_texts_no_race(tmp_path: Path) -> None:
    """The reported race: concurrent embeds of new texts through one DiskEmbeddingCache."""
    fake = SlowFake()
    cache = DiskEmbeddingCache(fake, "fake", tmp_path, progress=False, batch_size=3, merge_above=4)
    pairs = _hammer(cache.embed, _requests(16, 12, 8), chunk=3)
    _check(pairs, fake)
    assert cache.embedded == len(fake.seen)
    fresh = DiskEmbeddingCache(fake, "fake", tmp_path, progress=False)
    texts = sorted(fake.seen)
    np.testing.assert_array_equal(fresh.embed(texts), np.stack([vector_of(t) for t in texts]))
    assert fresh.embedded == 0


def test_memory_cache_same_new_text_from_many_threads_is_embedded_once() -> None:
    fake = SlowFake()
    cache = EmbeddingCache(fake, maxsize=10_000)
    pairs = _hammer(cache.embed, _requests(16, 6, 10), chunk=4)
    _check(pairs, fake)


def test_memory_cache_bounded_lru_under_threads_stays_consistent() -> None:
    """A cache far smaller than the texts (constant eviction): every vector still right."""
    fake = SlowFake(delay=0.0005)
    cache = EmbeddingCache(fake, maxsize=7)
    for texts, got in _hammer(cache.embed, _requests(12, 10, 5), chunk=3):
        np.testing.assert_array_equal(got, np.stack([vector_of(t) for t in texts]))
    assert len(cache) <= 7


def test_memory_cache_async_and_threads_mixed_embed_once() -> None:
    """Coroutines on two event loops and plain threads ask for the same new texts at once."""
    fake = SlowFake()
    cache = EmbeddingCache(fake, maxsize=10_000)
    texts = [f"shared {i}" for i in range(20)]
    results: list[tuple[list[str], np.ndarray]] = []
    lock = threading.Lock()

    def loop_worker(seed: int) -> None:
        async def main() -> None:
            order = [texts[i] for i in np.random.default_rng(seed).permutation(len(texts))]
            outs = await asyncio.gather(*(cache.aembed(order[i : i + 5], fake.acall) for i in range(0, 20, 5)))
            with lock:
                results.extend((order[i : i + 5], o) for i, o in zip(range(0, 20, 5), outs, strict=True))

        asyncio.run(main())

    def thread_worker(seed: int) -> None:
        order = [texts[i] for i in np.random.default_rng(seed).permutation(len(texts))]
        got = cache.embed(order)
        with lock:
            results.append((order, got))

    workers = [threading.Thread(target=loop_worker, args=(s,)) for s in range(2)]
    workers += [threading.Thread(target=thread_worker, args=(s + 10,)) for s in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    _check(results, fake)
    assert len(results) == 2 * 4 + 6


def test_failed_owner_does_not_poison_waiters() -> None:
    """A thread whose embedder call fails: threads waiting for the same texts embed them themselves."""
    calls = Counter[str]()
    gate = threading.Event()

    def flaky(texts: list[str]) -> np.ndarray:
        calls.update(texts)
        if threading.current_thread().name == "owner":
            gate.wait(2)
            raise RuntimeError("model crashed")
        return np.stack([vector_of(t) for t in texts])

    cache = EmbeddingCache(flaky)
    errors: list[BaseException] = []

    def owner() -> None:
        try:
            cache.embed(["x", "y"])
        except RuntimeError as exc:
            errors.append(exc)

    t = threading.Thread(target=owner, name="owner")
    t.start()
    while not calls:
        time.sleep(0.001)
    got: list[np.ndarray] = []
    waiter = threading.Thread(target=lambda: got.append(cache.embed(["y", "x"])))
    waiter.start()
    time.sleep(0.05)
    gate.set()
    t.join()
    waiter.join()
    assert len(errors) == 1 and "model crashed" in str(errors[0])
    np.testing.assert_array_equal(got[0], np.stack([vector_of("y"), vector_of("x")]))


def test_inmemory_source_concurrent_new_queries_on_disk_cache(tmp_path: Path) -> None:
    """The DR-RAG path: InMemorySource -> EmbeddingCache -> DiskEmbeddingCache from many threads."""
    fake = SlowFake()
    disk = DiskEmbeddingCache(fake, "fake", tmp_path, progress=False, batch_size=2)
    corpus = [f"passage {i}" for i in range(40)]
    src = InMemorySource(corpus, disk.embed, embeddings=np.stack([vector_of(t) for t in corpus]))
    queries = [f"query {i % 12}" for i in range(48)]
    with ThreadPoolExecutor(16) as pool:
        found = list(pool.map(lambda q: src.search(q, k=5), queries))
    serial_src = InMemorySource(corpus, lambda ts: np.stack([vector_of(t) for t in ts]),
                                embeddings=np.stack([vector_of(t) for t in corpus]))
    for q, cands in zip(queries, found, strict=True):
        want = serial_src.search(q, k=5)
        assert cands.ids == want.ids
        np.testing.assert_array_equal(cands.query_embedding, want.query_embedding)
    assert max(fake.seen.values()) == 1 and len(fake.seen) == 12


# --- processes ---------------------------------------------------------------------------------


def _fill(folder: str, start: int, n: int, seed: int, out: Any) -> None:
    fake = SlowFake(delay=0.0005)
    cache = DiskEmbeddingCache(fake, "fake", folder, progress=False, batch_size=4, merge_above=3)
    texts = [f"text {i}" for i in range(start, start + n)]
    order = [texts[i] for i in np.random.default_rng(seed).permutation(n)]
    bad = 0
    for i in range(0, n, 5):
        chunk = order[i : i + 5]
        got = cache.embed(chunk)
        bad += int(not np.array_equal(got, np.stack([vector_of(t) for t in chunk])))
    out.put(bad)


def test_two_processes_fill_one_folder(tmp_path: Path) -> None:
    """Two processes embed overlapping texts into one folder (writing and merging shards at once):
    no half-written shard is ever read, and the folder ends holding every text, right."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_fill, args=(str(tmp_path), s, 60, s, out)) for s in (0, 30)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert [out.get(timeout=5), out.get(timeout=5)] == [0, 0]
    fake = SlowFake(delay=0)
    fresh = DiskEmbeddingCache(fake, "fake", tmp_path, progress=False)
    texts = [f"text {i}" for i in range(90)]
    np.testing.assert_array_equal(fresh.embed(texts), np.stack([vector_of(t) for t in texts]))
    assert fresh.embedded == 0
    assert not list((tmp_path / "fake").glob("*tmp*"))


def test_half_written_and_foreign_shards_are_never_read(tmp_path: Path) -> None:
    fake = SlowFake(delay=0)
    a = DiskEmbeddingCache(fake, "model-a", tmp_path, progress=False)
    a.embed(["x"])
    folder = tmp_path / "model-a"
    # a shard another process is still writing (what np.savez leaves before the rename)
    (folder / "shard-99999999999999999999-deadbeef.tmp.npz").write_bytes(b"PK\x03\x04 half")
    # a truncated shard (a crash on a file system without atomic rename)
    (folder / "shard-99999999999999999998-cafecafe.npz").write_bytes(b"PK\x03\x04 trunc")
    # a shard of another model whose name maps to the same folder ("model/a" -> "model_a" ...)
    b = DiskEmbeddingCache(lambda ts: np.ones((len(ts), DIM), np.float32), "model?a", tmp_path, progress=False)
    assert b.folder != folder
    b.folder = folder  # force the slug collision
    b.embed(["y"])
    with pytest.warns(UserWarning):
        fresh = DiskEmbeddingCache(fake, "model-a", tmp_path, progress=False)
        got = fresh.embed(["x", "y"])
    np.testing.assert_array_equal(got, np.stack([vector_of("x"), vector_of("y")]))
    assert fresh.embedded == 1  # "y" of the foreign model is not reused


def test_old_cache_folder_is_read_as_is(tmp_path: Path) -> None:
    """A folder written by earlier versions (shards without the model field) is read unchanged."""
    from diverse_core.eval.disk_cache import text_keys

    folder = tmp_path / "fake"
    folder.mkdir()
    texts = ["old a", "old b"]
    np.savez(folder / "shard-00000000000000000001-00000000.npz",
             keys=np.array(text_keys(texts), dtype="S40"),
             vectors=np.stack([vector_of(t) for t in texts]))
    fake = SlowFake(delay=0)
    cache = DiskEmbeddingCache(fake, "fake", tmp_path, progress=False)
    np.testing.assert_array_equal(cache.embed(texts), np.stack([vector_of(t) for t in texts]))
    assert cache.embedded == 0


def test_adaptive_selector_file_is_loaded_once_under_threads(monkeypatch: Any, tmp_path: Path) -> None:
    from diverse_core.adaptive import selector as sel

    loads: list[str] = []
    real = sel.AdaptiveSelector.load

    def counting(path: Any) -> Any:
        loads.append(str(path))
        time.sleep(0.05)
        return real(path)

    monkeypatch.setattr(sel.AdaptiveSelector, "load", staticmethod(counting))
    monkeypatch.setattr(sel, "_LOADED", type(sel._LOADED)())
    target = tmp_path / "m.npz"
    import shutil

    shutil.copy(sel.DEFAULT_MODEL, target)
    for extra in sel.DEFAULT_MODEL.parent.glob(sel.DEFAULT_MODEL.stem + "*"):
        shutil.copy(extra, tmp_path / extra.name.replace(sel.DEFAULT_MODEL.stem, "m"))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: sel.load_selector(target), range(16)))
    assert len(loads) == 1 and all(g is got[0] for g in got)


def test_sync_call_inside_the_loop_never_waits_on_a_suspended_coroutine() -> None:
    """A coroutine owns a new text and is suspended in its model call; a sync embed of that text on
    the same (event-loop) thread must compute it itself instead of blocking the loop forever."""
    fake = SlowFake(delay=0)
    cache = EmbeddingCache(fake)
    seen_sync: list[np.ndarray] = []

    async def slow_model(texts: list[str]) -> np.ndarray:
        seen_sync.append(cache.embed(texts))  # sync call on the loop thread while "x" is in flight
        return np.stack([vector_of(t) for t in texts])

    got = asyncio.run(asyncio.wait_for(cache.aembed(["x"], slow_model), 10))
    np.testing.assert_array_equal(got[0], vector_of("x"))
    np.testing.assert_array_equal(seen_sync[0][0], vector_of("x"))


def test_disk_cache_reentrant_embed_does_not_hang(tmp_path: Path) -> None:
    holder: list[DiskEmbeddingCache] = []

    def reentrant(texts: list[str]) -> np.ndarray:
        if texts == ["outer"] and len(holder) == 1:
            holder.append(holder[0])  # re-enter once
            holder[0].embed(["outer"])  # the same key, from inside its own embedding call
        return np.stack([vector_of(t) for t in texts])

    holder.append(DiskEmbeddingCache(reentrant, "fake", tmp_path, progress=False))
    np.testing.assert_array_equal(holder[0].embed(["outer"])[0], vector_of("outer"))


def test_models_that_cannot_be_weakly_referenced_keep_their_caches() -> None:
    """A model without ``__weakref__`` is held (with its caches) in a bounded LRU: the same caches
    while held, never another model's."""
    from diverse_core.embedding_cache import STRONG_LIMIT, clear_model_caches, model_caches

    class Slotted:
        __slots__ = ()

    clear_model_caches()
    a, b = Slotted(), Slotted()
    assert model_caches(a) is model_caches(a) and model_caches(a) is not model_caches(b)
    first = model_caches(a)
    for _ in range(STRONG_LIMIT):
        model_caches(Slotted())  # pushes a out of the LRU
    assert model_caches(a) is not first
    clear_model_caches()
