"""What a compiled per-step kernel would give the 10-value gMMR sweep (an experiment).

The core is numpy only. Each step of ``diverse_core.sweep("gmmr", ...)`` runs about
ten whole-array numpy passes over (values, n) arrays (``gmmr._step_picks``). This
script swaps that one function for one numba-compiled call that does the same
arithmetic in the same order (objective, maximum, tie scan: up to three loops per
row, no temporaries), and times, on one random pool
(float32 unit vectors, fixed seed, k=10, lambda 0.1 .. 1.0), with interleaved calls:

* ``numpy``: the sweep as shipped;
* ``fused``: the sweep with the compiled step (compiled before timing);
* ``pyversity.mmr``: the peer of the issue's speed target, for one value.

It checks that both sweeps pick the same items and prints the ratios. numba is not
a dependency of the project (``pip install numba``; the ``bench`` extra pulls it in
through ``ranx``); without it the script says so and exits. Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/sweep_fused_numba.py [--n 1000] [--d 768]
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import diverse_core as dc
import numpy as np
from diverse_core.methods import gmmr
from microbench import pool_parser, print_medians, pyversity_mmr, unit_pool, warm_seconds

__all__ = ["main"]

VALUES = np.round(np.arange(1, 11) / 10.0, 1)
K = 10


def compiled_step() -> Callable[..., Any] | None:
    """A numba version of ``gmmr._step_picks`` (same signature), or None without numba."""
    try:
        from numba import njit
    except ImportError:
        return None

    @njit(cache=False, nogil=True)
    def kernel(dot: Any, weights: Any, two_w2: Any, base: Any, rtol: float, obj: Any,
               best: Any) -> None:
        rows, n = dot.shape
        for row in range(rows):
            w = weights[row, 0]
            a = two_w2[row, 0]
            for i in range(n):
                obj[row, i] = base[row, i] + np.sqrt(np.abs(a + w * dot[row, i]))
            pick = 0
            top = obj[row, 0]
            for i in range(1, n):
                if obj[row, i] > top:
                    top = obj[row, i]
                    pick = i
            floor = top - rtol * max(1.0, abs(top))
            for i in range(pick):  # lowest index within the tie tolerance
                if obj[row, i] >= floor:
                    pick = i
                    break
            best[row] = pick

    def step(dot: Any, weights: Any, two_w2: Any, base: Any, rtol: float, obj: Any,
             near: Any) -> Any:
        best = np.empty(dot.shape[0], dtype=np.int64)
        kernel(dot, weights, two_w2, base, rtol, obj, best)
        return best

    return step


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, time the three calls and print them."""
    args = pool_parser(__doc__.splitlines()[0]).parse_args(argv)
    fused = compiled_step()
    if fused is None:
        print("numba is not installed: nothing to compare (pip install numba)")
        return
    q, x = unit_pool(args.n, args.d)
    shipped = gmmr._step_picks

    def run(step: Callable[..., Any]) -> Any:
        gmmr._step_picks = step
        try:
            return dc.sweep("gmmr", q, x, K, VALUES)
        finally:
            gmmr._step_picks = shipped

    reference, candidate = run(shipped), run(fused)  # also compiles the kernel
    same = np.array_equal(reference.indices, candidate.indices)
    calls: dict[str, Callable[[], Any]] = {
        "numpy": lambda: run(shipped),
        "fused": lambda: run(fused),
    }
    peer = pyversity_mmr(q, x, K)
    if peer is not None:
        calls["pyversity.mmr"] = peer
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, fn in calls.items():
            times[name].append(warm_seconds(fn))
    med = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    title = (f"gMMR sweep of {len(VALUES)} values, n={args.n}, d={args.d}, k={K}; median us over "
             f"{args.rounds} interleaved rounds; same picks: {'yes' if same else 'NO'}")
    ratios = [("fused", "numpy"), ("numpy", "pyversity.mmr"), ("fused", "pyversity.mmr")]
    print_medians(title, med, ratios, width=15)

if __name__ == "__main__":
    main()
