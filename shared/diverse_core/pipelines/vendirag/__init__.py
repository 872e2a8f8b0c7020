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

from .judging import Judgement, read_judgement
from .pipeline import VendiRAG
from .prompts import JUDGE_KEYS, VendiPrompts, format_chunks, read_rewrite
from .result import IterationRecord, VendiRAGResult
from .s_update import (
    RELATIVE_BETA,
    RELATIVE_EPSILON,
    S_UPDATES,
    fixed_rule,
    next_s,
    paper_rule,
    relative_rule,
)

__all__ = [
    "VendiRAG",
    "VendiRAGResult",
    "IterationRecord",
    "VendiPrompts",
    "Judgement",
    "read_judgement",
    "read_rewrite",
    "format_chunks",
    "JUDGE_KEYS",
    "S_UPDATES",
    "RELATIVE_BETA",
    "RELATIVE_EPSILON",
    "paper_rule",
    "relative_rule",
    "fixed_rule",
    "next_s",
]
