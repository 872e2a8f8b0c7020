"""A/B timing of the core against an earlier git revision, in one process.

Timings on a shared VM drift between processes by more than most single changes
gain, so this script imports the core twice, the working tree as ``diverse_core``
and ``--base`` (any git revision, extracted with ``git archive``) under another
name, and times both on the same inputs with interleaved calls: every round calls
each variant once untimed (warm caches) and once timed. It prints the medians in
microseconds, the ratio working tree / base, and checks that both pick the same
items. Cases (random float32 unit vectors, fixed seed, k = 10 unless ``--k``,
lambda 0.5): ``checks`` (input validation and relevance alone), ``mmr``, ``gmmr``
and the ``gmmr`` sweep over ``--values`` values (default 10: 0.1, 0.2, ..., 1.0),
each at the given sizes. Run from the repository root::

    OPENBLAS_NUM_THREADS=1 python benchmarks/ab_core.py --base 85384c1
    OPENBLAS_NUM_THREADS=1 python benchmarks/ab_core.py --base HEAD~1 --cell 1000 768
    OPENBLAS_NUM_THREADS=1 python benchmarks/ab_core.py --base HEAD~1 --values 20 --k 20
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import diverse_core as dc
import numpy as np
from microbench import unit_pool, warm_seconds

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent


def load_base(revision: str, into: Path) -> ModuleType:
    """``shared/diverse_core`` at ``revision``, imported as ``diverse_core_base``."""
    archive = into / "core.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "archive", revision, "shared/diverse_core"], cwd=ROOT, stdout=out, check=True
        )
    with tarfile.open(archive) as tar:
        try:
            tar.extractall(into, filter="data")
        except TypeError:  # Python without extraction filters (our own archive: trusted)
            tar.extractall(into)
    (into / "shared" / "diverse_core").rename(into / "diverse_core_base")
    sys.path.insert(0, str(into))
    return importlib.import_module("diverse_core_base")


def cases(
    core: Any, q: np.ndarray, x: np.ndarray, k: int, values: np.ndarray
) -> dict[str, Callable[[], Any]]:
    """The timed calls for one core module."""
    return {
        "checks": lambda: core.validation.prepare_inputs(q, x, k),
        "mmr": lambda: core.select("mmr", q, x, k, lambda_mult=0.5).indices,
        "gmmr": lambda: core.select("gmmr", q, x, k, lambda_mult=0.5).indices,
        "gmmr sweep": lambda: core.sweep("gmmr", q, x, k, values).indices,
    }


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, time both cores and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument(
        "--cell", type=int, nargs=2, action="append", metavar=("N", "D"),
        help="pool size and dimension (repeatable; default 1000 768 and 1000 384)",
    )
    parser.add_argument("--k", type=int, default=10, help="items to pick (default 10)")
    parser.add_argument("--values", type=int, default=10, help="values in the sweep (default 10)")
    args = parser.parse_args(argv)
    values = np.round(np.arange(1, args.values + 1) / args.values, 6)
    grid = [tuple(c) for c in args.cell] if args.cell else [(1000, 768), (1000, 384)]
    with tempfile.TemporaryDirectory() as tmp:
        base = load_base(args.base, Path(tmp))
        print(f"working tree vs {args.base}: median us over {args.rounds} interleaved rounds, "
              f"k={args.k}, sweep of {args.values} values")
        print("| n | d | case | base | tree | tree / base | same picks |")
        print("|---:|---:|---|---:|---:|---:|---|")
        for n, d in grid:
            q, x = unit_pool(n, d)
            old = cases(base, q, x, args.k, values)
            new = cases(dc, q, x, args.k, values)
            for name in new:
                same = name == "checks" or np.array_equal(old[name](), new[name]())
                times: dict[str, list[float]] = {"base": [], "tree": []}
                for _ in range(args.rounds):
                    for label, fn in (("base", old[name]), ("tree", new[name])):
                        times[label].append(warm_seconds(fn))
                b, t = (statistics.median(times[v]) * 1e6 for v in ("base", "tree"))
                print(f"| {n} | {d} | {name} | {b:.0f} | {t:.0f} | {t / b:.3f} | "
                      f"{'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
