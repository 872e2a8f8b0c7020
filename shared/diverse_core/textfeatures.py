"""Text features shared by the selection methods and the pipelines (adaptive, learned, DR-RAG).

Everything here is model-free: a regular-expression tokenizer with a small stop-word
list, the ``"title: body"`` convention, and the lexical view of one query
(:func:`text_view`). It sits below :mod:`diverse_core.adaptive`,
:mod:`diverse_core.learned` and :mod:`diverse_core.pipelines`, so no selection method
imports a pipeline to read a text.

Reading a text (tokenizing it, splitting off its title) is the costly part of the
text-aware selectors, and in a service the same chunks come back query after query.
:class:`TextFactsCache` keeps what was read of each text (a bounded, thread-safe LRU
keyed by the text's content); :func:`text_facts` reads through the process-wide
cache (:func:`facts_cache`), so a chunk seen before costs one dictionary lookup.

Example:
    >>> v = text_view("Who directed Alien?", ["Alien was directed by Ridley Scott.", "A cat."])
    >>> v.terms, v.names
    (('alien', 'directed'), ('alien',))
    >>> v.term_hits.tolist()
    [[True, True], [False, False]]
    >>> split_title("Paris: the capital of France.")
    ('Paris', 'the capital of France.')
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import repeat
from operator import attrgetter, is_
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParameterError
from .textmarks import MARK_BITS, marker_array, word_marks

__all__ = [
    "BODY",
    "MARK_BITS",
    "NAME",
    "STOPWORDS",
    "TERM",
    "TITLE",
    "Lineup",
    "PoolWords",
    "TextFacts",
    "TextFactsCache",
    "TextView",
    "content_terms",
    "facts_cache",
    "name_terms",
    "pool_words",
    "source_inputs",
    "split_title",
    "text_facts",
    "text_view",
]

#: Function words and question words left out of the question's terms.
STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or is are was were be been being which who whom whose what
    when where why how that this these those it its as than then did do does has have had not no yes both
    either other between same name also his her their there one two first second after before during into
    about over under more most many much such can could would should will may might film born person""".split()
)

_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F][A-Za-z0-9\u00C0-\u024F'\-]*")


def content_terms(text: str) -> set[str]:
    """Lower-cased words of ``text`` that are not stop words (two characters or more)."""
    return {w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 1 and w not in STOPWORDS}


def name_terms(text: str, *, skip_first: bool = False) -> set[str]:
    """Lower-cased capitalised words and numbers of ``text`` (``skip_first``: not its first word)."""
    out = set()
    for i, w in enumerate(_WORD.findall(text)):
        if skip_first and i == 0:
            continue
        if (w[0].isupper() or w[0].isdigit()) and w.lower() not in STOPWORDS:
            out.add(w.lower())
    return out


def terms_and_names(text: str) -> tuple[set[str], set[str]]:
    """``(content_terms(text), name_terms(text))`` from one pass of the tokenizer."""
    words = _WORD.findall(text)
    lower = [w.lower() for w in words]
    terms = {w for w in lower if len(w) > 1 and w not in STOPWORDS}
    names = {low for w, low in zip(words, lower, strict=True) if (w[0].isupper() or w[0].isdigit()) and low not in STOPWORDS}
    return terms, names


def split_title(text: str) -> tuple[str, str]:
    """``("title", "body")`` from ``"title: body"`` (title ``""`` when there is no such prefix).

    Example:
        >>> split_title("no prefix here")
        ('', 'no prefix here')
    """
    head, sep, body = text.partition(": ")
    if sep and 0 < len(head) <= 120:
        return head, body
    return "", text


IntArray = NDArray[np.int64]

#: Most display names whose word ids a :class:`TextFactsCache` keeps (then it starts them over).
_SHOWN_MAX = 65_536

#: Marks a source key in a :class:`TextFactsCache` vocabulary (no word holds a NUL).
_KEY_MARK = "\x00"

#: The kinds of :attr:`TextFacts.codes` (``code = id * 8 + kind``).
TERM, NAME, TITLE, BODY = range(4)
_KINDS = 8  # 2 ** 3: ``code >> 3`` is the id, ``code & 7`` the kind
_KIND_BITS = _KINDS - 1
_KIND_OF = np.arange(4, dtype=np.int64)


@dataclass(frozen=True)
class TextFacts:
    """What the text-aware selectors read of one candidate text (computed once per distinct text).

    Attributes:
        terms: its content words (:func:`content_terms`).
        names: its names: capitalised words and numbers (:func:`name_terms`).
        prefix_title: the ``"title: "`` prefix (``""`` when there is none).
        title_terms: the content words of that prefix.
        body_terms: the content words of the text after that prefix.
        term_ids, name_ids, title_ids, body_ids: the same word sets as sorted ids in the
            vocabulary of the :class:`TextFactsCache` that read it (for array operations).
        generation: that cache's vocabulary generation (ids of another generation are stale).
        codes: every id above in one array, each as ``id * 8 + kind`` (:data:`TERM`, :data:`NAME`,
            :data:`TITLE`, :data:`BODY`): a query stacks its candidates with one call.
        key: the source key (the lower-cased prefix title, numbered like a word; -1 without one).
        marks: each distinct id once, as ``id * 16 + bits``: one bit of :data:`MARK_BITS` per kind the
            word has here (what the learned selector's pair view lines up); ``None`` until a reader asks
            for them (``get_many(..., marks=True)``).
        lineup: what the pair view stacks of this text, as raw bytes so that a query joins its
            candidates' with one ``b"".join`` per part (no array call per text): its name ids, title ids
            and distinct word ids (native ``int64``) and each distinct word's kind bits (``uint8``; the
            ``marks`` split); ``None`` with ``marks``.
    """

    terms: frozenset[str]
    names: frozenset[str]
    prefix_title: str
    title_terms: frozenset[str]
    body_terms: frozenset[str]
    term_ids: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)
    name_ids: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)
    title_ids: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)
    body_ids: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)
    generation: int = field(default=-1, compare=False, repr=False)
    codes: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)
    key: int = field(default=-1, compare=False, repr=False)
    marks: IntArray | None = field(default=None, compare=False, repr=False)
    lineup: Lineup | None = field(default=None, compare=False, repr=False)


