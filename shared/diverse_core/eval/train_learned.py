"""Train the shipped learned set selectors: ``python -m diverse_core.eval.train_learned``.

One command, TRAIN questions only (HotpotQA, MuSiQue, 2Wiki train files, any question
shared with a dev file removed; ``--datasets`` also takes the non-Wikipedia ``expertqa`` and
``covidqa`` train splits of ``train_more/``, or ``all`` for the five), k=5, fetch_k=50, the packaged MiniLM, for each
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
from .disk_cache import DiskEmbeddingCache, embedding_cache
from .heldout import HeldOutQuestion, baseline_recalls, format_heldout, heldout_rows, tuned_lambdas
from .protocols import RetrievalTask, build_task
from .records import Benchmark
from .runner import prepared_inputs
from .train_data import (
    ALL_TRAIN_SETS,
    TRAIN_MORE,
    TRAIN_SETS,
    load_train_more,
    train_blocks,
    train_set_names,
)

__all__ = ["CANDIDATE_CONFIGS", "learned_examples", "train_examples", "choose_config", "train", "train_custom",
           "custom_questions", "main"]

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
    return [q.example for bench in blocks
            for q in _questions(build_task(bench, protocol, titles=titles), cache, k, fetch_k, source_ids, False)]


def _questions(task: RetrievalTask, cache: DiskEmbeddingCache, k: int, fetch_k: int, sources: bool,
               names: bool) -> list[HeldOutQuestion]:
    """Every question of ``task`` as a training example with its inputs (``sources`` / ``names``:
    give methods each candidate's source id / title, as a store's metadata would)."""
    out = []
    for qi, inp, prep in prepared_inputs(task, cache, k, fetch_k):
        assert inp.gold_groups is not None
        src = list(inp.sources) if sources and inp.sources is not None else None
        named = list(inp.names) if names and inp.names is not None else None
        state = QueryState.build(prep, pair_view(inp.question, list(inp.texts), sources=src, names=named))
        example = LearnedExample(state, inp.gold_groups, len(task.gold[qi]))
        out.append(HeldOutQuestion(example, prep, inp.question, inp.texts, src, named))
    return out


def train_examples(
    datasets: Sequence[str], protocol: str, *, data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None, k: int = 5, fetch_k: int = 50,
    train_limit: Mapping[str, int] | None = None, progress: bool = True, titles: bool = True,
    source_ids: bool = False, embedder: Any = None, cache: DiskEmbeddingCache | None = None,
) -> dict[str, list[LearnedExample]]:
    """The train questions of each dataset (dev overlap removed) as learned-selector examples.

    A :data:`~diverse_core.eval.train_data.TRAIN_MORE` set (``expertqa``, ``covidqa``) is its
    ``train/`` split, built as :func:`train_custom` builds a custom folder: units as stored (bare,
    no titles exist; ``chunks`` cuts each unit into two-sentence windows of its document), each
    candidate's document id ALWAYS given as its source (what a store's ``source`` metadata holds),
    whatever ``source_ids`` says for the multi-hop sets. ``datasets`` may hold ``"all"``.
    ``embedder`` (default: the packaged MiniLM) embeds through its own disk cache
    (:func:`~diverse_core.eval.disk_cache.embedding_cache`), or pass that ``cache``.
    """
    cache = cache if cache is not None else embedding_cache(embedder, None, cache_dir, progress=progress)
    out: dict[str, list[LearnedExample]] = {}
    for name in train_set_names(datasets):
        limit = (train_limit or {}).get(name)
        if name in TRAIN_MORE:
            bench, dropped = load_train_more(name, data_dir, limit=limit)
            out[name] = [q.example for q in custom_questions(bench, protocol, cache, k, fetch_k, titles=titles,
                                                             source_ids=True)]
        else:
            blocks, dropped = train_blocks(name, load_dataset(name, data_dir).records, data_dir, limit=limit)
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
    ``datasets`` may name the :data:`~diverse_core.eval.train_data.TRAIN_MORE` sets (their
    document ids are always given as sources: ``info["source_id_sets"]``) or ``"all"``.
    """
    datasets = train_set_names(datasets)
    more = [n for n in datasets if n in TRAIN_MORE]
    out: dict[str, LearnedSelector] = {}
    report: dict[str, Any] = {}
    cache = embedding_cache(embedder, None, cache_dir, progress=progress)
    for protocol in protocols:
        per_set = train_examples(datasets, protocol, data_dir=data_dir, k=k, fetch_k=fetch_k, train_limit=train_limit,
                                 progress=progress, titles=titles, source_ids=source_ids, cache=cache)
        examples = [ex for name in datasets for ex in per_set[name]]
        config = DEFAULT_CONFIG
        if cv:
            config, rows = choose_config(examples, progress=progress)
            report[protocol] = {"chosen": asdict(config), "rows": [{**r, "per_question": None} for r in rows],
                                "n_questions": len(examples)}
        sel = LearnedSelector.fit_examples(
            examples, config=config,
            info={"protocol": protocol, "train_sets": {n: len(per_set[n]) for n in datasets}, "k": k,
                  "fetch_k": fetch_k, "embedder": cache.model_name,
                  **({} if titles and not source_ids else {"titles": titles, "source_ids": source_ids}),
                  **({"source_id_sets": [n for n in datasets if source_ids or n in more]} if more else {})},
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


def custom_questions(bench: Benchmark, protocol: str, cache: DiskEmbeddingCache, k: int, fetch_k: int, *,
                     titles: bool = True, source_ids: bool = True) -> list[HeldOutQuestion]:
    """The questions of a custom-data set as training examples with their inputs.

    Units are indexed as stored; ``source_ids``: each candidate's ``source`` (else its own id)
    as ``sources``; ``titles``: its ``title`` (when the corpus has titles) as ``names``: what the
    faces pass from a store's metadata.
    """
    return _questions(build_task(bench, protocol, titles=False), cache, k, fetch_k, source_ids, titles)


def train_custom(
    data_dir: str | Path, out: str | Path, *, k: int = 5, fetch_k: int = 50, protocol: str = "paragraphs",
    config: TrainConfig = DEFAULT_CONFIG, folds: int = 5, oof: bool = True, cache_dir: str | Path | None = None,
    embedder: Any = None, model_name: str | None = None, progress: bool = True, titles: bool = True,
    source_ids: bool = True, dev_dir: str | Path | None = None,
) -> tuple[LearnedSelector, ModelCard]:
    """Train a learned selector on your own labelled questions (a custom-data folder) and write it with its card.

    Args:
        data_dir: a folder in the format of :mod:`~diverse_core.eval.customdata`.
        out: the model file to write (``.npz``); the card goes beside it (``.card.json``, ``.card.md``).
        k, fetch_k: the set size and candidate count to train for (use your retriever's).
        protocol: ``paragraphs`` (each corpus line is one unit, as your store holds it) or
            ``chunks`` (each line split into two-sentence windows of one source).
        config: training settings.
        folds, oof: the held-out evaluation (:mod:`~diverse_core.eval.heldout`: printed, and its
            means kept in the card as ``train_data["heldout"]``) and the card's out-of-fold recall.
        cache_dir, embedder, model_name: embeddings (default: the packaged MiniLM, disk-cached
            under the embedder's name; recorded in the card).
        titles, source_ids: give each candidate's ``title`` as its name / ``source`` as its source id
            (see :func:`custom_questions`); ``source_ids=False`` trains without sources.
        dev_dir: a custom-data folder of questions not to train on (a dev split; its corpus may be
            the same file): the held-out evaluation runs on it; without it, out of fold.
    """
    import numpy as np

    from .customdata import load_custom_dir

    bench = load_custom_dir(data_dir)
    if len(bench.records) < 2:
        raise InvalidParameterError(f"need at least 2 labelled questions; got {len(bench.records)} in {data_dir}")
    dev = load_custom_dir(dev_dir) if dev_dir is not None else None
    cache = embedding_cache(embedder, model_name, cache_dir, progress=progress)
    questions = custom_questions(bench, protocol, cache, k, fetch_k, titles=titles, source_ids=source_ids)
    examples = [q.example for q in questions]
    titled = titles and any(d.title for d in bench.corpus.values())
    data: dict[str, Any] = {"source": str(Path(data_dir).name), "n_questions": len(examples),
                            "n_corpus": len(bench.corpus), "n_units": len(build_task(bench, protocol).unit_texts),
                            "protocol": protocol, "sources_given": source_ids and any(d.source for d in
                                                                                      bench.corpus.values()),
                            "titles_given": titled}
    recall: dict[str, float] = {}
    rows: list[Any] = []
    if oof:
        base = baseline_recalls(questions)
        cv = cross_validate(examples, config, folds=min(folds, len(examples)))
        # cosine and gMMR at its default λ fit nothing: their recall on all questions is out-of-fold
        recall = {"cosine": float(base["cosine"].mean()), "gmmr": float(base["gmmr=0.5"].mean()), "learned": cv.mean}
    sel = LearnedSelector.fit_examples(examples, config=config, info={
        "protocol": protocol, "k": k, "fetch_k": fetch_k, "embedder": cache.model_name, "custom": data,
        "titles": titled, "source_ids": source_ids, **({"oof_recall": recall} if recall else {})})
    if oof:
        if dev is None:
            split = f"{len(examples)} training questions, each out of fold ({min(folds, len(examples))} folds)"
            rows = heldout_rows(cv.per_question, base, tuned_lambdas(base, min(folds, len(examples))))
        else:
            held = custom_questions(dev, protocol, cache, k, fetch_k, titles=titles, source_ids=source_ids)
            new = np.array([q.example.recall(sel.choose_prepared(q.prep, question=q.question, texts=list(q.texts),
                                                                 sources=q.sources, names=q.names).indices)
                            for q in held])
            split = f"{len(held)} questions of {dev_dir} (not trained on)"
            rows = heldout_rows(new, baseline_recalls(held), tuned_lambdas(base))
        data["heldout"] = {"questions": split, "recall": {r[0]: round(r[1], 6) for r in rows}}
    path = sel.save(out)
    card = ModelCard.from_selector(sel, oof_recall=recall, train_data=data)
    card.save(card_path(path))
    if progress:
        print(f"[train] custom {data_dir}: {len(examples)} questions, embedder {cache.model_name} -> {path}",
              flush=True)
    if rows:
        print(format_heldout(rows, k, f"[train] held-out evaluation: {split}, recall@{k}"), flush=True)
    return sel, card


def _given(argv: Sequence[str], *options: str) -> list[str]:
    """The ``options`` that appear in ``argv`` (as ``--opt`` or ``--opt=value``)."""
    return [o for o in options if any(a == o or a.startswith(o + "=") for a in argv)]


def build_parser(prog: str = "python -m diverse_core.eval.train_learned") -> argparse.ArgumentParser:
    """The command's options (``diverse-rag train learned`` passes its own ``prog``)."""
    from ..embedders import EMBEDDERS
    from .disk_cache import user_model_dir

    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(TRAIN_SETS), choices=[*ALL_TRAIN_SETS, "all"],
                        help=f"train sets (default: {' '.join(TRAIN_SETS)}; all = {' '.join(ALL_TRAIN_SETS)}: "
                             "the non-Wikipedia expertqa and covidqa come from <data-dir>/train_more/<name>/train)")
    parser.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"], choices=["chunks", "paragraphs"])
    parser.add_argument("--out-dir", default=str(user_model_dir()),
                        help=f"model folder (default: {user_model_dir()}; load a model with model=PATH)")
    parser.add_argument("--cv", action="store_true", help="choose the configuration by 5-fold CV on train")
    parser.add_argument("--cv-report", default=None, help="write the CV scores to this JSON file")
    parser.add_argument("--data-dir", default=None,
                        help="the benchmark data folder, or a custom-data folder (corpus.jsonl + questions.jsonl, "
                             "see diverse_core.eval.customdata): then a model is trained on those questions")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--embedder", default="minilm", choices=list(EMBEDDERS),
                        help="embedder (default minilm, the packaged MiniLM; e5 needs the e5 extra); recorded in the card")
    parser.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N",
                        help="first N train questions of a dataset (default: all)")
    parser.add_argument("--out", default=None,
                        help="custom data (--data-dir with questions.jsonl): the model file to write "
                             "(default: learned_custom.npz in --out-dir or the current folder)")
    parser.add_argument("--k", type=int, default=5, help="set size to train for (default 5)")
    parser.add_argument("--fetch-k", type=int, default=50, help="candidates per question (default 50)")
    parser.add_argument("--protocol", default="paragraphs", choices=["chunks", "paragraphs"],
                        help="custom data: paragraphs = each corpus line is one unit (default)")
    parser.add_argument("--dev-dir", default=None,
                        help="custom data: a folder of questions not trained on (e.g. the dev split) for the "
                             "held-out evaluation (default: out of fold on the training questions)")
    parser.add_argument("--no-oof", action="store_true", help="custom data: skip the held-out evaluation")
    parser.add_argument("--titles", action=argparse.BooleanOptionalAction, default=None,
                        help="shipped sets: --no-titles trains on units without their 'title: ' prefix (writes "
                             "learned_<protocol>_notitle.npz); custom data: give each unit's title as its name "
                             "(default when the corpus has titles)")
    parser.add_argument("--source-ids", action=argparse.BooleanOptionalAction, default=None,
                        help="give each candidate's source (page id / the corpus's source) as its source id "
                             "(default: custom data and --no-titles; --no-source-ids trains without sources)")
    return parser


