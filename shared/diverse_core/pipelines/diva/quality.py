"""How many gold interpretations a generated set covers, by embedding match.

A generated interpretation matches a gold one when their cosine similarity is at least
``threshold``; matching is greedy and one-to-one (the most similar pair first, each
interpretation used once). Recall = matched / gold, precision = matched / generated.
Used to grade generated interpretations against ASQA ``qa_pairs`` or AmbigNQ
``qaPairs`` questions, whatever the LLM behind them.

With ``question_embedding`` the sets are compared on what each interpretation adds to the
question: the component along the (unit) question vector is removed from every row before
the cosine, and rows left with (almost) nothing never match. A disambiguated question is
very close to its ambiguous original in a small sentence embedder (all-MiniLM-L6-v2:
median cosine 0.90 on AmbigNQ dev), so plain matching credits a generator that just
repeats the question; the residual comparison does not. Neither separates paraphrases
from sibling interpretations well with that embedder (``benchmarks/diva_interpretation_match.py``;
figures in ``benchmarks/RESULTS.md``, section DIVA): read the score as a rough signal.

Example:
    >>> import numpy as np
    >>> gold = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> gen = np.array([[0.99, 0.1], [0.98, 0.2]])
    >>> c = interpretation_coverage(gen, gold, threshold=0.9)
    >>> c.matched, c.recall, c.pairs
    (1, 0.5, ((0, 0),))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import DimensionMismatchError, InvalidParameterError
from ...validation import check_unit_interval
from .retrieval import _unit_rows

FloatArray = NDArray[np.float64]

__all__ = ["DEFAULT_MATCH_THRESHOLD", "DEFAULT_PLAIN_MATCH_THRESHOLD", "InterpretationCoverage", "interpretation_coverage"]

#: Residuals shorter than this (unit rows) carry nothing beyond the question.
_MIN_RESIDUAL = 1e-6
#: Default threshold of the residual comparison (``question_embedding`` given), all-MiniLM-L6-v2 scale.
DEFAULT_MATCH_THRESHOLD = 0.5
#: Default threshold of the plain comparison (no ``question_embedding``), all-MiniLM-L6-v2 scale.
DEFAULT_PLAIN_MATCH_THRESHOLD = 0.9


@dataclass(frozen=True)
class InterpretationCoverage:
    """Result of :func:`interpretation_coverage`.

    Attributes:
        matched: number of one-to-one matches.
        n_generated, n_gold: set sizes.
        pairs: ``(generated row, gold row)`` of each match, most similar first.
        similarities: cosine of each matched pair.
    """

    matched: int
    n_generated: int
    n_gold: int
    pairs: tuple[tuple[int, int], ...]
    similarities: tuple[float, ...]

    @property
    def recall(self) -> float:
        """Share of gold interpretations covered."""
        return self.matched / self.n_gold

    @property
    def precision(self) -> float:
        """Share of generated interpretations that match a gold one (0 when none generated)."""
        return self.matched / self.n_generated if self.n_generated else 0.0


def _residual(rows: FloatArray, question: FloatArray) -> FloatArray:
    """Unit rows with the question's direction removed; (near-)zero residuals become zero rows."""
    res = rows - np.outer(rows @ question, question)
    norms = np.linalg.norm(res, axis=1)
    out: FloatArray = np.where(norms[:, None] > _MIN_RESIDUAL, res / np.maximum(norms, 1e-300)[:, None], 0.0)
    return out


def interpretation_coverage(
    generated_embeddings: ArrayLike,
    gold_embeddings: ArrayLike,
    threshold: float | None = None,
    question_embedding: ArrayLike | None = None,
) -> InterpretationCoverage:
    """Greedy one-to-one matching of generated to gold interpretations at ``cosine >= threshold``.

    Args:
        generated_embeddings: shape (m, d); ``m = 0`` (nothing generated) is allowed.
        gold_embeddings: shape (g, d), g >= 1.
        threshold: minimum cosine similarity of a match, in [0, 1]; default
            :data:`DEFAULT_MATCH_THRESHOLD` (0.5) with ``question_embedding``, else
            :data:`DEFAULT_PLAIN_MATCH_THRESHOLD` (0.9).
        question_embedding: the ambiguous question, shape (d,); when given, rows are
            compared on their residuals after removing the question's direction.
    """
    if threshold is None:
        threshold = DEFAULT_MATCH_THRESHOLD if question_embedding is not None else DEFAULT_PLAIN_MATCH_THRESHOLD
    thr = check_unit_interval(threshold, "threshold")
    gold = _unit_rows(gold_embeddings, "gold_embeddings", InvalidParameterError)
    gen_arr = np.asarray(generated_embeddings, dtype=np.float64)
    if gen_arr.size == 0:
        return InterpretationCoverage(0, 0, gold.shape[0], (), ())
    gen = _unit_rows(gen_arr, "generated_embeddings", InvalidParameterError)
    if gen.shape[1] != gold.shape[1]:
        raise DimensionMismatchError(
            f"generated_embeddings have dimension {gen.shape[1]} but gold_embeddings {gold.shape[1]}"
        )
    if question_embedding is not None:
        q = _unit_rows(np.atleast_2d(np.asarray(question_embedding, dtype=np.float64)), "question_embedding",
                       InvalidParameterError)
        if q.shape != (1, gold.shape[1]):
            raise DimensionMismatchError(
                f"question_embedding must have shape ({gold.shape[1]},); got {np.shape(question_embedding)}"
            )
        gen, gold = _residual(gen, q[0]), _residual(gold, q[0])
    sim = gen @ gold.T
    sim[~np.any(gen, axis=1), :] = -1.0  # nothing beyond the question: never a match
    sim[:, ~np.any(gold, axis=1)] = -1.0
    rows, cols = np.nonzero(sim >= thr)
    order = np.lexsort((cols, rows, -sim[rows, cols]))  # most similar first, then row, then column
    used_gen: set[int] = set()
    used_gold: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for r, c in zip(rows[order].tolist(), cols[order].tolist(), strict=True):  # at most m * g pairs
        if r not in used_gen and c not in used_gold:
            used_gen.add(r)
            used_gold.add(c)
            pairs.append((r, c))
    sims = tuple(float(sim[r, c]) for r, c in pairs)
    return InterpretationCoverage(len(pairs), gen.shape[0], gold.shape[0], tuple(pairs), sims)
