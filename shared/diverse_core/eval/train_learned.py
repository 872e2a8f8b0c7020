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

from ..errors import InvalidParameterError
from ..learned import (
    DEFAULT_MODELS,
    LearnedExample,
    LearnedSelector,
    QueryState,
    TrainConfig,
    cross_validate,
    pair_view,
)
from ..learned.card import ModelCard, card_path
from ..validation import check_k
from .customdata import is_custom_dir
from .datasets import load_dataset
from .disk_cache import DiskEmbeddingCache
from .outofsample import SplitConfig, train_blocks
from .protocols import build_task
from .records import Benchmark
from .runner import question_inputs, top_candidates
from .train_data import TRAIN_SETS

__all__ = ["CANDIDATE_CONFIGS", "learned_examples", "train_examples", "choose_config", "train", "train_custom",
           "main"]

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


def train_custom(
    data_dir: str | Path, out: str | Path, *, k: int = 5, fetch_k: int = 50, protocol: str = "paragraphs",
    config: TrainConfig = DEFAULT_CONFIG, folds: int = 5, oof: bool = True, cache_dir: str | Path | None = None,
    embedder: Any = None, model_name: str = "all-MiniLM-L6-v2", progress: bool = True,
) -> tuple[LearnedSelector, ModelCard]:
    """Train a learned selector on your own labelled questions (a custom-data folder) and write it with its card.

    Args:
        data_dir: a folder in the format of :mod:`~diverse_core.eval.customdata`.
        out: the model file to write (``.npz``); the card goes beside it (``.card.json``, ``.card.md``).
        k, fetch_k: the set size and candidate count to train for (use your retriever's).
        protocol: ``paragraphs`` (each corpus line is one unit, as your store holds it) or
            ``chunks`` (each line split into two-sentence windows of one source).
        config: training settings; folds / oof: the out-of-fold recall for the card.
        cache_dir, embedder, model_name: embeddings (default: the packaged MiniLM, disk-cached).

    Each candidate is given its ``source`` (else its own id) as ``sources`` and its ``title``
    (when the corpus has titles) as ``names``: what the faces pass from your store's metadata.
    """
    import numpy as np

    from ..validation import prepare_inputs
    from .customdata import load_custom_dir

    bench = load_custom_dir(data_dir)
    if len(bench.records) < 2:
        raise InvalidParameterError(f"need at least 2 labelled questions; got {len(bench.records)} in {data_dir}")
    if embedder is None:
        from ..embedders import get_default_embedder

        embedder = get_default_embedder()
    model_name = str(getattr(embedder, "name", model_name))  # the cache key follows the embedder
    cache = DiskEmbeddingCache(embedder, model_name, cache_dir, progress=progress)
    task = build_task(bench, protocol, titles=False)
    unit_emb = cache.embed(list(task.unit_texts))
    q_emb = cache.embed([r.question for r in task.records])
    cands = top_candidates(task, unit_emb, q_emb, fetch_k)
    titled = any(task.doc_titles)
    from ..api import select

    examples = []
    base: dict[str, list[float]] = {"cosine": [], "gmmr": []}
    for qi, inp in enumerate(question_inputs(task, unit_emb, q_emb, cands, k)):
        prep = prepare_inputs(inp.query_embedding, inp.embeddings, k, None)
        assert inp.gold_groups is not None and inp.units is not None
        names = [task.doc_titles[d] or None for d in task.unit_doc[inp.units].tolist()] if titled else None
        state = QueryState.build(prep, pair_view(inp.question, list(inp.texts), sources=inp.sources, names=names))
        ex = LearnedExample(state, inp.gold_groups, len(task.gold[qi]))
        examples.append(ex)
        base["cosine"].append(ex.recall(np.argsort(-prep.relevance, kind="stable")[: prep.k].astype(np.int64)))
        base["gmmr"].append(ex.recall(select("gmmr", prep.query, prep.candidates, prep.k).indices))
    recall: dict[str, float] = {}
    if oof:  # cosine and gMMR (its default λ) fit nothing: their recall on all questions is out-of-fold
        recall = {m: float(np.mean(v)) for m, v in base.items()}
        recall["learned"] = cross_validate(examples, config, folds=min(folds, len(examples))).mean
    data = {"source": str(Path(data_dir).name), "n_questions": len(examples), "n_corpus": len(bench.corpus),
            "n_units": len(task.unit_texts), "protocol": protocol, "sources_given": any(d.source for d in
                                                                                       bench.corpus.values()),
            "titles_given": titled}
    sel = LearnedSelector.fit_examples(examples, config=config, info={
        "protocol": protocol, "k": k, "fetch_k": fetch_k, "embedder": model_name, "custom": data,
        "titles": False, "source_ids": True, **({"oof_recall": recall} if recall else {})})
    path = sel.save(out)
    card = ModelCard.from_selector(sel, oof_recall=recall, train_data=data)
    card.save(card_path(path))
    if progress:
        shown = ", ".join(f"{m} {100 * v:.1f}" for m, v in recall.items())
        print(f"[train] custom {data_dir}: {len(examples)} questions -> {path} (out-of-fold recall@{k}: {shown})",
              flush=True)
    return sel, card


