"""Per-query cost of the learned λ selector and the learned set selector next to gMMR, on real pools.

Takes the HotpotQA dev questions under the ``chunks`` protocol (fetch_k=50 candidates
each, packaged MiniLM embeddings from the disk cache) and times, per query, in the same
run: one gMMR selection, the 10-λ gMMR sweep, the selector's embedding-only variant and
its text-aware variant (which also tokenises the 50 candidate texts), and the learned set
selector (``learned``, issue 25) in both variants. The text variants are timed cold (the
per-text cache of :mod:`diverse_core.textfeatures` swapped, untimed, for an emptied one before
every call, so each query reads its 50 texts) and warm (the process-wide cache holding every text
of the 200 pools: a service whose chunks recur). The
rows are interleaved call by call: per query every row runs once, ``--repeat`` times, and the
best of its calls counts (a call the busy machine interrupted drops out). Prints ms per query
(mean over the queries of those bests) and each ratio to one gMMR selection; ``--json`` also
writes them to a file.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/adaptive_speed.py --cache-dir .cache/harness
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import diverse_core as dc
from diverse_core.adaptive import DEFAULT_LAMBDAS, AdaptiveSelector
from diverse_core.learned import LearnedSelector


def _interleaved_ms(runs: dict[str, Callable[[Any], object]], inputs: list[Any], repeat: int,
                    before: dict[str, Callable[[Any], object]]) -> dict[str, float]:
    """ms per query of every run: per query, the best of ``repeat`` calls, rows interleaved call by call.

    Every row is called once on query i, then every row again, ``repeat`` times, before query i + 1:
    load on the machine hits every row alike, and the best of the calls of one query drops the
    calls a busy machine interrupted. ``before[name](query)`` runs untimed before each call of that row.
    """
    total = dict.fromkeys(runs, 0.0)
    for inp in inputs:
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(repeat):
            for name, fn in runs.items():
                if name in before:
                    before[name](inp)
                t0 = time.perf_counter()
                fn(inp)
                best[name] = min(best[name], time.perf_counter() - t0)
        for name in runs:
            total[name] += best[name]
    return {name: 1000.0 * t / len(inputs) for name, t in total.items()}


def _print_stages(learned: LearnedSelector, inputs: list[Any], repeat: int, gmmr_ms: float) -> None:
    """ms per query of each stage of the learned text variant, warm (same per-query best-of timing)."""
    from diverse_core.learned import QueryState, pair_view
    from diverse_core.validation import prepare_inputs

    model = learned.variants["text"]
    preps = [prepare_inputs(i.query_embedding, i.embeddings, 5, None) for i in inputs]
    views = [pair_view(i.question, i.texts) for i in inputs]
    states = [QueryState.build(p, v) for p, v in zip(preps, views, strict=True)]
    at = {id(i): n for n, i in enumerate(inputs)}
    stages: dict[str, Callable[[Any], object]] = {
        "input checks (prepare_inputs)": lambda i: prepare_inputs(i.query_embedding, i.embeddings, 5, None),
        "text view (pair_view)": lambda i: pair_view(i.question, i.texts),
        "query state (QueryState.build)": lambda i: QueryState.build(preps[at[id(i)]], views[at[id(i)]]),
        "greedy picks (5 steps)": lambda i: model.picks(states[at[id(i)]]),
    }
    print("| learned text variant, warm: stage | ms / query | × one gMMR |")
    print("|---|---|---|")
    for name, ms in _interleaved_ms(stages, inputs, repeat, {}).items():
        print(f"| {name} | {ms:.3f} | {ms / gmmr_ms:.2f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--protocol", default="chunks", choices=["chunks", "paragraphs"])
    ap.add_argument("--json", default=None, help="also write the timings to this JSON file")
    ap.add_argument("--stages", action="store_true",
                    help="also time the stages of the learned text variant, warm (input checks, text view, state, picks)")
    ap.add_argument("--model-path", default=None, help="MiniLM folder (default: the packaged model)")
    ap.add_argument("--device", default="cpu", help="torch device that embeds the pools (timings never include it)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diverse_core.embedders import get_default_embedder
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.disk_cache import DiskEmbeddingCache
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.runner import question_inputs, top_candidates

    task = build_task(load_dataset("hotpotqa"), args.protocol)
    from diverse_core.embedders import MiniLMEmbedder

    embedder = (get_default_embedder() if args.model_path is None and args.device == "cpu"
                else MiniLMEmbedder(args.model_path, batch_size=256, device=args.device))
    cache = DiskEmbeddingCache(embedder, "all-MiniLM-L6-v2", args.cache_dir, progress=False)
    units = cache.embed(list(task.unit_texts))
    queries = cache.embed([r.question for r in task.records])
    inputs = question_inputs(task, units, queries, top_candidates(task, units, queries, 50), 5)
    from diverse_core import textcache, textfeatures
    from diverse_core.textfeatures import facts_cache

    sel = AdaptiveSelector.default()
    learned = LearnedSelector.default("chunks")
    n = len(inputs)
    cache = facts_cache()

    def adaptive_text(i: Any) -> object:
        return sel.choose(i.query_embedding, i.embeddings, 5, question=i.question, texts=i.texts)

    def learned_text(i: Any) -> object:
        return learned.choose(i.query_embedding, i.embeddings, 5, question=i.question, texts=i.texts)

    runs: dict[str, Callable[[Any], object]] = {
        "gmmr (one lambda)": lambda i: dc.select("gmmr", i.query_embedding, i.embeddings, 5, lambda_mult=0.8),
        "gmmr sweep (10 lambdas)": lambda i: dc.sweep("gmmr", i.query_embedding, i.embeddings, 5, DEFAULT_LAMBDAS),
        "adaptive, embedding variant": lambda i: sel.choose(i.query_embedding, i.embeddings, 5),
        "adaptive, text variant, cold": adaptive_text,
        "learned, embedding variant": lambda i: learned.choose(i.query_embedding, i.embeddings, 5),
        "learned, text variant, cold": learned_text,
        "adaptive, text variant, warm": adaptive_text,
        "learned, text variant, warm": learned_text,
    }
    # The selectors read texts through the process-wide cache (textcache.facts_cache()); each row points it,
    # untimed, at its own cache. cold: an emptied one, so the query reads its 50 texts; warm: one that holds
    # every text of the 200 pools (read once below), as in a service whose chunks recur.
    warm_cache, cold_cache = cache, textfeatures.TextFactsCache()

    def use(c: textfeatures.TextFactsCache) -> None:
        textcache._FACTS = c  # facts_cache() returns it: every reader of texts follows

    def cold_setup(_: Any) -> None:
        use(cold_cache)
        cold_cache.clear()

    for row in (learned_text, adaptive_text):  # the swap must reach every reader, or "cold" is warm
        cold_setup(None)
        row(inputs[0])
        if cold_cache.misses != len(set(inputs[0].texts)):
            raise RuntimeError(f"the cold cache read {cold_cache.misses} texts for a query of "
                               f"{len(set(inputs[0].texts))}: the cache swap does not reach {row.__name__}")
    use(warm_cache)
    for i in inputs:
        learned_text(i), adaptive_text(i)  # noqa: B018  (every text read once into the warm cache)
    before: dict[str, Callable[[Any], object]] = {
        name: cold_setup if name.endswith("cold") else (lambda _: use(warm_cache)) for name in runs
    }
    times = _interleaved_ms(runs, inputs, args.repeat, before)
    use(warm_cache)
    base = times["gmmr (one lambda)"]
    print(f"{n} HotpotQA dev queries ({args.protocol}), 50 candidates each, d={units.shape[1]}; per query the best "
          f"of {args.repeat} interleaved calls of each row")
    print("| step | ms / query | × one gMMR |")
    print("|---|---|---|")
    for name, ms in times.items():
        print(f"| {name} | {ms:.3f} | {ms / base:.2f} |")
    lw, lc = times["learned, text variant, warm"], times["learned, text variant, cold"]
    ac = times["adaptive, text variant, cold"]
    print(f"learned text warm / one gMMR = {lw / base:.2f} (target <= 2); learned text cold / adaptive text cold = "
          f"{lc / ac:.2f} (target <= 1.5)")
    if args.stages:
        _print_stages(learned, inputs, args.repeat, times["gmmr (one lambda)"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"n_queries": n, "repeat": args.repeat, "protocol": args.protocol, "ms_per_query": times,
                       "interleaved": True, "timing": "per query, best of repeat calls"}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
