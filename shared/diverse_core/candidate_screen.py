"""Finding the candidates a selection cannot use (a NaN, inf or all-zero vector, a blank text) so that
:func:`~diverse_core.validation.prepare_inputs` can leave them out and answer from the rest.

A row whose entries are finite but so large or small that its squared norm overflows or
underflows is not bad: the row norms re-measure it exactly (see :mod:`~diverse_core.row_norms`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import (
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    ZeroVectorError,
)

__all__ = ["ON_BAD", "PER_CANDIDATE", "Screen", "blank_texts", "check_on_bad", "screen_rows"]

#: Accepted values of ``on_bad``: leave bad candidates out (with a note in the result), or raise.
ON_BAD = ("drop", "raise")

#: The reasons a candidate is left out, as reported in ``Selection.details["dropped"]``.
NAN, INF, ZERO, BLANK = "NaN in vector", "inf in vector", "zero vector", "empty text"


def check_on_bad(on_bad: object) -> str:
    """``on_bad`` if it is ``"drop"`` or ``"raise"``, else :class:`InvalidParameterError`."""
    if not isinstance(on_bad, str) or on_bad not in ON_BAD:
        raise InvalidParameterError(f"on_bad must be one of {list(ON_BAD)}; got on_bad={on_bad!r}")
    return on_bad


def blank_texts(texts: Sequence[Any] | None) -> NDArray[np.bool_] | None:
    """Which of ``texts`` are empty, blank or not strings; ``None`` when none is (or no texts)."""
    if texts is None:
        return None
    blank = np.fromiter((not isinstance(t, str) or not t.strip() for t in texts), dtype=bool, count=len(texts))
    return blank if blank.any() else None


@dataclass(frozen=True)
class Screen:
    """The outcome of :func:`screen_rows` when some candidate is bad.

    Attributes:
        kept: original positions of the usable candidates, ascending, shape (m,).
        dropped: ``(original position, reason)`` of each candidate left out, ascending.
    """

    kept: NDArray[np.int64]
    dropped: tuple[tuple[int, str], ...]

    def details(self) -> list[dict[str, Any]]:
        """The dropped candidates as JSON-friendly records for a result's details."""
        return [{"index": i, "reason": why} for i, why in self.dropped]

    def narrowed(self, params: dict[str, Any], n: int) -> dict[str, Any]:
        """``params`` with each per-candidate value (:data:`PER_CANDIDATE`, ``n`` long) cut to the
        kept candidates, and a pair ``scorer`` reading the caller's positions."""
        out = dict(params)
        keep = self.kept.tolist()
        for name in PER_CANDIDATE:
            value = out.get(name)
            if value is not None and not isinstance(value, (str, bytes)) and len(value) == n:
                out[name] = value[self.kept] if isinstance(value, np.ndarray) else [value[i] for i in keep]
        scorer = out.get("scorer")
        if callable(scorer):
            out["scorer"] = _ScorerAtKept(scorer, keep)
        return out


#: Method parameters holding one value per candidate, narrowed with the candidates.
PER_CANDIDATE = ("texts", "sources", "names")


class _ScorerAtKept:
    """A pair scorer called with positions among the kept candidates, asking ``scorer`` with the
    caller's positions (negative indices, e.g. the query's, pass through)."""

    def __init__(self, scorer: Any, keep: list[int]) -> None:
        self._scorer = scorer
        self._keep = keep

    def __call__(self, pairs: Sequence[tuple[int, int]]) -> Any:
        keep = self._keep
        return self._scorer([(i if i < 0 else keep[i], j if j < 0 else keep[j]) for i, j in pairs])


def screen_rows(
    cand: NDArray[np.floating[Any]],
    squares: NDArray[np.floating[Any]],
    blank: NDArray[np.bool_] | None = None,
) -> Screen | None:
    """The bad rows of the candidate matrix ``cand`` (and blank texts), or ``None`` if every row is usable.

    ``squares`` (the rows' squared norms in ``cand``'s dtype) make the usual all-good case one
    vectorised test; only suspect rows are looked at entry by entry.

    Raises:
        NonFiniteInputError, ZeroVectorError, EmptyCandidatesError: every candidate is bad
            (the type of the first one's fault; the message lists the faults).
    """
    with np.errstate(invalid="ignore"):
        suspect = ~(np.isfinite(squares) & (squares > 0))
    if not suspect.any() and blank is None:  # blank_texts gives None when no text is blank
        return None
    rows = np.flatnonzero(suspect)
    block = cand[rows]
    nan = np.isnan(block).any(axis=1)
    inf = np.isinf(block).any(axis=1) & ~nan
    zero = ~(block != 0).any(axis=1)  # all entries zero (NaN compares unequal: never zero)
    reasons: dict[int, str] = {}
    for label, mask in ((NAN, nan), (INF, inf), (ZERO, zero)):
        reasons.update(dict.fromkeys(rows[mask].tolist(), label))
    if blank is not None:
        for i in np.flatnonzero(blank).tolist():
            reasons.setdefault(i, BLANK)
    if not reasons:  # only over/underflowing squares: the norms re-measure those rows
        return None
    if cand.dtype == np.float32:  # a value beyond float32's range was read as inf
        reasons = {i: INF + " (or a value beyond float32's range)" if why == INF else why
                   for i, why in reasons.items()}
    dropped = tuple(sorted(reasons.items()))
    if len(dropped) == cand.shape[0]:
        _raise_all_bad(dropped)
    kept = np.setdiff1d(np.arange(cand.shape[0], dtype=np.int64), [i for i, _ in dropped])
    return Screen(kept=kept, dropped=dropped)


def _raise_all_bad(dropped: tuple[tuple[int, str], ...]) -> None:
    """No candidate is usable: the typed error of the first one's fault, listing a few."""
    shown = "; ".join(f"candidate {i}: {why}" for i, why in dropped[:5])
    more = f"; and {len(dropped) - 5} more" if len(dropped) > 5 else ""
    message = f"none of the {len(dropped)} candidates is usable ({shown}{more})"
    first = dropped[0][1]
    if first == ZERO:
        raise ZeroVectorError(message)
    if first == BLANK:
        raise EmptyCandidatesError(message)
    raise NonFiniteInputError(message)
