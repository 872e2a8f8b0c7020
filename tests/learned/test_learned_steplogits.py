"""The greedy loop's product path (issue 35): StepLogits against the feature rows, the picks against the row path.

The product path (:class:`~diverse_core.learned.steplogits.StepLogits`, folded model weights) must
give the probabilities of ``model.probabilities(state.rows(picks))`` within 1e-12 and, through
:func:`~diverse_core.learned.greedy.greedy_picks`, the picks of the feature-row path
(``_row_picks``, the loop as it was before) with the same tie rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.adaptive.candidates import GoldModel, sigmoid
from diverse_core.errors import DimensionMismatchError, NonFiniteInputError
from diverse_core.learned import QueryState, feature_names, greedy_picks, pair_view
from diverse_core.learned.greedy import _best, _pick, _row_picks, _standard
from diverse_core.learned.state import EMBEDDING_STATE_FEATURES, TEXT_STATE_FEATURES
from diverse_core.learned.steplogits import HANDLED, StepLogits, no_pick_logits
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st
from learned_testdata import QUESTION, random_texts


def _random_state(rng: np.random.Generator, n: int, k: int, text: bool) -> QueryState:
    q = rng.normal(size=6)
    c = rng.normal(size=(n, 6)) + q * rng.uniform(0, 2, size=(n, 1))
    prep = prepare_inputs(q, c, k, None)
    if not text:
        return QueryState.build(prep)
    return QueryState.build(prep, pair_view(QUESTION, random_texts(rng, n)))


def _random_model(rng: np.random.Generator, text: bool, spread: float = 1.0) -> GoldModel:
    names = feature_names(text)
    f = len(names)
    return GoldModel(rng.normal(size=f), rng.uniform(0.05, 3.0, size=f), spread * rng.normal(size=f),
                     float(rng.normal()), names)


# ----------------------------------------------------------------------------- known answers


def test_step_logits_read_every_state_feature() -> None:
    # a state feature StepLogits did not read would be silently left out of the logits
    assert sorted(HANDLED) == sorted(TEXT_STATE_FEATURES)
    assert TEXT_STATE_FEATURES[: len(EMBEDDING_STATE_FEATURES)] == EMBEDDING_STATE_FEATURES


def test_folded_weights_known_answer() -> None:
    names = ("a", "b")
    m = GoldModel(np.array([1.0, -2.0]), np.array([2.0, 0.5]), np.array([4.0, 3.0]), 0.5, names)
    assert m.folded is not None
    coef, intercept = m.folded
    assert coef.tolist() == [2.0, 6.0]  # w / scale
    assert intercept == 0.5 - (1.0 * 2.0 + -2.0 * 6.0)  # b - mean @ coef = 10.5
    x = np.array([[3.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(x @ coef + intercept, m.logits_of_checked(x), rtol=0, atol=1e-12)
    assert m.folded is m.folded  # computed once


@pytest.mark.parametrize("bad", [
    {"weights": np.array([np.nan, 1.0])},
    {"mean": np.array([np.inf, 0.0])},
    {"scale": np.array([0.0, 1.0])},
    {"weights": np.array([1e200, 1.0])},
    {"bias": float("nan")},
    {"mean": np.zeros(3)},
])
def test_folded_weights_refuse_what_could_overflow(bad: dict[str, object]) -> None:
    args: dict[str, object] = {"mean": np.zeros(2), "scale": np.ones(2), "weights": np.ones(2), "bias": 0.0,
                               "feature_names": ("a", "b")}
    args.update(bad)
    assert GoldModel(**args).folded is None  # type: ignore[arg-type]


def test_step_logits_known_answer_embedding_state() -> None:
    # three unit candidates; the model reads has_picks, step, sim_mean and qdc_over_rel only
    q = np.array([1.0, 0.0, 0.0])
    c = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]])
    prep = prepare_inputs(q, c, 2, None)
    state = QueryState.build(prep)
    names = feature_names(False)
    w = np.zeros(len(names))
    w[names.index("has_picks")], w[names.index("step")] = 1.0, 4.0
    w[names.index("sim_mean")], w[names.index("qdc_over_rel")] = 2.0, -1.0
    steps = StepLogits(state, *GoldModel(np.zeros(len(names)), np.ones(len(names)), w, 0.25, names).folded)
    np.testing.assert_allclose(-steps.neg_logits(), [0.25, 0.25, 0.25], rtol=0, atol=1e-15)  # nothing picked
    steps.add(0)
    # cos(unit(q + c0), c_i) = (rel_i + sim_0i) / |q + c0| = (2, 1.2, 0) / 2; qdc_over_rel = that - rel
    sim0 = np.array([1.0, 0.6, 0.0])
    qdc = np.array([1.0, 0.6, 0.0])
    want = 0.25 + 1.0 + 4.0 * (1 / 2) + 2.0 * sim0 - 1.0 * (qdc - np.array([1.0, 0.6, 0.0]))
    np.testing.assert_allclose(-steps.neg_logits(), want, rtol=0, atol=1e-12)
    assert steps.picked == 1
    np.testing.assert_array_equal(steps.sim_max(), sim0)


def test_no_pick_logits_count_every_question_word_as_gain() -> None:
    texts = ["Dune: Herbert wrote Dune.", "Paris: a river.", "nothing here."]
    prep = prepare_inputs(np.ones(4), np.eye(3, 4) + 0.1, 2, None)
    state = QueryState.build(prep, pair_view("Who wrote Dune near a river?", texts))
    names = feature_names(True)
    w = np.zeros(len(names))
    w[names.index("term_gain")], w[names.index("term_union")] = 1.0, 0.5
    m = GoldModel(np.zeros(len(names)), np.ones(len(names)), w, 0.0, names)
    terms = state.pairs.view.term_hits  # type: ignore[union-attr]
    share = terms.sum(axis=1) / terms.shape[1]
    np.testing.assert_allclose(no_pick_logits(state, *m.folded), 1.5 * share, rtol=0, atol=1e-15)


def test_saturated_probabilities_tie_and_go_to_the_more_relevant() -> None:
    # z = 100 * rank / n = 2 * rank: from rank 14 on (z >= 28, 1 - p < 7e-13) every p is within 1e-12 of the
    # best (1.0 from rank 19 on) although the logits differ; the rule ties them (then the more relevant wins),
    # an argmax on the logit would pick the least relevant
    rng = np.random.default_rng(3)
    prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(50, 8)), 3, None)
    state = QueryState.build(prep)
    names = feature_names(False)
    w = np.zeros(len(names))
    w[names.index("rank")] = 100.0
    m = GoldModel(np.zeros(len(names)), np.ones(len(names)), w, 0.0, names)
    order = np.argsort(-prep.relevance, kind="stable")
    picks, probs = greedy_picks(state, m)
    assert picks.tolist() == order[14:17].tolist()
    np.testing.assert_allclose(probs, 1.0 / (1.0 + np.exp(-2.0 * np.arange(14, 17))), rtol=0, atol=1e-15)
    assert picks.tolist() == _row_picks(state, m, None, 0.0, False)[0].tolist()


# ----------------------------------------------------------------------------- against the slow reference


@pytest.mark.parametrize("text", [False, True])
def test_step_probabilities_equal_the_feature_rows_over_many_pools(text: bool) -> None:
    rng = np.random.default_rng(35)
    worst = 0.0
    for _ in range(60):
        n = int(rng.integers(1, 30))
        state = _random_state(rng, n, int(rng.integers(1, 8)), text)
        model = _random_model(rng, text, spread=float(rng.choice([0.1, 1.0, 5.0])))
        steps = StepLogits(state, *model.folded)  # type: ignore[misc]
        picks: list[int] = []
        for j in rng.permutation(n)[: min(n, 7)].tolist():
            slow = model.probabilities(state.rows(picks))
            fast = steps.probabilities()
            worst = max(worst, float(np.abs(fast - slow).max()))
            np.testing.assert_allclose(-steps.neg_logits(), model.logits_of_checked(state.rows(picks)),
                                       rtol=1e-12, atol=1e-12)
            picks.append(j)
            steps.add(j)
    assert worst <= 1e-12


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 25), k=st.integers(1, 8), text=st.booleans(),
       diversity=st.sampled_from([None, 0.0, 0.2, 0.5, 0.8, 1.0]), split_first=st.booleans(),
       spread=st.sampled_from([0.0, 0.3, 3.0, 30.0]))
def test_product_path_picks_equal_the_row_path(seed: int, n: int, k: int, text: bool, diversity: float | None,
                                               split_first: bool, spread: float) -> None:
    rng = np.random.default_rng(seed)
    state = _random_state(rng, n, k, text)
    model = _random_model(rng, text, spread)
    first = _random_model(rng, text, spread) if split_first else None
    weight = 0.0 if diversity is None else abs(2.0 * diversity - 1.0)
    picks, probs = greedy_picks(state, model, first, diversity)
    ref_picks, ref_probs = _row_picks(state, model, first, weight, diversity is not None and diversity < 0.5)
    assert picks.tolist() == ref_picks.tolist()
    np.testing.assert_allclose(probs, ref_probs, rtol=0, atol=1e-12)


def _rule(neg: np.ndarray, relevance: np.ndarray) -> int:
    """The plain rule as the loop before issue 35 applied it: probabilities, picked at -inf, ties within 1e-12."""
    p = sigmoid(-neg)
    p[np.isinf(neg)] = -np.inf
    best = np.flatnonzero(p >= p.max() - 1e-12)
    order = np.argsort(-relevance, kind="stable")
    rank = np.empty(len(p))
    rank[order] = -np.arange(len(p))
    return int(best[np.argmax(rank[best])])


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 100_000), top=st.floats(-60.0, 60.0), n=st.integers(1, 12),
       gap=st.sampled_from([0.0, 2e-13, 9e-13, 1e-12, 1.1e-12, 3e-12, 1e-9, 1e-3, 1.0]))
def test_pick_on_negated_logits_follows_the_probability_rule(seed: int, top: float, n: int, gap: float) -> None:
    # candidates whose probabilities sit just inside and just outside the tie window of the best one,
    # at every level: saturated (top << 0), middle, tiny (top >> 0), clipped (top > 50)
    rng = np.random.default_rng(seed)
    p_best = 1.0 / (1.0 + np.exp(min(top, 50.0)))
    p = np.clip(p_best - gap * rng.integers(0, 3, size=n), 1e-300, 1.0)
    neg = np.where(p < 1.0, np.log(1.0 / np.where(p < 1.0, p, 0.5) - 1.0), top - rng.uniform(0, 5, size=n))
    neg[rng.integers(0, n)] = top
    neg[rng.random(n) < 0.2] = np.inf  # picked already
    if np.all(np.isinf(neg)):
        neg[0] = top
    relevance = rng.normal(size=n).round(1)  # equal relevance too: then the first wins
    j, prob = _pick(neg, relevance)
    assert j == _rule(neg, relevance)
    assert abs(prob - float(sigmoid(-neg[j:j + 1])[0])) <= 1e-15


def test_best_breaks_ties_by_relevance_then_index() -> None:
    score = np.array([0.5, 0.9, 0.9 - 5e-13, 0.9, 0.2])
    assert _best(score, np.array([0.0, 0.1, 0.3, 0.3, 1.0])) == 2  # the most relevant of 1, 2, 3
    assert _best(score, np.array([0.0, 0.3, 0.1, 0.3, 1.0])) == 1  # 1 and 3 equally relevant: the first
    full = np.zeros(12)
    full[[4, 6, 7, 9, 11]] = [0.0, 0.3, 0.1, 0.3, 1.0]  # the relevance of all candidates, score covering five
    assert _best(score, full, np.array([4, 6, 7, 9, 11])) == 1
    assert _best(np.array([0.3, 0.9 - 2e-12, 0.9]), np.array([0.0, 1.0, 0.0])) == 2  # outside the window


def test_standard_equals_numpy_std_and_mean_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        x = rng.normal(size=int(rng.integers(2, 60))) * 10.0 ** rng.integers(-3, 4)
        v = x / np.abs(x).max()
        assert np.array_equal(_standard(x), (v - v.mean()) / float(v.std()))
    assert _standard(np.full(5, 2.0)).tolist() == [0.0] * 5
    assert _standard(np.zeros(3)).tolist() == [0.0] * 3


# ----------------------------------------------------------------------------- the row path's cases


def test_extreme_relevance_takes_the_row_path_with_the_same_picks() -> None:
    rng = np.random.default_rng(2)
    prep = prepare_inputs(rng.normal(size=6), rng.normal(size=(12, 6)), 4, rng.normal(size=12) * 1e150)
    state = QueryState.build(prep)
    model = _random_model(rng, False)
    picks, probs = greedy_picks(state, model)
    ref = _row_picks(state, model, None, 0.0, False)
    assert picks.tolist() == ref[0].tolist() and probs.tolist() == ref[1].tolist()


def test_typed_errors_are_kept() -> None:
    rng = np.random.default_rng(4)
    state = _random_state(rng, 6, 3, False)
    names = feature_names(False)
    nan_model = GoldModel(np.zeros(len(names)), np.ones(len(names)), np.full(len(names), np.nan), 0.0, names)
    with pytest.raises(NonFiniteInputError, match="non-finite probabilities"):
        greedy_picks(state, nan_model)
    with pytest.raises(DimensionMismatchError, match=r"features must have shape \(n, 31\); got \(6, 16\)"):
        greedy_picks(state, _random_model(rng, True))
    bad = QueryState(np.full_like(state.static, np.nan), state.sim, state.qdc, state.relevance, state.k, None)
    with pytest.raises(NonFiniteInputError, match="static features hold NaN/inf"):
        greedy_picks(bad, _random_model(rng, False))
