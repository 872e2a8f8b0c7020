"""``gist``: GIST, max-min diversification with a monotone submodular utility (divsel's algorithm).

Fahrbach, Ramalingam, Zadimoghaddam, Ahmadian, Citovsky & DeSalvo, "GIST: Greedy
Independent Set Thresholding for Max-Min Diversification with Submodular Utility"
(NeurIPS 2025, arXiv:2405.18754, Algorithm 1). It maximises over ``|S| <= k``::

    f(S) = g(S) + lam * div(S),   g(S) = sum_{s in S} w_s,   w = max(0, 1 + rel)

``div(S)`` is the smallest pairwise cosine distance ``clip(1 - cos, 0, 2)`` inside
``S`` (the pool's diameter ``d_max`` when ``|S| <= 1``), and ``w`` is the shifted
relevance that divsel's LangChain retriever uses as its linear utility. GIST keeps the
best of: the plain greedy set (the ``k`` largest weights); the diametrical pair
(if ``k >= 2`` and strictly better); and, for every threshold ``d`` of the geometric
grid ``{(1 + eps)^i * eps * d_max / 2 : (1 + eps)^i <= 2 / eps}`` taken in ascending
order (a later threshold wins ties), the greedy independent set that only admits
candidates at distance ``>= d`` from every pick. It guarantees
``f(S) >= (2/3 - eps) * OPT`` for this linear ``g`` under a true metric (Theorem 3.3).
The tie rules and the grid are those of divsel 0.1.0 (its ``docs/CONFORMANCE.md``,
rules 1-7, 9, 12, 14-16): the same input gives the same set as ``divsel.gist_select``
(``metric="cosine"``, ``utility="linear"``, ``utilities = w``) up to ties.

Parameters: ``lam >= 0`` weighs the diversity term; **higher is more diverse**
(``lam = 0`` is the top-k by ``w``). ``eps`` in ``[1.19e-7, 1]`` is the grid's
accuracy (smaller: more thresholds, slower, a tighter guarantee).

The winning set can hold fewer than ``k`` items (no further candidate clears its
threshold). This method still returns ``k`` items: the rest of the pool follows in
decreasing weight; ``Selection.details`` gives ``gist_size`` (how many picks are GIST's
set), ``stage`` (``"greedy"``, ``"diameter_pair"`` or ``"sweep"``), ``threshold``,
``d_max``, ``f_value``, ``g_value`` and ``div``. Scores are each pick's weight ``w``.

Speed. One ``(n, n)`` similarity product gives the diameter and every distance;
all thresholds then run their greedy steps together on ``(T, n)`` arrays (``k``
vectorised steps in all), and because no greedy run depends on ``lam``,
:func:`gist_sweep` evaluates every ``lam`` from the same runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..registry import DiversityMap, MethodSpec
from ..validation import PreparedInputs, check_non_negative, product_with_rows
from ._spec import checked

__all__ = ["EPS_MIN", "gist_details", "gist_select", "gist_sweep", "gist_thresholds", "SPEC"]

#: Smallest accepted ``eps`` (float32 machine epsilon, as in divsel).
EPS_MIN = float(np.finfo(np.float32).eps)


def gist_thresholds(d_max: float, eps: float) -> NDArray[np.float32]:
    """The threshold grid of Algorithm 1 line 7, ascending, as float32 entries.

    Built like divsel's: ``p *= 1 + eps`` in float64 while ``p <= 2 / eps`` (``eps`` and
    ``d_max`` read as float32), each entry ``p * eps * d_max / 2`` cast to float32,
    consecutive duplicates removed.

    Example:
        >>> gist_thresholds(1.0, 1.0).tolist()
        [0.5, 1.0]
        >>> len(gist_thresholds(1.0, 0.1))
        32
    """
    e = float(np.float32(eps))
    dm = float(np.float32(d_max))
    powers = []
    p = 1.0
    bound = 2.0 / e
    while p <= bound:
        powers.append(p)
        p *= 1.0 + e
    grid = (np.array(powers) * e * dm / 2.0).astype(np.float32)
    keep = np.ones(grid.shape[0], dtype=bool)
    keep[1:] = grid[1:] != grid[:-1]
    out: NDArray[np.float32] = grid[keep]
    return out


@dataclass
class _Runs:
    """Every candidate set of Algorithm 1 (row 0: greedy; row 1: the pair; then the grid).

    ``picks[i, :sizes[i]]`` is set ``i`` (``-1`` after its end); :meth:`set` reads one.
    """

    picks: NDArray[np.int64]
    sizes: NDArray[np.intp]
    g: NDArray[np.float64]
    div: NDArray[np.float64]
    stage: list[str]
    threshold: NDArray[np.float64]
    d_max: float
    pair_ok: bool

    def set(self, i: int) -> NDArray[np.int64]:
        """The picks of set ``i``, in pick order."""
        out: NDArray[np.int64] = self.picks[i, : self.sizes[i]]
        return out


def _distances(prep: PreparedInputs) -> NDArray[np.floating[Any]]:
    """``clip(1 - cos, 0, 2)`` of every pair in the working precision, zero diagonal."""
    vec = prep.vectors
    inv = prep.inv_norms.astype(vec.dtype)
    cos = np.asarray(product_with_rows(vec, vec))
    cos *= inv[:, None]
    cos *= inv[None, :]
    dist = np.clip(np.subtract(1.0, cos, out=cos), 0.0, 2.0, out=cos)
    dist.reshape(-1)[:: dist.shape[0] + 1] = 0.0  # the diagonal
    return dist


def _runs(prep: PreparedInputs, eps: float) -> _Runs:
    rel, k, n = prep.relevance, prep.k, prep.n
    weights = np.maximum(1.0 + rel, 0.0)
    dist = _distances(prep)
    flat = int(dist.argmax())  # first maximum in row-major order: the smallest (u, v), u < v
    u, v = divmod(flat, n)
    if u == v and n >= 2:  # every point coincides: every pair ties, the smallest is (0, 1)
        u, v = 0, 1
    d_max = float(dist[u, v])
    grid = gist_thresholds(d_max, eps) if d_max > 0.0 else np.zeros(0, dtype=np.float32)
    # Row 0 runs at threshold 0 (every candidate admissible): the classic greedy set.
    thr = np.concatenate([np.zeros(1, dtype=np.float32), grid]).astype(dist.dtype)
    n_runs = thr.shape[0]
    rows = np.arange(n_runs)
    nearest = np.full((n_runs, n), np.inf, dtype=dist.dtype)  # distance to the picks
    chosen = np.zeros((n_runs, n), dtype=bool)
    picks = np.full((n_runs, k), -1, dtype=np.int64)
    div = np.full(n_runs, d_max)
    alive = np.ones(n_runs, dtype=bool)
    for step in range(k):
        ok = (nearest >= thr[:, None]) & ~chosen
        score = np.where(ok, weights[None, :], -np.inf)
        best = score.argmax(axis=1)  # exact ties: the lowest index
        alive &= ok[rows, best]
        if not alive.any():
            break
        live = rows[alive]
        pick = best[alive]
        picks[live, step] = pick
        if step:
            div[live] = np.minimum(div[live], nearest[live, pick])
        chosen[live, pick] = True
        nearest[live] = np.minimum(nearest[live], dist[pick])
    # A run's picks are a prefix of its row (a run that stops stays stopped); g sums their
    # weights from the left, one at a time (cumsum), as a running sum over the set would.
    sizes = np.count_nonzero(picks >= 0, axis=1)
    g = np.cumsum(np.where(picks >= 0, weights[picks], 0.0), axis=1)[:, -1]
    width = max(k, 2)  # room for the pair
    all_picks = np.full((n_runs + 1, width), -1, dtype=np.int64)
    all_picks[0, :k], all_picks[2:, :k] = picks[0], picks[1:]
    all_picks[1, :2] = (u, v) if u < v else (v, u)
    pair_ok = k >= 2 and n >= 2
    all_sizes = np.concatenate([sizes[:1], [2], sizes[1:]])
    g_all = np.concatenate([g[:1], [float(weights[u]) + float(weights[v])], g[1:]])
    div_all = np.concatenate([div[:1], [d_max], div[1:]])
    stages = ["greedy", "diameter_pair", *(["sweep"] * (n_runs - 1))]
    thresholds = np.concatenate([[0.0, d_max], grid.astype(np.float64)])
    return _Runs(all_picks, all_sizes, g_all, div_all, stages, thresholds, d_max, pair_ok)


def _winner(runs: _Runs, lam: float) -> int:
    """Index of the run Algorithm 1 returns for ``lam`` (line 5 strict, line 10 ascending ``>=``)."""
    f = runs.g if lam == 0.0 else runs.g + lam * runs.div
    best = 1 if runs.pair_ok and f[1] > f[0] else 0
    # line 10, ``f[i] >= f[best]`` in ascending order: the running best only grows, so the
    # winner is the last grid entry at the grid's maximum, when that is >= f[best]
    grid = f[2:]
    if grid.size:
        last = grid.size - 1 - int(grid[::-1].argmax())
        if grid[last] >= f[best]:
            best = 2 + last
    return best


def _complete(prep: PreparedInputs, chosen: NDArray[np.int64]) -> NDArray[np.int64]:
    """``chosen`` followed by the rest of the pool in decreasing weight, ``prep.k`` in all."""
    if chosen.shape[0] >= prep.k:
        return chosen[: prep.k]
    weights = np.maximum(1.0 + prep.relevance, 0.0)
    rest = np.ones(prep.n, dtype=bool)
    rest[chosen] = False
    idx = np.flatnonzero(rest)
    order = idx[np.argsort(-weights[idx], kind="stable")]
    return np.concatenate([chosen, order[: prep.k - chosen.shape[0]]])


def gist_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], *, eps: float = 0.1, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """GIST for every ``lam`` in ``values`` from one set of greedy runs; (L, k) picks and weights."""
    runs = _runs(prep, eps)
    weights = np.maximum(1.0 + prep.relevance, 0.0)
    lam = np.asarray(values, dtype=np.float64).reshape(-1)
    picks = np.stack([_complete(prep, runs.set(_winner(runs, float(x)))) for x in lam])
    return picks, weights[picks]


def gist_select(
    prep: PreparedInputs, *, lam: float = 1.0, eps: float = 0.1, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """GIST picks for one ``lam`` (see module docstring).

    What Algorithm 1 chose (run size, stage, threshold, objective) is internal: it stays out of
    ``Selection.details`` and so out of the faces' ``selection_params``; :func:`gist_details`
    returns it for tests and analysis.
    """
    picks, weights, _details = gist_details(prep, lam=lam, eps=eps)
    return picks, weights


def gist_details(
    prep: PreparedInputs, *, lam: float = 1.0, eps: float = 0.1
) -> tuple[NDArray[np.int64], NDArray[np.float64], dict[str, Any]]:
    """:func:`gist_select` with what Algorithm 1 chose: ``gist_size`` (picks before the top-up),
    ``stage``, ``threshold``, ``d_max``, ``g_value``, ``div`` and ``f_value``."""
    runs = _runs(prep, eps)
    best = _winner(runs, float(lam))
    chosen = runs.set(best)
    picks = _complete(prep, chosen)
    weights = np.maximum(1.0 + prep.relevance, 0.0)
    g, div = float(runs.g[best]), float(runs.div[best])
    details = {
        "gist_size": int(chosen.shape[0]),
        "stage": runs.stage[best],
        "threshold": float(runs.threshold[best]),
        "d_max": runs.d_max,
        "g_value": g,
        "div": div,
        "f_value": g if lam == 0.0 else g + float(lam) * div,
    }
    return picks, weights[picks], details


def _check_eps(value: object, name: str) -> float:
    eps = check_non_negative(value, name)
    if not EPS_MIN <= eps <= 1.0:
        raise InvalidParameterError(
            f"{name} must be in [{EPS_MIN:.8g}, 1] (the threshold grid has about "
            f"log(2 / {name}) / {name} entries); got {name}={value!r}"
        )
    return eps


#: ``lam`` at ``diversity = 1``: the diversity term outweighs any utility difference
#: (``g`` changes by at most ``2k`` between sets), so relevance only breaks ties.
LAM_AT_DIVERSITY_ONE = 1e6


def lam_for_diversity(diversity: float) -> float:
    """``lam = diversity / (1 - diversity)`` (0: top-k; 0.5: ``lam = 1``, the default),
    capped at :data:`LAM_AT_DIVERSITY_ONE` (reached at ``diversity = 1``).

    Example:
        >>> [lam_for_diversity(d) for d in (0.0, 0.5, 0.75, 1.0)]
        [0.0, 1.0, 3.0, 1000000.0]
    """
    if diversity >= 1.0:
        return LAM_AT_DIVERSITY_ONE
    return float(min(diversity / (1.0 - diversity), LAM_AT_DIVERSITY_ONE))


SPEC = MethodSpec(
    name="gist",
    run=gist_select,
    defaults={"lam": 1.0, "eps": 0.1},
    check=checked(lam=check_non_negative, eps=_check_eps),
    param="lam",
    diversity=DiversityMap("lam", lam_for_diversity, "lam = diversity / (1 - diversity), 1e6 at 1"),
    run_sweep=gist_sweep,
)
