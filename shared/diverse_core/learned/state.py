"""What the set-building model sees of one query: static candidate rows plus the state of a partial set.

The learned selector builds its set one pick at a time. At every step each remaining
candidate is described by two groups of features:

* **static** (computed once per query): the adaptive selector's per-candidate features
  (:func:`~diverse_core.adaptive.candidates.candidate_features`: relevance, rank,
  redundancy, and with texts which question words and names it holds);
* **state** (:data:`EMBEDDING_STATE_FEATURES` / :data:`TEXT_STATE_FEATURES`, updated
  after each pick in O(n)): how close it is to what was already picked (cosine, same
  source title), how strongly the picks point at it (DR-RAG's query-document
  concatenation direction ``cos(q + d, c)`` computed in embedding space, a picked text
  that names its title or the reverse: the bridge of a multi-hop question, names
  shared with a pick) and which of the question's words and names it adds to the picks.

:class:`QueryState` holds the ``(n, n)`` pair matrices of one query, built once with
array operations; :meth:`QueryState.rows` returns the ``(n, F)`` feature rows for a
partial set.

Example:
    >>> import numpy as np
    >>> from diverse_core.validation import prepare_inputs
    >>> rng = np.random.default_rng(0)
    >>> prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(6, 8)), 2, None)
    >>> st = QueryState.build(prep)
    >>> st.rows([]).shape == (6, len(feature_names(False)))
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..adaptive.candidates import (
    EMBEDDING_CANDIDATE_FEATURES,
    TEXT_CANDIDATE_FEATURES,
    static_features,
    word_rows,
)
from ..validation import PreparedInputs
from .pairview import PairView, pair_view
from .planes import fill_stack, qdc_into

__all__ = [
    "EMBEDDING_STATE_FEATURES",
    "TEXT_STATE_FEATURES",
    "PairView",
    "QueryState",
    "SetTracker",
    "feature_names",
    "pair_view",
]

FloatArray = NDArray[np.float64]

#: State features that need only the embeddings.
EMBEDDING_STATE_FEATURES = (
    "has_picks",  # 1 after the first pick
    "step",  # picks made / k
    "sim_max",  # highest cosine to a pick (0 before the first)
    "sim_mean",  # mean cosine to the picks
    "qdc_max",  # highest cos(unit(q + pick), candidate): DR-RAG's concatenated-search direction
    "qdc_over_rel",  # qdc_max minus the candidate's relevance (what the picks add to the query)
)

#: State features that also need the question and the candidate texts.
TEXT_STATE_FEATURES = (
    *EMBEDDING_STATE_FEATURES,
    "same_title",  # a pick has the same source: the ids given as ``sources``, else the same "title: " prefix
    "title_in_pick",  # share of its title's words (display name, else prefix) a pick's body contains
    "pick_title_in_it",  # share of a pick's title words its body contains (it names a pick)
    "names_shared",  # log(1 + most names (outside the question) shared with one pick)
    "term_gain",  # share of the question's words it holds that no pick holds
    "name_gain",  # same for the question's names
    "term_union",  # share of the question's words the picks and it hold together
)


def feature_names(text: bool) -> tuple[str, ...]:
    """The model's input columns: static candidate features, then the state features."""
    if text:
        return (*TEXT_CANDIDATE_FEATURES, *TEXT_STATE_FEATURES)
    return (*EMBEDDING_CANDIDATE_FEATURES, *EMBEDDING_STATE_FEATURES)


