"""MMR on larger pools: LangChain's picks, exact duplicates, float32 against float64."""

from __future__ import annotations

import numpy as np
import pytest
from core_refs import ref_mmr
from diverse_core import select
from hypothesis import HealthCheck, settings

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


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 0.7, 0.95, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_mmr_matches_langchain(lam: float, seed: int) -> None:
    lc = pytest.importorskip("langchain_core.vectorstores.utils")
    q, c = clustered(seed, 48, 24, 12, copies=False)
    expected = lc.maximal_marginal_relevance(q, c, lambda_mult=lam, k=15)
    assert ref_mmr(q, c, 15, lam)[2] > 1e-9  # no near-tie decides a pick
    assert select("mmr", q, c, k=15, lambda_mult=lam).indices.tolist() == expected


def test_exact_duplicates_tie_to_lowest_index() -> None:
    rng = np.random.default_rng(5)
    base = rng.normal(size=(40, 6))
    c = np.concatenate([base] * 5)  # every row appears five times
    q = rng.normal(size=6)
    picks = select("mmr", q, c, 20, lambda_mult=0.6).indices
    assert all(i < 40 for i in picks[:1])  # the first copy of the most relevant row
    assert len(set(picks.tolist())) == 20


def test_float32_matches_float64_away_from_ties() -> None:
    rng = np.random.default_rng(11)
    c = rng.normal(size=(1000, 128))
    q = rng.normal(size=128)
    for lam in (0.2, 0.5, 0.8):
        want = select("mmr", q, c, k=10, lambda_mult=lam).indices.tolist()
        assert ref_mmr(q, c, 10, lam)[2] > 1e-4  # no pick within float32 noise of a tie
        got = select("mmr", q.astype(np.float32), c.astype(np.float32), 10, lambda_mult=lam)
        assert got.indices.tolist() == want
