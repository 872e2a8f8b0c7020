"""word_marks: each text's words once with a bit per kind, for a whole batch of texts (issue 35 warm path)."""

from __future__ import annotations

import numpy as np
from diverse_core.textfeatures import BODY, NAME, TERM, TITLE, TextFactsCache
from diverse_core.textmarks import CHUNK, MARK_BITS, put, word_marks
from hypothesis import given, settings
from hypothesis import strategies as st


def _codes(pairs: list[tuple[int, int]]) -> np.ndarray:
    return np.array([i * 8 + kind for i, kind in pairs], dtype=np.int64)


def test_word_marks_hand_built() -> None:
    term, name, title, body = (MARK_BITS[k] for k in (TERM, NAME, TITLE, BODY))
    texts = [
        _codes([(3, TERM), (9, TERM), (3, NAME), (4, NAME), (3, TITLE), (9, BODY)]),
        _codes([]),
        _codes([(9, TERM), (9, BODY)]),
    ]
    got = [dict(zip((m >> 4).tolist(), (m & 15).tolist(), strict=True)) for m in word_marks(texts)]
    assert got == [{3: term | name | title, 4: name, 9: term | body}, {}, {9: term | body}]
    assert word_marks([]) == []
    assert [m.tolist() for m in word_marks([_codes([]), _codes([])])] == [[], []]


def test_word_marks_are_copies() -> None:
    marks = word_marks([_codes([(1, TERM)]), _codes([(2, TERM)])])
    assert all(m.base is None for m in marks)  # a cached text keeps only its own marks alive


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3)), unique=True, max_size=12), max_size=8))
def test_word_marks_equal_a_dictionary_per_text(texts: list[list[tuple[int, int]]]) -> None:
    got = word_marks([_codes(sorted(t, key=lambda p: (p[1], p[0]))) for t in texts])
    for pairs, marks in zip(texts, got, strict=True):
        want: dict[int, int] = {}
        for i, kind in pairs:
            want[i] = want.get(i, 0) | MARK_BITS[kind]
        assert dict(zip((marks >> 4).tolist(), (marks & 15).tolist(), strict=True)) == want
        assert (marks >> 4).tolist() == sorted(want)  # id order, each id once


def test_cache_reads_a_batch_and_renumbers_with_marks() -> None:
    cache = TextFactsCache(max_words=5)
    first = cache.get_many(["Dune: a novel by Frank Herbert.", "Tacoma river"], marks=True)
    assert [len(f.marks) for f in first if f.marks is not None] == [4, 2]  # dune, novel, frank, herbert | tacoma, river
    # passes max_words: renumbered, marks and all
    again = cache.get_many(["Tacoma river", "Paris: capital of France and Europe."], marks=True)
    assert {f.generation for f in again} == {again[0].generation} and again[0].generation != first[0].generation
    assert again[0].marks is not None
    spelled = cache.words_of(again[0].marks >> 4, again[0].generation)
    assert sorted(spelled) == ["river", "tacoma"]


def test_marks_only_when_asked_and_added_to_texts_read_without() -> None:
    cache = TextFactsCache()
    bare = cache.get_many(["Alien: Ridley Scott", "a river"])  # what the adaptive selector reads: no marks
    assert [f.marks for f in bare] == [None, None] and cache.misses == 2
    marked = cache.get_many(["a river", "Alien: Ridley Scott", "new text"], marks=True)
    assert all(f.marks is not None for f in marked) and cache.misses == 3 and cache.hits == 2
    assert marked[1].term_ids.tolist() == bare[0].term_ids.tolist() and marked[1].generation == bare[0].generation
    again = cache.get_many(["Alien: Ridley Scott"], marks=True)[0]  # kept: the warm path hands them out
    assert again is marked[1] and cache.get("a river").marks is not None


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2_000), st.integers(0, 100_000), st.booleans())
def test_put_in_pieces_equals_one_write(size: int, seed: int, scalar: bool) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.choice(5_000, size=size, replace=False).astype(np.int64)  # distinct: one value per slot
    values = 0 if scalar else rng.integers(1, 1 << 40, size=size)
    got, want = np.full(5_000, 7, dtype=np.int64), np.full(5_000, 7, dtype=np.int64)
    put(got, ids, values)
    want[ids] = values
    assert np.array_equal(got, want)
    assert CHUNK <= 500  # numpy 2.x lets go of the GIL for index loops over more than 500 entries
