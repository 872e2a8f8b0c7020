"""Small arrays' work in pieces that numpy runs without letting go of the GIL.

numpy lets go of the GIL around an element loop, a copy or a gather over more than
:data:`KEEP` elements (numpy 2.x), and around every BLAS product. Under many concurrent
callers each release can hand the interpreter to another thread, a context switch:
``benchmarks/learned_contention.py`` measured the learned selector's CPU per call at 16
threads 2.4x its CPU at one thread, about 20 µs per release on this project's 2-core VM.
For the small arrays of one retriever call (the ``(n, n)`` pair matrices of ``n <= 64``
candidates) a few more numpy calls, each over at most :data:`KEEP` elements, cost less than
that; bigger work keeps its one call (its loop is long enough to pay for the release).
A release costs nothing when no other Python thread runs, while the blocks cost a numpy call each
(about 0.03 ms per learned call at 50 candidates): :func:`work_blocks`, which the library's code
calls, splits only while more than one Python thread is alive; the values are the same either way.

Example:
    >>> import numpy as np
    >>> row_blocks(50, 50)  # 2,500 elements: five blocks of ten rows
    (slice(0, 10, None), slice(10, 20, None), slice(20, 30, None), slice(30, 40, None), slice(40, 50, None))
    >>> row_blocks(20, 20), row_blocks(100, 100)  # at most KEEP elements, or more than SMALL_WORK: one block
    ((slice(0, 20, None),), (slice(0, 100, None),))
    >>> a, out = np.arange(2500.0).reshape(50, 50), np.empty((50, 50))
    >>> for b in row_blocks(50, 50):
    ...     _ = np.multiply(a[b], 2.0, out=out[b])
    >>> bool(np.array_equal(out, a * 2.0))
    True
    >>> import threading
    >>> work_blocks(50, 50) == ((slice(0, 50),) if threading.active_count() == 1 else row_blocks(50, 50))
    True
"""

from __future__ import annotations

import sys
import threading
from functools import lru_cache

__all__ = ["KEEP", "SMALL_WORK", "other_threads", "row_blocks", "work_blocks"]

#: Most elements one numpy loop, copy or gather handles with the GIL held (numpy's threshold: more than 500 lets go).
KEEP = 500
#: Most elements of an array whose work :func:`row_blocks` splits (a ``(64, 64)`` pair matrix).
SMALL_WORK = 64 * 64


@lru_cache(maxsize=512)
def row_blocks(rows: int, row_len: int) -> tuple[slice, ...]:
    """Slices of ``range(rows)`` that cover the rows of an array with ``row_len`` elements per row.

    Several blocks of whole rows, each at most :data:`KEEP` elements, when the array has more
    than :data:`KEEP` and at most :data:`SMALL_WORK` elements and a row fits in :data:`KEEP`;
    otherwise one block of every row (no release to avoid, or work that pays for it).

    Args:
        rows: the number of rows (``>= 0``).
        row_len: elements per row (``>= 0``).
    """
    total = rows * row_len
    if total <= KEEP or total > SMALL_WORK or row_len > KEEP:
        return (slice(0, rows),)
    step = KEEP // row_len
    return tuple(slice(a, min(a + step, rows)) for a in range(0, rows, step))


def other_threads() -> bool:
    """Whether another Python thread is alive that may wait for the GIL when this one lets go of it (never on a
    free-threaded build running without the GIL)."""
    if threading.active_count() == 1:
        return False
    gil_enabled = getattr(sys, "_is_gil_enabled", None)  # Python 3.13+; a free-threaded build may turn it off
    return gil_enabled is None or bool(gil_enabled())


def work_blocks(rows: int, row_len: int) -> tuple[slice, ...]:
    """:func:`row_blocks` while another Python thread is alive (it may wait for the GIL), else one block.

    Args:
        rows: the number of rows (``>= 0``).
        row_len: elements per row (``>= 0``).
    """
    if other_threads():
        return row_blocks(rows, row_len)
    return (slice(0, rows),)
