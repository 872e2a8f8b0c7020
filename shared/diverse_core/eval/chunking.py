"""Sentence splitting and the two-sentence windows of the ``chunks`` protocol."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["split_sentences", "sentence_windows"]

# A sentence ends at . ! or ? (optionally followed by a closing quote/bracket) when
# whitespace and an upper-case letter, digit, quote or bracket follow.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences with a simple regular expression.

    Example:
        >>> split_sentences("He left. She stayed! Why? ok then")
        ['He left.', 'She stayed!', 'Why? ok then']
    """
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip())]
    return [p for p in parts if p]


def sentence_windows(sentences: Sequence[str]) -> list[str]:
    """Every window of two consecutive sentences (blank ones dropped); one window for a single sentence.

    Example:
        >>> sentence_windows(["A.", "B.", "C."])
        ['A. B.', 'B. C.']
        >>> sentence_windows(["A."])
        ['A.']
    """
    sents = [s.strip() for s in sentences if s.strip()]
    if len(sents) <= 2:
        return [" ".join(sents)] if sents else []
    return [f"{a} {b}" for a, b in zip(sents, sents[1:], strict=False)]
