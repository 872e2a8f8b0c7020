"""Loaders for the TRAIN-split questions (``shared/data/train/`` and the HippoRAG train files).

Everything learned or tuned (the best fixed parameter of each method, the adaptive λ
selector) is fitted on these questions and never on the dev files that
:mod:`~diverse_core.eval.datasets` loads. Read ``shared/data/train/SOURCES.md`` for
where each file comes from.

Train sets (name: files):

* ``hotpotqa``: ``hotpotqa/hotpotqa_train.json`` (original format) +
  ``train/hotpotqa/*/grpo_val.jsonl`` (``paragraphs[{title,text,is_gold}]``) +
  ``train/hotpotqa/*/train.jsonl`` (``docs[]`` + ``support_titles``) +
  ``train/hotpotqa/*/hotpotqa_train.csv`` (Python-repr ``context``/``supporting_facts``).
* ``musique``: ``musique/musique_train.json`` + ``train/musique/**`` (MuSiQue schema;
  only ``answerable`` questions, since the unanswerable ones lack a supporting paragraph).
* ``2wiki``: ``train/2wikimultihopqa/*/wikihop_train_preprocess.json`` (original 2Wiki).
* ``expertqa``, ``covidqa`` (:data:`TRAIN_MORE`, not Wikipedia): ``train_more/<name>/train/``, a
  custom-data folder (:mod:`~diverse_core.eval.customdata`; read ``train_more/README.md``),
  loaded whole as one block by :func:`load_train_more`; its ``dev/`` split is never trained on.

Questions repeated across files are kept once (by normalised question text).
:func:`load_train` returns the questions in *blocks* of about the size of the dev set,
each block with its own pooled corpus (the passages of its questions), so the pooled
retrieval of a train block is as hard as the dev one (a pool of 1,300 questions'
passages would hold six times more distractors than the 200-question dev pool).
:func:`drop_overlap` removes any train question whose id or normalised text is also
a dev question.

Example:
    >>> blocks = load_train("hotpotqa")  # doctest: +SKIP
    >>> sum(len(b.records) for b in blocks)  # doctest: +SKIP
    1292
"""

from __future__ import annotations

import ast
import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError
from .datasets import (
    SUPPORTED_PROTOCOLS,
    _answers,
    _context_record,
    _json,
    _jsonl,
    _musique_paragraphs,
    resolve_data_dir,
)
from .metrics import normalize_answer
from .records import Benchmark, CorpusBuilder, QARecord

__all__ = [
    "TRAIN_SETS",
    "TRAIN_BLOCK",
    "load_train",
    "normalized_question",
    "drop_overlap",
    "overlap",
    "train_blocks",
    "TRAIN_MORE",
    "ALL_TRAIN_SETS",
    "load_train_more",
    "train_set_names",
]

#: Questions per train block (about the dev set's size: 200 HotpotQA/MuSiQue questions;
#: the 2Wiki dev pool holds 6,119 passages, about the 500 train questions' 5,000).
TRAIN_BLOCK: dict[str, int] = {"hotpotqa": 200, "musique": 200, "2wiki": 500}

TRAIN_SETS = tuple(TRAIN_BLOCK)

#: The non-Wikipedia train sets of ``train_more/`` (custom-data folders: bare units, document ids as sources).
TRAIN_MORE = ("expertqa", "covidqa")

#: Every train set (``--datasets all``).
ALL_TRAIN_SETS = TRAIN_SETS + TRAIN_MORE


