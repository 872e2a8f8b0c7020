"""diverse_core.metrics against brute-force definitions and hand-computed values."""

from __future__ import annotations

import itertools
import math

import diverse_core as dc
import numpy as np
import pytest
from core_refs import unit
from diverse_core.errors import (
    DimensionMismatchError,
    InvalidParameterError,
    NonFiniteInputError,
    ZeroVectorError,
)
from diverse_core.metrics import (
    jaccard,
    jaccard_matrix,
    kendall_tau,
    max_pairwise_distance,
    mean_pairwise_similarity,
    spearman_rho,
    vendi_score,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

SETTINGS = settings(max_examples=60, deadline=None)
seeds = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 10))


def emb(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def brute_vendi(x: np.ndarray, order: float) -> float:
    u = unit(x)
    w = np.linalg.eigvalsh(u @ u.T / len(u))
    w = w[w > 1e-12]
    if order == 1.0:
        return float(np.exp(-np.sum(w * np.log(w))))
    if math.isinf(order):
        return float(1.0 / w.max())
    if order == 0.0:
        return float(len(w))
    return float(np.sum(w**order) ** (1.0 / (1.0 - order)))


# --------------------------------------------------------------------------- vendi


@pytest.mark.parametrize("order", [0.0, 0.5, 1.0, 2.0, math.inf])
def test_vendi_extremes(order: float) -> None:
    assert vendi_score(np.eye(5), order) == pytest.approx(5.0)
    assert vendi_score(np.ones((4, 3)), order) == pytest.approx(1.0)
    assert vendi_score([[3.0, 4.0]], order) == 1.0
    # two identical pairs of orthogonal vectors = two distinct items
    assert vendi_score([[1, 0], [1, 0], [0, 2], [0, 5]], order) == pytest.approx(2.0)


@given(seeds, st.sampled_from([0.5, 1.0, 2.0, 3.0, math.inf]))
@SETTINGS
def test_vendi_matches_eigendecomposition(args: tuple[int, int, int], order: float) -> None:
    x = emb(*args)
    got = vendi_score(x, order)
    assert got == pytest.approx(brute_vendi(x, order), rel=1e-8)
    assert 1.0 - 1e-12 <= got <= len(x) + 1e-12
    scaled = x * np.random.default_rng(0).uniform(0.1, 10, size=(len(x), 1))
    assert vendi_score(scaled, order) == pytest.approx(got, rel=1e-9)


@given(seeds)
@SETTINGS
def test_vendi_non_increasing_in_order(args: tuple[int, int, int]) -> None:
    x = emb(*args)
    values = [vendi_score(x, q) for q in (0.0, 0.5, 1.0, 2.0, 5.0, math.inf)]
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(values))


def test_vendi_order_zero_is_rank() -> None:
    x = np.vstack([np.eye(3), np.eye(3)[:2] + np.eye(3)[1:]])
    assert vendi_score(x, 0.0) == 3.0


@pytest.mark.parametrize("order", [-1.0, math.nan, "1", None, True])
def test_vendi_bad_order(order: object) -> None:
    with pytest.raises(InvalidParameterError, match="order"):
        vendi_score(np.eye(2), order)  # type: ignore[arg-type]


def test_vendi_bad_embeddings() -> None:
    with pytest.raises(InvalidParameterError, match="embeddings"):
        vendi_score(np.zeros((0, 3)))
    with pytest.raises(DimensionMismatchError, match="embeddings"):
        vendi_score(np.ones(3))
    with pytest.raises(NonFiniteInputError, match="embeddings"):
        vendi_score([[1.0, np.nan]])
    with pytest.raises(ZeroVectorError, match=r"embeddings.*row 1"):
        vendi_score([[1.0, 0.0], [0.0, 0.0]])


# --------------------------------------------------------------------------- pairwise


def test_pairwise_hand_values() -> None:
    assert max_pairwise_distance([[1, 0], [0, 1]]) == pytest.approx(1.0)
    assert max_pairwise_distance([[1, 0], [-2, 0], [0, 1]]) == pytest.approx(2.0)
    assert max_pairwise_distance([[1, 1], [2, 2]]) == pytest.approx(0.0, abs=1e-12)
    assert max_pairwise_distance([[0, 0], [3, 4]], metric="euclidean") == pytest.approx(5.0)
    assert mean_pairwise_similarity([[1, 0], [1, 0], [0, 1]]) == pytest.approx(1 / 3)


@given(seeds)
@SETTINGS
def test_pairwise_match_brute_force(args: tuple[int, int, int]) -> None:
    x = emb(*args)
    if len(x) < 2:
        x = np.vstack([x, x + 1.0])
    u = unit(x)
    pairs = list(itertools.combinations(range(len(x)), 2))
    cos = [float(u[i] @ u[j]) for i, j in pairs]
    assert max_pairwise_distance(x) == pytest.approx(max(1 - c for c in cos), abs=1e-12)
    euclid = max(float(np.linalg.norm(x[i] - x[j])) for i, j in pairs)
    assert max_pairwise_distance(x, metric="euclidean") == pytest.approx(euclid, rel=1e-9)
    assert mean_pairwise_similarity(x) == pytest.approx(float(np.mean(cos)), abs=1e-12)


