"""The lexical view of one query: which of the question's words and names each candidate text holds.

Everything here is model-free and reads the texts through the process-wide
:class:`~diverse_core.text.cache.TextFactsCache`, so a chunk seen before costs one dictionary
lookup. It sits below :mod:`diverse_core.adaptive`, :mod:`diverse_core.learned` and
:mod:`diverse_core.pipelines`, so no selection method imports a pipeline to read a text.

Example:
    >>> v = text_view("Who directed Alien?", ["Alien was directed by Ridley Scott.", "A cat."])
    >>> v.terms, v.names
    (('alien', 'directed'), ('alien',))
    >>> v.term_hits.tolist()
    [[True, True], [False, False]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from .cache import (
    _KIND_BITS,
    _KINDS,
    NAME,
    TERM,
    TITLE,
    IntArray,
    TextFacts,
    TextFactsCache,
    facts_cache,
    text_facts,
)
from .tokens import content_terms, name_terms

__all__ = ["PoolWords", "TextView", "pool_words", "question_columns", "question_words", "source_inputs", "text_view",
           "view_from_facts"]

@dataclass(frozen=True)
class TextView:
    """The lexical view of one query and its candidates.

    Attributes:
        terms: the question's content words, sorted.
        names: the question's names (capitalised words but the first, numbers), sorted.
        term_hits: (n, len(terms)) whether each candidate contains each term.
        name_hits: (n, len(names)) whether each candidate contains each name.
        other_names: (n, V) whether each candidate mentions each of the V names that
            are not question terms, columns in the names' sorted order (V >= 1; an all-false
            column when there are none).
    """

    terms: tuple[str, ...]
    names: tuple[str, ...]
    term_hits: NDArray[np.bool_]
    name_hits: NDArray[np.bool_]
    other_names: NDArray[np.bool_]


@dataclass(frozen=True)
class PoolWords:
    """Every word of a query's candidates in one array (from their cached :class:`TextFacts`).

    Attributes:
        words: every candidate's word ids (see :attr:`TextFacts.codes`), one array.
        kinds: the kind of each (:data:`TERM`, :data:`NAME`, :data:`TITLE`, :data:`BODY`).
        rows: the candidate each belongs to.
        n: number of candidates.
        generation: the vocabulary generation of the ids.

    Example:
        >>> cache = TextFactsCache()
        >>> pw = pool_words(cache.get_many(["Dune: a novel by Herbert.", "Herbert: an author."]))
        >>> held = pw.kind(TITLE)[1].astype(int)  # each candidate's title words (columns in id order)
        >>> (held @ held.T).tolist()  # one title word each, none in common
        [[1, 0], [0, 1]]
    """

    words: IntArray
    kinds: IntArray
    rows: IntArray
    n: int
    generation: int

    def kind(self, kind: int) -> tuple[IntArray, NDArray[np.bool_]]:
        """``(word ids, hits (n, W))``: the distinct words of one kind (by id) and who holds each."""
        mine = self.kinds == kind
        words, col = np.unique(self.words[mine], return_inverse=True)
        out = np.zeros((self.n, words.shape[0]), dtype=bool)
        out[self.rows[mine], col.reshape(-1)] = True
        return words, out

    def lookup(self, words: IntArray) -> IntArray:
        """For each of the pool's words, ``1 +`` its position among the distinct ``words`` (0: not among them;
        a word -1 is never found)."""
        if not words.shape[0] or not self.words.shape[0]:
            return np.zeros(self.words.shape[0], dtype=np.int64)
        order = np.argsort(words)
        at = np.minimum(np.searchsorted(words[order], self.words), words.shape[0] - 1)
        return np.where(words[order[at]] == self.words, order[at] + 1, 0)

    def holds(self, words: IntArray, kind: int) -> NDArray[np.bool_]:
        """(n, len(words)) whether each candidate holds each of the distinct ``words`` as ``kind`` (-1: never)."""
        out = np.zeros((self.n, words.shape[0]), dtype=bool)
        col = self.lookup(words)
        match = (col > 0) & (self.kinds == kind)
        out[self.rows[match], col[match] - 1] = True
        return out


def pool_words(facts: Sequence[TextFacts], titles: dict[int, IntArray] | None = None) -> PoolWords:
    """The :class:`PoolWords` of candidates read by one :class:`TextFactsCache` (one array call).

    ``titles``: candidate index -> title word ids that replace the ones of its text (display names).
    """
    n = len(facts)
    codes = np.concatenate([f.codes for f in facts]) if n else np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), [f.codes.shape[0] for f in facts])
    if titles:
        drop = np.isin(rows, list(titles)) & (codes & _KIND_BITS == TITLE)
        codes = np.concatenate([codes[~drop], *(ids * _KINDS + TITLE for ids in titles.values())])
        rows = np.concatenate([rows[~drop], *(np.full(ids.shape[0], i, dtype=np.int64) for i, ids in titles.items())])
    return PoolWords(codes >> 3, codes & _KIND_BITS, rows, n, facts[0].generation if n else -1)


@lru_cache(maxsize=4096)
def question_words(question: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The question's content words and its names (capitalised words but the first, numbers), each sorted."""
    return tuple(sorted(content_terms(question))), tuple(sorted(name_terms(question, skip_first=True)))


