"""The two-variant selector: training (cross-fitted gold probabilities), save/load, choosing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import diverse_core as dc
import numpy as np
import pytest
from adaptive_testdata import text_questions
from diverse_core.adaptive import (
    DEFAULT_LAMBDAS,
    AdaptiveSelector,
    GoldModel,
    coverage_labels,
    fit_variants,
    query_example,
)
from diverse_core.adaptive import training as training_module
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st

K = 4
FOLDS = 3


@pytest.fixture(scope="module")
def data() -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[str], list[list[str]]]:
    return text_questions(15)


@pytest.fixture(scope="module")
def with_text(data: Any) -> AdaptiveSelector:
    qs, cs, gs, questions, texts = data
    return AdaptiveSelector.fit(qs, cs, gs, K, questions=questions, texts=texts, folds=FOLDS)


def test_coverage_labels_with_and_without_n_gold() -> None:
    groups = np.array([7, 7, -1, 3, -1])
    sets = np.array([[0, 1], [0, 3], [2, 4]])
    assert coverage_labels(sets, groups).tolist() == [0.5, 1.0, 0.0]  # 2 gold passages among the candidates
    assert coverage_labels(sets, groups, n_gold=4).tolist() == [0.25, 0.5, 0.0]  # 2 more not retrieved
    assert coverage_labels(sets, groups, n_gold=2).tolist() == [0.5, 1.0, 0.0]
    assert coverage_labels(sets, np.full(5, -1), n_gold=3).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(InvalidParameterError, match="n_gold=1"):
        coverage_labels(sets, groups, n_gold=1)
    with pytest.raises(InvalidParameterError, match="n_gold=True"):
        coverage_labels(sets, groups, n_gold=True)


def test_fit_with_and_without_texts(data: Any, with_text: AdaptiveSelector) -> None:
    qs, cs, gs, questions, texts = data
    plain = AdaptiveSelector.fit(qs, cs, gs, K, folds=FOLDS)
    assert sorted(plain.variants) == ["embedding"]
    assert sorted(with_text.variants) == ["embedding", "text"]
    # the embedding variant does not depend on whether texts were given
    assert np.array_equal(plain.variants["embedding"].scorer.weights, with_text.variants["embedding"].scorer.weights)
    assert plain.info["n_questions"] == 15
    # without a text variant, question + texts still validate but the embedding variant answers
    c = plain.choose(qs[0], cs[0], K, question=questions[0], texts=texts[0])
    assert c.variant == "embedding"


def test_fit_is_deterministic(data: Any, with_text: AdaptiveSelector, tmp_path: Path) -> None:
    qs, cs, gs, questions, texts = data
    again = AdaptiveSelector.fit(qs, cs, gs, K, questions=questions, texts=texts, folds=FOLDS)
    a, b = with_text.save(tmp_path / "a.npz"), again.save(tmp_path / "b.npz")
    with np.load(a) as x, np.load(b) as y:
        assert sorted(x.files) == sorted(y.files)
        for key in x.files:
            assert np.array_equal(x[key], y[key]), key


def test_save_load_round_trip_gives_identical_choices(data: Any, with_text: AdaptiveSelector, tmp_path: Path) -> None:
    qs, cs, gs, questions, texts = data
    loaded = AdaptiveSelector.load(with_text.save(tmp_path / "m.npz"))
    assert sorted(loaded.variants) == ["embedding", "text"]
    assert np.array_equal(loaded.lambdas, with_text.lambdas)
    for i in range(5):
        for kw in ({}, {"question": questions[i], "texts": texts[i]}):
            a, b = with_text.choose(qs[i], cs[i], K, **kw), loaded.choose(qs[i], cs[i], K, **kw)
            assert a.variant == b.variant and a.lambda_mult == b.lambda_mult
            assert np.array_equal(a.indices, b.indices) and np.array_equal(a.predicted, b.predicted)
            assert a.gold_probability is not None and b.gold_probability is not None
            assert np.array_equal(a.gold_probability, b.gold_probability)


def test_choose_uses_text_only_with_question_and_texts(data: Any, with_text: AdaptiveSelector) -> None:
    qs, cs, gs, questions, texts = data
    text = with_text.choose(qs[0], cs[0], K, question=questions[0], texts=texts[0])
    emb = with_text.choose(qs[0], cs[0], K)
    assert (text.variant, emb.variant) == ("text", "embedding")
    assert text.gold_probability is not None and text.gold_probability.shape == (20,)
    assert emb.gold_probability is not None
    assert not np.array_equal(text.gold_probability, emb.gold_probability)
    with pytest.raises(InvalidParameterError, match="texts is None"):
        with_text.choose(qs[0], cs[0], K, question=questions[0])
    with pytest.raises(InvalidParameterError, match="question is None"):
        with_text.choose(qs[0], cs[0], K, texts=texts[0])
    with pytest.raises(DimensionMismatchError, match="19 texts for 20 candidates"):
        with_text.choose(qs[0], cs[0], K, question=questions[0], texts=texts[0][:-1])
    with pytest.raises(InvalidParameterError, match="sequence of strings"):
        with_text.choose(qs[0], cs[0], K, question=questions[0], texts="one string")
    with pytest.raises(InvalidParameterError, match="question must be a string"):
        with_text.choose(qs[0], cs[0], K, question=3, texts=texts[0])  # type: ignore[arg-type]


def test_fit_rejects_half_the_texts_and_wrong_lengths(data: Any) -> None:
    qs, cs, gs, questions, texts = data
    with pytest.raises(InvalidParameterError, match="both questions and texts"):
        AdaptiveSelector.fit(qs, cs, gs, K, questions=questions, folds=FOLDS)
    with pytest.raises(DimensionMismatchError, match="one entry per question"):
        AdaptiveSelector.fit(qs, cs, gs, K, questions=questions[:-1], texts=texts, folds=FOLDS)
    with pytest.raises(DimensionMismatchError, match="one text per candidate"):
        AdaptiveSelector.fit(qs, cs, gs, K, questions=questions, texts=[t[:-1] for t in texts], folds=FOLDS)


def test_a_format_1_file_asks_to_retrain(tmp_path: Path) -> None:
    meta = {"format": 1, "alpha": 1.0, "feature_names": ["a", "b"], "info": {}}
    path = tmp_path / "old.npz"
    np.savez(path, weights=np.zeros(2), scale=np.ones(2), meta=np.array(json.dumps(meta)))
    with pytest.raises(InvalidParameterError, match="format 1.*retrain") as err:
        AdaptiveSelector.load(path)
    assert "not an adaptive model file" not in str(err.value)


def test_a_file_with_other_features_asks_to_retrain(with_text: AdaptiveSelector, tmp_path: Path) -> None:
    path = with_text.save(tmp_path / "m.npz")
    with np.load(path) as data:
        arrays = {key: data[key] for key in data.files}
    meta = json.loads(str(arrays["embedding__gold_meta"]))
    meta["feature_names"] = meta["feature_names"][::-1]
    arrays["embedding__gold_meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "other.npz", **arrays)
    with pytest.raises(InvalidParameterError, match="other features.*retrain"):
        AdaptiveSelector.load(tmp_path / "other.npz")


def test_select_adaptive_equals_the_default_selector() -> None:
    qs, cs, _, questions, texts = text_questions(3, n=25, dim=16, seed=7)
    for q, c, question, t in zip(qs, cs, questions, texts, strict=True):
        sel = dc.select("adaptive", q, c, 5, question=question, texts=t)
        choice = AdaptiveSelector.default().choose(q, c, 5, question=question, texts=t)
        assert choice.variant == "text"
        assert sel.indices.tolist() == choice.indices.tolist()
        assert np.allclose(sel.scores, choice.scores)
        plain = dc.select("adaptive", q, c, 5)
        assert plain.indices.tolist() == AdaptiveSelector.default().choose(q, c, 5).indices.tolist()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.booleans())
def test_the_chosen_set_is_the_gmmr_set_of_its_lambda(seed: int, k: int, use_text: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(k, 30))
    q, c = rng.normal(size=8), rng.normal(size=(n, 8))
    kw: dict[str, Any] = {}
    if use_text:
        words = ["Alpha", "beta", "Gamma", "delta", "1990"]
        kw = {"question": "Which Alpha met Gamma in 1990?",
              "texts": [" ".join(rng.choice(words, size=3)) for _ in range(n)]}
    choice = AdaptiveSelector.default().choose(q, c, k, **kw)
    assert choice.variant == ("text" if use_text else "embedding")
    assert choice.lambda_mult in DEFAULT_LAMBDAS
    row = list(DEFAULT_LAMBDAS).index(choice.lambda_mult)
    assert np.array_equal(choice.indices, choice.sets[row])
    gm = dc.select("gmmr", q, c, k, lambda_mult=choice.lambda_mult)
    assert choice.indices.tolist() == gm.indices.tolist()
    assert np.allclose(choice.scores, gm.scores)
    assert choice.predicted[row] == choice.predicted.max()


def test_fit_variants_cross_fits_the_gold_probabilities(data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probabilities of fold f's questions come from a gold model not trained on them."""
    qs, cs, gs, questions, texts = data
    examples = [
        query_example(prepare_inputs(q, c, K, None), g, DEFAULT_LAMBDAS, question=question, texts=t)
        for q, c, g, question, t in zip(qs, cs, gs, questions, texts, strict=True)
    ]
    owner = {}  # a candidate row's bytes -> the question it belongs to (rows are distinct)
    for i, ex in enumerate(examples):
        for rows in (ex.embedding, ex.text):
            assert rows is not None
            for r in rows:
                owner[r.tobytes()] = i
    assert len(owner) == sum(2 * ex.embedding.shape[0] for ex in examples)

    trained_on: list[set[int]] = []  # per fit_gold_model call: the questions it saw
    applied_to: list[tuple[int, int]] = []  # (call, question) of each probabilities() call
    real_fit = training_module.fit_gold_model

    class Spy(GoldModel):
        call: int = -1

        def probabilities(self, features: Any) -> Any:
            seen = {owner[r.tobytes()] for r in np.asarray(features)}
            assert len(seen) == 1
            applied_to.append((self.call, seen.pop()))
            return super().probabilities(features)

    def spy_fit(features: Any, is_gold: Any, **kw: Any) -> GoldModel:
        trained_on.append({owner[r.tobytes()] for r in np.asarray(features)})
        m = real_fit(features, is_gold, **kw)
        spy = Spy(m.mean, m.scale, m.weights, m.bias, m.feature_names, m.l2, m.info)
        object.__setattr__(spy, "call", len(trained_on) - 1)
        return spy

    monkeypatch.setattr(training_module, "fit_gold_model", spy_fit)
    fitted = fit_variants(examples, DEFAULT_LAMBDAS, folds=FOLDS)
    everyone = set(range(len(examples)))
    # per variant: one model per fold, then one on every question
    assert len(trained_on) == 2 * (FOLDS + 1)
    for v in range(2):
        calls = trained_on[v * (FOLDS + 1): (v + 1) * (FOLDS + 1)]
        for f in range(FOLDS):
            assert calls[f] == {i for i in everyone if i % FOLDS != f}
        assert calls[FOLDS] == everyone
    assert len(applied_to) == 2 * len(examples)
    for call, question in applied_to:
        assert question not in trained_on[call]
        assert call % (FOLDS + 1) == question % FOLDS
    assert {q for _, q in applied_to} == everyone
    # the stored gold model of each variant is the one trained on every question
    assert {fitted[name].gold.call for name in fitted} == {FOLDS, 2 * FOLDS + 1}  # type: ignore[attr-defined]
