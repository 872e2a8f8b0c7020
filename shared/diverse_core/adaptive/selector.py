"""The learned, LLM-free λ selector: gMMR over a λ grid, then the set a trained scorer prefers.

DF-RAG asks an LLM Evaluator which of the gMMR sets (one per ``lambda_mult``) best
supports the question. :class:`AdaptiveSelector` replaces the judge with a small
model trained on questions with known gold passages: it computes every set of the
grid in one batched sweep, describes each set with
:func:`~diverse_core.adaptive.features.set_features` and keeps the one the
:class:`~diverse_core.adaptive.model.SetScorer` scores highest (ties: upper median
of the tied λ, as DF-RAG's gate). The shipped model was trained on the TRAIN splits
of HotpotQA, MuSiQue and 2WikiMultihopQA under the harness's ``chunks`` protocol
(``python -m diverse_core.adaptive.train``); retrain it on your own questions with
:meth:`AdaptiveSelector.fit`.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, cands = rng.normal(size=16), rng.normal(size=(40, 16))
    >>> choice = AdaptiveSelector.default().choose(q, cands, k=5)
    >>> len(choice.indices), 0.0 < choice.lambda_mult <= 1.0
    (5, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from ..methods.gmmr import gmmr_sweep
from ..tuning import argmax_upper_median
from ..validation import PreparedInputs, check_values, prepare_inputs
from .features import FEATURE_NAMES, set_features
from .model import DEFAULT_ALPHAS, SetScorer, fit_set_scorer

__all__ = [
    "AdaptiveChoice",
    "AdaptiveSelector",
    "DEFAULT_LAMBDAS",
    "DEFAULT_MODEL",
    "lambda_sets",
    "query_features",
    "coverage_labels",
]

#: The gMMR grid of the selector (DF-RAG's Oracle grid, 0.1 .. 1.0).
DEFAULT_LAMBDAS: tuple[float, ...] = tuple(round(0.1 * i, 10) for i in range(1, 11))

#: The shipped model (trained on the chunks protocol of the three train sets).
DEFAULT_MODEL = Path(__file__).resolve().parent / "models" / "gmmr_chunks.npz"


@dataclass(frozen=True)
class AdaptiveChoice:
    """What the selector chose for one query.

    Attributes:
        lambda_mult: the chosen gMMR ``lambda_mult``.
        indices: the chosen set, candidate indices in pick order, shape (k,).
        scores: gMMR's objective at each pick of that set, shape (k,).
        lambdas: the grid searched, shape (L,).
        predicted: the scorer's score of every λ's set, shape (L,).
        sets: every λ's set, shape (L, k).
    """

    lambda_mult: float
    indices: NDArray[np.int64]
    scores: NDArray[np.float64]
    lambdas: NDArray[np.float64]
    predicted: NDArray[np.float64]
    sets: NDArray[np.int64]


def lambda_sets(prep: PreparedInputs, lambdas: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR's set for every ``lambda_mult`` of the grid (one batched sweep): (L, k) picks and scores."""
    grid = check_values(lambdas, "lambdas")
    picks, scores = gmmr_sweep(prep, grid)
    return np.asarray(picks, dtype=np.int64), np.asarray(scores, dtype=np.float64)


