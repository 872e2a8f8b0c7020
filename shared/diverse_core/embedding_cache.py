"""Per-text embedding caches shared by every face, and a process-wide registry of them.

Every cache here is safe to share between threads and event loops: look-ups and stores hold a
lock, and a text that several callers miss at the same moment is embedded once (the first
caller computes it, the others wait for its vector: :class:`InFlight`).

:class:`EmbeddingCache` embeds each distinct text once, batches the misses of a call,
and may fill misses from vectors a store already holds (``known``) before calling the
model. :func:`model_caches` hands out one set of caches per embedding model for the
whole process (keyed by the model object's identity, or by an explicit
``__diverse_cache_key__()`` the model class declares); the registry holds models only
weakly, so a short-lived model and its caches are freed together.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from .errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError

__all__ = [
    "EmbeddingCache",
    "InFlight",
    "KnownAt",
    "ModelCaches",
    "cache_key",
    "clear_model_caches",
    "model_caches",
]

logger = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], "NDArray[np.floating] | Sequence[Sequence[float]]"]
AsyncEmbedFn = Callable[[list[str]], Awaitable["NDArray[np.floating] | Sequence[Sequence[float]]"]]
#: ``known(positions) -> one vector or None per position``: vectors already computed
#: elsewhere (e.g. held by a vector store) for the texts at those positions of the call.
KnownAt = Callable[[list[int]], Sequence[Any]]


K = TypeVar("K", bound=Hashable)


class _Batch:
    """The keys one :meth:`InFlight.claim` took: one future, set with ``{key: value}`` when the
    last of them is resolved or failed."""

    __slots__ = ("future", "left", "values")

    def __init__(self) -> None:
        self.future: Future[dict[Any, Any]] = Future()
        self.left = 0
        self.values: dict[Any, Any] = {}


#: What a waiter holds: (the owner's batch future, the owner's thread id, the key).
Waiting = tuple["Future[dict[Any, Any]]", int, Any]


class InFlight(Generic[K]):
    """Keys being computed right now, so concurrent callers wait instead of computing them twice.

    Not locked itself: the owning cache calls :meth:`claim`, :meth:`resolve` and :meth:`fail`
    while holding its own lock (so "is it cached?" and "is someone computing it?" are one
    atomic question). A caller waits with :func:`wait_for` (threads) or :func:`await_for`
    (coroutines); a failed owner hands ``None`` to its waiters, which then compute the key
    themselves (and meet the error themselves, if it persists). The keys of one claim share
    one future, set when the last of them is resolved or failed (an owner settles its keys
    together), so a claim of 200 texts makes one future, not 200.

    Example:
        >>> flight: InFlight[str] = InFlight()
        >>> mine, theirs = flight.claim(["a", "b"])
        >>> mine, theirs, flight.claim(["a"])[0]
        (['a', 'b'], {}, [])
        >>> flight.resolve("a", 1.0); len(flight)
        1
    """

    def __init__(self) -> None:
        self._futures: dict[K, tuple[_Batch, int]] = {}

    def __len__(self) -> int:
        return len(self._futures)

    def claim(self, keys: Sequence[K]) -> tuple[list[K], dict[K, Waiting]]:
        """Split ``keys`` into those the caller must compute and what to wait on for the others."""
        mine: list[K] = []
        theirs: dict[K, Waiting] = {}
        me = threading.get_ident()
        batch: _Batch | None = None
        for key in keys:
            entry = self._futures.get(key)
            if entry is None:
                if batch is None:
                    batch = _Batch()
                batch.left += 1
                self._futures[key] = (batch, me)
                mine.append(key)
            else:
                theirs[key] = (entry[0].future, entry[1], key)
        return mine, theirs

    def resolve(self, key: K, value: Any) -> None:
        """Hand ``value`` to the waiters of ``key`` and forget it."""
        self._settle(key, value)

    def fail(self, keys: Sequence[K]) -> None:
        """The owner of ``keys`` failed: its waiters get ``None`` (and compute the keys themselves)."""
        for key in keys:
            self._settle(key, None)

    def _settle(self, key: K, value: Any) -> None:
        entry = self._futures.pop(key, None)
        if entry is None:
            return
        batch = entry[0]
        batch.values[key] = value
        batch.left -= 1
        if batch.left == 0:
            batch.future.set_result(batch.values)


def ready(key: Any, value: Any) -> Waiting:
    """A :data:`Waiting` whose value is already there."""
    done: Future[dict[Any, Any]] = Future()
    done.set_result({key: value})
    return (done, 0, key)


def wait_for(entry: Waiting) -> Any:
    """The value another thread computes for a key (``None``: compute it yourself).

    A caller on the owner's own thread (e.g. a sync call inside the event loop where the owning
    coroutine is suspended) must not block on it: it gets ``None`` unless the value is ready.
    """
    future, owner, key = entry
    if not future.done() and owner == threading.get_ident():
        return None
    return future.result().get(key)


async def await_for(entry: Waiting) -> Any:
    """Async :func:`wait_for`: awaits the value without blocking the event loop."""
    return (await asyncio.wrap_future(entry[0])).get(entry[2])


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
                try:
                    computed = self._compute(missing, where, mine, fn, known)
                except BaseException:
                    self._abandon(missing, mine)
                    raise
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
                try:
                    sub_where = [where[i] for i in mine]
                    found = (
                        await asyncio.to_thread(self._known_rows, sub_where, known)
                        if known is not None
                        else [None] * len(mine)
                    )
                    need = [j for j, v in enumerate(found) if v is None]
                    fresh = await aembed_fn([missing[mine[j]] for j in need]) if need else None
                    computed = self._validated(self._merge(found, need, fresh), len(mine))
                except BaseException:
                    self._abandon(missing, mine)
                    raise
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

    def _abandon(self, missing: list[str], mine: list[int]) -> None:
        with self._lock:
            self._flight.fail([missing[i] for i in mine])

    def _compute(
        self,
        missing: list[str],
        where: list[list[int]],
        idx: list[int],
        fn: EmbedFn,
        known: KnownAt | None,
    ) -> NDArray[np.float32]:
        """Vectors of ``missing[idx]``: known ones first, the rest from one ``fn`` call; validated."""
        found = self._known_rows([where[i] for i in idx], known)
        need = [j for j, v in enumerate(found) if v is None]
        fresh = fn([missing[idx[j]] for j in need]) if need else None
        return self._validated(self._merge(found, need, fresh), len(idx))

    @staticmethod
    def _known_rows(where: list[list[int]], known: KnownAt | None) -> list[Any]:
        """One known vector or ``None`` per distinct miss (asked at its first position)."""
        if known is None:
            return [None] * len(where)
        rows = list(known([positions[0] for positions in where]))
        if len(rows) != len(where):
            raise DimensionMismatchError(
                f"known() returned {len(rows)} entries for {len(where)} positions"
            )
        return rows

    @staticmethod
    def _merge(
        found: list[Any],
        todo: list[int],
        fresh: NDArray[np.floating] | Sequence[Sequence[float]] | None,
    ) -> NDArray[np.floating] | Sequence[Sequence[float]]:
        """Known vectors with the freshly embedded ones at positions ``todo``."""
        if fresh is None:
            return found
        if len(todo) == len(found):
            return fresh
        rows = list(found)
        fresh_rows = _as_matrix(fresh, "embed_fn")
        if fresh_rows.shape[0] != len(todo):
            raise DimensionMismatchError(
                f"embed_fn returned {fresh_rows.shape[0]} vectors for {len(todo)} texts"
            )
        for pos, vec in zip(todo, fresh_rows, strict=True):
            rows[pos] = vec
        return rows

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

    @staticmethod
    def _validated(
        raw: NDArray[np.floating] | Sequence[Sequence[float]], n: int
    ) -> NDArray[np.float32]:
        """Freshly computed vectors as a finite float32 (n, d) matrix, or a typed error."""
        vectors = _as_matrix(raw, "embed_fn")
        if vectors.shape[0] != n:
            raise DimensionMismatchError(f"embed_fn returned {vectors.shape[0]} vectors for {n} texts")
        if not np.all(np.isfinite(vectors)):
            raise NonFiniteInputError("embed_fn returned NaN or inf values")
        return vectors

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
                for text, vec in zip(texts, rows, strict=True):
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


def _as_matrix(
    raw: NDArray[np.floating] | Sequence[Any], source: str
) -> NDArray[np.float32]:
    """``raw`` as a float32 (n, d) matrix with d >= 1, or a typed error naming the bad row.

    Catches what a model (or a store) may hand back: a ragged batch (one vector of
    another length), ``None`` or ``[]`` rows, non-numeric entries.
    """
    if isinstance(raw, np.ndarray) and raw.ndim == 2 and raw.shape[1] > 0:
        try:
            return raw.astype(np.float32, copy=False)
        except (TypeError, ValueError):
            pass  # e.g. an object array: the row-by-row pass names the bad row
    rows = list(raw)
    lengths: list[int] = []
    for i, row in enumerate(rows):
        try:
            if isinstance(row, (str, bytes)):
                raise TypeError(row)
            lengths.append(len(row))
        except TypeError:
            raise DimensionMismatchError(
                f"{source} returned {row!r} for text {i}; expected a vector of floats"
            ) from None
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    if lengths[0] == 0 or any(n != lengths[0] for n in lengths):
        bad = next(i for i, n in enumerate(lengths) if n == 0 or n != lengths[0])
        raise DimensionMismatchError(
            f"{source} returned vectors that differ in dimension: text 0 has {lengths[0]}, "
            f"text {bad} has {lengths[bad]} (dimensions seen: {sorted(set(lengths))})"
        )
    try:
        return np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{source} returned non-numeric vectors: {exc}") from None


class ModelCaches:
    """The caches of one embedding model, one per kind of text (e.g. documents, queries).

    Args:
        label: names the model in cache namespaces and messages.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self._caches: dict[str, EmbeddingCache] = {}
        self._lock = threading.Lock()

    def cache(self, kind: str, maxsize: int) -> EmbeddingCache:
        """The cache of ``kind`` texts, created on first use; its bound grows to ``maxsize``."""
        found = self._caches.get(kind)
        if found is None:
            with self._lock:
                found = self._caches.get(kind)
                if found is None:
                    found = EmbeddingCache(None, maxsize, f"{kind}|{self.label}")
                    self._caches[kind] = found
        found.grow_to(maxsize)
        return found


