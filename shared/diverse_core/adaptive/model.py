"""A within-query ridge scorer of candidate sets (numpy only), with cross-validated fitting.

The scorer gives each of a query's ``L`` sets a score ``x @ w``; the selector keeps the
set with the highest score. Only the differences between a query's sets matter, so
the fit is a ridge regression on features and labels centred within each query
(``x - mean over the query's sets``, ``y - mean``): it learns which set of a query
covers more, not how easy the query is. Features are standardised with the centred
training rows' scale. ``alpha`` is chosen by grouped K-fold cross-validation on the
training queries, scored by the mean label of the set each fold's model would pick.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3, 2)); y = X[:, :, 0] + 0.1 * rng.normal(size=(40, 3))
    >>> m = fit_set_scorer(X, y, alphas=(1.0,), folds=2)
    >>> bool(m.weights[0] > abs(m.weights[1]))
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from ..trained.gold import read_model_file

__all__ = ["SetScorer", "fit_set_scorer", "cv_pick_quality", "FORMAT_VERSION"]

FloatArray = NDArray[np.float64]

#: Version of the saved file layout.
FORMAT_VERSION = 1

DEFAULT_ALPHAS: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0, 1000.0)


@dataclass(frozen=True)
class SetScorer:
    """Linear scores of a query's sets: ``((x - center) / scale) @ weights``.

    Attributes:
        weights: one weight per feature, shape (F,).
        scale: per-feature scale of the centred training rows, shape (F,).
        alpha: the ridge penalty used.
        feature_names: names of the F features (checked when loading).
        info: free-form training record (data, CV scores, seed), JSON-able.
    """

    weights: FloatArray
    scale: FloatArray
    alpha: float
    feature_names: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def scores(self, features: ArrayLike) -> FloatArray:
        """Scores of the rows of ``features`` (shape (L, F)) -> shape (L,)."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.weights.shape[0]:
            raise DimensionMismatchError(
                f"features must have shape (L, {self.weights.shape[0]}); got {x.shape}"
            )
        centred = x - x.mean(axis=0, keepdims=True)
        out: FloatArray = (centred / self.scale) @ self.weights
        return out

    def save(self, path: str | Path) -> Path:
        """Write the scorer to ``path`` (``.npz``; a few kB). Returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT_VERSION,
            "alpha": self.alpha,
            "feature_names": list(self.feature_names),
            "info": self.info,
        }
        with p.open("wb") as fh:
            np.savez(fh, weights=self.weights, scale=self.scale, meta=np.array(json.dumps(meta)))
        return p

    @classmethod
    def load(cls, path: str | Path) -> SetScorer:
        """Read a scorer written by :meth:`save`.

        Raises:
            FileNotFoundError: no such file. InvalidParameterError: not a scorer file.
        """
        p = Path(path)
        data, meta = read_model_file(p)
        try:
            weights = np.asarray(data["weights"], dtype=np.float64)
            scale = np.asarray(data["scale"], dtype=np.float64)
        except KeyError as exc:
            raise InvalidParameterError(f"{p} is not an adaptive model file (.npz from save()): {exc}") from exc
        if meta.get("format") != FORMAT_VERSION:
            raise InvalidParameterError(
                f"{p}: model format {meta.get('format')!r}; this version reads format {FORMAT_VERSION}"
            )
        return cls(weights, scale, float(meta["alpha"]), tuple(meta["feature_names"]), dict(meta["info"]))


def _check_xy(features: ArrayLike, labels: ArrayLike) -> tuple[FloatArray, FloatArray]:
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 3 or y.shape != x.shape[:2]:
        raise DimensionMismatchError(
            f"features must be (queries, sets, F) and labels (queries, sets); got {x.shape} and {y.shape}"
        )
    if x.shape[0] < 2 or x.shape[1] < 2:
        raise InvalidParameterError(f"need at least 2 queries with 2 sets each; got {x.shape[:2]}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise NonFiniteInputError("features and labels must be finite")
    return x, y


def _solve(xc: FloatArray, yc: FloatArray, alpha: float) -> tuple[FloatArray, FloatArray]:
    """Ridge on within-query centred rows: returns (weights, scale)."""
    flat = xc.reshape(-1, xc.shape[-1])
    scale = flat.std(axis=0)
    scale[scale < 1e-12] = 1.0
    z = flat / scale
    gram = z.T @ z + alpha * np.eye(z.shape[1])
    w = np.linalg.solve(gram, z.T @ yc.reshape(-1))
    return w, scale


def _centre(x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    return x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)


def _picked_quality(x: FloatArray, y: FloatArray, w: FloatArray, scale: FloatArray) -> float:
    """Mean label of the top-scored set per query (ties: the upper of the tied positions)."""
    s = ((x - x.mean(axis=1, keepdims=True)) / scale) @ w  # (N, L)
    best = s.shape[1] - 1 - np.argmax(s[:, ::-1], axis=1)
    return float(y[np.arange(y.shape[0]), best].mean())


def cv_pick_quality(
    features: ArrayLike, labels: ArrayLike, alpha: float, folds: int = 5
) -> float:
    """Grouped K-fold estimate of the mean label of the picked set (queries split by index mod K)."""
    x, y = _check_xy(features, labels)
    xc, yc = _centre(x, y)
    fold = np.arange(x.shape[0]) % folds
    total = 0.0
    for f in range(folds):
        train, test = fold != f, fold == f
        if not test.any() or train.sum() < 2:
            continue
        w, scale = _solve(xc[train], yc[train], alpha)
        total += _picked_quality(x[test], y[test], w, scale) * int(test.sum())
    return float(total / x.shape[0])


def fit_set_scorer(
    features: ArrayLike,
    labels: ArrayLike,
    *,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    folds: int = 5,
    feature_names: Sequence[str] | None = None,
    info: dict[str, Any] | None = None,
) -> SetScorer:
    """Fit a :class:`SetScorer`, choosing ``alpha`` by cross-validation on the given queries.

    Args:
        features: shape (queries, sets, F): the features of every set of every query.
        labels: shape (queries, sets): how good each set is (e.g. its gold recall).
        alphas: ridge penalties to try; the best cross-validated one is refitted on all.
        folds: cross-validation folds (queries assigned by index mod ``folds``).
        feature_names: names stored with the model (default ``f0, f1, ...``).
        info: extra training record stored with the model.

    Deterministic: no randomness is involved.
    """
    x, y = _check_xy(features, labels)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InvalidParameterError(f"folds must be an integer >= 2; got folds={folds!r}")
    if not alphas or any((not np.isfinite(a)) or a < 0 for a in alphas):
        raise InvalidParameterError(f"alphas must be non-negative finite numbers; got alphas={alphas!r}")
    cv = {float(a): cv_pick_quality(x, y, float(a), folds) for a in alphas}
    best_alpha = float(max(cv, key=lambda a: (cv[a], a)))  # ties: the stronger penalty
    xc, yc = _centre(x, y)
    w, scale = _solve(xc, yc, best_alpha)
    names = tuple(feature_names) if feature_names is not None else tuple(f"f{i}" for i in range(x.shape[2]))
    record = {"cv_pick_quality": {f"{a:g}": round(v, 6) for a, v in cv.items()}, "n_queries": int(x.shape[0])}
    record.update(info or {})
    return SetScorer(w, scale, best_alpha, names, record)
