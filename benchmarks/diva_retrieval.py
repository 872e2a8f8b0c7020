"""DIVA retrieval diversification on real ambiguous questions: MRecall@k, no LLM.

Settings (each question's interpretations drive the retrieval):

* ``condambigqa/own20``: CondAmbigQA-200, each question's own 20 Wikipedia passages
  (retrieved by the dataset's authors) are its pool, ranked by our cosine.
* ``condambigqa/pooled``: all 200 x 20 passages pooled (3,916 distinct); the first
  stage takes the question's ``--fetch-k`` nearest.
* ``asqa/pooled``: the annotators' knowledge snippets of all 948 ASQA dev questions
  pooled (2,748; the harness's stand-in corpus), first stage as above.

Methods: ``vanilla`` = top-k by cosine to the question (a); ``diva-gold[rule]`` = DIVA
retrieval driven by the GOLD interpretations (ASQA ``qa_pairs`` questions) from the
first-stage pool, each pruning rule of :mod:`diverse_core.pipelines.diva.retrieval`
(``mean`` is the paper's) (b); ``diva-gold-search[mean]`` = each gold interpretation
searches the whole pooled corpus itself; ``file-order`` = the authors' own ranking of
the 20 passages (bge-base, ``own20`` only); ``ceiling`` = all 20 passages.
(c) generated interpretations: pass ``--interpretations FILE`` (JSON ``{qid: [question,
...]}`` from any LLM run) to add ``diva-generated[mean]`` and the interpretation-quality
score; nothing here generates them (no capable LLM in this repository's runs).

Per-interpretation hits = k (the paper uses one K for both). Paired comparison against
vanilla: questions won / lost and an exact two-sided sign test.

Run (from the repository root; embeddings are cached under ``.cache/diverse-rag/``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=shared:. python benchmarks/diva_retrieval.py
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from diverse_core.eval.ambiguous import load_asqa_interpreted, load_condambigqa
from diverse_core.eval.datasets import resolve_data_dir
from diverse_core.eval.disk_cache import DiskEmbeddingCache
from diverse_core.eval.metrics import mrecall_at_k
from diverse_core.eval.protocols import RetrievalTask, build_task
from diverse_core.pipelines.diva import (
    PRUNE_MODES,
    diversify_hits,
    diversify_pool,
    interpretation_coverage,
    merge_hit_ids,
)
from numpy.typing import NDArray

Picker = Callable[[int, int], NDArray[np.int64]]  # (question index, k) -> unit indices


@dataclass
class Setting:
    """One corpus setting: its task, embeddings and per-question first-stage pools."""

    name: str
    task: RetrievalTask
    unit_emb: NDArray[np.float32]
    q_emb: NDArray[np.float32]
    interp_emb: list[NDArray[np.float32]]
    pools: list[tuple[NDArray[np.int64], NDArray[np.float64]]]
    rows: dict[str, dict[int, NDArray[np.float64]]] = field(default_factory=dict)
    own: dict[str, dict[int, NDArray[np.float64]]] = field(default_factory=dict)


def _first_stage(task: RetrievalTask, unit_emb: NDArray[np.float32], q_emb: NDArray[np.float32], fetch_k: int,
                 ) -> list[tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """Per question: candidate units by cosine desc (ties: lower index) and their cosine."""
    out = []
    for i in range(q_emb.shape[0]):
        units = task.pools[i] if task.pools is not None else np.arange(unit_emb.shape[0])
        sims = (unit_emb[units] @ q_emb[i]).astype(np.float64)
        order = np.lexsort((units, -sims))
        if task.pools is None:
            order = order[:fetch_k]
        out.append((units[order].astype(np.int64), sims[order]))
    return out


def _score(setting: Setting, name: str, pick: Picker, ks: Sequence[int]) -> None:
    """MRecall@k, and (pooled settings) recall@k of the question's own passages."""
    task = setting.task
    index = {d: i for i, d in enumerate(task.doc_ids)}
    own = [{index[d] for d in r.pool_doc_ids} for r in task.records]
    setting.rows[name], setting.own[name] = {}, {}
    for k in ks:
        picks = [pick(i, k) for i in range(len(task.records))]
        setting.rows[name][k] = np.array(
            [mrecall_at_k([task.unit_texts[u] for u in p], r.answer_groups, k)
             for p, r in zip(picks, task.records, strict=True)]
        )
        setting.own[name][k] = np.array(
            [len(set(task.unit_doc[p].tolist()) & o) / len(o) if o else np.nan
             for p, o in zip(picks, own, strict=True)]
        )


