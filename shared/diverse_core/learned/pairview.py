"""The text pair matrices of one query (:func:`pair_view`), built from the cached facts of its texts.

Every candidate text is read once per process (:class:`~diverse_core.textfeatures.TextFactsCache`),
which keeps its :class:`~diverse_core.textfeatures.Lineup`: its name ids, title word ids and distinct
word ids (with their kind bits) as raw bytes, so a query stacks its candidates with one ``b"".join``
per part (the question's word ids join the same bytes). Only three word groups matter between
candidates, and one pass of a marker array indexed by word id lines them all up (no sort, no table
over every word of the pool): it numbers the names, which fill a (name, candidate) table, and gives
the title words and the question's words slots; one gather over the candidates' distinct words then
finds the few that are either (body words under a title word, terms among the question's words).
The pair counts are products of 0/1 matrices (exact integers).
numpy lets go of the GIL around most steps over more than :data:`~diverse_core.gil_blocks.KEEP`
entries (``bincount``, ``take`` and a product always), which under many callers costs a switch each
time. While another Python thread is alive, a small pool (n <= 64, at most
:data:`~diverse_core.gil_blocks.SMALL_WORK` names, title and question words) lets go three to five
times: its pool-wide index work runs in pieces of at most :data:`~diverse_core.textmarks.CHUNK`
entries, two marker scatters number its names (no ``bincount``, ``take`` or ``compress``), one
product gives both pair counts (two, and a cast, where many names are held twice), and of the
(n, n) steps only the title share's divide and the source comparison run in one call. A bigger
pool, or a process with one thread, keeps one call per step (the counted route: quicker there).

Example:
    >>> pv = pair_view("Who wrote Dune?", ["Dune: a novel by Frank Herbert.", "Herbert: he wrote Dune."])
    >>> pv.title_in.tolist()  # share of j's title words that i's body holds
    [[0.0, 1.0], [1.0, 0.0]]
    >>> pv.shared.totals.tolist(), pv.view.term_hits.astype(int).tolist()
    ([2.0, 1.0], [[1, 0], [1, 1]])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import count
from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..adaptive.candidates import SharedNames
from ..errors import DimensionMismatchError, InvalidParameterError
from ..gil_blocks import SMALL_WORK, other_threads, work_blocks
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
    facts_cache,
)
from ..textmarks import CHUNK, get, marker_array, pieces, put

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


#: 0, 1, 2, ...: positions (views of it for pools below its size).
_POSITIONS = np.arange(0, 1 << 15, dtype=np.int64)
_POSITIONS.flags.writeable = False


def _positions(start: int, stop: int) -> IntArray:
    """``start + 1 .. stop`` (a view where it can; ``start`` >= -1)."""
    if stop < _POSITIONS.shape[0]:
        return _POSITIONS[start + 1 : stop + 1]
    return np.arange(start + 1, stop + 1, dtype=np.int64)


_BACKWARDS: IntArray = _POSITIONS[::-1].copy()
_BACKWARDS.flags.writeable = False


def _backwards(size: int) -> IntArray:
    """``size - 1, .., 1, 0`` (a view where it can)."""
    if size <= _BACKWARDS.shape[0]:
        return _BACKWARDS[_BACKWARDS.shape[0] - size :]
    return np.arange(size - 1, -1, -1, dtype=np.int64)


_LINEUP = attrgetter("lineup")
_TERM, _NAME, _TITLE, _BODY = (MARK_BITS[kind] for kind in (TERM, NAME, TITLE, BODY))
_BODY_SHIFT = _BODY.bit_length() - 1  # the body bit is the top one: ``bits >> _BODY_SHIFT`` is 0 or 1
assert max(MARK_BITS) == _BODY == 1 << _BODY_SHIFT
_NAME_TYPES = frozenset({str, type(None)})


@lru_cache(maxsize=16)
def _log1p_of_counts(size: int) -> FloatArray:
    """``log1p(c)`` for the counts ``c = 0 .. size - 1`` (the same values as ``np.log1p`` of each count)."""
    table = np.log1p(np.arange(size, dtype=np.float64))
    table.flags.writeable = False
    return table


@lru_cache(maxsize=64)
def _own_ids(n: int) -> IntArray:
    """``-1, -2, ..., -n``: a source id of its own for each candidate."""
    ids = -1 - np.arange(n, dtype=np.int64)
    ids.flags.writeable = False
    return ids


@lru_cache(maxsize=256)
def _row_starts(n: int, row_len: int) -> IntArray:
    """``0, row_len, 2 * row_len, ..``: the flat place of each of ``n`` rows' first element, as a column."""
    starts = np.arange(0, n * row_len, row_len, dtype=np.int64)[:, None]
    starts.flags.writeable = False
    return starts


