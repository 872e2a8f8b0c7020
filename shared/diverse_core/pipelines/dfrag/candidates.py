"""The λ grid, the gMMR sweep and the grouping of identical chunk sets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...api import sweep
from ...errors import DimensionMismatchError, InvalidParameterError
from ...validation import check_k, check_values

__all__ = ["DEFAULT_LAMBDAS", "check_lambdas", "lambdas_for_diversity", "CandidateGroups", "sweep_candidate_sets"]

#: DF-RAG's grid: λ from 0.1 to 1.0 in steps of 0.1 (λ = 0 is excluded, Sec. 3.4).
DEFAULT_LAMBDAS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 11))


def check_lambdas(lambdas: ArrayLike, name: str = "lambdas") -> tuple[float, ...]:
    """Validate a strictly increasing grid of λ values in [0, 1]."""
    grid = check_values(lambdas, name)
    if np.any(grid < 0) or np.any(grid > 1):
        raise InvalidParameterError(f"{name} must lie in [0, 1]; got {name}={grid.tolist()}")
    if grid.size > 1 and not np.all(np.diff(grid) > 0):
        raise InvalidParameterError(f"{name} must be strictly increasing; got {name}={grid.tolist()}")
    return tuple(float(v) for v in grid)


def lambdas_for_diversity(diversity: float, grid: Sequence[float] = DEFAULT_LAMBDAS) -> tuple[float, ...]:
    """The λ values of ``grid`` that ``diversity`` lets DF-RAG's Evaluator choose from: those
    ``>= 1 - diversity``. gMMR's λ = 1 is relevance only and a smaller λ is more diverse, so 0
    leaves ``(1.0,)`` (the relevance-only set) and 1 the whole grid; a larger ``diversity``
    only ever adds values at the diverse end (monotone).

    Example:
        >>> lambdas_for_diversity(0.0), lambdas_for_diversity(0.3)
        ((1.0,), (0.7, 0.8, 0.9, 1.0))
    """
    floor = 1.0 - float(diversity) - 1e-9  # 1 - 0.3 is 0.7000000000000001: keep 0.7
    return tuple(lam for lam in grid if lam >= floor)


@dataclass(frozen=True)
class CandidateGroups:
    """The sweep's chunk sets, grouped so identical sets are scored once.

    Attributes:
        lambdas: the grid.
        indices: (L, k) picks per λ, as indices into the caller's texts.
        keys: one key per λ: the sorted tuple of its indices (set identity).
        groups: distinct keys in order of first appearance -> λ values sharing it.
        order: for each distinct key, the pick order of its first λ.
    """

    lambdas: tuple[float, ...]
    indices: NDArray[np.int64]
    keys: tuple[tuple[int, ...], ...]
    groups: dict[tuple[int, ...], tuple[float, ...]]
    order: dict[tuple[int, ...], tuple[int, ...]]

    def key_of(self, lam: float) -> tuple[int, ...]:
        """The set key of grid value ``lam``."""
        return self.keys[self.lambdas.index(lam)]


def sweep_candidate_sets(
    query_embedding: ArrayLike,
    candidate_embeddings: ArrayLike,
    k: int,
    lambdas: Sequence[float],
    fetch_k: int | None = None,
) -> CandidateGroups:
    """Run the gMMR sweep over ``lambdas`` and group identical sets.

    With ``fetch_k``, only the ``fetch_k`` candidates most similar to the query enter
    the sweep (indices still refer to the full candidate list).
    """
    k = check_k(k, "k")
    cands = np.asarray(candidate_embeddings, dtype=np.float64)
    if cands.ndim != 2:
        raise DimensionMismatchError(
            f"candidate_embeddings must be 2-D (n, d); got shape {cands.shape}"
        )
    pool = np.arange(cands.shape[0])
    if fetch_k is not None:
        fetch_k = check_k(fetch_k, "fetch_k")
        if fetch_k < cands.shape[0]:
            q = np.asarray(query_embedding, dtype=np.float64)
            norms = np.linalg.norm(cands, axis=1) * max(float(np.linalg.norm(q)), 1e-300)
            cos = (cands @ q) / np.where(norms > 0, norms, 1.0)
            pool = np.sort(np.argsort(-cos, kind="stable")[:fetch_k])
    sw = sweep("gmmr", query_embedding, cands[pool], k, values=list(lambdas))
    picks = pool[sw.indices]
    keys = tuple(tuple(sorted(int(i) for i in row)) for row in picks)
    groups: dict[tuple[int, ...], list[float]] = {}
    order: dict[tuple[int, ...], tuple[int, ...]] = {}
    for lam, key, row in zip(lambdas, keys, picks, strict=True):
        if key not in groups:
            groups[key] = []
            order[key] = tuple(int(i) for i in row)
        groups[key].append(float(lam))
    return CandidateGroups(
        lambdas=tuple(float(v) for v in lambdas),
        indices=np.asarray(picks, dtype=np.int64),
        keys=keys,
        groups={key: tuple(v) for key, v in groups.items()},
        order=order,
    )
