"""Train the shipped DR-RAG pair classifier from the TRAIN files, in one command.

``python -m diverse_core.eval.train_drrag`` or ``diverse-rag train drrag`` (options: ``--help``)
does, deterministically for a seed:

1. loads the train questions (:mod:`.drrag_trainsets`): HotpotQA (at most ``MAX_QUESTIONS``, drawn
   with the seed), MuSiQue, 2Wiki; each question keeps its gold paragraphs and the
   ``DISTRACTORS`` (or ``--distractors``) distractors sharing most words with the question (the rest are never
   embedded, which keeps the command short on a CPU);
2. embeds questions and paragraphs with the packaged MiniLM through the harness's disk
   cache (a second run embeds nothing);
3. builds every ordered pair of each question's trimmed paragraphs: positives = two gold
   paragraphs (both orders); negatives = gold + distractor and distractor + distractor pairs,
   the distractors being the hard ones kept in step 1;
4. holds out 20% of the questions of each dataset, fits logistic regression and a small MLP
   on the scalar features alone and on all features, on the rest, reports accuracy and ROC AUC per dataset on the held-out part and on the dev
   pools of HotpotQA and MuSiQue (``paragraphs`` texts, dev questions are never trained or
   tuned on), and keeps the model with the better held-out AUC;
5. picks the decision threshold that maximises F1 (``--criterion``) on the held-out TRAIN pairs
   and writes ``drrag_classifier.npz`` into :mod:`diverse_core.pipelines.drrag` (where
   :func:`~diverse_core.pipelines.drrag.default_classifier` loads it).

The training lives in the harness because it reads the benchmark files and the embedding
cache; the pipeline only loads the written model.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..embedders import get_default_embedder
from ..errors import InvalidParameterError
from ..pipelines.drrag.classifier import PairClassifier, default_path
from ..pipelines.drrag.features import SCALAR_NAMES, pair_features, tokens
from .datasets import load_dataset
from .disk_cache import MINILM, DiskEmbeddingCache
from .drrag_trainsets import TRAIN_DATASETS, TrainQuestion, load_train_questions

__all__ = [
    "DISTRACTORS",
    "MAX_QUESTIONS",
    "trim_question",
    "subsample",
    "question_pairs",
    "roc_auc",
    "best_threshold",
    "train",
    "main",
]

#: Train questions used per dataset (HotpotQA and 2Wiki are capped to keep the embedding step
#: short on a shared 2-core CPU; MuSiQue has 349 usable ones).
MAX_QUESTIONS = {"hotpotqa": 300, "musique": 1000, "2wiki": 300}
#: Hard distractors kept per train question (the rest are never embedded).
DISTRACTORS = {"hotpotqa": 3, "musique": 3, "2wiki": 3}


def trim_question(q: TrainQuestion, distractors: int) -> TrainQuestion:
    """Keep the gold paragraphs and the ``distractors`` distractors sharing most words with the question."""
    qt = tokens(q.question)
    overlap = np.array([len(qt & tokens(t)) for t in q.texts], dtype=np.int64)
    dis = np.flatnonzero(~q.gold)
    dis = dis[np.argsort(-overlap[dis], kind="stable")][:distractors]
    keep = np.sort(np.concatenate([np.flatnonzero(q.gold), dis]))
    return TrainQuestion(
        q.dataset, q.qid, q.question, tuple(q.titles[i] for i in keep), tuple(q.texts[i] for i in keep), q.gold[keep]
    )


def subsample(questions: list[TrainQuestion], limit: int, seed: int) -> list[TrainQuestion]:
    """At most ``limit`` questions, drawn with ``seed`` (order kept)."""
    if len(questions) <= limit:
        return list(questions)
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(questions), size=limit, replace=False))
    return [questions[i] for i in keep]


def question_pairs(n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every ordered pair ``(a, b)``, ``a != b``, of a question's ``n`` (trimmed) paragraphs.

    With the pools trimmed to the gold paragraphs and a few hard distractors this holds every
    positive in both orders and every gold + distractor and distractor + distractor pair.
    (A first version kept only the pairs a DR-RAG search would examine plus each gold
    paragraph with the two distractors closest to the question: held-out TRAIN AUC 0.932 for
    the scalar MLP, against 0.942 with every pair.)
    """
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    return a.astype(np.int64), b.astype(np.int64)


