"""The learned selector's pair view: rows of the pair matrices on demand, against a set-based reference.

Hand-built answers, every row of the pair view against a plain set-based reference (pair by
pair, from Python word sets), the candidate features from the pair view's shared names against
the ones counted from the lexical view, and many threads at once.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from diverse_core.learned import PairView, QueryState, pair_view
from diverse_core.text import content_terms, facts_cache, name_terms, split_title, text_view
from diverse_core.trained.candidates import candidate_features
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = ["Alien", "Ridley", "Scott", "film", "born", "South", "Shields", "1937", "Dune", "novel", "Herbert", "river",
         "X", "scott", "dune", "Tacoma"]
TITLES = ["", "Alien", "Ridley Scott", "Dune", "dune", "South Shields"]
QUESTIONS = ["Where was the director of Alien born?", "Who wrote Dune near the river in 1937?", "What film?",
             "Is Ridley Scott from South Shields or Tacoma?"]


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    out = []
    for _ in range(n):
        body = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 9))))
        title = TITLES[int(rng.integers(len(TITLES)))]
        out.append(f"{title}: {body}." if title else body + ".")
    return out


def _dense(pv: PairView, row: str) -> np.ndarray:
    """The (n, n) matrix whose row ``j`` is ``pv.row(row, j)`` (``[pick, candidate]``)."""
    return np.array([pv.row(row, j) for j in range(pv.n)]).reshape(pv.n, pv.n)


def _slow_pair_view(question: str, texts: list[str], sources: list[object] | None,
                    names: list[str | None] | None) -> dict[str, np.ndarray]:
    """Reference: every matrix of the pair view from Python word sets, pair by pair."""
    n = len(texts)
    q_terms, q_names = sorted(content_terms(question)), sorted(name_terms(question, skip_first=True))
    terms = [content_terms(t) for t in texts]
    others = [name_terms(t) - set(q_terms) for t in texts]
    heads = [split_title(t)[0] for t in texts]
    bodies = [content_terms(split_title(t)[1]) for t in texts]
    titles = [content_terms(names[i]) if names and names[i] else content_terms(heads[i]) for i in range(n)]
    if sources is None:
        keys: list[object] = [h.strip().lower() or None for h in heads]
    else:
        keys = [None if s is None or s == "" else s for s in sources]
    return {
        "term_hits": np.array([[w in terms[i] for w in q_terms] for i in range(n)], dtype=bool).reshape(n, -1),
        "name_hits": np.array([[w in terms[i] for w in q_names] for i in range(n)], dtype=bool).reshape(n, -1),
        "totals": np.array([float(len(o)) for o in others]),
        "pairs": np.array([[float(len(others[i] & others[j])) for j in range(n)] for i in range(n)]),
        "title_in": np.array([[len(bodies[i] & titles[j]) / max(len(titles[j]), 1) for j in range(n)]
                              for i in range(n)]),
        "same_source": np.array([[i == j or (keys[i] is not None and keys[i] == keys[j]) for j in range(n)]
                                for i in range(n)]),
    }


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 14), st.sampled_from(QUESTIONS), st.booleans(), st.booleans())
def test_pair_view_equals_a_set_based_reference(seed: int, n: int, question: str, with_sources: bool,
                                                with_names: bool) -> None:
    rng = np.random.default_rng(seed)
    texts = _texts(rng, n)
    sources = [None if s == 3 else f"s{s}" for s in rng.integers(0, 4, size=n)] if with_sources else None
    names = [None if i % 3 else str(rng.choice(["Ridley Scott", "Tacoma river", "X"])) for i in range(n)] \
        if with_names else None
    pv = pair_view(question, texts, sources=sources, names=names)
    ref = _slow_pair_view(question, texts, sources, names)
    n_terms = len(pv.terms)
    assert np.array_equal(pv.words[:n_terms].T, ref["term_hits"]) and np.array_equal(pv.words[n_terms:].T,
                                                                                      ref["name_hits"])
    assert np.array_equal(pv.shared.totals, ref["totals"])
    assert np.array_equal(_dense(pv, "title_in"), ref["title_in"])  # [pick j, i]: j's body holds i's title
    assert np.array_equal(_dense(pv, "title_in_column"), ref["title_in"].T)  # [pick j, i]: i's body holds j's title
    assert np.array_equal(_dense(pv, "same_source"), ref["same_source"])
    assert np.array_equal(_dense(pv, "names_shared"), np.log1p(ref["pairs"]))
    assert np.all(np.bincount(pv.shared.cols, minlength=pv.shared.size) >= 2)  # only names two or more mention


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 14), st.integers(1, 6), st.sampled_from(QUESTIONS))
def test_candidate_features_from_shared_names_equal_the_counted_ones(seed: int, n: int, k: int,
                                                                     question: str) -> None:
    rng = np.random.default_rng(seed)
    texts = _texts(rng, n)
    prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(n, 8)), k, None)
    pv = pair_view(question, texts)
    state = QueryState.build(prep, pv)
    unit = prep.candidates
    counted = candidate_features(unit, prep.relevance, prep.k, text_view(question, texts), state.scale)
    assert np.array_equal(state.static, counted)  # bit for bit: every count is an exact integer


def test_pair_view_hand_built_shared_names() -> None:
    texts = ["Alien: Ridley Scott directed Alien in Tacoma.", "Ridley Scott: Scott was born in South Shields.",
             "South Shields: a town near Tacoma.", "a river"]
    pv = pair_view("Where was the director of Alien born?", texts)
    # names outside the question's terms ("alien", "director", "born"): ridley, scott, tacoma | ridley, scott,
    # south, shields | south, shields, tacoma | none
    assert pv.shared.totals.tolist() == [3.0, 4.0, 3.0, 0.0]
    assert pv.row("names_shared", 0)[1] == np.log1p(2.0) and pv.row("names_shared", 1)[2] == np.log1p(2.0)
    assert pv.row("names_shared", 0)[2] == np.log1p(1.0) and pv.row("names_shared", 3)[0] == 0.0
    assert pv.row("names_shared", 1)[1] == np.log1p(4.0)
    assert pv.shared.size == 5  # ridley, scott, tacoma, south, shields: each held twice
    # [pick j, i]: the share of i's title words j's body holds
    assert pv.row("title_in", 0)[1] == 1.0 and pv.row("title_in", 2)[0] == 0.0 and pv.row("title_in", 1)[2] == 1.0
    assert math.isclose(pv.row("title_in", 2)[1], 0.0)
    assert pv.row("title_in_column", 1)[0] == 1.0  # text 0's body holds text 1's title


def test_pair_view_empty_pool_and_no_names() -> None:
    pv = pair_view("Who?", [])
    assert pv.n == 0 and pv.words.shape == (0, 0) and pv.shared.size == 0
    pv = pair_view("Where was the director of Alien born?", ["alien film", "born twice"])
    assert pv.shared.size == 0 and pv.shared.totals.tolist() == [0.0, 0.0]
    assert _dense(pv, "names_shared").tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("n_threads", [8])
def test_pair_view_under_many_threads_equals_one_thread(n_threads: int) -> None:
    facts_cache().clear()  # texts first read by either reader
    rng = np.random.default_rng(7)
    pools = [(QUESTIONS[i % len(QUESTIONS)], _texts(rng, 30)) for i in range(24)]
    expected = [pair_view(q, t) for q, t in pools]
    failures: list[str] = []

    def work(t: int) -> None:
        for r in range(20):
            k = (t * 7 + r) % len(pools)
            if t % 2:  # the adaptive selector's readers: the same texts
                text_view(*pools[(k + 1) % len(pools)])
            got = pair_view(*pools[k])
            want = expected[k]
            if not all(np.array_equal(_dense(got, row), _dense(want, row))
                       for row in ("title_in", "title_in_column", "names_shared", "same_source")) \
                    or not np.array_equal(got.words, want.words):
                failures.append(f"thread {t} pool {k}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []
