"""Choosing the trade-off parameter per query, as DF-RAG does (Khan et al. 2026, Sec. 3.4, App. B.3):
Eq. 5 with the Tie-Breaking Gate (:func:`argmax_upper_median`) and binary-search sampling of a
sorted grid (:func:`binary_search_sample`).

Example:
    >>> from diverse_core.tuning import argmax_upper_median
    >>> argmax_upper_median([0.1, 0.2, 0.3, 0.4], [5, 7, 7, 3])
    0.3
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from .validation import as_real_array

__all__ = [
    "upper_median",
    "argmax_upper_median",
    "binary_search_sample",
    "peak_search_steps",
    "BinarySearchResult",
]


def _finite_vector(values: ArrayLike, name: str) -> np.ndarray:
    arr = np.array(as_real_array(values, name, InvalidParameterError), dtype=np.float64)
    if arr.ndim != 1:
        raise DimensionMismatchError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidParameterError(
            f"{name} must contain at least one value; got {name}={values!r}"
        )
    if not np.all(np.isfinite(arr)):
        raise NonFiniteInputError(f"{name} contains NaN or inf; got {name}={values!r}")
    return arr


def upper_median(values: ArrayLike) -> float:
    """Median of ``values``; for an even count, the upper of the two middle values.

    This is DF-RAG's Tie-Breaking Gate: the result is always one of ``values``
    (never an average), so it names an existing chunk set.

    Raises:
        InvalidParameterError: empty input; NonFiniteInputError: NaN/inf.

    Example:
        >>> upper_median([0.3, 0.1, 0.2])
        0.2
        >>> upper_median([0.1, 0.2, 0.3, 0.4])
        0.3
    """
    arr = np.sort(_finite_vector(values, "values"))
    return float(arr[arr.size // 2])


def argmax_upper_median(values: ArrayLike, scores: ArrayLike) -> float:
    """The value with the highest score; ties resolved by :func:`upper_median` of the tied values.

    Scores are compared exactly (DF-RAG's Retrieval Support is an integer sum).

    Args:
        values: candidate parameter values, shape (n,).
        scores: the score of each value, shape (n,).

    Raises:
        InvalidParameterError, NonFiniteInputError, DimensionMismatchError: bad inputs
            or ``values`` and ``scores`` of different lengths.

    Example:
        >>> argmax_upper_median([0.1, 0.5, 0.9], [2, 8, 8])
        0.9
    """
    vals = _finite_vector(values, "values")
    sc = _finite_vector(scores, "scores")
    if vals.shape != sc.shape:
        raise DimensionMismatchError(
            f"values and scores must have the same length; got {vals.shape[0]} values and {sc.shape[0]} scores"
        )
    return upper_median(vals[sc == sc.max()])


@dataclass(frozen=True)
class BinarySearchResult:
    """Outcome of :func:`binary_search_sample`.

    Attributes:
        evaluated: the grid values passed to ``score_fn``, in call order (each at most once).
        scores: ``score_fn`` of each evaluated value, same order.
        chosen: the selected value: highest score among ``evaluated``, ties resolved by
            the upper median (:func:`argmax_upper_median`).
        peak: the grid value where the search converged (a local peak of the sampled scores).

    Example:
        >>> r = binary_search_sample([0.1, 0.2, 0.3], lambda v: -abs(v - 0.2))
        >>> r.chosen
        0.2
    """

    evaluated: tuple[float, ...]
    scores: tuple[float, ...]
    chosen: float
    peak: float

    @property
    def n_evaluations(self) -> int:
        """How many times ``score_fn`` was called."""
        return len(self.evaluated)


def peak_search_steps(n: int) -> Generator[tuple[int, int], tuple[float, float], int]:
    """The bisection of :func:`binary_search_sample` as a generator, for any driver (sync or async).

    It yields the pair of grid positions ``(mid, mid + 1)`` to score and expects their scores
    sent back; its return value (``StopIteration.value``) is the peak's position.

    Example:
        >>> scores = [1, 3, 7, 4]
        >>> steps = peak_search_steps(4)
        >>> pair = next(steps)
        >>> try:
        ...     while True:
        ...         pair = steps.send((scores[pair[0]], scores[pair[1]]))
        ... except StopIteration as stop:
        ...     stop.value
        2
    """
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        left, right = yield (mid, mid + 1)
        if left < right:
            lo = mid + 1
        else:
            hi = mid
    return lo


def binary_search_sample(
    grid: Sequence[float] | ArrayLike, score_fn: Callable[[float], float]
) -> BinarySearchResult:
    """Binary-search sampling of a sorted parameter grid (Khan et al. 2026, App. B.3).

    DF-RAG scores the chunk set of every grid value with an LLM Evaluator (uniform
    sampling, ``n`` calls). App. B.3 replaces this with a binary search that locates the
    peak of a unimodal score in ``O(log n)`` evaluations; the paper gives no pseudo-code,
    so we use the standard peak-finding bisection (:func:`peak_search_steps`; ties go left).

    Every value is scored at most once (results are cached), so a grid of ``n`` values
    costs at most ``2 * ceil(log2 n)`` calls (10 values: at most 8, often 6).
    The chosen value then follows Eq. 5 and the Tie-Breaking Gate over the *evaluated*
    values: the highest score, ties resolved by the upper median. For a unimodal score
    this is the peak; otherwise it is never worse than the peak.

    Args:
        grid: strictly increasing parameter values, e.g. ``[0.1, 0.2, ..., 1.0]``.
        score_fn: ``score_fn(value) -> float`` (higher is better), e.g. the Evaluator's
            Retrieval Support of the chunk set selected at that value.

    Returns:
        A :class:`BinarySearchResult` with the evaluated values, their scores and the choice.

    Raises:
        InvalidParameterError: empty or unsorted grid, ``score_fn`` not callable.
        NonFiniteInputError: NaN/inf in ``grid`` or returned by ``score_fn``.

    Example:
        >>> grid = [round(0.1 * i, 1) for i in range(1, 11)]
        >>> r = binary_search_sample(grid, lambda v: -(v - 0.7) ** 2)
        >>> r.chosen, r.n_evaluations < len(grid)
        (0.7, True)
    """
    values = _finite_vector(grid, "grid")
    if values.size > 1 and not np.all(np.diff(values) > 0):
        raise InvalidParameterError(f"grid must be strictly increasing; got grid={values.tolist()}")
    if not callable(score_fn):
        raise InvalidParameterError(f"score_fn must be callable; got score_fn={score_fn!r}")
    cache: dict[int, float] = {}
    order: list[int] = []

    def score(i: int) -> float:
        if i not in cache:
            raw = score_fn(float(values[i]))
            try:
                if isinstance(raw, (str, bytes)):  # float("1.0") would accept text
                    raise TypeError(type(raw).__name__)
                out = float(raw)
            except (TypeError, ValueError) as exc:
                raise InvalidParameterError(
                    f"score_fn must return a number; got {raw!r} for value {float(values[i])!r}"
                ) from exc
            if not math.isfinite(out):
                raise NonFiniteInputError(
                    f"score_fn returned {out!r} for value {float(values[i])!r}"
                )
            cache[i] = out
            order.append(i)
        return cache[i]

    if values.size == 1:
        score(0)
    steps = peak_search_steps(values.size)
    lo = 0
    try:
        pair = next(steps)
        while True:
            pair = steps.send((score(pair[0]), score(pair[1])))
    except StopIteration as stop:
        lo = int(stop.value)
    evaluated = tuple(float(values[i]) for i in order)
    scores = tuple(cache[i] for i in order)
    return BinarySearchResult(
        evaluated=evaluated,
        scores=scores,
        chosen=argmax_upper_median(evaluated, scores),
        peak=float(values[lo]),
    )
