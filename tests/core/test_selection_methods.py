"""topk / mmr / gmmr / dartboard: known answers, paper examples, reference implementations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from core_refs import ref_dartboard, ref_gmmr, ref_mmr, ref_topk, unit
from diverse_core import select, sweep
from diverse_core.methods._common import argmax_first, argmax_rows
from diverse_core.methods.dartboard import QUERY
from diverse_core.validation import TIE_RTOL_FLOAT32, TIE_RTOL_FLOAT64
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

GREEDY = ("mmr", "gmmr", "dartboard")
ALL = ("topk", "mmr", "gmmr", "dartboard")
PARAM = {
    "topk": {},
    "mmr": {"lambda_mult": 0.5},
    "gmmr": {"lambda_mult": 0.5},
    "dartboard": {"sigma": 0.3},
}
GAP = 1e-9  # skip random inputs whose picks hinge on a near-tie

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pool(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=d), rng.normal(size=(n, d))


pools = st.tuples(
    st.integers(0, 2**32 - 1), st.integers(1, 25), st.integers(2, 8), st.integers(1, 12)
)

# --------------------------------------------------------------------------- known answers


def test_topk_known_order_and_ties_go_to_lowest_index() -> None:
    q = np.array([1.0, 0.0])
    c = np.array([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8], [1.0, 0.0], [0.8, 0.6]])
    sel = select("topk", q, c, k=4)
    assert sel.indices.tolist() == [1, 3, 4, 2]
    np.testing.assert_allclose(sel.scores, [1.0, 1.0, 0.8, 0.6])
    np.testing.assert_allclose(sel.relevance, sel.scores)


@pytest.mark.parametrize("method", GREEDY)
def test_first_pick_tie_goes_to_lowest_index(method: str) -> None:
    q = np.array([1.0, 0.0, 0.0])
    c = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [2.0, 0.0, 0.0]])
    assert select(method, q, c, k=1, **PARAM[method]).indices.tolist() == [1]


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("k", [5, 6, 50])
def test_k_at_least_n_returns_everything_once(method: str, k: int) -> None:
    q, c = pool(3, 5, 4)
    sel = select(method, q, c, k=k, **PARAM[method])
    assert len(sel) == 5 and sorted(sel.indices.tolist()) == [0, 1, 2, 3, 4]
    # pick order is the method's own: the first k-1 picks agree with a k=4 run
    assert sel.indices[:4].tolist() == select(method, q, c, k=4, **PARAM[method]).indices.tolist()


def test_mmr_hand_computed_scores() -> None:
    q = np.array([1.0, 0.0])
    c = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
    sel = select("mmr", q, c, k=3, lambda_mult=0.5)
    # step 2: c1 = .5*.8 - .5*.8 = 0, c2 = .5*0 - .5*0 = 0 -> tie, lowest index
    assert sel.indices.tolist() == [0, 1, 2]
    np.testing.assert_allclose(sel.scores, [0.5, 0.0, -0.3], atol=1e-12)


def test_gmmr_hand_computed_scores() -> None:
    q = np.array([1.0, 0.0])
    c = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    sel = select("gmmr", q, c, k=3, lambda_mult=0.5)
    # step 2 (centroid = c0): c1 -> .5*1 + 0, c2 -> .5*.6 + .5*sqrt(2-1.2), c3 -> 0 + .5*sqrt(2)
    s2 = 0.3 + 0.5 * np.sqrt(0.8)
    assert s2 > 0.5 * np.sqrt(2) and sel.indices[:2].tolist() == [0, 2]
    # step 3: centroid of c0, c2 = (0.8, 0.4), |.| = sqrt(.8); cos(c3, centroid) = .4 / sqrt(.8)
    cos3 = 0.4 / np.sqrt(0.8)
    s3_c3 = 0.5 * np.sqrt(2 - 2 * cos3)
    s3_c1 = 0.5 + 0.5 * np.sqrt(2 - 2 * (0.8 / np.sqrt(0.8)))
    assert sel.indices[2] == (3 if s3_c3 > s3_c1 else 1)
    np.testing.assert_allclose(sel.scores, [1.0, s2, max(s3_c1, s3_c3)], atol=1e-12)


def test_gmmr_uses_centroid_not_max_similarity() -> None:
    # Two opposite picks cancel out: centroid has zero length -> every distance is sqrt(2).
    q = np.array([1.0, 0.0, 0.0])
    c = np.array([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.1, 0.0, 1.0], [0.05, 1.0, 0.0]])
    sel = select("gmmr", q, c, k=3, lambda_mult=0.3, relevance=[3.0, 2.0, 0.0, 0.5])
    assert sel.indices[:2].tolist() == [0, 1]
    # with a zero centroid only relevance differs: c3 (0.5) beats c2 (0.0)
    assert sel.indices[2] == 3
    np.testing.assert_allclose(sel.scores[2], 0.3 * 0.5 + 0.7 * np.sqrt(2.0))


def test_gmmr_float32_nearly_cancelling_picks_keep_their_centroid() -> None:
    # The two first picks nearly cancel out (|u0 + u1|^2 = 1e-6). A running update of
    # the centroid's length from float32 products would be ~10% off here; the sweep
    # recomputes such lengths in float64, so float32 scores follow the float64 ones.
    q = np.array([1.0, 0.0, 0.0])
    c = np.array(
        [[0.0, 1.0, 0.0], [0.0, -1.0, 1e-3], [0.0, 0.3, 1.0], [0.2, 0.0, -1.0], [0.1, 0.5, 0.5]]
    )
    rel = [3.0, 2.0, 0.0, 0.0, 0.0]
    exact = select("gmmr", q, c, k=5, lambda_mult=0.2, relevance=rel)
    single = select("gmmr", q, c.astype(np.float32), k=5, lambda_mult=0.2, relevance=rel)
    assert single.indices.tolist() == exact.indices.tolist()
    np.testing.assert_allclose(single.scores, exact.scores, atol=1e-4)


# --------------------------------------------------------------------------- paper examples


A7_VECTORS = np.array([[2.0, 1.0], [2.0, 1.0], [1.0, 2.0], [0.0, 1.0]])
A7_PROBE = np.array([2.0, 1.0])


def test_a7_mmr_returns_both_copies_like_langchain() -> None:
    lc = pytest.importorskip("langchain_core.vectorstores.utils")
    sel = select("mmr", A7_PROBE, A7_VECTORS, k=3, lambda_mult=0.5)
    assert {0, 1} <= set(sel.indices.tolist())
    assert sel.indices.tolist() == lc.maximal_marginal_relevance(A7_PROBE, A7_VECTORS, 0.5, 3)


@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.5, 2.0])
def test_a7_dartboard_defers_the_exact_duplicate(sigma: float) -> None:
    sel = select("dartboard", A7_PROBE, A7_VECTORS, k=3, sigma=sigma)
    assert sel.indices[0] == 0 and 1 not in sel.indices.tolist()
    everything = select("dartboard", A7_PROBE, A7_VECTORS, k=4, sigma=sigma)
    assert everything.indices[-1] == 1  # only once every non-duplicate is used up


@given(pools, st.floats(0.05, 3.0))
@SETTINGS
def test_dartboard_never_repeats_a_duplicate_early(
    args: tuple[int, int, int, int], sigma: float
) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    c = np.vstack([c, c[: max(1, n // 2)]])  # exact copies appended
    sel = select("dartboard", q, c, k=k, sigma=sigma)
    distinct = {tuple(np.round(unit(c[i]), 12)) for i in sel.indices}
    assert len(distinct) == min(len(sel), n)


# --------------------------------------------------------------------------- reductions


@given(pools)
@SETTINGS
def test_lambda_one_reduces_to_topk(args: tuple[int, int, int, int]) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    top = select("topk", q, c, k=k).indices.tolist()
    assert top == ref_topk(q, c, k)
    assert select("mmr", q, c, k=k, lambda_mult=1.0).indices.tolist() == top
    assert select("gmmr", q, c, k=k, lambda_mult=1.0).indices.tolist() == top


@given(pools)
@SETTINGS
def test_tiny_sigma_reduces_dartboard_to_topk(args: tuple[int, int, int, int]) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    rel = unit(c) @ unit(q)
    ordered = np.sort(rel)[::-1]
    assume(n == 1 or np.min(-np.diff(ordered)) > 1e-6)  # distinct relevances
    assert select("dartboard", q, c, k=k, sigma=1e-4).indices.tolist() == ref_topk(q, c, k)


# --------------------------------------------------------------------------- references


@given(pools, st.floats(0.0, 1.0))
@SETTINGS
def test_mmr_matches_reference(args: tuple[int, int, int, int], lam: float) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    picks, scores, gap = ref_mmr(q, c, k, lam)
    assume(gap > GAP)
    sel = select("mmr", q, c, k=k, lambda_mult=lam)
    assert sel.indices.tolist() == picks
    np.testing.assert_allclose(sel.scores, scores, rtol=1e-9, atol=1e-12)


@given(pools, st.floats(0.0, 1.0))
@SETTINGS
def test_gmmr_matches_reference(args: tuple[int, int, int, int], lam: float) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    picks, scores, gap = ref_gmmr(q, c, k, lam)
    assume(gap > GAP)
    sel = select("gmmr", q, c, k=k, lambda_mult=lam)
    assert sel.indices.tolist() == picks
    np.testing.assert_allclose(sel.scores, scores, rtol=1e-9, atol=1e-12)


@given(pools, st.floats(0.05, 3.0), st.sampled_from([None, 3, 8]))
@SETTINGS
def test_dartboard_matches_algorithm_1(
    args: tuple[int, int, int, int], sigma: float, triage_k: int | None
) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    picks, scores, gap = ref_dartboard(q, c, k, sigma, triage_k)
    assume(gap > 1e-9)
    sel = select("dartboard", q, c, k=k, sigma=sigma, triage_k=triage_k)
    assert sel.indices.tolist() == picks
    np.testing.assert_allclose(sel.scores, scores, rtol=1e-9, atol=1e-9)


@given(pools, st.floats(0.0, 1.0))
@SETTINGS
def test_mmr_equals_langchain(args: tuple[int, int, int, int], lam: float) -> None:
    lc = pytest.importorskip("langchain_core.vectorstores.utils")
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    assume(ref_mmr(q, c, k, lam)[2] > GAP)
    assert select(
        "mmr", q, c, k=k, lambda_mult=lam
    ).indices.tolist() == lc.maximal_marginal_relevance(q, c, lambda_mult=lam, k=k)


def test_mmr_equals_langchain_on_larger_pools() -> None:
    lc = pytest.importorskip("langchain_core.vectorstores.utils")
    for seed in range(5):
        q, c = pool(seed, 300, 64)
        for lam in (0.0, 0.25, 0.5, 0.9):
            ours = select("mmr", q, c, k=12, lambda_mult=lam).indices.tolist()
            assert ours == lc.maximal_marginal_relevance(q, c, lambda_mult=lam, k=12)


# --------------------------------------------------------------------------- sweep == loop


@pytest.mark.parametrize(
    ("method", "values"),
    [
        ("mmr", np.round(np.arange(0, 11) / 10, 1)),
        ("gmmr", np.round(np.arange(1, 11) / 10, 1)),
        ("dartboard", [0.01, 0.05, 0.1, 0.3, 1.0, 4.0]),
    ],
)
@pytest.mark.parametrize("seed", range(4))
def test_sweep_equals_loop_of_select(method: str, values: list[float], seed: int) -> None:
    q, c = pool(seed, 60 + 40 * seed, 16)
    sw = sweep(method, q, c, 8, values)
    assert sw.indices.shape == (len(values), 8) and sw.param == (
        "sigma" if method == "dartboard" else "lambda_mult"
    )
    for i, v in enumerate(values):
        one = select(method, q, c, 8, **{sw.param: float(v)})
        assert sw.indices[i].tolist() == one.indices.tolist(), (method, v)
        np.testing.assert_allclose(sw.scores[i], one.scores, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sw.relevance[i], one.relevance)
        assert sw.selection(i).params[sw.param] == float(v)


@given(pools, st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
@SETTINGS
def test_sweep_equals_loop_property(args: tuple[int, int, int, int], values: list[float]) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    for method in ("mmr", "gmmr"):
        sw = sweep(method, q, c, k, values)
        for i, v in enumerate(values):
            assert sw.indices[i].tolist() == select(method, q, c, k, lambda_mult=v).indices.tolist()


# --------------------------------------------------------------------------- invariants


def _reference_margin(method: str, q: np.ndarray, c: np.ndarray, k: int) -> float:
    """Smallest objective margin between the winner and the runner-up over all steps."""
    if method == "topk":
        rel = np.sort(unit(c) @ unit(q))[::-1][: k + 1]
        return float(np.min(-np.diff(rel))) if rel.size > 1 else np.inf
    ref = {"mmr": ref_mmr, "gmmr": ref_gmmr, "dartboard": ref_dartboard}[method]
    return float(ref(q, c, k, PARAM[method].get("lambda_mult", PARAM[method].get("sigma"))
                     )[2])


@given(pools, st.sampled_from(ALL), st.sampled_from([np.float32, np.float64]))
@SETTINGS
def test_invariants(args: tuple[int, int, int, int], method: str, dtype: type) -> None:
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    q, c = q.astype(dtype), c.astype(dtype)
    q0, c0 = q.copy(), c.copy()
    sel = select(method, q, c, k=k, **PARAM[method])
    idx = sel.indices.tolist()
    assert len(idx) == min(k, n) == len(sel.scores) == len(sel.relevance)
    assert len(set(idx)) == len(idx) and all(0 <= i < n for i in idx)
    rel = unit(c) @ unit(q)
    # float32 input is computed in float32: relevance agrees to float32 precision
    tol = 1e-6 if dtype is np.float32 else 1e-12
    assert rel[idx[0]] >= rel.max() - tol  # first pick is the most relevant
    np.testing.assert_allclose(sel.relevance, rel[idx], atol=tol)
    np.testing.assert_array_equal(q, q0)
    np.testing.assert_array_equal(c, c0)
    assert q.dtype == dtype and c.dtype == dtype
    # ... and picks what the float64 computation picks, unless a step hinges on a
    # margin below the float32 tie tolerance (1e-5)
    again = select(method, q.astype(np.float64), c.astype(np.float64), k=k, **PARAM[method])
    if dtype is np.float64 or _reference_margin(method, q, c, k) > 1e-4:
        assert again.indices.tolist() == idx
    assert sel.indices.dtype == np.int64 and sel.scores.dtype == np.float64


@given(pools, st.sampled_from(ALL), st.randoms(use_true_random=False))
@SETTINGS
def test_permuting_candidates_permutes_picks(
    args: tuple[int, int, int, int], method: str, rnd
) -> None:  # type: ignore[no-untyped-def]
    seed, n, d, k = args
    q, c = pool(seed, n, d)
    ref = {
        "topk": lambda: (ref_topk(q, c, k), None, np.inf),
        "mmr": lambda: ref_mmr(q, c, k, 0.5),
        "gmmr": lambda: ref_gmmr(q, c, k, 0.5),
        "dartboard": lambda: ref_dartboard(q, c, k, 0.3),
    }[method]()
    assume(ref[2] > 1e-7)
    perm = list(range(n))
    rnd.shuffle(perm)
    perm_arr = np.array(perm)
    base = select(method, q, c, k=k, **PARAM[method]).indices
    moved = select(method, q, c[perm_arr], k=k, **PARAM[method]).indices
    assert perm_arr[moved].tolist() == base.tolist()


def test_scale_of_vectors_does_not_matter() -> None:
    q, c = pool(7, 40, 6)
    scaled = c * np.random.default_rng(1).uniform(0.01, 100, size=(40, 1))
    for method in ALL:
        assert (
            select(method, q * 3.0, scaled, 6, **PARAM[method]).indices.tolist()
            == select(method, q, c, 6, **PARAM[method]).indices.tolist()
        )


# --------------------------------------------------------------------------- dartboard variants


def _cosine_scorer(q: np.ndarray, c: np.ndarray):  # type: ignore[no-untyped-def]
    qu, cu = unit(q), unit(c)
    calls: list[int] = []

    def scorer(pairs):  # type: ignore[no-untyped-def]
        calls.append(len(pairs))
        return [float(qu @ cu[j]) if i == QUERY else float(cu[i] @ cu[j]) for i, j in pairs]

    return scorer, calls


@pytest.mark.parametrize("sigma", [0.05, 0.2, 1.0])
def test_crossencoder_with_cosine_scorer_equals_cosine_variant(sigma: float) -> None:
    q, c = pool(11, 30, 8)
    scorer, calls = _cosine_scorer(q, c)
    base = select("dartboard", q, c, 6, sigma=sigma)
    cc = select(
        "dartboard", q, c, 6, sigma=sigma, variant="crossencoder", scorer=scorer, triage_k=10
    )
    cos10 = select("dartboard", q, c, 6, sigma=sigma, triage_k=10)
    assert cc.indices.tolist() == cos10.indices.tolist()
    np.testing.assert_allclose(cc.scores, cos10.scores, rtol=1e-9)
    assert sum(calls) == 10 + 10 * 10  # query pairs + every ordered candidate pair
    hy = select("dartboard", q, c, 6, sigma=sigma, variant="hybrid", scorer=scorer)
    assert hy.indices.tolist() == base.indices.tolist()
    np.testing.assert_allclose(hy.scores, base.scores, rtol=1e-9)


def test_hybrid_takes_query_relevance_from_the_scorer() -> None:
    q, c = pool(5, 20, 8)
    favourite = int(np.argsort(unit(c) @ unit(q))[3])  # not the most cosine-relevant

    def scorer(pairs):  # type: ignore[no-untyped-def]
        return [0.95 if j == favourite else 0.2 for _, j in pairs]

    sel = select("dartboard", q, c, 4, sigma=0.2, variant="hybrid", scorer=scorer, triage_k=None)
    assert sel.indices[0] == favourite
    assert select("dartboard", q, c, 4, sigma=0.2).indices[0] != favourite


def test_crossencoder_scorer_must_return_one_finite_score_per_pair() -> None:
    from diverse_core.errors import DimensionMismatchError, InvalidParameterError

    q, c = pool(5, 6, 4)
    with pytest.raises(DimensionMismatchError, match="scorer"):
        select("dartboard", q, c, 3, variant="crossencoder", scorer=lambda pairs: [0.5])
    with pytest.raises(InvalidParameterError, match="scorer"):
        select(
            "dartboard", q, c, 3, variant="crossencoder", scorer=lambda pairs: [np.nan] * len(pairs)
        )


def test_relevance_override_changes_first_pick() -> None:
    q, c = pool(2, 10, 4)
    rel = np.zeros(10)
    rel[7] = 1.0
    for method in ALL:
        sel = select(method, q, c, 3, relevance=rel, **PARAM[method])
        assert sel.indices[0] == 7 and sel.relevance[0] == 1.0


@given(
    st.lists(st.integers(min_value=-3, max_value=3), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=45),
)
def test_topk_equals_stable_full_sort_with_many_ties(levels: list[int], k: int) -> None:
    # few distinct relevance levels: ties straddle the k-th place in most examples
    rel = np.array(levels, dtype=np.float64)
    c = np.random.default_rng(len(levels)).normal(size=(len(levels), 3))
    sel = select("topk", np.ones(3), c, k=k, relevance=rel)
    expected = np.argsort(-rel, kind="stable")[: min(k, len(levels))]
    assert sel.indices.tolist() == expected.tolist()


@SETTINGS
@given(
    st.lists(st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 0.5 - 1e-13, 0.5 + 1e-6, 2.0]), min_size=1,
             max_size=30),
    st.sampled_from([TIE_RTOL_FLOAT64, TIE_RTOL_FLOAT32]),
)
def test_argmax_first_equals_argmax_rows(values: list[float], rtol: float) -> None:
    # levels closer than the tolerance (0.5 and 0.5 - 1e-13), -inf (already picked) and
    # near-ties on either side of the maximum: the one-row helper must agree everywhere
    row = np.array(values, dtype=np.float64)
    assert argmax_first(row, rtol) == int(argmax_rows(row[None, :], rtol)[0])


@pytest.mark.parametrize("method", (*ALL, "vendi"))
@pytest.mark.parametrize(
    ("scale", "dtype"),
    [(1e-200, np.float64), (1e200, np.float64), (1e-25, np.float32), (1e25, np.float32)],
)
def test_vectors_of_extreme_magnitude_are_normalised(
    method: str, scale: float, dtype: type
) -> None:
    # squared norms and row products would under/overflow: the exact (rescaling) path
    # takes over, silently, and the picks are those of the same vectors at unit scale
    rng = np.random.default_rng(3)
    q, c = rng.normal(size=6).astype(dtype), rng.normal(size=(16, 6)).astype(dtype)
    params = PARAM.get(method, {"s": 0.5})
    plain = select(method, q, c, 5, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # handled: no overflow/underflow warning either
        extreme_query = select(method, q * dtype(scale), c, 5, **params)
        extreme_rows = select(method, q, c * dtype(scale), 5, **params)
    for extreme in (extreme_query, extreme_rows):
        assert extreme.indices.tolist() == plain.indices.tolist()
        np.testing.assert_allclose(extreme.relevance, plain.relevance, rtol=1e-6, atol=1e-7)
