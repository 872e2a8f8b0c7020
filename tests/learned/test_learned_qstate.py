"""The learned call's query state and picks without the numpy calls that release the GIL (issue 35).

Under many concurrent callers every GIL release can hand the interpreter to another thread, so the
warm call's query state and greedy loop avoid ``argsort``, ``argmin``, ``count_nonzero`` and fancy row
gathers. The values must stay those of the formulas they replace bit for bit (the shipped models'
picks and scores may not move): checked here against those formulas written out with numpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from diverse_core.adaptive.candidates import (
    EMBEDDING_CANDIDATE_FEATURES,
    GoldModel,
    candidate_features,
    relevance_order,
    word_rows,
)
from diverse_core.learned import LearnedSelector, QueryState, feature_names, pair_view
from diverse_core.learned.greedy import _pick, greedy_picks
from diverse_core.learned.steplogits import StepLogits
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st
from learned_testdata import QUESTION, random_texts


def _prep(rng: np.random.Generator, n: int, k: int, dtype: Any = np.float64, ties: bool = False) -> Any:
    q = rng.normal(size=6)
    c = rng.normal(size=(n, 6)) + q * rng.uniform(0, 2, size=(n, 1))
    if ties and n > 3:
        c[1], c[3] = c[0], c[2]  # duplicates: equal relevance, equal rows
    return prepare_inputs(q.astype(dtype), c.astype(dtype), k, None)


# ----------------------------------------------------------------------------- the relevance order


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, 1e300, 5e-324]),
                          st.floats(-2.0, 2.0)), min_size=1, max_size=60))
def test_relevance_order_is_the_stable_argsort(values: list[float]) -> None:
    rel = np.array(values)
    assert relevance_order(rel).tolist() == np.argsort(-rel, kind="stable").tolist()


def test_relevance_order_with_nan_is_numpys() -> None:
    rel = np.array([0.3, np.nan, 0.9, 0.3, np.nan, -1.0])
    assert relevance_order(rel).tolist() == np.argsort(-rel, kind="stable").tolist()
    both = np.array([np.inf, 0.2, -np.inf, 0.2])  # their sum is NaN: numpy's order, the same one
    assert relevance_order(both).tolist() == [0, 1, 3, 2]


# ----------------------------------------------------------------------------- static rows, bit for bit


def _old_static(sim: np.ndarray, rel: np.ndarray, k: int) -> np.ndarray:
    """The embedding columns as written before (argsort, rank table gather, masked max, reduction over a take)."""
    n = rel.shape[0]
    out = np.empty((n, len(EMBEDDING_CANDIDATE_FEATURES)))
    order = np.argsort(-rel, kind="stable")
    top = int(order[0])
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(n)
    r = np.arange(n, dtype=np.float64)
    table = np.column_stack([r / n, (r < k).astype(np.float64), np.log1p(r)])
    out[:, 0] = rel
    out[:, 1] = rel - rel[top]
    out[:, 2:5] = table[rank]
    out[:, 5] = np.where(rank[None, :] < rank[:, None], sim, -1.0).max(axis=1)
    out[top, 5] = 0.0
    out[:, 6] = sim[:, top]
    top_k = order[: min(k, n)]
    out[:, 7] = np.add.reduce(sim[:, top_k], axis=1) / top_k.shape[0]
    out[:, 8] = np.add.reduce(sim, axis=1) / n
    out[:, 9] = rel[top]
    return out


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 60), k=st.integers(1, 25), ties=st.booleans())
def test_embedding_columns_equal_the_old_formulas_bit_for_bit(seed: int, n: int, k: int, ties: bool) -> None:
    # k above 8: numpy's pairwise sum would add a contiguous row in another order than the column adds
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k, ties=ties)
    unit = prep.candidates
    sim = unit @ unit.T
    got = candidate_features(unit, prep.relevance, k, sim=sim)
    assert np.array_equal(got, _old_static(sim, prep.relevance, k))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 40), k=st.integers(1, 12))
def test_text_columns_equal_the_old_counts_bit_for_bit(seed: int, n: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k)
    pv = pair_view(QUESTION, random_texts(rng, n))
    view = pv.view
    unit = prep.candidates
    got = candidate_features(unit, prep.relevance, k, view, sim=unit @ unit.T, shared=pv.shared)
    # the counts as computed before: one float (n, W) matrix, its product with [base | base * lacks-of-top]
    order = np.argsort(-prep.relevance, kind="stable")
    top, near = int(order[0]), order[:3]
    hits = np.concatenate([view.term_hits, view.name_hits], axis=1).astype(np.float64)
    base = np.zeros((hits.shape[1], 2))
    base[: view.term_hits.shape[1], 0] = 1.0
    base[view.term_hits.shape[1]:, 1] = 1.0
    weights = np.concatenate([base, base * (1.0 - hits[top])[:, None]], axis=1)
    e = len(EMBEDDING_CANDIDATE_FEATURES)
    assert np.array_equal(got[:, e: e + 4], np.divide(hits @ weights, np.maximum(weights.sum(axis=0), 1.0)))
    cols = pv.shared.columns  # type: ignore[union-attr]
    to_near = np.asarray(cols @ cols[near].max(axis=0), dtype=np.float64) if cols.shape[1] else np.zeros(n)
    to_near[near] = pv.shared.totals[near]  # type: ignore[union-attr]
    assert np.array_equal(got[:, e + 4], np.log1p(to_near))
    assert np.array_equal(got[:, e + 5], pv.shared.log_pairs[:, top])  # type: ignore[union-attr]
    assert np.array_equal(word_rows(view), hits.T)


# ----------------------------------------------------------------------------- the query state


@pytest.mark.parametrize("text", [False, True])
def test_pair_stack_holds_the_pair_matrices_of_each_pick(text: bool) -> None:
    rng = np.random.default_rng(4)
    prep = _prep(rng, 23, 5, dtype=np.float32)
    st_ = QueryState.build(prep, pair_view(QUESTION, random_texts(rng, 23)) if text else None, stacked=True)
    stack = st_.pair_stack()
    assert st_.pair_stack() is stack and not stack.flags.writeable  # built once, shared read-only
    pv = st_.pairs
    blocks = [st_.sim, st_.qdc] if pv is None else [st_.sim, st_.qdc, pv.same_title, pv.title_in, pv.title_in.T,
                                                     pv.names_shared]
    assert stack.shape == (23, len(blocks), 23)
    for m, block in enumerate(blocks):
        assert np.array_equal(stack[:, m, :], block)
    # the same values as the formulas of the state (sim: the unit rows' product; qdc: cos(unit(q + u_i), u_j))
    unit = prep.candidates
    sim = unit @ unit.T
    cos_qi = unit @ np.asarray(prep.query, dtype=np.float64)
    assert np.array_equal(st_.sim, sim)
    assert np.array_equal(st_.qdc, np.add(cos_qi[None, :], sim) / np.sqrt(np.maximum(2.0 + 2.0 * cos_qi, 1e-12))[:, None])
    bare = st_.without_text()
    assert np.array_equal(bare.pair_stack(), stack[:, :2, :])
    # a state built by hand (or without stacked=True: training examples, kept in bulk) keeps none of it:
    # each call stacks its blocks anew
    again = QueryState(st_.static, st_.sim, st_.qdc, st_.relevance, st_.k, st_.pairs)
    plain = QueryState.build(prep, st_.pairs)
    for other in (again, plain):
        assert np.array_equal(other.pair_stack(), stack) and other.pair_stack() is not other.pair_stack()
        assert np.array_equal(other.word_rows(), st_.word_rows()) and other.word_rows() is not other.word_rows()
        assert np.array_equal(other.word_marks(), st_.word_rows().T - 1.0) and other.word_marks().flags.c_contiguous
    assert np.array_equal(plain.static, st_.static) and np.array_equal(plain.qdc, st_.qdc)


def test_build_keeps_no_float64_copy_of_the_candidates() -> None:
    # the (n, d) float64 rows are freed inside the build (their memory then holds the pair stack)
    rng = np.random.default_rng(2)
    prep = _prep(rng, 30, 5, dtype=np.float32)
    first = prep.candidates_unkept()
    assert first is not prep.candidates_unkept()  # nothing kept
    QueryState.build(prep)
    assert prep.candidates_unkept() is not prep.candidates_unkept()
    kept = prep.candidates
    assert prep.candidates_unkept() is kept and np.array_equal(kept, first)


# ----------------------------------------------------------------------------- no GIL-releasing calls


def _refuse(name: str) -> Any:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"np.{name} was called (it releases the GIL)")
    return refuse


def test_a_warm_call_calls_no_argsort_argmin_or_count_nonzero(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    q, c = rng.normal(size=16), rng.normal(size=(50, 16)).astype(np.float32)
    texts = random_texts(rng, 50)
    sel = LearnedSelector.default()
    want = sel.choose(q, c, 10, question=QUESTION, texts=texts)
    for name in ("argsort", "argmin", "count_nonzero"):
        monkeypatch.setattr(np, name, _refuse(name))
    got = sel.choose(q, c, 10, question=QUESTION, texts=texts)
    emb = sel.choose(q, c, 10)
    assert got.indices.tolist() == want.indices.tolist() and np.array_equal(got.scores, want.scores)
    assert emb.indices.shape == (10,)


# ----------------------------------------------------------------------------- the plain rule on Python floats


def _old_loop(state: QueryState, model: GoldModel) -> tuple[list[int], list[float]]:
    """The plain rule's loop as written before: +inf on the picked, argmin, count_nonzero of the tie window."""
    n, k = state.n, min(state.k, state.n)
    steps = StepLogits(state, *model.folded)  # type: ignore[misc]
    y = steps.neg_logits()
    taken = np.zeros(n)
    picks, probs = [], []
    for t in range(k):
        pen = y + taken
        j = int(pen.argmin())
        prob = 1.0 / (1.0 + math.exp(min(float(pen[j]), 50.0)))
        below = prob - 2e-12
        if not (below > 1e-15 and np.count_nonzero(pen <= math.log(1.0 / below - 1.0)) == 1):
            j, prob = _pick(pen, state.relevance)
        picks.append(j)
        probs.append(prob)
        taken[j] = np.inf
        if t + 1 < k:
            y = np.empty(n)
            steps.advance(j, y)
    return picks, probs


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 40), k=st.integers(1, 12), text=st.booleans(),
       spread=st.sampled_from([0.0, 0.3, 3.0, 40.0]), ties=st.booleans())
def test_plain_picks_equal_the_old_loop_bit_for_bit(seed: int, n: int, k: int, text: bool, spread: float,
                                                    ties: bool) -> None:
    # spread 40: saturated probabilities (the tie window holds several candidates: the slow path decides)
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k, ties=ties)
    state = QueryState.build(prep, pair_view(QUESTION, random_texts(rng, n)) if text else None)
    names = feature_names(text)
    f = len(names)
    model = GoldModel(rng.normal(size=f), rng.uniform(0.05, 3.0, size=f), spread * rng.normal(size=f),
                      float(rng.normal()), names)
    picks, probs = greedy_picks(state, model)
    old_picks, old_probs = _old_loop(state, model)
    assert picks.tolist() == old_picks
    assert probs.tolist() == old_probs
