"""What the set-building model sees of one query: static candidate rows plus the state of a partial set.

The learned selector builds its set one pick at a time. At every step each remaining
candidate is described by two groups of features:

* **static** (computed once per query): the candidate features both trained selectors share
  (:func:`~diverse_core.trained.candidates.static_features`: relevance, rank, redundancy and,
  with texts, which of the question's words and names it holds);
* **state**: how the picks so far relate to it. Each state feature is declared once, as data, in
  :data:`TEXT_STATE` (a :class:`StateFeature`: its name, the pair matrix or word group it reads,
  the reduction over the picks); :class:`PickedSet` keeps the running reductions of a growing set
  and writes every feature row from that table, for the greedy loop and for training alike.

The pair matrices are never built: pick ``j``'s row of each (cosine, ``cos(unit(q + pick), c)``:
DR-RAG's concatenated-query direction, same source, title mentions both ways, shared names) is
computed when ``j`` is picked (:meth:`QueryState.pair_rows`), so one query takes O(n·d + n·F)
memory, plus O(n·B) for the blocked cosines of the static rows.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..trained.candidates import (
    EMBEDDING_CANDIDATE_FEATURES,
    TEXT_CANDIDATE_FEATURES,
    static_features,
)
from ..trained.scale import IDENTITY, PoolScale
from ..validation import PreparedInputs
from .pairview import TEXT_PAIRS, PairView

__all__ = [
    "EMBEDDING_STATE_FEATURES",
    "TEXT_STATE",
    "TEXT_STATE_FEATURES",
    "PickedSet",
    "QueryState",
    "StateFeature",
    "feature_names",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class StateFeature:
    """One state feature: what it reads and how it reduces over the picks.

    Attributes:
        name: the model's column name.
        reads: the pair matrix (``"sim"``, ``"qdc"``, ``"same_source"``, ``"title_in"``,
            ``"title_in_column"``, ``"names_shared"``: row ``j`` for pick ``j``), the question's word
            group (``"terms"``, ``"names"``) or ``""`` (the count of picks).
        reduce: ``"max"`` / ``"mean"`` over the picks' rows (0 before the first pick); ``"max_minus_rel"``:
            the maximum minus the candidate's relevance; ``"gain"``: the share of the group's words the
            candidate holds and no pick holds; ``"union"``: the share the picks and it hold together;
            ``"any"``: 1 after the first pick; ``"step"``: picks / k.
    """

    name: str
    reads: str
    reduce: str


#: The state features that need only the embeddings.
EMBEDDING_STATE = (
    StateFeature("has_picks", "", "any"),
    StateFeature("step", "", "step"),
    StateFeature("sim_max", "sim", "max"),  # highest cosine to a pick
    StateFeature("sim_mean", "sim", "mean"),
    StateFeature("qdc_max", "qdc", "max"),  # highest cos(unit(q + pick), candidate)
    StateFeature("qdc_over_rel", "qdc", "max_minus_rel"),  # what the picks add to the query
)

#: Every state feature, the text ones after the embedding ones.
TEXT_STATE = (
    *EMBEDDING_STATE,
    StateFeature("same_source", "same_source", "max"),  # a pick has its source (``sources``, else the title prefix)
    StateFeature("title_in_pick", "title_in", "max"),  # share of its title words a pick's body holds
    StateFeature("pick_title_in_it", "title_in_column", "max"),  # share of a pick's title words its body holds
    StateFeature("names_shared", "names_shared", "max"),  # log(1 + most names shared with one pick)
    StateFeature("term_gain", "terms", "gain"),
    StateFeature("name_gain", "names", "gain"),
    StateFeature("term_union", "terms", "union"),
)

#: The pair matrices the state features read, in the order of :meth:`QueryState.pair_rows` (the first two
#: need only the embeddings).
MATRICES = ("sim", "qdc", *TEXT_PAIRS)
#: The question's word groups the gain and union features read.
GROUPS = ("terms", "names")
EMBEDDING_STATE_FEATURES = tuple(f.name for f in EMBEDDING_STATE)
TEXT_STATE_FEATURES = tuple(f.name for f in TEXT_STATE)
#: Older model files name ``same_source`` by its former name.
RENAMED = {"same_title": "same_source"}


def feature_names(text: bool) -> tuple[str, ...]:
    """The model's input columns: static candidate features, then the state features."""
    if text:
        return (*TEXT_CANDIDATE_FEATURES, *TEXT_STATE_FEATURES)
    return (*EMBEDDING_CANDIDATE_FEATURES, *EMBEDDING_STATE_FEATURES)