def read_text(text: str) -> TextFacts:
    """The :class:`TextFacts` of ``text`` (word sets only, no ids; no cache)."""
    terms, names = terms_and_names(text)
    title, body = split_title(text)
    if not title:
        return TextFacts(frozenset(terms), frozenset(names), "", frozenset(), frozenset(terms))
    return TextFacts(frozenset(terms), frozenset(names), title, frozenset(content_terms(title)),
                     frozenset(content_terms(body)))


class Lineup(NamedTuple):
    """One text's :attr:`TextFacts.lineup` (raw native bytes; a tuple, so ``zip(*lineups)`` gives each part's list).

    Attributes:
        names: its name ids (``int64``).
        titles: its title word ids (``int64``).
        words: its distinct word ids (``int64``; the ids of :attr:`TextFacts.marks`).
        bits: each distinct word's kind bits (``uint8``; the bits of :attr:`TextFacts.marks`).
        sizes: how many names, title words and distinct words it has (three ``int64``).
        key: its source key (one ``int64``, -1 without a prefix title).
    """

    names: bytes
    titles: bytes
    words: bytes
    bits: bytes
    sizes: bytes
    key: bytes


def _mark_fields(f: TextFacts, marks: IntArray | None) -> dict[str, IntArray | Lineup | None]:
    """The :class:`TextFacts` fields that come with the marks of ``f`` (``marks``, ``lineup``)."""
    if marks is None:
        return {"marks": None, "lineup": None}
    sizes = np.array([f.name_ids.shape[0], f.title_ids.shape[0], marks.shape[0]], dtype=np.int64)
    return {"marks": marks, "lineup": Lineup(f.name_ids.tobytes(), f.title_ids.tobytes(), (marks >> 4).tobytes(),
                                             (marks & 15).astype(np.uint8).tobytes(), sizes.tobytes(),
                                             np.array([f.key], dtype=np.int64).tobytes())}


