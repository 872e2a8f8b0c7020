"""Compare the plain kernels' picks and scores between two versions of the core, on synthetic pools.

The companion of ``learned_outputs.py`` for the ten plain methods: ``dump`` runs
``select`` (every method; ``k`` in 1, 3, 10; ``diversity`` None, 0, 0.2, 0.8, 1; the
near-duplicate guard off and at 0.95) and ``sweep`` (its own parameter and ``diversity``)
on float32 and float64 pools of 1 to 700 candidates (Gaussian, and clustered with an exact
duplicate), or with ``--large`` on pools of 1,500 and 3,000 candidates; ``compare`` runs them
again with whatever ``diverse_core`` is on the path and prints every call whose picks differ
and the largest score difference per method and dtype::

    git archive <before> shared | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/shared python benchmarks/kernel_picks.py dump /tmp/picks_before.pkl
    PYTHONPATH=shared python benchmarks/kernel_picks.py compare /tmp/picks_before.pkl

Exit status 1 when any pick differs or a score differs by more than ``--atol`` (default 1e-9).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

METHODS = ("topk", "mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist")
NATIVE = {"mmr": [0.0, 0.3, 0.7, 1.0], "gmmr": [0.0, 0.3, 0.7, 1.0], "dartboard": [0.05, 0.2, 1.0],
          "vendi": [0.0, 0.5, 1.0], "dpp": [0.0, 0.4, 0.9], "msd": [0.0, 0.4, 0.9], "cover": [0.0, 0.4, 0.9],
          "ssd": [0.0, 0.4, 0.9], "gist": [0.0, 0.4, 0.9]}


def _pools(large: bool) -> Iterator[tuple[tuple[Any, ...], np.ndarray, np.ndarray]]:
    if large:
        rng = np.random.default_rng(11)
        for n, d in ((1500, 384), (3000, 256)):
            for dt in (np.float32, np.float64):
                centres = rng.normal(size=(40, d))
                c = centres[rng.integers(0, 40, n)] + 0.3 * rng.normal(size=(n, d))
                yield (n, d, np.dtype(dt).name, "large"), rng.normal(size=d).astype(dt), c.astype(dt)
        return
    rng = np.random.default_rng(7)
    for n in (1, 4, 37, 64, 129, 300, 700):
        for d in (8, 64):
            for dt in (np.float64, np.float32):
                for kind in ("gauss", "clustered"):
                    if kind == "gauss":
                        c = rng.normal(size=(n, d))
                    else:
                        centres = rng.normal(size=(max(1, n // 6), d))
                        c = centres[rng.integers(0, centres.shape[0], n)] + 0.05 * rng.normal(size=(n, d))
                        if n > 3:
                            c[1] = c[0]  # an exact duplicate
                    q = rng.normal(size=d)
                    yield (n, d, np.dtype(dt).name, kind), q.astype(dt), c.astype(dt)


def _call(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **kwargs)
        return out.indices.tolist(), out.scores.tolist()
    except Exception as exc:  # a typed error is an outcome to compare too
        return "ERR", type(exc).__name__


def run_all(large: bool) -> dict[tuple[Any, ...], tuple[Any, Any]]:
    """Every outcome, keyed by (pool, method, k, diversity or over, threshold, entry)."""
    from diverse_core import select, sweep

    ks, divs, thresholds = ((10,), (None, 0.8), (None,)) if large else ((1, 3, 10), (None, 0.0, 0.2, 0.8, 1.0),
                                                                      (None, 0.95))
    out: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    for key, q, c in _pools(large):
        for m in METHODS:
            for k in ks:
                for div in divs:
                    for thr in thresholds:
                        kw: dict[str, Any] = {} if div is None else {"diversity": div}
                        if thr is not None:
                            kw["duplicate_threshold"] = thr
                        out[(key, m, k, div, thr, "select")] = _call(select, m, q, c, k, **kw)
                if m in NATIVE:
                    for over in (None,) if large else (None, "diversity"):
                        values = NATIVE[m] if over is None else [0.0, 0.2, 0.8, 1.0]
                        out[(key, m, k, over, "sweep")] = _call(sweep, m, q, c, k, values, over=over)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("action", choices=["dump", "compare"])
    ap.add_argument("path")
    ap.add_argument("--large", action="store_true", help="pools of 1,500 and 3,000 candidates")
    ap.add_argument("--atol", type=float, default=1e-9)
    args = ap.parse_args(argv)
    got = run_all(args.large)
    if args.action == "dump":
        with open(args.path, "wb") as fh:
            pickle.dump(got, fh)
        print(f"{len(got)} outcomes written to {args.path}")
        return 0
    with open(args.path, "rb") as fh:
        want = pickle.load(fh)
    differ = [key for key in want if key not in got or want[key][0] != got[key][0]
              or "ERR" in (want[key][0], got[key][0]) and want[key] != got[key]]
    worst: dict[tuple[str, str], float] = {}
    for key in set(want) - set(differ):
        if want[key][0] == "ERR":
            continue
        delta = np.nan_to_num(np.subtract(want[key][1], got[key][1]), nan=0.0, posinf=0.0, neginf=0.0)
        name = (key[1], key[0][2])
        worst[name] = max(worst.get(name, 0.0), float(np.abs(delta).max(initial=0.0)))
    for key in differ:
        print("  differs:", key)
    print(f"{len(want)} outcomes compared: {len(differ)} with other picks or errors; largest score difference "
          f"per method and dtype: {', '.join(f'{m}/{t} {v:.2g}' for (m, t), v in sorted(worst.items()))}")
    return 1 if differ or max(worst.values(), default=0.0) > args.atol else 0


if __name__ == "__main__":
    sys.exit(main())
