"""Inputs, the peer call and the printout shared by the core micro-benchmarks (ab_core, sweep_*)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["pool_parser", "unit_pool", "pyversity_mmr", "warm_seconds", "print_medians"]


def pool_parser(description: str, rounds: int = 300) -> argparse.ArgumentParser:
    """An argument parser with the pool size ``--n``, dimension ``--d`` and ``--rounds``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--d", type=int, default=768)
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def unit_pool(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A random float32 unit query (d,) and ``n`` random float32 unit candidates (n, d)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.normal(size=d).astype(np.float32)
    q /= np.linalg.norm(q)
    return q, x


def pyversity_mmr(q: np.ndarray, x: np.ndarray, k: int) -> Callable[[], Any] | None:
    """``pyversity.mmr`` on the pool for one value (relevance given), or None without it."""
    try:
        import pyversity
    except ImportError:
        print("(pyversity not installed: peer skipped)")
        return None
    rel = x @ q
    return lambda: pyversity.mmr(x, rel, k, diversity=0.5)


def warm_seconds(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes right after an untimed call (warm caches)."""
    fn()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def print_medians(
    title: str, medians: dict[str, float], ratios: list[tuple[str, str]], width: int = 26
) -> None:
    """Print ``title``, each median in microseconds, then each ``(a, b)`` ratio a / b present."""
    print(title)
    for name, value in medians.items():
        print(f"{name:>{width}s}: {value:8.0f} us")
    for num, den in ratios:
        if num in medians and den in medians:
            print(f"{num + ' / ' + den:>{width}s}: {medians[num] / medians[den]:8.3f}")