class QueryState:
    """The static rows of one query and what its picks read (read-only after :meth:`build`: safe to share).

    Every cosine it reads is on the pool's common scale (:class:`~diverse_core.trained.scale.PoolScale`):
    the static rows, ``relevance``, and the pair rows of each pick.

    Attributes:
        static: (n, S) the static feature rows.
        relevance: (n,) each candidate's relevance (on the common scale).
        k: the set size.
        pairs: the query's :class:`~diverse_core.learned.pairview.PairView` (``None``: no texts).
        scale: the pool's :class:`~diverse_core.trained.scale.PoolScale`.
    """

    def __init__(self, static: FloatArray, unit: FloatArray, cos_q: FloatArray, relevance: FloatArray, k: int,
                 pairs: PairView | None, scale: PoolScale = IDENTITY) -> None:
        self.static = static
        self.unit = unit
        self.cos_q = cos_q
        self.relevance = relevance
        self.k = k
        self.pairs = pairs
        self.scale = scale
        self.n = static.shape[0]
        # |q + u_j| with |q| = |u_j| = 1: cos(unit(q + u_j), u_i) = (cos_q_i + sim_ji) / norm_j
        self.norm = np.sqrt(np.maximum(cos_q * 2.0 + 2.0, 1e-12))

    @classmethod
    def build(cls, prep: PreparedInputs, pairs: PairView | None = None) -> QueryState:
        """The state of one prepared query (``pairs``: its :class:`PairView`, for the text features)."""
        unit = prep.candidates
        rel = np.asarray(prep.relevance, dtype=np.float64)
        cos_q = unit @ np.asarray(prep.query, dtype=np.float64)
        scale = PoolScale.of_pool(unit, rel)
        static = static_features(unit, rel, prep.k, None if pairs is None else pairs.text, scale)
        return cls(static, unit, cos_q, scale.relevance(rel), prep.k, pairs, scale)

    @property
    def uses_text(self) -> bool:
        """Whether the rows carry the text features."""
        return self.pairs is not None

    @property
    def table(self) -> tuple[StateFeature, ...]:
        """The state features of its rows."""
        return TEXT_STATE if self.pairs is not None else EMBEDDING_STATE

    def without_text(self) -> QueryState:
        """The same query without its text features (what the embedding variant sees)."""
        if self.pairs is None:
            return self
        static = self.static[:, : len(EMBEDDING_CANDIDATE_FEATURES)]
        return QueryState(static, self.unit, self.cos_q, self.relevance, self.k, None, self.scale)

    def pair_rows(self, j: int) -> FloatArray:
        """Pick ``j``'s row of every pair matrix the state features read, in :data:`MATRICES` order: (m, n).

        The cosines are on the common scale: ``sim`` as candidate pairs, ``qdc`` (a query-side cosine) as relevance.
        """
        pv = self.pairs
        out = np.empty((2 if pv is None else len(MATRICES), self.n))
        np.matmul(self.unit, self.unit[j], out=out[0])
        np.divide(self.cos_q + out[0], self.norm[j], out=out[1])
        out[0] = self.scale.similarity(out[0])
        out[1] = self.scale.relevance(out[1])
        if pv is not None:
            pv.rows(j, out[2:])
        return out

    def rows(self, picks: Sequence[int]) -> FloatArray:
        """Feature rows (n, F) of every candidate given the picks so far (in pick order): a new array."""
        picked = PickedSet(self)
        for j in picks:
            picked.add(int(j))
        return picked.rows()


@lru_cache(maxsize=64)
def _reduction_weights(text: bool, coef: bytes) -> tuple[Any, ...]:
    """What each running reduction weighs in a linear model over the state columns ``coef`` (float64 bytes; of
    :data:`TEXT_STATE` with ``text``, else of :data:`EMBEDDING_STATE`):
    ``(per matrix maximum, per matrix sum, relevance, any, step, per word group, per group of held words)``
    (see :meth:`PickedSet.linear`; the word groups' weights still to be divided by the groups' sizes)."""
    w_max, w_mean = np.zeros(len(MATRICES)), np.zeros(len(MATRICES))
    word_c, held_c = np.zeros(len(GROUPS)), np.zeros(len(GROUPS))
    w_rel = w_any = w_step = 0.0
    for c, f in zip(np.frombuffer(coef).tolist(), TEXT_STATE if text else EMBEDDING_STATE, strict=True):
        if f.reduce in ("max", "max_minus_rel"):
            w_max[MATRICES.index(f.reads)] += c
            w_rel += c if f.reduce == "max_minus_rel" else 0.0
        elif f.reduce == "mean":
            w_mean[MATRICES.index(f.reads)] += c
        elif f.reduce == "any":
            w_any += c
        elif f.reduce == "step":
            w_step += c
        else:  # "gain", "union": the group's words it holds, less those the picks hold; a union adds the latter
            word_c[GROUPS.index(f.reads)] += c
            held_c[GROUPS.index(f.reads)] += c if f.reduce == "union" else 0.0
    return w_max, w_mean, w_rel, w_any, w_step, word_c, held_c