@lru_cache(maxsize=64)
def _multiples(n: int) -> IntArray:
    """``0, n, 2n, ..``: :data:`~diverse_core.gil_blocks.SMALL_WORK` + 1 multiples of ``n`` (views of it, not a
    multiply over the names of a pool, which would let go of the GIL)."""
    out = np.arange(SMALL_WORK + 1, dtype=np.int64) * n
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def _rows3(n: int) -> IntArray:
    """``0 .. n - 1`` three times: the candidate of each piece of a :class:`_Pool`."""
    rows = np.tile(np.arange(n, dtype=np.int64), 3)
    rows.flags.writeable = False
    return rows


def _zeros(shape: tuple[int, int], dtype: type) -> NDArray[Any]:
    """``np.zeros(shape, dtype)`` on a zeroed buffer from Python's allocator (``np.zeros`` of more than a
    few kilobytes lets go of the GIL, and under many callers every such release costs a switch)."""
    return np.frombuffer(bytearray(shape[0] * shape[1] * np.dtype(dtype).itemsize), dtype=dtype).reshape(shape)


class _Pool(NamedTuple):
    """The candidates' cached :class:`~diverse_core.textfeatures.Lineup` parts and the question's word ids,
    stacked (one join per part).

    ``wanted`` holds the names, then the title words, then the question's words, in one array: the
    words one marker pass lines up.
    """

    wanted: IntArray  # every candidate's name ids, then title word ids (display names' where given), then the question's
    names: int  # how many name ids ``wanted`` starts with
    titles: int  # how many title word ids follow them
    name_rows: IntArray  # the candidate of each name
    title_rows: IntArray  # the candidate of each title word
    words: IntArray  # every candidate's distinct word ids
    word_rows: IntArray
    bits: NDArray[np.uint8]  # the kind bits of each distinct word
    name_sizes: IntArray  # names per candidate
    title_sizes: IntArray  # title words per candidate
    keys: IntArray  # source key per candidate

    @classmethod
    def stack(cls, facts: Sequence[TextFacts], shown: Callable[[Sequence[bytes]], list[bytes]] | None,
              question: bytes) -> _Pool:
        """The pool of ``facts`` (``shown``: their own title words -> the display names' where given) and the
        question's word ids (``question``: native ``int64`` bytes)."""
        n = len(facts)
        if not n:
            empty = np.zeros(0, dtype=np.int64)
            return cls(np.frombuffer(question, dtype=np.int64), 0, 0, empty, empty, empty, empty,
                       np.zeros(0, dtype=np.uint8), empty, empty, empty)
        names, own, words, bits, heads = zip(*list(map(_LINEUP, facts)))  # noqa: B905 (all of five parts)
        head = np.frombuffer(b"".join(heads), dtype=np.int64).reshape(n, 4)
        count = head[:, :3].T.reshape(-1)  # names, titles, words
        titles = own if shown is None else shown(own)  # display names replace the title words
        if shown is not None:
            count = count.copy()  # (a view of the cached bytes for one candidate)
            count[n : 2 * n] = np.fromiter(map(len, titles), dtype=np.int64, count=n) >> 3  # 8 bytes an id
        parts = b"".join(names), b"".join(titles), question, b"".join(words)
        ids = np.frombuffer(b"".join(parts), dtype=np.int64)
        rows = np.repeat(_rows3(n), count)
        a = len(parts[0]) >> 3
        b = a + (len(parts[1]) >> 3)
        c = b + (len(question) >> 3)
        return cls(ids[:c], a, b - a, rows[:a], rows[a:b], ids[c:], rows[b:],
                   np.frombuffer(b"".join(bits), dtype=np.uint8), count[:n], count[n : 2 * n], head[:, 3])