def query_features(prep: PreparedInputs, lambdas: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """(sets (L, k), gMMR scores (L, k), features (L, F)) of one prepared query."""
    sets, scores = lambda_sets(prep, lambdas)
    feats = set_features(np.asarray(lambdas, dtype=np.float64), sets, prep.candidates, prep.relevance)
    return sets, scores, feats


def coverage_labels(sets: ArrayLike, gold_groups: ArrayLike) -> NDArray[np.float64]:
    """Share of a query's gold groups each set covers (its gold recall), shape (L,).

    Args:
        sets: candidate indices per set, shape (L, k).
        gold_groups: per candidate, the id (>= 0) of the gold passage it belongs to, or
            -1 when it belongs to none, shape (n,). With one candidate per passage this
            is plain gold recall; with chunks it is gold-document coverage.
    """
    idx = np.asarray(sets, dtype=np.int64)
    groups = np.asarray(gold_groups, dtype=np.int64).reshape(-1)
    golds = np.unique(groups[groups >= 0])
    if golds.size == 0:
        return np.zeros(idx.shape[0])
    hit = (groups[idx][:, :, None] == golds[None, None, :]).any(axis=1)  # (L, G)
    return np.asarray(hit.mean(axis=1), dtype=np.float64)


class AdaptiveSelector:
    """Chooses gMMR's ``lambda_mult`` per query with a trained set scorer (no LLM).

    Args:
        scorer: the trained :class:`SetScorer`.
        lambdas: the λ grid it scores (must match what it was trained on).

    Example:
        >>> import numpy as np
        >>> sel = AdaptiveSelector.default()
        >>> rng = np.random.default_rng(1)
        >>> c = sel.choose(rng.normal(size=8), rng.normal(size=(30, 8)), k=4)
        >>> c.sets.shape
        (10, 4)
    """

    def __init__(self, scorer: SetScorer, lambdas: Sequence[float] = DEFAULT_LAMBDAS) -> None:
        if tuple(scorer.feature_names) != FEATURE_NAMES:
            raise InvalidParameterError(
                "the scorer was trained on other features than this version computes; retrain it "
                f"(its features: {len(scorer.feature_names)}, expected {len(FEATURE_NAMES)})"
            )
        self.scorer = scorer
        self.lambdas = check_values(lambdas, "lambdas")

    @classmethod
    def default(cls) -> AdaptiveSelector:
        """The shipped model (loaded once per process)."""
        return _load_cached(str(DEFAULT_MODEL))

    @classmethod
    def load(cls, path: str | Path) -> AdaptiveSelector:
        """A selector from a file written by :meth:`save`."""
        scorer = SetScorer.load(path)
        lambdas = scorer.info.get("lambdas", DEFAULT_LAMBDAS)
        return cls(scorer, lambdas)

    def save(self, path: str | Path) -> Path:
        """Write the model (``.npz``) to ``path``."""
        info = dict(self.scorer.info)
        info["lambdas"] = [float(v) for v in self.lambdas]
        return SetScorer(self.scorer.weights, self.scorer.scale, self.scorer.alpha,
                         self.scorer.feature_names, info).save(path)

    def choose_prepared(self, prep: PreparedInputs) -> AdaptiveChoice:
        """:meth:`choose` on already validated inputs."""
        sets, scores, feats = query_features(prep, self.lambdas)
        predicted = self.scorer.scores(feats)
        lam = argmax_upper_median(self.lambdas, predicted)
        row = int(np.flatnonzero(self.lambdas == lam)[0])
        return AdaptiveChoice(lam, sets[row], scores[row], self.lambdas, predicted, sets)

    def choose(
        self, query: ArrayLike, candidates: ArrayLike, k: int, *, relevance: ArrayLike | None = None
    ) -> AdaptiveChoice:
        """The chosen λ and its gMMR set for one query.

        Args:
            query: query embedding, shape (d,).
            candidates: candidate embeddings, shape (n, d).
            k: how many to pick.
            relevance: optional relevance scores (default cosine), shape (n,).
        """
        return self.choose_prepared(prepare_inputs(query, candidates, k, relevance))

    @classmethod
    def fit(
        cls,
        queries: Sequence[ArrayLike],
        candidates: Sequence[ArrayLike],
        gold_groups: Sequence[ArrayLike],
        k: int,
        *,
        lambdas: Sequence[float] = DEFAULT_LAMBDAS,
        alphas: Sequence[float] = DEFAULT_ALPHAS,
        folds: int = 5,
        info: dict[str, Any] | None = None,
    ) -> AdaptiveSelector:
        """Train a selector on your own questions (deterministic).

        Args:
            queries: one query embedding per question.
            candidates: per question, its candidate embeddings (n_i, d) (e.g. the
                ``fetch_k`` nearest chunks).
            gold_groups: per question, per candidate, the gold passage id it belongs to
                or -1 (see :func:`coverage_labels`).
            k: set size.
            lambdas, alphas, folds: the λ grid, ridge penalties and CV folds.
            info: stored with the model.

        Example:
            >>> import numpy as np
            >>> rng = np.random.default_rng(0)
            >>> qs = [rng.normal(size=8) for _ in range(12)]
            >>> cs = [rng.normal(size=(20, 8)) for _ in range(12)]
            >>> gs = [np.where(rng.random(20) < 0.2, rng.integers(0, 2, 20), -1) for _ in range(12)]
            >>> AdaptiveSelector.fit(qs, cs, gs, k=4, folds=3).lambdas.shape
            (10,)
        """
        if not (len(queries) == len(candidates) == len(gold_groups)):
            raise DimensionMismatchError(
                f"queries, candidates and gold_groups must have one entry per question; got "
                f"{len(queries)}, {len(candidates)}, {len(gold_groups)}"
            )
        feats, labels = [], []
        for q, c, g in zip(queries, candidates, gold_groups, strict=True):
            prep = prepare_inputs(q, c, k, None)
            sets, _, f = query_features(prep, lambdas)
            groups = np.asarray(g).reshape(-1)
            if groups.shape[0] != prep.n:
                raise DimensionMismatchError(
                    f"gold_groups must give one id per candidate; got {groups.shape[0]} for {prep.n} candidates"
                )
            feats.append(f)
            labels.append(coverage_labels(sets, groups))
        return cls.fit_features(np.stack(feats), np.stack(labels), lambdas=lambdas, alphas=alphas,
                                folds=folds, info=info)

    @classmethod
    def fit_features(
        cls,
        features: ArrayLike,
        labels: ArrayLike,
        *,
        lambdas: Sequence[float] = DEFAULT_LAMBDAS,
        alphas: Sequence[float] = DEFAULT_ALPHAS,
        folds: int = 5,
        info: dict[str, Any] | None = None,
    ) -> AdaptiveSelector:
        """Train from precomputed :func:`query_features` (N, L, F) and labels (N, L)."""
        record = {"lambdas": [float(v) for v in lambdas], **(info or {})}
        scorer = fit_set_scorer(features, labels, alphas=alphas, folds=folds,
                                feature_names=FEATURE_NAMES, info=record)
        return cls(scorer, lambdas)


@lru_cache(maxsize=8)
def _load_cached(path: str) -> AdaptiveSelector:
    return AdaptiveSelector.load(path)


def load_selector(model: str | Path | AdaptiveSelector | None) -> AdaptiveSelector:
    """The selector for the ``model`` parameter of the ``adaptive`` method (None: shipped)."""
    if isinstance(model, AdaptiveSelector):
        return model
    if model is None:
        return AdaptiveSelector.default()
    return _load_cached(str(Path(model).resolve()))