def roc_auc(scores: NDArray[np.floating[Any]], labels: NDArray[np.floating[Any]]) -> float:
    """ROC AUC by the rank-sum formula (ties get average ranks)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels) > 0.5
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="stable")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    _, first, counts = np.unique(sorted_s, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def best_threshold(
    probs: NDArray[np.floating[Any]], labels: NDArray[np.floating[Any]], criterion: str = "f1"
) -> float:
    """The threshold (on a 0.05 grid) with the best F1 (``"f1"``) or balanced accuracy (``"balanced"``).

    F1 is the default: CFS keeps the *first* accepted hit of each stage-1 document, so a false
    accept costs as much as a miss, while balanced accuracy lowers the threshold when
    positives are rare.
    """
    y = np.asarray(labels) > 0.5
    grid = np.round(np.arange(0.05, 0.951, 0.05), 2)
    p = np.asarray(probs)
    if criterion == "balanced":
        score = [0.5 * (np.mean(p[y] >= t) + np.mean(p[~y] < t)) for t in grid]
    elif criterion == "f1":
        score = [2 * np.sum((p >= t) & y) / max(np.sum(p >= t) + np.sum(y), 1) for t in grid]
    else:
        raise InvalidParameterError(f"criterion must be 'f1' or 'balanced'; got criterion={criterion!r}")
    return float(grid[int(np.argmax(score))])


def _metrics(clf: PairClassifier, X: NDArray[np.float32], y: NDArray[np.float32]) -> dict[str, float]:
    p = clf.predict_features(X)
    return {
        "auc": roc_auc(p, y),
        "accuracy": float(np.mean((p >= clf.threshold) == (y > 0.5))),
        "balanced_accuracy": float(0.5 * (np.mean(p[y > 0.5] >= clf.threshold) + np.mean(p[y < 0.5] < clf.threshold))),
        "pairs": int(len(y)),
        "positives": int(y.sum()),
    }


def _featurise(
    items: Sequence[tuple[str, Sequence[str], Sequence[str], NDArray[np.bool_]]], embed: Any
) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.int64]]:
    """Pairs and features for (question, texts, titles, gold) items; returns X, y, question index."""
    q_emb = embed([it[0] for it in items])
    doc_emb = embed([t for it in items for t in it[1]])
    X: list[NDArray[np.float32]] = []
    Y: list[NDArray[np.float32]] = []
    Q: list[NDArray[np.int64]] = []
    start = 0
    for qi, (question, texts, titles, gold) in enumerate(items):
        de = doc_emb[start : start + len(texts)]
        start += len(texts)
        a, b = question_pairs(len(texts))
        X.append(pair_features(q_emb[qi], de, question, texts, a, b, titles))
        Y.append((gold[a] & gold[b]).astype(np.float32))
        Q.append(np.full(len(a), qi, dtype=np.int64))
    return np.concatenate(X), np.concatenate(Y), np.concatenate(Q)


def _dev_items(dataset: str, data_dir: str | Path | None) -> list[tuple[str, list[str], list[str], NDArray[np.bool_]]]:
    bench = load_dataset(dataset, data_dir)
    items = []
    for r in bench.records:
        docs = [bench.corpus[d] for d in r.pool_doc_ids]
        gold = np.array([d.doc_id in set(r.gold_doc_ids) for d in docs], dtype=bool)
        items.append((r.question, [d.indexed_text for d in docs], [d.title for d in docs], gold))
    return items


def train(
    seed: int = 0,
    distractors: int | dict[str, int] | None = None,
    data_dir: str | Path | None = None,
    kinds: Sequence[str] = ("logreg-scalars", "mlp-scalars", "logreg", "mlp"),
    epochs: int = 15,
    dev: bool = True,
    cache_dir: str | Path | None = None,
    criterion: str = "f1",
) -> tuple[PairClassifier, dict[str, Any]]:
    """Build the data, fit and compare the models; returns the chosen model and a report."""
    t0 = time.perf_counter()
    cache = DiskEmbeddingCache(get_default_embedder(), MINILM, cache_dir, progress=False, batch_size=256)
    rng = np.random.default_rng(seed)
    parts: dict[str, tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.bool_]]] = {}
    n_questions: dict[str, int] = {}
    for ds in TRAIN_DATASETS:
        n_dis = DISTRACTORS[ds] if distractors is None else (
            distractors[ds] if isinstance(distractors, dict) else distractors
        )
        pool = subsample(load_train_questions(ds, data_dir), MAX_QUESTIONS[ds], seed)
        qs = [trim_question(q, n_dis) for q in pool]
        n_questions[ds] = len(qs)
        X, y, qidx = _featurise([(q.question, q.texts, q.titles, q.gold) for q in qs], cache.embed)
        held = rng.permutation(len(qs))[: len(qs) // 5]
        parts[ds] = (X, y, np.isin(qidx, held))
    t_data = time.perf_counter() - t0
    X_fit = np.concatenate([parts[d][0][~parts[d][2]] for d in parts])
    y_fit = np.concatenate([parts[d][1][~parts[d][2]] for d in parts])
    X_hold = np.concatenate([parts[d][0][parts[d][2]] for d in parts])
    y_hold = np.concatenate([parts[d][1][parts[d][2]] for d in parts])
    dev_sets: dict[str, tuple[NDArray[np.float32], NDArray[np.float32]]] = {}
    if dev:
        for ds in ("hotpotqa", "musique"):
            X_dev, y_dev, _ = _featurise(_dev_items(ds, data_dir), cache.embed)
            dev_sets[ds] = (X_dev, y_dev)
    report: dict[str, Any] = {
        "seed": seed,
        "distractors": distractors if distractors is not None else dict(DISTRACTORS),
        "threshold_criterion": criterion,
        "questions": n_questions,
        "fit_pairs": int(len(y_fit)),
        "fit_positives": int(y_fit.sum()),
        "data_seconds": t_data,
        "embedded_texts": cache.embedded,
        "models": {},
    }
    best: PairClassifier | None = None
    best_auc, best_name = -1.0, ""
    fitted: dict[str, PairClassifier] = {}
    for kind in kinds:
        t1 = time.perf_counter()
        base = kind.removesuffix("-scalars")
        clf = PairClassifier(
            kind=base,
            hidden=32 if kind.endswith("-scalars") else 64,
            epochs=epochs,
            seed=seed,
            l2=1e-3 if base == "logreg" else 1e-4,
            last=len(SCALAR_NAMES) if kind.endswith("-scalars") else 0,
        )
        clf.fit(X_fit, y_fit)
        fit_s = time.perf_counter() - t1
        clf.threshold = best_threshold(clf.predict_features(X_hold), y_hold, criterion)
        entry: dict[str, Any] = {"fit_seconds": fit_s, "threshold": clf.threshold, "held_out": {}, "dev": {}}
        for ds, (X, y, mask) in parts.items():
            entry["held_out"][ds] = _metrics(clf, X[mask], y[mask])
        entry["held_out"]["all"] = _metrics(clf, X_hold, y_hold)
        for ds, (X, y) in dev_sets.items():
            entry["dev"][ds] = _metrics(clf, X, y)
        report["models"][kind] = entry
        auc = entry["held_out"]["all"]["auc"]
        print(f"[train] {kind}: held-out AUC {auc:.4f}, threshold {clf.threshold}, fit {fit_s:.1f}s", flush=True)
        fitted[kind] = clf
        if auc > best_auc:
            best, best_auc, best_name = clf, auc, kind
    assert best is not None
    for name, clf in fitted.items():
        clf.meta = {"trained_on": "TRAIN files only (hotpotqa, musique, 2wiki)", "seed": str(seed), "name": name}
    report["chosen"] = best_name
    report["fitted"] = fitted
    report["total_seconds"] = time.perf_counter() - t0
    return best, report


def build_parser(prog: str = "python -m diverse_core.eval.train_drrag") -> argparse.ArgumentParser:
    """The command's options (``diverse-rag train drrag`` passes its own ``prog``)."""
    from .disk_cache import user_model_dir

    ap = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--distractors", type=int, default=None, help="per question (default: DISTRACTORS)")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--kinds", nargs="+", default=["logreg-scalars", "mlp-scalars", "logreg", "mlp"])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--cache-dir", default=None, help="embedding cache folder (default: the eval harness's)")
    out = user_model_dir() / default_path().name
    ap.add_argument("--out", default=str(out), help=f"where to write the model (.npz; default: {out})")
    ap.add_argument("--report", default=None, help="also write the metrics as JSON here")
    ap.add_argument("--no-dev", action="store_true", help="skip the dev-pool metrics")
    ap.add_argument("--criterion", choices=["f1", "balanced"], default="f1", help="threshold choice")
    ap.add_argument("--save-all", default=None, help="also save every compared model in this folder")
    return ap


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> None:
    """Command line: train, compare and write the classifier."""
    args = (build_parser(prog) if prog else build_parser()).parse_args(argv)
    clf, report = train(
        args.seed,
        args.distractors,
        args.data_dir,
        args.kinds,
        args.epochs,
        not args.no_dev,
        args.cache_dir,
        args.criterion,
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    clf.save(args.out)
    report["artefact_bytes"] = Path(args.out).stat().st_size
    fitted = report.pop("fitted")
    if args.save_all:
        Path(args.save_all).mkdir(parents=True, exist_ok=True)
        for name, model in fitted.items():
            model.save(Path(args.save_all) / f"drrag_{name}.npz")
    text = json.dumps(report, indent=1)
    print(text)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text)


if __name__ == "__main__":
    main()