def _slots(mark: IntArray, pool: _Pool, split: bool) -> tuple[IntArray, int, IntArray, IntArray, IntArray]:
    """``(at, D, col, hit, slot)``: one marker pass over ``pool.wanted`` (names, title words, question words).

    ``at``: each entry's marker value on the first pass (a word that appears several times keeps one
    of its positions ``1 .. k``: equal words, equal values, so it numbers the names). ``col``: each
    title and question word's slot ``1 .. D`` among the distinct ones; ``hit``: the positions of the
    candidate words that are either, ``slot``: their slots, from one gather over every candidate's
    distinct words. A question word never read (id -1) marks the marker's last slot, which no word
    id reaches. ``split``: gather a small pool's words in :func:`~diverse_core.textmarks.pieces`.
    """
    wanted, m = pool.wanted, pool.names
    k = wanted.shape[0]
    tq = wanted[m:]  # the title words and the question's words
    put(mark, wanted, _positions(0, k))
    try:
        at = get(mark, wanted) if split else mark[wanted]
        won = tq[at[m:] == _positions(m, k)]  # each distinct title or question word once
    finally:
        put(mark, wanted, 0)
    words = pool.words
    parts = pieces(words.shape[0], split)
    mark[won] = _positions(0, won.shape[0])
    try:
        col = mark[tq]
        if len(parts) == 1:
            slot = mark[words]
            hit = slot.nonzero()[0]
            return at, won.shape[0], col, hit, slot[hit]
        place = _positions(-1, words.shape[0] - 1)  # (``nonzero`` of more than CHUNK entries lets go of the GIL)
        hit = np.concatenate([place[p][mark[words[p]].astype(np.bool_)] for p in parts])
        return at, won.shape[0], col, hit, mark[words[hit]]
    finally:
        mark[won] = 0


def _ends(size: int) -> tuple[IntArray, IntArray]:
    """Two int64 arrays of ``size`` entries from one buffer of Python's (see :func:`_zeros`): zeros, and -1s."""
    buf = bytearray(size << 3)
    buf += b"\xff" * (size << 3)
    both = np.frombuffer(buf, dtype=np.int64)
    return both[:size], both[size:]


def _names(at: IntArray, pool: _Pool, n_terms: int,
           split: bool) -> tuple[NDArray[np.bool_], FloatArray, NDArray[Any], int]:
    """``(other names, totals, rows, s)``: the names outside the question's terms (see :class:`PairView`);
    the first ``s`` of the 0/1 ``rows`` (one of n per name) are the names held twice or more.

    ``at``: the marker values of :func:`_slots` (the names first, the question's terms after the
    title words), which number the names. Where ``split``, with no step that lets go of the GIL
    (:func:`_names_marked`); otherwise as counts (``bincount``, ``take``: quicker for a big pool).
    """
    m, n, k = pool.names, pool.name_sizes.shape[0], at.shape[0]
    col = at[:m]
    start = m + pool.titles
    q_col = at[start : start + n_terms]  # the question's terms (a term that is no name: a row no name fills)
    if split:
        return _names_marked(col, q_col, pool, k + 1)
    held = np.bincount(col, minlength=k + 1)
    held[q_col] = 0  # the question's terms among the names are not counted
    cols = held.nonzero()[0]
    table = _name_table(col, pool.name_rows, k + 1, n, col * n)
    in_question = np.add.reduce(table.take(q_col, axis=0), axis=0, dtype=np.int64) if n_terms else 0
    totals = np.subtract(pool.name_sizes, in_question, dtype=np.float64)
    if not cols.shape[0]:
        return np.zeros((n, 1), dtype=np.bool_), totals, np.zeros((0, n), dtype=np.float32), 0
    other = table.take(cols, axis=0)
    shared = other.compress(held[cols] >= 2, axis=0).astype(np.float32)  # (names held twice or more, n)
    return other.view(np.bool_).T, totals, shared, shared.shape[0]


def _name_table(col: IntArray, rows: IntArray, size: int, n: int, at: IntArray) -> NDArray[np.uint8]:
    """A (size, n) 0/1 table with a 1 at each flat place ``at`` (one per name, ``col``), scattered in pieces
    numpy runs without letting go of the GIL."""
    table = _zeros((size, n), np.uint8)
    flat = table.reshape(-1)
    for a in range(0, col.shape[0], CHUNK):
        flat[at[a : a + CHUNK] + rows[a : a + CHUNK]] = 1
    return table


