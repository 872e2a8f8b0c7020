"""The packaged HotpotQA sample: 40 dev questions with their 10 paragraphs each (CC BY-SA 4.0).

Shipped so that the demo, the README's ``learned`` example and ``diverse-rag bench --datasets
hotpotqa_sample`` run on a fresh install; attribution and licence in ``demo/data/README.md``.

Example:
    >>> from diverse_core.demo.sample import hotpotqa_sample
    >>> questions = hotpotqa_sample()
    >>> len(questions), len(questions[0].passages), len(questions[0].gold)
    (40, 10, 2)
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["SampleQuestion", "hotpotqa_sample", "packaged_vector_lookup", "sample_records", "sample_vectors",
           "write_sample_vectors"]

#: The packaged file, relative to the ``diverse_core.demo`` package.
SAMPLE_FILE = "data/hotpotqa_dev_sample.jsonl.gz"


@dataclass(frozen=True)
class SampleQuestion:
    """One sample question: its paragraphs as ``"title: text"`` and the indices of the gold ones."""

    id: str
    question: str
    answer: str
    passages: tuple[str, ...]
    titles: tuple[str, ...]
    gold: tuple[int, ...]


@lru_cache(maxsize=1)
def sample_records() -> tuple[dict[str, Any], ...]:
    """The raw HotpotQA records of the packaged sample (original format), in file order."""
    data = resources.files("diverse_core.demo").joinpath(SAMPLE_FILE).read_bytes()
    text = gzip.decompress(data).decode("utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def hotpotqa_sample() -> list[SampleQuestion]:
    """The 40 sample questions; each passage is one paragraph, ``"title: sentences"``."""
    out = []
    for r in sample_records():
        gold_titles = {str(t).strip() for t, _ in r["supporting_facts"]}
        titles = tuple(str(t).strip() for t, _ in r["context"])
        passages = tuple(f"{t}: " + " ".join(s.strip() for s in sents if s.strip())
                         for t, (_, sents) in zip(titles, r["context"], strict=True))
        gold = tuple(i for i, t in enumerate(titles) if t in gold_titles)
        out.append(SampleQuestion(str(r["_id"]), r["question"], str(r["answer"]), passages, titles, gold))
    return out


#: Precomputed all-MiniLM-L6-v2 vectors of the sample (float16), packaged beside it.
VECTORS_FILE = "data/hotpotqa_dev_sample_minilm.npz"


def sample_vectors() -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """``(passage vectors (400, 384), question vectors (40, 384))`` of the packaged sample.

    Computed once with the packaged all-MiniLM-L6-v2 (:func:`write_sample_vectors`) and stored
    as float16, so the demo runs without embedding anything; passages in
    :func:`hotpotqa_sample` order (question by question, paragraph by paragraph).
    """
    with resources.files("diverse_core.demo").joinpath(VECTORS_FILE).open("rb") as fh, np.load(fh) as data:
        return data["passages"].astype(np.float32), data["questions"].astype(np.float32)


@lru_cache(maxsize=1)
def _vector_table() -> dict[str, NDArray[np.float32]]:
    questions = hotpotqa_sample()
    passages, queries = sample_vectors()
    texts = [p for q in questions for p in q.passages]
    table = dict(zip(texts, passages, strict=True))
    table.update(zip((q.question for q in questions), queries, strict=True))
    return table


def packaged_vector_lookup(
    embed: Callable[[list[str]], Any],
) -> Callable[[list[str]], NDArray[np.float32]]:
    """``embed`` that reads the sample's texts (paragraphs ``"title: text"`` and questions) from the
    packaged vectors and embeds only the others: ``diverse-rag bench --datasets hotpotqa_sample``
    starts at once instead of embedding 400 paragraphs on a CPU first."""
    table = _vector_table()

    def lookup(texts: list[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        missing = [i for i, t in enumerate(texts) if t not in table]
        for i, t in enumerate(texts):
            if t in table:
                out[i] = table[t]
        if missing:
            out[missing] = np.asarray(embed([texts[i] for i in missing]), dtype=np.float32)
        return out

    return lookup


def write_sample_vectors(path: str, embedder: Callable[[Sequence[str]], Any] | None = None) -> None:
    """Embed the sample with ``embedder`` (default: the packaged MiniLM) and write the vectors file.

    ``python -c "from diverse_core.demo.sample import write_sample_vectors as w;
    w('shared/diverse_core/demo/data/hotpotqa_dev_sample_minilm.npz')"`` regenerates it.
    """
    if embedder is None:
        from ..embedders import get_default_embedder

        embedder = get_default_embedder()
    questions = hotpotqa_sample()
    passages = np.asarray(embedder([p for q in questions for p in q.passages]), dtype=np.float16)
    queries = np.asarray(embedder([q.question for q in questions]), dtype=np.float16)
    np.savez_compressed(path, passages=passages, questions=queries)
