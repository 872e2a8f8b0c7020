"""The pair view as main computed it before the per-text lineups (issue 35, session 14): the oracle.

One marker pass gives every word of the pool a column, one scatter fills an (n, words + 1) table
of kind bits, and every matrix is a column selection of it. Kept here (not in the library) so that
tests can check the lineup version against it bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from diverse_core.adaptive.candidates import SharedNames
from diverse_core.learned import PairView
from diverse_core.textfeatures import (
    BODY,
    MARK_BITS,
    NAME,
    TERM,
    TITLE,
    TextView,
    _question_columns,
    _question_words,
    content_terms,
    facts_cache,
)

_TERM, _NAME, _TITLE, _BODY = (MARK_BITS[kind] for kind in (TERM, NAME, TITLE, BODY))


def _columns(words: np.ndarray, lookup: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One column per distinct word (1 + the position of one of its occurrences); 0 for absent lookups."""
    m = words.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(lookup.shape[0], dtype=np.int64)
    top = int(words.max())
    mark = np.zeros(top + 2, dtype=np.int64)
    mark[words] = np.arange(1, m + 1)
    return mark[words], mark[np.minimum(lookup, top + 1)]


def reference_pair_view(question: str, texts: Sequence[str], sources: Sequence[object] | None = None,
                        names: Sequence[str | None] | None = None) -> PairView:
    """Main's ``pair_view`` (valid inputs only)."""
    n = len(texts)
    cache = facts_cache()
    facts = cache.get_many(texts, marks=True)
    generation = facts[0].generation if facts else -1
    marks = np.concatenate([f.marks for f in facts]) if n else np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(n), [len(f.marks) for f in facts])
    words, bits = marks >> 4, marks & 15
    titles = {i: cache.number(frozenset(content_terms(nm)), generation) for i, nm in enumerate(names or []) if nm}
    if titles:
        bits = np.where(np.isin(rows, list(titles)), bits & ~_TITLE, bits)
        words = np.concatenate([words, *titles.values()])
        rows = np.concatenate([rows, *(np.full(ids.shape[0], i) for i, ids in titles.items())])
        bits = np.concatenate([bits, np.full(words.shape[0] - bits.shape[0], _TITLE)])
    terms, q_names = _question_words(question)
    words_q, name_cols = _question_columns(terms, q_names)
    col, q_col = _columns(words, cache.word_ids(words_q, generation))
    v = words.shape[0]
    table = np.zeros((n, v + 1), dtype=np.uint8)
    np.bitwise_or.at(table, (rows, col), bits.astype(np.uint8))
    both = (table[:, q_col] & _TERM) != 0
    is_name = (bits & _NAME) != 0
    held = np.bincount(col[is_name], minlength=v + 1)
    held[q_col[: len(terms)]] = 0
    other_cols = np.flatnonzero(held)
    other = (table[:, other_cols] & _NAME).view(bool) if other_cols.shape[0] else np.zeros((n, 1), dtype=bool)
    totals = np.asarray(np.bincount(rows[is_name], weights=held[col[is_name]] > 0, minlength=n), dtype=np.float64)
    shared_names = other[:, held[other_cols] >= 2].astype(np.float32)
    shared = shared_names @ shared_names.T
    shared.flat[:: n + 1] = totals
    is_title = (bits & _TITLE) != 0
    at_title = table[:, np.flatnonzero(np.bincount(col[is_title], minlength=v + 1))]
    title_in = np.divide((at_title & _BODY).astype(np.float32) @ (at_title & _TITLE).astype(np.float32).T,
                         (np.maximum(np.bincount(rows[is_title], minlength=n), 1) * float(_BODY * _TITLE))[None, :])
    if sources is None:
        keys = np.array([f.key for f in facts], dtype=np.int64)
        tid = np.where(keys >= 0, keys, -1 - np.arange(n))
    else:
        codes: dict[object, int] = {}
        tid = np.array([-1 - i if (x is None or x == "") else codes.setdefault(x, len(codes))
                        for i, x in enumerate(sources)], dtype=np.int64)
    view = TextView(terms, q_names, both[:, : len(terms)], both[:, name_cols], other)
    most = int(totals.max()) + 1 if n else 1
    log_pairs = np.log1p(np.arange(1 << (most - 1).bit_length(), dtype=np.float64))[shared.astype(np.intp)]
    return PairView(view, tid[:, None] == tid[None, :], title_in, log_pairs, SharedNames(shared_names, totals, log_pairs))
