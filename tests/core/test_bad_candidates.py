"""Bad candidates are left out, not fatal (issue 46, item 4).

A candidate with a NaN, inf or all-zero vector (or, for a method that reads texts, an empty or
blank text) is dropped with a note in ``details["dropped"]``; the rest answer the query and the
returned indices are positions among all the candidates given. ``on_bad="raise"`` keeps the
strict typed errors, whose messages say which fault it is.
"""

from __future__ import annotations

import warnings
from typing import Any

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import (
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    ZeroVectorError,
)
from hypothesis import given, settings
from hypothesis import strategies as st

RNG = np.random.default_rng(7)
POOL = RNG.normal(size=(12, 6))
QUERY = RNG.normal(size=6)
TEXTS = [f"passage {i} about topic {i % 4}" for i in range(12)]
TEXT_READERS = {"learned", "adaptive"}


def _kwargs(method: str, texts: list[str] | None = None) -> dict[str, Any]:
    return {"question": "which topic?", "texts": list(texts or TEXTS)} if method in TEXT_READERS else {}


def test_known_answer_topk() -> None:
    q = np.array([1.0, 0.0])
    c = np.array([[1.0, 0.0], [np.nan, 0.0], [0.0, 1.0], [0.0, 0.0], [0.9, 0.1], [np.inf, 1.0]])
    sel = dc.select("topk", q, c, 3)
    assert sel.indices.tolist() == [0, 4, 2]
    assert sel.details["dropped"] == [
        {"index": 1, "reason": "NaN in vector"},
        {"index": 3, "reason": "zero vector"},
        {"index": 5, "reason": "inf in vector"},
    ]
    np.testing.assert_allclose(sel.relevance, [1.0, 0.9 / np.hypot(0.9, 0.1), 0.0], atol=1e-12)


@pytest.mark.parametrize("method", dc.available_methods())
def test_every_method_answers_from_the_rest(method: str) -> None:
    pool = POOL.copy()
    pool[2] = np.nan
    pool[5, 3] = np.inf
    pool[9] = 0.0
    texts = list(TEXTS)
    texts[7] = "   " if method in TEXT_READERS else texts[7]
    bad = [2, 5, 9] + ([7] if method in TEXT_READERS else [])
    keep = [i for i in range(12) if i not in bad]
    sel = dc.select(method, QUERY, pool, 4, **_kwargs(method, texts))
    ref = dc.select(method, QUERY, pool[keep], 4, **_kwargs(method, [texts[i] for i in keep]))
    assert sel.indices.tolist() == [keep[i] for i in ref.indices.tolist()]
    np.testing.assert_allclose(sel.scores, ref.scores)
    np.testing.assert_allclose(sel.relevance, ref.relevance)
    assert [d["index"] for d in sel.details["dropped"]] == sorted(bad)
    assert not set(sel.indices.tolist()) & set(bad)


@pytest.mark.parametrize("method", ["mmr", "gmmr", "dartboard", "vendi", "topk"])
def test_sweep_drops_too(method: str) -> None:
    pool = POOL.copy()
    pool[0] = 0.0
    pool[4, 0] = np.nan
    keep = [i for i in range(12) if i not in (0, 4)]
    sw = dc.sweep(method, QUERY, pool, 3, [0.0, 0.5, 1.0], over="diversity")
    ref = dc.sweep(method, QUERY, pool[keep], 3, [0.0, 0.5, 1.0], over="diversity")
    np.testing.assert_array_equal(sw.indices, np.asarray(keep)[ref.indices])
    assert [d["index"] for d in sw.details["dropped"]] == [0, 4]
    assert sw.selection(1).details == sw.details


def test_scorer_sees_the_callers_positions() -> None:
    pool = POOL.copy()
    pool[1] = np.nan
    seen: list[tuple[int, int]] = []

    def scorer(pairs: Any) -> Any:
        seen.extend(pairs)
        return [1.0 / (1 + abs(i - j)) for i, j in pairs]

    sel = dc.select("dartboard", QUERY, pool, 3, variant="crossencoder", scorer=scorer)
    assert 1 not in {i for pair in seen for i in pair} and max(i for pair in seen for i in pair) == 11
    assert 1 not in sel.indices.tolist()


