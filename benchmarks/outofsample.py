"""Out-of-sample protocol: tune and train on the TRAIN questions, report on dev.

For every dataset (HotpotQA, MuSiQue, 2Wiki) and protocol (``chunks``, ``paragraphs``):

1. the train questions (:func:`~diverse_core.eval.train_data.load_train`, any question
   sharing an id or a normalised text with a dev question removed) run through the
   same harness as dev, in blocks of about the dev set's size;
2. each method's "best fixed" parameter is the one with the highest mean headline
   metric on train (ties: upper median of the tied values);
3. the learned λ selector (:mod:`diverse_core.adaptive`) is trained on the train
   questions of the three datasets together (labels: the gold recall of each λ's set,
   the harness's Oracle labels), its ridge penalty chosen by cross-validation on train;
   a per-dataset model is trained too and reported as a labelled variant;
4. dev runs every grid once; each method is reported at its train-chosen setting, with
   a paired-bootstrap 95% interval of its mean, of its difference to cosine and a paired
   permutation p-value against cosine, plus the share of the cosine -> Oracle gap closed.

Nothing is chosen on dev. The dev-best fixed value is also kept, labelled in-sample.

This protocol serves the benchmark scripts beside it (``adaptive_split.py``, ``learned_split.py``,
``peer_quality.py``, ``learned_titlefree.py``), which import it from this folder.

Example:
    >>> from outofsample import SplitConfig, run_split
    >>> res = run_split(SplitConfig(datasets=["hotpotqa"], protocols=["chunks"]))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from diverse_core.eval.config import DEFAULT_METHODS, BenchConfig, MethodGrid, display_name
from diverse_core.eval.datasets import load_dataset
from diverse_core.eval.disk_cache import embedding_cache
from diverse_core.eval.protocols import build_task
from diverse_core.eval.records import Benchmark
from diverse_core.eval.results import SettingResult, TaskResult
from diverse_core.eval.runner import run_task
from diverse_core.eval.stats import bootstrap_ci, gap_closed, permutation_p
from diverse_core.eval.train_adaptive import adaptive_examples
from diverse_core.eval.train_data import normalized_question, train_blocks
from diverse_core.registry import get_method
from diverse_core.tuning import argmax_upper_median

__all__ = ["SplitConfig", "MethodRow", "SplitTask", "SplitResults", "run_split", "TUNED_METHODS"]

#: Methods whose trade-off parameter is chosen on train.
TUNED_METHODS = ("mmr", "gmmr", "dartboard", "vendi")


@dataclass
class SplitConfig:
    """Settings of :func:`run_split`.

    Attributes:
        datasets: dev datasets with a train set (``hotpotqa``, ``musique``, ``2wiki``).
        protocols: retrieval protocols (``chunks``, ``paragraphs``).
        methods: method grids run on train and dev (cosine must be among them).
        k, fetch_k: as in :class:`~diverse_core.eval.config.BenchConfig`.
        data_dir, cache_dir, embedder, model_name: as in ``BenchConfig``.
        train_limit / dev_limit: keep only the first N train / dev questions per dataset
            (``train_limit`` may map dataset -> N).
        train_block: questions per train block by dataset (default
            :data:`~diverse_core.eval.train_data.TRAIN_BLOCK`).
        adaptive: train and report the learned λ selector.
        folds, alphas: cross-validation of the selector on train.
        model_dir: where the trained selector models are written (default ``out_dir/models``).
        train_sets / dev_sets: preloaded benchmarks used instead of the data files
            (``name -> list of train blocks`` / ``name -> dev benchmark``).
        dev_methods: per protocol, extra method grids run on dev only (no train runs, no tuning:
            e.g. a model trained on train elsewhere, or a pipeline at fixed settings); every
            setting is reported as a row noted ``"dev grid"``.
        n_boot, n_perm, seed: bootstrap resamples, permutations and their seed.
        out_dir: where ``split.json`` is written (``None``: nothing written).
        progress: print one line per step.
        titles: index units as ``"title: text"`` (``False``: bare texts, see
            :func:`~diverse_core.eval.protocols.build_task`), for train and dev alike.
        source_ids: give methods that read sources (``learned``) the candidates' page ids.
    """

    datasets: Sequence[str] = ("hotpotqa", "musique", "2wiki")
    protocols: Sequence[str] = ("chunks", "paragraphs")
    methods: Sequence[MethodGrid] = DEFAULT_METHODS
    k: int = 5
    fetch_k: int = 50
    data_dir: str | Path | None = None
    cache_dir: str | Path | None = None
    embedder: Any = None
    model_name: str = "all-MiniLM-L6-v2"
    train_limit: int | Mapping[str, int] | None = None
    dev_limit: int | None = None
    train_block: Mapping[str, int] = field(default_factory=dict)
    adaptive: bool = True
    folds: int = 5
    alphas: Sequence[float] = (0.1, 1.0, 10.0, 100.0, 1000.0)
    model_dir: str | Path | None = None
    train_sets: Mapping[str, Sequence[Benchmark]] = field(default_factory=dict)
    dev_sets: Mapping[str, Benchmark] = field(default_factory=dict)
    dev_methods: Mapping[str, Sequence[MethodGrid]] = field(default_factory=dict)
    n_boot: int = 10_000
    n_perm: int = 10_000
    seed: int = 0
    out_dir: str | Path | None = None
    progress: bool = True
    titles: bool = True
    source_ids: bool = False

    def bench_config(self, methods: Sequence[MethodGrid]) -> BenchConfig:
        """The harness configuration of one train or dev run."""
        return BenchConfig(
            tasks=[("_", "_")], methods=list(methods), k=self.k, fetch_k=self.fetch_k,
            embedder=self.embedder, model_name=self.model_name, out_dir=None, plots=False,
            progress=False, agreement_methods=(), titles=self.titles, source_ids=self.source_ids,
        )


@dataclass
class MethodRow:
    """One method at its train-chosen setting, scored on dev."""

    method: str
    label: str
    train_mean: float
    dev: list[float]
    mean: float
    ci: tuple[float, float]
    delta: float
    delta_ci: tuple[float, float]
    p_value: float
    gap_closed: float
    note: str = ""
    support: list[float] = field(default_factory=list)


@dataclass
class SplitTask:
    """Everything reported for one (dataset, protocol)."""

    dataset: str
    protocol: str
    n_train: int
    n_dev: int
    dropped: int
    train_qids: list[str]
    train_questions: list[str]
    rows: list[MethodRow]
    train_curve: dict[str, dict[str, float]]
    dev_curve: dict[str, dict[str, float]]


@dataclass
class SplitResults:
    """All tasks of one :func:`run_split` call."""

    config: dict[str, Any]
    tasks: list[SplitTask]
    models: dict[str, str]
    seconds: float


def _log(cfg: SplitConfig, msg: str) -> None:
    if cfg.progress:
        print(f"[split] {msg}", flush=True)


def _param_value(s: SettingResult) -> float | None:
    spec = get_method(s.method) if s.method not in ("cosine", "oracle") else None
    if spec is None or spec.param is None:
        return None
    v = s.params.get(spec.param)
    return float(v) if isinstance(v, (int, float)) else None


def _pooled(blocks: list[TaskResult], metric: str) -> dict[tuple[str, str], tuple[SettingResult, list[float]]]:
    """Per (method, label): a setting and its per-question metric over all train blocks."""
    out: dict[tuple[str, str], tuple[SettingResult, list[float]]] = {}
    for t in blocks:
        for s in t.settings:
            key = (s.method, s.label)
            if key not in out:
                out[key] = (s, [])
            out[key][1].extend(s.per_query[metric])
    return out


def _best_fixed(pooled: dict[tuple[str, str], tuple[SettingResult, list[float]]], method: str) -> tuple[str, float] | None:
    """The label of ``method``'s best setting by mean (ties: upper median of the values)."""
    rows = [(s, float(np.nanmean(v))) for (m, _), (s, v) in pooled.items() if m == method and v]
    valued = [(s, mean, v) for s, mean in rows if (v := _param_value(s)) is not None]
    if not valued:
        return None
    chosen = argmax_upper_median([v for _, _, v in valued], [round(m, 12) for _, m, _ in valued])
    s, mean = next((s, m) for s, m, v in valued if v == chosen)
    return s.label, mean