class QueryState:
    """The static rows and pair matrices of one query; :meth:`rows` describes a partial set.

    Build it with :meth:`build`; it is read-only afterwards (safe to share across threads).
    """

    def __init__(self, static: FloatArray, sim: FloatArray, qdc: FloatArray, relevance: FloatArray, k: int,
                 pairs: PairView | None) -> None:
        self.static = static
        self.sim = sim
        self.qdc = qdc
        self.relevance = relevance
        self.k = k
        self.pairs = pairs
        self.n = static.shape[0]
        self._stack: FloatArray | None = None
        self._words: FloatArray | None = None
        self._marks: FloatArray | None = None

    @classmethod
    def build(cls, prep: PreparedInputs, pairs: PairView | None = None, *, stacked: bool = False) -> QueryState:
        """The state of one prepared query (``pairs``: its :class:`PairView`, for the text features).

        ``stacked``: also keep what the picks read per pick (:meth:`pair_stack`, :meth:`word_rows`,
        :meth:`word_marks`; about ``6 n^2`` floats with texts), built once here instead of once per
        :func:`~diverse_core.learned.greedy.greedy_picks` call. For a state used right away (a
        selector call); leave it off for states kept in bulk (training examples).
        """
        unit = prep.candidates_unkept()
        rel = np.asarray(prep.relevance, dtype=np.float64)
        n = unit.shape[0]
        sim = unit @ unit.T
        cos_qi = unit @ np.asarray(prep.query, dtype=np.float64)
        del unit  # (n, d): freed before the stack below takes its place (no heap growth, no page faults)
        # cos(unit(q + u_i), u_j) = (rel_j + sim_ij) / |q + u_i|, with |q| = |u_i| = 1
        norm = np.multiply(cos_qi, 2.0)
        norm += 2.0
        np.sqrt(np.maximum(norm, 1e-12, out=norm), out=norm)
        view = None if pairs is None else pairs.view
        if stacked:  # the pair matrices whose maxima over the picks the step model reads, per pick ([j, m, i])
            stack = np.empty((n, 2 if pairs is None else 6, n))
            qdc = stack[:, 1, :]  # a view of the stack
        else:
            qdc = np.empty((n, n))
        qdc_into(sim, cos_qi, norm, qdc)
        words = None if view is None else word_rows(view)
        static = static_features(sim, rel, prep.k, view, None if pairs is None else pairs.shared, words)
        state = cls(static, sim, qdc, rel, prep.k, pairs)
        if stacked:
            planes = {0: sim} if pairs is None else {0: sim, 2: pairs.same_title, 3: pairs.title_in,
                                                     4: pairs.title_in.T, 5: pairs.names_shared}
            fill_stack(stack, planes)
            stack.setflags(write=False)  # read by every caller of the state
            state._stack = stack
            state._words = state.word_rows(words)
            state._marks = state.word_marks(state._words)
        return state

    def pair_stack(self) -> FloatArray:
        """``(n, b, n)``: per pick ``j``, the rows ``j`` of sim, qdc and, with texts, same_title, title_in,
        title_in.T and names_shared (the one built with the state, read-only; else a new one each call)."""
        if self._stack is not None:
            return self._stack
        pv = self.pairs
        blocks = [self.sim, self.qdc] if pv is None else [self.sim, self.qdc, pv.same_title, pv.title_in,
                                                           pv.title_in.T, pv.names_shared]
        return np.concatenate(blocks, axis=1, dtype=np.float64).reshape(self.n, len(blocks), self.n)

    def word_rows(self, words: FloatArray | None = None) -> FloatArray:
        """``(W, n)`` 0/1: which candidates hold each of the question's terms, then names (W = 0 without texts);
        ``words``: these rows when the caller has them."""
        if self._words is not None:
            return self._words
        if words is not None:
            return words
        return np.zeros((0, self.n)) if self.pairs is None else word_rows(self.pairs.view)

    def word_marks(self, words: FloatArray | None = None) -> FloatArray:
        """``(n, W)``: 0 where a candidate holds the word, -1 where not (:meth:`word_rows` - 1, one row per
        candidate); ``words``: the :meth:`word_rows` when the caller has them."""
        if self._marks is not None:
            return self._marks
        marks: FloatArray = np.subtract(self.word_rows(words).T, 1.0, order="C")
        return marks

    @property
    def uses_text(self) -> bool:
        """Whether the rows carry the text features."""
        return self.pairs is not None

    def without_text(self) -> QueryState:
        """The same query without its text features (what the embedding variant sees)."""
        if self.pairs is None:
            return self
        static = self.static[:, : len(EMBEDDING_CANDIDATE_FEATURES)]
        state = QueryState(static, self.sim, self.qdc, self.relevance, self.k, None)
        if self._stack is not None:
            state._stack = self._stack[:, :2, :]
        return state

    def rows(self, picks: Sequence[int]) -> FloatArray:
        """Feature rows (n, F) of every candidate given the picks so far (in pick order)."""
        idx = np.asarray(list(picks), dtype=np.int64)
        n, t = self.n, idx.shape[0]
        step = np.full(n, t / max(self.k, 1))
        if t == 0:
            zeros = np.zeros(n)
            state = [zeros, step, zeros, zeros, zeros, zeros]
        else:
            s = self.sim[idx]
            qdc = self.qdc[idx].max(axis=0)
            state = [np.ones(n), step, s.max(axis=0), s.mean(axis=0), qdc, qdc - self.relevance]
        cols = [self.static, np.column_stack(state)]
        if self.pairs is not None:
            cols.append(self._text_state(idx))
        return np.column_stack(cols)

    def _text_state(self, idx: NDArray[np.int64]) -> FloatArray:
        assert self.pairs is not None
        pv, n = self.pairs, self.n
        view = pv.view
        terms, names = view.term_hits, view.name_hits
        n_terms, n_names = max(terms.shape[1], 1), max(names.shape[1], 1)
        if idx.shape[0] == 0:
            zeros = np.zeros(n)
            gain_t = terms.sum(axis=1) / n_terms
            gain_n = names.sum(axis=1) / n_names
            return np.column_stack([zeros, zeros, zeros, zeros, gain_t, gain_n, gain_t])
        have_t = terms[idx].any(axis=0)
        have_n = names[idx].any(axis=0)
        return np.column_stack([
            pv.same_title[idx].any(axis=0).astype(np.float64),
            pv.title_in[idx].max(axis=0),
            pv.title_in[:, idx].max(axis=1),
            pv.names_shared[idx].max(axis=0),
            (terms & ~have_t).sum(axis=1) / n_terms,
            (names & ~have_n).sum(axis=1) / n_names,
            (terms | have_t).sum(axis=1) / n_terms,
        ])


