"""The learned lambda selector: features, the within-query ridge scorer, save/load, the "adaptive" method."""

from __future__ import annotations

from pathlib import Path

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.adaptive import (
    DEFAULT_LAMBDAS,
    DEFAULT_MODEL,
    FEATURE_NAMES,
    AdaptiveSelector,
    SetScorer,
    coverage_labels,
    fit_set_scorer,
    set_features,
    variant_feature_names,
)
from diverse_core.adaptive.variant import candidate_feature_names
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from hypothesis import given
from hypothesis import strategies as st


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _slow_features(lams: np.ndarray, sets: np.ndarray, unit: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """Reference: every feature with plain Python loops."""
    n = unit.shape[0]
    L, k = sets.shape
    order = sorted(range(n), key=lambda i: (-rel[i], i))
    rank = {c: r for r, c in enumerate(order)}
    topk, top2 = order[:k], order[: min(2 * k, n)]
    rows = []
    for li in range(L):
        s = [int(x) for x in sets[li]]
        sims = [[float(unit[a] @ unit[b]) for b in s] for a in s]
        pairs = [sims[a][b] for a in range(k) for b in range(k) if a != b]
        cover = [max(float(unit[c] @ unit[x]) for x in s) for c in range(n)]
        w = [max(rel[c] - rel.min(), 0.0) + 1e-12 for c in range(n)]
        others = [set(int(x) for x in sets[m]) for m in range(L) if m != li]
        jac = [len(set(s) & o) / len(set(s) | o) for o in others]
        cons = [sum(x in o for o in others) / len(others) for x in s]
        gains = [1.0] + [1.0 - max(sims[j][i] for i in range(j)) for j in range(1, k)]
        rows.append([
            np.mean([rel[x] for x in s]), min(rel[x] for x in s),
            np.mean([rel[x] for x in topk]) - np.mean([rel[x] for x in s]),
            np.mean([rank[x] for x in s]) / n, max(rank[x] for x in s) / n,
            np.mean(pairs), max(pairs), np.mean([cover[c] for c in top2]),
            sum(w[c] * cover[c] for c in range(n)) / sum(w), np.mean(cons), np.mean(jac),
            np.mean([sum(x in o for o in others) == 0 for x in s]), np.mean([x not in topk for x in s]),
            np.mean(gains),
        ])
    r = rel[order]
    kk, k2 = k, min(2 * k, n)
    tk = unit[order[:kk]]
    t2 = unit[order[:k2]]

    def pm(m: np.ndarray) -> float:
        c = m.shape[0]
        return float((m.sum() - np.trace(m)) / (c * (c - 1)))

    pool = [r[0], r[0] - r[kk - 1], r.std(), r[kk - 1] - r[k2 - 1], pm(tk @ tk.T), pm(t2 @ t2.T)]
    out = []
    for li, lam in enumerate(lams):
        out.append(rows[li] + [lam, lam**2] + [p * lam for p in pool] + [p * lam**2 for p in pool])
    return np.array(out)


@given(st.integers(0, 10_000), st.integers(2, 6))
def test_features_match_a_slow_reference(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    q, c = rng.normal(size=12), rng.normal(size=(25, 12))
    sw = dc.sweep("gmmr", q, c, k, values=list(DEFAULT_LAMBDAS))
    unit = _unit(c)
    rel = unit @ (q / np.linalg.norm(q))
    got = set_features(sw.values, sw.indices, unit, rel)
    assert got.shape == (len(DEFAULT_LAMBDAS), len(FEATURE_NAMES))
    np.testing.assert_allclose(got, _slow_features(np.asarray(sw.values), sw.indices, unit, rel), atol=1e-9)


def test_hand_built_features() -> None:
    # 4 candidates: 0 and 1 identical (relevance 1), 2 orthogonal, 3 opposite of 2
    unit = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0]])
    rel = np.array([1.0, 1.0, 0.0, 0.0])
    sets = np.array([[0, 1], [0, 2]])
    f = dict(zip(FEATURE_NAMES, set_features([1.0, 0.5], sets, unit, rel).T, strict=True))
    assert f["red_mean"].tolist() == [1.0, 0.0]  # duplicates vs orthogonal
    assert f["rel_mean"].tolist() == [1.0, 0.5]
    assert f["new_vs_topk"].tolist() == [0.0, 0.5]
    assert f["jaccard_mean"].tolist() == pytest.approx([1 / 3, 1 / 3])
    assert f["unique"].tolist() == [0.5, 0.5]


def test_coverage_labels_count_gold_groups_once() -> None:
    groups = np.array([7, 7, -1, 3, -1])  # candidates 0, 1 are chunks of gold passage 7
    labels = coverage_labels(np.array([[0, 1], [0, 3], [2, 4]]), groups)
    assert labels.tolist() == [0.5, 1.0, 0.0]


def _synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Queries whose best set is flagged by feature 0 (plus noise features)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 10, 4))
    y = (x[:, :, 0] > np.max(x[:, :, 0], axis=1, keepdims=True) - 1e-9).astype(float)
    return x, y


