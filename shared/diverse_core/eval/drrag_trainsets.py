"""Loaders for the TRAIN-split multi-hop questions the DR-RAG classifier learns from.

Only train files are read (``shared/data/README.md``, ``shared/data/train/SOURCES.md``):

* HotpotQA: ``hotpotqa/hotpotqa_train.json`` (original format) and the three files under
  ``train/hotpotqa/`` (JSONL with ``paragraphs[is_gold]``, JSONL with ``docs`` +
  ``support_doc_ids``, CSV with Python-repr ``context`` / ``supporting_facts``);
* MuSiQue: ``musique/musique_train.json`` and everything under ``train/musique/``
  (``is_supporting`` paragraphs; unanswerable MuSiQue-Full records are skipped);
* 2WikiMultihopQA: ``train/2wikimultihopqa/*/wikihop_train_preprocess.json``
  (original ``context`` + ``supporting_facts``).

Each question becomes a :class:`TrainQuestion` with its candidate paragraphs (indexed as
``"title: text"``, like the harness's ``paragraphs`` protocol) and a gold mask.
Questions repeated across files are kept once (by normalised question text).

Example:
    >>> qs = load_train_questions("hotpotqa")  # doctest: +SKIP
    >>> qs[0].gold.sum()  # doctest: +SKIP
    2
"""

from __future__ import annotations

import ast
import csv
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .datasets import _json, _jsonl, resolve_data_dir

__all__ = ["TRAIN_DATASETS", "TrainQuestion", "load_train_questions"]

#: Datasets with train files.
TRAIN_DATASETS = ("hotpotqa", "musique", "2wiki")


@dataclass(frozen=True)
class TrainQuestion:
    """One training question with its candidate paragraphs.

    Attributes:
        dataset: ``hotpotqa``, ``musique`` or ``2wiki``.
        qid: the source's id.
        question: the question text.
        titles: paragraph titles.
        texts: paragraph texts as indexed (``"title: text"``).
        gold: boolean mask of the supporting paragraphs, shape (n_paragraphs,).
    """

    dataset: str
    qid: str
    question: str
    titles: tuple[str, ...]
    texts: tuple[str, ...]
    gold: NDArray[np.bool_]


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _make(
    dataset: str, qid: str, question: str, paras: Iterable[tuple[str, str, bool]]
) -> TrainQuestion | None:
    seen: dict[tuple[str, str], int] = {}
    titles: list[str] = []
    texts: list[str] = []
    gold: list[bool] = []
    for title, text, is_gold in paras:
        key = (_clean(title), _clean(text))
        if key in seen:
            gold[seen[key]] = gold[seen[key]] or is_gold
            continue
        seen[key] = len(titles)
        titles.append(key[0])
        texts.append(f"{key[0]}: {key[1]}" if key[0] else key[1])
        gold.append(bool(is_gold))
    mask = np.array(gold, dtype=bool)
    if mask.sum() < 2 or (~mask).sum() < 1:
        return None  # no positive pair, or no distractor
    return TrainQuestion(dataset, qid, _clean(question), tuple(titles), tuple(texts), mask)


def _context(rec: dict[str, Any], context: list[Any], facts: Iterable[Any]) -> list[tuple[str, str, bool]]:
    gold_titles = {_clean(str(f[0])) for f in facts}
    return [(t, " ".join(s.strip() for s in sents), _clean(t) in gold_titles) for t, sents in context]


def _hotpot(root: Path) -> Iterator[TrainQuestion | None]:
    for r in _json(root / "hotpotqa/hotpotqa_train.json"):
        yield _make("hotpotqa", str(r["_id"]), r["question"], _context(r, r["context"], r["supporting_facts"]))
    folder = root / "train/hotpotqa"
    for path in sorted(folder.rglob("*.jsonl")):
        for r in _jsonl(path):
            if "paragraphs" in r:
                paras = [(p["title"], p["text"], bool(p["is_gold"])) for p in r["paragraphs"]]
            else:
                ids = set(r.get("support_doc_ids") or [])
                titles = set(r.get("support_titles") or [])
                paras = [
                    (d["title"], d["text"], d["doc_id"] in ids if ids else d["title"] in titles)
                    for d in r["docs"]
                ]
            yield _make("hotpotqa", str(r.get("id") or r.get("task_id")), r["question"], paras)
    csv.field_size_limit(sys.maxsize)
    for path in sorted(folder.rglob("*.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            for r in csv.DictReader(fh):
                ctx = ast.literal_eval(r["context"])
                facts = ast.literal_eval(r["supporting_facts"])
                context = list(zip(ctx["title"], ctx["sentences"], strict=True))
                yield _make("hotpotqa", r["id"], r["question"], _context(r, context, [[t] for t in facts["title"]]))


def _musique_records(root: Path) -> Iterator[dict[str, Any]]:
    yield from _json(root / "musique/musique_train.json")
    for path in sorted((root / "train/musique").rglob("*.json*")):
        data = _jsonl(path) if path.suffix == ".jsonl" else _json(path)
        yield from (data if isinstance(data, list) else [data])


def _musique(root: Path) -> Iterator[TrainQuestion | None]:
    for r in _musique_records(root):
        if not r.get("answerable", True):
            continue
        paras = [(p["title"], p["paragraph_text"], bool(p.get("is_supporting"))) for p in r["paragraphs"]]
        yield _make("musique", str(r["id"]), r["question"], paras)


def _2wiki(root: Path) -> Iterator[TrainQuestion | None]:
    for path in sorted((root / "train/2wikimultihopqa").rglob("*.json")):
        for r in _json(path):
            yield _make("2wiki", str(r["_id"]), r["question"], _context(r, r["context"], r["supporting_facts"]))


_LOADERS = {"hotpotqa": _hotpot, "musique": _musique, "2wiki": _2wiki}


def load_train_questions(dataset: str, data_dir: str | Path | None = None) -> list[TrainQuestion]:
    """The train questions of ``dataset`` that have at least two gold paragraphs and one distractor.

    Args:
        dataset: one of :data:`TRAIN_DATASETS`.
        data_dir: the ``shared/data`` folder (default: the harness's default).

    Raises:
        InvalidParameterError: unknown ``dataset``.
        FileNotFoundError: the data folder is missing.
    """
    if dataset not in _LOADERS:
        raise InvalidParameterError(f"unknown train dataset {dataset!r}; available: {list(TRAIN_DATASETS)}")
    root = resolve_data_dir(data_dir)
    out: list[TrainQuestion] = []
    seen: set[str] = set()
    for q in _LOADERS[dataset](root):
        if q is None:
            continue
        key = q.question.lower()
        if key in seen:
            continue
        seen.add(key)
        out.append(q)
    return out
