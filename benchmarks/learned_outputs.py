"""Compare the learned selector's picks and scores between two versions of the core, on real pools.

For speed work that must not change what the shipped models choose: ``dump`` runs every
shipped learned model (``chunks``, ``paragraphs`` and their ``-notitle`` twins) on the
HotpotQA dev pools of both protocols (fetch_k = 50, k = 5, packaged MiniLM embeddings from
the disk cache) in each variant (text, embedding; the ``-notitle`` models on bare texts with
the page ids as ``sources``) at diversity ``None``, 0.2 and 0.8, cold and warm, and stores
the picks and scores (and the adaptive λ selector's choice, its λ scores and gold probabilities,
text and embedding variants); ``compare`` runs them again with whatever ``diverse_core`` is on the
path and prints how many picks differ and the largest score difference::

    git archive <before> shared | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/shared python benchmarks/learned_outputs.py dump /tmp/learned_before.pkl
    PYTHONPATH=shared python benchmarks/learned_outputs.py compare /tmp/learned_before.pkl

Exit status 1 when any pick differs or a score differs by more than ``--atol`` (default 1e-12).
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

MODELS = ("chunks", "paragraphs", "chunks-notitle", "paragraphs-notitle")
DIVERSITIES = (None, 0.2, 0.8)


def _bare(text: str) -> str:
    """The text without its ``"title: "`` prefix."""
    _, sep, body = text.partition(": ")
    return body if sep else text


def _pools(cache_dir: str | None, n_questions: int, custom: str | None = None) -> Iterator[tuple[str, Any]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diverse_core.embedders import get_default_embedder
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.disk_cache import DiskEmbeddingCache
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.runner import question_inputs, top_candidates

    cache = DiskEmbeddingCache(get_default_embedder(), "all-MiniLM-L6-v2", cache_dir, progress=False)
    for protocol in ("chunks", "paragraphs") if custom is None else ("paragraphs",):
        if custom is None:
            task = build_task(load_dataset("hotpotqa"), protocol)
        else:  # a custom-data folder (diverse_core.eval.customdata) instead of HotpotQA dev
            from diverse_core.eval.customdata import load_custom_dir

            task = build_task(load_custom_dir(custom), protocol, titles=False)
        units = cache.embed(list(task.unit_texts))
        queries = cache.embed([r.question for r in task.records])
        for inp in question_inputs(task, units, queries, top_candidates(task, units, queries, 50), 5)[:n_questions]:
            yield protocol, inp


def run_all(cache_dir: str | None, n_questions: int,
            custom: str | None = None) -> dict[tuple[Any, ...], tuple[list[int], list[float]]]:
    """Every choice, keyed by (protocol, qid, model, variant, diversity, warm)."""
    from diverse_core.adaptive import AdaptiveSelector
    from diverse_core.learned import LearnedSelector
    from diverse_core.text import facts_cache

    out: dict[tuple[Any, ...], tuple[list[int], list[float]]] = {}
    adaptive = AdaptiveSelector.default()
    for protocol, inp in _pools(cache_dir, n_questions, custom):
        for variant, kw in {"embedding": {}, "text": {"question": inp.question, "texts": list(inp.texts)}}.items():
            for warm in (False, True):
                if not warm:
                    facts_cache().clear()
                a = adaptive.choose(inp.query_embedding, inp.embeddings, 5, **kw)
                out[(protocol, inp.qid, "adaptive", variant, None, warm)] = (
                    a.indices.tolist(), [a.lambda_mult, *a.predicted.tolist(), *a.gold_probability.tolist()])
        titles = [t.partition(": ")[0] if ": " in t else None for t in inp.texts]
        for model in MODELS:
            sel = LearnedSelector.default(model)
            calls: dict[str, dict[str, Any]] = {"embedding": {"variant": "embedding"}}
            if model.endswith("-notitle"):
                calls["text"] = {"question": inp.question, "texts": [_bare(t) for t in inp.texts], "sources": titles}
            else:
                calls["text"] = {"question": inp.question, "texts": list(inp.texts)}
            for variant, kw in calls.items():
                for d in DIVERSITIES:
                    extra = {} if d is None else {"diversity": d}
                    for warm in (False, True):
                        if not warm:
                            facts_cache().clear()
                        c = sel.choose(inp.query_embedding, inp.embeddings, 5, **kw, **extra)
                        out[(protocol, inp.qid, model, variant, d, warm)] = (c.indices.tolist(), c.scores.tolist())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("action", choices=["dump", "compare"])
    ap.add_argument("path")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--questions", type=int, default=200, help="dev questions per protocol (default 200)")
    ap.add_argument("--atol", type=float, default=1e-12)
    ap.add_argument("--custom", default=None, help="pools of this custom-data folder instead of HotpotQA dev")
    args = ap.parse_args(argv)
    got = run_all(args.cache_dir, args.questions, args.custom)
    if args.action == "dump":
        with open(args.path, "wb") as fh:
            pickle.dump(got, fh)
        print(f"{len(got)} choices written to {args.path}")
        return 0
    with open(args.path, "rb") as fh:
        want = pickle.load(fh)
    common = sorted(set(want) & set(got), key=repr)
    picks = [key for key in common if want[key][0] != got[key][0]]
    same = [key for key in common if want[key][0] == got[key][0]]
    diff = max((float(np.max(np.abs(np.subtract(want[key][1], got[key][1])))) for key in same), default=0.0)
    print(f"{len(common)} choices compared ({len(set(want) ^ set(got))} only on one side): "
          f"{len(picks)} with other picks; largest score difference where the picks agree: {diff:.3g}")
    for key in picks[:10]:
        print("  differs:", key, want[key], got[key])
    return 1 if picks or diff > args.atol or set(want) != set(got) else 0


if __name__ == "__main__":
    sys.exit(main())
