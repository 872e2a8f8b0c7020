"""Result types of the DF-RAG pipeline and its Oracle."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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
    def evaluated(self) -> bool:
        """Whether this set was scored."""
        return self.score is not None

    @property
    def failed(self) -> bool:
        """The evaluation call failed, or its reply could not be parsed (scored 0)."""
        return self.error is not None or (self.evaluation is not None and not self.evaluation.parsed)


@dataclass(frozen=True)
class DFRAGCost:
    """What one DF-RAG run cost.

    Attributes:
        llm_calls: successful LLM calls (planner + evaluator + generator).
        planner_calls / evaluator_calls / generator_calls: per stage.
        failed_calls: calls that raised after their retries.
        retries: extra attempts after transient errors.
        prompt_tokens / completion_tokens: summed where the backend reports them.
        llm_seconds: summed latency of the successful calls (exceeds ``wall_time``
            when calls overlap).
        wall_time: seconds from start to result.
    """

    llm_calls: int = 0
    planner_calls: int = 0
    evaluator_calls: int = 0
    generator_calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0
    wall_time: float = 0.0


@dataclass(frozen=True)
class DFRAGResult:
    """Everything one DF-RAG run decided.

    Attributes:
        question: the query.
        answer: the Generator's answer (``None`` when generation was skipped).
        lambda_star: the chosen λ (Eq. 5 plus the upper-median tie gate).
        indices: chosen chunk indices (into the texts given to the pipeline), pick order.
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
        cost: a :class:`DFRAGCost`.
        raw_plan: the Planner's raw reply.

    Example:
        >>> r = DFRAGResult(question="q", answer="a", lambda_star=0.5, indices=(0,), texts=("t",),
        ...                 plan=("s",), plan_parsed=True, lambdas=(0.5,), lambda_scores={0.5: 5.0})
        >>> r.to_dict()["lambda_star"]
        0.5
    """

    question: str
    answer: str | None
    lambda_star: float
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
    cost: DFRAGCost = field(default_factory=DFRAGCost)
    raw_plan: str = ""

    @property
    def n_distinct_sets(self) -> int:
        """Number of distinct chunk sets over the λ grid."""
        return len(self.candidate_sets)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (λ keys become strings)."""
        out = asdict(self)
        out["lambda_scores"] = {f"{k:g}": v for k, v in self.lambda_scores.items()}
        return out


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
