"""Run method grids over benchmark tasks: :func:`run_benchmark`.

For every ``(dataset, protocol)`` task the runner embeds the units and questions
(through the disk cache), retrieves each question's ``fetch_k`` nearest units by
cosine (from its own pool under ``pool``, else from the whole pooled corpus), lets
every method choose ``k`` of them (core methods with a grid go through
:func:`diverse_core.sweep`, which computes the whole grid at once; plugins are called
once per value) and scores the picks:

* ``recall``: gold-passage recall (gold-document coverage for ``chunks``): a gold passage
  counts when any chosen unit of it is picked (the lenient, page-level count);
* ``support``: the strict, support-level count: a gold passage counts only when a chosen
  unit of it contains one of its supporting texts (:attr:`~diverse_core.eval.records.QARecord.support`;
  NaN for questions without that annotation);
* ``all_gold``: every gold passage retrieved;
* ``ndcg``: binary NDCG@k over the distinct retrieved passages;
* ``mrecall``: MRecall@k of the answer groups (ASQA);
* ``answer_hit``: a gold answer string occurs in a chosen unit;
* ``str_em``: for pipelines that generate (``@generate=true``), the share of the question's
  answer groups (ASQA interpretations) whose short answer occurs in the generated answer
  (ASQA's reader-based DR needs a QA model; str-EM is reported instead);
* ``diversity``: one minus the mean pairwise cosine of the picks (Pickett et al. 2024, Fig. 3);
* ``vendi``: Vendi Score of the picks;
* ``tau`` / ``rho``: Kendall / Spearman agreement of the pick order with the picks'
  cosine order (Rezaei & Dieng 2025, Table 2 analogue); computed only for the methods in
  ``config.agreement_methods`` (default ``vendi``), as scipy's rank tests cost ~1 ms each.

The per-query gMMR Oracle takes, for each question, the ``lambda_mult`` of
``oracle_lambdas`` with the best value of the dataset's headline metric, ties going to
the upper median (:func:`diverse_core.tuning.argmax_upper_median`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..api import select, sweep
from ..metrics import (
    jaccard_matrix,
    kendall_tau,
    mean_pairwise_similarity,
    spearman_rho,
    vendi_score,
)
from ..registry import get_method
from ..tuning import argmax_upper_median
from .config import BenchConfig, MethodGrid, display_name
from .datasets import load_dataset
from .disk_cache import MINILM, DiskEmbeddingCache, embedding_cache
from .metrics import mrecall_at_k, ndcg_at_k, normalize_answer, str_em
from .plugins import MethodInput, get_plugin
from .protocols import RetrievalTask, build_task
from .results import METRICS, BenchResults, SettingResult, TaskResult

__all__ = ["run_benchmark", "run_task", "top_candidates", "question_inputs", "task_vectors", "prepared_inputs"]

def _cache(config: BenchConfig) -> DiskEmbeddingCache:
    """The embedder's disk cache. Runs on the packaged sample alone read its packaged vectors
    (float16, the packaged MiniLM's), under a cache name of their own so they never stand in for
    freshly embedded vectors of the full datasets."""
    from .datasets import PACKAGED

    if (config.embedder is None and config.tasks and all(d in PACKAGED for d, _ in config.tasks)
            and config.model_name == MINILM):
        from ..demo.sample import packaged_vector_lookup
        from ..embedders import get_default_embedder

        return DiskEmbeddingCache(packaged_vector_lookup(get_default_embedder()), MINILM + "+packaged-sample",
                                  config.cache_dir, progress=config.progress)
    return embedding_cache(config.embedder, config.model_name, config.cache_dir, progress=config.progress)


def task_vectors(
    task: RetrievalTask, cache: DiskEmbeddingCache, fetch_k: int
) -> tuple[NDArray[np.float32], NDArray[np.float32], list[tuple[NDArray[np.int64], NDArray[np.float64]]]]:
    """The task's unit and question vectors (disk-cached; questions in the embedder's query role)
    and each question's candidates (:func:`top_candidates`)."""
    unit_emb = cache.embed(list(task.unit_texts))
    q_emb = cache.embed_queries([r.question for r in task.records])
    return unit_emb, q_emb, top_candidates(task, unit_emb, q_emb, fetch_k)