def _row(
    method: str, label: str, train_mean: float, dev: list[float], cosine: list[float], oracle_mean: float,
    cfg: SplitConfig, note: str = "",
) -> MethodRow:
    a = np.asarray(dev, dtype=np.float64)
    c = np.asarray(cosine, dtype=np.float64)
    diff = a - c
    mean = float(np.nanmean(a))
    same = bool(np.allclose(np.nan_to_num(diff), 0.0))
    return MethodRow(
        method=method,
        label=label,
        train_mean=train_mean,
        dev=[float(x) for x in a],
        mean=mean,
        ci=bootstrap_ci(a, n_boot=cfg.n_boot, seed=cfg.seed),
        delta=float(np.nanmean(diff)),
        delta_ci=(0.0, 0.0) if same else bootstrap_ci(diff, n_boot=cfg.n_boot, seed=cfg.seed),
        p_value=1.0 if same else permutation_p(diff, n_perm=cfg.n_perm, seed=cfg.seed),
        gap_closed=gap_closed(mean, float(np.nanmean(c)), oracle_mean),
        note=note,
    )


def _dev_row(rows: list[MethodRow], dev: dict[tuple[str, str], tuple[SettingResult, list[float]]],
             support: dict[tuple[str, str], tuple[SettingResult, list[float]]], cosine: list[float],
             oracle_mean: float, cfg: SplitConfig, method: str, label: str, train_mean: float, note: str = "") -> None:
    """Append the row of one dev setting (its values, support-level values and comparison to cosine)."""
    row = _row(method, label, train_mean, dev[(method, label)][1], cosine, oracle_mean, cfg, note)
    found = support.get((method, label))
    row.support = [float(x) for x in found[1]] if found is not None else []
    rows.append(row)


