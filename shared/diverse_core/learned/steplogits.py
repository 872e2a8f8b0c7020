"""A step model's logits over a growing set: one small matrix-vector product per pick.

The step model is a logistic regression, so its logit is linear in the feature row. With
the standardisation folded into the weights (:attr:`~diverse_core.adaptive.candidates.GoldModel.folded`)
the logit of candidate ``i`` given the picks is a fixed part (the static columns, computed once
per query) plus a weighted sum of a few running quantities of the set:

* the maxima over the picks of the pair matrices (cosine, ``cos(q + pick, i)`` and, with texts,
  same source, title mentions and shared names),
* the sum of the picks' cosines (``sim_mean`` is that sum over the number of picks),
* which of the question's words and names some pick holds (the ``*_gain`` and ``term_union``
  columns are linear in those 0/1 marks),
* and per-step constants (``has_picks``, ``step``; ``qdc_over_rel`` is ``qdc_max`` minus the
  relevance, so the relevance enters as a row of its own).

:class:`StepLogits` keeps those quantities as the rows of one ``(R, n)`` matrix and the
model's coefficients (and the 0/1 word marks) as one vector of length ``R``, so that after each
pick every candidate's negated logit is one product ``u @ H``: no ``(n, F)`` feature rows are
built. It equals ``-model.logits_of_checked(state.rows(picks))`` up to float rounding.

Example (a random model: the probabilities of the feature rows):
    >>> import numpy as np
    >>> from diverse_core import learned, validation
    >>> from diverse_core.adaptive.candidates import GoldModel
    >>> f, rng = len(learned.feature_names(False)), np.random.default_rng(0)
    >>> m = GoldModel(rng.normal(size=f), rng.uniform(0.5, 2, f), rng.normal(size=f), 0.3, learned.feature_names(False))
    >>> st = learned.QueryState.build(validation.prepare_inputs(rng.normal(size=8), rng.normal(size=(10, 8)), 3, None))
    >>> steps = StepLogits(st, *m.folded)
    >>> steps.add(4); steps.add(7)
    >>> bool(np.allclose(steps.probabilities(), m.probabilities(st.rows([4, 7])), rtol=0, atol=1e-12))
    True
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .state import TEXT_STATE_FEATURES, QueryState

__all__ = ["HANDLED", "StepLogits", "no_pick_logits", "sigmoid_of_negated"]

FloatArray = NDArray[np.float64]


#: Where each state feature sits among the state columns (the text ones extend the embedding ones).
_AT = {name: i for i, name in enumerate(TEXT_STATE_FEATURES)}
#: The state features that are a maximum over the picks of a pair matrix (the blocks of
#: :meth:`~diverse_core.learned.state.QueryState.pair_stack`, in that order).
_MAXIMA = ("sim_max", "qdc_max", "same_title", "title_in_pick", "pick_title_in_it", "names_shared")
#: Every state feature :class:`StepLogits` reads (a new one must be added there).
HANDLED = (*_MAXIMA, "has_picks", "step", "sim_mean", "qdc_over_rel", "term_gain", "name_gain", "term_union")


def _word_rows(words: FloatArray, n_terms: int, c: list[float], rows: FloatArray) -> float:
    """Fill ``rows`` (W, n): row ``w`` is ``c_w * [i holds w] - d_w``, where ``c_w`` is what holding question word
    ``w`` adds to candidate ``i``'s logit while no pick holds it (``term_gain`` and ``term_union`` for a term,
    ``name_gain`` for a name, each over the number of terms or names) and ``d_w`` what a picked term adds to
    every candidate's ``term_union``. The negated logit takes row ``w`` with coefficient -1 while no pick holds
    ``w``, 0 after; returns ``sum(d_w)``, what the logit's constant part makes up for.

    ``words``: (W, n) 0/1, the question's terms first; ``c``: the state columns' folded coefficients.
    """
    term_gain, name_gain, term_union = c[_AT["term_gain"]], c[_AT["name_gain"]], c[_AT["term_union"]]
    size_t, size_n = max(n_terms, 1), max(words.shape[0] - n_terms, 1)
    np.multiply(words[:n_terms], (term_gain + term_union) / size_t, out=rows[:n_terms])
    np.multiply(words[n_terms:], name_gain / size_n, out=rows[n_terms:])
    rows[:n_terms] -= term_union / size_t
    return n_terms * (term_union / size_t)


def _n_terms(state: QueryState) -> int:
    return 0 if state.pairs is None else int(state.pairs.view.term_hits.shape[1])


def no_pick_logits(state: QueryState, coef: FloatArray, intercept: float) -> FloatArray:
    """The logit of every candidate before the first pick (``coef``, ``intercept``: a folded model).

    Every state column is 0 then but the gains: each word of the question a candidate holds is new.
    """
    s = state.static.shape[1]
    z = np.asarray(state.static @ coef[:s], dtype=np.float64)
    words = state.word_rows()
    if words.shape[0]:
        rows = np.empty(words.shape)
        z += intercept + _word_rows(words, _n_terms(state), coef[s:].tolist(), rows)
        z += np.add.reduce(rows, axis=0)
    else:
        z += intercept
    return z


def sigmoid_of_negated(y: FloatArray, out: FloatArray) -> FloatArray:
    """``sigmoid(z)`` of ``y = -z`` into ``out``, as :func:`~diverse_core.adaptive.candidates.sigmoid`
    computes it (``z`` clipped at -50; the clip at +50 changes nothing: ``1 + exp(-50)`` is 1)."""
    np.minimum(y, 50.0, out=out)
    np.exp(out, out=out)
    out += 1.0
    return np.asarray(np.divide(1.0, out, out=out), dtype=np.float64)


class StepLogits:
    """The negated logits of one (folded) step model given a growing set of picks.

    Args:
        state: the query's :class:`~diverse_core.learned.state.QueryState`.
        coef, intercept: the step model's :attr:`~diverse_core.adaptive.candidates.GoldModel.folded`
            coefficients over the rows of ``state`` (their width is the caller's to check).

    Example (a model that reads only ``sim_max``, weight -2):
        >>> import numpy as np
        >>> from diverse_core.adaptive.candidates import GoldModel
        >>> from diverse_core.learned import QueryState, feature_names
        >>> from diverse_core.validation import prepare_inputs
        >>> w = np.where(np.array(feature_names(False)) == "sim_max", -2.0, 0.0)
        >>> m = GoldModel(np.zeros(w.size), np.ones(w.size), w, 0.0, feature_names(False))
        >>> st = QueryState.build(prepare_inputs(np.ones(3), np.eye(3) + 0.1, 2, None))
        >>> steps = StepLogits(st, *m.folded)
        >>> steps.add(0)
        >>> bool(np.allclose(-steps.neg_logits(), -2.0 * st.sim[0]))
        True
    """

    def __init__(self, state: QueryState, coef: FloatArray, intercept: float) -> None:
        n, s = state.n, state.static.shape[1]
        c = coef[s:].tolist()  # the state columns' coefficients
        self._has_picks, self._step = c[_AT["has_picks"]], c[_AT["step"]]
        self._sim_mean, over_rel = c[_AT["sim_mean"]], c[_AT["qdc_over_rel"]]
        self._over_rel = over_rel
        # [j, m, i]: pair block m (sim, qdc, then the text ones) of pick j and candidate i
        self._pair_max = state.pair_stack()
        b = self._pair_max.shape[1]
        maxima = [-c[_AT[name]] for name in _MAXIMA[:b]]
        maxima[1] -= over_rel  # qdc_over_rel is qdc_max - relevance
        words = state.word_rows()
        n_words = words.shape[0]
        self.n, self._b, self._k, self._t = n, b, max(state.k, 1), 0
        # rows of h: b running maxima | the picks' summed cosines | the static columns' logit | relevance | ones |
        # one per question word; u @ h: the negated logits
        h = self._h = np.empty((b + 4 + n_words, n))
        h[: b + 1] = 0.0  # every other row is written below (np.zeros of the whole block would release the GIL)
        u = self._u = np.zeros(b + 4 + n_words)
        self._maxima, self._sim_sum = h[:b], h[b]
        self._u_maxima = maxima  # their coefficients, from the first pick on
        np.matmul(state.static, coef[:s], out=h[b + 1])
        lacking = _word_rows(words, _n_terms(state), c, h[b + 4:]) if n_words else 0.0
        self._constant = intercept + lacking  # the logit's constant part
        h[b + 2] = state.relevance
        h[b + 3] = 1.0
        u[b + 1] = -1.0
        u[b + 3] = -self._constant
        # the word rows' coefficients: -1 while no pick holds the word (a gain for whoever holds it), then 0
        self._held = u[b + 4:]
        self._held[:] = -1.0
        self._marks = state.word_marks(words) if n_words else None  # [j, w]: 0 where pick j holds word w, else -1
        self._spare = np.empty(n)

    @property
    def picked(self) -> int:
        """How many picks were added."""
        return self._t

    def add(self, j: int) -> None:
        """Add candidate ``j`` to the picks."""
        self.advance(j, self._spare)

    def advance(self, j: int, out: FloatArray) -> FloatArray:
        """Add candidate ``j`` to the picks and write every candidate's negated logit given them into ``out``."""
        t = self._t = self._t + 1
        b, u = self._b, self._u
        rows = self._pair_max[j]
        if t == 1:
            self._maxima[:] = rows
            self._sim_sum[:] = rows[0]
            u[:b] = self._u_maxima
            u[b + 2] = self._over_rel
        else:
            np.maximum(self._maxima, rows, out=self._maxima)
            np.add(self._sim_sum, rows[0], out=self._sim_sum)
        if self._marks is not None:
            np.maximum(self._held, self._marks[j], out=self._held)
        u[b] = -self._sim_mean / t
        u[b + 3] = -(self._constant + self._has_picks + self._step * (t / self._k))
        return np.matmul(u, self._h, out=out)

    def neg_logits(self, out: FloatArray | None = None) -> FloatArray:
        """Every candidate's negated logit given the picks so far (``out``: where to write it)."""
        return np.matmul(self._u, self._h, out=out)

    def sim_max(self) -> FloatArray:
        """Each candidate's highest cosine to a pick (0 before the first pick)."""
        return np.asarray(self._h[0], dtype=np.float64) if self._t else np.zeros(self.n)

    def probabilities(self) -> FloatArray:
        """Every candidate's probability given the picks so far (``model.probabilities(state.rows(picks))``)."""
        y = self.neg_logits()
        return sigmoid_of_negated(y, y)
