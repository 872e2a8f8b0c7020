"""Greedy set construction from a step model: pick the candidate most likely to add new gold evidence.

At every step the model (a :class:`~diverse_core.adaptive.candidates.GoldModel` over
:meth:`~diverse_core.learned.state.QueryState.rows`) estimates, for each remaining
candidate, the probability that it is gold evidence *not yet covered by the picks*;
the candidate with the highest probability is picked (ties: the more relevant, then
the lower index). ``first_model`` (optional) scores the first pick, where no state
exists yet. Per pick, every candidate's logit is one small product over the running
state of the set (:class:`~diverse_core.learned.steplogits.StepLogits`); models or
inputs of extreme size take the feature-row path (:class:`~diverse_core.learned.state.SetTracker`
rows through :meth:`~diverse_core.adaptive.candidates.GoldModel.logits_of_checked`), which
gives the same picks.

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

import math

import numpy as np
from numpy.typing import NDArray

from ..adaptive.candidates import GoldModel, sigmoid
from ..errors import DimensionMismatchError, NonFiniteInputError
from .state import EMBEDDING_STATE_FEATURES, TEXT_STATE_FEATURES, QueryState, SetTracker
from .steplogits import StepLogits, no_pick_logits, sigmoid_of_negated

__all__ = ["greedy_picks"]

FloatArray = NDArray[np.float64]
Picks = tuple[NDArray[np.int64], FloatArray]

#: Largest relevance the product path takes (the static features grow with it): beyond it the feature-row path
#: runs, whose rounding the product path then need not follow where logits of that size cancel.
_RELEVANCE_LIMIT = 1e100
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
    """
    width = state.static.shape[1] + len(TEXT_STATE_FEATURES if state.pairs is not None else EMBEDDING_STATE_FEATURES)
    for m in (model, first_model):
        if m is not None and m.weights.shape[0] != width:
            raise DimensionMismatchError(f"features must have shape (n, {m.weights.shape[0]}); got {(state.n, width)}")
    weight = 0.0 if diversity is None else abs(2.0 * float(diversity) - 1.0)
    toward_relevance = diversity is not None and diversity < 0.5
    folded, first = model.folded, None if first_model is None else first_model.folded
    if (folded is not None and (first_model is None or first is not None)
            and np.maximum.reduce(np.abs(state.relevance)) <= _RELEVANCE_LIMIT):
        out = _product_picks(state, folded, first, weight, toward_relevance)
        if out is not None:
            return out
    return _row_picks(state, model, first_model, weight, toward_relevance)


def _best(score: FloatArray, relevance: FloatArray, index: NDArray[np.int64] | None = None) -> int:
    """Where ``score`` is highest; among scores within :data:`_TIE` of it, the most relevant, then the first.

    ``index``: the candidates ``score`` covers (``None``: all, in order) to read their ``relevance``.
    """
    j = int(score.argmax())
    near = score >= score[j] - _TIE
    if np.count_nonzero(near) <= 1:  # 0: NaN scores (the caller's final check sends them to the row path)
        return j
    best = np.flatnonzero(near)
    return int(best[np.argmax(relevance[best if index is None else index[best]])])  # argmax: the first of equals


def _product_picks(state: QueryState, folded: tuple[FloatArray, float], first: tuple[FloatArray, float] | None,
                   weight: float, toward_relevance: bool) -> Picks | None:
    """The picks through :class:`StepLogits`; ``None`` when a logit came out non-finite (NaN/inf static
    features, an overflow): the row path then decides, and names the error."""
    n, k = state.n, min(state.k, state.n)
    steps = StepLogits(state, *folded)
    if weight != 0.0:
        return _blended_picks(state, steps, first, k, weight, toward_relevance)
    y = np.empty(n)  # the step's negated logits
    if first is None:
        steps.neg_logits(out=y)
    else:
        np.negative(no_pick_logits(state, *first), out=y)
    picks: list[int] = []
    probs: list[float] = []
    total = 0.0  # the sum of every step's negated logits: finite when each of them is
    for t in range(k):
        # _pick on Python floats, its common case: the best alone in the tie window (the first lowest, as argmin
        # finds it; argmin releases the GIL on every call, a wait under contention). NaN: any j (the row path decides)
        listed = y.tolist()
        total += sum(listed)
        for i in picks:
            listed[i] = math.inf
        low = min(listed)
        j = listed.index(low)
        prob = 1.0 / (1.0 + math.exp(min(low, 50.0)))
        below = prob - 2.0 * _TIE
        listed[j] = math.inf
        # exactly one candidate at or below the window's logit: the best, and every other one above it
        if not (below > 1e-15 and low <= math.log(1.0 / below - 1.0) < min(listed)):
            penalised = y.copy()
            penalised[picks] = np.inf
            j, prob = _pick(penalised, state.relevance)
        picks.append(j)
        probs.append(prob)
        if t + 1 < k:
            steps.advance(j, y)
    if not math.isfinite(total):
        return None
    return np.array(picks, dtype=np.int64), np.array(probs)


