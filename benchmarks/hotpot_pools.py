"""The HotpotQA dev ``chunks`` pools the learned-selector benchmarks time: 50 candidates per question.

Embeddings come from the packaged MiniLM through the disk cache (``cache_dir``; the default folder
when ``None``), so only the first run embeds.
"""

from __future__ import annotations

from typing import Any

__all__ = ["dev_inputs"]


def dev_inputs(cache_dir: str | None, count: int, k: int = 5, fetch_k: int = 50) -> tuple[Any, list[Any]]:
    """``(task, inputs)``: the task and the ``MethodInput`` of each of its first ``count`` questions."""
    from diverse_core.embedders import get_default_embedder
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.disk_cache import DiskEmbeddingCache
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.runner import question_inputs, top_candidates

    task = build_task(load_dataset("hotpotqa"), "chunks")
    cache = DiskEmbeddingCache(get_default_embedder(), "all-MiniLM-L6-v2", cache_dir, progress=False)
    units = cache.embed(list(task.unit_texts))
    queries = cache.embed([r.question for r in task.records])
    return task, question_inputs(task, units, queries, top_candidates(task, units, queries, fetch_k), k)[:count]
