"""The gold model both trained selectors share: a logistic regression of "this candidate is gold evidence".

:class:`GoldModel` scores candidate rows (``adaptive`` reads its probabilities per candidate,
``learned`` per pick of a growing set); :func:`fit_gold_model` fits it by Newton's method
(deterministic); :func:`coverage_labels` is the gold recall of candidate sets that both train
against; :func:`read_model_file` reads the ``.npz`` files both save.

Example:
    >>> import numpy as np
    >>> x = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0.0, 0.0, 1.0, 1.0])
    >>> m = fit_gold_model(x, y, feature_names=("score",))
    >>> bool(m.probabilities(np.array([[3.0]]))[0] > 0.5)
    True
    >>> coverage_labels(np.array([[0, 1], [2, 3]]), np.array([0, 0, 1, -1])).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError

__all__ = ["GoldModel", "coverage_labels", "fit_gold_model", "read_model_file", "sigmoid"]

FloatArray = NDArray[np.float64]


def sigmoid(z: FloatArray) -> FloatArray:
    """``1 / (1 + exp(-z))`` with ``z`` clipped to [-50, 50] (no overflow)."""
    return np.asarray(1.0 / (1.0 + np.exp(-np.minimum(np.maximum(z, -50.0), 50.0))), dtype=np.float64)


@dataclass(frozen=True)
class GoldModel:
    """Logistic regression of "this candidate is gold": ``sigmoid(((x - mean) / scale) @ w + b)``.

    Attributes:
        mean, scale: per-feature standardisation of the training rows, shape (F,).
        weights: shape (F,); bias: the intercept.
        feature_names: names of the F features.
        l2: the ridge penalty used.
    """

    mean: FloatArray
    scale: FloatArray
    weights: FloatArray
    bias: float
    feature_names: tuple[str, ...]
    l2: float = 1.0
    info: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, features: ArrayLike) -> FloatArray:
        """Gold probability of each row of ``features`` (shape (n, F)) -> (n,)."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.weights.shape[0]:
            raise DimensionMismatchError(f"features must have shape (n, {self.weights.shape[0]}); got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise NonFiniteInputError(f"features must be finite; got {int(np.sum(~np.isfinite(x)))} NaN/inf")
        return self.probabilities_of_checked(x)

    def logits_of_checked(self, x: FloatArray) -> FloatArray:
        """The logit of each row of float rows already known to be finite and of the right width."""
        return np.asarray(((x - self.mean) / self.scale) @ self.weights + self.bias, dtype=np.float64)

    def probabilities_of_checked(self, x: FloatArray) -> FloatArray:
        """:meth:`probabilities` of float rows already known to be finite and of the right width."""
        return sigmoid(self.logits_of_checked(x))

    @cached_property
    def folded(self) -> tuple[FloatArray, float] | None:
        """``(coef, intercept)`` with the standardisation folded in: logit ``= x @ coef + intercept``.

        ``coef = weights / scale`` and ``intercept = bias - mean @ coef`` (equal to
        :meth:`logits_of_checked` up to float rounding). ``None`` when a parameter is not finite
        or beyond ``1e100`` in size (or a scale below ``1e-100``), where the two forms could
        disagree on overflow: use :meth:`logits_of_checked` then. Computed once per model (the
        model is frozen: its arrays are read, never written).
        """
        mean, scale, w = (np.asarray(a, dtype=np.float64) for a in (self.mean, self.scale, self.weights))
        if w.ndim != 1 or mean.shape != w.shape or scale.shape != w.shape:
            return None
        params = np.abs(np.concatenate([mean, w, [self.bias]]))
        size = np.abs(scale)
        if not (np.all(params <= 1e100) and np.all(size >= 1e-100) and np.all(size <= 1e100)):  # NaN: False
            return None
        coef = w / scale
        coef.setflags(write=False)
        return coef, float(self.bias - mean @ coef)

    def to_arrays(self, prefix: str) -> dict[str, Any]:
        """The arrays to store under ``prefix`` in a model file."""
        meta = {"bias": self.bias, "l2": self.l2, "feature_names": list(self.feature_names), "info": self.info}
        return {f"{prefix}mean": self.mean, f"{prefix}scale": self.scale, f"{prefix}weights": self.weights,
                f"{prefix}meta": np.array(json.dumps(meta))}

    @classmethod
    def from_arrays(cls, data: Any, prefix: str) -> GoldModel:
        """Read what :meth:`to_arrays` stored."""
        meta = json.loads(str(data[f"{prefix}meta"]))
        return cls(np.asarray(data[f"{prefix}mean"], dtype=np.float64), np.asarray(data[f"{prefix}scale"], dtype=np.float64),
                   np.asarray(data[f"{prefix}weights"], dtype=np.float64), float(meta["bias"]),
                   tuple(meta["feature_names"]), float(meta["l2"]), dict(meta["info"]))


def fit_gold_model(
    features: ArrayLike, is_gold: ArrayLike, *, feature_names: tuple[str, ...], l2: float = 1.0, max_iter: int = 100
) -> GoldModel:
    """Fit a :class:`GoldModel` by Newton's method (deterministic; no randomness).

    Args:
        features: candidate rows, shape (m, F).
        is_gold: 1 for a gold candidate, else 0, shape (m,).
        feature_names: the F names stored with the model.
        l2: ridge penalty on the standardised weights (not the intercept).
        max_iter: Newton steps at most.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(is_gold, dtype=np.float64).reshape(-1)
    if x.ndim != 2 or y.shape[0] != x.shape[0]:
        raise DimensionMismatchError(f"features must be (m, F) and is_gold (m,); got {x.shape} and {y.shape}")
    if len(feature_names) != x.shape[1]:
        raise DimensionMismatchError(
            f"feature_names must name the {x.shape[1]} feature columns; got {len(feature_names)} names"
        )
    for label, values in (("features", x), ("is_gold", y)):
        if not np.all(np.isfinite(values)):
            raise NonFiniteInputError(f"{label} must be finite; got {int((~np.isfinite(values)).sum())} NaN/inf")
    if not (0.0 < y.mean() < 1.0):
        raise InvalidParameterError(
            f"is_gold must hold both gold (1) and non-gold (0) candidates; got a gold share of {y.mean():g}"
        )
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    z = np.column_stack([(x - mean) / scale, np.ones(x.shape[0])])
    penalty = l2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    w = np.zeros(z.shape[1])
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -50.0, 50.0)))
        grad = z.T @ (p - y) + penalty @ w
        hess = (z * (p * (1.0 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return GoldModel(mean, scale, w[:-1].copy(), float(w[-1]), tuple(feature_names), float(l2),
                     {"n_rows": int(x.shape[0]), "gold_share": round(float(y.mean()), 6)})


def coverage_labels(sets: ArrayLike, gold_groups: ArrayLike, n_gold: int | None = None) -> NDArray[np.float64]:
    """Gold recall of each set, shape (L,).

    Args:
        sets: candidate indices per set, shape (L, k).
        gold_groups: per candidate, the id (>= 0) of the gold passage it belongs to, or
            -1 when it belongs to none, shape (n,). With one candidate per passage this
            is plain gold recall; with chunks it is gold-document coverage.
        n_gold: how many gold passages the question has in all (some may be missing from
            the candidates); default: the number of distinct gold ids among the candidates.
    """
    idx = np.asarray(sets, dtype=np.int64)
    groups = np.asarray(gold_groups, dtype=np.int64).reshape(-1)
    golds = np.unique(groups[groups >= 0])
    if n_gold is not None and (isinstance(n_gold, bool) or int(n_gold) < golds.size):
        raise InvalidParameterError(
            f"n_gold must be at least the {golds.size} gold passages among the candidates; got n_gold={n_gold!r}"
        )
    total = golds.size if n_gold is None else int(n_gold)
    if golds.size == 0 or total == 0:
        return np.zeros(idx.shape[0])
    hit = (groups[idx][:, :, None] == golds[None, None, :]).any(axis=1)  # (L, G)
    return np.asarray(hit.sum(axis=1) / total, dtype=np.float64)


def read_model_file(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every array of a saved model file and its parsed ``meta`` record.

    Raises:
        FileNotFoundError: no such file. InvalidParameterError: not a model file (.npz with a meta record).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file not found: {p}")
    try:
        with np.load(p, allow_pickle=False) as npz:
            data = {key: npz[key] for key in npz.files}
        return data, dict(json.loads(str(data["meta"])))
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidParameterError(f"{p} is not an adaptive model file (.npz from save()): {exc}") from exc
