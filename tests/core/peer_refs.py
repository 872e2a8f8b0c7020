"""Slow, loop-per-candidate float64 references for the peer strategies (dpp, msd, cover, ssd, gist).

Written from the formulas in the method modules' docstrings (themselves pyversity's
and divsel's definitions), independently of the vectorised code: SSD keeps explicit
``(d + 1)``-vectors, GIST enumerates its thresholds one by one. Each greedy reference
returns ``(picks, gaps)``: ``gaps[t]`` is the margin between the best and the
second-best candidate at step ``t`` (``inf`` when there was one choice), so a test
can tell a genuine near-tie from a disagreement.
"""

from __future__ import annotations

import math

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _pick(obj: dict[int, float]) -> tuple[int, float]:
    """argmax (lowest index on exact ties) and the margin to the runner-up."""
    best = max(sorted(obj), key=lambda i: (obj[i], -i))
    others = [v for i, v in obj.items() if i != best]
    return best, (obj[best] - max(others)) if others else math.inf


def _topk(rel: np.ndarray, k: int) -> tuple[list[int], list[float]]:
    order = sorted(range(len(rel)), key=lambda i: (-rel[i], i))[:k]
    srt = sorted(rel, reverse=True)
    gaps = [srt[t] - srt[t + 1] if t + 1 < len(srt) else math.inf for t in range(len(order))]
    return order, gaps


def ref_msd(rel: np.ndarray, cand: np.ndarray, k: int, div: float) -> tuple[list[int], list[float]]:
    c = unit(cand)
    n, k = len(rel), min(k, len(rel))
    first, gap = _pick({i: float(rel[i]) for i in range(n)})
    picks, gaps = [first], [gap]
    while len(picks) < k:
        obj = {}
        for i in range(n):
            if i not in picks:
                dist = sum(1.0 - max(-1.0, min(1.0, float(c[i] @ c[s]))) for s in picks)
                obj[i] = (1.0 - div) * float(rel[i]) + div * dist
        best, gap = _pick(obj)
        picks.append(best)
        gaps.append(gap)
    return picks, gaps


def ref_dpp(
    rel: np.ndarray, cand: np.ndarray, k: int, div: float, scale: float = 1.0
) -> tuple[list[int], list[float]]:
    c = unit(cand)
    n, k = len(rel), min(k, len(rel))
    if div == 0.0:
        return _topk(rel, k)
    z = (rel - rel.mean()) / (rel.std() + EPS32)
    w = [math.exp((1.0 - div) * scale * float(v)) for v in z]
    res = {i: w[i] * w[i] + EPS32 for i in range(n)}
    cols: list[dict[int, float]] = []
    picks: list[int] = []
    gaps: list[float] = []
    while len(picks) < k:
        best, gap = _pick({i: v for i, v in res.items() if i not in picks})
        picks.append(best)
        gaps.append(gap)
        root = math.sqrt(res[best]) + EPS32
        col = {}
        for i in range(n):
            e = w[i] * float(c[i] @ c[best]) * w[best] - sum(f[i] * f[best] for f in cols)
            col[i] = e / root
        cols.append(col)
        for i in range(n):
            res[i] = max(res[i] - col[i] ** 2, 0.0)
    return picks, gaps


def ref_cover(
    rel: np.ndarray, cand: np.ndarray, k: int, div: float, gamma: float = 0.5
) -> tuple[list[int], list[float]]:
    c = unit(cand)
    n, k = len(rel), min(k, len(rel))
    if div == 0.0:
        return _topk(rel, k)
    sim = [[max(0.0, min(1.0, float(c[i] @ c[j]))) for j in range(n)] for i in range(n)]
    covered = [0.0] * n
    picks: list[int] = []
    gaps: list[float] = []
    while len(picks) < k:
        obj = {}
        for j in range(n):
            if j not in picks:
                gain = sum((covered[i] + sim[i][j]) ** gamma - covered[i] ** gamma for i in range(n))
                obj[j] = (1.0 - div) * float(rel[j]) + div * gain
        best, gap = _pick(obj)
        picks.append(best)
        gaps.append(gap)
        covered = [covered[i] + sim[i][best] for i in range(n)]
    return picks, gaps


