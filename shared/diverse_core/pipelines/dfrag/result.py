"""Result types of the DF-RAG pipeline and its Oracle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contract import PipelineCost, PipelineResult
from .parsing import EvaluationParse

__all__ = ["CandidateSet", "DFRAGCost", "DFRAGResult", "OracleResult"]


@dataclass(frozen=True)
class CandidateSet:
    """One distinct chunk set of the λ sweep and its evaluation.

    Attributes:
        lambdas: every grid value whose gMMR selection is this set (as a set of chunks).
        indices: chunk indices in the pick order of the smallest of those λ.
        score: the Evaluator's Retrieval Support (or the Oracle's score); ``None`` when
            the set was never evaluated (binary-search sampling skips some).
        evaluation: the parsed Evaluator reply (``None`` for the Oracle / not evaluated).
        raw: the Evaluator's raw reply.
        error: the LLM error message when the evaluation call failed after its retries.
    """

    lambdas: tuple[float, ...]
    indices: tuple[int, ...]
    score: float | None = None
    evaluation: EvaluationParse | None = None
    raw: str | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        """The evaluation call failed, or its reply could not be parsed (scored 0)."""
        return self.error is not None or (self.evaluation is not None and not self.evaluation.parsed)


#: DF-RAG's cost record is the shared one: ``calls`` per role (planner, evaluator, generator);
#: ``cost.planner_calls`` etc. read it.
DFRAGCost = PipelineCost


@dataclass(frozen=True, kw_only=True)
class DFRAGResult(PipelineResult):
    """Everything one DF-RAG run decided (the shared :class:`PipelineResult` plus DF-RAG's fields).

    Attributes:
        lambda_star: the chosen λ (Eq. 5 plus the upper-median tie gate).
        lambda_source: ``"evaluator"`` when λ* is the Evaluator's choice, ``"fallback"`` when
            every evaluation failed or was unparseable (λ* is then the grid's upper median,
            and ``warnings`` says so), ``"adaptive"`` with the LLM-free evaluator (then
            ``lambda_scores`` are the trained scorer's predictions and ``plan`` is empty).
        indices: chosen chunk indices, pick order: positions in the pool given to
            :meth:`DFRAG.run` (or in the candidates the source returned).
        texts: the chosen chunks' texts, same order.
        plan: the Planner's steps.
        plan_parsed: ``False`` when the Planner reply had no list (the question was used).
        lambdas: the λ grid.
        lambda_scores: score per λ (``None`` where binary search did not evaluate it).
        candidate_sets: the distinct chunk sets, in order of first appearance on the grid.
        tied_lambdas: the λ values sharing the top score (λ* is their upper median).
        parse_failures: λ values whose evaluation failed to parse or errored (scored 0).
        short_answer: the Evaluator's short answer for the chosen set, if it gave one.
        sampling: ``"uniform"`` or ``"binary"``.
        incremental_context: whether the plan and short answer went to the Generator.
        raw_plan: the Planner's raw reply.

    Example:
        >>> r = DFRAGResult(question="q", answer="a", lambda_star=0.5, indices=(0,), texts=("t",),
        ...                 plan=("s",), plan_parsed=True, lambdas=(0.5,), lambda_scores={0.5: 5.0})
        >>> r.to_dict()["lambda_star"]
        0.5
    """

    pipeline: str = "dfrag"
    lambda_star: float
    lambda_source: str = "evaluator"
    indices: tuple[int, ...]
    texts: tuple[str, ...]
    plan: tuple[str, ...]
    plan_parsed: bool
    lambdas: tuple[float, ...]
    lambda_scores: dict[float, float | None]
    candidate_sets: tuple[CandidateSet, ...] = ()
    tied_lambdas: tuple[float, ...] = ()
    parse_failures: tuple[float, ...] = ()
    short_answer: str | None = None
    sampling: str = "uniform"
    incremental_context: bool = False
    raw_plan: str = ""

    @property
    def n_distinct_sets(self) -> int:
        """Number of distinct chunk sets over the λ grid."""
        return len(self.candidate_sets)

    def summary(self) -> dict[str, Any]:
        """What the faces and the harness report of a run besides the documents."""
        return {
            "lambda": self.lambda_star,
            "lambda_source": self.lambda_source,
            "scores": {f"{lam:g}": score for lam, score in self.lambda_scores.items()},
            "tied_lambdas": list(self.tied_lambdas),
            "plan": list(self.plan),
            "n_distinct_sets": self.n_distinct_sets,
            "parse_failures": list(self.parse_failures),
        }


@dataclass(frozen=True)
class OracleResult:
    """The Oracle's choice: the same sweep and tie gate, scored by ground truth.

    Attributes:
        lambda_star: best λ by the ground-truth score (upper median among ties).
        indices / texts: the chosen set (pick order).
        lambdas: the λ grid; lambda_scores: score per λ.
        candidate_sets: distinct sets with their scores.
        tied_lambdas: λ values sharing the top score.
        best_score: the top score.
    """

    lambda_star: float
    indices: tuple[int, ...]
    texts: tuple[str, ...]
    lambdas: tuple[float, ...]
    lambda_scores: dict[float, float]
    candidate_sets: tuple[CandidateSet, ...]
    tied_lambdas: tuple[float, ...]
    best_score: float
