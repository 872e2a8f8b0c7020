"""LLM pipelines on one contract (:mod:`~diverse_core.pipelines.contract`): the base class
:class:`Pipeline`, per-role models (:class:`LLMRoles`, :class:`RunContext`), the core's
candidate sources, and the pipelines :func:`available_pipelines` names: ``dfrag`` (DF-RAG),
``diva`` (DIVA), ``vendirag`` (Vendi-RAG) and ``drrag`` (DR-RAG).

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