class PickedSet:
    """A growing set of picks: the running reductions of :data:`TEXT_STATE`, and what they give.

    Each pick updates the running maxima and sums of every pair matrix (one (m, n) block each) and
    which of the question's words some pick holds. From them and the table, :meth:`rows` writes the
    feature rows, and :meth:`linear` the logit of a linear model over those rows without writing them
    (every state feature is linear in the running reductions).

    Example:
        >>> import numpy as np
        >>> from diverse_core.validation import prepare_inputs
        >>> st = QueryState.build(prepare_inputs(np.ones(3), np.eye(3) + 0.1, 2, None))
        >>> s = PickedSet(st); s.add(0)
        >>> col = s.rows()[:, feature_names(False).index("sim_max")]  # cosines on the pool's common scale
        >>> bool(np.allclose(col, st.scale.similarity(st.unit @ st.unit[0])))
        True
        >>> coef = np.arange(s.rows().shape[1], dtype=float)
        >>> bool(np.allclose(s.linear(coef, 0.5)(), s.rows() @ coef + 0.5))
        True
    """

    def __init__(self, state: QueryState) -> None:
        self.state = state
        self.picks: list[int] = []
        n, pv = state.n, state.pairs
        m = 2 if pv is None else len(MATRICES)
        q = 0 if pv is None else pv.words.shape[0]
        # one (2m + Q + 1, n) block: the running maxima and sums of the pair matrices, who holds each of the
        # question's words, the relevance (what a linear model's logit is a product with, see linear())
        self._h = np.zeros((2 * m + q + 1, n))
        self._maxima, self._sums = self._h[:m], self._h[m: 2 * m]
        self._h[2 * m: 2 * m + q] = 0.0 if pv is None else pv.words
        self._h[-1] = state.relevance
        self._words = self._h[2 * m: 2 * m + q].T  # (n, Q)
        # the question's word groups: (Q, G) which group each word is in
        self._member = np.zeros((q, len(GROUPS)))
        if pv is not None:
            self._member[: len(pv.terms), GROUPS.index("terms")] = 1.0
            self._member[len(pv.terms):, GROUPS.index("names")] = 1.0
        self._held = np.zeros(q)  # 1 where some pick holds the word
        self._counts = self._words @ self._member  # (n, G): the words of each group each candidate holds
        self._sizes = np.maximum(self._member.sum(axis=0), 1.0)

    def add(self, j: int) -> None:
        """Add candidate ``j`` to the picks."""
        rows = self.state.pair_rows(j)
        if self.picks:
            np.maximum(self._maxima, rows, out=self._maxima)
        else:
            self._maxima[:] = rows
        self._sums += rows
        np.maximum(self._held, self._words[j], out=self._held)
        self.picks.append(j)

    def sim_max(self) -> FloatArray:
        """Each candidate's highest cosine to a pick (0 before the first pick)."""
        sim_max: FloatArray = self._maxima[0]
        return sim_max

    def rows(self) -> FloatArray:
        """The (n, F) feature rows given the picks so far: the static columns, then one per state feature."""
        st, t = self.state, len(self.picks)
        held = self._held[:, None] * self._member  # (Q, G)
        both = self._words @ held  # (n, G): the words of each group a candidate and some pick hold
        cols = []
        for f in st.table:
            if f.reduce in ("max", "max_minus_rel"):
                col = self._maxima[MATRICES.index(f.reads)]
                cols.append(col - st.relevance if f.reduce == "max_minus_rel" and t else col)
            elif f.reduce == "mean":
                cols.append(self._sums[MATRICES.index(f.reads)] / max(t, 1))
            elif f.reduce in ("any", "step"):
                cols.append(np.full(st.n, float(t > 0) if f.reduce == "any" else t / max(st.k, 1)))
            else:  # "gain", "union": the share of the group's words it holds and no pick does, or it or a pick does
                g = GROUPS.index(f.reads)
                count = self._counts[:, g] - both[:, g]
                cols.append((count + held[:, g].sum() if f.reduce == "union" else count) / self._sizes[g])
        return np.column_stack([st.static, *cols])

    def linear(self, coef: FloatArray, intercept: float) -> Callable[[], FloatArray]:
        """``rows() @ coef + intercept`` given the picks at the time of each call, from the running reductions.

        The weights of each reduction follow from the table once: a maximum or a mean weighs its
        matrix's running maximum or sum, ``max_minus_rel`` also the relevance, a gain or a union the
        group's words a candidate holds, minus those it shares with the picks (and a union the
        group's words the picks hold).
        """
        st = self.state
        s = st.static.shape[1]
        m, q = self._maxima.shape[0], self._held.shape[0]
        w_max, w_mean, w_rel, w_any, w_step, word_c, held_c = _reduction_weights(st.uses_text, coef[s:].tobytes())
        w_max, w_mean, w_step = w_max[:m], w_mean[:m], w_step / max(st.k, 1)
        per_group, held_group = word_c / self._sizes, held_c / self._sizes
        base = st.static @ coef[:s] + intercept + self._counts @ per_group
        minus_per_word, held_word = self._member @ -per_group, self._member @ held_group
        u = np.zeros(self._h.shape[0])  # the weights of the rows of the block

        def logits() -> FloatArray:
            t = len(self.picks)
            if t:
                u[:m] = w_max
                np.divide(w_mean, t, out=u[m: 2 * m])
                u[-1] = -w_rel
            np.multiply(self._held, minus_per_word, out=u[2 * m: 2 * m + q])
            shift = float(self._held @ held_word) + (w_any + w_step * t if t else 0.0)
            return np.asarray(u @ self._h + base + shift, dtype=np.float64)

        return logits
