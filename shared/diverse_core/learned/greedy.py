"""Greedy set construction from a step model: pick the candidate most likely to add new gold evidence.

At every step the model (a :class:`~diverse_core.adaptive.candidates.GoldModel` over
:meth:`~diverse_core.learned.state.QueryState.rows`) estimates, for each remaining
candidate, the probability that it is gold evidence *not yet covered by the picks*;
the candidate with the highest probability is picked (ties: the more relevant, then
the lower index). ``first_model`` (optional) scores the first pick, where no state
exists yet. One model call per pick, each over all candidates at once.

Example:
    >>> import numpy as np
    >>> from diverse_core.adaptive.candidates import GoldModel
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

import numpy as np
from numpy.typing import NDArray

from ..adaptive.candidates import GoldModel, sigmoid
from ..errors import DimensionMismatchError, NonFiniteInputError
from .state import QueryState, SetTracker

__all__ = ["greedy_picks"]


def _standard(x: NDArray[np.float64], free: NDArray[np.bool_]) -> NDArray[np.float64]:
    """``x`` standardised over the ``free`` entries (all zero when they are all equal); scaled by its largest
    magnitude first, so that no square overflows whatever the relevance's scale."""
    top = float(np.abs(x[free]).max())
    if not 0.0 < top < np.inf:
        return np.zeros_like(x)
    v = x / top
    spread = float(v[free].std())
    return (v - v[free].mean()) / spread if spread > 1e-12 else np.zeros_like(x)


def greedy_picks(
    state: QueryState, model: GoldModel, first_model: GoldModel | None = None, diversity: float | None = None
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``state.k`` picks in order and each pick's probability at the time it was picked.

    ``diversity`` (``None`` or 0.5: the trained model as is) blends, at every step, the model's
    logit with pure relevance (below 0.5) or with novelty, minus the highest cosine to the picks
    (above 0.5), weight ``|2 * diversity - 1|``, each standardised over the remaining
    candidates: 0 picks by relevance alone (top-k), 1 by novelty alone (farthest-first from the
    most relevant candidate).
    """
    n, k = state.n, min(state.k, state.n)
    picks: list[int] = []
    probs: list[float] = []
    taken = np.zeros(n, dtype=bool)
    # tie-break: higher relevance first, then lower index (a stable order of the candidates)
    order = np.argsort(-state.relevance, kind="stable")
    tiebreak = np.empty(n, dtype=np.float64)
    tiebreak[order] = -np.arange(n, dtype=np.float64)
    weight = 0.0 if diversity is None else abs(2.0 * float(diversity) - 1.0)
    toward_relevance = diversity is not None and diversity < 0.5
    tracker = SetTracker(state)  # the rows of state.rows(picks), updated pick by pick
    rows = tracker.rows()
    for m in (model, first_model):
        if m is not None and m.weights.shape[0] != rows.shape[1]:
            raise DimensionMismatchError(f"features must have shape (n, {m.weights.shape[0]}); got {rows.shape}")
    if not np.all(np.isfinite(state.static)):
        raise NonFiniteInputError("features must be finite; the query's static features hold NaN/inf")
    for t in range(k):
        m = first_model if (t == 0 and first_model is not None) else model
        z = m.logits_of_checked(rows)
        p = sigmoid(z)
        if not np.all(np.isfinite(p)):
            raise NonFiniteInputError(f"the step model gave {int(np.sum(~np.isfinite(p)))} non-finite probabilities "
                                      "(NaN/inf weights?); retrain or reload it")
        p[taken] = -np.inf
        score = p if weight == 0.0 else _blend(z, taken, weight, toward_relevance, state, tracker)
        best = np.flatnonzero(score >= score.max() - 1e-12)
        j = int(best[np.argmax(tiebreak[best])]) if best.shape[0] > 1 else int(best[0])
        picks.append(j)
        probs.append(float(p[j]))
        taken[j] = True
        if t + 1 < k:
            tracker.add(j)
    return np.asarray(picks, dtype=np.int64), np.asarray(probs, dtype=np.float64)


def _blend(z: NDArray[np.float64], taken: NDArray[np.bool_], weight: float, toward_relevance: bool,
           state: QueryState, tracker: SetTracker) -> NDArray[np.float64]:
    """The step score at a diversity other than 0.5 (picked candidates at -inf)."""
    free = ~taken
    target = state.relevance if toward_relevance else -tracker.sim_max()
    logit = np.clip(z, -50.0, 50.0)  # the range the model's probabilities are read from
    out = (1.0 - weight) * _standard(logit, free) + weight * _standard(target, free)
    out[taken] = -np.inf
    return out
