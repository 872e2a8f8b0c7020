"""Out-of-fold comparison on TRAIN questions: learned set selector vs adaptive, fixed gMMR, cosine, λ Oracle.

For the train questions of the given datasets and protocol (harness candidates, k=5,
fetch_k=50, MiniLM from the disk cache), question ``i`` in fold ``i mod folds``; per fold,
``learned`` (:func:`diverse_core.learned.cross_validate`), ``adaptive``
(``AdaptiveSelector.fit_examples``) and the fixed gMMR λ (best mean recall on the other folds)
are fitted on the other folds and scored on the held-out questions; cosine and the
per-question λ Oracle need no fitting. Paired bootstrap intervals of the differences. This is
cross-validation on train, not the dev headline (``benchmarks/learned_split.py``).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/learned_cv.py --datasets hotpotqa --protocol chunks --cache-dir .cache/harness \\
        --out benchmarks/results/learned/learned_cv_hotpotqa_chunks.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique", "2wiki"])
    ap.add_argument("--protocol", default="chunks")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diverse_core.adaptive import DEFAULT_LAMBDAS, AdaptiveSelector, query_example
    from diverse_core.adaptive.variant import variant_features
    from diverse_core.embedders import get_default_embedder
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.disk_cache import DiskEmbeddingCache
    from diverse_core.eval.outofsample import SplitConfig, train_blocks
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.runner import question_inputs, top_candidates
    from diverse_core.eval.stats import bootstrap_ci
    from diverse_core.eval.train_learned import DEFAULT_CONFIG
    from diverse_core.learned import LearnedExample, QueryState, cross_validate, pair_view
    from diverse_core.tuning import argmax_upper_median
    from diverse_core.validation import prepare_inputs

    t0 = time.perf_counter()
    cache = DiskEmbeddingCache(get_default_embedder(), "all-MiniLM-L6-v2", args.cache_dir, progress=False)
    cfg = SplitConfig(datasets=args.datasets, protocols=[args.protocol])
    learned, adaptive = [], []
    for name in args.datasets:
        blocks, _ = train_blocks(name, cfg, load_dataset(name).records)
        for bench in blocks:
            task = build_task(bench, args.protocol)
            unit_emb = cache.embed(list(task.unit_texts))
            q_emb = cache.embed([r.question for r in task.records])
            cands = top_candidates(task, unit_emb, q_emb, 50)
            for qi, inp in enumerate(question_inputs(task, unit_emb, q_emb, cands, 5)):
                prep = prepare_inputs(inp.query_embedding, inp.embeddings, 5, None)
                assert inp.gold_groups is not None
                n_gold = len(task.gold[qi])
                learned.append(LearnedExample(QueryState.build(prep, pair_view(inp.question, list(inp.texts))),
                                              inp.gold_groups, n_gold))
                adaptive.append(query_example(prep, inp.gold_groups, DEFAULT_LAMBDAS, question=inp.question,
                                              texts=inp.texts, n_gold=n_gold))
    n = len(learned)
    print(f"[cv] {n} train questions ({time.perf_counter() - t0:.0f} s)", flush=True)
    labels = np.stack([ex.labels for ex in adaptive])  # (n, L): recall of each λ's set
    lam = np.asarray(DEFAULT_LAMBDAS)
    fold = np.arange(n) % args.folds
    res = {"cosine": np.array([ex.recall(np.argsort(-ex.state.relevance, kind="stable")[:5]) for ex in learned]),
           "oracle": labels.max(axis=1), "gmmr": np.zeros(n), "adaptive": np.zeros(n)}
    for f in range(args.folds):
        train = np.flatnonzero(fold != f)
        test = np.flatnonzero(fold == f)
        means = labels[train].mean(axis=0)
        best = int(np.flatnonzero(means >= means.max() - 1e-12)[-1])  # ties: the larger λ
        res["gmmr"][test] = labels[test, best]
        sel = AdaptiveSelector.fit_examples([adaptive[i] for i in train.tolist()], folds=args.folds)
        for i in test.tolist():
            # the held-out question's features, scored by the fold's scorer (text variant)
            ex = adaptive[i]
            var = sel.variants["text"]
            assert ex.text is not None
            probs = var.gold.probabilities(ex.text)
            feats = variant_features(ex.base, lam, ex.sets, ex.relevance, ex.sim, probs, ex.view)
            chosen = argmax_upper_median(lam, var.scorer.scores(feats))
            res["adaptive"][i] = ex.labels[int(np.flatnonzero(lam == chosen)[0])]
        print(f"[cv] fold {f}: gmmr λ={lam[best]:g} ({time.perf_counter() - t0:.0f} s)", flush=True)
    res["learned"] = cross_validate(learned, DEFAULT_CONFIG, folds=args.folds).per_question
    out = {"datasets": args.datasets, "protocol": args.protocol, "folds": args.folds, "n": n,
           "config": str(DEFAULT_CONFIG), "mean": {k: float(v.mean()) for k, v in res.items()}, "diff": {}}
    for base in ("cosine", "gmmr", "adaptive", "oracle"):
        d = res["learned"] - res[base]
        lo, hi = bootstrap_ci(d, n_boot=10_000, seed=0)
        out["diff"][base] = {"mean": float(d.mean()), "ci": [lo, hi]}
    out["per_question"] = {k: v.tolist() for k, v in res.items()}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: out[k] for k in ("n", "mean", "diff", "seconds")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