def train_set_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` with ``"all"`` expanded to :data:`ALL_TRAIN_SETS`, each kept once.

    Raises:
        InvalidParameterError: a name that is not a train set.
    """
    out = [n for name in names for n in (ALL_TRAIN_SETS if name == "all" else (name,))]
    bad = [n for n in out if n not in ALL_TRAIN_SETS]
    if bad:
        raise InvalidParameterError(f"unknown train set {bad[0]!r}; available: {[*ALL_TRAIN_SETS, 'all']}")
    return tuple(dict.fromkeys(out))


def normalized_question(text: str) -> str:
    """Lower-cased, punctuation and articles removed, whitespace collapsed."""
    return normalize_answer(text)


def _hotpot_sentences(text: str) -> tuple[str, ...]:
    """HotpotQA sentences joined with one space keep their own leading space: split on two."""
    parts = [s.strip() for s in re.split(r"(?<=\S)  (?=\S)", text)] if "  " in text else [text.strip()]
    return tuple(p for p in parts if p)


def _hotpot_records(root: Path, b: CorpusBuilder) -> Iterator[QARecord]:
    for r in _json(root / "hotpotqa" / "hotpotqa_train.json"):
        yield _context_record(
            b, str(r["_id"]), r["question"], _answers(r["answer"]), r["context"],
            (t for t, _ in r["supporting_facts"]), {"source": "hotpotqa_train.json"},
        )
    folder = root / "train" / "hotpotqa"
    for path in sorted(folder.glob("*/*.jsonl")):
        for r in _jsonl(path):
            if "paragraphs" in r:  # grpo_val.jsonl
                ctx = [[p["title"], list(_hotpot_sentences(p["text"]))] for p in r["paragraphs"]]
                gold: Iterable[str] = [p["title"] for p in r["paragraphs"] if p.get("is_gold")]
                qid = str(r["id"])
            else:  # train.jsonl: docs + support_titles, no original id
                ctx = [[d["title"], list(d.get("sentences") or [d["text"]])] for d in r["docs"]]
                gold = r["support_titles"]
                qid = f"{path.parent.name}:{r['task_id']}"
            yield _context_record(b, qid, r["question"], _answers(r["answer"]), ctx, gold,
                                  {"source": path.parent.name})
    csv.field_size_limit(10**9)
    for path in sorted(folder.glob("*/*.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            for r in csv.DictReader(fh):
                c = ast.literal_eval(r["context"])
                sf = ast.literal_eval(r["supporting_facts"])
                ctx = [[t, list(s)] for t, s in zip(c["title"], c["sentences"], strict=True)]
                yield _context_record(b, str(r["id"]), r["question"], _answers(r["answer"]), ctx,
                                      sf["title"], {"source": path.parent.name})


def _musique_record(r: dict[str, Any], b: CorpusBuilder, source: str) -> QARecord:
    pool, gold = _musique_paragraphs(b, r)
    return QARecord(
        str(r["id"]), r["question"], _answers(r["answer"], r.get("answer_aliases", [])),
        tuple(dict.fromkeys(gold)), tuple(dict.fromkeys(pool)), meta={"source": source},
    )


def _musique_records(root: Path, b: CorpusBuilder) -> Iterator[QARecord]:
    rows: list[tuple[dict[str, Any], str]] = [
        (r, "musique_train.json") for r in _json(root / "musique" / "musique_train.json")
    ]
    folder = root / "train" / "musique"
    for path in sorted(folder.glob("*/*.jsonl")):
        rows.extend((r, path.parent.name) for r in _jsonl(path))
    files = sorted(folder.glob("*/*.json"), key=lambda p: (p.parent.name, len(p.stem), p.stem))
    for path in files:
        data = _json(path)
        rows.extend((r, path.parent.name) for r in (data if isinstance(data, list) else [data]))
    for r, source in rows:
        if r.get("answerable", True):
            yield _musique_record(r, b, source)


def _twowiki_records(root: Path, b: CorpusBuilder) -> Iterator[QARecord]:
    for path in sorted((root / "train" / "2wikimultihopqa").glob("*/*.json")):
        for r in _json(path):
            yield _context_record(
                b, str(r["_id"]), r["question"], _answers(r["answer"]), r["context"],
                (t for t, _ in r["supporting_facts"]), {"type": r.get("type"), "source": path.parent.name},
            )


_READERS = {"hotpotqa": _hotpot_records, "musique": _musique_records, "2wiki": _twowiki_records}


def _blocks(name: str, records: list[QARecord], builder: CorpusBuilder, size: int) -> list[Benchmark]:
    out = []
    for start in range(0, len(records), size):
        part = tuple(records[start : start + size])
        used = dict.fromkeys(d for r in part for d in (*r.pool_doc_ids, *r.gold_doc_ids))
        corpus = {d: builder.docs[d] for d in used}
        out.append(Benchmark(f"{name}_train{start // size}", part, corpus, ("paragraphs", "chunks")))
    return out


def load_train(name: str, data_dir: str | Path | None = None, block: int | None = None) -> list[Benchmark]:
    """The train questions of dataset ``name`` in blocks, each with its own pooled corpus.

    Args:
        name: ``hotpotqa``, ``musique`` or ``2wiki``.
        data_dir: the benchmark data folder (default as for the dev loaders).
        block: questions per block (default :data:`TRAIN_BLOCK`).

    Raises:
        InvalidParameterError: unknown name or a block size below 1.
        FileNotFoundError: the data folder or a train file is missing.
    """
    if name not in _READERS:
        raise InvalidParameterError(f"unknown train set {name!r}; available: {list(TRAIN_SETS)}")
    size = TRAIN_BLOCK[name] if block is None else block
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidParameterError(f"block must be a positive integer; got block={block!r}")
    root = resolve_data_dir(data_dir)
    builder = CorpusBuilder()
    seen: set[str] = set()
    records: list[QARecord] = []
    for rec in _READERS[name](root, builder):
        key = normalized_question(rec.question)
        if key in seen or not rec.gold_doc_ids:
            continue
        seen.add(key)
        records.append(rec)
    assert SUPPORTED_PROTOCOLS[name]  # a dev dataset of the same name exists
    return _blocks(name, records, builder, size)


def load_train_more(name: str, data_dir: str | Path | None = None, *,
                    limit: int | None = None) -> tuple[Benchmark, int]:
    """The ``train/`` split of ``train_more/<name>`` as one block (its whole pooled corpus), without
    any question shared with its ``dev/`` split, keeping the first ``limit`` questions.

    Returns the block and how many train questions were dropped for sharing an id or a
    normalised question text with the dev split (none when the set has no ``dev/``).

    Raises:
        InvalidParameterError: ``name`` is not one of :data:`TRAIN_MORE`.
        FileNotFoundError: the folder or one of its files is missing.
    """
    from .customdata import is_custom_dir, load_custom_dir

    if name not in TRAIN_MORE:
        raise InvalidParameterError(f"unknown train_more set {name!r}; available: {list(TRAIN_MORE)}")
    root = resolve_data_dir(data_dir) / "train_more" / name
    bench = load_custom_dir(root / "train", name=f"{name}_train")
    dev = load_custom_dir(root / "dev").records if is_custom_dir(root / "dev") else ()
    blocks, dropped = drop_overlap([bench], dev)
    return blocks[0].subset(limit), dropped


def overlap(train: Iterable[QARecord], dev: Iterable[QARecord]) -> list[str]:
    """Ids of the train questions whose id or normalised question text is a dev question's."""
    dev_list = list(dev)
    ids = {r.qid for r in dev_list}
    texts = {normalized_question(r.question) for r in dev_list}
    return [r.qid for r in train if r.qid in ids or normalized_question(r.question) in texts]


def drop_overlap(blocks: list[Benchmark], dev: Iterable[QARecord]) -> tuple[list[Benchmark], int]:
    """``blocks`` without any question shared with ``dev`` (by id or text), and how many went."""
    dev_list = list(dev)
    out, dropped = [], 0
    for b in blocks:
        bad = set(overlap(b.records, dev_list))
        dropped += len(bad)
        keep = tuple(r for r in b.records if r.qid not in bad)
        out.append(replace(b, records=keep) if bad else b)
    return out, dropped


def train_blocks(name: str, dev: Iterable[QARecord], data_dir: str | Path | None = None, *,
                 limit: int | None = None, block: int | None = None,
                 preloaded: Sequence[Benchmark] | None = None) -> tuple[list[Benchmark], int]:
    """The train blocks of ``name`` (``preloaded`` ones, else :func:`load_train`'s with ``block``),
    keeping the first ``limit`` questions, without any question of ``dev``.

    Returns the blocks and how many train questions were dropped for sharing an id or a
    normalised question text with ``dev`` (pass the WHOLE dev file, not a subset).
    """
    blocks, dropped = drop_overlap(list(preloaded or load_train(name, data_dir, block)), dev)
    if limit is not None:
        kept, left = [], limit
        for b in blocks:
            if left <= 0:
                break
            kept.append(b.subset(left))
            left -= len(kept[-1].records)
        blocks = kept
    return [b for b in blocks if b.records], dropped
