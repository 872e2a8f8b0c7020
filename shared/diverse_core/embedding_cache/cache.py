"""The per-text embedding cache: each distinct text embedded once, in batches, its vector reused."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from .inflight import InFlight, Waiting, await_for, ready, wait_for
from .vectors import (
    AsyncEmbedFn,
    EmbedFn,
    KnownAt,
    check_texts,
    checked_vectors,
    finite_rows,
    known_rows,
    merge_known,
)

__all__ = ["EmbeddingCache"]


class EmbeddingCache:
    """Embed texts once per distinct text, in batches, and reuse the vectors.

    Misses of one call are embedded together with a single call of ``embed_fn``
    (deduplicated); the least recently used entries are evicted beyond ``maxsize``.
    Safe to share between threads and event loops: a text that several callers miss at
    once is embedded by the first of them; the others wait for its vector.

    Args:
        embed_fn: ``embed_fn(texts) -> array (len(texts), d)``.
        maxsize: most texts kept (LRU eviction).
        namespace: optional key prefix, e.g. the model name, so one cache can
            never hand out vectors of another model.

    Example:
        >>> calls = []
        >>> def fake(texts):
        ...     calls.append(list(texts))
        ...     return [[float(len(t)), 1.0] for t in texts]
        >>> cache = EmbeddingCache(fake, maxsize=10)
        >>> cache.embed(["a", "bb", "a"]).shape
        (3, 2)
        >>> cache.embed(["bb"]).tolist(), calls
        ([[2.0, 1.0]], [['a', 'bb']])
    """

    def __init__(
        self, embed_fn: EmbedFn | None = None, maxsize: int = 50_000, namespace: str = ""
    ) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize <= 0:
            raise InvalidParameterError(f"maxsize must be a positive integer; got maxsize={maxsize!r}")
        self._embed_fn = embed_fn
        self._maxsize = maxsize
        self.namespace = namespace
        # Vectors live in one growing matrix; ``_slots`` maps text -> row, in LRU order.
        self._matrix: NDArray[np.float32] | None = None
        self._slots: OrderedDict[str, int] = OrderedDict()
        self._free: list[int] = []
        self._lock = threading.Lock()
        self._flight: InFlight[str] = InFlight()
        self.hits = 0
        self.misses = 0

    @property
    def maxsize(self) -> int:
        """Most texts kept (LRU eviction beyond it)."""
        return self._maxsize

    @property
    def dimension(self) -> int | None:
        """Dimension of the cached vectors (``None`` while the cache has never held one)."""
        matrix = self._matrix
        return None if matrix is None else int(matrix.shape[1])

    def grow_to(self, maxsize: int) -> None:
        """Raise the bound to ``maxsize`` (a smaller value leaves it unchanged)."""
        if maxsize > self._maxsize:
            with self._lock:
                self._maxsize = max(self._maxsize, int(maxsize))

    def __len__(self) -> int:
        return len(self._slots)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._slots.clear()
            self._free.clear()
            self._matrix = None

    def embed(
        self,
        texts: Sequence[str],
        embed_fn: EmbedFn | None = None,
        known: KnownAt | None = None,
    ) -> NDArray[np.float32]:
        """Vectors for ``texts`` in order, shape (len(texts), d); misses embedded in one batch.

        Args:
            texts: the texts.
            embed_fn: computes the misses (default: the one given at construction).
            known: ``known(positions)`` returns a vector (or ``None``) for the texts at
                those positions of ``texts``; consulted for cache misses only, before
                ``embed_fn``, which then receives only what is still missing.
        """
        out, missing, where = self._lookup(texts)
        if not missing:
            assert out is not None  # _lookup returns None only together with misses
            return out
        fn = embed_fn if embed_fn is not None else self._embed_fn
        if fn is None:
            raise InvalidParameterError(
                f"EmbeddingCache({self.namespace!r}) has no embed_fn: pass one to embed()"
            )
        vectors: dict[int, NDArray[np.float32]] = {}
        todo = list(range(len(missing)))
        while todo:
            mine, theirs = self._claim(missing, todo)
            if mine:
                with self._owning(missing, mine):
                    computed = self._compute(missing, where, mine, fn, known)
                vectors.update(zip(mine, self._store(missing, mine, computed), strict=True))
            todo = []
            here: list[int] = []
            for i, entry in theirs.items():
                if entry[1] == threading.get_ident() and not entry[0].done():
                    here.append(i)  # owned by a suspended coroutine of this very thread: never wait on it
                    continue
                got = wait_for(entry)
                if got is None:
                    todo.append(i)  # its owner failed: claim it again (and compute it here)
                else:
                    vectors[i] = got
            if here:
                vectors.update(
                    zip(here, self._store(missing, here, self._compute(missing, where, here, fn, known)), strict=True)
                )
        return self._fill(out, where, vectors)

    async def aembed(
        self,
        texts: Sequence[str],
        aembed_fn: AsyncEmbedFn,
        known: KnownAt | None = None,
    ) -> NDArray[np.float32]:
        """Like :meth:`embed`, but misses are embedded by awaiting ``aembed_fn(missing)``.

        The cache itself is shared with :meth:`embed`; only the way misses are
        computed differs (e.g. a framework's async embedding call). ``known`` runs
        in a worker thread (it may read a remote store). Waiting for a text another
        caller is embedding never blocks the event loop.
        """
        out, missing, where = self._lookup(texts)
        if not missing:
            assert out is not None  # _lookup returns None only together with misses
            return out
        vectors: dict[int, NDArray[np.float32]] = {}
        todo = list(range(len(missing)))
        while todo:
            mine, theirs = self._claim(missing, todo)
            if mine:
                with self._owning(missing, mine):
                    computed = await self._acompute(missing, where, mine, aembed_fn, known)
                vectors.update(zip(mine, self._store(missing, mine, computed), strict=True))
            todo = []
            for i, entry in theirs.items():
                got = await await_for(entry)
                if got is None:
                    todo.append(i)
                else:
                    vectors[i] = got
        return self._fill(out, where, vectors)

    def _claim(
        self, missing: list[str], todo: list[int]
    ) -> tuple[list[int], dict[int, Waiting]]:
        """Which of ``missing[todo]`` this caller embeds, and the pending futures of the others.

        Texts stored since the look-up (by a caller that just finished) come back as
        ready futures, so they are never embedded twice.
        """
        mine: list[int] = []
        theirs: dict[int, Waiting] = {}
        with self._lock:
            fresh: list[int] = []
            for i in todo:
                slot = self._slots.get(missing[i])
                if slot is not None and self._matrix is not None:
                    theirs[i] = ready(missing[i], self._matrix[slot].copy())
                else:
                    fresh.append(i)
            claimed, pending = self._flight.claim([missing[i] for i in fresh])
            claimed_set = set(claimed)
            for i in fresh:
                if missing[i] in claimed_set:
                    mine.append(i)
                else:
                    theirs[i] = pending[missing[i]]
        return mine, theirs

    @contextmanager
    def _owning(self, missing: list[str], mine: list[int]) -> Iterator[None]:
        """Computing the claimed ``missing[mine]``: on any error their waiters are released (and
        compute them themselves) before the error propagates."""
        try:
            yield
        except BaseException:
            with self._lock:
                self._flight.fail([missing[i] for i in mine])
            raise

    def _compute(
        self,
        missing: list[str],
        where: list[list[int]],
        idx: list[int],
        fn: EmbedFn,
        known: KnownAt | None,
    ) -> NDArray[np.float32]:
        """Vectors of ``missing[idx]``: known ones first, the rest from one ``fn`` call; validated."""
        found = known_rows([where[i] for i in idx], known)
        need = [j for j, v in enumerate(found) if v is None]
        asked = [missing[idx[j]] for j in need]
        check_texts(asked, [where[idx[j]][0] for j in need])
        fresh = fn(asked) if need else None
        return checked_vectors(merge_known(found, need, fresh), len(idx))

    async def _acompute(
        self,
        missing: list[str],
        where: list[list[int]],
        idx: list[int],
        afn: AsyncEmbedFn,
        known: KnownAt | None,
    ) -> NDArray[np.float32]:
        """:meth:`_compute` awaiting ``afn``; ``known`` runs in a worker thread (it may read a
        remote store)."""
        sub_where = [where[i] for i in idx]
        found = await asyncio.to_thread(known_rows, sub_where, known) if known is not None else [None] * len(idx)
        need = [j for j, v in enumerate(found) if v is None]
        asked = [missing[idx[j]] for j in need]
        check_texts(asked, [where[idx[j]][0] for j in need])
        fresh = await afn(asked) if need else None
        return checked_vectors(merge_known(found, need, fresh), len(idx))

    def _lookup(
        self, texts: Sequence[str]
    ) -> tuple[NDArray[np.float32] | None, list[str], list[list[int]]]:
        """Copy the cached rows out; return (partial output, distinct misses, their positions)."""
        slots = self._slots
        with self._lock:
            if self._matrix is not None:
                try:  # every text cached (the common case): C-level passes only
                    index = np.fromiter(map(slots.__getitem__, texts), np.intp, len(texts))
                except KeyError:
                    pass
                else:
                    deque(map(slots.move_to_end, texts), maxlen=0)  # refresh LRU order
                    self.hits += len(texts)
                    return self._matrix.take(index, axis=0), [], []
            found = [slots.get(t, -1) for t in texts]  # one hash look-up per text
            move = slots.move_to_end
            positions: dict[str, list[int]] = {}
            for pos, (text, slot) in enumerate(zip(texts, found, strict=True)):
                if slot >= 0:
                    move(text)
                else:
                    positions.setdefault(text, []).append(pos)
            out: NDArray[np.float32] | None = None
            if self._matrix is not None:
                index = np.asarray(found, dtype=np.int64)
                out = self._matrix[np.maximum(index, 0)]  # one gather; misses filled later
        missing = list(positions)
        self.hits += len(texts) - sum(len(p) for p in positions.values())
        self.misses += len(missing)
        if out is None and not missing:
            out = np.zeros((0, 0), dtype=np.float32)
        return out, missing, list(positions.values())

    def _store(
        self, missing: list[str], idx: list[int], vectors: NDArray[np.float32]
    ) -> list[NDArray[np.float32]]:
        """Store the vectors of ``missing[idx]`` and hand them to the callers waiting for them."""
        texts = [missing[i] for i in idx]
        rows = [vec.copy() for vec in vectors]
        with self._lock:
            try:
                if self._matrix is not None and self._matrix.shape[1] != vectors.shape[1]:
                    raise DimensionMismatchError(
                        f"embed_fn returned {vectors.shape[1]}-d vectors but the cache holds "
                        f"{self._matrix.shape[1]}-d vectors"
                    )
                keep = finite_rows(vectors).tolist()  # a NaN/inf row is handed back, never kept
                for text, vec, ok in zip(texts, rows, keep, strict=True):
                    if ok:
                        self._matrix = self._store_row(text, vec)
            except BaseException:
                self._flight.fail(texts)
                raise
            for text, vec in zip(texts, rows, strict=True):
                self._flight.resolve(text, vec)
        return rows

    @staticmethod
    def _fill(
        out: NDArray[np.float32] | None, where: list[list[int]], vectors: dict[int, NDArray[np.float32]]
    ) -> NDArray[np.float32]:
        """Write each miss's vector at its positions of the output."""
        dims = {v.shape[0] for v in vectors.values()}
        if len(dims) > 1 or (out is not None and out.size and dims and out.shape[1] not in dims):
            raise DimensionMismatchError(f"vectors of different dimensions in one call: {sorted(dims)}")
        if out is None or out.shape[1] == 0:
            n_out = sum(len(p) for p in where)
            out = np.empty((n_out, dims.pop() if dims else 0), dtype=np.float32)
        for i, positions in enumerate(where):
            out[positions] = vectors[i]
        return out

    def _store_row(self, text: str, vec: NDArray[np.float32]) -> NDArray[np.float32]:
        """Put ``vec`` in a free row (growing or evicting as needed); caller holds the lock."""
        matrix = self._matrix
        if text in self._slots:
            slot = self._slots[text]
        elif self._free:
            slot = self._free.pop()
        elif matrix is None or len(self._slots) >= matrix.shape[0]:
            if matrix is not None and matrix.shape[0] >= self._maxsize:
                _, slot = self._slots.popitem(last=False)  # evict the least recently used
            else:
                size = min(self._maxsize, max(64, 2 * (0 if matrix is None else matrix.shape[0])))
                grown = np.empty((size, vec.shape[0]), dtype=np.float32)
                if matrix is not None:
                    grown[: matrix.shape[0]] = matrix
                matrix = grown
                slot = len(self._slots)
        else:
            slot = len(self._slots)
        assert matrix is not None
        matrix[slot] = vec
        self._slots[text] = slot
        self._slots.move_to_end(text)
        return matrix