def _names_marked(col: IntArray, q_col: IntArray, pool: _Pool,
                  size: int) -> tuple[NDArray[np.bool_], FloatArray, NDArray[np.uint8], int]:
    """:func:`_names` with no step that lets go of the GIL (``col``, ``q_col``: the values of the names and of
    the question's terms, below ``size``).

    Two scatters of the names' positions (backwards, then forwards) keep each value's first and last
    position: a name is held by two candidates or more where they differ. Those names get the first
    rows of a (row, candidate) table, the other names the next ones and the question's terms the last
    ones, so that each result is a block of its rows (no gather).
    """
    m, n, n_terms = col.shape[0], pool.name_sizes.shape[0], q_col.shape[0]
    first, last = _ends(size)  # 0 / -1 where no name has the value
    back = _backwards(m + 1)  # m, m - 1, .., 0 (numpy lets go of the GIL for index work on reversed views)
    put(first, get(col, back[1:]), back[:-1])
    put(last, col, _positions(0, m))
    last[q_col] = -1  # the question's terms among the names are not counted
    twice, once = _where(np.less, first, last), _where(np.equal, first, last)
    s, c = twice.shape[0], twice.shape[0] + once.shape[0]
    place = np.empty(size, dtype=np.int64)  # value -> the start of its row in the flat table
    put(place, np.concatenate((twice, once, q_col)), _multiples(n)[: c + n_terms])
    table = _name_table(col, pool.name_rows, c + n_terms, n, get(place, col))
    in_question = np.add.reduce(table[c:], axis=0, dtype=np.int64) if n_terms else 0
    totals = np.subtract(pool.name_sizes, in_question, dtype=np.float64)
    other = table[:c].view(np.bool_).T if c else np.zeros((n, 1), dtype=np.bool_)
    return other, totals, table, s


def _where(test: Callable[..., Any], a: IntArray, b: IntArray) -> IntArray:
    """``test(a, b).nonzero()[0]`` in :func:`~diverse_core.textmarks.pieces` (an element loop or ``nonzero``
    over more than CHUNK entries lets go of the GIL)."""
    parts = pieces(a.shape[0])
    if len(parts) == 1:
        return test(a, b).nonzero()[0]  # type: ignore[no-any-return]
    return np.concatenate([test(a[p], b[p]).nonzero()[0] + p.start for p in parts])


def _source_ids(keys: IntArray, src: list[object] | None) -> IntArray:
    """One id per candidate; equal ids: same source (the prefix title's key, or the caller's ids)."""
    n = keys.shape[0]
    if src is None:
        return np.where(keys >= 0, keys, _own_ids(n))  # equal keys: equal prefix titles
    codes: dict[object, int] = {}
    try:  # each source's id: the position of its first candidate (one pass)
        ids = np.fromiter(map(codes.setdefault, src, count()), dtype=np.int64, count=n)
    except TypeError as exc:
        raise InvalidParameterError(f"sources must hold hashable ids (str, int, ...) or None; {exc}") from exc
    for unknown in (None, ""):  # no source: one of its own
        if unknown in codes:
            ids = np.where(ids == codes[unknown], _own_ids(n), ids)
    return ids


