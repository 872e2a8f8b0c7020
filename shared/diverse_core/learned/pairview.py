"""The text pairs of one query (:func:`pair_view`): which pick points at which candidate, read from the texts.

A pick points at a candidate when both come from the same source, when the pick's body holds the
words of the candidate's title (or the candidate's body the pick's title: the bridge of a
multi-hop question) or when both mention the same names. :class:`PairView` keeps who holds what
as (candidate, word) entries and gives row ``j`` of each pair matrix on demand, for the picks
only: no (n, n) matrix is built, so a pool's memory grows with its words, not with n².

Example:
    >>> pv = pair_view("Who wrote Dune?", ["Dune: a novel by Frank Herbert.", "Herbert: he wrote Dune."])
    >>> pv.title_in(0).tolist(), pv.title_in_column(0).tolist()  # 0's body holds 1's title; 1's body holds 0's
    ([0.0, 1.0], [0.0, 1.0])
    >>> pv.words.tolist()  # who holds each of the question's words ("dune", "wrote")
    [[1.0, 1.0], [0.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from ..text.cache import BODY, NAME, TERM, TITLE, facts_cache
from ..text.view import pool_words, question_columns, question_words
from ..trained.candidates import CandidateText, SharedNames

__all__ = ["PairView", "pair_view"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class PairView:
    """The text pairs of one query; row ``j`` of each pair matrix (``[pick j, candidate i]``) on demand.

    Attributes:
        terms, names: the question's content words and names.
        words: (terms + names, n) 0/1: which candidates hold each of the question's terms, then each name.
        source: (n,) source id per candidate; equal ids: the same source.
        title_rows, title_slots: one entry per title word of a candidate (its candidate, its word's slot).
        title_sizes: (n,) title words per candidate.
        body_rows, body_slots: one entry per body word that is some candidate's title word.
        shared: the names outside the question two candidates or more mention.
    """

    terms: tuple[str, ...]
    names: tuple[str, ...]
    words: FloatArray
    source: IntArray
    title_rows: IntArray
    title_slots: IntArray
    title_sizes: IntArray
    body_rows: IntArray
    body_slots: IntArray
    shared: SharedNames

    @property
    def n(self) -> int:
        """The number of candidates."""
        return int(self.source.shape[0])

    @property
    def text(self) -> CandidateText:
        """What the candidate features read of this query."""
        return CandidateText(self.words, len(self.terms), self.shared)

    def same_source(self, j: int) -> FloatArray:
        """1 where a candidate has pick ``j``'s source."""
        return (self.source == self.source[j]).astype(np.float64)

    def title_in(self, j: int) -> FloatArray:
        """The share of each candidate's title words that pick ``j``'s body holds."""
        in_body = np.zeros(int(self.title_slots.max(initial=-1)) + 1, dtype=bool)
        in_body[self.body_slots[self.body_rows == j]] = True
        counts = np.bincount(self.title_rows[in_body[self.title_slots]], minlength=self.n)
        return counts / np.maximum(self.title_sizes, 1)

    def title_in_column(self, j: int) -> FloatArray:
        """The share of pick ``j``'s title words that each candidate's body holds."""
        mine = np.zeros(int(self.title_slots.max(initial=-1)) + 1, dtype=bool)
        mine[self.title_slots[self.title_rows == j]] = True
        counts = np.bincount(self.body_rows[mine[self.body_slots]], minlength=self.n)
        return counts / max(int(self.title_sizes[j]), 1)

    def names_shared(self, j: int) -> FloatArray:
        """log(1 + names outside the question each candidate shares with pick ``j``; ``j`` itself: all of its own)."""
        return np.log1p(self.shared.counts([j]))


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


def _source_ids(keys: IntArray, src: list[object] | None) -> IntArray:
    """One id per candidate; equal ids: same source (the prefix title's key, or the caller's ids)."""
    n = keys.shape[0]
    own = -1 - np.arange(n, dtype=np.int64)  # a source of its own
    if src is None:
        return np.where(keys >= 0, keys, own)  # equal keys: equal prefix titles
    codes: dict[object, int] = {}
    try:  # each source's id: the position of its first candidate
        ids = np.fromiter(map(codes.setdefault, src, count()), dtype=np.int64, count=n)
    except TypeError as exc:
        raise InvalidParameterError(f"sources must hold hashable ids (str, int, ...) or None; {exc}") from exc
    for unknown in (None, ""):  # no source: one of its own
        if unknown in codes:
            ids = np.where(ids == codes[unknown], own, ids)
    return ids


def pair_view(question: str, texts: Sequence[str], sources: Sequence[object] | None = None,
              names: Sequence[str | None] | None = None) -> PairView:
    """The :class:`PairView` of ``question`` and its candidate ``texts``.

    Args:
        question: the query text.
        texts: the candidate texts (``"title: body"`` or plain).
        sources: optional source id per candidate (the page, file or parent document, e.g.
            LangChain ``metadata["source"]``); two candidates with equal ids come from the same
            source. ``None`` or ``""`` for a candidate: unknown (a source of its own). Without
            ``sources`` the ``"title: "`` prefix of each text is its source.
        names: optional display name per candidate (e.g. ``metadata["title"]``): the title whose
            words a pick's body may mention. ``None`` or ``""``: the text's prefix title, if any.

    Example:
        >>> pv = pair_view("Who wrote Dune?", ["Dune is a novel.", "It was written by Herbert.",
        ...                "Herbert was born in Tacoma."], sources=["a.txt", "a.txt", "b.txt"])
        >>> pv.same_source(0).tolist()
        [1.0, 1.0, 0.0]
    """
    n = len(texts)
    src = _check_per_candidate(sources, n, "sources")
    shown = _check_per_candidate(names, n, "names")
    if shown is not None and not all(x is None or isinstance(x, str) for x in shown):
        raise InvalidParameterError("names must hold strings (or None), one per candidate")
    cache = facts_cache()
    facts = cache.get_many(texts)
    generation = facts[0].generation if facts else -1
    titles = None
    if shown is not None:  # the display names' words replace the texts' title words
        given = cache.title_words(shown, generation)  # type: ignore[arg-type]
        titles = {i: ids for i, ids in enumerate(given) if ids is not None}
    pool = pool_words(facts, titles)
    terms, q_names = question_words(question)
    words_q, name_cols = question_columns(terms, q_names)
    q_ids = cache.word_ids(words_q, generation)
    # a question word or name counts when the text holds the word as a term (capitalised or not)
    both = pool.holds(q_ids, TERM)
    words = np.concatenate([both[:, : len(terms)], both[:, name_cols]], axis=1).T.astype(np.float64)
    # the names outside the question's terms
    is_name = pool.kinds == NAME
    outside = is_name & ~(pool.words[:, None] == q_ids[None, : len(terms)]).any(axis=1)
    shared = SharedNames.of_entries(pool.rows[outside], pool.words[outside], n)
    # title words get slots; the body words that are some title word are the entries that matter
    is_title = pool.kinds == TITLE
    title_rows = pool.rows[is_title]
    slot_ids, title_slots = np.unique(pool.words[is_title], return_inverse=True)
    body = pool.kinds == BODY
    body_ids = pool.words[body]
    at = np.minimum(np.searchsorted(slot_ids, body_ids), max(slot_ids.shape[0] - 1, 0))
    hit = slot_ids[at] == body_ids if slot_ids.shape[0] else np.zeros(body_ids.shape[0], dtype=bool)
    keys = np.array([f.key for f in facts], dtype=np.int64)
    return PairView(terms, q_names, words, _source_ids(keys, src), title_rows, title_slots.reshape(-1).astype(np.int64),
                    np.bincount(title_rows, minlength=n), pool.rows[body][hit], at[hit].astype(np.int64), shared)