@pytest.mark.parametrize(("bad", "error", "says"), [
    (np.nan, NonFiniteInputError, r"contains NaN \(first at index \[3, 1\]\)"),
    (np.inf, NonFiniteInputError, r"contains inf \(first at index \[3, 1\]\)"),
    (-np.inf, NonFiniteInputError, r"contains -inf"),
])
def test_raise_restores_the_strict_error_and_says_which(bad: float, error: type, says: str) -> None:
    pool = POOL.copy()
    pool[3, 1] = bad
    with pytest.raises(error, match=says):
        dc.select("mmr", QUERY, pool, 2, on_bad="raise")


def test_raise_on_a_zero_row_and_float32_overflow() -> None:
    pool = POOL.copy()
    pool[6] = 0.0
    with pytest.raises(ZeroVectorError, match=r"zero vector \(row 6\)"):
        dc.select("mmr", QUERY, pool, 2, on_bad="raise")
    big = POOL.copy()
    big[2] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        as32 = big.astype(np.float32)  # 1e300 does not fit: inf
    with pytest.raises(NonFiniteInputError, match="beyond float32's range"):
        dc.select("mmr", QUERY, as32, 2, on_bad="raise")
    sel = dc.select("mmr", QUERY, as32, 2)
    assert sel.details["dropped"] == [{"index": 2, "reason": "inf in vector (or a value beyond float32's range)"}]


def test_huge_finite_float64_rows_are_usable() -> None:
    pool = POOL.copy()
    pool[2] = QUERY * 1e300  # its squares overflow, its direction is the query's
    sel = dc.select("topk", QUERY, pool, 1)
    assert sel.indices.tolist() == [2] and "dropped" not in sel.details


def test_bad_query_is_still_an_error() -> None:
    with pytest.raises(NonFiniteInputError, match="query"):
        dc.select("mmr", np.full(6, np.nan), POOL, 2)
    with pytest.raises(ZeroVectorError, match="query"):
        dc.select("mmr", np.zeros(6), POOL, 2)


def test_no_usable_candidate_is_a_typed_error() -> None:
    with pytest.raises(NonFiniteInputError, match="none of the 3 candidates is usable"):
        dc.select("mmr", QUERY, np.full((3, 6), np.nan), 2)
    with pytest.raises(ZeroVectorError, match="none of the 2"):
        dc.select("mmr", QUERY, np.zeros((2, 6)), 2)
    with pytest.raises(EmptyCandidatesError, match="empty text"):
        dc.select("learned", QUERY, POOL[:2], 2, question="q", texts=["", " "])
    with pytest.raises(InvalidParameterError, match="on_bad"):
        dc.select("mmr", QUERY, POOL, 2, on_bad="skip")


def test_blank_texts_are_read_only_by_text_methods() -> None:
    texts = list(TEXTS)
    texts[0] = ""
    sel = dc.select("learned", QUERY, POOL, 3, question="q", texts=texts)
    assert sel.details["dropped"] == [{"index": 0, "reason": "empty text"}]
    assert "dropped" not in dc.select("mmr", QUERY, POOL, 3).details


@settings(max_examples=40, deadline=None)
@given(
    bad=st.lists(st.tuples(st.integers(0, 11), st.sampled_from([np.nan, np.inf, -np.inf, 0.0])),
                 min_size=1, max_size=11, unique_by=lambda t: t[0]),
    method=st.sampled_from(["mmr", "gmmr", "dpp", "msd", "topk", "vendi", "cover", "gist", "ssd", "dartboard"]),
    k=st.integers(1, 12),
    f32=st.booleans(),
)
def test_drop_equals_selecting_from_the_good_rows(bad: list[tuple[int, float]], method: str, k: int,
                                                    f32: bool) -> None:
    pool = POOL.copy()
    for i, v in bad:
        if v == 0.0:
            pool[i] = 0.0
        else:
            pool[i, i % 6] = v
    pool = pool.astype(np.float32) if f32 else pool
    rows = sorted(i for i, _ in bad)
    keep = [i for i in range(12) if i not in rows]
    sel = dc.select(method, QUERY, pool, k)
    ref = dc.select(method, QUERY, pool[keep], k)
    assert sel.indices.tolist() == [keep[i] for i in ref.indices.tolist()]
    assert [d["index"] for d in sel.details["dropped"]] == rows
