"""Paired statistics over questions: bootstrap intervals and a sign-flip permutation test.

Every comparison in the out-of-sample report is paired: two methods scored on the
same questions. :func:`bootstrap_ci` resamples questions with replacement (the same
resample for both methods, so the interval of a difference is paired);
:func:`permutation_p` flips the sign of each question's difference at random
(the exact null of "the two methods are exchangeable on every question"). Both are
vectorised over resamples and seeded, so a report is reproducible.

Example:
    >>> import numpy as np
    >>> a = np.array([1.0, 1.0, 0.5, 1.0, 0.5, 1.0]); b = np.array([0.5, 1.0, 0.5, 0.5, 0.5, 0.5])
    >>> lo, hi = bootstrap_ci(a - b, n_boot=2000, seed=0)
    >>> bool(lo > 0.0), round(float((a - b).mean()), 3)
    (True, 0.25)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidParameterError

__all__ = ["bootstrap_ci", "permutation_p", "gap_closed"]


def _vector(values: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        raise InvalidParameterError("need at least one non-NaN value")
    return arr


def bootstrap_ci(
    values: ArrayLike, *, n_boot: int = 10_000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (per-question scores or differences).

    For a paired comparison pass the per-question differences ``a - b``.
    """
    x = _vector(values)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for start in range(0, n_boot, 1000):  # blocks of resamples bound the memory
        stop = min(start + 1000, n_boot)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        means[start:stop] = x[idx].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(lo), float(hi)


def permutation_p(differences: ArrayLike, *, n_perm: int = 10_000, seed: int = 0) -> float:
    """Two-sided sign-flip permutation p-value of mean(differences) = 0.

    Counts the observed statistic among the permutations ((count + 1) / (n_perm + 1)),
    so the p-value is never 0.
    """
    d = _vector(differences)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_perm, 1000):
        stop = min(start + 1000, n_perm)
        signs = rng.integers(0, 2, size=(stop - start, d.size)) * 2 - 1
        count += int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12))
    return (count + 1) / (n_perm + 1)


def gap_closed(method: float, baseline: float, oracle: float) -> float:
    """Share of the baseline -> oracle gap a method closes (NaN when there is no gap)."""
    gap = oracle - baseline
    return (method - baseline) / gap if gap > 1e-12 else float("nan")