#: Models that cannot be weakly referenced are kept (with their caches) in an LRU of this size.
STRONG_LIMIT = 32

_LOCK = threading.RLock()  # re-entrant: a weakref callback may fire while it is held
_BY_ID: dict[int, tuple[weakref.ref[Any], ModelCaches]] = {}
_BY_KEY: OrderedDict[Hashable, ModelCaches] = OrderedDict()
_STRONG: OrderedDict[int, tuple[object, ModelCaches]] = OrderedDict()


def cache_key(model: object) -> Hashable | None:
    """The value that lets equal models share caches, or ``None`` (identity only).

    A model class opts in by defining ``__diverse_cache_key__(self)``, returning a
    hashable value that determines every vector the model computes (e.g. the
    packaged MiniLM's model path). Equal ``repr`` or equal pydantic fields are never
    enough: weights, clients and private state do not show in them.
    """
    method = getattr(type(model), "__diverse_cache_key__", None)
    if method is None:
        return None
    key = method(model)
    return (type(model).__module__, type(model).__qualname__, key)


def _label(model: object) -> str:
    cls = type(model)
    return f"{cls.__module__}.{cls.__qualname__}@{id(model):x}"


def _forget(ident: int, ref: weakref.ref[Any]) -> None:
    with _LOCK:
        entry = _BY_ID.get(ident)
        if entry is not None and entry[0] is ref:
            del _BY_ID[ident]


