"""Slow, obviously-correct reference implementations used by the core tests.

Each follows its paper formula with a plain Python loop over candidates and
returns ``(picks, scores, min_gap)``: ``min_gap`` is the smallest margin between
the best and second-best candidate over all greedy steps, so a test can skip
inputs whose picks would hinge on rounding (near-ties).
"""

from __future__ import annotations

import math

import numpy as np


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _pick(scores: dict[int, float]) -> tuple[int, float, float]:
    """argmax with the lowest index on exact ties, plus the margin to the runner-up."""
    best_i, best_v = -1, -math.inf
    for i in sorted(scores):
        if scores[i] > best_v:
            best_i, best_v = i, scores[i]
    others = [v for i, v in scores.items() if i != best_i]
    gap = best_v - max(others) if others else math.inf
    return best_i, best_v, gap


def _first(rel: np.ndarray) -> tuple[int, float]:
    i, _, gap = _pick({j: float(rel[j]) for j in range(len(rel))})
    return i, gap


def ref_topk(query: np.ndarray, cand: np.ndarray, k: int) -> list[int]:
    q, c = unit(query), unit(cand)
    rel = [float(np.dot(q, row)) for row in c]
    return sorted(range(len(rel)), key=lambda i: (-rel[i], i))[: min(k, len(rel))]


def ref_mmr(
    query: np.ndarray, cand: np.ndarray, k: int, lam: float
) -> tuple[list[int], list[float], float]:
    """Carbonell & Goldstein MMR: lam * cos(q, c) - (1 - lam) * max_s cos(c, s)."""
    q, c = unit(query), unit(cand)
    n = c.shape[0]
    rel = [float(np.dot(q, c[i])) for i in range(n)]
    first, min_gap = _first(np.array(rel))
    picks, scores = [first], [lam * rel[first]]
    while len(picks) < min(k, n):
        obj = {}
        for i in range(n):
            if i in picks:
                continue
            redundancy = max(float(np.dot(c[i], c[s])) for s in picks)
            obj[i] = lam * rel[i] - (1.0 - lam) * redundancy
        best, value, gap = _pick(obj)
        picks.append(best)
        scores.append(value)
        min_gap = min(min_gap, gap)
    return picks, scores, min_gap


def ref_gmmr(
    query: np.ndarray, cand: np.ndarray, k: int, lam: float
) -> tuple[list[int], list[float], float]:
    """gMMR of df-rag.txt Eq. 1-3: distance to the centroid of the picks."""
    q, c = unit(query), unit(cand)
    n = c.shape[0]
    rel = [float(np.dot(q, c[i])) for i in range(n)]
    first, min_gap = _first(np.array(rel))  # Eq. 3, S empty
    picks, scores = [first], [rel[first]]
    while len(picks) < min(k, n):
        centroid = np.mean([c[s] for s in picks], axis=0)  # Eq. 2
        norm = float(np.linalg.norm(centroid))
        obj = {}
        for i in range(n):
            if i in picks:
                continue
            cos_cs = float(np.dot(c[i], centroid)) / norm if norm > 1e-12 else 0.0
            obj[i] = lam * rel[i] + (1.0 - lam) * math.sqrt(max(2.0 - 2.0 * cos_cs, 0.0))  # Eq. 1
        best, value, gap = _pick(obj)
        picks.append(best)
        scores.append(value)
        min_gap = min(min_gap, gap)
    return picks, scores, min_gap


def _log_norm(dist: float, sigma: float) -> float:
    return -math.log(sigma) - 0.5 * math.log(2.0 * math.pi) - dist**2 / (2.0 * sigma**2)


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def ref_dartboard(
    query: np.ndarray, cand: np.ndarray, k: int, sigma: float, triage_k: int | None = 100
) -> tuple[list[int], list[float], float]:
    """dartboard.txt Algorithm 1 (cosine variant) in log space; gap is relative to the score."""
    q, c = unit(query), unit(cand)
    n = c.shape[0]
    rel = [float(np.dot(q, c[i])) for i in range(n)]
    pool = n if triage_k is None else min(n, max(triage_k, k))
    ids = sorted(range(n), key=lambda i: (-rel[i], i))[:pool]  # KNN triage
    size = len(ids)
    d = [[_log_norm(1.0 - float(np.dot(c[a], c[b])), sigma) for b in ids] for a in ids]
    qq = [_log_norm(1.0 - rel[a], sigma) for a in ids]
    m, min_gap = _first(np.array(qq))
    maxes = list(d[m])
    ret = [m]
    scores = [_logsumexp([maxes[t] + qq[t] for t in range(size)])]
    while len(ret) < min(k, size):
        obj = {}
        for i in range(size):
            if i in ret:
                continue
            newmax = [max(maxes[t], d[i][t]) for t in range(size)]
            obj[i] = _logsumexp([newmax[t] + qq[t] for t in range(size)])
        best, value, gap = _pick(obj)
        min_gap = min(min_gap, gap / max(1.0, abs(value)))
        maxes = [max(maxes[t], d[best][t]) for t in range(size)]
        ret.append(best)
        scores.append(value)
    return [ids[i] for i in ret], scores, min_gap
