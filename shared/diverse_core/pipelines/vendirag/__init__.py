"""Vendi-RAG (Rezaei & Dieng, arXiv:2502.11228): an iterative loop that retrieves with the Vendi Retrieval Score,
reasons, answers, has an LLM judge score the answer and moves the diversity weight ``s`` by it.

- :class:`VendiRAG` - the pipeline; :class:`VendiRAGResult` / :class:`IterationRecord` - its result.
- :mod:`~diverse_core.pipelines.vendirag.s_update` - the ``s`` update rules (pure functions).
- :class:`VendiPrompts` - the prompts; :func:`read_judgement` - the judge's ratings.

Example:
    >>> from diverse_core.pipelines.vendirag import next_s
    >>> [round(next_s("paper", 0.8, q, q), 2) for q in (0.2, 0.5, 0.8)]
    [0.8, 0.5, 0.2]
"""

from __future__ import annotations

# Whole modules are re-exported through their own __all__ (one list of their public names).
from . import pipeline, result, s_update
from .judging import Judgement, read_judgement
from .pipeline import *  # noqa: F403
from .prompts import JUDGE_KEYS, VendiPrompts, format_chunks, read_rewrite
from .result import *  # noqa: F403
from .s_update import *  # noqa: F403

__all__ = [
    *pipeline.__all__,
    *result.__all__,
    "VendiPrompts",
    "Judgement",
    "read_judgement",
    "read_rewrite",
    "format_chunks",
    "JUDGE_KEYS",
    *s_update.__all__,
]