def _display_titles(shown: list[object] | None, cache: TextFactsCache,
                    generation: int) -> Callable[[Sequence[bytes]], list[bytes]] | None:
    """The display names' title words in place of the texts' own (``None``: no names given), checked."""
    if shown is None:
        return None
    if not set(map(type, shown)) <= _NAME_TYPES and not all(x is None or isinstance(x, str) for x in shown):
        raise InvalidParameterError("names must hold strings (or None), one per candidate")
    return partial(cache.title_words, shown, generation=generation)  # type: ignore[arg-type]


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
    terms, q_names = _question_words(question)
    words_q, name_cols = _question_columns(terms, q_names)
    pool = _Pool.stack(facts, _display_titles(shown, cache, generation), cache.word_ids(words_q, generation).tobytes())
    mark = marker_array(cache.id_bound + 2)  # read after every id in use was handed out; the last slot: id -1
    # a small pool's work in pieces that keep the GIL, while another thread may wait for it
    split = n * n <= SMALL_WORK and pool.wanted.shape[0] <= SMALL_WORK and other_threads()
    at, d, q_slots, hit, col = _slots(mark, pool, split)
    other, totals, name_table, s = _names(at, pool, len(terms), split)
    title_col, q_col = q_slots[: pool.titles], q_slots[pool.titles :]
    # the few candidate words that are title or question words
    width, size = d + 1, q_col.shape[0]
    rows, bits = pool.word_rows[hit], pool.bits[hit]
    # a question word or name counts when the text holds the word as a term (capitalised or not);
    # every other hit lands in a last column that no field reads
    word = np.empty(width, dtype=np.int64)  # slot -> the question's word there (size: none)
    word.fill(size)
    word[q_col] = _positions(-1, size - 1)
    both = _zeros((n, size + 1), np.bool_)
    both.reshape(-1)[rows * (size + 1) + np.where(bits & _TERM, word[col], size)] = True
    small = split and s * n <= SMALL_WORK  # every (n, n) step but one can keep the GIL
    products = _one_product if small else _two_products
    title_counts, shared, shared_names = products(rows, col, bits, title_col * n + pool.title_rows, width, name_table, s)
    title_in = np.divide(title_counts, np.maximum(pool.title_sizes, 1)[None, :])  # share of j's title words in i's body
    shared.reshape(-1)[:: n + 1] = totals  # (a view: the rows of a C-ordered product)
    columns = shared_names.T  # (n, names held twice or more): a view
    tid = _source_ids(pool.keys, src)
    name_hits = both.reshape(-1)[_row_starts(n, size + 1) + name_cols] if split else both.take(name_cols, axis=1)
    view = TextView(terms, q_names, both[:, : len(terms)], name_hits, other)
    most = int(np.maximum.reduce(totals)) + 1 if n else 1  # no pair shares more names than either of them mentions
    table = _log1p_of_counts(1 << (most - 1).bit_length())
    if split:
        log_pairs = _log_pairs(shared, table)
    else:  # a gather by take, mode "clip" (every count is within the table: nothing is clipped; no bounds pass)
        log_pairs = table.take(shared.astype(np.intp), mode="clip")
    return PairView(view, tid[:, None] == tid[None, :], title_in, log_pairs, SharedNames(columns, totals, log_pairs))


_Counts = tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]


def _two_products(rows: IntArray, col: IntArray, bits: NDArray[np.uint8], title_at: IntArray, width: int,
                  names: NDArray[np.uint8], s: int) -> _Counts:
    """``(title counts, name counts, shared names)``: the products of 0/1 matrices (exact counts) behind
    :class:`PairView` (``rows``, ``col``: the candidate and slot of each hit, whose ``bits`` tell a body
    word; ``title_at``: the flat places of the title words in a (width, n) matrix; ``names``: (rows, n),
    the first ``s`` the names held twice or more). The right factors are built transposed (a product of
    two row-major matrices takes the quicker path)."""
    n = names.shape[1]
    body, titled = _zeros((n, width), np.float32), _zeros((width, n), np.float32)
    body.reshape(-1)[rows * width + col] = (bits >> _BODY_SHIFT).astype(np.float32)
    titled.reshape(-1)[title_at] = 1.0
    shared_names = names[:s].astype(np.float32, copy=False)
    return body @ titled, shared_names.T @ shared_names, shared_names


def _one_product(rows: IntArray, col: IntArray, bits: NDArray[np.uint8], title_at: IntArray, width: int,
                 names: NDArray[np.uint8], s: int) -> _Counts:
    """:func:`_two_products` as one product, which lets go of the GIL once: ``[body 0; 0 names^T] @
    [titled; names]`` is ``[title counts; name counts]``."""
    n, span = names.shape[1], width + s
    left, right = _zeros((2 * n, span), np.float32), _zeros((span, n), np.float32)
    left.reshape(-1)[rows * span + col] = (bits >> _BODY_SHIFT).astype(np.float32)
    right.reshape(-1)[title_at] = 1.0
    shared_names, corner = right[width:], left[n:, width:].T  # (names held twice or more, n) both
    for b in work_blocks(s, n):
        shared_names[b] = names[b]
        corner[b] = names[b]
    counts = left @ right
    return counts[:n], counts[n:], shared_names


def _log_pairs(shared: NDArray[np.float32], table: FloatArray) -> FloatArray:
    """``table[shared]``: log(1 + count) of each pair's shared names, gathered in row blocks."""
    out = np.empty(shared.shape, dtype=np.float64)
    for b in work_blocks(*shared.shape):
        out[b] = table[shared[b].astype(np.intp)]
    return out
