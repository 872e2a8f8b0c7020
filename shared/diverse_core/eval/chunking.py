"""Sentence splitting and sliding sentence windows for the ``chunks`` protocol."""

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


def sentence_windows(sentences: Sequence[str], size: int = 2, stride: int = 1) -> list[str]:
    """Windows of ``size`` consecutive sentences every ``stride`` sentences.

    A passage shorter than ``size`` gives one window holding all its sentences;
    the last window always ends at the last sentence.

    Args:
        sentences: the passage's sentences (blank ones are dropped).
        size: sentences per window (>= 1).
        stride: step between window starts (>= 1).

    Example:
        >>> sentence_windows(["A.", "B.", "C."])
        ['A. B.', 'B. C.']
        >>> sentence_windows(["A."])
        ['A.']
    """
    if size < 1:
        raise ValueError(f"size must be >= 1; got size={size!r}")
    if stride < 1:
        raise ValueError(f"stride must be >= 1; got stride={stride!r}")
    sents = [s.strip() for s in sentences if s.strip()]
    if not sents:
        return []
    if len(sents) <= size:
        return [" ".join(sents)]
    starts = list(range(0, len(sents) - size + 1, stride))
    if starts[-1] + size < len(sents):
        starts.append(len(sents) - size)
    return [" ".join(sents[i : i + size]) for i in starts]
