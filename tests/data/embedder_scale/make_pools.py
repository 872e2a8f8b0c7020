"""Write ``pools.npz``: three HotpotQA dev pools embedded by MiniLM and by multilingual-e5-small.

For the first three dev questions: the 20 titled paragraphs MiniLM ranks highest in the pooled dev
corpus, the question, and both embedders' vectors (e5 with its query/passage roles; float16). Run
once with the data and both embedders' caches at hand (no vector is downloaded; e5 needs the
``[e5]`` extra):

    DIVERSE_RAG_DATA=../shared/data PYTHONPATH=shared:. python tests/data/embedder_scale/make_pools.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from diverse_core.embedders import E5Embedder
from diverse_core.eval.datasets import load_dataset
from diverse_core.eval.disk_cache import embedding_cache
from diverse_core.eval.protocols import build_task

N_QUESTIONS, FETCH_K = 3, 20


def main() -> None:
    task = build_task(load_dataset("hotpotqa", None), "paragraphs", titles=True)
    minilm = embedding_cache(None, progress=False)
    e5 = embedding_cache(E5Embedder(), None, progress=False)
    units = list(task.unit_texts)
    unit_vecs = minilm.embed(units)
    out: dict[str, np.ndarray] = {}
    meta = []
    for qi, record in enumerate(task.records[:N_QUESTIONS]):
        q = minilm.embed([record.question])[0]
        top = np.argsort(-(unit_vecs @ q), kind="stable")[:FETCH_K]
        texts = [units[i] for i in top]
        out[f"minilm_query_{qi}"] = q.astype(np.float16)
        out[f"minilm_units_{qi}"] = unit_vecs[top].astype(np.float16)
        out[f"e5_query_{qi}"] = e5.embed_queries([record.question])[0].astype(np.float16)
        out[f"e5_units_{qi}"] = e5.embed(texts).astype(np.float16)
        meta.append({"question": record.question, "texts": texts})
    out["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(Path(__file__).with_name("pools.npz"), **out)


if __name__ == "__main__":
    main()
