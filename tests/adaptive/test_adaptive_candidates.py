"""Per-candidate features, the gold-probability model and the per-set gold features."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from adaptive_testdata import random_view, unit_rows
from diverse_core.adaptive import (
    GoldModel,
    TextView,
    candidate_features,
    fit_gold_model,
    gold_set_features,
)
from diverse_core.adaptive.candidates import GOLD_SET_FEATURES
from diverse_core.errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from diverse_core.trained.candidates import EMBEDDING_CANDIDATE_FEATURES, TEXT_CANDIDATE_FEATURES
from hypothesis import given
from hypothesis import strategies as st


def _slow_candidates(unit: np.ndarray, rel: np.ndarray, k: int, view: TextView | None) -> np.ndarray:
    """Reference: the candidate features with plain Python loops."""
    n = len(rel)
    order = sorted(range(n), key=lambda i: (-rel[i], i))
    rank = {c: r for r, c in enumerate(order)}
    top = order[0]

    def sim(a: int, b: int) -> float:
        return float(unit[a] @ unit[b])

    def share(hits: np.ndarray, i: int) -> float:
        return sum(hits[i]) / hits.shape[1] if hits.shape[1] else 0.0

    def complement(hits: np.ndarray, i: int) -> float:
        missing = [t for t in range(hits.shape[1]) if not hits[top, t]]
        return sum(bool(hits[i, t]) for t in missing) / len(missing) if missing else 0.0

    rows = []
    for i in range(n):
        better = [j for j in range(n) if rank[j] < rank[i]]
        row = [
            rel[i], rel[i] - rel[top], rank[i] / n, float(rank[i] < k), math.log(1 + rank[i]),
            max(sim(i, j) for j in better) if better else 0.0,
            sim(i, top), sum(sim(i, j) for j in order[:k]) / min(k, n), sum(sim(i, j) for j in range(n)) / n,
            rel[top],
        ]
        if view is not None:
            other = view.other_names
            vocab = range(other.shape[1])
            near = order[:3]
            row += [
                share(view.term_hits, i), share(view.name_hits, i),
                complement(view.term_hits, i), complement(view.name_hits, i),
                math.log(1 + sum(bool(other[i, v]) and any(other[j, v] for j in near) for v in vocab)),
                math.log(1 + sum(bool(other[i, v] and other[top, v]) for v in vocab)),
                len(view.terms) / 20, len(view.names) / 5,
            ]
        rows.append(row)
    return np.array(rows)


@given(st.integers(0, 10_000), st.integers(1, 6), st.booleans(), st.integers(0, 5), st.integers(0, 3))
def test_candidate_features_match_a_slow_reference(
    seed: int, k: int, with_text: bool, n_terms: int, n_names: int
) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 14))
    unit = unit_rows(rng.normal(size=(n, 5)))
    rel = rng.integers(-2, 4, size=n) / 4.0 if seed % 2 else unit @ unit_rows(rng.normal(size=(1, 5)))[0]
    view = random_view(rng, n, n_terms, n_names) if with_text else None
    got = candidate_features(unit, rel, k, view)
    names = TEXT_CANDIDATE_FEATURES if with_text else EMBEDDING_CANDIDATE_FEATURES
    assert got.shape == (n, len(names))
    np.testing.assert_allclose(got, _slow_candidates(unit, rel, k, view), atol=1e-9)


def test_candidate_features_hand_built() -> None:
    unit = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    rel = np.array([0.5, 0.9, 0.1])  # order 1, 0, 2
    view = TextView(
        terms=("a", "b"), names=("a",),
        term_hits=np.array([[True, True], [True, False], [False, False]]),
        name_hits=np.array([[True], [True], [False]]),
        other_names=np.array([[True, False], [True, True], [False, True]]),
    )
    f = dict(zip(TEXT_CANDIDATE_FEATURES, candidate_features(unit, rel, 1, view).T, strict=True))
    assert f["rank"].tolist() == pytest.approx([1 / 3, 0.0, 2 / 3])
    assert f["in_topk"].tolist() == [0.0, 1.0, 0.0]
    assert f["red_better"].tolist() == [0.0, 0.0, 1.0]  # 2 duplicates 0, which ranks above it
    assert f["term_cover"].tolist() == [1.0, 0.5, 0.0]
    assert f["term_complement"].tolist() == [1.0, 0.0, 0.0]  # the top candidate lacks "b"; 0 has it
    assert f["name_complement"].tolist() == [0.0, 0.0, 0.0]  # the top candidate has every name
    assert f["bridge_top1"].tolist() == pytest.approx([math.log(2), math.log(3), math.log(2)])
    assert f["n_terms"].tolist() == [0.1] * 3 and f["n_names"].tolist() == [0.2] * 3


def test_candidate_features_reject_a_view_of_other_candidates() -> None:
    view = random_view(np.random.default_rng(0), 3, 2, 1)
    with pytest.raises(DimensionMismatchError, match="one text per candidate"):
        candidate_features(unit_rows(np.ones((4, 2))), np.zeros(4), 2, view)


def test_gold_set_features_hand_built() -> None:
    p = np.array([0.5, 0.4, 0.2])
    sim = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.3], [0.1, 0.3, 1.0]])
    sets = np.array([[0, 1], [0, 2], [2, 1]])
    got = gold_set_features(p, sim, sets)
    want = np.array(
        [
            # p_sum, novel (cos < 0.8), discounted, p_max, p_second, p_any
            [0.9, 0.5, 0.5 + 0.4 * 0.1, 0.5, 0.4, 1 - 0.5 * 0.6],  # pick 1 repeats pick 0 (cos 0.9)
            [0.7, 0.7, 0.5 + 0.2 * 0.9, 0.5, 0.2, 1 - 0.5 * 0.8],
            [0.6, 0.6, 0.2 + 0.4 * 0.7, 0.4, 0.2, 1 - 0.8 * 0.6],
        ]
    )
    np.testing.assert_allclose(got, want)
    assert got.shape[1] == len(GOLD_SET_FEATURES)
    # a looser threshold counts the repeat as novel; a negative cosine is no discount (clipped at 0)
    assert gold_set_features(p, sim, sets, novel_below=0.95)[0, 1] == pytest.approx(0.9)
    neg = sim.copy()
    neg[0, 2] = neg[2, 0] = -0.5
    assert gold_set_features(p, neg, sets)[1, 2] == pytest.approx(0.7)
    one = gold_set_features(p, sim, np.array([[1], [2]]))  # k = 1: no second pick
    np.testing.assert_allclose(one, [[0.4, 0.4, 0.4, 0.4, 0.0, 0.4], [0.2, 0.2, 0.2, 0.2, 0.0, 0.2]])


def _slow_gold(p: np.ndarray, sim: np.ndarray, sets: np.ndarray, novel_below: float) -> np.ndarray:
    rows = []
    for row in sets:
        s = [int(c) for c in row]
        closest = [max((sim[s[j], s[i]] for i in range(j)), default=-1.0) for j in range(len(s))]
        ps = sorted((p[c] for c in s), reverse=True)
        any_gold = 1.0
        for c in s:
            any_gold *= 1.0 - p[c]
        rows.append([
            sum(p[c] for c in s),
            sum(p[c] for c, m in zip(s, closest, strict=True) if m < novel_below),
            sum(p[c] * (1.0 - min(max(m, 0.0), 1.0)) for c, m in zip(s, closest, strict=True)),
            ps[0], ps[1] if len(ps) > 1 else 0.0, 1.0 - any_gold,
        ])
    return np.array(rows)


@given(st.integers(0, 10_000), st.integers(1, 6), st.floats(0.0, 1.0))
def test_gold_set_features_match_a_slow_reference(seed: int, k: int, novel_below: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(k, 15))
    unit = unit_rows(rng.normal(size=(n, 4)))
    p = rng.random(n)
    sets = np.stack([rng.choice(n, size=k, replace=False) for _ in range(int(rng.integers(1, 6)))])
    got = gold_set_features(p, unit @ unit.T, sets, novel_below)
    np.testing.assert_allclose(got, _slow_gold(p, unit @ unit.T, sets, novel_below), atol=1e-12)


def _planted(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose gold odds rise with feature 0, fall with feature 1; feature 2 is noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 3)) * np.array([1.0, 2.0, 0.5]) + np.array([0.0, 1.0, 3.0])
    logit = 2.0 * x[:, 0] - 1.0 * x[:, 1] - 1.0
    return x, (rng.random(m) < 1.0 / (1.0 + np.exp(-logit))).astype(float)


NAMES = ("up", "down", "noise")


def test_gold_model_recovers_planted_signs_and_is_deterministic() -> None:
    x, y = _planted(3000, 0)
    a = fit_gold_model(x, y, feature_names=NAMES)
    b = fit_gold_model(x, y, feature_names=NAMES)
    for name in ("mean", "scale", "weights"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.bias == b.bias
    assert a.weights[0] > 0 and a.weights[1] < 0
    assert abs(a.weights[2]) < 0.2 * min(abs(a.weights[0]), abs(a.weights[1]))
    # standardised weights: planted 2.0 * std 1, -1.0 * std 2
    assert a.weights[:2] == pytest.approx([2.0, -2.0], rel=0.2)
    xt, yt = _planted(2000, 1)
    p = a.probabilities(xt)
    assert p.shape == (2000,) and np.all((p > 0) & (p < 1))
    assert p[yt == 1].mean() > p[yt == 0].mean() + 0.3
    assert a.info == {"n_rows": 3000, "gold_share": round(float(y.mean()), 6)}
    # a stronger ridge penalty shrinks the weights
    assert np.linalg.norm(fit_gold_model(x, y, feature_names=NAMES, l2=1e4).weights) < np.linalg.norm(a.weights)


def test_gold_model_constant_feature_is_harmless() -> None:
    x, y = _planted(500, 2)
    x[:, 2] = 7.0
    m = fit_gold_model(x, y, feature_names=NAMES)
    assert m.scale[2] == 1.0 and np.all(np.isfinite(m.weights))


def test_gold_model_arrays_round_trip(tmp_path: Path) -> None:
    x, y = _planted(400, 3)
    m = fit_gold_model(x, y, feature_names=NAMES, l2=2.5)
    arrays = m.to_arrays("g_")
    assert set(arrays) == {"g_mean", "g_scale", "g_weights", "g_meta"}
    np.savez(tmp_path / "g.npz", **arrays)
    with np.load(tmp_path / "g.npz", allow_pickle=False) as data:
        back = GoldModel.from_arrays(data, "g_")
    for name in ("mean", "scale", "weights"):
        assert np.array_equal(getattr(back, name), getattr(m, name))
    assert (back.bias, back.feature_names, back.l2, back.info) == (m.bias, NAMES, 2.5, m.info)
    assert np.array_equal(back.probabilities(x), m.probabilities(x))


def test_gold_model_bad_inputs_are_typed_errors() -> None:
    x, y = _planted(50, 4)
    with pytest.raises(InvalidParameterError, match="is_gold"):
        fit_gold_model(x, np.ones(50), feature_names=NAMES)
    with pytest.raises(InvalidParameterError, match="is_gold"):
        fit_gold_model(x, np.zeros(50), feature_names=NAMES)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(NonFiniteInputError, match="features"):
        fit_gold_model(bad, y, feature_names=NAMES)
    with pytest.raises(NonFiniteInputError, match="is_gold"):
        fit_gold_model(x, np.where(np.arange(50) == 0, np.inf, y), feature_names=NAMES)
    with pytest.raises(DimensionMismatchError, match="is_gold"):
        fit_gold_model(x, y[:-1], feature_names=NAMES)
    with pytest.raises(DimensionMismatchError, match="features"):
        fit_gold_model(x[:, 0], y, feature_names=NAMES)
    with pytest.raises(DimensionMismatchError, match="feature_names"):
        fit_gold_model(x, y, feature_names=NAMES[:2])
    m = fit_gold_model(x, y, feature_names=NAMES)
    with pytest.raises(DimensionMismatchError, match="features"):
        m.probabilities(x[:, :2])
    with pytest.raises(DimensionMismatchError, match="features"):
        m.probabilities(x[0])
    with pytest.raises(NonFiniteInputError, match="features must be finite"):
        m.probabilities(bad)
