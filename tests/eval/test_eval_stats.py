"""Paired bootstrap intervals and the sign-flip permutation test, against exact references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.eval.stats import bootstrap_ci, gap_closed, permutation_p


def _exact_p(d: np.ndarray) -> float:
    """Every sign pattern enumerated (slow reference)."""
    obs = abs(d.mean())
    hits = [abs((np.array(s) * d).mean()) >= obs - 1e-12 for s in itertools.product((-1, 1), repeat=d.size)]
    return float(np.mean(hits))


def test_permutation_p_matches_exact_enumeration() -> None:
    rng = np.random.default_rng(0)
    for _ in range(3):
        d = rng.normal(0.2, 1.0, size=10)
        assert permutation_p(d, n_perm=20_000, seed=1) == pytest.approx(_exact_p(d), abs=0.01)


def test_all_positive_differences_are_significant_and_zero_is_not() -> None:
    d = np.full(12, 0.5)
    assert permutation_p(d, n_perm=5000) < 0.001
    assert permutation_p(np.zeros(12), n_perm=500) == 1.0


def test_bootstrap_interval_brackets_the_mean_and_is_exact_for_constants() -> None:
    assert bootstrap_ci(np.full(30, 0.25), n_boot=200) == (0.25, 0.25)
    rng = np.random.default_rng(2)
    x = rng.random(200)
    lo, hi = bootstrap_ci(x, n_boot=4000, seed=3)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert lo < x.mean() < hi
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.1)  # the normal approximation
    assert bootstrap_ci(x, n_boot=4000, seed=3) == (lo, hi)  # seeded
    assert bootstrap_ci(np.array([1.0, np.nan, 1.0]), n_boot=100) == (1.0, 1.0)  # NaN ignored


def test_gap_closed_and_bad_input() -> None:
    assert gap_closed(0.75, 0.5, 1.0) == 0.5
    assert np.isnan(gap_closed(0.5, 0.5, 0.5))
    with pytest.raises(InvalidParameterError):
        bootstrap_ci([np.nan])
