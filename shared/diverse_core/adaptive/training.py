"""Training the selector's variants from questions with known gold passages.

:func:`query_example` turns one training question into a :class:`QueryExample`
(its λ sets, their gold recall, and every feature the variants need);
:func:`fit_variants` fits, for each variant, the gold model and then the set scorer.
The set scorer is trained on *cross-fitted* gold probabilities: the probabilities of
the questions of fold ``f`` come from a gold model trained on the other folds (the
folds are the scorer's own cross-validation folds, question ``i`` in fold
``i mod folds``), so the scorer learns how far to trust probabilities on questions
the gold model has not seen. Everything is deterministic.

Example:
    >>> import numpy as np
    >>> from diverse_core.validation import prepare_inputs
    >>> rng = np.random.default_rng(0)
    >>> prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(20, 8)), 4, None)
    >>> groups = np.where(np.arange(20) < 3, np.arange(20), -1)
    >>> ex = query_example(prep, groups, (0.5, 1.0))
    >>> ex.labels.shape, ex.text is None
    ((2,), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from ..methods.gmmr import gmmr_sweep
from ..text.view import TextView, text_view
from ..trained.candidates import candidate_features
from ..trained.gold import GoldModel, coverage_labels, fit_gold_model
from ..trained.scale import PoolScale
from ..validation import PreparedInputs, check_values
from .features import set_features
from .model import DEFAULT_ALPHAS, fit_set_scorer
from .variant import (
    SelectorVariant,
    candidate_feature_names,
    variant_feature_names,
    variant_features,
)

__all__ = [
    "QueryExample",
    "query_example",
    "fit_variants",
    "cross_fitted_probabilities",
    "lambda_sets",
]

FloatArray = NDArray[np.float64]


def lambda_sets(prep: PreparedInputs, lambdas: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR's set for every ``lambda_mult`` of the grid (one batched sweep): (L, k) picks and scores."""
    grid = check_values(lambdas, "lambdas")
    picks, scores = gmmr_sweep(prep, grid)
    return np.asarray(picks, dtype=np.int64), np.asarray(scores, dtype=np.float64)


@dataclass(frozen=True)
class QueryExample:
    """One training question, ready for :func:`fit_variants`.

    Attributes:
        sets: gMMR's set per λ, shape (L, k).
        labels: gold recall of each set, shape (L,).
        is_gold: whether each candidate belongs to a gold passage, shape (n,).
        base: :func:`~diverse_core.adaptive.features.set_features`, shape (L, F0).
        relevance: candidate relevance, shape (n,), on the pool's common scale
            (:class:`~diverse_core.trained.scale.PoolScale`).
        sim: candidate cosines, shape (n, n), on the same scale.
        embedding: embedding-only candidate features, shape (n, Fe).
        text: text-aware candidate features, shape (n, Ft), or None without texts.
        view: the question's text view, or None.
    """

    sets: NDArray[np.int64]
    labels: FloatArray
    is_gold: NDArray[np.bool_]
    base: FloatArray
    relevance: FloatArray
    sim: FloatArray
    embedding: FloatArray
    text: FloatArray | None
    view: TextView | None


def query_example(
    prep: PreparedInputs,
    gold_groups: ArrayLike,
    lambdas: ArrayLike,
    *,
    question: str | None = None,
    texts: Sequence[str] | None = None,
    n_gold: int | None = None,
) -> QueryExample:
    """The :class:`QueryExample` of one prepared question (texts optional)."""
    lam = np.asarray(lambdas, dtype=np.float64)
    groups = np.asarray(gold_groups).reshape(-1)
    if groups.shape[0] != prep.n:
        raise DimensionMismatchError(
            f"gold_groups must give one id per candidate; got {groups.shape[0]} for {prep.n} candidates"
        )
    sets, _ = lambda_sets(prep, lam)
    unit, rel = prep.candidates, prep.relevance
    view = text_view(question, texts) if question is not None and texts is not None else None
    scale = PoolScale.of_pool(unit, rel)  # as the selector reads the pool
    return QueryExample(
        sets=sets,
        labels=coverage_labels(sets, groups, n_gold),
        is_gold=groups >= 0,
        base=set_features(lam, sets, unit, rel, scale=scale),
        relevance=scale.relevance(np.asarray(rel, dtype=np.float64)),
        sim=scale.similarity(np.asarray(unit @ unit.T, dtype=np.float64)),
        embedding=candidate_features(unit, rel, prep.k, scale=scale),
        text=None if view is None else candidate_features(unit, rel, prep.k, view, scale),
        view=view,
    )


def _candidate_rows(examples: Sequence[QueryExample], name: str) -> list[FloatArray]:
    rows = [ex.text if name == "text" else ex.embedding for ex in examples]
    if any(r is None for r in rows):
        raise InvalidParameterError("the text variant needs every training question's text and candidate texts")
    return [r for r in rows if r is not None]


def cross_fitted_probabilities(
    rows: Sequence[FloatArray],
    gold: Sequence[FloatArray],
    feature_names: tuple[str, ...],
    *,
    folds: int = 5,
    l2: float = 1.0,
) -> tuple[list[FloatArray], GoldModel]:
    """Out-of-fold gold probabilities per question, and the gold model fitted on all of them.

    Question ``i`` is in fold ``i mod folds``; its probabilities come from a model trained
    on the other folds' candidate rows.
    """
    fold = np.arange(len(rows)) % folds
    probs: list[FloatArray] = [np.empty(0)] * len(rows)
    for f in range(folds):
        train = np.flatnonzero(fold != f)
        model = fit_gold_model(np.concatenate([rows[i] for i in train.tolist()]),
                               np.concatenate([gold[i] for i in train.tolist()]),
                               feature_names=feature_names, l2=l2)
        for i in np.flatnonzero(fold == f).tolist():
            probs[i] = model.probabilities(rows[i])
    full = fit_gold_model(np.concatenate(list(rows)), np.concatenate(list(gold)), feature_names=feature_names, l2=l2)
    return probs, full


def fit_variants(
    examples: Sequence[QueryExample],
    lambdas: ArrayLike,
    *,
    variants: Sequence[str] = ("text", "embedding"),
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    folds: int = 5,
    l2: float = 1.0,
    info: dict[str, Any] | None = None,
) -> dict[str, SelectorVariant]:
    """Fit each of ``variants`` on ``examples`` (see the module docstring)."""
    if len(examples) < max(2, folds):
        raise InvalidParameterError(f"need at least {max(2, folds)} training questions; got {len(examples)}")
    lam = np.asarray(lambdas, dtype=np.float64)
    gold = [ex.is_gold.astype(np.float64) for ex in examples]
    labels = np.stack([ex.labels for ex in examples])
    out: dict[str, SelectorVariant] = {}
    for name in variants:
        probs, full = cross_fitted_probabilities(
            _candidate_rows(examples, name), gold, candidate_feature_names(name), folds=folds, l2=l2
        )
        x = np.stack([
            variant_features(ex.base, lam, ex.sets, ex.relevance, ex.sim, p, ex.view if name == "text" else None)
            for ex, p in zip(examples, probs, strict=True)
        ])
        scorer = fit_set_scorer(x, labels, alphas=alphas, folds=folds, feature_names=variant_feature_names(name),
                                info={"variant": name, **(info or {})})
        out[name] = SelectorVariant(name, full, scorer)
    return out
