"""The per-step helpers of the greedy methods (issue 35 item 2, issue 36): known answers and the
rules they replace, checked against those rules written out plainly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from diverse_core import select, sweep
from diverse_core.errors import InvalidParameterError
from diverse_core.methods import _common, cover, dpp, gist
from diverse_core.methods._common import StepColumns
from diverse_core.methods._spec import checked, optional
from diverse_core.validation import check_k, check_positive, prepare_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------ zscore


@SETTINGS
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60),
    st.sampled_from([0.0, dpp.EPS32]),
)
def test_zscore_is_numpys_mean_and_std_bit_for_bit(values: list[float], guard: float) -> None:
    rel = np.array(values)
    top = float(np.abs(rel).max())
    got = dpp.zscore(rel, guard)
    if top == 0.0:
        assert not got.any()
        return
    scaled = rel / top
    spread = float(scaled.std()) + guard / top
    want = (scaled - scaled.mean()) * top if spread == 0.0 else (scaled - scaled.mean()) / spread
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("scale", [1.0, 60.0])  # 60: past the no-overflow bound, the checked path
def test_dpp_quality_weights_are_exp_of_beta_z(scale: float) -> None:
    rel = np.random.default_rng(0).normal(size=50)
    beta = 0.5 * scale
    weights, residual = dpp._quality(rel, beta, beta, scale)
    z = dpp.zscore(rel, dpp.EPS32)
    assert weights.tobytes() == np.exp(beta * z).tobytes()
    assert residual.tobytes() == (weights * weights + dpp.EPS32).tobytes()


def test_dpp_quality_overflow_is_still_the_typed_error() -> None:
    rel = np.random.default_rng(0).normal(size=50)
    with pytest.raises(InvalidParameterError, match="scale=500.0"):
        dpp._quality(rel, 500.0, 500.0, 500.0)


# ------------------------------------------------------------------------------ lazy DPP


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dpp_lazy_path_picks_the_eager_sets(seed: int, dtype: type) -> None:
    # n > GRAM_MAX_N: select follows a short list; the batched sweep scores every candidate
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.choice([200, 700])), 48, int(rng.choice([5, 30]))
    q, c = rng.normal(size=d).astype(dtype), rng.normal(size=(n, d)).astype(dtype)
    for div in (0.2, 0.5, 1.0):
        one = select("dpp", q, c, k, diversity=div)
        row = sweep("dpp", q, c, k, values=[div])
        assert one.indices.tolist() == row.indices[0].tolist(), (div, dtype)
        np.testing.assert_allclose(one.scores, row.scores[0], rtol=1e-9 if dtype == np.float64 else 1e-5)


def test_dpp_lazy_path_extends_its_list_and_still_picks_the_eager_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # three tight clusters of 190 near-copies fill the 256-candidate list; the 30 spread-out
    # candidates, left off, win once the clusters are covered
    rng = np.random.default_rng(7)
    d = 32
    centres = rng.normal(size=(3, d))
    copies = centres[np.repeat(np.arange(3), 190)] + 1e-3 * rng.normal(size=(570, d))
    spread = rng.normal(size=(30, d))
    c = np.vstack([copies, spread])
    q = centres.sum(axis=0)
    calls: list[int] = []
    more = dpp._more
    monkeypatch.setattr(dpp, "_more", lambda *a: calls.append(1) or more(*a))
    one = select("dpp", q, c, 8, diversity=0.5)
    assert calls, "the list was never extended"
    row = sweep("dpp", q, c, 8, values=[0.5])
    assert one.indices.tolist() == row.indices[0].tolist()
    assert set(one.indices[3:].tolist()) <= set(range(570, 600))  # the clusters once each, then the spread
    np.testing.assert_allclose(one.scores, row.scores[0], rtol=1e-9)


# ------------------------------------------------------------------------------ StepColumns

VECS = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
WEIGHTS = np.array([1.0, 2.0, 3.0])
R = math.sqrt(0.5)
# w * w[1] * cos(., c_1): cos to c_1 is (R, 1, R)
WANT_COLUMN_1 = [1 * 2 * R, 2 * 2 * 1.0, 3 * 2 * R]


@pytest.mark.parametrize("branch", ["gram", "unit rows", "scaled product"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_step_columns_known_answer_in_every_branch(
    branch: str, dtype: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    prep = prepare_inputs(np.ones(2, dtype=dtype), VECS.astype(dtype), k=3)
    steps = 3 if branch == "gram" else 1  # 2 * 3 >= 3: one (n, n) product pays
    if branch == "scaled product":
        monkeypatch.setattr(_common, "GRAM_MAX_N", 0)
    cols = StepColumns(prep, steps, weights=WEIGHTS)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cols.column(1), WANT_COLUMN_1, rtol=tol)
    # post: an elementwise map, applied once to the whole matrix or to each column
    shifted = StepColumns(prep, steps, weights=WEIGHTS, post=lambda c: np.add(c, 1.0, dtype=np.float64))
    np.testing.assert_allclose(shifted.column(1), np.add(WANT_COLUMN_1, 1.0), rtol=tol)
    assert shifted.column(1).dtype == np.float64


# ------------------------------------------------------------------------------ sweeps


@pytest.mark.parametrize("method", ["dpp", "ssd", "cover"])
def test_sweep_rows_at_diversity_zero_are_the_topk(method: str) -> None:
    rng = np.random.default_rng(3)
    q, c = rng.normal(size=8), rng.normal(size=(30, 8))
    values = [0.0, 0.5, 0.0, 1.0]
    sw = sweep(method, q, c, 6, values=values)
    top = select("topk", q, c, 6)
    for row, value in enumerate(values):
        want = top if value == 0.0 else select(method, q, c, 6, diversity=value)
        assert sw.indices[row].tolist() == want.indices.tolist(), (method, value)
        np.testing.assert_allclose(sw.scores[row], want.scores, rtol=1e-9)


# ------------------------------------------------------------------------------ cover


@pytest.mark.parametrize("gamma", [0.5, 0.3, 1.0])
def test_cover_small_pool_scores_are_the_coverage_gains(gamma: float) -> None:
    # F(S) carried from the step that scored the last pick must be the coverage sum itself
    rng = np.random.default_rng(11)
    q, c = rng.normal(size=6), rng.normal(size=(40, 6))
    div = 0.6
    sel = select("cover", q, c, 8, diversity=div, gamma=gamma)
    prep = prepare_inputs(q, c, 8)
    sim = cover._similarity(prep)

    def coverage(picks: list[int]) -> float:
        return float((sim[:, picks].sum(axis=1) ** gamma).sum()) if picks else 0.0

    for t, p in enumerate(sel.indices.tolist()):
        before = sel.indices[:t].tolist()
        gain = coverage([*before, p]) - coverage(before)
        assert sel.scores[t] == pytest.approx((1 - div) * prep.relevance[p] + div * gain, rel=1e-10, abs=1e-10)


# ------------------------------------------------------------------------------ gist


def _winner_by_the_loop(f: np.ndarray, pair_ok: bool) -> int:
    """Algorithm 1's rule as written: line 5 strict, then line 10 ``>=`` in ascending order."""
    best = 1 if pair_ok and f[1] > f[0] else 0
    for i in range(2, f.shape[0]):
        if f[i] >= f[best]:
            best = i
    return best


