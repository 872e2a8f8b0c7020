"""State features of the learned selector: hand-built answers and a plain-loop reference."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.learned import (
    EMBEDDING_STATE_FEATURES,
    TEXT_STATE_FEATURES,
    QueryState,
    feature_names,
    pair_view,
)
from diverse_core.text import content_terms
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st
from learned_testdata import reference_scale

TEXTS = [
    "Alien: Alien is a film directed by Ridley Scott.",
    "Ridley Scott: Ridley Scott is an English director born in South Shields.",
    "Alien: The film was released in 1979 by Fox.",
    "South Shields: South Shields is a coastal town.",
    "no title here, only Fox and Scott",
]
QUESTION = "Where was the director of Alien born?"


def test_pair_view_known_answers() -> None:
    pv = pair_view(QUESTION, TEXTS)
    # same non-empty title: the two Alien windows; an untitled text matches nothing but itself
    assert pv.row("same_source", 0)[2] and pv.row("same_source", 2)[0]
    assert not pv.row("same_source", 0)[1] and not pv.row("same_source", 4)[0]
    # text 0 names "Ridley Scott" (the whole title of text 1); text 1 names "South Shields" (text 3's title)
    assert pv.row("title_in", 0)[1] == 1.0
    assert pv.row("title_in", 1)[3] == 1.0
    assert pv.row("title_in", 3)[1] == 0.0
    # text 4 has no title: nobody can name it
    assert np.all(pv.row("title_in_column", 4) == 0.0)
    # names outside the question both mention: text 0 and 1 share "ridley", "scott"
    assert pv.row("names_shared", 0)[1] == pytest.approx(np.log1p(2))


def test_rows_before_and_after_picks() -> None:
    rng = np.random.default_rng(0)
    prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(5, 8)), 3, None)
    st_ = QueryState.build(prep, pair_view(QUESTION, TEXTS))
    names = feature_names(True)
    r0 = st_.rows([])
    assert r0.shape == (5, len(names))
    col = {n: i for i, n in enumerate(names)}
    assert np.all(r0[:, col["has_picks"]] == 0) and np.all(r0[:, col["sim_max"]] == 0)
    r1 = st_.rows([0])
    assert np.all(r1[:, col["has_picks"]] == 1)
    assert r1[2, col["same_source"]] == 1.0 and r1[1, col["same_source"]] == 0.0
    assert r1[1, col["title_in_pick"]] == 1.0  # the pick (Alien) names Ridley Scott
    unit = prep.candidates / np.linalg.norm(prep.candidates, axis=1, keepdims=True)
    assert r1[3, col["sim_max"]] == pytest.approx(float(st_.scale.similarity(unit[3] @ unit[0])))
    # the step column counts picks over k
    assert st_.rows([0, 1])[0, col["step"]] == pytest.approx(2 / 3)
    # without texts: only the embedding columns
    assert QueryState.build(prep).rows([1]).shape == (5, len(feature_names(False)))
    assert st_.without_text().rows([1]).tolist() == QueryState.build(prep).rows([1]).tolist()


def _reference_state(prep, texts: list[str], question: str, picks: list[int]) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The state columns computed pair by pair with plain loops (written for the test)."""
    unit = np.asarray(prep.candidates, dtype=float)
    unit = unit / np.linalg.norm(unit, axis=1, keepdims=True)
    q = np.asarray(prep.query, dtype=float)
    n, k = unit.shape[0], prep.k
    a_r, b_r, a_s, b_s = reference_scale(unit, unit @ q)  # the default relevance: the cosine to the query
    qterms = sorted(content_terms(question))
    from diverse_core.text import name_terms, split_title

    qnames = sorted(name_terms(question, skip_first=True))
    bags = [content_terms(t) for t in texts]
    titles = [split_title(t)[0] for t in texts]
    bodies = [split_title(t)[1] for t in texts]
    out = []
    for j in range(n):
        row: list[float] = []
        if not picks:
            row += [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        else:
            sims = [a_s * float(unit[i] @ unit[j]) + b_s for i in picks]
            qdcs = []
            for i in picks:
                v = q + unit[i]
                qdcs.append(a_r * float(v @ unit[j] / np.linalg.norm(v)) + b_r)
            rel = a_r * float(unit[j] @ q) + b_r
            row += [1.0, len(picks) / k, max(sims), float(np.mean(sims)), max(qdcs), max(qdcs) - rel]
        if picks:
            row.append(float(any(titles[i].strip() and titles[i].strip().lower() == titles[j].strip().lower()
                                 for i in picks)))

            def share(title: str, body: str) -> float:
                tw = content_terms(title)
                return len(tw & content_terms(body)) / len(tw) if tw else 0.0

            row.append(max(share(titles[j], bodies[i]) for i in picks))
            row.append(max(share(titles[i], bodies[j]) for i in picks))
            others = [name_terms(t) - set(qterms) for t in texts]
            row.append(max(float(np.log1p(len(others[i] & others[j]))) for i in picks))
        else:
            row += [0.0, 0.0, 0.0, 0.0]
        have = set().union(*(bags[i] for i in picks)) if picks else set()
        have_n = {w for w in qnames if any(w in bags[i] for i in picks)}
        nt, nn = max(len(qterms), 1), max(len(qnames), 1)
        row.append(sum(1 for w in qterms if w in bags[j] and w not in have) / nt)
        row.append(sum(1 for w in qnames if w in bags[j] and w not in have_n) / nn)
        row.append(sum(1 for w in qterms if w in bags[j] or w in have) / nt)
        out.append(row)
    return np.asarray(out)


WORDS = ["Alien", "Scott", "Fox", "town", "born", "Paris", "river", "1979", "film", "Shields"]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 9),
    n_picks=st.integers(0, 4),
    data=st.data(),
)
def test_rows_match_plain_loop_reference(seed: int, n: int, n_picks: int, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    prep = prepare_inputs(rng.normal(size=6), rng.normal(size=(n, 6)), 4, None)
    texts = []
    for _ in range(n):
        title = " ".join(data.draw(st.lists(st.sampled_from(WORDS), max_size=2)))
        body = " ".join(data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))
        texts.append(f"{title}: {body}" if title else body)
    question = "Where was the film of " + " ".join(data.draw(st.lists(st.sampled_from(WORDS), max_size=3))) + "?"
    picks = [int(i) for i in rng.permutation(n)[: min(n_picks, n - 1)]]
    state = QueryState.build(prep, pair_view(question, texts))
    got = state.rows(picks)[:, -len(TEXT_STATE_FEATURES):]
    assert got.shape[1] == len(EMBEDDING_STATE_FEATURES) + 7
    free = np.setdiff1d(np.arange(n), picks)  # a pick's own row is never scored
    np.testing.assert_allclose(got[free], _reference_state(prep, texts, question, picks)[free], atol=1e-9)
