"""The learned query state's pair stack filled in row blocks (issue 35): the same bits as the build before.

At pools of up to 64 candidates, while another Python thread is alive, :meth:`QueryState.build`
copies the ``(n, n)`` matrices into the per-pick stack in whole-row blocks of at most ``KEEP``
elements (numpy keeps the GIL for those), and in one copy each in a process with one thread;
the state's values, and the picks and scores read from it, must stay those of the build it
replaces: checked here against a frozen copy of that build, entry by entry as raw bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from diverse_core.adaptive.candidates import (
    EMBEDDING_CANDIDATE_FEATURES,
    TEXT_CANDIDATE_FEATURES,
    _text_columns,
    relevance_order,
    static_features,
    word_rows,
)
from diverse_core.gil_blocks import KEEP
from diverse_core.learned import LearnedSelector, QueryState, pair_view
from diverse_core.learned.planes import fill_stack
from diverse_core.validation import prepare_inputs
from learned_testdata import QUESTION, random_texts
from test_learned_qstate import _old_static as _old_embedding_columns

SIZES = (1, 2, 10, 22, 23, 50, 64, 65, 120)


def _bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of a float array (a zero's sign and NaN payloads count)."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(_bits(a), _bits(b)))


def _old_static(sim: np.ndarray, rel: np.ndarray, k: int, view: Any, shared: Any, words: Any) -> np.ndarray:
    """The static rows as computed before: the embedding columns' old formulas, the text columns of the library."""
    emb = _old_embedding_columns(sim, rel, k)
    if view is None:
        return emb
    e = len(EMBEDDING_CANDIDATE_FEATURES)
    out = np.empty((rel.shape[0], len(TEXT_CANDIDATE_FEATURES)))
    out[:, :e] = emb
    _text_columns(out[:, e:], view, relevance_order(rel), shared, words)
    return out


def _old_build(prep: Any, pairs: Any) -> dict[str, np.ndarray]:
    """``QueryState.build(prep, pairs, stacked=True)`` as written before (main ef2141a): what it kept."""
    unit = prep.candidates_unkept()
    rel = np.asarray(prep.relevance, dtype=np.float64)
    n = unit.shape[0]
    sim = unit @ unit.T
    cos_qi = unit @ np.asarray(prep.query, dtype=np.float64)
    norm = np.multiply(cos_qi, 2.0)
    norm += 2.0
    np.sqrt(np.maximum(norm, 1e-12, out=norm), out=norm)
    view = None if pairs is None else pairs.view
    stack = np.empty((n, 2 if pairs is None else 6, n))
    stack[:, 0, :] = sim
    qdc = stack[:, 1, :]
    np.add(cos_qi[None, :], sim, out=qdc)
    qdc /= norm[:, None]
    words = None if view is None else word_rows(view)
    static = _old_static(sim, rel, prep.k, view, None if pairs is None else pairs.shared, words)
    if pairs is not None:
        stack[:, 2, :] = pairs.same_title
        stack[:, 3, :] = pairs.title_in
        stack[:, 4, :] = pairs.title_in.T
        stack[:, 5, :] = pairs.names_shared
    words = np.zeros((0, n)) if words is None else words
    return {"static": static, "sim": sim, "qdc": qdc, "stack": stack, "words": words,
            "marks": np.subtract(words.T, 1.0, order="C")}


def _pool(seed: int, n: int, text: bool) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=24)
    c = rng.normal(size=(n, 24)) + q * rng.uniform(0, 2, size=(n, 1))
    if n > 5:
        c[3] = c[1]  # a duplicate: equal relevance and equal rows
    k = int(rng.integers(1, 12))
    prep = prepare_inputs(q.astype(np.float32), c.astype(np.float32), k, None)
    return prep, pair_view(QUESTION, random_texts(rng, n)) if text else None