def test_ridge_learns_a_planted_signal_and_is_deterministic(tmp_path: Path) -> None:
    x, y = _synthetic(200, 0)
    a = fit_set_scorer(x, y, folds=4)
    b = fit_set_scorer(x, y, folds=4)
    assert np.array_equal(a.weights, b.weights) and a.alpha == b.alpha
    assert int(np.argmax(np.abs(a.weights))) == 0
    xt, yt = _synthetic(100, 1)
    picks = [int(np.argmax(a.scores(xt[i]))) for i in range(100)]
    assert np.mean([yt[i, p] for i, p in enumerate(picks)]) > 0.9  # random choice: 0.1
    a.save(tmp_path / "m.npz")
    a2 = SetScorer.load(tmp_path / "m.npz")
    assert np.array_equal(a2.weights, a.weights) and a2.feature_names == a.feature_names
    assert (tmp_path / "m.npz").read_bytes() == a2.save(tmp_path / "m2.npz").read_bytes()


def test_fit_save_load_and_the_adaptive_method(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    qs = [rng.normal(size=16) for _ in range(30)]
    cs = [rng.normal(size=(30, 16)) for _ in range(30)]
    gs = [np.where(rng.random(30) < 0.15, rng.integers(0, 3, 30), -1) for _ in range(30)]
    sel = AdaptiveSelector.fit(qs, cs, gs, k=4, folds=3)
    again = AdaptiveSelector.fit(qs, cs, gs, k=4, folds=3)
    assert np.array_equal(sel.scorer.weights, again.scorer.weights)
    path = sel.save(tmp_path / "mine.npz")
    loaded = AdaptiveSelector.load(path)
    choice = loaded.choose(qs[0], cs[0], k=4)
    assert choice.lambda_mult in DEFAULT_LAMBDAS and choice.sets.shape == (10, 4)
    row = list(DEFAULT_LAMBDAS).index(choice.lambda_mult)
    assert choice.indices.tolist() == dc.select("gmmr", qs[0], cs[0], 4, lambda_mult=choice.lambda_mult).indices.tolist()
    assert choice.indices.tolist() == choice.sets[row].tolist()
    via_method = dc.select("adaptive", qs[0], cs[0], 4, model=str(path))
    assert via_method.indices.tolist() == choice.indices.tolist()
    assert "adaptive" in dc.available_methods()


def test_bad_inputs_are_typed_errors(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidParameterError, match="existing model file.*no such file"):
        dc.select("adaptive", rng.normal(size=4), rng.normal(size=(8, 4)), 2, model=str(tmp_path / "none.npz"))
    with pytest.raises(InvalidParameterError, match="model must be"):
        dc.select("adaptive", rng.normal(size=4), rng.normal(size=(8, 4)), 2, model=3)
    (tmp_path / "junk.npz").write_bytes(b"not a model")
    with pytest.raises(InvalidParameterError, match="not an adaptive model"):
        AdaptiveSelector.load(tmp_path / "junk.npz")
    with pytest.raises(DimensionMismatchError):
        fit_set_scorer(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(DimensionMismatchError, match="one id per candidate"):
        AdaptiveSelector.fit([rng.normal(size=4)] * 2, [rng.normal(size=(8, 4))] * 2, [np.zeros(3)] * 2, k=2)


def test_shipped_model_is_small_and_loads() -> None:
    if not DEFAULT_MODEL.is_file():
        pytest.skip("the shipped model has not been trained in this checkout")
    assert DEFAULT_MODEL.stat().st_size <= 5 * 1024 * 1024
    sel = AdaptiveSelector.default()
    assert sorted(sel.variants) == ["embedding", "text"]
    for name, variant in sel.variants.items():
        assert variant.scorer.feature_names == variant_feature_names(name)
        assert variant.gold.feature_names == candidate_feature_names(name)
        assert variant.scorer.weights.shape == (len(variant_feature_names(name)),)
        assert variant.gold.weights.shape == (len(candidate_feature_names(name)),)
        assert variant.scorer.info.get("protocol") == "chunks"
    assert sel.variants["embedding"].scorer.feature_names[: len(FEATURE_NAMES)] == FEATURE_NAMES
    assert sel.info.get("protocol") == "chunks"
    assert tuple(sel.lambdas) == DEFAULT_LAMBDAS


def test_one_call_holds_no_n_by_n_matrix() -> None:
    """Issue 44: the set features read the picks' cosine columns (n·L·k), so a call's traced peak stays
    well under one (n, n) float64 matrix (it was above it: fetch_k = 10,000 took 1 GiB)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 5000
    q, c = rng.normal(size=32), rng.normal(size=(n, 32))
    dc.select("adaptive", q, c[:60], 5)  # model file loaded, lazy imports done
    tracemalloc.start()
    try:
        dc.select("adaptive", q, c, 5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.6 * n * n * 8


def test_pick_cosines_are_the_full_matrix_columns() -> None:
    from diverse_core.adaptive.features import pick_cosines

    rng = np.random.default_rng(3)
    unit = rng.normal(size=(40, 8))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    sets = rng.integers(0, 40, size=(6, 4))
    np.testing.assert_allclose(pick_cosines(unit, sets), (unit @ unit.T)[:, sets], atol=1e-12)
    rel = unit @ unit[0]
    np.testing.assert_allclose(set_features([0.5] * 6, sets, unit, rel),
                               set_features([0.5] * 6, sets, unit, rel, sim=unit @ unit.T), atol=1e-12)