def _sign_test(wins: int, losses: int) -> float:
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _methods(setting: Setting, generated: list[NDArray[np.float32]] | None, own_pool: bool) -> dict[str, Picker]:
    pools, emb = setting.pools, setting.unit_emb
    methods: dict[str, Picker] = {"vanilla": lambda i, k: pools[i][0][:k]}
    if own_pool:
        file_order = [np.asarray(p, dtype=np.int64) for p in setting.task.pools or []]
        methods["file-order"] = lambda i, k: file_order[i][:k]
        methods["ceiling (all 20)"] = lambda i, k: file_order[i]

    def diva(interps: list[NDArray[np.float32]], prune: str) -> Picker:
        def pick(i: int, k: int) -> NDArray[np.int64]:
            units, sims = pools[i]
            r = diversify_pool(emb[units], interps[i], k=k, per_interpretation_k=k, relevance=sims, prune=prune)
            return units[r.indices]

        return pick

    for prune in PRUNE_MODES:
        methods[f"diva-gold[{prune}]"] = diva(setting.interp_emb, prune)
    if not own_pool:
        def search(i: int, k: int) -> NDArray[np.int64]:
            interps = setting.interp_emb[i]
            sims = interps @ emb.T  # each interpretation searches the whole corpus
            top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
            ids, hit_lists = merge_hit_ids([row.tolist() for row in top])
            units = np.asarray(ids, dtype=np.int64)
            rel = (emb[units] @ setting.q_emb[i]).astype(np.float64)
            return units[diversify_hits(hit_lists, emb[units], interps, k=k, relevance=rel).indices]

        methods["diva-gold-search[mean]"] = search
    if generated is not None:
        methods["diva-generated[mean]"] = diva(generated, "mean")
    return methods


def _report(setting: Setting, ks: Sequence[int]) -> list[dict[str, Any]]:
    base = setting.rows["vanilla"]
    out = []
    for name, per_k in setting.rows.items():
        row: dict[str, Any] = {"setting": setting.name, "method": name}
        for k in ks:
            vals = per_k[k]
            wins = int(np.sum((vals == 1) & (base[k] == 0)))
            losses = int(np.sum((vals == 0) & (base[k] == 1)))
            row[f"mrecall@{k}"] = 100 * float(vals.mean())
            row[f"won/lost@{k}"] = f"{wins}/{losses}"
            row[f"p@{k}"] = _sign_test(wins, losses)
            row[f"own@{k}"] = 100 * float(np.nanmean(setting.own[name][k]))
        out.append(row)
    return out


def _print(rows: list[dict[str, Any]], ks: Sequence[int]) -> None:
    head = ["setting", "method"] + [c for k in ks for c in (f"MRecall@{k}", f"won/lost vs vanilla @{k}", "sign p")]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["setting"], r["method"]]
        for k in ks:
            cells += [f"{r[f'mrecall@{k}']:.1f}", r[f"won/lost@{k}"], f"{r[f'p@{k}']:.3f}"]
        print("| " + " | ".join(cells) + " |")


def _embed_sets(cache: DiskEmbeddingCache, sets: Sequence[Sequence[str]]) -> list[NDArray[np.float32]]:
    """Embed every question's text list in one batch, then split per question."""
    flat = cache.embed([t for s in sets for t in s])
    bounds = np.cumsum([0, *(len(s) for s in sets)])
    return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _print_against_mean(settings: list[Setting], ks: Sequence[int]) -> None:
    print("\nPruning variants against the paper's mean pruning (won/lost, sign p):\n")
    print("| setting | variant | " + " | ".join(f"@{k}" for k in ks) + " |")
    print("|" + "---|" * (2 + len(ks)))
    for st in settings:
        base = st.rows["diva-gold[mean]"]
        for name, per_k in st.rows.items():
            if not name.startswith("diva-gold[") or name == "diva-gold[mean]":
                continue
            cells = []
            for k in ks:
                wins = int(np.sum((per_k[k] == 1) & (base[k] == 0)))
                losses = int(np.sum((per_k[k] == 0) & (base[k] == 1)))
                cells.append(f"{wins}/{losses}, p={_sign_test(wins, losses):.3f}")
            print(f"| {st.name} | {name} | " + " | ".join(cells) + " |")


