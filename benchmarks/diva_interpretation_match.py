"""How well does embedding match tell interpretations apart? (calibrates the DIVA coverage score)

On AmbigNQ light dev (ambiguous questions with at least two ``qaPairs``), embedded with the
packaged all-MiniLM-L6-v2:

* degenerate generators: the question alone, and the question repeated once per gold
  interpretation - coverage (recall of gold interpretations) they are credited with;
* same-answer pairs: an AmbigNQ disambiguated question and an ASQA ``qa_pairs`` question of
  the same ambiguous question, with different wording but a shared short answer (a noisy
  stand-in for "the same interpretation, paraphrased") - how many match;
* sibling pairs: two AmbigNQ interpretations of one question with disjoint answers
  (different interpretations) - how many match (false matches);

each for plain cosine and for the residual comparison (``question_embedding`` given).

Run::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=shared:. python benchmarks/diva_interpretation_match.py
"""

from __future__ import annotations

import argparse

import numpy as np
from diverse_core.embedders import get_default_embedder
from diverse_core.eval import load_dataset
from diverse_core.eval.ambiguous import load_asqa_interpreted, normalize_question
from diverse_core.eval.disk_cache import DiskEmbeddingCache
from diverse_core.eval.metrics import normalize_answer
from diverse_core.pipelines.diva import interpretation_coverage


def _norm_answers(group: tuple[str, ...]) -> set[str]:
    return {normalize_answer(a) for a in group if normalize_answer(a)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.6, 0.7, 0.8, 0.85, 0.9])
    args = parser.parse_args(argv)
    cache = DiskEmbeddingCache(get_default_embedder(), "all-MiniLM-L6-v2", progress=False)
    nq = [r for r in load_dataset("ambignq").records if r.meta["ambiguous"] and len(r.answer_groups) > 1]
    asqa = {normalize_question(r.question): r for r in load_asqa_interpreted().records}
    texts = sorted({t for r in nq for t in (r.question, *r.meta["interpretations"])}
                   | {t for r in asqa.values() for t in r.meta["interpretations"]})
    vec = dict(zip(texts, cache.embed(texts), strict=True))
    pos: list[tuple[str, str, str]] = []  # (question, a, b)
    neg: list[tuple[str, str, str]] = []
    for r in nq:
        groups = [_norm_answers(g) for g in r.answer_groups]
        inter = r.meta["interpretations"]
        neg += [(r.question, inter[i], inter[j]) for i in range(len(inter)) for j in range(i + 1, len(inter))
                if not groups[i] & groups[j]]
        other = asqa.get(normalize_question(r.question))
        if other is None:
            continue
        for qa, ga in zip(other.meta["interpretations"], other.answer_groups, strict=True):
            for qn, gn in zip(inter, groups, strict=True):
                if _norm_answers(ga) & gn and normalize_question(qa) != normalize_question(qn):
                    pos.append((r.question, qa, qn))
    print(f"{len(nq)} AmbigNQ questions with >= 2 interpretations; {len(pos)} same-answer pairs, "
          f"{len(neg)} sibling pairs\n")
    print("| comparison | threshold | question alone: recall % | question repeated: recall % "
          "| same-answer pairs matched % | sibling pairs matched % |")
    print("|---|---|---|---|---|---|")
    for mode in ("plain", "residual"):
        for thr in args.thresholds:
            def cov(gen: list[str], gold: list[str], q: str, thr: float = thr, mode: str = mode) -> float:
                qv = vec[q] if mode == "residual" else None
                g = np.stack([vec[t] for t in gen])
                return interpretation_coverage(g, np.stack([vec[t] for t in gold]), thr, qv).matched

            alone = np.mean([cov([r.question], list(r.meta["interpretations"]), r.question)
                             / len(r.answer_groups) for r in nq])
            rep = np.mean([cov([r.question] * len(r.answer_groups), list(r.meta["interpretations"]), r.question)
                           / len(r.answer_groups) for r in nq])
            p = np.mean([cov([a], [b], q) for q, a, b in pos])
            n = np.mean([cov([a], [b], q) for q, a, b in neg])
            print(f"| {mode} | {thr:g} | {100 * alone:.1f} | {100 * rep:.1f} | {100 * p:.1f} | {100 * n:.1f} |")


if __name__ == "__main__":
    main()
