"""Vendi-RAG (Rezaei & Dieng, arXiv:2502.11228): :class:`VendiRAG`, its result types, the ``s``
update rules (:mod:`~diverse_core.pipelines.vendirag.s_update`) and the prompts.

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
