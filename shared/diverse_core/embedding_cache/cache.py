"""The per-text embedding cache: each distinct text embedded once, in batches, its vector reused."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from .inflight import InFlight, Waiting, await_for, wait_for
from .vectors import AsyncEmbedFn, EmbedFn, KnownAt, as_matrix, check_texts

__all__ = ["EmbeddingCache"]

Vector = NDArray[np.float32]


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
        self._rows: OrderedDict[str, Vector] = OrderedDict()  # text -> vector, in LRU order
        self._dim: int | None = None
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
        return self._dim

    def grow_to(self, maxsize: int) -> None:
        """Raise the bound to ``maxsize`` (a smaller value leaves it unchanged)."""
        with self._lock:
            self._maxsize = max(self._maxsize, int(maxsize))

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._rows.clear()
            self._dim = None

    def embed(
        self,
        texts: Sequence[str],
        embed_fn: EmbedFn | None = None,
        known: KnownAt | None = None,
    ) -> Vector:
        """Vectors for ``texts`` in order, shape (len(texts), d); misses embedded in one batch.

        Args:
            texts: the texts.
            embed_fn: computes the misses (default: the one given at construction).
            known: ``known(positions)`` returns a vector (or ``None``) for the texts at
                those positions of ``texts``; consulted for cache misses only, before
                ``embed_fn``, which then receives only what is still missing.
        """
        found, missing, where = self._lookup(texts)
        fn = embed_fn if embed_fn is not None else self._embed_fn
        if missing and fn is None:
            raise InvalidParameterError(
                f"EmbeddingCache({self.namespace!r}) has no embed_fn: pass one to embed()"
            )
        vectors: dict[int, Vector] = {}
        todo = list(range(len(missing)))
        while todo:
            mine, theirs = self._claim(missing, todo, vectors)
            if mine:
                with self._owning(missing, mine):
                    computed = self._compute(missing, where, mine, fn, known)  # type: ignore[arg-type]
                vectors.update(zip(mine, self._store(missing, mine, computed), strict=True))
            todo = []
            here: list[int] = []
            for i, entry in theirs.items():
                got = wait_for(entry)
                if got is not None:
                    vectors[i] = got
                elif entry[1] == threading.get_ident() and not entry[0].done():
                    here.append(i)  # owned by a suspended coroutine of this very thread: never wait on it
                else:
                    todo.append(i)  # its owner failed: claim it again (and compute it here)
            if here:
                computed = self._compute(missing, where, here, fn, known)  # type: ignore[arg-type]
                vectors.update(zip(here, self._store(missing, here, computed), strict=True))
        return _fill(found, where, vectors)

    async def aembed(
        self,
        texts: Sequence[str],
        aembed_fn: AsyncEmbedFn,
        known: KnownAt | None = None,
    ) -> Vector:
        """Like :meth:`embed`, but misses are embedded by awaiting ``aembed_fn(missing)``.

        The cache itself is shared with :meth:`embed`; only the way misses are
        computed differs (e.g. a framework's async embedding call). ``known`` runs
        in a worker thread (it may read a remote store). Waiting for a text another
        caller is embedding never blocks the event loop.
        """
        found, missing, where = self._lookup(texts)
        vectors: dict[int, Vector] = {}
        todo = list(range(len(missing)))
        while todo:
            mine, theirs = self._claim(missing, todo, vectors)
            if mine:
                with self._owning(missing, mine):
                    rows = [where[i] for i in mine]
                    got = await asyncio.to_thread(_known_rows, rows, known) if known else [None] * len(mine)
                    computed = await _amerged(got, [missing[i] for i in mine], rows, aembed_fn)
                vectors.update(zip(mine, self._store(missing, mine, computed), strict=True))
            todo = []
            for i, entry in theirs.items():
                got = await await_for(entry)
                if got is None:
                    todo.append(i)
                else:
                    vectors[i] = got
        return _fill(found, where, vectors)

    def _lookup(self, texts: Sequence[str]) -> tuple[list[Vector | None], list[str], list[list[int]]]:
        """The cached vector of each text (``None`` for a miss), the distinct misses, their positions."""
        with self._lock:
            rows = self._rows
            found = [rows.get(t) for t in texts]
            where: dict[str, list[int]] = {}
            for pos, (text, row) in enumerate(zip(texts, found, strict=True)):
                if row is None:
                    where.setdefault(text, []).append(pos)
                else:
                    rows.move_to_end(text)
            self.misses += len(where)
            self.hits += len(texts) - sum(map(len, where.values()))
        return found, list(where), list(where.values())

    def _claim(
        self, missing: list[str], todo: list[int], vectors: dict[int, Vector]
    ) -> tuple[list[int], dict[int, Waiting]]:
        """Which of ``missing[todo]`` this caller embeds, and what to wait on for the others.

        Texts stored since the look-up (by a caller that just finished) go straight into
        ``vectors``, so they are never embedded twice.
        """
        with self._lock:
            fresh: list[int] = []
            for i in todo:
                row = self._rows.get(missing[i])
                if row is None:
                    fresh.append(i)
                else:
                    vectors[i] = row
            claimed, pending = self._flight.claim([missing[i] for i in fresh])
        mine = set(claimed)
        return ([i for i in fresh if missing[i] in mine],
                {i: pending[missing[i]] for i in fresh if missing[i] not in mine})

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

    @staticmethod
    def _compute(
        missing: list[str], where: list[list[int]], idx: list[int], fn: EmbedFn, known: KnownAt | None
    ) -> Vector:
        """Vectors of ``missing[idx]``: known ones first, the rest from one ``fn`` call; validated."""
        rows = [where[i] for i in idx]
        found = _known_rows(rows, known) if known else [None] * len(idx)
        need = [j for j, v in enumerate(found) if v is None]
        asked = _asked([missing[i] for i in idx], rows, need)
        return _merged(found, need, fn(asked) if need else None)

    def _store(self, missing: list[str], idx: list[int], vectors: Vector) -> list[Vector]:
        """Keep the finite vectors of ``missing[idx]`` and hand them all to the callers waiting
        for them (a NaN/inf row is handed back, never kept)."""
        texts = [missing[i] for i in idx]
        rows = [vec.copy() for vec in vectors]
        with self._lock:
            if self._dim is not None and self._dim != vectors.shape[1]:
                self._flight.fail(texts)
                raise DimensionMismatchError(
                    f"embed_fn returned {vectors.shape[1]}-d vectors but the cache holds {self._dim}-d vectors"
                )
            for text, vec in zip(texts, rows, strict=True):
                if np.isfinite(vec).all():
                    self._rows[text] = vec
                    self._rows.move_to_end(text)
                    self._dim = vec.shape[0]
                self._flight.resolve(text, vec)
            while len(self._rows) > self._maxsize:
                self._rows.popitem(last=False)  # evict the least recently used
        return rows


def _known_rows(where: list[list[int]], known: KnownAt) -> list[Any]:
    """One known vector or ``None`` per distinct miss (asked at its first position)."""
    rows = list(known([positions[0] for positions in where]))
    if len(rows) != len(where):
        raise DimensionMismatchError(f"known() returned {len(rows)} entries for {len(where)} positions")
    return rows


def _asked(texts: list[str], where: list[list[int]], need: list[int]) -> list[str]:
    """The texts ``texts[need]`` to embed, checked (a bad one is named by its first position)."""
    asked = [texts[j] for j in need]
    check_texts(asked, [where[j][0] for j in need])
    return asked


async def _amerged(found: list[Any], texts: list[str], where: list[list[int]], afn: AsyncEmbedFn) -> Vector:
    """:func:`_merged` with the still-missing texts awaited from ``afn``."""
    need = [j for j, v in enumerate(found) if v is None]
    return _merged(found, need, await afn(_asked(texts, where, need)) if need else None)


def _merged(found: list[Any], need: list[int], fresh: Any) -> Vector:
    """Known vectors with the freshly embedded ones at positions ``need``, as a float32 matrix."""
    if fresh is not None:
        rows = as_matrix(fresh, "embed_fn")
        if rows.shape[0] != len(need):
            raise DimensionMismatchError(f"embed_fn returned {rows.shape[0]} vectors for {len(need)} texts")
        if len(need) == len(found):
            return rows
        found = list(found)
        for j, vec in zip(need, rows, strict=True):
            found[j] = vec
    return as_matrix(found, "embed_fn")


def _fill(found: list[Vector | None], where: list[list[int]], vectors: dict[int, Vector]) -> Vector:
    """The output: each miss's vector written at its positions, then stacked."""
    for i, positions in enumerate(where):
        for p in positions:
            found[p] = vectors[i]
    if not found:
        return np.zeros((0, 0), dtype=np.float32)
    if not where:  # every vector from the cache, all of its one dimension
        return np.concatenate(found).reshape(len(found), -1)  # type: ignore[arg-type]
    try:
        return np.stack(found)  # type: ignore[arg-type]
    except ValueError:
        dims = sorted({len(v) for v in found if v is not None})
        raise DimensionMismatchError(f"vectors of different dimensions in one call: {dims}") from None