#: The options of one mode that the other refuses (they would be silently ignored).
_SHIPPED_ONLY = ("--datasets", "--protocols", "--cv", "--cv-report", "--train-limit")
_CUSTOM_ONLY = ("--out", "--protocol", "--dev-dir", "--no-oof")


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Command-line entry point (an option that does not apply is an :class:`InvalidParameterError`)."""
    from ..embedders import get_embedder

    raw = list(sys.argv[1:] if argv is None else argv)
    args = (build_parser(prog) if prog else build_parser()).parse_args(raw)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    custom = is_custom_dir(args.data_dir)
    refused = _given(raw, *(_SHIPPED_ONLY if custom else _CUSTOM_ONLY))
    if args.dev_dir is not None and not is_custom_dir(args.dev_dir):
        raise InvalidParameterError(f"--dev-dir must be a custom-data folder (with questions.jsonl); got {args.dev_dir!r}")
    if refused:
        what = "a custom-data folder (--data-dir with questions.jsonl)" if custom else "the shipped train sets"
        raise InvalidParameterError(f"{', '.join(refused)} do(es) not apply to {what}")
    embedder = get_embedder(args.embedder)
    k, fetch_k = check_k(args.k, "k"), check_k(args.fetch_k, "fetch_k")
    if custom:
        from .customdata import load_custom_dir

        if args.titles is not None and not any(d.title for d in load_custom_dir(args.data_dir).corpus.values()):
            raise InvalidParameterError(f"--{'' if args.titles else 'no-'}titles does not apply: the corpus of {args.data_dir} "
                         "has no titles")
        out = args.out or str(Path(args.out_dir or ".") / "learned_custom.npz")
        train_custom(args.data_dir, out, k=k, fetch_k=fetch_k, protocol=args.protocol, oof=not args.no_oof,
                     cache_dir=args.cache_dir, embedder=embedder, titles=args.titles is not False,
                     source_ids=args.source_ids is not False, dev_dir=args.dev_dir)
    else:
        limit = {k: int(v) for k, _, v in (x.partition("=") for x in args.train_limit)}
        titles = args.titles is not False
        train(args.datasets, args.protocols, args.out_dir, cv=args.cv, cv_report=args.cv_report, k=k,
              fetch_k=fetch_k, data_dir=args.data_dir, cache_dir=args.cache_dir, train_limit=limit, titles=titles,
              source_ids=not titles if args.source_ids is None else args.source_ids, embedder=embedder)
    print(f"[train] done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