def _print_own(rows: list[dict[str, Any]], ks: Sequence[int]) -> None:
    print("\nRecall of the question's own passages (ASQA: its annotators' snippets; CondAmbigQA: its 20; questions without any left out):\n")
    print("| setting | method | " + " | ".join(f"own recall@{k}" for k in ks) + " |")
    print("|" + "---|" * (2 + len(ks)))
    for r in rows:
        if r["setting"].endswith("pooled"):
            print(f"| {r['setting']} | {r['method']} | " + " | ".join(f"{r[f'own@{k}']:.1f}" for k in ks) + " |")


def _load_generated(path: str | None, records: Sequence[Any]) -> list[list[str]] | None:
    if path is None:
        return None
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [list(data.get(r.qid, [])) or [r.question] for r in records]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--ks", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--fetch-k", type=int, default=50)
    parser.add_argument("--interpretations", default=None, help="JSON {qid: [generated interpretation, ...]}")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    data_dir = resolve_data_dir(args.data_dir)
    from diverse_core.embedders import get_default_embedder

    cache = DiskEmbeddingCache(get_default_embedder(), "all-MiniLM-L6-v2", args.cache_dir, progress=False)
    t0 = time.perf_counter()
    cond = load_condambigqa(data_dir)
    asqa = load_asqa_interpreted(data_dir)
    specs = [
        ("condambigqa/own20", build_task(cond, "pool"), True),
        ("condambigqa/pooled", build_task(cond, "paragraphs"), False),
        ("asqa/pooled", build_task(asqa, "paragraphs"), False),
    ]
    rows: list[dict[str, Any]] = []
    settings: list[Setting] = []
    quality: list[str] = []
    timing: dict[str, list[float]] = {"vanilla": [], "diva-gold[mean]": []}
    for name, task, own in specs:
        unit_emb = cache.embed(list(task.unit_texts))
        q_emb = cache.embed([r.question for r in task.records])
        interp = _embed_sets(cache, [list(r.meta["interpretations"]) for r in task.records])
        setting = Setting(name, task, unit_emb, q_emb, interp, _first_stage(task, unit_emb, q_emb, args.fetch_k))
        gen_texts = _load_generated(args.interpretations, task.records)
        gen = _embed_sets(cache, gen_texts) if gen_texts is not None else None
        for method, pick in _methods(setting, gen, own).items():
            t = time.perf_counter()
            _score(setting, method, pick, args.ks)
            if method in timing:
                timing[method].append(time.perf_counter() - t)
        rows += _report(setting, args.ks)
        settings.append(setting)
        if gen is not None and name != "condambigqa/pooled":
            for label, thr, use_q in (("plain", None, False), ("residual", None, True)):
                cov = [
                    interpretation_coverage(g, gold, thr, setting.q_emb[i] if use_q else None)
                    for i, (g, gold) in enumerate(zip(gen, interp, strict=True))
                ]
                quality.append(
                    f"| {name} | {label} | {100 * np.mean([c.recall for c in cov]):.1f} "
                    f"| {100 * np.mean([c.precision for c in cov]):.1f} |"
                )
    _print(rows, args.ks)
    _print_own(rows, args.ks)
    _print_against_mean(settings, args.ks)
    if quality:
        print("\nGenerated-interpretation quality (greedy one-to-one match to the gold qa_pairs questions):\n")
        print("| setting | comparison (default threshold) | gold covered (recall %) | precision % |")
        print("|---|---|---|---|")
        print("\n".join(quality))
    ratio = sum(timing["diva-gold[mean]"]) / max(sum(timing["vanilla"]), 1e-12)
    print(
        f"\nscoring time incl. MRecall, all settings and ks: vanilla {sum(timing['vanilla']):.2f} s, "
        f"diva-gold[mean] {sum(timing['diva-gold[mean]']):.2f} s (ratio {ratio:.2f}); "
        f"total {time.perf_counter() - t0:.1f} s, {cache.embedded} texts newly embedded"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
