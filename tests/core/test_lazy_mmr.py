"""The lazy (bound-and-refresh) MMR path equals the eager computation pick for pick."""

from __future__ import annotations

import numpy as np
import pytest
from core_refs import ref_mmr
from diverse_core import select
from diverse_core.methods import mmr as mmr_module
from diverse_core.methods.mmr import LAZY_MIN_N, _mmr_lazy, mmr_sweep
from diverse_core.validation import prepare_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def clustered(
    seed: int, n: int, d: int, n_centres: int, copies: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Near-duplicate clusters (plus exact duplicates if ``copies``): the hard case for bounds."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_centres, d))
    cand = centres[rng.integers(0, n_centres, size=n)] + 0.05 * rng.normal(size=(n, d))
    if copies:
        cand[1::7] = cand[0::7][: cand[1::7].shape[0]]
    return rng.normal(size=d), cand


@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 60),
    st.integers(2, 8),
    st.integers(1, 15),
    st.integers(1, 6),
    st.floats(0.0, 1.0),
)
@SETTINGS
def test_lazy_equals_eager(seed: int, n: int, d: int, k: int, centres: int, lam: float) -> None:
    q, c = clustered(seed, n, d, centres)
    prep = prepare_inputs(q, c, k)
    eager_picks, eager_scores = mmr_sweep(prep, np.array([lam]))
    lazy_picks, lazy_scores = _mmr_lazy(prep, lam)
    if ref_mmr(q, c, k, lam)[2] > 1e-9:  # exact duplicates tie exactly: both go lowest index
        assert lazy_picks.tolist() == eager_picks[0].tolist()
        np.testing.assert_allclose(lazy_scores, eager_scores[0], atol=1e-12)
    assert len(set(lazy_picks.tolist())) == min(k, n)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(LAZY_MIN_N, 80),
    st.integers(2, 8),
    st.integers(3, 15),
    st.integers(1, 6),
    st.floats(0.0, 1.0),
    st.sampled_from([1, 2, 5]),
)
@SETTINGS
def test_lazy_equals_eager_when_the_short_list_grows(
    seed: int, n: int, d: int, k: int, centres: int, lam: float, short: int
) -> None:
    # a tiny first list forces the refresh path (candidates added after several picks)
    q, c = clustered(seed, n, d, centres)
    prep = prepare_inputs(q, c, k)
    eager_picks, eager_scores = mmr_sweep(prep, np.array([lam]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mmr_module, "_SHORT_LIST", short)
        lazy_picks, lazy_scores = _mmr_lazy(prep, lam)
    if ref_mmr(q, c, k, lam)[2] > 1e-9:
        assert lazy_picks.tolist() == eager_picks[0].tolist()
        np.testing.assert_allclose(lazy_scores, eager_scores[0], atol=1e-12)
    assert len(set(lazy_picks.tolist())) == min(k, n)


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 0.7, 0.95, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_lazy_path_used_on_large_pools_matches_langchain(lam: float, seed: int) -> None:
    lc = pytest.importorskip("langchain_core.vectorstores.utils")
    q, c = clustered(seed, 3 * LAZY_MIN_N, 24, 12, copies=False)
    expected = lc.maximal_marginal_relevance(q, c, lambda_mult=lam, k=15)
    assert ref_mmr(q, c, 15, lam)[2] > 1e-9  # no near-tie decides a pick
    assert select("mmr", q, c, k=15, lambda_mult=lam).indices.tolist() == expected


def test_lazy_exact_duplicates_tie_to_lowest_index() -> None:
    rng = np.random.default_rng(5)
    base = rng.normal(size=(40, 6))
    c = np.concatenate([base] * 5)  # every row appears five times
    q = rng.normal(size=6)
    prep = prepare_inputs(q, c, 20)
    lazy, _ = _mmr_lazy(prep, 0.6)
    eager, _ = mmr_sweep(prep, np.array([0.6]))
    assert lazy.tolist() == eager[0].tolist()
    assert all(i < 40 for i in lazy[:1])  # the first copy of the most relevant row


def test_lazy_float32_matches_float64_away_from_ties() -> None:
    rng = np.random.default_rng(11)
    c = rng.normal(size=(1000, 128))
    q = rng.normal(size=128)
    for lam in (0.2, 0.5, 0.8):
        want = select("mmr", q, c, k=10, lambda_mult=lam).indices.tolist()
        assert ref_mmr(q, c, 10, lam)[2] > 1e-4  # no pick within float32 noise of a tie
        got = select("mmr", q.astype(np.float32), c.astype(np.float32), 10, lambda_mult=lam)
        assert got.indices.tolist() == want