def model_caches(model: object) -> ModelCaches:
    """The process-wide caches of ``model``.

    Keyed by :func:`cache_key` when the model declares one, otherwise by the model
    object itself: two model objects never share vectors unless their class says
    they compute the same ones. The registry holds models weakly (a model that is
    garbage-collected takes its caches with it); models that cannot be weakly
    referenced are kept in a small LRU (:data:`STRONG_LIMIT`).

    Example:
        >>> class Model:
        ...     pass
        >>> a, b = Model(), Model()
        >>> model_caches(a) is model_caches(a), model_caches(a) is model_caches(b)
        (True, False)
    """
    key = cache_key(model)
    ident = id(model)
    with _LOCK:
        if key is not None:
            found = _BY_KEY.get(key)
            if found is None:
                found = _BY_KEY[key] = ModelCaches(repr(key))
                while len(_BY_KEY) > STRONG_LIMIT:
                    _BY_KEY.popitem(last=False)
            _BY_KEY.move_to_end(key)
            return found
        entry = _BY_ID.get(ident)
        if entry is not None and entry[0]() is model:
            return entry[1]
        strong = _STRONG.get(ident)
        if strong is not None and strong[0] is model:
            _STRONG.move_to_end(ident)
            return strong[1]
        caches = ModelCaches(_label(model))
        try:
            ref = weakref.ref(model, functools.partial(_forget, ident))
        except TypeError:  # not weakly referenceable: keep a bounded number alive
            _STRONG[ident] = (model, caches)
            while len(_STRONG) > STRONG_LIMIT:
                _STRONG.popitem(last=False)
            logger.debug("%s cannot be weakly referenced; its caches are kept in an LRU", _label(model))
            return caches
        _BY_ID[ident] = (ref, caches)
        return caches


def clear_model_caches() -> None:
    """Forget every model's caches (objects already holding a cache keep it)."""
    with _LOCK:
        _BY_ID.clear()
        _BY_KEY.clear()
        _STRONG.clear()
