"""DR-RAG's document selection (Hei et al. 2024, §2.2), framework-free.

Stage 1 takes the ``k1`` documents most similar to the question. Stage 2 (QDC) searches again
with the question followed by each stage-1 document; each stage-1 document in turn examines the
first ``m`` hits of its search not chosen yet. Then:

* ``"qdc"`` (eq. 1): each stage-1 document adds its best hit not already chosen.
* ``"cfs"`` (eq. 4, the paper's final method): each stage-1 document ``d_i`` adds its first
  examined hit ``d'`` with ``C(q, d_i, d') >= threshold``; possibly none.
* ``"cis"`` (eq. 3): QDC's documents, less the stage-2 ones no stage-1 document pairs with.

Where the paper is ambiguous the default follows its equations and the other reading is an
option: ``per_doc`` ("first": one stage-2 document per stage-1 document, eqs. 1 and 4; "all":
every accepted hit, Algorithm 1 and App. A.2), ``k1`` (default ``ceil(k / 2)``; the paper only
states ``k1 + k2 = k``), ``cis_rule`` ("stage1": eq. 3; "pairwise": all ``C(k, 2)`` pairs, the
prose) with ``protect_stage1``. Pairs are scored earlier document first (the shipped classifier
is trained on both orders). ``fill=True`` (ours) tops the result up to ``k`` from the question's
ranking, skipping what CIS removed (CFS's rejected hits stay eligible).

Example:
    >>> accept = {("a", "c")}
    >>> score = lambda xs, ys: [float((x, y) in accept) for x, y in zip(xs, ys)]
    >>> sel = select_drrag(["a", "b", "x", "y"], [["a", "c"], ["b", "a", "d"]], k=4,
    ...                    mode="cfs", scorer=score)
    >>> sel.ids
    ('a', 'b', 'c')
    >>> sel.picks[2].source, sel.picks[2].stage
    ('a', 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from ...validation import check_k, check_unit_interval
from ..options import check_choice

__all__ = [
    "MODES",
    "PER_DOC",
    "CIS_RULES",
    "PairScorer",
    "DrragPick",
    "DrragSelection",
    "default_k1",
    "select_drrag",
]

MODES = ("qdc", "cfs", "cis")
PER_DOC = ("first", "all")
CIS_RULES = ("stage1", "pairwise")

IdT = TypeVar("IdT", bound=Hashable)

#: ``scorer(firsts, seconds) -> probabilities``: one batched call for many pairs, the
#: probability that both documents of pair ``(firsts[i], seconds[i])`` are needed.
PairScorer = Callable[[Sequence[Any], Sequence[Any]], ArrayLike]


@dataclass(frozen=True)
class DrragPick(Generic[IdT]):
    """One chosen document and how it was found.

    Attributes:
        doc_id: the document.
        stage: 1 (similarity to the question) or 2 (a concatenated search).
        source: the stage-1 document whose concatenated search found it (stage 2 only).
        probability: the classifier probability that decided it (``None`` when no
            classifier was asked: stage-1 documents, QDC, fill).
        mode: the selection mode.
        filled: added by ``fill`` (from the question's ranking, after the paper's steps).
    """

    doc_id: IdT
    stage: int
    source: IdT | None
    probability: float | None
    mode: str
    filled: bool = False


@dataclass(frozen=True)
class DrragSelection(Generic[IdT]):
    """The documents DR-RAG chose, in order: stage-1 documents first, then stage 2, then fill.

    Attributes:
        picks: one :class:`DrragPick` per chosen document.
        mode: the selection mode.
        k: the requested number of documents (at most this many come back).
        k1: the number of stage-1 documents used.
        rejected: documents the classifier examined and never accepted.
    """

    picks: tuple[DrragPick[IdT], ...]
    mode: str
    k: int
    k1: int
    rejected: tuple[IdT, ...] = ()

    @property
    def ids(self) -> tuple[IdT, ...]:
        """The chosen document ids, in order."""
        return tuple(p.doc_id for p in self.picks)

    def __len__(self) -> int:
        return len(self.picks)


def default_k1(k: int) -> int:
    """The default number of stage-1 documents, ``ceil(k / 2)``."""
    return int(math.ceil(check_k(k) / 2))


class _Codes:
    """Integer codes for document ids, so membership tests run on arrays."""

    def __init__(self) -> None:
        self.index: dict[Hashable, int] = {}
        self.ids: list[Hashable] = []

    def encode(self, ids: Sequence[Hashable]) -> NDArray[np.int64]:
        for doc in ids:
            if doc not in self.index:
                self.index[doc] = len(self.ids)
                self.ids.append(doc)
        return np.array([self.index[doc] for doc in ids], dtype=np.int64)


def _call_scorer(scorer: PairScorer, firsts: Sequence[Any], seconds: Sequence[Any]) -> NDArray[np.float64]:
    if not firsts:
        return np.zeros(0, dtype=np.float64)
    probs = np.asarray(scorer(list(firsts), list(seconds)), dtype=np.float64).reshape(-1)
    if probs.shape[0] != len(firsts):
        raise DimensionMismatchError(f"scorer returned {probs.shape[0]} probabilities for {len(firsts)} pairs")
    if not np.all(np.isfinite(probs)):
        raise NonFiniteInputError("scorer returned NaN or inf probabilities")
    return probs


def select_drrag(
    ranking: Sequence[IdT],
    hits: Sequence[Sequence[IdT]],
    k: int,
    *,
    mode: str = "cfs",
    k1: int | None = None,
    m: int = 5,
    scorer: PairScorer | None = None,
    threshold: float = 0.5,
    fill: bool = False,
    per_doc: str = "first",
    cis_rule: str = "stage1",
    protect_stage1: bool = True,
) -> DrragSelection[IdT]:
    """Choose at most ``k`` documents the DR-RAG way (see the module docstring for the modes).

    Args:
        ranking: document ids ranked by similarity to the question, best first. The first
            ``k1`` are the stage-1 documents; the rest only serve ``fill``.
        hits: ``hits[i]``: the ranked hits of the search with the question followed by
            ``ranking[i]`` (at least ``k1`` rows). Pass ``m + k`` hits per row so that ``m``
            remain after skipping the documents already chosen.
        k: the most documents to return.
        mode: ``"qdc"``, ``"cfs"`` (default) or ``"cis"``.
        k1: stage-1 documents, ``1 <= k1 <= k`` (default ``ceil(k / 2)``).
        m: hits examined per concatenated search, not counting documents already chosen.
        scorer: batched pair classifier ``(firsts, seconds) -> probabilities``; required for
            ``"cfs"`` and ``"cis"``. It is called once per selection.
        threshold: a pair is accepted when its probability is ``>= threshold`` (in [0, 1]).
        fill: top up to ``k`` from ``ranking``, skipping what CIS removed (ours, not the paper's).
        per_doc: ``"first"`` (the equations, default) or ``"all"`` (Algorithm 1 / A.2).
        cis_rule: ``"stage1"`` (eq. 3, default) or ``"pairwise"`` (the prose).
        protect_stage1: CIS never removes stage-1 documents (default True).

    Returns:
        A :class:`DrragSelection`: stage-1 documents first, then stage 2, then fill.

    Raises:
        InvalidParameterError: bad ``k``, ``k1``, ``m``, ``threshold``, ``mode``,
            ``per_doc`` or ``cis_rule``, or no ``scorer`` for a mode that needs one.
        DimensionMismatchError: fewer ``hits`` rows than stage-1 documents, or a scorer
            answer of the wrong length.

    Example:
        >>> select_drrag(["a", "b"], [["a", "c"], ["b", "d"]], k=4, mode="qdc").ids
        ('a', 'b', 'c', 'd')
    """
    k = check_k(k)
    mode = check_choice(mode, "mode", MODES)
    per_doc = check_choice(per_doc, "per_doc", PER_DOC)
    cis_rule = check_choice(cis_rule, "cis_rule", CIS_RULES)
    k1 = default_k1(k) if k1 is None else check_k(k1, "k1")
    if k1 > k:
        raise InvalidParameterError(f"k1 must be <= k={k}; got k1={k1!r}")
    m = check_k(m, "m")
    threshold = check_unit_interval(threshold, "threshold")
    if mode != "qdc" and scorer is None:
        raise InvalidParameterError(f"mode={mode!r} needs a scorer (a pair classifier); got scorer=None")
    codes = _Codes()
    rank_codes = codes.encode(list(ranking))
    rank_pos = np.sort(np.unique(rank_codes, return_index=True)[1])  # repeated ids count once
    rank_codes = rank_codes[rank_pos]
    n1 = min(k1, rank_codes.shape[0])
    stage1 = rank_codes[:n1]
    rows_of = rank_pos[:n1].tolist()  # hits[rows_of[i]] belongs to stage-1 document i
    if n1 and len(hits) <= rows_of[-1]:
        raise DimensionMismatchError(f"hits has {len(hits)} rows for {n1} stage-1 documents (k1={k1})")
    # Per stage-1 document, its hits that are not stage-1 documents, in rank order. A document
    # examines the first ``m`` of them not chosen yet when its turn comes, so at most
    # m + (k - n1) can matter.
    depth = m + max(k - n1, 0)
    grid = np.full((n1, depth), -1, dtype=np.int64)  # -1: no hit in that slot
    for i in range(n1):
        row = codes.encode(list(hits[rows_of[i]]))
        firsts = np.sort(np.unique(row, return_index=True)[1]) if row.size else row
        keep = firsts[~np.isin(row[firsts], stage1)][:depth]
        grid[i, : keep.shape[0]] = row[keep]
    present = grid >= 0

    def ranked(c: int, filled: bool = False) -> DrragPick[IdT]:
        """The pick of code ``c`` from the question's ranking (stage 1 or fill)."""
        return DrragPick(codes.ids[c], 1, None, None, mode, filled=filled)  # type: ignore[arg-type]

    chosen = [int(c) for c in stage1[:k]]
    picks: list[DrragPick[IdT]] = [ranked(c) for c in chosen]

    prob_grid = np.full(grid.shape, np.nan)
    if mode == "cfs":
        ii, jj = np.nonzero(present)
        prob_grid[ii, jj] = _call_scorer(
            scorer,  # type: ignore[arg-type]
            [codes.ids[c] for c in stage1[ii]],
            [codes.ids[c] for c in grid[ii, jj]],
        )
        accepted = present & (np.nan_to_num(prob_grid, nan=-1.0) >= threshold)
    else:  # QDC (and the start of CIS) accepts every hit examined
        accepted = present
    rejected: set[int] = set()
    for i in range(n1):  # loop over stage-1 documents; each row is handled with arrays
        if len(chosen) >= k:
            break
        window = np.flatnonzero(present[i] & ~np.isin(grid[i], np.asarray(chosen, dtype=np.int64)))[:m]
        rejected.update(grid[i, window[~accepted[i, window]]].tolist())
        take = window[accepted[i, window]]
        if per_doc == "first":
            take = take[:1]
        for j in take[: k - len(chosen)].tolist():
            c = int(grid[i, j])
            chosen.append(c)
            prob = None if mode != "cfs" else float(prob_grid[i, j])
            picks.append(DrragPick(codes.ids[c], 2, codes.ids[int(stage1[i])], prob, mode))  # type: ignore[arg-type]
    rejected -= set(chosen)
    dropped: set[int] = set()  # removed by CIS: judged against every stage-1 document
    if mode == "cis":
        picks, dropped = _inverse(
            picks, chosen, len(stage1[:k]), codes, scorer, threshold, cis_rule, protect_stage1  # type: ignore[arg-type]
        )
        chosen = [int(codes.index[p.doc_id]) for p in picks]
        rejected |= dropped

    if fill and len(chosen) < k:
        blocked = np.asarray(sorted(set(chosen) | dropped), dtype=np.int64)
        free_rank = np.flatnonzero(~np.isin(rank_codes, blocked))
        seen: set[int] = set()
        for r in free_rank.tolist():
            if len(chosen) >= k:
                break
            c = int(rank_codes[r])
            if c in seen:
                continue
            seen.add(c)
            chosen.append(c)
            picks.append(ranked(c, filled=True))
    return DrragSelection(
        tuple(picks),
        mode,
        k,
        n1,
        tuple(codes.ids[c] for c in sorted(rejected)),  # type: ignore[misc]
    )


def _inverse(
    picks: list[DrragPick[IdT]],
    chosen: list[int],
    n_stage1: int,
    codes: _Codes,
    scorer: PairScorer,
    threshold: float,
    rule: str,
    protect_stage1: bool,
) -> tuple[list[DrragPick[IdT]], set[int]]:
    """CIS: score the needed pairs of QDC's documents in one call and drop the rejected ones."""
    n = len(chosen)
    is_stage1 = np.arange(n) < n_stage1
    a, b = np.triu_indices(n, k=1)  # every unordered pair, earlier document first
    both_stage1 = is_stage1[a] & is_stage1[b]
    if rule == "stage1":
        # Stage-2 documents are judged against the stage-1 documents only (eq. 3); stage-1
        # documents come first, so every pair with one of them has it as ``a``.
        needed = is_stage1[a] & ~both_stage1 if protect_stage1 else is_stage1[a]
    else:
        needed = ~both_stage1 if protect_stage1 else np.ones(a.shape[0], dtype=bool)
    a, b = a[needed], b[needed]
    probs = _call_scorer(scorer, [codes.ids[chosen[x]] for x in a], [codes.ids[chosen[y]] for y in b])
    pos = probs >= threshold
    best = np.full(n, -np.inf)
    np.maximum.at(best, a, probs)
    np.maximum.at(best, b, probs)
    support = np.zeros(n, dtype=bool)
    support[a[pos]] = True
    support[b[pos]] = True
    keep = support | (is_stage1 & protect_stage1)
    out: list[DrragPick[IdT]] = []
    for x, p in enumerate(picks):
        if not keep[x]:
            continue
        prob = float(best[x]) if np.isfinite(best[x]) and p.stage == 2 else p.probability
        out.append(DrragPick(p.doc_id, p.stage, p.source, prob, p.mode, p.filled))
    return out, {chosen[x] for x in np.flatnonzero(~keep).tolist()}