def ref_ssd(
    rel: np.ndarray, cand: np.ndarray, k: int, div: float, gamma: float = 1.0,
    window: int | None = None,
) -> tuple[list[int], list[float]]:
    """Explicit residual vectors ``[unit c, 1]`` and a FIFO window of bases."""
    n, k = len(rel), min(k, len(rel))
    if div == 0.0:
        return _topk(rel, k)
    x = np.hstack([unit(cand), np.ones((n, 1))])
    std = float(rel.std())
    z = (rel - rel.mean()) / std if std > 0 else rel - rel.mean()
    size = k if window is None else window
    resid = [x[i].copy() for i in range(n)]
    window_items: list[tuple[np.ndarray, list[float]]] = []  # (basis, coefficients)
    first, gap = _pick({i: float(rel[i]) for i in range(n)})
    picks, gaps = [first], [gap]

    def push(basis: np.ndarray) -> None:
        if len(window_items) == size:
            old, coefs = window_items.pop(0)
            for i in range(n):
                if i not in picks:
                    resid[i] = resid[i] + coefs[i] * old
        bsq = float(basis @ basis)
        coefs = [0.0 if i in picks else float(resid[i] @ basis) / (bsq + EPS32) for i in range(n)]
        for i in range(n):
            resid[i] = resid[i] - coefs[i] * basis
        window_items.append((basis, coefs))

    while len(picks) < k:
        push(resid[picks[-1]].copy())
        obj = {
            i: (1.0 - div) * float(z[i]) + div * gamma * float(np.linalg.norm(resid[i]))
            for i in range(n) if i not in picks
        }
        best, gap = _pick(obj)
        picks.append(best)
        gaps.append(gap)
    return picks, gaps


def ref_gist(
    weights: np.ndarray, cand: np.ndarray, k: int, lam: float, eps: float = 0.1
) -> tuple[list[int], float]:
    """Algorithm 1 of arXiv:2405.18754 with divsel's tie rules; returns (set, f(set)).

    Distances ``clip(1 - cos, 0, 2)`` are float64 here.
    """
    c = unit(cand)
    n, k = len(weights), min(k, len(weights))

    def dist(a: int, b: int) -> float:
        return 0.0 if a == b else min(2.0, max(0.0, 1.0 - float(c[a] @ c[b])))

    d_max, pair = 0.0, (0, 1 if n > 1 else 0)
    for a in range(n):
        for b in range(a + 1, n):
            if dist(a, b) > d_max:
                d_max, pair = dist(a, b), (a, b)

    def f(s: list[int]) -> float:
        g = sum(float(weights[i]) for i in s)
        dv = d_max if len(s) <= 1 else min(dist(a, b) for i, a in enumerate(s) for b in s[i + 1:])
        return g if lam == 0 else g + lam * dv

    def greedy(d: float) -> list[int]:
        s: list[int] = []
        while len(s) < k:
            ok = [i for i in range(n) if i not in s and all(dist(i, j) >= d for j in s)]
            if not ok:
                break
            s.append(max(ok, key=lambda i: (float(weights[i]), -i)))
        return s

    best = greedy(0.0)
    if k >= 2 and n >= 2 and f(list(pair)) > f(best):
        best = list(pair)
    if d_max > 0:
        e = float(np.float32(eps))
        p, grid = 1.0, []
        while p <= 2.0 / e:
            grid.append(float(np.float32(p * e * d_max / 2.0)))
            p *= 1.0 + e
        for d in sorted(set(grid)):
            t = greedy(d)
            if f(t) >= f(best):
                best = t
    return best, f(best)
