"""Which features make the learned λ selector work: train cross-validation and dev, per feature family.

For the ``chunks`` protocol, builds the selector's training records for every TRAIN
question (HotpotQA, MuSiQue, 2Wiki; dev questions removed) and every dev question,
then fits the set scorer on each family of features and prints

* ``cv``: the 5-fold cross-validated mean recall of the picked set on TRAIN (what the
  shipped configuration was chosen by), and
* dev recall@5 of the pooled model per dataset, with the share of the cosine -> Oracle
  gap closed, next to the train-tuned fixed gMMR λ.

Families: ``base`` (embedding set features, the v1 selector), ``lex`` (which question
words and names each set contains, also × λ), ``p_text`` / ``p_emb`` (set features of
the per-candidate gold probabilities, from the text-aware / embedding-only gold model,
cross-fitted on train). The shipped text variant is ``base+lex+p_text``, the embedding
variant ``base+p_emb``.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/adaptive_ablation.py --cache-dir .cache/harness
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np
from diverse_core.adaptive import DEFAULT_LAMBDAS, fit_set_scorer
from diverse_core.adaptive.candidates import GOLD_SET_FEATURES
from diverse_core.adaptive.features import FEATURE_NAMES, LEXICAL_SET_FEATURES
from diverse_core.adaptive.training import QueryExample, cross_fitted_probabilities
from diverse_core.adaptive.variant import candidate_feature_names, variant_features
from diverse_core.tuning import argmax_upper_median

FAMILIES = ("base", "base+lex", "base+p_emb", "base+p_text", "lex+p_text", "base+lex+p_text")
LAM = np.asarray(DEFAULT_LAMBDAS, dtype=np.float64)


def _examples(split: str, cache_dir: str | None) -> dict[str, list[QueryExample]]:
    from diverse_core.embedders import get_default_embedder
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.disk_cache import DiskEmbeddingCache
    from diverse_core.eval.outofsample import SplitConfig, _adaptive_examples, train_blocks

    cfg = SplitConfig(cache_dir=cache_dir, progress=False)
    cache = DiskEmbeddingCache(get_default_embedder(), cfg.model_name, cache_dir, progress=False)
    out = {}
    for name in ("hotpotqa", "musique", "2wiki"):
        dev = load_dataset(name)
        blocks = train_blocks(name, cfg, dev.records)[0] if split == "train" else [dev]
        out[name] = _adaptive_examples(blocks, "chunks", cache, cfg)
    return out


def _probabilities(train: list[QueryExample], test: list[QueryExample], kind: str, folds: int) -> tuple[list[Any], list[Any]]:
    """Cross-fitted gold probabilities on train (as the selector trains), full-model ones on test."""
    rows = [ex.text if kind == "text" else ex.embedding for ex in train]
    gold = [ex.is_gold.astype(np.float64) for ex in train]
    out, full = cross_fitted_probabilities(rows, gold, candidate_feature_names(kind), folds=folds)
    return out, [full.probabilities(ex.text if kind == "text" else ex.embedding) for ex in test]


def _columns(family: str, has_lex: bool) -> np.ndarray:
    """Column mask of the full (base + lex + p) feature row for a family."""
    n_base, n_lex, n_p = len(FEATURE_NAMES), 2 * len(LEXICAL_SET_FEATURES) if has_lex else 0, len(GOLD_SET_FEATURES)
    parts = family.split("+")
    mask = np.zeros(n_base + n_lex + n_p, dtype=bool)
    if "base" in parts:
        mask[:n_base] = True
    if "lex" in parts:
        mask[n_base:n_base + n_lex] = True
    if any(p.startswith("p_") for p in parts):
        mask[n_base + n_lex:] = True
    return mask


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    tr_by, dv_by = _examples("train", args.cache_dir), _examples("dev", args.cache_dir)
    names = list(tr_by)
    tr = [ex for n in names for ex in tr_by[n]]
    dv = [ex for n in names for ex in dv_by[n]]
    dset = np.array([n for n in names for _ in dv_by[n]])
    tset = np.array([n for n in names for _ in tr_by[n]])
    ytr = np.stack([ex.labels for ex in tr])
    ydv = np.stack([ex.labels for ex in dv])
    print(f"[ablation] {len(tr)} train and {len(dv)} dev questions prepared in {time.perf_counter() - t0:.0f} s")
    probs = {kind: _probabilities(tr, dv, kind, args.folds) for kind in ("text", "embedding")}

    def rows(data: list[QueryExample], p: list[Any], lex: bool) -> np.ndarray:
        return np.stack([variant_features(ex.base, LAM, ex.sets, ex.relevance, ex.sim, pi, ex.view if lex else None)
                         for ex, pi in zip(data, p, strict=True)])

    full = {kind: (rows(tr, probs[kind][0], kind == "text"), rows(dv, probs[kind][1], kind == "text"))
            for kind in ("text", "embedding")}
    fixed = {}
    for n in names:
        means = ytr[tset == n].mean(axis=0)
        lam = argmax_upper_median(LAM, np.round(means, 12))
        fixed[n] = int(np.flatnonzero(LAM == lam)[0])
    print("| features | train cv | " + " | ".join(f"{n} dev (gap)" for n in names) + " | mean gap |")
    print("|---|---|" + "---|" * len(names) + "---|")
    cells = []
    for n in names:
        y = ydv[dset == n]
        cos, orc, fx = y[:, -1].mean(), y.max(axis=1).mean(), y[:, fixed[n]].mean()
        cells.append(f"{100 * fx:.1f} ({100 * (fx - cos) / (orc - cos):.0f}%)")
    print(f"| fixed gMMR λ chosen on train | - | {' | '.join(cells)} | |")
    for family in FAMILIES:
        kind = "embedding" if "p_emb" in family else "text"
        xtr, xdv = full[kind]
        mask = _columns(family, kind == "text")
        model = fit_set_scorer(xtr[:, :, mask], ytr, folds=args.folds)
        scores = np.stack([model.scores(x) for x in xdv[:, :, mask]])
        picked = np.array([int(np.flatnonzero(LAM == argmax_upper_median(LAM, s))[0]) for s in scores])
        got = ydv[np.arange(len(dv)), picked]
        cells, gaps = [], []
        for n in names:
            y = ydv[dset == n]
            cos, orc = y[:, -1].mean(), y.max(axis=1).mean()
            gaps.append((got[dset == n].mean() - cos) / (orc - cos))
            cells.append(f"{100 * got[dset == n].mean():.1f} ({100 * gaps[-1]:.0f}%)")
        cv = max(model.info["cv_pick_quality"].values())
        print(f"| {family} | {100 * cv:.2f} | {' | '.join(cells)} | {100 * np.mean(gaps):.0f}% |", flush=True)
    print(f"[ablation] done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