def build_parser(prog: str = "python -m diverse_core.eval.train_learned") -> argparse.ArgumentParser:
    """The command's options (``diverse-rag train learned`` passes its own ``prog``)."""
    from .disk_cache import user_model_dir

    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(TRAIN_SETS), choices=list(TRAIN_SETS))
    parser.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"], choices=["chunks", "paragraphs"])
    parser.add_argument("--out-dir", default=str(user_model_dir()),
                        help=f"model folder (default: {user_model_dir()}; load a model with model=PATH)")
    parser.add_argument("--cv", action="store_true", help="choose the configuration by 5-fold CV on train")
    parser.add_argument("--cv-report", default=None, help="write the CV scores to this JSON file")
    parser.add_argument("--data-dir", default=None,
                        help="the benchmark data folder, or a custom-data folder (corpus.jsonl + questions.jsonl, "
                             "see diverse_core.eval.customdata): then a model is trained on those questions")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N",
                        help="first N train questions of a dataset (default: all)")
    parser.add_argument("--out", default=None,
                        help="custom data (--data-dir with questions.jsonl): the model file to write "
                             "(default: learned_custom.npz in --out-dir or the current folder)")
    parser.add_argument("--k", type=int, default=5, help="custom data: set size to train for")
    parser.add_argument("--fetch-k", type=int, default=50, help="custom data: candidates per question")
    parser.add_argument("--protocol", default="paragraphs", choices=["chunks", "paragraphs"],
                        help="custom data: paragraphs = each corpus line is one unit (default)")
    parser.add_argument("--no-oof", action="store_true", help="custom data: skip the out-of-fold recall")
    parser.add_argument("--no-titles", action="store_true",
                        help="the title-free variant: units without their 'title: ' prefix, page ids given as sources "
                             "(writes learned_<protocol>_notitle.npz)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Command-line entry point."""
    args = (build_parser(prog) if prog else build_parser()).parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    if is_custom_dir(args.data_dir):
        out = args.out or str(Path(args.out_dir or ".") / "learned_custom.npz")
        train_custom(args.data_dir, out, k=check_k(args.k, "k"), fetch_k=check_k(args.fetch_k, "fetch_k"),
                     protocol=args.protocol, oof=not args.no_oof, cache_dir=args.cache_dir)
        print(f"[train] done in {time.perf_counter() - t0:.0f} s")
        return 0
    limit = {k: int(v) for k, _, v in (x.partition("=") for x in args.train_limit)}
    train(args.datasets, args.protocols, args.out_dir, cv=args.cv, cv_report=args.cv_report,
          data_dir=args.data_dir, cache_dir=args.cache_dir, train_limit=limit, titles=not args.no_titles,
          source_ids=args.no_titles)
    print(f"[train] done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
