"""PoolWords: the one-array words of a query's candidates and the marker-array lookup (issue 35 warm path)."""

from __future__ import annotations

import threading

import numpy as np
from diverse_core.text import BODY, NAME, TERM, TITLE, TextFactsCache, pool_words
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = ["Alien", "Ridley", "Scott", "film", "born", "South", "Shields", "1937", "Dune", "novel", "Herbert", "river"]
TEXT = st.builds(lambda title, body: f"{title}: {' '.join(body)}" if title else " ".join(body),
                 st.sampled_from(["", "Alien", "Ridley Scott", "Dune"]),
                 st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))


def _brute(cache: TextFactsCache, texts: list[str], words: list[str], kind: int) -> np.ndarray:
    facts = [cache.get(t) for t in texts]
    sets = {TERM: [f.terms for f in facts], NAME: [f.names for f in facts], TITLE: [f.title_terms for f in facts],
            BODY: [f.body_terms for f in facts]}[kind]
    return np.array([[w in s for w in words] for s in sets], dtype=bool).reshape(len(texts), len(words))


@settings(max_examples=60, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=12), st.lists(st.sampled_from([w.lower() for w in WORDS] + ["absent"]),
                                                           unique=True, max_size=6))
def test_holds_and_kind_equal_the_word_sets(texts: list[str], words: list[str]) -> None:
    cache = TextFactsCache()
    pool = pool_words(cache.get_many(texts))
    ids = cache.word_ids(words, pool.generation)
    for kind in (TERM, NAME, TITLE, BODY):
        assert np.array_equal(pool.holds(ids, kind), _brute(cache, texts, words, kind)), kind
    got_words, held = pool.kind(TITLE)
    spelled = cache.words_of(got_words, pool.generation)
    assert np.array_equal(held, _brute(cache, texts, spelled, TITLE))
    assert sorted(spelled) == sorted({w for t in texts for w in cache.get(t).title_terms})


def test_holds_from_many_threads_at_once() -> None:
    cache = TextFactsCache()
    rng = np.random.default_rng(0)
    pools = [[" ".join(rng.choice(WORDS, size=6)) for _ in range(30)] for _ in range(8)]
    words = [w.lower() for w in WORDS]
    expected = []
    for texts in pools:
        pool = pool_words(cache.get_many(texts))
        expected.append(pool.holds(cache.word_ids(words, pool.generation), TERM))
    errors: list[str] = []

    def work(k: int) -> None:
        for _ in range(200):
            pool = pool_words(cache.get_many(pools[k]))
            if not np.array_equal(pool.holds(cache.word_ids(words, pool.generation), TERM), expected[k]):
                errors.append(f"pool {k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
