"""The Oracle (Khan et al. 2026, Sec. 3.3): the DF-RAG sweep scored by ground truth.

It uses the same λ grid, the same gMMR sets (identical sets scored once) and the same
tie gate as the pipeline, but a caller-supplied ``score_fn`` replaces the LLM
Evaluator - e.g. recall of the gold chunks, or the answer F1 of a generator run on
each set. It is an upper bound on what per-query λ selection can reach.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from numpy.typing import ArrayLike

from ...answer_metrics import f1_score, normalize_answer
from ...tuning import argmax_upper_median
from .candidates import DEFAULT_LAMBDAS, check_lambdas, sweep_candidate_sets
from .result import CandidateSet, OracleResult

__all__ = ["oracle_select", "gold_recall_scorer", "answer_f1", "normalize_answer"]

ScoreFn = Callable[[tuple[int, ...], tuple[str, ...]], float]


def answer_f1(prediction: str, golds: str | Sequence[str]) -> float:
    """Token-level F1 against the best-matching gold answer (:func:`diverse_core.answer_metrics.f1_score`).

    Example:
        >>> answer_f1("The Eiffel Tower", ["Eiffel Tower"])
        1.0
    """
    return f1_score(prediction, golds)


def gold_recall_scorer(gold: Collection[int]) -> ScoreFn:
    """A ``score_fn`` giving the fraction of ``gold`` chunk indices in the set.

    Example:
        >>> gold_recall_scorer({1, 4})((4, 2, 0), ("a", "b", "c"))
        0.5
    """
    gold_set = {int(i) for i in gold}
    if not gold_set:
        raise ValueError("gold must name at least one chunk index")

    def score(indices: tuple[int, ...], texts: tuple[str, ...]) -> float:
        return len(gold_set.intersection(indices)) / len(gold_set)

    return score


def oracle_select(
    texts: Sequence[str],
    query_embedding: ArrayLike,
    candidate_embeddings: ArrayLike,
    score_fn: ScoreFn,
    *,
    lambdas: ArrayLike = DEFAULT_LAMBDAS,
    k: int = 5,
    fetch_k: int | None = None,
) -> OracleResult:
    """Choose λ per query by ground truth, with DF-RAG's sweep and tie gate.

    Args:
        texts: candidate chunk texts, one per row of ``candidate_embeddings``.
        query_embedding, candidate_embeddings: shapes (d,) and (n, d).
        score_fn: ``score_fn(indices, texts) -> float`` for one chunk set (pick order),
            higher is better; called once per distinct set.
        lambdas, k, fetch_k: as in :class:`~diverse_core.dfrag.DFRAG`.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> res = oracle_select([str(i) for i in range(10)], rng.normal(size=4),
        ...                     rng.normal(size=(10, 4)), gold_recall_scorer({3}), k=3)
        >>> 0.1 <= res.lambda_star <= 1.0
        True
    """
    grid = check_lambdas(lambdas)
    if len(texts) != len(candidate_embeddings):  # type: ignore[arg-type]
        raise ValueError(
            f"texts has {len(texts)} entries but candidate_embeddings has "
            f"{len(candidate_embeddings)} rows"  # type: ignore[arg-type]
        )
    groups = sweep_candidate_sets(query_embedding, candidate_embeddings, k, grid, fetch_k)
    sets: dict[tuple[int, ...], CandidateSet] = {}
    for key, lams in groups.groups.items():
        order = groups.order[key]
        value = float(score_fn(order, tuple(texts[i] for i in order)))
        sets[key] = CandidateSet(lams, order, value)
    scores = [float(sets[key].score or 0.0) for key in groups.keys]
    lam_star = argmax_upper_median(grid, scores)
    best = max(scores)
    chosen = tuple(int(i) for i in groups.indices[grid.index(lam_star)])
    return OracleResult(
        lambda_star=float(lam_star),
        indices=chosen,
        texts=tuple(texts[i] for i in chosen),
        lambdas=grid,
        lambda_scores=dict(zip(grid, scores, strict=True)),
        candidate_sets=tuple(sets.values()),
        tied_lambdas=tuple(lam for lam, s in zip(grid, scores, strict=True) if s == best),
        best_score=best,
    )
