"""The text pairs of one query (:func:`pair_view`): which pick points at which candidate, read from the texts.

A pick points at a candidate when both come from the same source, when the pick's body holds the
words of the candidate's title (or the candidate's body the pick's title: the bridge of a
multi-hop question) or when both mention the same names. :class:`PairView` keeps who holds what
as (candidate, word) entries and gives row ``j`` of each pair matrix on demand, for the picks
only: no (n, n) matrix is built, so a pool's memory grows with its words, not with n².

Example:
    >>> pv = pair_view("Who wrote Dune?", ["Dune: a novel by Frank Herbert.", "Herbert: he wrote Dune."])
    >>> pv.row("title_in", 0).tolist(), pv.row("title_in_column", 0).tolist()  # 0's body: 1's title, and back
    ([0.0, 1.0], [0.0, 1.0])
    >>> pv.terms, pv.names, pv.words.tolist()  # who holds each of the question's words, then names
    (('dune', 'wrote'), ('dune',), [[1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count

import numpy as np
from numpy.typing import NDArray

from ..text.cache import BODY, NAME, TERM, TITLE, facts_cache
from ..text.view import PoolWords, pool_words, question_columns, question_words
from ..trained.candidates import CandidateText, SharedNames
from ..trained.inputs import source_lists

__all__ = ["TEXT_PAIRS", "Entries", "PairView", "pair_view"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


#: The text pair matrices, in the order of :meth:`PairView.rows`.
TEXT_PAIRS = ("same_source", "title_in", "title_in_column", "names_shared")


@dataclass(frozen=True)
class Entries:
    """Who holds what, as (candidate, item) entries: three of the pair counts at once.

    Three kinds of entry, one per count: a title word of a candidate, a body word that is some
    candidate's title word, a name outside the question that two candidates or more mention. When
    candidate ``j`` is picked, its entries raise flags (``raises``): its body words flag the title
    words they match, its title words the body words that match them, its names themselves; every
    entry whose flag (``reads``) is up then counts 1 for its candidate in its row (``out``: row * n +
    candidate).

    Attributes:
        rows: the candidate of each entry.
        raises, reads: the flag each entry raises (as the pick's) and the flag it reads.
        out: where each entry counts.
        flags: how many flags there are.
        n: the number of candidates.
    """

    rows: IntArray
    raises: IntArray
    reads: IntArray
    out: IntArray
    flags: int
    n: int

    def counts(self, j: int) -> FloatArray:
        """(3, n): per candidate, its title words ``j``'s body holds, ``j``'s title words its body holds, and
        the names it shares with ``j`` (exact integers, as floats)."""
        up = np.zeros(self.flags)
        up[self.raises[self.rows == j]] = 1.0
        counts = np.bincount(self.out, weights=up[self.reads], minlength=3 * self.n)  # float64: weighted
        return np.asarray(counts, dtype=np.float64).reshape(3, self.n)


@dataclass(frozen=True)
class PairView:
    """The text pairs of one query; row ``j`` of each pair matrix (``[pick j, candidate i]``) on demand.

    Attributes:
        terms, names: the question's content words and names.
        words: (terms + names, n) 0/1: which candidates hold each of the question's terms, then each name.
        source: (n,) source id per candidate; equal ids: the same source.
        title_norm: (n,) title words per candidate, at least 1 (what the title shares are over).
        entries: who holds which title words, body words and names (:class:`Entries`).
        shared: the names outside the question two candidates or more mention.
    """

    terms: tuple[str, ...]
    names: tuple[str, ...]
    words: FloatArray
    source: IntArray
    title_norm: FloatArray
    entries: Entries
    shared: SharedNames

    @property
    def n(self) -> int:
        """The number of candidates."""
        return int(self.source.shape[0])

    @property
    def text(self) -> CandidateText:
        """What the candidate features read of this query."""
        return CandidateText(self.words, len(self.terms), self.shared)

    def rows(self, j: int, out: FloatArray | None = None) -> FloatArray:
        """(4, n): pick ``j``'s row of each of :data:`TEXT_PAIRS`: 1 where a candidate has ``j``'s source; the
        share of its title words ``j``'s body holds; the share of ``j``'s title words its body holds;
        log(1 + the names outside the question it shares with ``j``; ``j`` itself: all of its own).
        ``out``: a (4, n) array to write them into."""
        out = np.empty((4, self.n)) if out is None else out
        np.equal(self.source, self.source[j], out=out[0])
        out[1:] = self.entries.counts(j)
        out[1] /= self.title_norm
        out[2] /= self.title_norm[j]
        out[3, j] = self.shared.totals[j]
        np.log1p(out[3], out=out[3])
        return out

    def row(self, name: str, j: int) -> FloatArray:
        """Pick ``j``'s row of the pair matrix ``name`` (one of :data:`TEXT_PAIRS`)."""
        row: FloatArray = self.rows(j)[TEXT_PAIRS.index(name)]
        return row


def _source_ids(keys: IntArray, src: list[object] | None) -> IntArray:
    """One id per candidate; equal ids: same source (the prefix title's key, or the caller's ids)."""
    n = keys.shape[0]
    own = -1 - np.arange(n, dtype=np.int64)  # a source of its own
    if src is None:
        return np.where(keys >= 0, keys, own)  # equal keys: equal prefix titles
    codes: dict[object, int] = {}  # each source's id: the position of its first candidate
    ids = np.fromiter(map(codes.setdefault, src, count()), dtype=np.int64, count=n)
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
        >>> pv.row("same_source", 0).tolist()
        [1.0, 1.0, 0.0]
    """
    n = len(texts)
    src, shown = source_lists(sources, names, n)
    cache = facts_cache()
    facts = cache.get_many(texts)
    generation = facts[0].generation if facts else -1
    titles = None
    if shown is not None:  # the display names' words replace the texts' title words
        given = cache.title_words(shown, generation)
        titles = {i: ids for i, ids in enumerate(given) if ids is not None}
    pool = pool_words(facts, titles)
    terms, q_names = question_words(question)
    words_q, name_cols = question_columns(terms, q_names)
    q_ids = cache.word_ids(words_q, generation)
    # a question word or name counts when the text holds the word as a term (capitalised or not)
    rows, ids = _of_kind(pool, TERM)
    at = _find(ids, q_ids)
    held = np.zeros((n, q_ids.shape[0]))
    held[rows[at >= 0], at[at >= 0]] = 1.0
    words = np.concatenate([held[:, : len(terms)], held[:, name_cols]], axis=1).T
    # the names outside the question's terms, numbered (equal words, equal numbers)
    rows, ids = _of_kind(pool, NAME)
    outside = _find(ids, q_ids[: len(terms)]) < 0
    shared = SharedNames.of_entries(rows[outside], np.unique(ids[outside], return_inverse=True)[1].reshape(-1), n)
    # title words get slots; the body words that are some title word are the entries that matter
    title_rows, title_ids = _of_kind(pool, TITLE)
    body_rows, body_ids = _of_kind(pool, BODY)
    slots = np.unique(title_ids)
    title_slots, body_slots = np.searchsorted(slots, title_ids), _find(body_ids, slots)
    hit = body_slots >= 0
    entries = _entries(n, slots.shape[0], title_rows, title_slots, body_rows[hit], body_slots[hit], shared)
    source = _source_ids(np.array([f.key for f in facts], dtype=np.int64), src)
    title_norm = np.maximum(np.bincount(title_rows, minlength=n), 1).astype(np.float64)
    return PairView(terms, q_names, words, source, title_norm, entries, shared)


def _of_kind(pool: PoolWords, kind: int) -> tuple[IntArray, IntArray]:
    """The candidate and the word id of each of the pool's words of ``kind``."""
    mine = pool.kinds == kind
    return pool.rows[mine], pool.words[mine]


def _find(ids: IntArray, among: IntArray) -> IntArray:
    """Where each of ``ids`` (word ids, >= 0) is among the distinct ``among``; -1: not there."""
    if not among.shape[0]:
        return np.full(ids.shape[0], -1, dtype=np.int64)
    order = np.argsort(among)
    at = order[np.minimum(np.searchsorted(among[order], ids), among.shape[0] - 1)]
    return np.where(among[at] == ids, at, -1)


def _entries(n: int, d: int, title_rows: IntArray, title_slots: IntArray, body_rows: IntArray,
             body_slots: IntArray, shared: SharedNames) -> Entries:
    """The :class:`Entries` of ``n`` candidates and ``d`` title-word slots. Flags ``0 .. d-1``: a pick's body
    holds the title word; ``d .. 2d-1``: it is a pick's title word; then one per shared name."""
    rows = np.concatenate([title_rows, body_rows, shared.rows])
    raises = np.concatenate([title_slots + d, body_slots, shared.cols + 2 * d])
    reads = np.concatenate([title_slots, body_slots + d, shared.cols + 2 * d])
    kind = np.repeat(np.arange(3), [title_rows.shape[0], body_rows.shape[0], shared.rows.shape[0]])
    return Entries(rows, raises, reads, kind * n + rows, 2 * d + shared.size, n)
