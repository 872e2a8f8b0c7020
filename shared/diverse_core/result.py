"""Result objects returned by :func:`diverse_core.select` and :func:`diverse_core.sweep`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Selection", "Sweep"]


@dataclass(frozen=True)
class Selection:
    """The items one method picked, in pick order.

    Attributes:
        indices: candidate indices in the order they were picked, shape (k,).
        scores: the method's objective value at the moment each item was picked
            (MMR/gMMR marginal score, Dartboard log-score, Vendi objective), shape (k,).
        relevance: relevance of each picked item to the query, shape (k,).
        method: registered method name.
        params: the parameters the method ran with (defaults filled in).
        details: what the method reports about its own choice; empty for most methods,
            ``{"lambda_mult": ..., "variant": "text" | "embedding"}`` for ``adaptive``; and
            ``"dropped"``: the candidates left out as unusable (``on_bad="drop"``), one
            ``{"index": ..., "reason": ...}`` each.

    Example:
        >>> import numpy as np
        >>> from diverse_core import select
        >>> sel = select("topk", np.array([1.0, 0.0]), np.eye(2), k=1)
        >>> sel.indices.tolist()
        [0]
    """

    indices: NDArray[np.int64]
    scores: NDArray[np.float64]
    relevance: NDArray[np.float64]
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    def as_records(self) -> list[dict[str, Any]]:
        """One dict per pick: ``index``, ``rank`` (0-based), ``score``, ``relevance``."""
        return [
            {"index": int(i), "rank": r, "score": float(s), "relevance": float(v)}
            for r, (i, s, v) in enumerate(zip(self.indices, self.scores, self.relevance, strict=False))
        ]


@dataclass(frozen=True)
class Sweep:
    """The sets one method picks for several values of its trade-off parameter.

    Attributes:
        method: registered method name.
        param: name of the swept parameter (``lambda_mult``, ``sigma`` or ``s``).
        values: the swept values, shape (L,).
        indices: picks per value, shape (L, k); row ``i`` equals
            ``select(method, ..., **{param: values[i]}).indices``.
        scores: objective value at each pick, shape (L, k).
        relevance: relevance of each pick, shape (L, k).
        params: the other parameters, shared by every value.
        details: ``{"dropped": [...]}`` when candidates were left out as unusable (as in
            :attr:`Selection.details`), else empty.

    Example:
        >>> import numpy as np
        >>> from diverse_core import sweep
        >>> sw = sweep("gmmr", np.array([1.0, 0.0]), np.eye(2), k=2, values=[0.5, 1.0])
        >>> sw.indices.shape
        (2, 2)
    """

    method: str
    param: str
    values: NDArray[np.float64]
    indices: NDArray[np.int64]
    scores: NDArray[np.float64]
    relevance: NDArray[np.float64]
    params: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def selection(self, i: int) -> Selection:
        """The :class:`Selection` for the ``i``-th swept value."""
        params = dict(self.params)
        params[self.param] = float(self.values[i])
        return Selection(
            indices=self.indices[i].copy(),
            scores=self.scores[i].copy(),
            relevance=self.relevance[i].copy(),
            method=self.method,
            params=params,
            details=dict(self.details),
        )

    @property
    def selections(self) -> list[Selection]:
        """Every swept value's :class:`Selection`, in the order of ``values``."""
        return [self.selection(i) for i in range(len(self))]
