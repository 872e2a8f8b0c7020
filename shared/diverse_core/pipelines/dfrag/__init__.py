"""DF-RAG (Khan et al., arXiv:2601.17212): choose gMMR's diversity trade-off λ per query with an LLM.

- :class:`DFRAG` - the pipeline (Planner, λ sweep, Evaluator, tie gate, Generator).
- :func:`oracle_select` - the same sweep scored by ground truth (upper bound).
- :class:`PromptSet` - the prompts; :func:`parse_plan` / :func:`parse_evaluation` - parsers.

Example:
    >>> from diverse_core.dfrag import DFRAG, DEFAULT_LAMBDAS
    >>> DEFAULT_LAMBDAS[0], DEFAULT_LAMBDAS[-1]
    (0.1, 1.0)
"""

from __future__ import annotations

from .candidates import (
    DEFAULT_LAMBDAS,
    CandidateGroups,
    check_lambdas,
    lambdas_for_diversity,
    sweep_candidate_sets,
)
from .oracle import answer_f1, gold_recall_scorer, normalize_answer, oracle_select
from .parsing import EvaluationParse, PlanParse, parse_evaluation, parse_plan
from .pipeline import DFRAG, DFRAG_DIVERSITY, run_sync
from .prompts import PromptSet
from .result import CandidateSet, DFRAGCost, DFRAGResult, OracleResult

__all__ = [
    "DFRAG",
    "DFRAGResult",
    "DFRAGCost",
    "CandidateSet",
    "OracleResult",
    "PromptSet",
    "DEFAULT_LAMBDAS",
    "CandidateGroups",
    "check_lambdas",
    "lambdas_for_diversity",
    "DFRAG_DIVERSITY",
    "sweep_candidate_sets",
    "oracle_select",
    "gold_recall_scorer",
    "answer_f1",
    "normalize_answer",
    "parse_plan",
    "parse_evaluation",
    "PlanParse",
    "EvaluationParse",
    "run_sync",
]
