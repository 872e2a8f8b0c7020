"""Greedy set construction from a step model: pick the candidate most likely to add new gold evidence.

At every step the model (a :class:`~diverse_core.trained.gold.GoldModel` over the feature rows
of :class:`~diverse_core.learned.state.PickedSet`) estimates, for each remaining candidate, the
probability that it is gold evidence *not yet covered by the picks*; the candidate with the
highest probability is picked (ties: the more relevant, then the lower index). ``first_model``
(optional) scores the first pick, where no state exists yet.

Example:
    >>> import numpy as np
    >>> from diverse_core.trained.gold import GoldModel
    >>> from diverse_core.validation import prepare_inputs
    >>> from diverse_core.learned.state import QueryState, feature_names
    >>> names = feature_names(False)
    >>> w = np.zeros(len(names)); w[names.index("rel")] = 1.0  # a model that only likes relevance
    >>> m = GoldModel(np.zeros(len(names)), np.ones(len(names)), w, 0.0, names)
    >>> rng = np.random.default_rng(0)
    >>> prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(10, 8)), 3, None)
    >>> picks, _ = greedy_picks(QueryState.build(prep), m)
    >>> picks.tolist() == np.argsort(-prep.relevance, kind="stable")[:3].tolist()
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, NonFiniteInputError
from ..trained.gold import GoldModel, sigmoid
from .state import PickedSet, QueryState

__all__ = ["greedy_picks"]

FloatArray = NDArray[np.float64]
Picks = tuple[NDArray[np.int64], FloatArray]

#: Picks within this of the best probability (or blended score) tie.
_TIE = 1e-12


def greedy_picks(
    state: QueryState, model: GoldModel, first_model: GoldModel | None = None, diversity: float | None = None
) -> Picks:
    """The ``state.k`` picks in order and each pick's probability at the time it was picked.

    ``diversity`` (``None`` or 0.5: the trained model as is) blends, at every step, the model's
    logit with pure relevance (below 0.5) or with novelty, minus the highest cosine to the picks
    (above 0.5), weight ``|2 * diversity - 1|``, each standardised over the remaining
    candidates: 0 picks by relevance alone (top-k), 1 by novelty alone (farthest-first from the
    most relevant candidate).

    Raises:
        DimensionMismatchError: a model of another width than the state's rows.
        NonFiniteInputError: NaN/inf static features, or a model that gives non-finite probabilities.
    """
    width = state.static.shape[1] + len(state.table)
    for m in (model, first_model):
        if m is not None and m.weights.shape[0] != width:
            raise DimensionMismatchError(f"features must have shape (n, {m.weights.shape[0]}); got {(state.n, width)}")
    if not np.all(np.isfinite(state.static)):
        raise NonFiniteInputError("features must be finite; the query's static features hold NaN/inf")
    weight = 0.0 if diversity is None else abs(2.0 * float(diversity) - 1.0)
    n, k = state.n, min(state.k, state.n)
    picked = PickedSet(state)
    taken = np.zeros(n, dtype=bool)
    picks, probs = np.empty(k, dtype=np.int64), np.empty(k)
    later = _logits(picked, model)
    first = later if first_model is None else _logits(picked, first_model)
    for t in range(k):
        z = (first if t == 0 else later)()
        if not math.isfinite(z.sum()):  # NaN or inf among them
            raise NonFiniteInputError(f"the step model gave {int(np.sum(~np.isfinite(z)))} non-finite logits "
                                      "(NaN/inf weights?); retrain or reload it")
        p = sigmoid(z)
        p[taken] = -np.inf
        if weight == 0.0:
            j = _best(p, state.relevance)
        else:
            free = np.flatnonzero(~taken)
            target = state.relevance[free] if diversity < 0.5 else -picked.sim_max()[free]  # type: ignore[operator]
            # (1 - weight) * the standardised logit + weight * the standardised target
            score = weight * _standard(target) + (1.0 - weight) * _standard(np.clip(z[free], -50.0, 50.0))
            j = int(free[_best(score, state.relevance, free)])
        picks[t], probs[t], taken[j] = j, p[j], True
        if t + 1 < k:  # (the last pick changes no later step)
            picked.add(j)
    return picks, probs


def _logits(picked: PickedSet, model: GoldModel) -> Callable[[], FloatArray]:
    """The model's logits given the picks at each call: the linear update of the running state with the
    standardisation folded in (:attr:`~diverse_core.trained.gold.GoldModel.folded`), or, for a model of
    extreme size, the unfolded form over the feature rows."""
    folded = model.folded
    if folded is None:
        return lambda: model.logits_of_checked(picked.rows())
    return picked.linear(*folded)


def _best(score: FloatArray, relevance: FloatArray, index: NDArray[np.int64] | None = None) -> int:
    """Where ``score`` is highest; among scores within :data:`_TIE` of it, the most relevant, then the first.

    ``index``: the candidates ``score`` covers (``None``: all, in order) to read their ``relevance``.
    """
    j = int(score.argmax())
    near = score >= score[j] - _TIE
    if np.count_nonzero(near) <= 1:
        return j
    best = np.flatnonzero(near)
    return int(best[np.argmax(relevance[best if index is None else index[best]])])  # argmax: the first of equals


def _standard(x: FloatArray) -> FloatArray:
    """``x`` standardised (all zero when its entries are all equal); scaled by its largest magnitude first,
    so that no square overflows whatever the relevance's scale."""
    top = float(np.abs(x).max())
    if not 0.0 < top < np.inf:
        return np.zeros_like(x)
    v = x / top
    dev = v - v.mean()
    spread = float(np.sqrt((dev * dev).mean()))
    return dev / spread if spread > 1e-12 else np.zeros_like(x)
