"""The DR-RAG features' word incidence matrices: built with one numpy assignment, equal to a
row-by-row reference (empty sets, empty vocabulary, repeated words across rows)."""

from __future__ import annotations

import numpy as np
from diverse_core.pipelines.drrag.features import _incidence
from hypothesis import given
from hypothesis import strategies as st


def _reference(sets: list[set[str]], vocab: dict[str, int]) -> np.ndarray:
    mat = np.zeros((len(sets), len(vocab)), dtype=np.float32)
    for i, s in enumerate(sets):
        for w in s:
            mat[i, vocab[w]] = 1.0
    return mat


def test_incidence_known_answer() -> None:
    vocab = {"acme": 0, "bo": 1, "oslo": 2}
    got = _incidence([{"bo", "acme"}, set(), {"oslo"}], vocab)
    assert got.dtype == np.float32
    assert got.tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert _incidence([], vocab).shape == (0, 3)
    assert _incidence([set(), set()], {}).shape == (2, 0)


@given(st.lists(st.sets(st.sampled_from("abcdefghij")), max_size=12))
def test_incidence_equals_row_by_row(sets: list[set[str]]) -> None:
    vocab: dict[str, int] = {}
    for s in sets:
        for w in sorted(s):
            vocab.setdefault(w, len(vocab))
    got = _incidence(sets, vocab)
    np.testing.assert_array_equal(got, _reference(sets, vocab))
    assert got.dtype == np.float32