@lru_cache(maxsize=4096)
def question_columns(terms: tuple[str, ...], names: tuple[str, ...]) -> tuple[tuple[str, ...], NDArray[np.intp]]:
    """The question's distinct words (its terms first) and the column of each of its names among them
    (a read-only array: ``hits.take(cols, axis=1)`` picks the names' columns)."""
    words = tuple(dict.fromkeys(terms + names))
    at = {w: i for i, w in enumerate(words)}
    cols = np.array([at[w] for w in names], dtype=np.intp)
    cols.flags.writeable = False
    return words, cols


def view_from_facts(question: str, facts: Sequence[TextFacts], cache: TextFactsCache | None = None, *,
                    sort_names: bool = True, pool: PoolWords | None = None) -> TextView:
    """The :class:`TextView` of ``question`` and candidates already read into ``facts`` (by ``cache``).

    ``sort_names=False`` leaves the ``other_names`` columns in vocabulary order (cheaper; for
    callers that only sum over them, as the learned selector does). ``pool``: the facts'
    :func:`pool_words` when the caller already has it.
    """
    cache = facts_cache() if cache is None else cache
    terms, names = question_words(question)
    pool = pool_words(facts) if pool is None else pool
    n = pool.n
    words_q, name_cols = question_columns(terms, names)
    q_terms = cache.word_ids(words_q, pool.generation)
    # one lookup for the question's words; a question name counts when the text holds the word, capitalised or not
    both = pool.holds(q_terms, TERM)
    term_hits, name_hits = both[:, : len(terms)], both[:, name_cols]
    q_terms = q_terms[: len(terms)]
    words, held = pool.kind(NAME)
    known = np.sort(q_terms[q_terms >= 0])
    if known.shape[0] and words.shape[0]:  # names that are not question terms
        keep = known[np.minimum(np.searchsorted(known, words), known.shape[0] - 1)] != words
        words, held = words[keep], held[:, keep]
    if sort_names and words.shape[0] > 1:  # columns in the order of the words (as the word-set version sorted them)
        held = held[:, np.argsort(np.array(cache.words_of(words, pool.generation)), kind="stable")]
    other = held if words.shape[0] else np.zeros((n, 1), dtype=bool)
    return TextView(terms, names, term_hits, name_hits, other)


def text_view(question: str, texts: Sequence[str]) -> TextView:
    """The :class:`TextView` of ``question`` and its candidate ``texts`` (read through the cache)."""
    return view_from_facts(question, text_facts(texts))


def _as_id(value: object) -> str | int | None:
    if value is None or isinstance(value, (str, int)):
        return None if value == "" else value
    return repr(value)  # lists, dicts, paths: their text, so any metadata value can be an id


def source_inputs(
    sources: Sequence[object], names: Sequence[object] | None = None
) -> dict[str, list[str | int | None] | list[str | None]]:
    """``{"sources": ..., "names": ...}`` for a method that reads sources, from per-candidate metadata values.

    Each of ``sources`` (page, file or parent-document ids) and ``names`` (display titles) is
    kept only when at least one candidate has a value; a missing value is ``None`` (that
    candidate falls back to its text's ``"title: "`` prefix). Non-string ids (lists, paths)
    are turned into their ``repr``.

    Example:
        >>> source_inputs(["a.md", "a.md", None], [None, None, None])
        {'sources': ['a.md', 'a.md', None]}
    """
    out: dict[str, list[str | int | None] | list[str | None]] = {}
    ids = [_as_id(v) for v in sources]
    if any(v is not None for v in ids):
        out["sources"] = ids
    if names is not None:
        shown = [v if isinstance(v, str) and v else None for v in names]
        if any(v is not None for v in shown):
            out["names"] = shown
    return out
