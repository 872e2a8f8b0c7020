"""Compare the picks and scores of the selection methods between two versions of the core.

For refactors that must not change results: ``dump`` runs ``select`` and ``sweep`` of every
strategy on a fixed set of seeded random pools with whatever ``diverse_core`` is on the path,
and ``compare`` runs them again and reports how many picks and scores differ from the dump
(bit for bit), with the largest score difference. Run the two with different ``PYTHONPATH``::

    git archive <before> shared | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/shared python benchmarks/method_outputs.py dump /tmp/before.pkl
    PYTHONPATH=shared python benchmarks/method_outputs.py compare /tmp/before.pkl

Suites: ``mixed`` (300 pools, n from 1 to 200, d from 2 to 384, float32 and float64,
duplicates, integer-valued rows, clusters, caller relevance; every strategy, several values,
``select`` and ``sweep``) and ``dpp-large`` (400 pools of 129 to 2,500 candidates, k up to 300,
``dpp`` ``select`` only; the differing step's residuals are printed).
"""

from __future__ import annotations

import argparse
import pickle
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import diverse_core as dc
import numpy as np

#: strategy -> (the swept parameter, its values)
METHODS: dict[str, tuple[str | None, list[Any]]] = {
    "mmr": ("lambda_mult", [0.0, 0.3, 0.5, 0.9, 1.0]),
    "gmmr": ("lambda_mult", [0.3, 0.7]),
    "dpp": ("diversity", [0.0, 0.2, 0.5, 1.0]),
    "msd": ("diversity", [0.0, 0.5, 1.0]),
    "cover": ("diversity", [0.0, 0.5, 1.0]),
    "ssd": ("diversity", [0.0, 0.5, 1.0]),
    "gist": ("lam", [0.0, 1.0, 5.0]),
    "topk": (None, [None]),
}