def _curve(pooled: dict[tuple[str, str], tuple[SettingResult, list[float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for (m, label), (_, v) in pooled.items():
        out.setdefault(m, {})[label] = float(np.nanmean(v)) if v else float("nan")
    return out


def run_split(cfg: SplitConfig) -> SplitResults:
    """Run the train -> dev protocol of ``cfg`` (see the module docstring)."""
    t0 = time.perf_counter()
    if not any(g.method == "topk" for g in cfg.methods):
        cfg.methods = [MethodGrid("topk"), *cfg.methods]
    cache = embedding_cache(cfg.embedder, cfg.model_name, cfg.cache_dir, progress=False)
    cfg.model_name = cache.model_name
    train_cfg = cfg.bench_config(cfg.methods)

    dev_sets: dict[str, Benchmark] = {}
    train_sets: dict[str, list[Benchmark]] = {}
    dropped: dict[str, int] = {}
    for name in cfg.datasets:
        dev = cfg.dev_sets.get(name) or load_dataset(name, cfg.data_dir)
        dev_sets[name] = dev.subset(cfg.dev_limit)
        limit = cfg.train_limit.get(name) if isinstance(cfg.train_limit, Mapping) else cfg.train_limit
        train_sets[name], dropped[name] = train_blocks(name, dev.records, cfg.data_dir, limit=limit,
                                                       block=cfg.train_block.get(name),
                                                       preloaded=cfg.train_sets.get(name))

    # 1. train runs and best fixed settings
    train_pooled: dict[tuple[str, str], dict[tuple[str, str], tuple[SettingResult, list[float]]]] = {}
    examples: dict[tuple[str, str], list[Any]] = {}
    for name in cfg.datasets:
        for protocol in cfg.protocols:
            _log(cfg, f"train {name}/{protocol}: {sum(len(b.records) for b in train_sets[name])} questions")
            results = [run_task(build_task(b, protocol, titles=cfg.titles), cache, train_cfg, b.metric)
                       for b in train_sets[name]]
            train_pooled[(name, protocol)] = _pooled(results, dev_sets[name].metric)
            if cfg.adaptive:
                examples[(name, protocol)] = adaptive_examples(train_sets[name], protocol, cache, cfg.k, cfg.fetch_k,
                                                               titles=cfg.titles)

    # 2. learned selectors (pooled over datasets, and per dataset), trained on train only
    models: dict[str, str] = {}
    model_dir = Path(cfg.model_dir) if cfg.model_dir else (Path(cfg.out_dir) / "models" if cfg.out_dir else None)
    if cfg.adaptive:
        import tempfile

        from diverse_core.adaptive import AdaptiveSelector

        if model_dir is None:
            model_dir = Path(tempfile.mkdtemp(prefix="diverse-rag-split-"))
        for protocol in cfg.protocols:
            groups = {"all": list(cfg.datasets), **{n: [n] for n in cfg.datasets}} if len(cfg.datasets) > 1 else {
                "all": list(cfg.datasets)
            }
            for tag, names in groups.items():
                train_examples = [ex for n in names for ex in examples[(n, protocol)]]
                sel = AdaptiveSelector.fit_examples(
                    train_examples, folds=cfg.folds, alphas=cfg.alphas,
                    info={"protocol": protocol, "train_sets": names, "k": cfg.k, "fetch_k": cfg.fetch_k},
                )
                path = sel.save(model_dir / f"adaptive_{protocol}_{tag}.npz")
                models[f"{protocol}/{tag}"] = str(path)
                cv = {v: max(s.scorer.info["cv_pick_quality"].values()) for v, s in sel.variants.items()}
                _log(cfg, f"selector {protocol}/{tag}: {len(train_examples)} train questions, cv={cv}")

    # 3. dev runs and rows
    tasks: list[SplitTask] = []
    for name in cfg.datasets:
        for protocol in cfg.protocols:
            dev_grids: list[tuple[MethodGrid, str]] = []  # (grid, note): run on dev only, one row per setting
            if cfg.adaptive:
                for tag, note in (("all", "trained on the train sets of " + " + ".join(cfg.datasets)),
                                  (name, f"trained on {name} train only")):
                    if f"{protocol}/{tag}" in models and not (tag == name and len(cfg.datasets) == 1):
                        dev_grids.append((MethodGrid("adaptive", (), {"model": models[f"{protocol}/{tag}"]}), note))
                dev_grids.append((MethodGrid("adaptive", (), {"model": models[f"{protocol}/all"], "variant": "embedding"}),
                                  "embedding-only variant (no texts): the same model, only embeddings"))
            dev_grids += [(g, "dev grid (set without dev)") for g in cfg.dev_methods.get(protocol, ())]
            _log(cfg, f"dev {name}/{protocol}: {len(dev_sets[name].records)} questions")
            bench = dev_sets[name]
            res = run_task(build_task(bench, protocol, titles=cfg.titles), cache,
                           cfg.bench_config([*cfg.methods, *(g for g, _ in dev_grids)]), bench.metric)
            dev_pooled, dev_support = _pooled([res], bench.metric), _pooled([res], "support")
            pooled = train_pooled[(name, protocol)]
            cosine = dev_pooled[("cosine", "-")][1]
            oracle_key = next((key for key in dev_pooled if key[0] == "oracle"), None)
            oracle_mean = float(np.nanmean(dev_pooled[oracle_key][1])) if oracle_key else float("nan")
            rows: list[MethodRow] = []
            add = partial(_dev_row, rows, dev_pooled, dev_support, cosine, oracle_mean, cfg)
            add("cosine", "-", float(np.nanmean(pooled[("cosine", "-")][1])))
            # every swept method of the run (the peer strategies of issue 28 included)
            for method in dict.fromkeys([*TUNED_METHODS, *(g.method for g in cfg.methods if g.values)]):
                best = _best_fixed(pooled, method)
                if best is not None:
                    add(method, best[0], best[1], "chosen on train")
            for grid, note in dev_grids:
                for params in grid.settings():
                    add(grid.method, grid.label(params), float("nan"), note)
            gm = _best_fixed(dev_pooled, "gmmr")
            if gm is not None:
                add("gmmr", gm[0], float("nan"), "in-sample: best on dev itself")
            if oracle_key:
                train_oracle = next((v for key, (_, v) in pooled.items() if key[0] == "oracle"), None)
                add("oracle", oracle_key[1], float(np.nanmean(train_oracle)) if train_oracle else float("nan"),
                    "per-question best lambda (uses gold)")
            trained = [r for b in train_sets[name] for r in b.records]
            tasks.append(SplitTask(
                dataset=name, protocol=protocol, n_train=len(trained), n_dev=len(bench.records),
                dropped=dropped[name], train_qids=[r.qid for r in trained],
                train_questions=[normalized_question(r.question) for r in trained], rows=rows,
                train_curve=_curve(pooled), dev_curve=_curve(dev_pooled),
            ))
    out = SplitResults(_config_dict(cfg), tasks, models, time.perf_counter() - t0)
    if cfg.out_dir is not None:
        write_split(out, Path(cfg.out_dir))
    return out


def _config_dict(cfg: SplitConfig) -> dict[str, Any]:
    return {
        "datasets": list(cfg.datasets),
        "protocols": list(cfg.protocols),
        "methods": [{"method": display_name(g.method), "values": list(g.values), "params": dict(g.params)}
                    for g in cfg.methods],
        "k": cfg.k,
        "fetch_k": cfg.fetch_k,
        "train_limit": dict(cfg.train_limit) if isinstance(cfg.train_limit, Mapping) else cfg.train_limit,
        "train_block": dict(cfg.train_block),
        "dev_limit": cfg.dev_limit,
        "n_boot": cfg.n_boot,
        "n_perm": cfg.n_perm,
        "seed": cfg.seed,
        "model_name": cfg.model_name,
        "titles": cfg.titles,
        "source_ids": cfg.source_ids,
    }


def split_payload(res: SplitResults) -> dict[str, Any]:
    """JSON-able record of a split run (per-question dev values included)."""
    return {
        "config": res.config,
        "models": res.models,
        "seconds": round(res.seconds, 1),
        "tasks": [
            {
                "dataset": t.dataset, "protocol": t.protocol, "n_train": t.n_train, "n_dev": t.n_dev,
                "dropped_overlap": t.dropped,
                "rows": [
                    {"method": r.method, "params": r.label, "note": r.note, "train_mean": r.train_mean,
                     "mean": r.mean, "ci": list(r.ci), "delta_vs_cosine": r.delta, "delta_ci": list(r.delta_ci),
                     "p_vs_cosine": r.p_value, "gap_closed": r.gap_closed, "dev": r.dev, "support": r.support}
                    for r in t.rows
                ],
                "train_curve": t.train_curve,
                "dev_curve": t.dev_curve,
            }
            for t in res.tasks
        ],
    }


def write_split(res: SplitResults, out_dir: Path) -> Path:
    """Write ``split.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "split.json"
    path.write_text(json.dumps(split_payload(res), indent=1, allow_nan=True) + "\n", encoding="utf-8")
    return path
