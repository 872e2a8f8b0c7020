"""LLM pipelines on one contract, side by side.

- :mod:`~diverse_core.pipelines.contract`: :class:`CandidateSource` (what a pipeline searches),
  :class:`Candidates`, :class:`PipelineResult` / :class:`ChosenDocument` / :class:`TraceEvent` /
  :class:`PipelineCost` (what every pipeline returns).
- :class:`Pipeline`: the base class (``run``/``arun``); :class:`LLMRoles` / :class:`RunContext`:
  per-role models with one retry/timeout policy, the trace and the cost meter.
- :mod:`~diverse_core.pipelines.judge`: the shared judge-output parser.
- :class:`InMemorySource` / :class:`PoolSource`: the core's candidate sources.
- The pipelines (:func:`available_pipelines` names them):

  - ``dfrag``, :mod:`~diverse_core.pipelines.dfrag`: DF-RAG (an LLM judge picks gMMR's λ per query).
  - ``diva``, :mod:`~diverse_core.pipelines.diva`: DIVA (ambiguous questions: interpret,
    retrieve per reading, verify, adapt).
  - ``vendirag``, :mod:`~diverse_core.pipelines.vendirag`: Vendi-RAG (the iterative VRS /
    judge / rewrite loop).
  - ``drrag``, :mod:`~diverse_core.pipelines.drrag`: DR-RAG (query-document concatenation and
    a pair classifier; one LLM call).

Example:
    >>> from diverse_core.pipelines import InMemorySource, PipelineResult
    >>> src = InMemorySource(["a b", "c"], embedder=lambda ts: [[t.count("a"), 1.0] for t in ts])
    >>> src.search("a", k=1).texts
    ('a b',)
"""

from __future__ import annotations

from .base import Pipeline, run_sync
from .contract import (
    Candidates,
    CandidateSource,
    ChosenDocument,
    PipelineCost,
    PipelineResult,
    TraceEvent,
)
from .registry import available_pipelines, get_pipeline, register_pipeline
from .roles import LLMRoles, RunContext
from .sources import InMemorySource, PoolSource

__all__ = [
    "Pipeline",
    "run_sync",
    "Candidates",
    "CandidateSource",
    "ChosenDocument",
    "PipelineCost",
    "PipelineResult",
    "TraceEvent",
    "LLMRoles",
    "RunContext",
    "InMemorySource",
    "PoolSource",
    "register_pipeline",
    "get_pipeline",
    "available_pipelines",
]
