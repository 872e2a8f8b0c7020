"""Result types of the Vendi-RAG loop: one record per iteration, and the run's result."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..contract import PipelineResult

__all__ = ["IterationRecord", "VendiRAGResult"]


@dataclass(frozen=True)
class IterationRecord:
    """One pass through the loop.

    Attributes:
        index: the iteration number, from 1.
        s: the diversity weight VRS used.
        query: the query searched (the question in iteration 1, then the rewrites).
        chunk_ids / texts: the chosen chunks (pick order).
        positions: their positions in the source's collection (``None`` when it has none).
        vendi_score: Vendi score of the chosen set (1 .. k, cosine kernel).
        mean_similarity: mean pairwise cosine similarity of the chosen set (``None`` for one chunk).
        mean_relevance: mean cosine similarity of the chosen chunks to ``query``.
        reasoning: the reasoning call's reply (``None`` when it failed).
        answer: the answer call's reply (``None`` when it failed).
        scores: the judge's three ratings after clipping (empty when not judged or unreadable).
        quality: ``Q_i = mean(scores) / 10`` (``None`` when not judged or unreadable).
        judge_calls: judge calls made (0 without a judge, 2 after an unreadable first reply).
        s_next: the weight for the next iteration (``None`` when the loop ended here).
        next_query: the query for the next iteration (``None`` when the loop ended here).
        calls / failed_calls / prompt_tokens / completion_tokens: this iteration's LLM
            accounting (successful calls, calls that failed after their retries, tokens).
        failures: what went wrong (unreadable judge replies, failed calls, ...).
        notes: what was flagged but used (clipped ratings, fewer unseen chunks than k, ...).
    """

    index: int
    s: float
    query: str
    chunk_ids: tuple[str, ...]
    texts: tuple[str, ...]
    positions: tuple[int, ...] | None
    vendi_score: float
    mean_similarity: float | None
    mean_relevance: float
    reasoning: str | None = None
    answer: str | None = None
    scores: dict[str, float] | None = None
    quality: float | None = None
    judge_calls: int = 0
    s_next: float | None = None
    next_query: str | None = None
    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class VendiRAGResult(PipelineResult):
    """Everything one Vendi-RAG run did (the shared :class:`PipelineResult` plus the loop).

    ``answer`` and ``documents`` come from the final iteration (``final_iteration``), chosen
    by the ``final`` rule; with ``return_documents="union"`` the documents are every chunk the
    loop used, in order of first use. ``answer`` is ``None`` for retrieval-only runs
    (``generate=False``), though the loop still wrote and judged answers (see ``iterations``).

    Attributes:
        iterations: one :class:`IterationRecord` per iteration run.
        final_iteration: the number (from 1) of the iteration whose answer and chunks are returned.
        stop_reason: ``"threshold"`` (Q_i >= τ), ``"max_iterations"`` or ``"llm_error"``
            (a reasoning/answer call failed after its retries; see ``warnings``).
        quality: the final iteration's quality (``None`` when it was not judged).
        s_update / final / threshold / use_judge / return_documents: the options of the run.

    Example:
        >>> r = VendiRAGResult(question="q", answer="a", iterations=(), final_iteration=1)
        >>> r.pipeline, r.s_trajectory
        ('vendirag', ())
    """

    pipeline: str = "vendirag"
    iterations: tuple[IterationRecord, ...]
    final_iteration: int
    stop_reason: str = "max_iterations"
    quality: float | None = None
    s_update: str = "paper"
    final: str = "best"
    threshold: float = 0.85
    use_judge: bool = True
    return_documents: str = "final"

    @property
    def s_trajectory(self) -> tuple[float, ...]:
        """``s`` of every iteration run."""
        return tuple(it.s for it in self.iterations)

    @property
    def quality_trajectory(self) -> tuple[float | None, ...]:
        """``Q_i`` of every iteration run (``None`` where not judged)."""
        return tuple(it.quality for it in self.iterations)

    @property
    def queries(self) -> tuple[str, ...]:
        """The query of every iteration run."""
        return tuple(it.query for it in self.iterations)

    @property
    def n_iterations(self) -> int:
        """Iterations run."""
        return len(self.iterations)

    @property
    def stopped_early(self) -> bool:
        """Whether the judge's quality reached the threshold."""
        return self.stop_reason == "threshold"

    def summary(self) -> dict[str, Any]:
        """What the faces report of a run besides the documents: every iteration (as a dict),
        the final one, the ``s`` and quality trajectories, the final quality and why it stopped."""
        return {
            "iterations": [asdict(it) for it in self.iterations],
            "final_iteration": self.final_iteration,
            "s_trajectory": list(self.s_trajectory),
            "quality_trajectory": list(self.quality_trajectory),
            "quality": self.quality,
            "stop_reason": self.stop_reason,
        }
