"""Each text's words once, with one bit per kind: what the learned selector's pair view lines up.

:class:`~diverse_core.textfeatures.TextFactsCache` numbers every word it reads and keeps, per
text, its word ids by kind (content word, name, title word, body word) as *codes*
``id * 8 + kind``. A word is often several kinds at once (a capitalised word of the body is a
term, a name and a body word), so the pair view would line up the same word up to four times
per text. :func:`word_marks` folds each text's codes into *marks*: every distinct id once, as
``id * 16 + bits`` with the bit :data:`MARK_BITS` ``[kind]`` of each kind it has. It runs once per
batch of newly read texts (one sort for the whole batch), so reading a text stays cheap.

Example:
    >>> [m.tolist() for m in word_marks([np.array([5 * 8 + 0, 5 * 8 + 1, 9 * 8 + 3])])]
    [[83, 152]]
    >>> (83 >> 4, 83 & 15, 152 >> 4, 152 & 15)  # word 5: a term (2) and a name (1); word 9: a body word (8)
    (5, 3, 9, 8)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["CHUNK", "MARK_BITS", "get", "marker_array", "pieces", "put", "word_marks"]

IntArray = NDArray[np.int64]

#: The bit of each kind in a mark, indexed by kind (term, name, title word, body word): a name is 1, a term 2.
MARK_BITS = (2, 1, 4, 8)
_BIT_OF_CODE = np.array([*MARK_BITS, 0, 0, 0, 0], dtype=np.int64)  # indexed by ``code & 7``


def word_marks(codes: Sequence[IntArray]) -> list[IntArray]:
    """The marks of each text from its codes (``id * 8 + kind``): its distinct ids once, as ``id * 16 + bits``.

    Within a text the marks come in id order. Every returned array is a copy of its own (a
    cached text does not keep the batch alive).
    """
    sizes = [c.shape[0] for c in codes]
    if not sum(sizes):
        return [np.zeros(0, dtype=np.int64) for _ in codes]
    flat = np.concatenate(codes)
    ids = flat >> 3
    span = int(ids.max()) + 1
    key = np.repeat(np.arange(len(codes), dtype=np.int64) * span, sizes) + ids  # (text, id) in one number
    order = np.argsort(key, kind="stable")  # runs of sorted ids: a merge sort is quick here
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    bits = np.bitwise_or.reduceat(_BIT_OF_CODE[flat[order] & 7], starts)
    key = key[starts]
    marks = (key % span) << 4 | bits
    ends = np.cumsum(np.bincount(key // span, minlength=len(codes))).tolist()
    return [marks[a:b].copy() for a, b in zip([0, *ends[:-1]], ends, strict=True)]


_SCRATCH = threading.local()


def marker_array(size: int) -> IntArray:
    """This thread's all-zero marker array of at least ``size`` slots, indexed by word id.

    Callers mark slots, read them and set them back to zero before returning (in a ``finally``),
    so a lookup of many ids against a few costs one scatter and one gather, with no sort.
    """
    mark: IntArray | None = getattr(_SCRATCH, "mark", None)
    if mark is None or mark.shape[0] < size:
        mark = np.zeros(max(size, 2 * (0 if mark is None else mark.shape[0]), 1024), dtype=np.int64)
        _SCRATCH.mark = mark
    return mark


#: Most entries :func:`put` writes with one index operation: numpy lets go of the GIL for index loops
#: over more (numpy 2.x: over 500), and under many callers every release costs a switch.
CHUNK = 500


def put(mark: IntArray, ids: IntArray, values: IntArray | int) -> None:
    """``mark[ids] = values`` in pieces of at most :data:`CHUNK` entries (so numpy keeps the GIL)."""
    if isinstance(values, int):
        for a in range(0, ids.shape[0], CHUNK):
            mark[ids[a : a + CHUNK]] = values
    else:
        for a in range(0, ids.shape[0], CHUNK):
            mark[ids[a : a + CHUNK]] = values[a : a + CHUNK]


@lru_cache(maxsize=256)
def pieces(size: int, split: bool = True) -> tuple[slice, ...]:
    """Slices of ``range(size)`` of at most :data:`CHUNK` entries each (``split``), or one slice of all of it.

    Callers split the pool-wide index work of a small pool (its few thousand entries, one numpy
    call per piece) and leave a big pool's work in one call (its loop pays for the release).

    Example:
        >>> pieces(1200), pieces(1200, split=False)
        ((slice(0, 500, None), slice(500, 1000, None), slice(1000, 1200, None)), (slice(0, 1200, None),))
    """
    if not split or size <= CHUNK:
        return (slice(0, size),)
    return tuple(slice(a, min(a + CHUNK, size)) for a in range(0, size, CHUNK))


def get(mark: IntArray, ids: IntArray, split: bool = True) -> IntArray:
    """``mark[ids]``, gathered in the :func:`pieces` of ``ids`` (so numpy keeps the GIL where ``split``)."""
    parts = pieces(ids.shape[0], split)
    if len(parts) == 1:
        return mark[ids]
    out = np.empty(ids.shape[0], dtype=mark.dtype)
    for p in parts:
        out[p] = mark[ids[p]]
    return out