def _blended_picks(state: QueryState, steps: StepLogits, first: tuple[FloatArray, float] | None, k: int,
                   weight: float, toward_relevance: bool) -> Picks | None:
    """:func:`_product_picks` at a diversity other than 0.5: each step's logit blended with relevance or novelty."""
    n = state.n
    neg = np.empty((k, n))  # every step's negated logits, checked once at the end
    if first is None:
        steps.neg_logits(out=neg[0])
    else:
        np.negative(no_pick_logits(state, *first), out=neg[0])
    taken = np.zeros(n, dtype=bool)
    picks = np.empty(k, dtype=np.int64)
    probs = np.empty(k)
    for t in range(k):
        y = neg[t]
        free = np.flatnonzero(~taken)
        j = int(free[_best(_blend(y[free], free, weight, toward_relevance, state, steps), state.relevance, free)])
        picks[t], probs[t], taken[j] = j, _probability(y.item(j)), True
        if t + 1 < k:
            steps.advance(j, neg[t + 1])
    if not np.isfinite(np.add.reduce(neg, axis=None)):
        return None
    return picks, probs


def _probability(neg_logit: float) -> float:
    """``sigmoid(z)`` of one negated logit ``-z``, ``z`` clipped at -50 as in :func:`sigmoid`."""
    return 1.0 / (1.0 + math.exp(min(neg_logit, 50.0)))


def _pick(neg: FloatArray, relevance: FloatArray) -> tuple[int, float]:
    """The plain rule's pick and its probability, from the negated logits (picked candidates at +inf).

    The rule: the highest probability ``sigmoid(clip(z))``; probabilities within :data:`_TIE` of it
    tie, and the more relevant, then the first, wins. A probability saturates (1.0 for large ``z``),
    so the rule is not an argmax of ``z``; but ``sigmoid`` is monotone: every candidate that ties
    with the best has a negated logit below ``logit(p_best - 2 * _TIE)`` (the extra ``_TIE`` covers
    the rounding of both sides many times over). When the best is alone below it, it is the pick;
    else the probabilities decide, computed as :func:`sigmoid` computes them.
    """
    j = int(neg.argmin())
    prob = _probability(neg.item(j))
    below = prob - 2.0 * _TIE  # in (1e-15, 1): its logit is finite and far from the clip at 50
    if below > 1e-15 and np.count_nonzero(neg <= math.log(1.0 / below - 1.0)) == 1:
        return j, prob
    p = sigmoid_of_negated(neg, np.empty_like(neg))
    p[neg == np.inf] = -np.inf  # the picked
    j = _best(p, relevance)
    return j, float(p[j])


def _standard(x: FloatArray) -> FloatArray:
    """``x`` standardised (all zero when its entries are all equal); scaled by its largest magnitude first,
    so that no square overflows whatever the relevance's scale. The same operations as ``np.std`` /
    ``np.mean`` (pairwise sums), without their overhead."""
    top = float(np.maximum.reduce(np.abs(x)))
    if not 0.0 < top < math.inf:
        return np.zeros_like(x)
    v = x / top
    m = v.shape[0]
    dev = v - np.add.reduce(v) / m
    spread = math.sqrt(float(np.add.reduce(dev * dev)) / m)
    return dev / spread if spread > 1e-12 else np.zeros_like(x)


def _blend(neg_logit: FloatArray, free: NDArray[np.int64], weight: float, toward_relevance: bool,
           state: QueryState, steps: StepLogits | SetTracker) -> FloatArray:
    """The step score of the ``free`` candidates at a diversity other than 0.5 (``neg_logit``: theirs, negated)."""
    clipped = np.minimum(np.maximum(neg_logit, -50.0), 50.0)  # -logit in the range the probabilities are read from
    target = state.relevance[free] if toward_relevance else np.negative(steps.sim_max()[free])
    # _standard(-x) is -_standard(x) bit for bit: this is (1 - weight) * _standard(logit) + weight * _standard(target)
    return weight * _standard(target) - (1.0 - weight) * _standard(clipped)


def _row_picks(state: QueryState, model: GoldModel, first_model: GoldModel | None, weight: float,
               toward_relevance: bool) -> Picks:
    """The picks through full feature rows (:class:`SetTracker`), each step's model checked for finite output."""
    n, k = state.n, min(state.k, state.n)
    picks: list[int] = []
    probs: list[float] = []
    taken = np.zeros(n, dtype=bool)
    tracker = SetTracker(state)  # the rows of state.rows(picks), updated pick by pick
    rows = tracker.rows()
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
        if weight == 0.0:
            j = _best(p, state.relevance)
        else:
            free = np.flatnonzero(~taken)
            j = int(free[_best(_blend(-z[free], free, weight, toward_relevance, state, tracker), state.relevance, free)])
        picks.append(j)
        probs.append(float(p[j]))
        taken[j] = True
        if t + 1 < k:
            tracker.add(j)
    return np.asarray(picks, dtype=np.int64), np.asarray(probs, dtype=np.float64)
