"""DF-RAG measurements on the benchmark data (chunks protocol).

    python examples/dfrag_measure.py sets                      # distinct sets per query, no LLM
    python examples/dfrag_measure.py timing --limit 3          # local SmolLM2, concurrency 1 vs 4
    python examples/dfrag_measure.py timing --llm simulated:0.5  # latency-bound stand-in endpoint

``sets`` counts the distinct gMMR candidate sets per query over the λ grid (no LLM);
``timing`` measures the wall time per query, sequential vs concurrent evaluation. Both run
the harness's ``dfrag`` plugin (:mod:`diverse_core.eval.dfrag_plugin`). Pipeline vs Oracle
rows come from the harness itself:

    diverse-rag bench --datasets hotpotqa:chunks --methods cosine gmmr=0.1:1:0.1 dfrag --quick 20
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from diverse_core.eval import BenchConfig, parse_method, run_benchmark
from diverse_core.pipelines.dfrag import DEFAULT_LAMBDAS


def _run(datasets: Sequence[str], method: str, limit: int | None, k: int, fetch_k: int) -> Any:
    cfg = BenchConfig(
        tasks=[(d, "chunks") for d in datasets],
        methods=[parse_method(method)],
        k=k,
        fetch_k=fetch_k,
        limit=limit,
        oracle_lambdas=(),
        plots=False,
        progress=False,
    )
    return run_benchmark(cfg)


def _sets(args: argparse.Namespace) -> None:
    res = _run(args.datasets, "dfrag@llm=none", args.limit, args.k, args.fetch_k)
    print(f"distinct gMMR candidate sets per query over lambda = {list(DEFAULT_LAMBDAS)} "
          f"(chunks protocol, k={args.k}, fetch_k={args.fetch_k})")
    print("| dataset | queries | mean | median | min | max | histogram (sets: queries) |")
    print("|---|---|---|---|---|---|---|")
    for task in res.tasks:
        counts = np.array([i["n_distinct_sets"] for i in task.settings[0].info])
        hist = ", ".join(f"{n}: {c}" for n, c in sorted(Counter(counts.tolist()).items()))
        print(f"| {task.dataset} | {counts.size} | {counts.mean():.2f} | {np.median(counts):g} | "
              f"{counts.min()} | {counts.max()} | {hist} |")


def _timing(args: argparse.Namespace) -> None:
    print(f"wall time per query, llm={args.llm}, {args.limit} queries of {args.datasets[0]} chunks, "
          f"k={args.k}, fetch_k={args.fetch_k}")
    print("| max_concurrency | mean wall s/query | mean LLM calls | mean LLM s (summed) |")
    print("|---|---|---|---|")
    extra = f"@max_new_tokens={args.max_new_tokens}" if args.llm == "local" else ""
    for conc in args.concurrency:
        method = f"dfrag@llm={args.llm}@max_concurrency={conc}{extra}"
        if args.zero_shot:
            method += "@zero_shot=true"
        res = _run(args.datasets[:1], method, args.limit, args.k, args.fetch_k)
        costs = [i["cost"] for i in res.tasks[0].settings[0].info]
        print(f"| {conc} | {np.mean([c['wall_time'] for c in costs]):.2f} | "
              f"{np.mean([c['llm_calls'] for c in costs]):.1f} | "
              f"{np.mean([c['llm_seconds'] for c in costs]):.2f} |")


def main(argv: Sequence[str] | None = None) -> int:
    """Measurement CLI: ``python examples/dfrag_measure.py {sets,timing} ...``."""
    parser = argparse.ArgumentParser(prog="dfrag_measure.py")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("sets", "timing"):
        p = sub.add_parser(name)
        p.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique", "2wiki"])
        p.add_argument("--limit", type=int, default=None if name == "sets" else 3)
        p.add_argument("--k", type=int, default=5)
        p.add_argument("--fetch-k", type=int, default=50)
        if name == "timing":
            p.add_argument("--llm", default="local")
            p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
            p.add_argument("--max-new-tokens", type=int, default=48)
            p.add_argument("--zero-shot", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    (_sets if args.cmd == "sets" else _timing)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