@pytest.mark.parametrize("text", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_the_stacked_state_equals_the_old_build_bit_for_bit(n: int, text: bool, threads: str) -> None:
    for seed in range(3):
        prep, pv = _pool(100 * n + seed, n, text)
        old = _old_build(prep, pv)
        for stacked in (True, False):
            st = QueryState.build(prep, pv, stacked=stacked)
            assert _same(st.static, old["static"]) and _same(st.sim, old["sim"]) and _same(st.qdc, old["qdc"])
            assert _same(st.pair_stack(), old["stack"])
            assert _same(st.word_rows(), old["words"]) and _same(st.word_marks(), old["marks"])


@pytest.mark.parametrize("text", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_picks_and_scores_equal_those_of_the_old_build(n: int, text: bool, threads: str) -> None:
    sel = LearnedSelector.default()
    model = sel.variants["text" if text else "embedding"]
    for seed in range(2):
        prep, pv = _pool(7 * n + seed, n, text)
        old = _old_build(prep, pv)
        frozen = QueryState(old["static"], old["sim"], old["qdc"], np.asarray(prep.relevance), prep.k, pv)
        frozen._stack, frozen._words, frozen._marks = old["stack"], old["words"], old["marks"]
        for diversity in (None, 0.2, 0.9):
            got = model.picks(QueryState.build(prep, pv, stacked=True), diversity)
            want = model.picks(frozen, diversity)
            assert got[0].tolist() == want[0].tolist() and _same(got[1], want[1])


@pytest.mark.parametrize("n", SIZES)
def test_static_features_with_and_without_a_view_equal_the_old_ones(n: int, threads: str) -> None:
    prep, pv = _pool(5 * n, n, True)
    unit = prep.candidates
    sim, rel = unit @ unit.T, np.asarray(prep.relevance)
    for k in (1, 5, 17):
        assert _same(static_features(sim, rel, k, None, None, None), _old_static(sim, rel, k, None, None, None))
        words = word_rows(pv.view)
        assert _same(static_features(sim, rel, k, pv.view, pv.shared, words),
                     _old_static(sim, rel, k, pv.view, pv.shared, words))


class _Recorded(np.ndarray):
    """An array that notes how many elements each item assignment writes."""

    writes: list[int] = []

    def __setitem__(self, key: Any, value: Any) -> None:
        _Recorded.writes.append(int(np.asarray(self)[key].size))
        super().__setitem__(key, value)


@pytest.mark.usefixtures("another_thread")
@pytest.mark.parametrize("n", [23, 40, 50, 64, 65, 100])
def test_fill_stack_writes_at_most_keep_elements_a_time_up_to_64_candidates(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n)) > 0
    stack = np.zeros((n, 4, n)).view(_Recorded)
    _Recorded.writes = []
    fill_stack(stack, {0: a, 2: b, 3: a.T})
    want = np.zeros((n, 4, n))
    want[:, 0, :], want[:, 2, :], want[:, 3, :] = a, b, a.T
    assert _same(np.asarray(stack), want)
    assert sum(_Recorded.writes) == 3 * n * n
    # one copy per matrix above 64 candidates (its loop pays for letting go of the GIL); pieces of KEEP below
    assert max(_Recorded.writes) == (n * n if n > 64 else (KEEP // n) * n)


class _NumpyRecordingStacks:
    """numpy, but ``empty`` of a 3-d shape (the per-pick stack) gives a :class:`_Recorded` array."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def empty(shape: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        out = np.empty(shape, *args, **kwargs)
        return out.view(_Recorded) if np.ndim(out) == 3 else out


@pytest.mark.usefixtures("another_thread")
@pytest.mark.parametrize("text", [False, True])
def test_the_build_copies_into_the_stack_in_pieces_of_at_most_keep(monkeypatch: pytest.MonkeyPatch, text: bool) -> None:
    import diverse_core.learned.state as state_module

    prep, pv = _pool(3, 50, text)
    want = QueryState.build(prep, pv, stacked=True).pair_stack()
    monkeypatch.setattr(state_module, "np", _NumpyRecordingStacks())
    _Recorded.writes = []
    got = QueryState.build(prep, pv, stacked=True).pair_stack()
    assert _same(np.asarray(got), want)
    # sim and, with texts, the four text matrices: 50 x 50 each, in blocks of 10 rows (the old build: whole planes)
    assert sorted(set(_Recorded.writes)) == [500] and sum(_Recorded.writes) == (5 if text else 1) * 2500


@pytest.mark.usefixtures("alone")
@pytest.mark.parametrize("n", [23, 50, 64])
def test_fill_stack_copies_each_matrix_at_once_in_a_process_with_one_thread(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n)) > 0
    stack = np.zeros((n, 3, n)).view(_Recorded)
    _Recorded.writes = []
    fill_stack(stack, {0: a, 2: b})
    assert _Recorded.writes == [n * n, n * n]  # no other thread to hand the GIL to: no blocks to pay for
