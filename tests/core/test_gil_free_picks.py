"""The tie-tolerant argmax of one row and gMMR's small-pool columns: checked against the rule written out
with ``argmax``, and gMMR's select (the row of its sweep) against sweeps of several values."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core import select, sweep
from diverse_core.methods._common import (
    _GRAM_MAX_WORK,
    TIE_RTOL,
    PickColumns,
    argmax_first,
    argmax_rows,
)
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st


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


def _pool(seed: int, n: int, d: int, kind: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    if kind == 1:  # antipodal pairs: the picks' centroid cancels out (the exact-norm path)
        x[1::2] = -x[0::2][: n // 2]
    elif kind == 2:  # repeated rows and integer values: ties
        x = np.round(x)
        x[rng.integers(n, size=n // 2)] = x[0]
        x[np.all(x == 0, axis=1)] = 1.0
    return rng.normal(size=d).astype(dtype), x.astype(dtype)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**16), st.sampled_from([1, 2, 3, 7, 20, 50, 64, 65, 130]), st.sampled_from([2, 8, 384]),
    st.integers(0, 2), st.sampled_from([np.float32, np.float64]),
    st.sampled_from([0.0, 0.3, 0.5, 0.999, 1.0]), st.integers(1, 12),
)
def test_gmmr_select_is_its_sweeps_row_bit_for_bit(
    seed: int, n: int, d: int, kind: int, dtype: type, lam: float, k: int
) -> None:
    """``select`` gives the batched sweep's row exactly.

    Exactly: against a sweep of that one value always, and against a row of a sweep of several
    values when the pool's columns come from one Gram product (n * n * d <= 64 * 64 * 384). Above
    that a sweep computes the columns of the step's new picks in one product (gemm) where one
    value computes one column (gemv); the two may round one entry differently in the last place,
    so a row of a several-value sweep has select's picks and its scores up to that rounding.
    """
    q, c = _pool(seed, n, d, kind, dtype)
    one = select("gmmr", q, c, k, lambda_mult=lam)
    alone = sweep("gmmr", q, c, k, values=[lam])
    assert one.indices.tolist() == alone.indices[0].tolist()
    assert one.scores.tobytes() == alone.scores[0].tobytes()
    swept = sweep("gmmr", q, c, k, values=[0.7, lam])
    assert one.indices.tolist() == swept.indices[1].tolist()
    if n * n * d <= _GRAM_MAX_WORK:
        assert one.scores.tobytes() == swept.scores[1].tobytes()
    else:  # a few units in the last place of the working precision, through the objective's square root
        eps = float(np.finfo(dtype).eps)
        np.testing.assert_allclose(one.scores, swept.scores[1], rtol=0, atol=64 * eps)


def test_gmmr_several_value_sweep_rounds_like_select_within_ulps() -> None:
    """The example hypothesis found (seed 9, n 65, d 384, float32, lambda 0, k 6): the columns of a
    two-value sweep's step come from one product and round one score a unit in the last place
    away from select's; a sweep of that value alone matches select bit for bit."""
    q, c = _pool(9, 65, 384, 0, np.float32)
    one = select("gmmr", q, c, 6, lambda_mult=0.0)
    assert one.scores.tobytes() == sweep("gmmr", q, c, 6, values=[0.0]).scores[0].tobytes()
    swept = sweep("gmmr", q, c, 6, values=[0.7, 0.0])
    assert one.indices.tolist() == swept.indices[1].tolist()
    np.testing.assert_allclose(one.scores, swept.scores[1], rtol=0, atol=64 * float(np.finfo(np.float32).eps))


def test_gmmr_select_known_answer() -> None:
    q = np.array([1.0, 0.0])
    c = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]])
    sel = select("gmmr", q, c, 3, lambda_mult=0.5)
    assert sel.indices.tolist() == [0, 2, 1]  # the duplicate beats the opposite row on relevance
    # second pick: 0.5 * 0.6 + 0.5 * |c_2 - c_0| = 0.3 + 0.5 * sqrt(0.8)
    assert sel.scores[1] == pytest.approx(0.3 + 0.5 * np.sqrt(0.8), abs=1e-12)
