"""Per-query cost of the learned selector's greedy picks alone, on real pools, optionally A/B against a revision.

Builds each query's :class:`~diverse_core.learned.QueryState` once (200 HotpotQA dev questions under
the ``chunks`` protocol, fetch_k = 50, k = 5, packaged MiniLM embeddings from the disk cache) and
times only the shipped ``chunks`` model's greedy picks: the text variant at diversity ``None``, 0.2
and 0.8, and the embedding variant. With ``--base REV`` the core at that git revision is imported
too (as ``diverse_core_base``, see ``ab_core.py``), builds its own states, and its rows are timed in
the same process, interleaved call by call with this tree's: per query every row runs once,
``--repeat`` times, and the best of its calls counts. Prints ms per query and, with ``--base``, the
ratio this tree / base, after checking that both give the same picks (scores within 1e-12)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/learned_greedy_speed.py --base f8c7733
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import takewhile
from pathlib import Path
from typing import Any

import diverse_core as dc
import numpy as np
from ab_core import load_base
from learned_outputs import _pools

ROWS = {"text": ("text", None), "text, diversity 0.2": ("text", 0.2), "text, diversity 0.8": ("text", 0.8),
        "embedding": ("embedding", None)}


def _rows(core: Any, inputs: list[Any]) -> dict[str, Callable[[int], tuple[Any, Any]]]:
    """One greedy call per row of :data:`ROWS` on query ``i``, through ``core``'s own states and models."""
    models = core.learned.LearnedSelector.default("chunks").variants
    text = [core.learned.QueryState.build(core.validation.prepare_inputs(i.query_embedding, i.embeddings, 5, None),
                                          core.learned.pair_view(i.question, list(i.texts))) for i in inputs]
    states = {"text": text, "embedding": [s.without_text() for s in text]}
    return {name: (lambda i, v=variant, d=diversity: models[v].picks(states[v][i], d))
            for name, (variant, diversity) in ROWS.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--base", default=None, help="git revision to time next to this tree (e.g. f8c7733)")
    args = ap.parse_args(argv)
    inputs = [inp for _, inp in takewhile(lambda pool: pool[0] == "chunks", _pools(args.cache_dir, args.questions))]
    cores: dict[str, Any] = {"": dc}
    with tempfile.TemporaryDirectory() as tmp:
        if args.base:
            cores["base "] = load_base(args.base, Path(tmp))
        runs = {f"{tag}{name}": fn for tag, core in cores.items() for name, fn in _rows(core, inputs).items()}
        if args.base:
            for name in ROWS:
                for i in range(len(inputs)):
                    (a, pa), (b, pb) = runs[name](i), runs[f"base {name}"](i)
                    if a.tolist() != b.tolist() or float(np.abs(pa - pb).max()) > 1e-12:
                        print(f"{name}: query {i} differs from the base: {a.tolist()} vs {b.tolist()}")
                        return 1
        total = dict.fromkeys(runs, 0.0)
        for i in range(len(inputs)):
            best = dict.fromkeys(runs, float("inf"))
            for _ in range(args.repeat):
                for name, fn in runs.items():
                    t0 = time.perf_counter()
                    fn(i)
                    best[name] = min(best[name], time.perf_counter() - t0)
            for name in runs:
                total[name] += best[name]
    ms = {name: 1000.0 * t / len(inputs) for name, t in total.items()}
    print(f"{len(inputs)} HotpotQA dev queries (chunks), 50 candidates, k = 5; per query the best of {args.repeat} "
          "interleaved calls; greedy picks only (the query's state built beforehand)")
    print("| greedy picks, chunks model | ms / query |" + (" base ms / query | this / base |" if args.base else ""))
    print("|---|---|" + ("---|---|" if args.base else ""))
    for name in ROWS:
        extra = f" {ms['base ' + name]:.4f} | {ms[name] / ms['base ' + name]:.2f} |" if args.base else ""
        print(f"| {name} | {ms[name]:.4f} |{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
