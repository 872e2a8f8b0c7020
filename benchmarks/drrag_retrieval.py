"""DR-RAG retrieval benchmark: recall@k of SM, QDC, CIS and CFS on HotpotQA, MuSiQue and 2Wiki.

For every dataset/protocol of the eval harness (``paragraphs``: every passage pooled and indexed
as ``"title: text"``; ``chunks``: 2-sentence windows, recall = gold-passage coverage) this
embeds the units, the questions and, for each question, the text ``question + " " + unit`` of
its top stage-1 units (all through the harness's disk cache), then runs
:func:`diverse_core.pipelines.drrag.select.select_drrag` for k = 3, 4, 6 (``k1 = ceil(k/2)``,
``m`` hits examined per concatenated search) with

* SM: the k units most similar to the question;
* QDC, CIS and CFS with the shipped classifier (threshold stored with it, chosen on TRAIN);
* CIS and CFS with a *perfect* classifier (accepts a pair iff both units' passages are gold),
  the ceiling a classifier can reach;
* CFS and CIS with ``fill`` (top up to k by similarity; ours, not the paper's).

Reported per row: recall@k (mean over questions of found gold / gold), documents returned per
query, gold passages per document returned, and retrieval time per query excluding embedding
(stage-1 search, the k1 concatenated searches, the classifier and the selection). The
embedding cost per query (the question, plus the k1 concatenated texts for DR-RAG) is measured
separately on uncached texts.

Run (single-threaded BLAS)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=shared:. python benchmarks/drrag_retrieval.py
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from diverse_core.embedders import get_default_embedder
from diverse_core.eval.datasets import load_dataset
from diverse_core.eval.disk_cache import DiskEmbeddingCache
from diverse_core.eval.protocols import RetrievalTask, build_task
from diverse_core.eval.train_drrag import roc_auc
from diverse_core.pipelines.drrag.classifier import PairClassifier, default_classifier, make_scorer
from diverse_core.pipelines.drrag.select import default_k1, select_drrag
from numpy.typing import NDArray

MODEL_NAME = "all-MiniLM-L6-v2"
OUT = Path(__file__).resolve().parent / "results" / "drrag_retrieval.json"


def concat_text(question: str, unit_text: str) -> str:
    """The text of a concatenated (stage-2) search: the question followed by the unit."""
    return f"{question} {unit_text}"


def top_n(unit_emb: NDArray[np.float32], vecs: NDArray[np.float32], n: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Per row of ``vecs``: the ``n`` most similar units (cosine of unit vectors), best first."""
    sims = vecs @ unit_emb.T
    n = min(n, unit_emb.shape[0])
    part = np.argpartition(-sims, n - 1, axis=1)[:, :n]
    vals = np.take_along_axis(sims, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    return idx.astype(np.int64), np.take_along_axis(sims, idx, axis=1)


def perfect_scorer(gold_docs: set[int], unit_doc: NDArray[np.int64]) -> Callable[[Sequence[int], Sequence[int]], NDArray[np.float32]]:
    """Accepts a pair iff both units belong to gold passages."""

    def score(a: Sequence[int], b: Sequence[int]) -> NDArray[np.float32]:
        ga = np.isin(unit_doc[np.asarray(a, dtype=np.int64)], list(gold_docs))
        gb = np.isin(unit_doc[np.asarray(b, dtype=np.int64)], list(gold_docs))
        return (ga & gb).astype(np.float32)

    return score


#: (row label, mode, classifier: "model" / "perfect" / None, fill)
ROWS: list[tuple[str, str, str | None, bool]] = [
    ("QDC", "qdc", None, False),
    ("CIS", "cis", "model", False),
    ("CIS perfect", "cis", "perfect", False),
    ("CIS+fill", "cis", "model", True),
    ("CIS+fill perfect", "cis", "perfect", True),
    ("CFS", "cfs", "model", False),
    ("CFS perfect", "cfs", "perfect", False),
    ("CFS+fill", "cfs", "model", True),
    ("CFS+fill perfect", "cfs", "perfect", True),
]


def run_task(
    task: RetrievalTask,
    cache: DiskEmbeddingCache,
    ks: Sequence[int],
    m: int,
    clf: PairClassifier | None,
    threshold: float,
    titles: Sequence[str],
) -> list[dict[str, Any]]:
    unit_emb = cache.embed(list(task.unit_texts))
    q_emb = cache.embed([r.question for r in task.records])
    k1_max = max(default_k1(k) for k in ks)
    depth = max(ks) + k1_max * m + 10  # enough of the question's ranking for fill
    ranking, rank_sims = top_n(unit_emb, q_emb, depth)
    concat = [concat_text(r.question, task.unit_texts[u]) for r, row in zip(task.records, ranking, strict=True) for u in row[:k1_max]]
    c_emb = cache.embed(concat).reshape(len(task.records), k1_max, -1)
    unit_titles = [titles[d] for d in task.unit_doc.tolist()]
    n_q = len(task.records)
    rows: list[dict[str, Any]] = []
    pair_log: list[tuple[float, bool]] = []
    for k in ks:
        k1 = default_k1(k)
        stats: dict[str, dict[str, list[float]]] = {}

        def record(label: str, units: Sequence[int], qi: int, seconds: float, stats: Any = stats) -> None:
            s = stats.setdefault(label, {"recall": [], "docs": [], "gold": [], "time": []})
            docs = set(task.unit_doc[np.asarray(units, dtype=np.int64)].tolist()) if len(units) else set()
            gold = set(task.gold[qi].tolist())
            found = len(docs & gold)
            s["recall"].append(found / len(gold) if gold else math.nan)
            s["docs"].append(float(len(docs)))
            s["gold"].append(float(found))
            s["time"].append(seconds)

        for qi, rec in enumerate(task.records):
            t0 = time.perf_counter()
            idx, sims = top_n(unit_emb, q_emb[qi : qi + 1], depth)
            t_sm = time.perf_counter() - t0
            record("SM", idx[0, :k].tolist(), qi, t_sm)
            t1 = time.perf_counter()
            hits, hit_sims = top_n(unit_emb, c_emb[qi, :k1], m + k)
            t_stage2 = time.perf_counter() - t1 + t_sm
            local = np.unique(np.concatenate([idx[0], hits.reshape(-1)]))
            gold_docs = set(task.gold[qi].tolist())
            for label, mode, kind, fill in ROWS:
                if kind == "model" and clf is None:
                    continue
                t2 = time.perf_counter()
                scorer: Any = None
                if kind == "perfect":
                    scorer = perfect_scorer(gold_docs, task.unit_doc)
                elif kind == "model":
                    assert clf is not None
                    pos = {int(u): n for n, u in enumerate(local)}
                    inner = make_scorer(
                        clf,
                        rec.question,
                        [task.unit_texts[u] for u in local],
                        q_emb[qi],
                        unit_emb[local],
                        [unit_titles[u] for u in local],
                    )

                    log = pair_log if (mode == "cfs" and not fill and k == ks[0]) else None

                    def scorer(
                        a: Sequence[int],
                        b: Sequence[int],
                        inner: Any = inner,
                        pos: Any = pos,
                        log: Any = log,
                        gold: Any = task.gold[qi],
                    ) -> Any:
                        probs = inner([pos[x] for x in a], [pos[x] for x in b])
                        if log is not None:  # the CFS pairs of the first k: classifier quality on dev
                            both = np.isin(task.unit_doc[np.asarray(a)], gold) & np.isin(
                                task.unit_doc[np.asarray(b)], gold
                            )
                            log.extend(zip(probs.tolist(), both.tolist(), strict=True))
                        return probs

                sel = select_drrag(
                    idx[0].tolist(),
                    hits.tolist(),
                    k,
                    mode=mode,
                    k1=k1,
                    m=m,
                    scorer=scorer,
                    threshold=threshold if kind == "model" else 0.5,
                    fill=fill,
                )
                record(label, list(sel.ids), qi, time.perf_counter() - t2 + t_stage2)
        for label, s in stats.items():
            docs = np.asarray(s["docs"])
            rows.append(
                {
                    "dataset": task.dataset,
                    "protocol": task.protocol,
                    "k": k,
                    "k1": k1,
                    "m": m,
                    "method": label,
                    "n": n_q,
                    "recall": float(np.nanmean(s["recall"])),
                    "docs": float(docs.mean()),
                    "gold_per_doc": float(np.sum(s["gold"]) / max(docs.sum(), 1.0)),
                    "ms_per_query": 1000.0 * float(np.mean(s["time"])),
                }
            )
    if pair_log:
        probs = np.array([p for p, _ in pair_log])
        labels = np.array([float(y) for _, y in pair_log])
        rows.append(
            {
                "dataset": task.dataset,
                "protocol": task.protocol,
                "k": ks[0],
                "method": "classifier on dev CFS pairs",
                "pairs": len(pair_log),
                "positives": int(labels.sum()),
                "auc": roc_auc(probs, labels),
                "accuracy": float(np.mean((probs >= threshold) == (labels > 0.5))),
                "recall_pos": float(np.mean(probs[labels > 0.5] >= threshold)) if labels.sum() else math.nan,
                "specificity": float(np.mean(probs[labels < 0.5] < threshold)),
            }
        )
    return rows


def embedding_cost(records: Sequence[Any], unit_texts: Sequence[str], k1: int, n: int = 16) -> dict[str, float]:
    """Milliseconds per query to embed the question alone vs the question plus k1 concatenations."""
    emb = get_default_embedder()
    emb(["warm-up"])
    t_q, t_all = [], []
    for r in records[:n]:
        texts = [concat_text(r.question, unit_texts[i]) for i in range(k1)]
        t0 = time.perf_counter()
        emb([r.question])
        t_q.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        emb([r.question, *texts])
        t_all.append(time.perf_counter() - t0)
    return {"question_only_ms": 1000 * float(np.median(t_q)), "with_concat_ms": 1000 * float(np.median(t_all)), "k1": k1}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique", "2wiki"])
    ap.add_argument("--protocols", nargs="+", default=["paragraphs"])
    ap.add_argument("--ks", nargs="+", type=int, default=[3, 4, 6])
    ap.add_argument("--m", type=int, default=5, help="hits examined per concatenated search")
    ap.add_argument("--limit", type=int, default=None, help="first N questions per dataset")
    ap.add_argument("--threshold", type=float, default=None, help="default: the classifier's own")
    ap.add_argument("--classifier", default=None, help="a saved PairClassifier (.npz); default: the shipped one")
    ap.add_argument("--perfect-only", action="store_true", help="skip the trained classifier rows")
    ap.add_argument("--embed-cost", action="store_true", help="also time MiniLM on uncached texts")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--cache-dir", default=None, help="embedding cache folder (default: the eval harness's)")
    args = ap.parse_args(argv)

    clf = None
    if not args.perfect_only:
        clf = PairClassifier.load(args.classifier) if args.classifier else default_classifier()
    threshold = args.threshold if args.threshold is not None else (clf.threshold if clf else 0.5)
    cache = DiskEmbeddingCache(get_default_embedder(), MODEL_NAME, args.cache_dir, progress=False)
    rows: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    t0 = time.perf_counter()
    for ds in args.datasets:
        bench = load_dataset(ds).subset(args.limit)
        titles = [d.title for d in bench.corpus.values()]
        for protocol in args.protocols:
            task = build_task(bench, protocol)
            rows.extend(run_task(task, cache, args.ks, args.m, clf, threshold, titles))
            print(f"[drrag] {task.name}: {len(task.records)} questions, {len(task.unit_texts)} units, "
                  f"{time.perf_counter() - t0:.0f}s", flush=True)
        if args.embed_cost and "embedding" not in extra:
            extra["embedding"] = embedding_cost(bench.records, build_task(bench, "paragraphs").unit_texts, 2)
    print_table(rows)
    if extra:
        print(json.dumps(extra))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "threshold": threshold, "rows": rows, **extra}, indent=1))


