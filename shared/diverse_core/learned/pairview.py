"""The text pair matrices of one query (:func:`pair_view`), built from the cached facts of its texts.

Every candidate text is read once per process (:class:`~diverse_core.textfeatures.TextFactsCache`);
what is left per query is to line the candidates' word ids up against each other. Each text
brings its words once, each with a bit per kind (:attr:`~diverse_core.textfeatures.TextFacts.marks`:
term, name, title word, body word); one scatter and one gather through a marker array indexed
by word id give every word of the pool a column (no sort), and one scatter fills an ``(n, m + 1)``
table of kind bits (column 0 stays empty: where a question word no candidate holds points).
Every matrix of the view is a column selection of that table, and the pair counts are products
of 0/1 matrices (exact integers).

Example:
    >>> pv = pair_view("Who wrote Dune?", ["Dune: a novel by Frank Herbert.", "Herbert: he wrote Dune."])
    >>> pv.title_in.tolist()  # share of j's title words that i's body holds
    [[0.0, 1.0], [1.0, 0.0]]
    >>> pv.shared.totals.tolist(), pv.view.term_hits.astype(int).tolist()
    ([2.0, 1.0], [[1, 0], [1, 1]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter

import numpy as np
from numpy.typing import NDArray

from ..adaptive.candidates import SharedNames
from ..errors import DimensionMismatchError, InvalidParameterError
from ..textfeatures import (
    BODY,
    MARK_BITS,
    NAME,
    TERM,
    TITLE,
    TextFacts,
    TextFactsCache,
    TextView,
    _question_columns,
    _question_words,
    content_terms,
    facts_cache,
)
from ..textmarks import marker_array

__all__ = ["PairView", "pair_view"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class PairView:
    """Text pair matrices of one query (``[i, j]``: pick ``i``, candidate ``j``).

    Attributes:
        view: the adaptive selector's :class:`~diverse_core.adaptive.lexical.TextView`
            (its ``other_names`` columns in no particular order: only sums over them are used).
        same_title: (n, n) both have the same non-empty title.
        title_in: (n, n) share of ``j``'s title words that ``i``'s body contains.
        names_shared: (n, n) log(1 + names outside the question both mention).
        shared: the :class:`~diverse_core.adaptive.candidates.SharedNames` behind ``names_shared``
            (``None`` when the view was built by hand: the candidate features then count them again).
    """

    view: TextView
    same_title: NDArray[np.bool_]
    title_in: FloatArray
    names_shared: FloatArray
    shared: SharedNames | None = field(default=None, repr=False)


@lru_cache(maxsize=65_536)
def _name_words(name: str) -> frozenset[str]:
    return frozenset(content_terms(name))


def _check_per_candidate(values: Sequence[object] | None, n: int, what: str) -> list[object] | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)):
        raise InvalidParameterError(f"{what} must be a sequence with one entry per candidate, not a string; "
                                    f"got {what}={values[:40]!r}")
    out = list(values)
    if len(out) != n:
        raise DimensionMismatchError(f"{what} must give one entry per candidate; got {len(out)} for {n} candidates")
    return out


def _display_titles(shown: list[object], cache: TextFactsCache, generation: int) -> dict[int, IntArray]:
    """Candidate index -> the word ids of its display name, for the candidates that have one."""
    if not all(x is None or isinstance(x, str) for x in shown):
        raise InvalidParameterError("names must hold strings (or None), one per candidate")
    out = {}
    for i, nm in enumerate(shown):
        if nm:
            ids = cache.number(_name_words(str(nm)), generation)
            out[i] = ids if ids is not None else np.zeros(0, dtype=np.int64)
    return out


#: Positions 1, 2, ... of a pool's words (a view of the first m for m below its size).
_POSITIONS = np.arange(1, 1 << 15, dtype=np.int32)
_POSITIONS.flags.writeable = False


def word_columns(words: IntArray, lookup: IntArray) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """One column per distinct word of ``words``, without sorting: ``(column of each word, column of each lookup id)``.

    A word's column is ``1 + `` the position of one of its occurrences (any one), so equal
    words get equal columns, distinct words distinct ones, all in ``1 .. len(words)``. A
    ``lookup`` id that is not among ``words`` (or is negative) gets column 0, which no word has.

    Example:
        >>> col, at = word_columns(np.array([7, 3, 7, 9]), np.array([9, 4, -1]))
        >>> bool(col[0] == col[2]), len(set(col.tolist())), int(at[0]) == int(col[3]), at[1:].tolist()
        (True, 3, True, [0, 0])
    """
    m = words.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(lookup.shape[0], dtype=np.int32)
    top = int(words.max())
    mark = marker_array(top + 2)  # slot top + 1 (and so the last slot, where -1 points) is never marked
    mark[words] = _POSITIONS[:m] if m < _POSITIONS.shape[0] else np.arange(1, m + 1, dtype=np.int32)
    try:  # each distinct word's slot keeps one of its positions (any one)
        return mark[words], mark[np.minimum(lookup, top + 1)]
    finally:
        mark[words] = 0


_MARKS, _KEY = attrgetter("marks"), attrgetter("key")
_TERM, _NAME, _TITLE, _BODY = (MARK_BITS[kind] for kind in (TERM, NAME, TITLE, BODY))


@lru_cache(maxsize=16)
def _log1p_of_counts(size: int) -> FloatArray:
    """``log1p(c)`` for the counts ``c = 0 .. size - 1`` (the same values as ``np.log1p`` of each count)."""
    table = np.log1p(np.arange(size, dtype=np.float64))
    table.flags.writeable = False
    return table


def _pool(facts: Sequence[TextFacts], titles: dict[int, IntArray] | None) -> tuple[IntArray, IntArray, IntArray]:
    """``(word ids, kind bits, candidate)`` of every word of the pool (display names replace title words)."""
    n = len(facts)
    arrays = list(map(_MARKS, facts))
    marks = np.concatenate(arrays) if n else np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), list(map(len, arrays)))
    words, bits = marks >> 4, marks & 15
    if titles:  # their own title words lose the title bit; the display name's words come as title words
        bits = np.where(np.isin(rows, list(titles)), bits & ~_TITLE, bits)
        words = np.concatenate([words, *titles.values()])
        rows = np.concatenate([rows, *(np.full(ids.shape[0], i, dtype=np.int64) for i, ids in titles.items())])
        bits = np.concatenate([bits, np.full(words.shape[0] - bits.shape[0], _TITLE, dtype=np.int64)])
    return words, bits, rows


def _table(n: int, rows: IntArray, col: NDArray[np.int32], bits: IntArray, v: int, merge: bool) -> NDArray[np.uint8]:
    """``(n, v + 1)``: the kind bits of word column ``c`` in candidate ``i`` (column 0 stays 0)."""
    table = np.zeros((n, v + 1), dtype=np.uint8)
    if merge:  # a display name's word may also be a word of the text: two entries, their bits OR-ed
        np.bitwise_or.at(table, (rows, col), bits.astype(np.uint8))
    else:  # one entry per (candidate, word)
        table[rows, col] = bits
    return table


def _source_ids(keys: IntArray, src: list[object] | None) -> IntArray:
    """One id per candidate; equal ids: same source (the prefix title's key, or the caller's ids)."""
    n = keys.shape[0]
    if src is None:
        return np.where(keys >= 0, keys, -1 - np.arange(n, dtype=np.int64))  # equal keys: equal prefix titles
    marked = [None if (x is None or (isinstance(x, str) and x == "")) else ("id", x) for x in src]
    try:
        {hash(key) for key in marked}
    except TypeError as exc:
        raise InvalidParameterError(f"sources must hold hashable ids (str, int, ...) or None; {exc}") from exc
    codes: dict[object, int] = {}
    return np.array([codes.setdefault(key, len(codes)) if key is not None else -1 - i
                     for i, key in enumerate(marked)], dtype=np.int64)


def pair_view(question: str, texts: Sequence[str], sources: Sequence[object] | None = None,
              names: Sequence[str | None] | None = None) -> PairView:
    """The :class:`PairView` of ``question`` and its candidate ``texts``.

    Args:
        question: the query text.
        texts: the candidate texts (``"title: body"`` or plain).
        sources: optional source id per candidate (the page, file or parent document, e.g.
            LangChain ``metadata["source"]``); two candidates with equal ids come from the same
            source. ``None`` or ``""`` for a candidate: unknown (a source of its own). Without
            ``sources`` the ``"title: "`` prefix of each text is its source (the fallback).
        names: optional display name per candidate (e.g. ``metadata["title"]``): the title whose
            words a pick's body may mention. ``None`` or ``""``: the text's prefix title, if any.

    Example:
        >>> pv = pair_view("Who wrote Dune?", ["Dune is a novel.", "It was written by Herbert.",
        ...                "Herbert was born in Tacoma."], sources=["a.txt", "a.txt", "b.txt"])
        >>> pv.same_title.astype(int).tolist()
        [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    """
    n = len(texts)
    src = _check_per_candidate(sources, n, "sources")
    shown = _check_per_candidate(names, n, "names")
    cache = facts_cache()
    facts = cache.get_many(texts, marks=True)
    generation = facts[0].generation if facts else -1
    titles = None if shown is None else _display_titles(shown, cache, generation)
    words, bits, rows = _pool(facts, titles)
    terms, q_names = _question_words(question)
    words_q, name_cols = _question_columns(terms, q_names)
    col, q_col = word_columns(words, cache.word_ids(words_q, generation))
    v = words.shape[0]  # columns 1 .. v; column 0: no word (where a question word no candidate holds points)
    table = _table(n, rows, col, bits, v, bool(titles))
    # a question word or name counts when the text holds the word as a term (capitalised or not)
    both = (table[:, q_col] & _TERM) != 0
    # names outside the question's terms: how many candidates mention each, and each candidate's count
    is_name = (bits & _NAME) != 0
    name_col = col[is_name]
    held = np.bincount(name_col, minlength=v + 1)
    held[q_col[: len(terms)]] = 0
    other_cols = np.flatnonzero(held)
    other = (table[:, other_cols] & _NAME).view(bool) if other_cols.shape[0] else np.zeros((n, 1), dtype=bool)
    totals = np.asarray(np.bincount(rows[is_name], weights=held[name_col] > 0, minlength=n), dtype=np.float64)
    # names two candidates share: only names held by two or more count off the diagonal (0/1 products: exact)
    shared_names = other[:, held[other_cols] >= 2].astype(np.float32)
    shared = shared_names @ shared_names.T
    shared.flat[:: n + 1] = totals
    # share of j's title words that i's body holds
    is_title = (bits & _TITLE) != 0
    at_title = table[:, np.flatnonzero(np.bincount(col[is_title], minlength=v + 1))]
    # entries _BODY and _TITLE (powers of two) instead of 1: the counts come out scaled by an exact power of two
    title_in = np.divide((at_title & _BODY).astype(np.float32) @ (at_title & _TITLE).astype(np.float32).T,
                         (np.maximum(np.bincount(rows[is_title], minlength=n), 1) * float(_BODY * _TITLE))[None, :])
    tid = _source_ids(np.fromiter(map(_KEY, facts), dtype=np.int64, count=n), src)
    view = TextView(terms, q_names, both[:, : len(terms)], both[:, name_cols], other)
    most = int(totals.max()) + 1 if n else 1  # no pair shares more names than either of them mentions
    # a gather by take, mode "clip" (every count is within the table: nothing is clipped; no bounds pass)
    log_pairs = _log1p_of_counts(1 << (most - 1).bit_length()).take(shared.astype(np.intp), mode="clip")
    return PairView(view, tid[:, None] == tid[None, :], title_in, log_pairs, SharedNames(shared_names, totals, log_pairs))
