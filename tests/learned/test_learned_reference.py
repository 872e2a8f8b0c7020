"""The learned selector against slow references written out plainly for the test.

The static rows against the formulas over the whole (n, n) cosine matrix (bit for bit: the same
operations, whatever the row blocks), the text columns against counts over dense 0/1 tables, and
the greedy picks against a loop that rebuilds every feature row from dense pair matrices at every
step and picks by the rule (highest probability; ties within 1e-12: the more relevant, then the first).
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from diverse_core.learned import QueryState, feature_names, pair_view
from diverse_core.learned.greedy import greedy_picks
from diverse_core.learned.pairview import PairView
from diverse_core.text import text_view
from diverse_core.trained import candidates as cand
from diverse_core.trained.candidates import EMBEDDING_CANDIDATE_FEATURES, candidate_features
from diverse_core.trained.gold import GoldModel, sigmoid
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st
from learned_testdata import QUESTION, random_texts, reference_scale


def _prep(rng: np.random.Generator, n: int, k: int, ties: bool = False) -> Any:
    q = rng.normal(size=6)
    c = rng.normal(size=(n, 6)) + q * rng.uniform(0, 2, size=(n, 1))
    if ties and n > 3:
        c[1], c[3] = c[0], c[2]  # duplicates: equal relevance, equal rows
    return prepare_inputs(q, c, k, None)


def _old_static(sim: np.ndarray, rel: np.ndarray, k: int) -> np.ndarray:
    """The embedding columns over the whole cosine matrix (argsort, rank table gather, masked max, means)."""
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


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 60), k=st.integers(1, 8), ties=st.booleans(),
       block=st.sampled_from([1, 7, 1024]))
def test_static_rows_equal_the_whole_matrix_formulas(seed: int, n: int, k: int, ties: bool, block: int) -> None:
    # k <= 8: numpy adds the few columns of a row one after the other either way
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k, ties=ties)
    unit = prep.candidates
    want = _old_static(unit @ unit.T, prep.relevance, k)
    with mock.patch.object(cand, "SIM_BLOCK", block):  # row blocks of any size: the same rows (up to rounding)
        got = candidate_features(unit, prep.relevance, k)
    if block >= n:
        assert np.array_equal(got, want)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 60), k=st.integers(1, 8), ties=st.booleans(),
       shift=st.floats(-0.5, 0.5), stretch=st.floats(0.05, 20.0))
def test_learned_static_rows_are_the_formulas_on_the_common_scale(seed: int, n: int, k: int, ties: bool, shift: float,
                                                                   stretch: float) -> None:
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k, ties=ties)
    unit = prep.candidates
    a_r, b_r, a_s, b_s = reference_scale(unit, prep.relevance)
    want = _old_static(a_s * (unit @ unit.T) + b_s, a_r * prep.relevance + b_r, k)
    want[int(np.argsort(-prep.relevance, kind="stable")[0]), 5] = 0.0  # the best: nothing ranks above it
    state = QueryState.build(prep)
    np.testing.assert_allclose(state.static, want, rtol=0, atol=1e-9)
    # relevance stretched and shifted (another scorer's scale): the same rows
    other = prepare_inputs(prep.query, prep.candidates, k, prep.relevance * stretch + shift)
    np.testing.assert_allclose(QueryState.build(other).static, state.static, rtol=0, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 40), k=st.integers(1, 12))
def test_text_columns_equal_counts_over_dense_tables(seed: int, n: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k)
    texts = random_texts(rng, n)
    view = text_view(QUESTION, texts)
    got = candidate_features(prep.candidates, prep.relevance, k, view)
    order = np.argsort(-prep.relevance, kind="stable")
    top, near = int(order[0]), order[:3]
    hits = np.concatenate([view.term_hits, view.name_hits], axis=1).astype(np.float64)
    t = view.term_hits.shape[1]
    lacks = 1.0 - hits[top]
    e = len(EMBEDDING_CANDIDATE_FEATURES)
    share = [hits[:, :t].sum(1) / max(t, 1), hits[:, t:].sum(1) / max(hits.shape[1] - t, 1),
             (hits[:, :t] * lacks[:t]).sum(1) / max(lacks[:t].sum(), 1),
             (hits[:, t:] * lacks[t:]).sum(1) / max(lacks[t:].sum(), 1)]
    np.testing.assert_allclose(got[:, e: e + 4], np.column_stack(share), rtol=0, atol=1e-15)
    other = view.other_names.astype(np.float64)
    to_near = other @ other[near].max(axis=0)
    assert np.array_equal(got[:, e + 4], np.log1p(to_near))
    assert np.array_equal(got[:, e + 5], np.log1p(other @ other[top]))
    # the same rows from the learned selector's pair view (its shared names kept as entries)
    state = QueryState.build(prep, pair_view(QUESTION, texts))
    assert np.array_equal(state.static[:, e:], got[:, e:])


def _dense(pv: PairView, row: str) -> np.ndarray:
    return np.array([pv.row(row, j) for j in range(pv.n)]).reshape(pv.n, pv.n)


def _reference_rows(state: QueryState, picks: list[int]) -> np.ndarray:
    """Every feature row from dense (n, n) pair matrices, reduced over the picks with numpy's reductions."""
    unit, n, k = state.unit, state.n, state.k
    a_r, b_r, a_s, b_s = reference_scale(unit, state.cos_q)  # the default relevance: the cosine to the query
    raw = unit @ unit.T
    sim = a_s * raw + b_s
    norm = np.sqrt(np.maximum(2.0 * state.cos_q + 2.0, 1e-12))
    qdc = a_r * (state.cos_q[None, :] + raw) / norm[:, None] + b_r
    idx = np.asarray(picks, dtype=np.int64)
    t = len(picks)
    cols = [np.full(n, float(t > 0)), np.full(n, t / max(k, 1))]
    if t:
        cols += [sim[idx].max(0), sim[idx].mean(0), qdc[idx].max(0), qdc[idx].max(0) - state.relevance]
    else:
        cols += [np.zeros(n)] * 4
    pv = state.pairs
    if pv is not None:
        for row in ("same_source", "title_in", "title_in_column", "names_shared"):
            cols.append(_dense(pv, row)[idx].max(0) if t else np.zeros(n))
        hits = pv.words.T > 0
        nt = len(pv.terms)
        for group, union in ((hits[:, :nt], False), (hits[:, nt:], False), (hits[:, :nt], True)):
            held = group[idx].any(0) if t else np.zeros(group.shape[1], dtype=bool)
            mark = (group | held) if union else (group & ~held)
            cols.append(mark.sum(1) / max(group.shape[1], 1))
    return np.column_stack([state.static, *cols])


