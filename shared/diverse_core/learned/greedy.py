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

from ..adaptive.candidates import GoldModel
from ..errors import DimensionMismatchError, NonFiniteInputError
from .state import QueryState, SetTracker

__all__ = ["greedy_picks"]


def greedy_picks(
    state: QueryState, model: GoldModel, first_model: GoldModel | None = None
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``state.k`` picks in order and each pick's probability at the time it was picked."""
    n, k = state.n, min(state.k, state.n)
    picks: list[int] = []
    probs: list[float] = []
    taken = np.zeros(n, dtype=bool)
    # tie-break: higher relevance first, then lower index (a stable order of the candidates)
    order = np.argsort(-state.relevance, kind="stable")
    tiebreak = np.empty(n, dtype=np.float64)
    tiebreak[order] = -np.arange(n, dtype=np.float64)
    tracker = SetTracker(state)  # the rows of state.rows(picks), updated pick by pick
    rows = tracker.rows()
    for m in (model, first_model):
        if m is not None and m.weights.shape[0] != rows.shape[1]:
            raise DimensionMismatchError(f"features must have shape (n, {m.weights.shape[0]}); got {rows.shape}")
    if not np.all(np.isfinite(state.static)):
        raise NonFiniteInputError("features must be finite; the query's static features hold NaN/inf")
    for t in range(k):
        m = first_model if (t == 0 and first_model is not None) else model
        p = m.probabilities_of_checked(rows)
        if not np.all(np.isfinite(p)):
            raise NonFiniteInputError(f"the step model gave {int(np.sum(~np.isfinite(p)))} non-finite probabilities "
                                      "(NaN/inf weights?); retrain or reload it")
        p[taken] = -np.inf
        best = np.flatnonzero(p >= p.max() - 1e-12)
        j = int(best[np.argmax(tiebreak[best])]) if best.shape[0] > 1 else int(best[0])
        picks.append(j)
        probs.append(float(p[j]))
        taken[j] = True
        if t + 1 < k:
            tracker.add(j)
    return np.asarray(picks, dtype=np.int64), np.asarray(probs, dtype=np.float64)