def test_pairwise_bad_input() -> None:
    for fn in (max_pairwise_distance, mean_pairwise_similarity):
        with pytest.raises(InvalidParameterError, match="embeddings"):
            fn([[1.0, 2.0]])
        with pytest.raises(NonFiniteInputError, match="embeddings"):
            fn([[1.0, 2.0], [np.inf, 1.0]])
        with pytest.raises(DimensionMismatchError, match="embeddings"):
            fn([1.0, 2.0])
    with pytest.raises(InvalidParameterError, match="metric"):
        max_pairwise_distance([[1, 0], [0, 1]], metric="manhattan")  # type: ignore[arg-type]
    with pytest.raises(ZeroVectorError, match="embeddings"):
        max_pairwise_distance([[1, 0], [0, 0]])


# --------------------------------------------------------------------------- jaccard


def test_jaccard_values() -> None:
    assert jaccard([1, 2, 3], [2, 3, 4]) == 0.5
    assert jaccard({1}, {1}) == 1.0
    assert jaccard([], []) == 1.0
    assert jaccard([1, 1, 2], [2]) == 0.5
    assert jaccard(np.array([0, 1]), np.array([2, 3])) == 0.0
    with pytest.raises(InvalidParameterError, match="a"):
        jaccard("abc", "abd")
    with pytest.raises(InvalidParameterError, match="b"):
        jaccard([1], [[1]])


@given(st.lists(st.lists(st.integers(0, 15), max_size=8), min_size=1, max_size=8))
@SETTINGS
def test_jaccard_matrix_matches_pairwise(sets: list[list[int]]) -> None:
    m = jaccard_matrix(sets)
    assert m.shape == (len(sets), len(sets))
    for i, j in itertools.product(range(len(sets)), repeat=2):
        assert m[i, j] == pytest.approx(jaccard(sets[i], sets[j]))
    np.testing.assert_array_equal(m, m.T)
    np.testing.assert_array_equal(np.diag(m), 1.0)


def test_jaccard_matrix_from_sweep() -> None:
    rng = np.random.default_rng(3)
    sw = dc.sweep("gmmr", rng.normal(size=8), rng.normal(size=(40, 8)), 5, [0.1, 0.5, 1.0])
    m = jaccard_matrix(sw.indices)
    assert m.shape == (3, 3)
    assert m[0, 2] == pytest.approx(jaccard(sw.indices[0], sw.indices[2]))
    with pytest.raises(DimensionMismatchError, match="sets"):
        jaccard_matrix(np.zeros((2, 2, 2)))
    with pytest.raises(InvalidParameterError, match="sets"):
        jaccard_matrix([])


# --------------------------------------------------------------------------- rank agreement


def brute_tau(x: list[float], y: list[float]) -> float:
    conc = disc = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        s = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
        conc += s > 0
        disc += s < 0
    return (conc - disc) / (len(x) * (len(x) - 1) / 2)


def test_rank_agreement_extremes() -> None:
    scores = [0.2, 0.9, 0.5, 0.1]
    best_first = [1, 2, 0, 3]
    assert kendall_tau(best_first, scores) == pytest.approx(1.0)
    assert spearman_rho(best_first, scores) == pytest.approx(1.0)
    assert kendall_tau(best_first[::-1], scores) == pytest.approx(-1.0)
    assert spearman_rho(best_first[::-1], scores) == pytest.approx(-1.0)
    assert math.isnan(kendall_tau([0, 1], [0.3, 0.3]))


@given(st.integers(0, 2**32 - 1), st.integers(2, 15))
@SETTINGS
def test_rank_agreement_brute_force(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=n + 3)
    ranking = rng.permutation(n + 3)[:n]
    positions = [-float(p) for p in range(n)]
    ref = [float(scores[i]) for i in ranking]
    assert kendall_tau(ranking, scores) == pytest.approx(brute_tau(positions, ref))
    rho = 1 - 6 * sum(
        (a - b) ** 2 for a, b in zip(stats.rankdata(positions), stats.rankdata(ref), strict=True)
    ) / (n * (n * n - 1))
    assert spearman_rho(ranking, scores) == pytest.approx(rho)


def test_topk_selection_has_perfect_rank_agreement_with_cosine() -> None:
    rng = np.random.default_rng(4)
    q, c = rng.normal(size=6), rng.normal(size=(30, 6))
    cos = unit(c) @ unit(q)
    assert kendall_tau(dc.select("topk", q, c, 8).indices, cos) == pytest.approx(1.0)
    assert kendall_tau(np.argsort(-cos), cos) == pytest.approx(1.0)


@pytest.mark.parametrize("fn", [kendall_tau, spearman_rho])
def test_rank_agreement_bad_input(fn) -> None:  # type: ignore[no-untyped-def]
    scores = [0.1, 0.2, 0.3]
    with pytest.raises(InvalidParameterError, match="repeated"):
        fn([0, 0, 1], scores)
    with pytest.raises(InvalidParameterError, match="outside"):
        fn([0, 3], scores)
    with pytest.raises(InvalidParameterError, match="at least 2"):
        fn([1], scores)
    with pytest.raises(InvalidParameterError, match="integer"):
        fn([0.0, 1.0], scores)
    with pytest.raises(NonFiniteInputError, match="reference_scores"):
        fn([0, 1], [0.1, np.nan, 0.3])
    with pytest.raises(DimensionMismatchError, match="reference_scores"):
        fn([0, 1], [[0.1, 0.2]])
    with pytest.raises(DimensionMismatchError, match="ranking"):
        fn([[0, 1]], scores)
