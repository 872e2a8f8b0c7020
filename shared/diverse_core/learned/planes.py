"""The per-pick pair stack of one query, filled without numpy letting go of the GIL at small pools.

The learned selector's greedy loop reads, per pick ``j``, row ``j`` of every pair matrix whose
maximum over the picks it needs (cosine, ``cos(unit(q + pick), candidate)`` and, with texts, same
source, title mentions both ways and shared names): one ``(b, n)`` block ``stack[j]`` of an
``(n, b, n)`` array. numpy lets go of the GIL around a copy or a cast of more than
:data:`~diverse_core.gil_blocks.KEEP` elements, a thread switch under many callers;
:func:`fill_stack` copies the ``(n, n)`` matrices into their planes ``stack[:, m, :]`` in
whole-row blocks of :func:`~diverse_core.gil_blocks.row_blocks` for pools of up to 64 candidates
while another Python thread is alive (:func:`~diverse_core.gil_blocks.work_blocks`; bigger pools,
and a process with one thread, keep one copy per matrix), the same values either way.

Example:
    >>> import numpy as np
    >>> sim, same = np.array([[1.0, 0.5], [0.5, 1.0]]), np.array([[True, False], [False, True]])
    >>> stack = np.zeros((2, 3, 2))
    >>> fill_stack(stack, {0: sim, 2: same})
    >>> stack[1].tolist()  # pick 1: its row of sim, of plane 1 (not filled here), of same
    [[0.5, 1.0], [0.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..gil_blocks import work_blocks

__all__ = ["fill_stack", "qdc_into"]


def fill_stack(stack: NDArray[np.float64], planes: Mapping[int, NDArray[Any]]) -> None:
    """``stack[:, m, :] = matrix`` for each ``m, matrix`` of ``planes`` (``(n, n)`` each: float, or bool cast to
    0/1, or a transposed view), row block by row block."""
    n = stack.shape[0]
    blocks = work_blocks(n, n)
    if len(blocks) == 1:
        for m, matrix in planes.items():
            stack[:, m, :] = matrix
        return
    pairs = tuple(planes.items())
    for b in blocks:
        for m, matrix in pairs:
            stack[b, m] = matrix[b]


def qdc_into(sim: NDArray[np.float64], cos_qi: NDArray[np.float64], norm: NDArray[np.float64],
             out: NDArray[np.float64]) -> None:
    """``out[j, i] = (cos_qi[i] + sim[j, i]) / norm[j]`` (``out``: ``(n, n)``, a plane of a stack or not): the add
    and the divide of numpy's broadcasting over the whole matrix, row block by row block."""
    n = sim.shape[0]
    blocks = work_blocks(n, n)
    if len(blocks) == 1:
        np.add(cos_qi[None, :], sim, out=out)
        np.divide(out, norm[:, None], out=out)
        return
    tile = np.empty((blocks[0].stop, n))  # cos_qi on every row: the adds need no broadcasting
    tile[...] = cos_qi
    part = np.empty_like(tile)
    scale = norm[:, None]
    for b in blocks:
        rows = b.stop - b.start
        np.add(tile[:rows], sim[b], out=part[:rows])
        np.divide(part[:rows], scale[b], out=out[b])
