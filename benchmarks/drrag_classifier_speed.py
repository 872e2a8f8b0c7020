"""Inference time of the shipped DR-RAG pair classifier for a batch of candidate pairs.

Times :meth:`PairClassifier.predict_pairs` (lexical features + embedding interactions + the
model) for 50 (stage-1 document, hit) pairs of one question, on embeddings the pipeline
already has (the MiniLM embedding itself is not included). Texts are real HotpotQA dev
paragraphs when ``../shared/data`` is present, else synthetic sentences; the vectors are random
unit vectors (timing does not depend on their values).

Run (single-threaded BLAS)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=shared:. python benchmarks/drrag_classifier_speed.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from diverse_core.pipelines.drrag.classifier import default_classifier


def _texts(n: int) -> tuple[str, list[str]]:
    try:
        from diverse_core.eval.datasets import load_dataset

        bench = load_dataset("hotpotqa")
        rec = bench.records[0]
        docs = [bench.corpus[d].indexed_text for r in bench.records[:3] for d in r.pool_doc_ids]
        return rec.question, docs[:n]
    except FileNotFoundError:
        words = "river castle king queen war treaty city born film director album band".split()
        rng = np.random.default_rng(0)
        docs = [f"Title {i}: " + " ".join(rng.choice(words, 80)) for i in range(n)]
        return "Which king was born in the castle city?", docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    clf = default_classifier()
    question, texts = _texts(12)
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(len(texts), 384)).astype(np.float32)
    q = rng.normal(size=384).astype(np.float32)
    a = rng.integers(0, 3, size=args.pairs)  # stage-1 documents
    b = rng.integers(3, len(texts), size=args.pairs)  # their hits
    clf.predict_pairs(q, emb, question, texts, a, b)  # warm-up
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        clf.predict_pairs(q, emb, question, texts, a, b)
        times.append(time.perf_counter() - t0)
    ms = 1000 * np.asarray(times)
    print(
        f"{clf.kind} classifier, {args.pairs} pairs: median {np.median(ms):.2f} ms, "
        f"p90 {np.percentile(ms, 90):.2f} ms, min {ms.min():.2f} ms over {args.runs} runs (budget 20 ms)"
    )


if __name__ == "__main__":
    main()
