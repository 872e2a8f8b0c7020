"""Where the time of one 10-value gMMR sweep goes, next to one ``pyversity.mmr`` call.

On one random pool (float32 unit vectors, fixed seed; default n=1000, d=768, k=10,
lambda 0.1 .. 1.0) this prints medians in microseconds of:

* ``api``: ``diverse_core.sweep("gmmr", ...)``, what ``benchmarks/selection.py`` times;
* ``input checks``: ``prepare_inputs`` alone (validation, norms, relevance);
* ``products``: the similarity-column products inside the sweep, summed per call
  (timed around ``product_with_rows``), with the number of columns per product;
* ``per-step work``: the sweep with every product replaced by its stored result
  (a dictionary look-up), i.e. everything except the products;
* ``pyversity.mmr``: the peer, for one value, with relevance given;
* ``product floor``: what the sweep's similarity columns cost at the least, i.e.
  their multiply-adds (``columns * n * d``) at this core's float32 rate, measured
  on one product with 64 rows (large enough to be bound by arithmetic, not memory).
  ``floor + checks`` adds the input checks: no exact sweep built on these columns
  can take less, whatever its per-step work.

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/sweep_breakdown.py [--n 1000] [--d 768]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import diverse_core as dc
import numpy as np
from diverse_core.methods import _common
from diverse_core.methods.gmmr import gmmr_sweep
from diverse_core.validation import prepare_inputs
from microbench import pool_parser, print_medians, pyversity_mmr, unit_pool

__all__ = ["main"]

VALUES = np.round(np.arange(1, 11) / 10.0, 1)
K = 10


def _median_us(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, time the parts and print them."""
    args = pool_parser(__doc__.splitlines()[0]).parse_args(argv)
    q, x = unit_pool(args.n, args.d)
    prep = prepare_inputs(q, x, K)
    product = _common.product_with_rows
    spent = [0.0]
    columns: list[int] = []
    stored: dict[tuple[Any, ...], Any] = {}

    def timed(matrix: Any, rows: Any) -> Any:
        start = time.perf_counter()
        out = product(matrix, rows)
        spent[0] += time.perf_counter() - start
        columns.append(int(rows.shape[0]))
        return out

    def replayed(matrix: Any, rows: Any) -> Any:
        # a cheap key (hashing the rows would add to what is measured); the rows of one
        # sweep are distinct unit vectors, so first and last entries tell them apart
        key = (rows.shape, float(rows[0, 0]), float(rows[-1, -1]))
        if key not in stored:
            stored[key] = product(matrix, rows)
        return stored[key]

    out: dict[str, float] = {}
    try:
        out["api"] = _median_us(lambda: dc.sweep("gmmr", q, x, K, VALUES), args.rounds)
        out["input checks"] = _median_us(lambda: prepare_inputs(q, x, K), args.rounds)
        _common.product_with_rows = timed
        gmmr_sweep(prep, VALUES)
        per_call = list(columns)
        spent[0] = 0.0
        _median_us(lambda: gmmr_sweep(prep, VALUES), args.rounds)
        out["products"] = spent[0] / args.rounds * 1e6
        _common.product_with_rows = replayed
        gmmr_sweep(prep, VALUES)
        out["per-step work"] = _median_us(lambda: gmmr_sweep(prep, VALUES), args.rounds)
    finally:
        _common.product_with_rows = product
    wide = x[:64].copy()
    rate = 2.0 * args.n * args.d * wide.shape[0] / _median_us(lambda: x @ wide.T, args.rounds)
    out["product floor"] = 2.0 * args.n * args.d * sum(per_call) / rate
    out["floor + checks"] = out["product floor"] + out["input checks"]
    peer = pyversity_mmr(q, x, K)
    if peer is not None:
        out["pyversity.mmr"] = _median_us(peer, args.rounds)
    title = (f"gMMR sweep of {len(VALUES)} values, n={args.n}, d={args.d}, k={K}; "
             f"columns per product: {per_call} ({sum(per_call)} in all)")
    print_medians(title, out, [("api", "pyversity.mmr"), ("floor + checks", "pyversity.mmr")])
    print(f"float32 rate of one 64-row product: {rate / 1e3:.1f} GFLOP/s")

if __name__ == "__main__":
    main()
