"""What the text-aware selectors read of each text, read once per process (:class:`TextFactsCache`).

Reading a text (tokenizing it, splitting off its title) is the costly part of the text-aware
selectors, and in a service the same chunks come back query after query. The cache keeps what
was read of each text (a bounded, thread-safe LRU keyed by the text's content) and numbers every
word it reads, so a query lines its candidates up with array operations over word ids.
:mod:`diverse_core.text` re-exports the public names.

Example:
    >>> cache = TextFactsCache()
    >>> f = cache.get("Dune: a novel by Frank Herbert.")
    >>> f.prefix_title, sorted(f.title_terms), cache.words_of(f.codes[f.codes & 7 == TITLE] >> 3, f.generation)
    ('Dune', ['dune'], ['dune'])
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .tokens import content_terms, split_title, terms_and_names

__all__ = ["BODY", "NAME", "TERM", "TITLE", "TextFacts", "TextFactsCache", "facts_cache", "read_text", "text_facts"]

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


@dataclass(frozen=True, slots=True)
class TextFacts:
    """What the text-aware selectors read of one candidate text (computed once per distinct text).

    Attributes:
        terms: its content words (:func:`content_terms`).
        names: its names: capitalised words and numbers (:func:`name_terms`).
        prefix_title: the ``"title: "`` prefix (``""`` when there is none).
        title_terms: the content words of that prefix.
        body_terms: the content words of the text after that prefix.
        generation: the vocabulary generation of the :class:`TextFactsCache` that read it (ids
            of another generation are stale).
        codes: the four word sets as ids in that cache's vocabulary, in one array, each as
            ``id * 8 + kind`` (:data:`TERM`, :data:`NAME`, :data:`TITLE`, :data:`BODY`): a query
            stacks its candidates with one call.
        key: the source key (the lower-cased prefix title, numbered like a word; -1 without one).
    """

    terms: frozenset[str]
    names: frozenset[str]
    prefix_title: str
    title_terms: frozenset[str]
    body_terms: frozenset[str]
    generation: int = field(default=-1, compare=False, repr=False)
    codes: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)
    key: int = field(default=-1, compare=False, repr=False)


def read_text(text: str) -> TextFacts:
    """The :class:`TextFacts` of ``text`` (word sets only, no ids; no cache)."""
    terms, names = terms_and_names(text)
    title, body = split_title(text)
    if not title:
        return TextFacts(frozenset(terms), frozenset(names), "", frozenset(), frozenset(terms))
    return TextFacts(frozenset(terms), frozenset(names), title, frozenset(content_terms(title)),
                     frozenset(content_terms(body)))


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
        self._shown: dict[str, IntArray] = {}
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
        return sorted(vocab[w] for w in words)

    def words_of(self, ids: IntArray, generation: int) -> list[str]:
        """The words of ``ids`` (of ``generation``; ``""`` for ids of another generation)."""
        with self._lock:
            if generation != self._generation:
                return [""] * len(ids)
            spelled = self._words
            return [spelled[i] for i in ids.tolist()]

    def _numbered(self, facts: list[TextFacts]) -> list[TextFacts]:
        """``facts`` with ids in the current vocabulary (call with the lock held)."""
        out = []
        for f in facts:
            lists = [self._id_list(words) for words in (f.terms, f.names, f.title_terms, f.body_terms)]
            key = f.prefix_title.strip().lower()
            # the source key is numbered in the same vocabulary, marked so that it never equals a word
            key_id = self._id_list(frozenset({_KEY_MARK + key}))[0] if key else -1
            flat = np.array(lists[0] + lists[1] + lists[2] + lists[3], dtype=np.int64)
            codes = flat * _KINDS + np.repeat(_KIND_OF, [len(ids) for ids in lists])
            out.append(TextFacts(f.terms, f.names, f.prefix_title, f.title_terms, f.body_terms, self._generation,
                                 codes, key_id))
        return out

    def get(self, text: str) -> TextFacts:
        """The facts of ``text``, read once and kept while it stays among the ``maxsize`` most recent."""
        return self.get_many([text])[0]

    def get_many(self, texts: Sequence[str]) -> list[TextFacts]:
        """:meth:`get` of each text, in order (one vocabulary generation for all of them)."""
        with self._lock:  # every entry kept is of the current generation (a new generation empties the cache)
            data = self._data
            out: list[TextFacts | None] = list(map(data.get, texts))
            to_end = data.move_to_end
            if all(out):  # the warm path: every text seen before
                deque(map(to_end, texts), maxlen=0)  # each one most recent, in order
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
            numbered = dict(zip(missing, self._numbered(list(missing.values())), strict=True))
            if any(f is not None and f.generation != self._generation for f in out):  # renumber what went stale
                stale = {t: f for t, f in zip(texts, out, strict=True) if f is not None}
                numbered.update(zip(stale, self._numbered(list(stale.values())), strict=True))
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
            return np.fromiter(map(self._vocab.get, words, repeat(-1)), dtype=np.int64, count=len(words))

    def title_words(self, names: Sequence[str | None], generation: int) -> list[IntArray | None]:
        """The ids of each display name's content words (``None`` where a candidate has no name, ``None`` or ``""``).

        New words are numbered, and each name's ids are kept (a bounded dictionary, emptied with the
        vocabulary), so names seen before cost one lookup. Every name gets no ids (an empty array) when
        ``generation`` is no longer current.
        """
        with self._lock:
            if generation != self._generation:
                return [np.zeros(0, dtype=np.int64) if nm else None for nm in names]
            known = self._shown
            if len(known) > _SHOWN_MAX:
                known.clear()
            for nm in filter(None, names):
                if nm not in known:
                    known[nm] = np.array(self._id_list(frozenset(content_terms(nm))), dtype=np.int64)
            return [known[nm] if nm else None for nm in names]

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


_FACTS = TextFactsCache()


def facts_cache() -> TextFactsCache:
    """The process-wide :class:`TextFactsCache` (100,000 texts) that :func:`text_facts` reads through."""
    return _FACTS


def text_facts(texts: Sequence[str]) -> list[TextFacts]:
    """The :class:`TextFacts` of each text, through the process-wide cache."""
    return _FACTS.get_many(texts)