def _pool(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Random rows, or rows with duplicates, integer values, or tight clusters."""
    kind = rng.integers(4)
    x = rng.normal(size=(n, d))
    if kind == 1:
        x[rng.integers(n, size=n // 2)] = x[0]
    elif kind == 2:
        x = np.round(x)
        x[np.all(x == 0, axis=1)] = 1.0
    elif kind == 3:
        x = rng.normal(size=(3, d))[rng.integers(3, size=n)] + 0.01 * rng.normal(size=(n, d))
    return x


def _mixed() -> Iterator[tuple[Any, Callable[..., tuple[Any, ...]], tuple[Any, ...]]]:
    rng = np.random.default_rng(123)
    for trial in range(300):
        n = int(rng.choice([1, 2, 3, 5, 8, 16, 20, 33, 50, 64, 100, 129, 200]))
        d = int(rng.choice([2, 3, 8, 32, 384]))
        k = int(rng.choice([1, 2, 3, 5, 10, 30, 60]))
        dtype = np.float32 if rng.random() < 0.6 else np.float64
        x = _pool(rng, n, d).astype(dtype)
        q = rng.normal(size=d).astype(dtype)
        rel = rng.normal(size=n) if rng.random() < 0.2 else None
        for name, (param, values) in METHODS.items():
            extra: dict[str, Any] = {}
            if name == "cover" and rng.random() < 0.5:
                extra["gamma"] = float(rng.choice([1.0, 0.3]))
            if name == "ssd" and rng.random() < 0.4:
                extra["window"] = int(rng.integers(1, 4))
            if name == "dpp" and rng.random() < 0.3:
                extra["scale"] = float(rng.choice([0.5, 3.0]))
            for value in values:
                params = dict(extra) if param is None else {**extra, param: value}
                yield (trial, name, value), _select, (name, q, x, k, rel, params)
            if param is not None:
                yield (trial, name, "sweep"), _sweep, (name, q, x, k, rel, values, extra)


def _dpp_large() -> Iterator[tuple[Any, Callable[..., tuple[Any, ...]], tuple[Any, ...]]]:
    rng = np.random.default_rng(0)
    for trial in range(400):
        n = int(rng.choice([129, 200, 300, 600, 1000, 2500]))
        d = int(rng.choice([3, 8, 64, 384]))
        k = int(rng.choice([3, 5, 10, 50, 100, 300]))
        dtype = np.float32 if rng.random() < 0.5 else np.float64
        x = _pool(rng, n, d).astype(dtype)
        q = rng.normal(size=d).astype(dtype)
        rel = rng.normal(size=n) if rng.random() < 0.2 else None
        params = {"diversity": float(rng.choice([0.1, 0.5, 0.9, 1.0])), "scale": float(rng.choice([1.0, 3.0]))}
        yield (trial, "dpp", n, d, k), _select, ("dpp", q, x, k, rel, params)


def _select(name: str, q: Any, x: Any, k: int, rel: Any, params: dict[str, Any]) -> tuple[Any, ...]:
    try:
        s = dc.select(name, q, x, k, relevance=rel, **params)
    except dc.DiverseRAGError as exc:
        return ("error", type(exc).__name__, str(exc))
    return (s.indices.tolist(), s.scores.copy(), dict(s.details))


def _sweep(name: str, q: Any, x: Any, k: int, rel: Any, values: list[Any], extra: dict[str, Any]) -> tuple[Any, ...]:
    try:
        s = dc.sweep(name, q, x, k, values=values, relevance=rel, **extra)
    except dc.DiverseRAGError as exc:
        return ("error", type(exc).__name__, str(exc))
    return (s.indices.tolist(), s.scores.copy(), {})


SUITES = {"mixed": _mixed, "dpp-large": _dpp_large}


def run(suite: str) -> dict[Any, tuple[Any, ...]]:
    """Every call of ``suite``: key -> (picks, scores, details), or ("error", type, message)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {key: call(*args) for key, call, args in SUITES[suite]()}


def compare(before: dict[Any, tuple[Any, ...]], after: dict[Any, tuple[Any, ...]]) -> str:
    """A report: calls, picks (or errors, or details) that differ, scores that differ, largest difference."""
    picks = scores = 0
    largest = 0.0
    lines = []
    for key, old in before.items():
        new = after[key]
        if old[0] == "error" or new[0] == "error" or old[0] != new[0] or old[2] != new[2]:
            if not (old[0] == "error" and old == new):
                picks += 1
                first = next((i for i, (a, b) in enumerate(zip(old[0], new[0], strict=False)) if a != b), None)
                where = "" if first is None or old[0] == "error" else (
                    f" at step {first}: scores {old[1][first]:.3g} / {new[1][first]:.3g}")
                lines.append(f"picks differ {key}{where}")
            continue
        a, b = np.asarray(old[1]), np.asarray(new[1])
        if a.tobytes() != b.tobytes():
            scores += 1
            finite = np.isfinite(a) & np.isfinite(b)
            if not np.array_equal(np.isfinite(a), np.isfinite(b)):
                largest = np.inf
            elif finite.any():
                rel = np.abs(a[finite] - b[finite]) / np.maximum(1.0, np.abs(a[finite]))
                largest = max(largest, float(rel.max()))
    lines.append(
        f"calls {len(before)}; picks, errors or details differ: {picks}; scores differ (same picks): {scores}; "
        f"largest score difference |a - b| / max(1, |a|): {largest:.3g}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("dump", "compare"))
    parser.add_argument("path", type=Path, help="the dump to write (dump) or to compare with (compare)")
    parser.add_argument("--suite", choices=sorted(SUITES), default="mixed")
    args = parser.parse_args(argv)
    out = run(args.suite)
    if args.action == "dump":
        args.path.write_bytes(pickle.dumps(out))
        print(f"{len(out)} calls written to {args.path}")
    else:
        print(compare(pickle.loads(args.path.read_bytes()), out))


if __name__ == "__main__":
    main()
