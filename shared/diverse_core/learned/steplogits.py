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

Example:
    >>> import numpy as np
    >>> from diverse_core.adaptive.candidates import GoldModel
    >>> from diverse_core.validation import prepare_inputs
    >>> from diverse_core.learned.state import QueryState, feature_names
    >>> names = feature_names(False)
    >>> rng = np.random.default_rng(0)
    >>> m = GoldModel(rng.normal(size=len(names)), rng.uniform(0.5, 2, len(names)), rng.normal(size=len(names)),
    ...               0.3, names)
    >>> st = QueryState.build(prepare_inputs(rng.normal(size=8), rng.normal(size=(10, 8)), 3, None))
    >>> steps = StepLogits(st, *m.folded)
    >>> steps.add(4); steps.add(7)
    >>> bool(np.allclose(steps.probabilities(), m.probabilities(st.rows([4, 7])), rtol=0, atol=1e-12))
    True
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .state import QueryState

__all__ = ["StepLogits", "no_pick_logits", "sigmoid_of_negated"]

FloatArray = NDArray[np.float64]


def _word_marks(state: QueryState) -> FloatArray:
    """(n, W) 0/1: which of the question's words (then names) each candidate holds."""
    assert state.pairs is not None
    view = state.pairs.view
    return np.concatenate([view.term_hits, view.name_hits], axis=1, dtype=np.float64)


def _word_coefficients(state: QueryState, coef: FloatArray) -> tuple[FloatArray, float]:
    """Per question word (then name): the logit a candidate holding it gains while no pick holds it;
    and what each picked *term* adds to every candidate (``term_union`` counts the picks' terms)."""
    assert state.pairs is not None
    view, s = state.pairs.view, state.static.shape[1]
    term_gain, name_gain, term_union = (float(c) for c in coef[s + 10: s + 13])
    n_t, n_n = view.term_hits.shape[1], view.name_hits.shape[1]
    size_t, size_n = max(n_t, 1), max(n_n, 1)
    per_word = np.repeat([(term_gain + term_union) / size_t, name_gain / size_n], [n_t, n_n])
    return per_word, term_union / size_t


def no_pick_logits(state: QueryState, coef: FloatArray, intercept: float,
                   words: FloatArray | None = None) -> FloatArray:
    """The logit of every candidate before the first pick (``coef``, ``intercept``: a folded model).

    Every state column is 0 then, but the gains: each of the question's words a candidate holds is new.
    """
    s = state.static.shape[1]
    z = state.static @ coef[:s]
    z += intercept
    if state.pairs is not None:
        per_word, _ = _word_coefficients(state, coef)
        z += (_word_marks(state) if words is None else words) @ per_word
    return np.asarray(z, dtype=np.float64)


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

    Example:
        >>> import numpy as np
        >>> from diverse_core.adaptive.candidates import GoldModel
        >>> from diverse_core.validation import prepare_inputs
        >>> from diverse_core.learned.state import QueryState, feature_names
        >>> names = feature_names(False)
        >>> w = np.zeros(len(names)); w[names.index("sim_max")] = -2.0
        >>> m = GoldModel(np.zeros(len(names)), np.ones(len(names)), w, 0.0, names)
        >>> st = QueryState.build(prepare_inputs(np.ones(3), np.eye(3) + 0.1, 2, None))
        >>> steps = StepLogits(st, *m.folded)
        >>> steps.add(0)
        >>> bool(np.allclose(-steps.neg_logits(), -2.0 * st.sim[0]))
        True
    """

    def __init__(self, state: QueryState, coef: FloatArray, intercept: float) -> None:
        n, s = state.n, state.static.shape[1]
        c = [float(x) for x in coef[s: s + 6]]
        self._has_picks, self._step, self._sim_mean, self._over_rel = c[0], c[1], c[3], c[5]
        blocks: list[NDArray[np.float64] | NDArray[np.bool_]] = [state.sim, state.qdc]
        maxima = [c[2], c[4] + c[5]]  # sim_max; qdc_max (also inside qdc_over_rel)
        words: FloatArray | None = None
        if state.pairs is not None:
            pv = state.pairs
            blocks += [pv.same_title, pv.title_in, pv.title_in.T, pv.names_shared]
            maxima += [float(x) for x in coef[s + 6: s + 10]]
            words = _word_marks(state)
        n_words = 0 if words is None else words.shape[1]
        b = len(blocks)
        self.n, self._b, self._k, self._t = n, b, max(state.k, 1), 0
        # [j, m * n + i]: pair block m of pick j and candidate i (the blocks side by side, one row per pick)
        self._pairs = np.concatenate(blocks, axis=1, dtype=np.float64)
        # rows of h: b running maxima | the picks' summed cosines | -logit with no pick | relevance | ones | words
        h = self._h = np.zeros((b + 4 + n_words, n))
        self._maxima = h[:b].reshape(-1)
        self._sim_sum = h[b]
        self._no_pick: FloatArray = h[b + 1]
        np.negative(no_pick_logits(state, coef, intercept, words), out=self._no_pick)
        h[b + 2] = state.relevance
        h[b + 3] = 1.0
        u = self._u = np.zeros(b + 4 + n_words)
        u[:b] = [-x for x in maxima]
        u[b + 1] = 1.0
        self._words = words if n_words else None  # None: no word of the question to track
        self._held = u[b + 4:]  # 1 where some pick holds the word
        if words is not None:
            per_word, per_term = _word_coefficients(state, coef)
            n_t = state.pairs.view.term_hits.shape[1] if state.pairs is not None else 0
            rows = h[b + 4:]
            np.multiply(words.T, per_word[:, None], out=rows)  # a held word is no gain any more ...
            rows[:n_t] -= per_term  # ... and a held term counts in term_union

    @property
    def picked(self) -> int:
        """How many picks were added."""
        return self._t

    def add(self, j: int) -> None:
        """Add candidate ``j`` to the picks."""
        t = self._t = self._t + 1
        pair = self._pairs[j]
        if t == 1:
            np.copyto(self._maxima, pair)
            np.copyto(self._sim_sum, pair[: self.n])
            self._u[self._b + 2] = self._over_rel
        else:
            np.maximum(self._maxima, pair, out=self._maxima)
            np.add(self._sim_sum, pair[: self.n], out=self._sim_sum)
        if self._words is not None:
            np.maximum(self._held, self._words[j], out=self._held)
        u = self._u
        u[self._b] = -self._sim_mean / t
        u[self._b + 3] = -(self._has_picks + self._step * (t / self._k))

    def neg_logits(self, out: FloatArray | None = None) -> FloatArray:
        """Every candidate's negated logit given the picks so far (``out``: where to write it)."""
        if self._t == 0:
            if out is None:
                return self._no_pick.copy()
            np.copyto(out, self._no_pick)
            return out
        return np.asarray(np.matmul(self._u, self._h, out=out), dtype=np.float64)

    def sim_max(self) -> FloatArray:
        """Each candidate's highest cosine to a pick (0 before the first pick); a view."""
        return self._h[0] if self._t else np.zeros(self.n)

    def probabilities(self) -> FloatArray:
        """Every candidate's probability given the picks so far (``model.probabilities(state.rows(picks))``)."""
        y = self.neg_logits()
        return sigmoid_of_negated(y, y)
