"""Train the shipped learned set selectors: ``python -m diverse_core.eval.train_learned``.

One command, TRAIN questions only (HotpotQA, MuSiQue, 2Wiki train files, any question
shared with a dev file removed), k=5, fetch_k=50, the packaged MiniLM, for each
protocol (``chunks`` and ``paragraphs``): builds every train question's candidate pool
exactly as the harness does, with its question, candidate texts and gold passages,
optionally compares training configurations by 5-fold cross-validation on those train
questions (``--cv``: mean held-out recall@k; the best one is trained), fits the step
models (:class:`~diverse_core.learned.LearnedSelector`) and writes
``diverse_core/learned/models/learned_<protocol>.npz``. Deterministic: the same data give
the same file. Embeddings come from the disk cache (the first run embeds the train corpora).

Example:
    python -m diverse_core.eval.train_learned --protocols chunks --out-dir /tmp/models
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..learned import (
    DEFAULT_MODELS,
    LearnedExample,
    LearnedSelector,
    QueryState,
    TrainConfig,
    cross_validate,
    pair_view,
)
from .datasets import load_dataset
from .disk_cache import DiskEmbeddingCache
from .outofsample import SplitConfig, train_blocks
from .protocols import build_task
from .records import Benchmark
from .runner import question_inputs, top_candidates
from .train_data import TRAIN_SETS

__all__ = ["CANDIDATE_CONFIGS", "learned_examples", "train_examples", "choose_config", "train", "main"]

#: The configurations ``--cv`` compares (train cross-validation only; dev is never used).
CANDIDATE_CONFIGS: tuple[TrainConfig, ...] = (
    TrainConfig(rounds=1, l2=1.0),
    TrainConfig(rounds=2, l2=1.0),
    TrainConfig(rounds=2, l2=1.0, split_first=True),
)

#: What ``train`` uses without ``--cv`` (the configuration the shipped models were chosen with).
DEFAULT_CONFIG = TrainConfig(rounds=2, l2=1.0)


def learned_examples(blocks: Sequence[Benchmark], protocol: str, cache: DiskEmbeddingCache, k: int,
                     fetch_k: int, *, titles: bool = True, source_ids: bool = False) -> list[LearnedExample]:
    """One :class:`~diverse_core.learned.LearnedExample` per question of ``blocks`` (harness candidates, texts).

    ``titles=False``: units without their ``"title: "`` prefix; ``source_ids``: each candidate's
    page id given as its source (as a store's metadata would).
    """
    from ..validation import prepare_inputs

    out = []
    for bench in blocks:
        task = build_task(bench, protocol, titles=titles)
        unit_emb = cache.embed(list(task.unit_texts))
        q_emb = cache.embed([r.question for r in task.records])
        cands = top_candidates(task, unit_emb, q_emb, fetch_k)
        for qi, inp in enumerate(question_inputs(task, unit_emb, q_emb, cands, k)):
            prep = prepare_inputs(inp.query_embedding, inp.embeddings, k, None)
            assert inp.gold_groups is not None
            sources = list(inp.sources) if source_ids and inp.sources is not None else None
            state = QueryState.build(prep, pair_view(inp.question, list(inp.texts), sources=sources))
            out.append(LearnedExample(state, inp.gold_groups, len(task.gold[qi])))
    return out


def train_examples(
    datasets: Sequence[str], protocol: str, *, data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None, k: int = 5, fetch_k: int = 50,
    train_limit: Mapping[str, int] | None = None, progress: bool = True, titles: bool = True,
    source_ids: bool = False, embedder: Any = None,
) -> dict[str, list[LearnedExample]]:
    """The train questions of each dataset (dev overlap removed) as learned-selector examples."""
    from ..embedders import get_default_embedder

    cfg = SplitConfig(datasets=list(datasets), protocols=[protocol], k=k, fetch_k=fetch_k, data_dir=data_dir,
                      cache_dir=cache_dir, progress=progress, train_limit=dict(train_limit or {}) or None)
    cache = DiskEmbeddingCache(embedder or get_default_embedder(), cfg.model_name, cache_dir, progress=progress)
    out: dict[str, list[LearnedExample]] = {}
    for name in datasets:
        blocks, dropped = train_blocks(name, cfg, load_dataset(name, data_dir).records)
        out[name] = learned_examples(blocks, protocol, cache, k, fetch_k, titles=titles, source_ids=source_ids)
        if progress:
            print(f"[train] {name}/{protocol}: {len(out[name])} questions ({dropped} dropped: shared with dev)",
                  flush=True)
    return out


def choose_config(examples: Sequence[LearnedExample], configs: Sequence[TrainConfig] = CANDIDATE_CONFIGS,
                  folds: int = 5, progress: bool = True) -> tuple[TrainConfig, list[dict[str, Any]]]:
    """The configuration with the best mean held-out recall (5-fold CV on ``examples``), and every score."""
    rows = []
    for config in configs:
        t0 = time.perf_counter()
        res = cross_validate(examples, config, folds=folds)
        rows.append({"config": asdict(config), "cv_recall": res.mean, "per_question": res.per_question.tolist(),
                     "seconds": round(time.perf_counter() - t0, 1)})
        if progress:
            print(f"[cv] {asdict(config)}: {100 * res.mean:.2f} ({rows[-1]['seconds']} s)", flush=True)
    best = max(range(len(configs)), key=lambda i: (round(float(rows[i]["cv_recall"]), 12), -i))
    return configs[best], rows


def train(
    datasets: Sequence[str] = TRAIN_SETS,
    protocols: Sequence[str] = ("chunks", "paragraphs"),
    out_dir: str | Path | None = None,
    *,
    cv: bool = False,
    cv_report: str | Path | None = None,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    k: int = 5,
    fetch_k: int = 50,
    train_limit: Mapping[str, int] | None = None,
    progress: bool = True,
    titles: bool = True,
    source_ids: bool = False,
    embedder: Any = None,
) -> dict[str, LearnedSelector]:
    """Fit one selector per protocol on the train questions of ``datasets`` and save them.

    ``out_dir``: where ``learned_<protocol>.npz`` go (default: the shipped models' folder).
    ``cv``: choose the configuration among :data:`CANDIDATE_CONFIGS` by train CV
    (else :data:`DEFAULT_CONFIG`); ``cv_report``: a JSON file for the CV scores.
    ``titles=False, source_ids=True``: the title-free variant (units without their ``"title: "``
    prefix, page ids given as sources), written as ``learned_<protocol>_notitle.npz``.
    """
    out: dict[str, LearnedSelector] = {}
    report: dict[str, Any] = {}
    for protocol in protocols:
        per_set = train_examples(datasets, protocol, data_dir=data_dir, cache_dir=cache_dir, k=k, fetch_k=fetch_k,
                                 train_limit=train_limit, progress=progress, titles=titles, source_ids=source_ids,
                                 embedder=embedder)
        examples = [ex for name in datasets for ex in per_set[name]]
        config = DEFAULT_CONFIG
        if cv:
            config, rows = choose_config(examples, progress=progress)
            report[protocol] = {"chosen": asdict(config), "rows": [{**r, "per_question": None} for r in rows],
                                "n_questions": len(examples)}
        sel = LearnedSelector.fit_examples(
            examples, config=config,
            info={"protocol": protocol, "train_sets": {n: len(per_set[n]) for n in datasets}, "k": k,
                  "fetch_k": fetch_k, "embedder": "all-MiniLM-L6-v2",
                  **({} if titles and not source_ids else {"titles": titles, "source_ids": source_ids})},
        )
        key = protocol if titles else f"{protocol}-notitle"
        fname = f"learned_{protocol}.npz" if titles else f"learned_{protocol}_notitle.npz"
        target = DEFAULT_MODELS[key] if out_dir is None else Path(out_dir) / fname
        path = sel.save(target)
        out[protocol] = sel
        if progress:
            print(f"[train] {protocol}: {len(examples)} questions, config {asdict(config)} -> {path} "
                  f"({path.stat().st_size} bytes)", flush=True)
    if cv_report is not None:
        Path(cv_report).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m diverse_core.eval.train_learned",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(TRAIN_SETS), choices=list(TRAIN_SETS))
    parser.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"], choices=["chunks", "paragraphs"])
    parser.add_argument("--out-dir", default=None, help="model folder (default: the shipped models' folder)")
    parser.add_argument("--cv", action="store_true", help="choose the configuration by 5-fold CV on train")
    parser.add_argument("--cv-report", default=None, help="write the CV scores to this JSON file")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N",
                        help="first N train questions of a dataset (default: all)")
    parser.add_argument("--no-titles", action="store_true",
                        help="the title-free variant: units without their 'title: ' prefix, page ids given as sources "
                             "(writes learned_<protocol>_notitle.npz)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    limit = {k: int(v) for k, _, v in (x.partition("=") for x in args.train_limit)}
    train(args.datasets, args.protocols, args.out_dir, cv=args.cv, cv_report=args.cv_report,
          data_dir=args.data_dir, cache_dir=args.cache_dir, train_limit=limit, titles=not args.no_titles,
          source_ids=args.no_titles)
    print(f"[train] done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
