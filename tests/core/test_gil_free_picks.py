"""The tie-tolerant argmax of one row and gMMR's small-pool columns without the numpy calls that
release the GIL (issue 35: under 16 concurrent callers every release can hand the GIL to another
thread). ``argmax`` releases it on every call whatever the size, so the one-row paths must give
``argmax``'s answers without calling it: checked against the rule written out with ``argmax``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from diverse_core import select, sweep
from diverse_core.methods._common import TIE_RTOL, PickColumns, argmax_first, argmax_rows
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st


class _NoArgmax(np.ndarray):
    """An array whose ``argmax`` fails (views and results of ufuncs keep the subclass)."""

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("argmax was called (it releases the GIL)")


def _plain_first(values: np.ndarray, rtol: float) -> int:
    """The rule: the lowest index within ``rtol * max(1, |max|)`` of the maximum, via ``argmax``."""
    i = int(np.asarray(values).argmax())
    top = float(values[i])
    floor = top - rtol * max(1.0, abs(top))
    return int((np.asarray(values) >= floor).argmax())


VALUES = st.lists(
    st.one_of(st.floats(-3.0, 3.0), st.sampled_from([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1.0 + 1e-13])),
    min_size=1, max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from([np.float64, np.float32]), st.sampled_from([TIE_RTOL, 1e-6, 0.0]))
def test_argmax_first_is_the_rule(values: list[float], dtype: type, rtol: float) -> None:
    x = np.array(values, dtype=dtype)
    assert argmax_first(x, rtol) == _plain_first(x, rtol)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf in the tie floor
@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from([TIE_RTOL, 1e-6]))
def test_argmax_rows_of_one_row_is_the_rule(values: list[float], rtol: float) -> None:
    x = np.array([values])
    got = argmax_rows(x, rtol, np.empty(x.shape, dtype=bool))
    assert got.dtype == np.int64 and got.tolist() == [_plain_first(x[0], rtol)]


def test_known_ties_and_edges() -> None:
    assert argmax_first(np.array([0.5, 1.0, 1.0 - 1e-14, 1.0])) == 1
    assert argmax_first(np.array([1.0 - 1e-14, 1.0])) == 0  # within the tolerance: the lower index
    assert argmax_first(np.array([-np.inf, -np.inf])) == 0
    assert argmax_first(np.array([0.1, np.nan, 0.3])) == 0  # as argmax of the comparison gives
    assert argmax_rows(np.array([[-np.inf, 2.0, 2.0]])).tolist() == [1]
    assert argmax_rows(np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 3.0]])).tolist() == [1, 0]


def test_one_row_paths_never_call_argmax() -> None:
    x = np.array([0.2, 0.9, 0.9, -1.0]).view(_NoArgmax)
    assert argmax_first(x) == 1
    assert argmax_rows(x[None, :]).tolist() == [1]
    with pytest.raises(AssertionError, match="argmax was called"):
        argmax_rows(np.stack([x, x]).view(_NoArgmax))  # several rows keep one argmax


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 20, 50, 64, 65, 120])
def test_pick_columns_hold_every_cosine(n: int, dtype: type) -> None:
    rng = np.random.default_rng(n)
    cand = rng.normal(size=(n, 384)).astype(dtype)
    prep = prepare_inputs(rng.normal(size=384), cand, k=5)
    store = PickColumns(prep, capacity=4)
    picks = np.array([3 % n, 0, (7 * n) // 9, 3 % n])
    cols = store.columns[store.slots(picks)].astype(np.float64)
    unit = cand.astype(np.float64) / np.linalg.norm(cand.astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(cols, unit[picks] @ unit.T, atol=1e-5 if dtype == np.float32 else 1e-12)
    assert store.columns[PickColumns.NONE].tolist() == [0.0] * n


def test_gmmr_select_is_its_sweeps_row() -> None:
    rng = np.random.default_rng(7)
    q, c = rng.normal(size=384).astype(np.float32), rng.normal(size=(50, 384)).astype(np.float32)
    for lam in (0.0, 0.5, 1.0):
        one = select("gmmr", q, c, 10, lambda_mult=lam)
        row = sweep("gmmr", q, c, 10, values=[0.3, lam, 0.9]).indices[1]
        assert one.indices.tolist() == row.tolist()
