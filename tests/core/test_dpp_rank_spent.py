"""dpp past the kernel's rank: no overflow, valid picks, the same rule on every path.

A pool whose vectors span fewer dimensions than ``k`` leaves only rounding noise as
residual variance after ``rank`` picks. The Cholesky row of such a pick used to divide
that noise by ``sqrt(0) + eps32`` and grow a few orders of magnitude per step until
float64 overflowed (a RuntimeWarning, an error under this suite's filters); hypothesis
found it with 1-dimensional vectors and k=8.
"""

from __future__ import annotations

import warnings

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.methods.dpp import SPENT_SHARE


def _one_dimensional() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    query = np.array([1.304], dtype=np.float32)
    cands = np.array(
        [
            [0.12573022],
            [-0.13210486],
            [0.64042264],
            [0.10490011],
            [-0.5356694],
            [0.36159506],
            [1.304],
            [0.94708097],
            [-0.70373523],
            [-1.2654215],
        ],
        dtype=np.float32,
    )
    rel = np.array(
        [
            0.71480855,
            -0.93282885,
            0.45931089,
            -0.64868876,
            0.72635784,
            0.08292244,
            -0.40057622,
            -0.15462556,
            -0.94336066,
            -0.75143345,
        ]
    )
    return query, cands, rel


@pytest.mark.parametrize("diversity", [0.25, 0.5, 1.0])
def test_one_dimensional_pool_past_its_rank(diversity: float) -> None:
    query, cands, rel = _one_dimensional()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sel = dc.select("dpp", query, cands, k=8, relevance=rel, diversity=diversity)
    assert sorted(set(sel.indices.tolist())) == sorted(sel.indices.tolist())
    assert np.isfinite(sel.scores).all()
    # one dimension: after the first pick every gain is rounding noise
    assert (sel.scores[1:] <= SPENT_SHARE * sel.scores[0] * 10).all()


def test_sweep_rows_match_select_past_the_rank() -> None:
    query, cands, rel = _one_dimensional()
    values = [0.25, 0.5, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep = dc.sweep("dpp", query, cands, k=8, relevance=rel, values=values)
        for row, value in enumerate(values):
            one = dc.select("dpp", query, cands, k=8, relevance=rel, diversity=value)
            np.testing.assert_array_equal(sweep.indices[row], one.indices)


def test_large_pool_of_three_directions_lazy_path() -> None:
    """Above the small-pool size the lazy path runs: 300 candidates in 3 directions, k=20."""
    rng = np.random.default_rng(0)
    cands = np.repeat(rng.normal(size=(3, 3)).astype(np.float32), 100, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sel = dc.select("dpp", rng.normal(size=3).astype(np.float32), cands, k=20, diversity=0.5)
    assert len(set(sel.indices.tolist())) == 20
    # the first three picks cover the three directions
    assert sorted(int(i) // 100 for i in sel.indices[:3]) == [0, 1, 2]
    assert np.isfinite(sel.scores).all()
