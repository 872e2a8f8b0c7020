"""The tokenizer the text features share: content words, names and the ``"title: body"`` convention.

A regular expression finds the words; content words are the lower-cased ones that are not
stop words, names the capitalised words and numbers.

Example:
    >>> sorted(content_terms("Who directed Alien?")), split_title("Paris: the capital.")
    (['alien', 'directed'], ('Paris', 'the capital.'))
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "content_terms", "name_terms", "split_title", "terms_and_names"]

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
