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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..trained.candidates import EMBEDDING_CANDIDATE_FEATURES, TEXT_CANDIDATE_FEATURES, static_features
from ..validation import PreparedInputs
from .pairview import PairView

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
MATRICES = ("sim", "qdc", "same_source", "title_in", "title_in_column", "names_shared")
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

    Attributes:
        static: (n, S) the static feature rows.
        relevance: (n,) each candidate's relevance.
        k: the set size.
        pairs: the query's :class:`~diverse_core.learned.pairview.PairView` (``None``: no texts).
    """

    def __init__(self, static: FloatArray, unit: FloatArray, cos_q: FloatArray, relevance: FloatArray, k: int,
                 pairs: PairView | None) -> None:
        self.static = static
        self.unit = unit
        self.cos_q = cos_q
        self.relevance = relevance
        self.k = k
        self.pairs = pairs
        self.n = static.shape[0]
        # |q + u_j| with |q| = |u_j| = 1: cos(unit(q + u_j), u_i) = (cos_q_i + sim_ji) / norm_j
        self.norm = np.sqrt(np.maximum(cos_q * 2.0 + 2.0, 1e-12))

    @classmethod
    def build(cls, prep: PreparedInputs, pairs: PairView | None = None) -> QueryState:
        """The state of one prepared query (``pairs``: its :class:`PairView`, for the text features)."""
        unit = prep.candidates
        rel = np.asarray(prep.relevance, dtype=np.float64)
        cos_q = unit @ np.asarray(prep.query, dtype=np.float64)
        static = static_features(unit, rel, prep.k, None if pairs is None else pairs.text)
        return cls(static, unit, cos_q, rel, prep.k, pairs)

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
        return QueryState(static, self.unit, self.cos_q, self.relevance, self.k, None)

    def pair_rows(self, j: int) -> FloatArray:
        """Pick ``j``'s row of every pair matrix the state features read, in :data:`MATRICES` order: (m, n)."""
        pv = self.pairs
        out = np.empty((2 if pv is None else len(MATRICES), self.n))
        np.matmul(self.unit, self.unit[j], out=out[0])
        np.divide(self.cos_q + out[0], self.norm[j], out=out[1])
        if pv is not None:
            out[2:] = (pv.same_source(j), pv.title_in(j), pv.title_in_column(j), pv.names_shared(j))
        return out

    def rows(self, picks: Sequence[int]) -> FloatArray:
        """Feature rows (n, F) of every candidate given the picks so far (in pick order): a new array."""
        picked = PickedSet(self)
        for j in picks:
            picked.add(int(j))
        return picked.rows().copy()


class PickedSet:
    """A growing set of picks: the running reductions of :data:`TEXT_STATE` and the feature rows they give.

    Each pick updates the running maxima and sums of every pair matrix (one (m, n) block each) and
    which of the question's words some pick holds; then every state column is rewritten from the table.

    Example:
        >>> import numpy as np
        >>> from diverse_core.validation import prepare_inputs
        >>> st = QueryState.build(prepare_inputs(np.ones(3), np.eye(3) + 0.1, 2, None))
        >>> s = PickedSet(st); s.add(0)
        >>> bool(np.allclose(s.rows()[:, feature_names(False).index("sim_max")], st.unit @ st.unit[0]))
        True
    """

    def __init__(self, state: QueryState) -> None:
        self.state = state
        self.picks: list[int] = []
        n, s = state.n, state.static.shape[1]
        table = state.table
        self._x = np.zeros((n, s + len(table)))
        self._x[:, :s] = state.static
        self._maxima = np.zeros((2 if state.pairs is None else len(MATRICES), n))
        self._sums = np.zeros_like(self._maxima)
        # the table's columns by reduction: where each goes in the rows, and what it reads
        self._max_cols = [s + c for c, f in enumerate(table) if f.reduce in ("max", "max_minus_rel")]
        self._max_rows = [MATRICES.index(f.reads) for f in table if f.reduce in ("max", "max_minus_rel")]
        self._less_rel = [s + c for c, f in enumerate(table) if f.reduce == "max_minus_rel"]
        self._other = [(s + c, f) for c, f in enumerate(table) if f.reduce not in ("max", "max_minus_rel")]
        pv = state.pairs
        self._hits: dict[str, NDArray[np.bool_]] = {}
        if pv is not None:  # (n, words) who holds each of the group's words
            held = pv.words.T > 0
            self._hits = {"terms": held[:, : len(pv.terms)], "names": held[:, len(pv.terms):]}
        self._held = {g: np.zeros(h.shape[1], dtype=bool) for g, h in self._hits.items()}
        self._write()

    def add(self, j: int) -> None:
        """Add candidate ``j`` to the picks."""
        rows = self.state.pair_rows(j)
        if self.picks:
            np.maximum(self._maxima, rows, out=self._maxima)
        else:
            self._maxima[:] = rows
        self._sums += rows
        for g, held in self._held.items():
            held |= self._hits[g][j]
        self.picks.append(j)
        self._write()

    def sim_max(self) -> FloatArray:
        """Each candidate's highest cosine to a pick (0 before the first pick)."""
        return self._maxima[0]

    def _write(self) -> None:
        """Rewrite every state column from the running reductions (see :class:`StateFeature`)."""
        x, t = self._x, len(self.picks)
        x[:, self._max_cols] = self._maxima[self._max_rows].T
        if t:
            x[:, self._less_rel] -= self.state.relevance[:, None]
        for c, f in self._other:
            if f.reduce == "any":
                x[:, c] = float(t > 0)
            elif f.reduce == "step":
                x[:, c] = t / max(self.state.k, 1)
            elif f.reduce == "mean":
                x[:, c] = self._sums[MATRICES.index(f.reads)] / max(t, 1)
            else:  # "gain", "union": the share of the group's words
                hits, held = self._hits[f.reads], self._held[f.reads]
                mark = hits & ~held if f.reduce == "gain" else hits | held
                x[:, c] = mark.sum(axis=1) / max(hits.shape[1], 1)

    def rows(self) -> FloatArray:
        """The (n, F) feature rows given the picks so far (a buffer rewritten by :meth:`add`: copy it to keep)."""
        return self._x
