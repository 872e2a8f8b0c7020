"""DF-RAG tuning helpers: Tie-Breaking Gate and binary-search sampling."""

from __future__ import annotations

import math

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from diverse_core.tuning import (
    BinarySearchResult,
    argmax_upper_median,
    binary_search_sample,
    upper_median,
)
from hypothesis import given, settings
from hypothesis import strategies as st

GRID = [round(0.1 * i, 1) for i in range(1, 11)]
SETTINGS = settings(max_examples=100, deadline=None)


def test_upper_median() -> None:
    assert upper_median([0.5]) == 0.5
    assert upper_median([0.3, 0.1, 0.2]) == 0.2
    assert upper_median([0.4, 0.1, 0.3, 0.2]) == 0.3  # even count: upper of the middle two
    assert upper_median([0.1, 0.9]) == 0.9
    assert upper_median(np.array([1, 1, 2, 2])) == 2.0


@given(st.lists(st.floats(-10, 10), min_size=1, max_size=20))
@SETTINGS
def test_upper_median_is_a_member_with_half_below(values: list[float]) -> None:
    m = upper_median(values)
    assert m in values
    half = len(values) // 2
    assert sum(v < m for v in values) <= half and sum(v <= m for v in values) >= half + 1


def test_upper_median_bad_input() -> None:
    with pytest.raises(InvalidParameterError, match="values"):
        upper_median([])
    with pytest.raises(NonFiniteInputError, match="values"):
        upper_median([0.1, math.nan])
    with pytest.raises(DimensionMismatchError, match="values"):
        upper_median([[0.1, 0.2]])


def test_argmax_upper_median() -> None:
    assert argmax_upper_median(GRID, [1, 3, 2, 0, 0, 0, 0, 0, 0, 0]) == 0.2
    # ties at 0.2, 0.5, 0.7, 0.9 -> upper median of four = 0.7
    assert argmax_upper_median(GRID, [0, 4, 0, 0, 4, 0, 4, 0, 4, 0]) == 0.7
    assert argmax_upper_median(GRID, [4] * 10) == 0.6
    assert argmax_upper_median([0.9, 0.1, 0.5], [2, 2, 2]) == 0.5  # order of input irrelevant
    with pytest.raises(DimensionMismatchError, match="scores"):
        argmax_upper_median(GRID, [1, 2])
    with pytest.raises(NonFiniteInputError, match="scores"):
        argmax_upper_median([0.1, 0.2], [1, math.inf])


class Counter:
    def __init__(self, fn):  # type: ignore[no-untyped-def]
        self.fn, self.calls = fn, []

    def __call__(self, v: float) -> float:
        self.calls.append(v)
        return float(self.fn(v))


@pytest.mark.parametrize("peak", GRID)
def test_binary_search_finds_unimodal_peak_in_log_calls(peak: float) -> None:
    f = Counter(lambda v: -abs(v - peak))
    r = binary_search_sample(GRID, f)
    assert isinstance(r, BinarySearchResult)
    assert r.chosen == peak and r.peak == peak
    assert list(r.evaluated) == f.calls and len(set(f.calls)) == len(f.calls)
    assert r.n_evaluations <= 2 * math.ceil(math.log2(len(GRID))) and r.n_evaluations < len(GRID)
    assert r.scores == tuple(-abs(v - peak) for v in r.evaluated)


def test_binary_search_follows_the_bisection_steps() -> None:
    # lo=0, hi=9: mid=4 (0.5 vs 0.6, rises) -> lo=5; mid=7 (0.8 vs 0.9, falls) -> hi=7;
    # mid=6 (0.7 vs 0.8, rises) -> lo=7 -> peak 0.8
    f = Counter(lambda v: -((v - 0.8) ** 2))
    r = binary_search_sample(GRID, f)
    assert f.calls == [0.5, 0.6, 0.8, 0.9, 0.7]
    assert r.peak == 0.8 and r.chosen == 0.8


def test_binary_search_ties_use_the_gate_over_evaluated_values() -> None:
    # flat score: bisection always goes left; the gate picks the upper median of what it saw
    f = Counter(lambda v: 3.0)
    r = binary_search_sample(GRID, f)
    assert r.peak == 0.1
    assert r.chosen == upper_median(r.evaluated)
    assert set(r.evaluated) <= set(GRID)


@given(st.integers(1, 30), st.data())
@SETTINGS
def test_binary_search_exact_on_strictly_unimodal(n: int, data: st.DataObject) -> None:
    grid = [i / n for i in range(n)]
    top = data.draw(st.integers(0, n - 1))
    rises = sorted(
        data.draw(st.lists(st.integers(-50, 50), min_size=top, max_size=top, unique=True))
    )
    falls = sorted(
        data.draw(
            st.lists(st.integers(-50, 50), min_size=n - 1 - top, max_size=n - 1 - top, unique=True)
        ),
        reverse=True,
    )
    values = [*rises, 100, *falls]
    score = dict(zip(grid, values, strict=True))
    r = binary_search_sample(grid, lambda v: score[v])
    assert r.chosen == grid[top] == r.peak
    assert r.n_evaluations <= max(1, 2 * math.ceil(math.log2(n)))


@given(st.lists(st.integers(0, 5), min_size=1, max_size=12))
@SETTINGS
def test_binary_search_choice_is_best_evaluated(scores: list[int]) -> None:
    grid = list(range(len(scores)))
    r = binary_search_sample(grid, lambda v: scores[int(v)])
    assert r.chosen == argmax_upper_median(r.evaluated, r.scores)
    assert scores[int(r.chosen)] == max(r.scores) >= scores[int(r.peak)]


def test_binary_search_single_value_and_errors() -> None:
    r = binary_search_sample([0.4], lambda v: 1.0)
    assert r.evaluated == (0.4,) and r.chosen == 0.4 and r.peak == 0.4
    with pytest.raises(InvalidParameterError, match="grid"):
        binary_search_sample([], lambda v: 1.0)
    with pytest.raises(InvalidParameterError, match="strictly increasing"):
        binary_search_sample([0.2, 0.1], lambda v: 1.0)
    with pytest.raises(InvalidParameterError, match="strictly increasing"):
        binary_search_sample([0.1, 0.1], lambda v: 1.0)
    with pytest.raises(InvalidParameterError, match="score_fn"):
        binary_search_sample(GRID, 3)  # type: ignore[arg-type]
    with pytest.raises(NonFiniteInputError, match="score_fn"):
        binary_search_sample(GRID, lambda v: math.nan)
    with pytest.raises(InvalidParameterError, match="score_fn"):
        binary_search_sample(GRID, lambda v: "high")  # type: ignore[arg-type,return-value]


def test_the_old_package_names_still_answer_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="import it from diverse_core.tuning"):
        assert dc.binary_search_sample is binary_search_sample
    with pytest.warns(DeprecationWarning):
        assert dc.upper_median is upper_median and dc.argmax_upper_median is argmax_upper_median
    assert "upper_median" not in dc.__all__ and "upper_median" not in dir(dc)