class TextFactsCache:
    """A bounded, thread-safe LRU of :class:`TextFacts` keyed by the text's content.

    It also numbers every word it has read (its vocabulary), so a query's lexical view is
    built with array operations over the candidates' word ids. The vocabulary starts over
    (with the cache emptied) when it passes ``max_words``.

    Args:
        maxsize: most texts kept (the least recently used go first); 0 keeps none.
        max_words: most distinct words numbered before the vocabulary starts over.

    Example:
        >>> cache = TextFactsCache(maxsize=2)
        >>> cache.get("Dune: a novel.").prefix_title
        'Dune'
        >>> _ = cache.get("Dune: a novel."); cache.hits, cache.misses
        (1, 1)
    """

    def __init__(self, maxsize: int = 100_000, max_words: int = 2_000_000) -> None:
        for name, value in (("maxsize", maxsize), ("max_words", max_words)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidParameterError(f"{name} must be a non-negative integer; got {name}={value!r}")
        self.maxsize = maxsize
        self.max_words = max(max_words, 1)
        self._data: OrderedDict[str, TextFacts] = OrderedDict()
        self._vocab: dict[str, int] = {}
        self._words: list[str] = []
        self._generation = 0
        self._id_bound = 0
        self._shown: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def _id_list(self, words: frozenset[str]) -> list[int]:
        """Sorted ids of ``words``, numbering new ones (call with the lock held)."""
        vocab, spelled = self._vocab, self._words
        for w in words:
            if w not in vocab:
                vocab[w] = len(spelled)
                spelled.append(w)
        self._id_bound = max(self._id_bound, len(spelled))
        return sorted(vocab[w] for w in words)

    def _ids(self, words: frozenset[str]) -> IntArray:
        return np.array(self._id_list(words), dtype=np.int64)

    @property
    def id_bound(self) -> int:
        """A bound on every word id this cache has handed out, in any generation (the largest vocabulary yet)."""
        return self._id_bound

    def words_of(self, ids: IntArray, generation: int) -> list[str]:
        """The words of ``ids`` (of ``generation``; ``""`` for ids of another generation)."""
        with self._lock:
            if generation != self._generation:
                return [""] * len(ids)
            spelled = self._words
            return [spelled[i] for i in ids.tolist()]

    def _numbered(self, facts: list[TextFacts], marks: bool) -> list[TextFacts]:
        """``facts`` with ids in the current vocabulary, with their marks if asked (call with the lock held)."""
        parts = []
        for f in facts:
            lists = [self._id_list(words) for words in (f.terms, f.names, f.title_terms, f.body_terms)]
            key = f.prefix_title.strip().lower()
            # the source key is numbered in the same vocabulary, marked so that it never equals a word
            key_id = self._id_list(frozenset({_KEY_MARK + key}))[0] if key else -1
            sizes = [len(ids) for ids in lists]
            parts.append((f, np.array(lists[0] + lists[1] + lists[2] + lists[3], dtype=np.int64), sizes, key_id))
        codes = [flat * _KINDS + np.repeat(_KIND_OF, sizes) for _, flat, sizes, _ in parts]
        out = []
        for (f, flat, sizes, key_id), code, mark in zip(parts, codes, word_marks(codes) if marks else [None] * len(codes),
                                                        strict=True):
            a, b, c = sizes[0], sizes[0] + sizes[1], sizes[0] + sizes[1] + sizes[2]
            read = TextFacts(f.terms, f.names, f.prefix_title, f.title_terms, f.body_terms, flat[:a], flat[a:b],
                             flat[b:c], flat[c:], self._generation, code, key_id)
            out.append(replace(read, **_mark_fields(read, mark)) if mark is not None else read)
        return out

    def get(self, text: str) -> TextFacts:
        """The facts of ``text``, read once and kept while it stays among the ``maxsize`` most recent."""
        return self.get_many([text])[0]

    def get_many(self, texts: Sequence[str], *, marks: bool = False) -> list[TextFacts]:
        """:meth:`get` of each text, in order (one vocabulary generation for all of them; ``marks``: with their marks)."""
        with self._lock:  # every entry kept is of the current generation (a new generation empties the cache)
            data = self._data
            out: list[TextFacts | None] = list(map(data.get, texts))
            to_end = data.move_to_end
            # the warm path: every text seen before (with its marks, if asked): no per-text test in Python
            if all(out) and not (marks and any(map(is_, map(_MARKS, out), repeat(None)))):
                deque(map(to_end, texts), maxlen=0)  # each one most recent, in order (no Python loop)
                self.hits += len(out)
                return out  # type: ignore[return-value]
            for t, f in zip(texts, out, strict=True):
                if f is not None:
                    to_end(t)
            self.hits += len(out) - sum(f is None for f in out)
        missing = {t: read_text(t) for t, f in zip(texts, out, strict=True) if f is None}  # the slow part, unlocked
        with self._lock:
            self.misses += len(missing)
            if len(self._vocab) > self.max_words:  # start over: every id handed out so far is stale
                self._shown.clear()
                self._vocab.clear()
                self._words.clear()
                self._data.clear()
                self._generation += 1
            numbered = dict(zip(missing, self._numbered(list(missing.values()), marks), strict=True))
            if any(f is not None and f.generation != self._generation for f in out):  # renumber what went stale
                stale = {t: f for t, f in zip(texts, out, strict=True) if f is not None}
                numbered.update(zip(stale, self._numbered(list(stale.values()), marks), strict=True))
            elif marks:  # read before without marks: add them
                bare = {t: f for t, f in zip(texts, out, strict=True) if f is not None and f.marks is None}
                found = word_marks([f.codes for f in bare.values()])
                numbered.update(zip(bare, (replace(f, **_mark_fields(f, m))
                                           for f, m in zip(bare.values(), found, strict=True)), strict=True))
            for t, f in numbered.items():
                if self.maxsize:
                    self._data[t] = f
                    self._data.move_to_end(t)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
            return [numbered.get(t, f) for t, f in zip(texts, out, strict=True)]  # type: ignore[misc]

    def word_ids(self, words: Sequence[str], generation: int) -> IntArray:
        """Ids of ``words`` in the vocabulary of ``generation`` (-1: never read, or another generation)."""
        with self._lock:
            if generation != self._generation:
                return np.full(len(words), -1, dtype=np.int64)
            return np.array([self._vocab.get(w, -1) for w in words], dtype=np.int64)

    def number(self, words: frozenset[str], generation: int) -> IntArray | None:
        """Ids of ``words``, numbering new ones (``None`` when ``generation`` is no longer current)."""
        with self._lock:
            if generation != self._generation:
                return None
            return self._ids(words)

    def title_words(self, names: Sequence[str | None], own: Sequence[bytes], generation: int) -> list[bytes]:
        """Each candidate's title word ids as :attr:`Lineup.titles` bytes: its display name's content words,
        or ``own`` (its text's) where it has no name (``None`` or ``""``).

        New words are numbered, and each name's ids are kept (a bounded dictionary, emptied with the
        vocabulary), so names seen before cost one lookup. A name gets no ids when ``generation`` is
        no longer current.
        """
        with self._lock:
            if generation != self._generation:
                return [b"" if nm else ids for nm, ids in zip(names, own, strict=True)]
            known = self._shown
            if not all(map(known.__contains__, filter(None, names))):
                if len(known) > _SHOWN_MAX:
                    known.clear()
                for nm in filter(None, names):
                    if nm not in known:
                        known[nm] = self._ids(frozenset(content_terms(nm))).tobytes()
            return list(map(known.get, names, own))  # no name (None, ""): not a key, so its own title

    def clear(self) -> None:
        """Forget every text and word and reset the counters."""
        with self._lock:
            self._data.clear()
            self._shown.clear()
            self._vocab.clear()
            self._words.clear()
            self._generation += 1
            self.hits = 0
            self.misses = 0


_MARKS = attrgetter("marks")
_FACTS = TextFactsCache()


def facts_cache() -> TextFactsCache:
    """The process-wide :class:`TextFactsCache` (100,000 texts) that :func:`text_facts` reads through."""
    return _FACTS


def text_facts(texts: Sequence[str]) -> list[TextFacts]:
    """The :class:`TextFacts` of each text, through the process-wide cache."""
    return _FACTS.get_many(texts)


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

    def holds(self, words: IntArray, kind: int) -> NDArray[np.bool_]:
        """(n, len(words)) whether each candidate holds each of the distinct ``words`` as ``kind`` (-1: never).

        One gather over the pool's words through a marker array indexed by word id (no sort).
        """
        out = np.zeros((self.n, words.shape[0]), dtype=bool)
        cols = np.flatnonzero(words >= 0)
        if not cols.shape[0] or not self.words.shape[0]:
            return out
        wanted = words[cols]
        mark = marker_array(max(int(wanted.max()), int(self.words.max())) + 1)
        mark[wanted] = cols + 1
        try:
            col = mark[self.words]
        finally:
            mark[wanted] = 0
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
def _question_words(question: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(sorted(content_terms(question))), tuple(sorted(name_terms(question, skip_first=True)))


@lru_cache(maxsize=4096)
def _question_columns(terms: tuple[str, ...], names: tuple[str, ...]) -> tuple[tuple[str, ...], list[int]]:
    """The question's distinct words (its terms first) and the column of each of its names among them."""
    words = tuple(dict.fromkeys(terms + names))
    at = {w: i for i, w in enumerate(words)}
    return words, [at[w] for w in names]


def view_from_facts(question: str, facts: Sequence[TextFacts], cache: TextFactsCache | None = None, *,
                    sort_names: bool = True, pool: PoolWords | None = None) -> TextView:
    """The :class:`TextView` of ``question`` and candidates already read into ``facts`` (by ``cache``).

    ``sort_names=False`` leaves the ``other_names`` columns in vocabulary order (cheaper; for
    callers that only sum over them, as the learned selector does). ``pool``: the facts'
    :func:`pool_words` when the caller already has it.
    """
    cache = _FACTS if cache is None else cache
    terms, names = _question_words(question)
    pool = pool_words(facts) if pool is None else pool
    n = pool.n
    words_q, name_cols = _question_columns(terms, names)
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