def print_table(all_rows: Sequence[dict[str, Any]]) -> None:
    """Markdown: one block per protocol and k, methods as rows, datasets as column groups."""
    for r in all_rows:
        if "auc" in r:
            print(
                f"classifier on {r['dataset']}/{r['protocol']} CFS pairs (k={r['k']}): AUC {r['auc']:.3f}, "
                f"accuracy {r['accuracy']:.3f}, accepted gold pairs {r['recall_pos']:.3f}, "
                f"rejected other pairs {r['specificity']:.3f} ({r['pairs']} pairs, {r['positives']} gold)"
            )
    rows = [r for r in all_rows if "recall" in r]
    keys = sorted({(r["protocol"], r["k"]) for r in rows}, key=lambda x: (x[0] != "paragraphs", x[0], x[1]))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    for protocol, k in keys:
        sub = [r for r in rows if r["protocol"] == protocol and r["k"] == k]
        methods = list(dict.fromkeys(r["method"] for r in sub))
        print(f"\n{protocol}, k={k} (k1={sub[0]['k1']}, m={sub[0]['m']}): recall@k / docs returned / gold per doc / ms per query")
        print("| method | " + " | ".join(datasets) + " |")
        print("|---|" + "---|" * len(datasets))
        for mth in methods:
            cells = []
            for ds in datasets:
                r = next((x for x in sub if x["dataset"] == ds and x["method"] == mth), None)
                cells.append("-" if r is None else f"{100 * r['recall']:.1f} / {r['docs']:.2f} / {r['gold_per_doc']:.3f} / {r['ms_per_query']:.2f}")
            print(f"| {mth} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
