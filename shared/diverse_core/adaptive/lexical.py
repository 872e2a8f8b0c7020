"""Which words of the question each candidate text contains (for the text-aware selector).

A judge reading the sets would check whether they mention what the question asks
about. :func:`text_view` reduces that to three boolean matrices built once per query:
for every candidate, which of the question's content words it contains, which of the
question's names (capitalised words and numbers) it contains, and which other names
it mentions (names two picks share hint at the bridge of a multi-hop question).
Tokenising is a plain regular expression with a small stop-word list, so it works
on any language written in Latin script and needs no model. The set-level features
built on these matrices are array operations over the ``(L, k)`` sets.

Example:
    >>> v = text_view("Who directed Alien?", ["Alien was directed by Ridley Scott.", "A cat."])
    >>> v.terms, v.names
    (('alien', 'directed'), ('alien',))
    >>> v.term_hits.tolist()
    [[True, True], [False, False]]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["STOPWORDS", "TextView", "content_terms", "name_terms", "text_view"]

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


def _terms_and_names(text: str) -> tuple[set[str], set[str]]:
    """``(content_terms(text), name_terms(text))`` from one pass of the tokenizer."""
    words = _WORD.findall(text)
    lower = [w.lower() for w in words]
    terms = {w for w in lower if len(w) > 1 and w not in STOPWORDS}
    names = {low for w, low in zip(words, lower, strict=True) if (w[0].isupper() or w[0].isdigit()) and low not in STOPWORDS}
    return terms, names


@dataclass(frozen=True)
class TextView:
    """The lexical view of one query and its candidates.

    Attributes:
        terms: the question's content words, sorted.
        names: the question's names (capitalised words but the first, numbers), sorted.
        term_hits: (n, len(terms)) whether each candidate contains each term.
        name_hits: (n, len(names)) whether each candidate contains each name.
        other_names: (n, V) whether each candidate mentions each of the V names that
            are not question terms (V >= 1; an all-false column when there are none).
    """

    terms: tuple[str, ...]
    names: tuple[str, ...]
    term_hits: NDArray[np.bool_]
    name_hits: NDArray[np.bool_]
    other_names: NDArray[np.bool_]


def _hits(words: Sequence[str], bags: Sequence[set[str]]) -> NDArray[np.bool_]:
    return np.array([[w in bag for w in words] for bag in bags], dtype=bool).reshape(len(bags), len(words))


def text_view(question: str, texts: Sequence[str]) -> TextView:
    """The :class:`TextView` of ``question`` and its candidate ``texts``."""
    terms = tuple(sorted(content_terms(question)))
    names = tuple(sorted(name_terms(question, skip_first=True)))
    parsed = [_terms_and_names(t) for t in texts]
    bags = [bag for bag, _ in parsed]
    asked = set(terms)
    others = [found - asked for _, found in parsed]
    vocab = sorted(set().union(*others)) if others else []
    column = {w: i for i, w in enumerate(vocab)}
    other = np.zeros((len(texts), max(len(vocab), 1)), dtype=bool)
    for row, found in enumerate(others):
        other[row, [column[w] for w in found]] = True
    return TextView(terms, names, _hits(terms, bags), _hits(names, bags), other)
