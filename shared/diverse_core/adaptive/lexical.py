"""Which words of the question each candidate text contains (for the text-aware selector).

A judge reading the sets would check whether they mention what the question asks
about. :func:`text_view` reduces that to three boolean matrices built once per query:
for every candidate, which of the question's content words it contains, which of the
question's names (capitalised words and numbers) it contains, and which other names
it mentions (names two picks share hint at the bridge of a multi-hop question).

The code lives in :mod:`diverse_core.textfeatures` (shared with the learned selector and
DR-RAG); this module keeps the old import path.

Example:
    >>> v = text_view("Who directed Alien?", ["Alien was directed by Ridley Scott.", "A cat."])
    >>> v.terms, v.names
    (('alien', 'directed'), ('alien',))
"""

from __future__ import annotations

from ..textfeatures import STOPWORDS, TextView, content_terms, name_terms, text_view

__all__ = ["STOPWORDS", "TextView", "content_terms", "name_terms", "text_view"]
