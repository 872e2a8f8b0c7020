"""The text stack of the text-aware selectors: tokenizer, per-text cache, the lexical view of a query.

Three modules, each below the next: :mod:`~diverse_core.text.tokens` (content words, names, the
``"title: body"`` convention), :mod:`~diverse_core.text.cache` (what was read of each text, kept
once per process, its words numbered) and :mod:`~diverse_core.text.view` (which of a question's
words each candidate holds). Nothing here reads a model or an embedding.

Example:
    >>> from diverse_core.text import split_title, text_view
    >>> split_title("Paris: the capital of France.")
    ('Paris', 'the capital of France.')
    >>> text_view("Who directed Alien?", ["Alien was directed by Ridley Scott."]).term_hits.tolist()
    [[True, True]]
"""

from __future__ import annotations

from .cache import (
    BODY,
    NAME,
    TERM,
    TITLE,
    TextFacts,
    TextFactsCache,
    facts_cache,
    read_text,
    text_facts,
)
from .tokens import STOPWORDS, content_terms, name_terms, split_title, terms_and_names
from .view import PoolWords, TextView, pool_words, source_inputs, text_view, view_from_facts

__all__ = [
    "BODY",
    "NAME",
    "STOPWORDS",
    "TERM",
    "TITLE",
    "PoolWords",
    "TextFacts",
    "TextFactsCache",
    "TextView",
    "content_terms",
    "facts_cache",
    "name_terms",
    "pool_words",
    "read_text",
    "source_inputs",
    "split_title",
    "terms_and_names",
    "text_facts",
    "text_view",
    "view_from_facts",
]