class SetTracker:
    """The feature rows of a growing set, updated pick by pick in O(n) array operations.

    :meth:`QueryState.rows` recomputes every state feature from the whole pick list; the
    greedy loop only ever adds one pick, so this keeps running maxima, sums and "some pick
    holds this word" masks instead. The rows it returns equal ``state.rows(picks)`` bit for
    bit (maxima and ORs do not depend on the order; sums are added in pick order, as
    numpy's reduction over the picks' rows adds them).

    Example:
        >>> import numpy as np
        >>> from diverse_core.validation import prepare_inputs
        >>> rng = np.random.default_rng(0)
        >>> st = QueryState.build(prepare_inputs(rng.normal(size=8), rng.normal(size=(6, 8)), 3, None))
        >>> tr = SetTracker(st); tr.add(4); tr.add(1)
        >>> bool(np.array_equal(tr.rows(), st.rows([4, 1])))
        True
    """

    def __init__(self, state: QueryState) -> None:
        self.state = state
        n, width = state.n, state.static.shape[1]
        n_state = len(TEXT_STATE_FEATURES if state.pairs is not None else EMBEDDING_STATE_FEATURES)
        self._x = np.zeros((n, width + n_state))
        self._x[:, :width] = state.static
        s = self._s = width  # first state column
        self._t = 0
        self._sim_sum = np.zeros(n)
        # the features that are a maximum over the picks, one (n, m) block per pick j: [j, i, :]
        blocks = [state.sim, state.qdc]
        self._max_cols = [s + 2, s + 4]
        if state.pairs is not None:
            pv, view, e = state.pairs, state.pairs.view, s + len(EMBEDDING_STATE_FEATURES)
            blocks += [pv.same_title.astype(np.float64), pv.title_in, pv.title_in.T, pv.names_shared]
            self._max_cols += [e, e + 1, e + 2, e + 3]
            n_t, n_n = view.term_hits.shape[1], view.name_hits.shape[1]
            # the question's words and names side by side; (words, 2) marks of what the picks hold, per kind
            self._words = np.concatenate([view.term_hits, view.name_hits], axis=1).astype(np.float64)
            self._held = np.zeros((n_t + n_n, 2))
            self._spread = np.zeros((n, n_t + n_n, 2))  # [j, w, kind]: pick j holds word w of that kind
            self._spread[:, :n_t, 0] = self._words[:, :n_t]
            self._spread[:, n_t:, 1] = self._words[:, n_t:]
            self._counts = np.column_stack([view.term_hits.sum(axis=1), view.name_hits.sum(axis=1)]).astype(np.float64)
            self._sizes = np.array([max(n_t, 1), max(n_n, 1)], dtype=np.float64)
            self._e = e
        self._pairs = np.stack(blocks, axis=-1)
        self._max = np.zeros((n, len(blocks)))
        self._fill_empty()

    def _fill_empty(self) -> None:
        x, s = self._x, self._s
        x[:, s:] = 0.0
        if self.state.pairs is not None:  # nothing picked: every word of the question is a gain
            e = self._e
            x[:, e + 4: e + 6] = self._counts / self._sizes
            x[:, e + 6] = x[:, e + 4]

    def add(self, j: int) -> None:
        """Add candidate ``j`` to the picks."""
        st, x, s = self.state, self._x, self._s
        self._t += 1
        if self._t == 1:
            x[:, s] = 1.0
            self._max[:] = self._pairs[j]
            self._sim_sum[:] = st.sim[j]
        else:
            np.maximum(self._max, self._pairs[j], out=self._max)
            self._sim_sum += st.sim[j]
        x[:, self._max_cols] = self._max
        x[:, s + 1] = self._t / max(st.k, 1)
        x[:, s + 3] = self._sim_sum / self._t
        np.subtract(x[:, s + 4], st.relevance, out=x[:, s + 5])
        if st.pairs is None:
            return
        e = self._e
        np.maximum(self._held, self._spread[j], out=self._held)
        # counts of the question's words (names) each candidate holds that no pick holds: small integers, exact
        gain = self._counts - self._words @ self._held
        x[:, e + 4: e + 6] = gain / self._sizes
        x[:, e + 6] = (gain[:, 0] + self._held[:, 0].sum()) / self._sizes[0]

    def rows(self) -> FloatArray:
        """The (n, F) feature rows given the picks so far (a view: copy it to keep it)."""
        return self._x

    def sim_max(self) -> FloatArray:
        """Each candidate's highest cosine to a pick (0 before the first pick)."""
        return self._x[:, self._s + 2]