def prepared_inputs(task: RetrievalTask, cache: DiskEmbeddingCache, k: int, fetch_k: int) -> Iterator[tuple[int, MethodInput, Any]]:
    """Per question of ``task``: its index, its :class:`MethodInput` and the validated
    :class:`~diverse_core.validation.PreparedInputs` (what the trainers build their examples from)."""
    from ..validation import prepare_inputs

    for qi, inp in enumerate(question_inputs(task, *task_vectors(task, cache, fetch_k), k)):
        yield qi, inp, prepare_inputs(inp.query_embedding, inp.embeddings, k, None)


def top_candidates(
    task: RetrievalTask, unit_emb: NDArray[np.float32], q_emb: NDArray[np.float32], fetch_k: int
) -> list[tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """Per question: (unit indices of the fetch_k most similar, their cosine), best first."""
    out: list[tuple[NDArray[np.int64], NDArray[np.float64]]] = []
    if task.pools is not None:
        for i, pool in enumerate(task.pools):
            sims = unit_emb[pool] @ q_emb[i]
            order = np.argsort(-sims, kind="stable")[:fetch_k]
            out.append((pool[order], sims[order].astype(np.float64)))
        return out
    for start in range(0, q_emb.shape[0], 256):
        block = q_emb[start : start + 256] @ unit_emb.T
        m = min(fetch_k, unit_emb.shape[0])
        part = np.argpartition(-block, m - 1, axis=1)[:, :m]
        for row, cand in zip(block, part, strict=True):
            order = cand[np.lexsort((cand, -row[cand]))]  # by cosine desc, then index
            out.append((order.astype(np.int64), row[order].astype(np.float64)))
    return out


def question_inputs(
    task: RetrievalTask,
    unit_emb: NDArray[np.float32],
    q_emb: NDArray[np.float32],
    cands: list[tuple[NDArray[np.int64], NDArray[np.float64]]],
    k: int,
) -> list[MethodInput]:
    """What every method sees for each question of ``task`` (candidates from :func:`top_candidates`):
    ``gold_groups`` holds each candidate's passage index when that passage is gold (else -1),
    ``sources`` its source id (the data's ``source``, else its passage id), ``names`` its title."""
    out = []
    source_ids = task.doc_sources or task.doc_ids
    for qi, rec in enumerate(task.records):
        units, sims = cands[qi]
        docs = task.unit_doc[units]
        out.append(
            MethodInput(
                question=rec.question,
                query_embedding=q_emb[qi],
                texts=[task.unit_texts[u] for u in units],
                embeddings=unit_emb[units],
                relevance=sims,
                k=k,
                qid=rec.qid,
                units=units,
                gold_groups=np.where(np.isin(docs, task.gold[qi]), docs, -1).astype(np.int64),
                meta=rec.meta,
                sources=[source_ids[d] for d in docs.tolist()],
                names=[task.doc_titles[d] or None for d in docs.tolist()] if any(task.doc_titles) else None,
            )
        )
    return out


def _picks_for_grid(
    grid: MethodGrid,
    inp: MethodInput,
    source_ids: bool = False,
    names: bool = False,
) -> list[tuple[dict[str, Any], NDArray[np.int64], dict[str, Any], NDArray[np.int64] | None]]:
    """Run one method grid on one question: [(params, local indices, info, corpus units or None)]."""
    if grid.is_plugin:
        plugin = get_plugin(grid.method)
        rows = []
        for params in grid.settings():
            res = plugin.fn(inp, **params)
            units = None if res.units is None else np.asarray(res.units, dtype=np.int64)
            rows.append((params, np.asarray(res.indices, dtype=np.int64), dict(res.info), units))
        return rows
    spec = get_method(grid.method)
    extra: dict[str, Any] = {"question": inp.question, "texts": list(inp.texts)} if spec.reads_text else {}
    if source_ids and spec.reads_sources and inp.sources is not None:
        extra["sources"] = list(inp.sources)
    if names and spec.reads_sources and inp.names is not None:
        extra["names"] = list(inp.names)
    if grid.values and grid.param is not None:
        sw = sweep(grid.method, inp.query_embedding, inp.embeddings, inp.k, grid.values, over=grid.over,
                   **grid.params, **extra)
        return [({**grid.params, grid.param: float(v)}, sw.indices[i], {}, None) for i, v in enumerate(sw.values)]
    sel = select(grid.method, inp.query_embedding, inp.embeddings, inp.k, **grid.params, **extra)
    return [(dict(grid.params), sel.indices, {}, None)]


def _source_factory(
    task: RetrievalTask, qi: int, unit_emb: NDArray[np.float32], q_emb: NDArray[np.float32],
    cache: DiskEmbeddingCache, config: BenchConfig, shared: dict[str, Any],
) -> Callable[[], Any]:
    """A builder of question ``qi``'s candidate source: the task's pooled corpus (one source per
    task) or the question's own pool; ids are unit indices, new texts go through the disk cache."""
    from ..pipelines import InMemorySource

    def build() -> Any:
        question = task.records[qi].question
        if task.pools is None:
            if "corpus" not in shared:
                shared["corpus"] = InMemorySource(
                    list(task.unit_texts), cache.embed_queries, ids=[str(u) for u in range(len(task.unit_texts))],
                    embeddings=unit_emb, default_k=config.fetch_k,
                    query_vectors={r.question: q_emb[i] for i, r in enumerate(task.records)},
                )
            return shared["corpus"]
        pool = task.pools[qi]
        return InMemorySource(
            [task.unit_texts[u] for u in pool.tolist()], cache.embed_queries, ids=[str(u) for u in pool.tolist()],
            embeddings=unit_emb[pool], default_k=min(config.fetch_k, len(pool)),
            query_vectors={question: q_emb[qi]},
        )

    return build


def _set_metrics(
    emb: NDArray[np.float32], local: NDArray[np.int64], rel: NDArray[np.float64], agreement: bool
) -> dict[str, float]:
    out = {"diversity": math.nan, "vendi": 1.0 if local.size else math.nan, "tau": math.nan, "rho": math.nan}
    if local.size < 2:
        return out
    picked = emb[local]
    out["diversity"] = 1.0 - mean_pairwise_similarity(picked)
    out["vendi"] = vendi_score(picked)
    if agreement:
        out["tau"] = kendall_tau(local, rel)
        out["rho"] = spearman_rho(local, rel)
    return out


def run_task(
    task: RetrievalTask,
    cache: DiskEmbeddingCache,
    config: BenchConfig,
    headline: str,
    names: bool = False,
) -> TaskResult:
    """Run every method grid of ``config`` on one task (``names``: give methods that read sources the
    candidates' titles as names: a custom-data folder's titles under ``config.titles``)."""
    t0 = time.perf_counter()
    unit_emb, q_emb, cands = task_vectors(task, cache, config.fetch_k)
    t_embed = time.perf_counter() - t0
    t1 = time.perf_counter()
    inputs = question_inputs(task, unit_emb, q_emb, cands, config.k)
    norm_cache: dict[int, str] = {}

    def unit_norm(u: int) -> str:
        if u not in norm_cache:
            norm_cache[u] = f" {normalize_answer(task.unit_texts[u])} "
        return norm_cache[u]

    shared_sources: dict[str, Any] = {}
    settings: dict[tuple[str, str], SettingResult] = {}
    order: list[tuple[str, str]] = []
    gm_grid = next((g for g in config.methods if g.method == "gmmr" and g.over is None and len(g.values) > 1), None)
    jac_sum: NDArray[np.float64] | None = None
    iterator: Any = enumerate(task.records)
    if config.progress:
        from ._deps import require

        iterator = require("tqdm", "progress bars").tqdm(
            iterator, total=len(task.records), desc=f"selecting {task.name}", unit="q"
        )
    for qi, rec in iterator:
        units, sims = cands[qi]
        emb = unit_emb[units]
        inp = dataclasses.replace(
            inputs[qi], source_factory=_source_factory(task, qi, unit_emb, q_emb, cache, config, shared_sources))
        gold = set(task.gold[qi].tolist())
        support = task.support[qi] if task.support else None
        answers = [normalize_answer(a) for a in rec.answers if normalize_answer(a)]
        for grid in config.methods:
            picks = _picks_for_grid(grid, inp, config.source_ids, names)
            if grid is gm_grid and len(picks) > 1:
                jm = jaccard_matrix(np.stack([p[1] for p in picks]))
                jac_sum = jm if jac_sum is None else jac_sum + jm
            for params, local, info, picked in picks:
                llm = info.get("llm")
                llm = llm if isinstance(llm, str) else None
                label = grid.label(params, llm)
                key = (display_name(grid.method), label)
                if key not in settings:
                    settings[key] = SettingResult(key[0], params, label, {m: [] for m in METRICS}, llm=llm)
                    order.append(key)
                res = settings[key]
                chosen = units[local] if picked is None else picked
                docs = task.unit_doc[chosen]
                ranked_docs = list(dict.fromkeys(docs.tolist()))
                vals: dict[str, float] = {m: math.nan for m in METRICS}
                if gold:
                    hit = len(gold & set(ranked_docs))
                    vals["recall"] = hit / len(gold)
                    vals["all_gold"] = float(hit == len(gold))
                if support is not None:
                    chosen_set = set(chosen.tolist())
                    vals["support"] = sum(bool(chosen_set.intersection(u.tolist())) for u in support) / len(support)
                if rec.answer_groups:
                    vals["mrecall"] = mrecall_at_k([task.unit_texts[u] for u in chosen], rec.answer_groups, config.k)
                generated = info.get("answer")
                if rec.answer_groups and isinstance(generated, str):
                    vals["str_em"] = str_em(generated, rec.answer_groups)
                if answers:
                    vals["answer_hit"] = float(
                        any(f" {a} " in unit_norm(int(u)) for u in chosen for a in answers)
                    )
                agree = grid.method in config.agreement_methods
                if picked is None:
                    vals.update(_set_metrics(emb, local, sims, agree))
                else:
                    picked_emb = unit_emb[picked]
                    picked_rel = (picked_emb @ q_emb[qi]).astype(np.float64)
                    vals.update(_set_metrics(picked_emb, np.arange(picked.size), picked_rel, agree))
                for m in METRICS:
                    res.per_query[m].append(vals[m])
                res.picks.append([task.doc_ids[d] for d in ranked_docs])
                res.info.append(info)
    ordered = [settings[k] for k in order]
    # NDCG of every setting in one call (query ids "setting|question").
    with_gold = [i for i, g in enumerate(task.gold) if g.size]
    if with_gold:
        gold_ids = {i: [task.doc_ids[d] for d in task.gold[i].tolist()] for i in with_gold}
        runs = {f"{si}|{i}": res.picks[i] for si, res in enumerate(ordered) for i in with_gold}
        qrels = {f"{si}|{i}": gold_ids[i] for si in range(len(ordered)) for i in with_gold}
        scores = ndcg_at_k(runs, qrels, config.k)
        for run_key, value in zip(runs, scores, strict=True):
            si, i = (int(x) for x in run_key.split("|"))
            ordered[si].per_query["ndcg"][i] = float(value)
    t_select = time.perf_counter() - t1
    result = TaskResult(
        dataset=task.dataset,
        protocol=task.protocol,
        metric=headline,
        qids=[r.qid for r in task.records],
        n_units=len(task.unit_texts),
        settings=ordered,
        seconds={"embed": t_embed, "select_and_score": t_select},
    )
    if gm_grid is not None and jac_sum is not None:
        result.jaccard_values = [float(v) for v in gm_grid.values]
        result.jaccard = (jac_sum / len(task.records)).round(6).tolist()
    _add_oracle(result, config, headline)
    return result


def _add_oracle(result: TaskResult, config: BenchConfig, headline: str) -> None:
    """Append the per-query gMMR Oracle as a setting (method ``oracle``)."""
    lambdas = [float(v) for v in config.oracle_lambdas]
    if not lambdas:
        return
    by_value = {
        round(float(s.params["lambda_mult"]), 9): s
        for s in result.settings
        if s.method == "gmmr" and isinstance(s.params.get("lambda_mult"), float) and len(s.params) == 1
    }
    rows = [by_value.get(round(v, 9)) for v in lambdas]
    if any(r is None for r in rows):
        return
    found = [r for r in rows if r is not None]
    score = np.array([r.per_query[headline] for r in found], dtype=np.float64)  # (L, nq)
    oracle = SettingResult(
        "oracle",
        {"lambda_mult": lambdas},
        f"lambda_mult in {lambdas[0]:g}..{lambdas[-1]:g} per query",
        {m: [] for m in METRICS},
    )
    for qi in range(score.shape[1]):
        col = score[:, qi]
        if np.all(np.isnan(col)):
            best = lambdas[-1]
        else:
            best = argmax_upper_median(lambdas, np.nan_to_num(col, nan=-np.inf))
        li = lambdas.index(best)
        result.oracle_lambdas.append(best)
        for m in METRICS:
            oracle.per_query[m].append(found[li].per_query[m][qi])
        oracle.picks.append(found[li].picks[qi])
        oracle.info.append({"lambda_mult": best})
    result.settings.append(oracle)


def run_benchmark(config: BenchConfig) -> BenchResults:
    """Run ``config`` and (when ``config.out_dir`` is set) write JSON, Markdown and PNGs.

    Example:
        >>> from diverse_core.eval import BenchConfig, run_benchmark
        >>> res = run_benchmark(BenchConfig(tasks=[("hotpotqa", "paragraphs")], limit=5))  # doctest: +SKIP
    """
    config.validate()
    t0 = time.perf_counter()
    cache = _cache(config)
    loaded: dict[str, Any] = {}
    tasks: list[TaskResult] = []
    for dataset, protocol in config.tasks:
        if dataset not in loaded:
            source = config.benchmarks.get(dataset) or load_dataset(dataset, config.data_dir)
            loaded[dataset] = source.subset(config.limit)
        bench = loaded[dataset]
        task = build_task(bench, protocol, titles=config.titles and not bench.as_stored)
        if config.progress:
            print(f"[bench] {task.name}: {len(task.records)} questions, {len(task.unit_texts)} units", flush=True)
        tasks.append(run_task(task, cache, config, bench.metric, names=config.titles and bench.as_stored))
    seconds = {"total": time.perf_counter() - t0, "embedding": cache.embed_seconds}
    results = BenchResults({**_config_dict(config), "model_name": cache.model_name.partition("+")[0]}, tasks, seconds, cache.embedded)
    if config.out_dir is not None:
        from .report import write_outputs

        write_outputs(results, config)
        results.seconds["total_with_outputs"] = time.perf_counter() - t0
    return results


def _config_dict(config: BenchConfig) -> dict[str, Any]:
    return {
        "tasks": [list(t) for t in config.tasks],
        "methods": [
            {"method": g.method, "values": list(g.values), "params": dict(g.params)} for g in config.methods
        ],
        "k": config.k,
        "fetch_k": config.fetch_k,
        "limit": config.limit,
        "model_name": config.model_name,
        "oracle_lambdas": list(config.oracle_lambdas),
        "titles": config.titles,
        "source_ids": config.source_ids,
        "command": config.command,
    }