def _reference_picks(state: QueryState, model: GoldModel) -> tuple[list[int], list[float]]:
    picks: list[int] = []
    probs: list[float] = []
    for _ in range(min(state.k, state.n)):
        p = sigmoid(model.logits_of_checked(_reference_rows(state, picks)))
        p[picks] = -np.inf
        best = [i for i in range(state.n) if p[i] >= p.max() - 1e-12]
        j = max(best, key=lambda i: (state.relevance[i], -i))
        picks.append(j)
        probs.append(float(p[j]))
    return picks, probs


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 30), k=st.integers(1, 10), text=st.booleans(),
       ties=st.booleans())
def test_rows_and_picks_equal_the_dense_reference(seed: int, n: int, k: int, text: bool, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    prep = _prep(rng, n, k, ties=ties)
    state = QueryState.build(prep, pair_view(QUESTION, random_texts(rng, n)) if text else None)
    picks = [int(i) for i in rng.permutation(n)[: min(k, n)]]
    for t in range(len(picks) + 1):
        np.testing.assert_allclose(state.rows(picks[:t]), _reference_rows(state, picks[:t]), rtol=0, atol=1e-12)
    names = feature_names(text)
    f = len(names)
    model = GoldModel(rng.normal(size=f), rng.uniform(0.05, 3.0, size=f), rng.normal(size=f), float(rng.normal()),
                      names)
    got, probs = greedy_picks(state, model)
    want, want_probs = _reference_picks(state, model)
    assert got.tolist() == want
    np.testing.assert_allclose(probs, want_probs, rtol=0, atol=1e-12)
