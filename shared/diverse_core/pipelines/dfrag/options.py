"""DF-RAG's declared options (for both faces and the harness) and its reading of ``diversity``."""

from __future__ import annotations

from typing import Any

from ..diversity import PipelineDiversity
from ..options import Option
from .candidates import DEFAULT_LAMBDAS, lambdas_for_diversity

__all__ = ["DFRAG_OPTIONS", "DFRAG_DIVERSITY"]


def _float_tuple(text: str) -> tuple[float, ...]:
    """The harness's ``@lambdas=0.2,0.5,0.8``."""
    return tuple(float(v) for v in text.split(",") if v.strip())


#: How DF-RAG reads ``diversity``: how far toward diversity the λ grid the Evaluator chooses
#: from reaches (0: λ = 1 only, relevance; 1: the whole default grid).
DFRAG_DIVERSITY = PipelineDiversity(
    "lambdas", lambdas_for_diversity, "lambdas = the values of 0.1..1.0 that are >= 1 - diversity",
    default=DEFAULT_LAMBDAS,
)

#: DF-RAG's own options (see :class:`DFRAG`).
DFRAG_OPTIONS: tuple[Option, ...] = (
    Option("lambdas", None, "the gMMR lambda grid the Evaluator chooses from (None: 0.1..1.0, or "
           "as diversity says)", tuple[float, ...] | None, bounds="each in [0, 1]", parse=_float_tuple),
    Option("sampling", "uniform", "every lambda ('uniform') or a binary search over them", str,
           choices=("uniform", "binary")),
    Option("incremental_context", False, "the Evaluator sees each set's new chunks only", bool),
    Option("prompts", None, "a PromptSet (None: the shipped prompts)", Any, harness=False),
    Option("score_from", "total", "the Evaluator's total or the sum of its step scores", str,
           choices=("total", "steps")),
    Option("on_evaluator_error", "score_zero", "an unreadable Evaluator reply scores 0 or raises", str,
           choices=("score_zero", "raise")),
    Option("evaluator", "llm", "who chooses lambda: the LLM Evaluator or the trained adaptive scorer", str,
           choices=("llm", "adaptive")),
    Option("selector", None, "the adaptive scorer for evaluator='adaptive' (None: the shipped one)", Any,
           harness=False),
    Option("fetch_k", None, "candidates per search (the source's default when None)", int | None,
           bounds=">= k", faces=False),
    DFRAG_DIVERSITY.option(),
)
