"""The text view of a question and its candidates, and the lexical set features built on it."""

from __future__ import annotations

import numpy as np
import pytest
from adaptive_testdata import random_view
from diverse_core.adaptive import LEXICAL_SET_FEATURES, TextView, lexical_set_features, text_view
from diverse_core.text import STOPWORDS, content_terms, name_terms
from hypothesis import given
from hypothesis import strategies as st


def test_text_view_terms_names_hits_and_other_names() -> None:
    v = text_view(
        "Who directed Alien in 1979?",
        ["Alien was directed by Ridley Scott in 1979.", "The cat sat.", "Scott and Weaver."],
    )
    assert v.terms == ("1979", "alien", "directed")  # "who", "in" are stop words
    assert v.names == ("1979", "alien")  # numbers count as names; "Who" is the first word anyway
    assert v.term_hits.tolist() == [[True, True, True], [False, False, False], [False, False, False]]
    assert v.name_hits.tolist() == [[True, True], [False, False], [False, False]]
    # other names (not question terms), columns sorted: ridley, scott, weaver; "The" is a stop word
    assert v.other_names.tolist() == [[True, True, False], [False, False, False], [False, True, True]]
    assert v.term_hits.dtype == v.name_hits.dtype == v.other_names.dtype == np.bool_


def test_first_word_of_the_question_is_not_a_name_but_still_a_term() -> None:
    v = text_view("Paris hosted which Olympics?", ["Olympics in Paris", "hosted"])
    assert v.terms == ("hosted", "olympics", "paris")
    assert v.names == ("olympics",)
    assert v.term_hits.tolist() == [[False, True, True], [True, False, False]]
    assert v.name_hits.tolist() == [[True], [False]]
    # "Olympics" and "Paris" in the text are question terms, so no other names
    assert v.other_names.tolist() == [[False], [False]]


def test_stop_words_short_words_and_case() -> None:
    assert content_terms("The Film of a X and the Born person") == set()  # all stop words or 1 char
    assert content_terms("Zürich's Banks, banks!") == {"zürich's", "banks"}
    assert name_terms("Zürich 2020 river The") == {"zürich", "2020"}
    assert name_terms("Zürich 2020 river", skip_first=True) == {"2020"}
    assert {"the", "who", "film", "born"} <= STOPWORDS


def test_no_terms_gives_zero_width_matrices() -> None:
    v = text_view("Who is it?", ["nothing here", "nor there"])
    assert v.terms == () and v.names == ()
    assert v.term_hits.shape == (2, 0) and v.name_hits.shape == (2, 0)
    assert v.other_names.shape == (2, 1) and not v.other_names.any()  # one all-false column
    f = lexical_set_features(v, np.array([[0, 1], [1, 0]]), np.array([0.2, 0.9]))
    assert f.shape == (2, len(LEXICAL_SET_FEATURES))
    assert np.array_equal(f, np.zeros_like(f))


def test_no_texts() -> None:
    v = text_view("Who directed Alien?", [])
    assert v.term_hits.shape == (0, 2) and v.name_hits.shape == (0, 1) and v.other_names.shape == (0, 1)


def _hand_view() -> TextView:
    return TextView(
        terms=("t0", "t1", "t2", "t3"),
        names=("n0", "n1"),
        term_hits=np.array([[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]], dtype=bool),
        name_hits=np.array([[1, 0], [0, 0], [0, 1]], dtype=bool),
        other_names=np.array([[1, 0], [1, 1], [0, 1]], dtype=bool),
    )


def test_lexical_set_features_hand_built() -> None:
    # relevance makes {0, 2} the top-2 set: terms t0, t1, t3 (0.75), names n0, n1 (1.0)
    got = lexical_set_features(_hand_view(), np.array([[0, 1], [0, 2], [1, 2]]), np.array([0.9, 0.5, 0.7]))
    want = np.array(
        [
            # union gain mean | name union gain mean | bridge | all
            [0.75, 0.0, 0.5, 0.5, -0.5, 0.25, 0.5, 0.0],  # picks share other name 0
            [0.75, 0.0, 0.5, 1.0, 0.0, 0.5, 0.0, 0.0],
            [1.0, 0.25, 0.5, 0.5, -0.5, 0.25, 0.5, 1.0],  # every term; share other name 1
        ]
    )
    np.testing.assert_allclose(got, want)
    assert got.shape[1] == len(LEXICAL_SET_FEATURES)


def test_lexical_set_features_from_real_texts() -> None:
    v = text_view(
        "Which river flows through Vienna and Budapest?",
        ["The Danube flows through Vienna.", "Budapest lies on the Danube.", "A river in Spain."],
    )
    f = dict(zip(LEXICAL_SET_FEATURES, lexical_set_features(v, np.array([[0, 1], [0, 2]]), [0.9, 0.5, 0.8]).T,
                 strict=True))
    # terms: budapest, flows, river, through, vienna; top-2 set = {0, 2}
    assert v.terms == ("budapest", "flows", "river", "through", "vienna")
    assert f["term_union"].tolist() == pytest.approx([4 / 5, 4 / 5])
    assert f["term_gain"].tolist() == pytest.approx([0.0, 0.0])
    assert f["name_union"].tolist() == [1.0, 0.5]  # names: budapest, vienna
    assert f["bridge"].tolist() == [0.5, 0.0]  # "danube" in both picks of the first set
    assert f["term_all"].tolist() == [0.0, 0.0]


def _slow_lexical(view: TextView, sets: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """Reference: the lexical set features with plain Python loops."""
    n = len(rel)
    k = sets.shape[1]
    top = sorted(range(n), key=lambda i: (-rel[i], i))[:k]

    def union(hits: np.ndarray, picks: list[int]) -> float:
        width = hits.shape[1]
        return sum(any(hits[c, t] for c in picks) for t in range(width)) / width if width else 0.0

    def mean(hits: np.ndarray, picks: list[int]) -> float:
        width = hits.shape[1]
        return sum(sum(hits[c, t] for t in range(width)) / width for c in picks) / len(picks) if width else 0.0

    rows = []
    for row in sets:
        s = [int(c) for c in row]
        tu, nu = union(view.term_hits, s), union(view.name_hits, s)
        shared = sum(sum(view.other_names[c, v] for c in s) >= 2 for v in range(view.other_names.shape[1]))
        width = view.term_hits.shape[1]
        every = width > 0 and all(any(view.term_hits[c, t] for c in s) for t in range(width))
        rows.append([tu, tu - union(view.term_hits, top), mean(view.term_hits, s), nu,
                     nu - union(view.name_hits, top), mean(view.name_hits, s), shared / k, float(every)])
    return np.array(rows)


@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(0, 5), st.integers(0, 3))
def test_lexical_set_features_match_a_slow_reference(seed: int, k: int, n_terms: int, n_names: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(k, 15))
    view = random_view(rng, n, n_terms, n_names)
    sets = np.stack([rng.choice(n, size=k, replace=False) for _ in range(int(rng.integers(1, 6)))])
    rel = rng.integers(0, 4, size=n) / 4.0  # ties: the top-k set breaks them by index
    got = lexical_set_features(view, sets, rel)
    np.testing.assert_allclose(got, _slow_lexical(view, sets, rel), atol=1e-12)