@SETTINGS
@given(st.lists(st.integers(0, 4), min_size=2, max_size=12), st.booleans())
def test_gist_winner_is_the_algorithms_loop(levels: list[int], pair_ok: bool) -> None:
    # few levels: many exact ties, where ">=" and ">" differ
    g = np.array(levels, dtype=np.float64)
    runs = gist._Runs(
        np.zeros((g.shape[0], 1), dtype=np.int64), np.ones(g.shape[0], dtype=np.intp), g,
        np.zeros_like(g), ["greedy"] * g.shape[0], np.zeros_like(g), 1.0, pair_ok,
    )
    assert gist._winner(runs, 0.0) == _winner_by_the_loop(g, pair_ok)


@pytest.mark.parametrize("seed", range(5))
def test_gist_set_utilities_are_running_sums(seed: int) -> None:
    rng = np.random.default_rng(seed)
    prep = prepare_inputs(rng.normal(size=5), rng.normal(size=(25, 5)).astype(np.float32), 7)
    runs = gist._runs(prep, 0.1)
    weights = np.maximum(1.0 + prep.relevance, 0.0)
    for i in range(runs.g.shape[0]):
        members = runs.set(i)
        assert (members >= 0).all() and len(set(members.tolist())) == members.shape[0]
        assert runs.g[i] == sum(float(weights[j]) for j in members)  # the same sum, left to right


# ------------------------------------------------------------------------------ parameter checks


def test_checked_runs_each_checker_with_its_name_in_order() -> None:
    check = checked(window=optional(check_k), scale=check_positive)
    assert check({"window": None, "scale": 2, "other": "x"}) == {"window": None, "scale": 2.0, "other": "x"}
    with pytest.raises(InvalidParameterError, match=r"window must be a positive integer; got window=0"):
        check({"window": 0, "scale": -1.0})  # the first named parameter is checked first


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("mmr", {"lambda_mult": 1.5}, r"lambda_mult must be in \[0, 1\]; got lambda_mult=1.5"),
        ("gmmr", {"lambda_mult": -0.1}, r"lambda_mult must be in \[0, 1\]; got lambda_mult=-0.1"),
        ("dpp", {"scale": -1}, r"scale must be > 0; got scale=-1"),
        ("msd", {"diversity": 2}, r"diversity must be in \[0, 1\]; got diversity=2"),
        ("cover", {"gamma": 0.0}, r"gamma must be in \(0, 1\]; got gamma=0.0"),
        ("ssd", {"window": 0}, r"window must be a positive integer; got window=0"),
        ("gist", {"eps": 1e-9}, r"eps must be in \[1.1920929e-07, 1\] .*; got eps=1e-09"),
    ],
)
def test_parameter_errors_name_the_parameter(method: str, params: dict[str, object], message: str) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidParameterError, match=message):
        select(method, rng.normal(size=4), rng.normal(size=(6, 4)), 3, **params)


@pytest.mark.parametrize("method", ["mmr", "gmmr"])
def test_lambda_mult_methods_read_diversity_as_one_minus_lambda(method: str) -> None:
    rng = np.random.default_rng(5)
    q, c = rng.normal(size=6), rng.normal(size=(20, 6))
    a = select(method, q, c, 5, diversity=0.25)
    b = select(method, q, c, 5, lambda_mult=0.75)
    assert a.indices.tolist() == b.indices.tolist() and a.params == b.params == {"lambda_mult": 0.75}
