"""Vendi-RAG Table 2 analogue: how far the VRS ranking moves from the similarity ranking as s grows.

``vendi-rag.txt`` Table 2 reports, over 100 queries, Kendall's tau and Spearman's rho
between the ranking that Vendi retrieval (VRS, Eq. 2) produces at diversity weight
``s`` and the pure-similarity ranking (``s = 0``), for s = 0, 0.2, ..., 1.0. Its
pipeline ranks the top 10 chunks of a Chroma similarity search (App. C.4). We mirror
that with the harness (:mod:`diverse_core.eval`): each question retrieves its ``N``
nearest passages by cosine from the pooled corpus, VRS re-ranks all ``N`` of them
(``k = fetch_k = N``, so the greedy pick order is a full permutation of the pool),
and the runner's ``tau`` / ``rho`` compare that order with the cosine order (mean
over questions). ``N = 10`` is the paper's setting; larger pools are shown beside it.

The second table is the first Vendi-RAG iteration's retrieval: recall@5 of VRS at
``s1 = 0.8`` over a ``fetch_k = 50`` pool (issue 16's defaults) against cosine top-5 on
the same questions, with a paired bootstrap 95% interval of the difference.

Retrieval only (no LLM). Run from the repository root::

    python benchmarks/vendi_rank_agreement.py                   # HotpotQA, paragraphs, 100 q
    python benchmarks/vendi_rank_agreement.py --protocol chunks --pools 10 50
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from diverse_core.eval import BenchConfig, run_benchmark
from diverse_core.eval.config import MethodGrid

__all__ = ["main", "PAPER"]

#: ``vendi-rag.txt`` Table 2: s -> (Kendall tau, Spearman rho).
PAPER = {0.0: (1.0, 1.0), 0.2: (0.797, 0.828), 0.4: (0.688, 0.742), 0.6: (0.485, 0.528),
         0.8: (0.265, 0.316), 1.0: (0.074, 0.078)}
S_VALUES = tuple(PAPER)


def _run(args: argparse.Namespace, k: int, fetch_k: int, objective: str,
         values: tuple[float, ...]) -> dict[str, Any]:
    """One harness run: {setting label: SettingResult} for cosine and vendi at ``values``."""
    config = BenchConfig(
        tasks=[(args.dataset, args.protocol)],
        methods=[MethodGrid("topk"), MethodGrid("vendi", values, {"objective": objective})],
        k=k,
        fetch_k=fetch_k,
        limit=args.questions,
        data_dir=args.data_dir,
        cache_dir=args.cache_dir,
        oracle_lambdas=(),
        plots=False,
        progress=False,
    )
    task = run_benchmark(config).tasks[0]
    return {"n_units": task.n_units, "n_q": len(task.qids),
            **{f"{s.method} {s.label}": s for s in task.settings}}


def _paired_bootstrap(a: list[float], b: list[float], rounds: int = 10_000) -> tuple[float, float]:
    """95% interval of mean(a - b) by resampling questions (seed 0)."""
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, diff.size, size=(rounds, diff.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the harness and print both Markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--protocol", default="paragraphs")
    parser.add_argument("--questions", type=int, default=100, help="first N questions (default 100)")
    parser.add_argument("--pools", type=int, nargs="+", default=[10, 50],
                        help="pool sizes N re-ranked in full (default 10 50; 10 is the paper's)")
    parser.add_argument("--objectives", nargs="+", default=["paper", "vendirag"],
                        choices=["paper", "vendirag"])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()

    agree: dict[tuple[str, int], dict[str, Any]] = {}
    for objective in args.objectives:
        for n in args.pools:
            agree[objective, n] = _run(args, n, n, objective, S_VALUES)
    first = agree[args.objectives[0], args.pools[0]]
    print(f"{args.dataset}/{args.protocol}: first {first['n_q']} questions, "
          f"{first['n_units']} pooled units; embedder: packaged all-MiniLM-L6-v2\n")
    head = "| s | " + " | ".join(
        f"tau {o} N={n} | rho {o} N={n}" for o in args.objectives for n in args.pools
    ) + " | paper tau | paper rho |"
    print(head)
    print("|" + "---:|" * (1 + 2 * len(args.objectives) * len(args.pools) + 2))
    for s, (p_tau, p_rho) in PAPER.items():
        cells = []
        for o in args.objectives:
            for n in args.pools:
                res = agree[o, n][f"vendi s={s:g}"]
                cells += [f"{res.mean('tau'):.3f}", f"{res.mean('rho'):.3f}"]
        print(f"| {s:.1f} | " + " | ".join(cells) + f" | {p_tau:.3f} | {p_rho:.3f} |")

    print("\nFirst iteration of Vendi-RAG: recall@5 (percent) from a fetch_k = 50 pool\n")
    print("| method | recall@5 | difference to cosine [95% CI] |")
    print("|---|---:|---:|")
    cosine = None
    for objective in args.objectives:
        rec = _run(args, 5, 50, objective, (0.8,))
        if cosine is None:
            cosine = rec["cosine -"]
            print(f"| cosine top-5 | {100 * cosine.mean('recall'):.1f} | |")
        vrs = rec["vendi s=0.8"]
        lo, hi = _paired_bootstrap(vrs.per_query["recall"], cosine.per_query["recall"])
        delta = vrs.mean("recall") - cosine.mean("recall")
        print(f"| VRS s1=0.8 ({objective}) | {100 * vrs.mean('recall'):.1f} | "
              f"{100 * delta:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] |")
    print(f"\nwall time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
