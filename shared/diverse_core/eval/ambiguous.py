"""Loaders for the ambiguous-question benchmarks (DIVA): CondAmbigQA, SituatedQA, AmbigNQ.

Every record keeps its interpretations in ``meta["interpretations"]`` (one
disambiguated question per entry of ``answer_groups``), so retrieval can be driven by
the gold interpretations and generated ones can be graded against them.

* ``condambigqa``: ``condambigqa/mcaqa.json`` - 200 ASQA dev questions, each with its
  own 20 Wikipedia passages (the per-question ``pool``; the ``paragraphs`` protocol
  pools all 4,000). Joined on normalised question text with ``asqa/asqa_dev.json`` for
  the ``qa_pairs`` interpretations and their short answers (``answer_groups``). No gold
  passage ids; the metric is MRecall.
* ``situatedqa``: ``situatedqa/temp.dev.jsonl`` and ``geo.dev.jsonl`` - one record per
  distinct question; each context (date or location) is an interpretation (its
  ``edited_question``) with that context's answers. Answer-level only: no passages.
* ``ambignq``: ``ambignq/dev_light.json`` - the first ``multipleQAs`` annotation gives the
  interpretations; questions with only ``singleAnswer`` annotations get one group (the
  union of the annotators' answers) and the question itself as interpretation.
  ``meta["ambiguous"]`` says which. Answer-level only: no passages.

:func:`load_asqa_interpreted` adds the ``qa_pairs`` questions to the ``asqa``
benchmark of :mod:`~diverse_core.eval.datasets`.

Example:
    >>> bench = load_condambigqa()  # doctest: +SKIP
    >>> len(bench.records), len(bench.records[0].pool_doc_ids)  # doctest: +SKIP
    (200, 20)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .datasets import DATASETS, SUPPORTED_PROTOCOLS, _answers, _file, _json, _jsonl, load_asqa
from .records import Benchmark, CorpusBuilder, QARecord

__all__ = [
    "AMBIGUOUS_DATASETS",
    "normalize_question",
    "load_condambigqa",
    "load_situatedqa",
    "load_ambignq",
    "load_asqa_interpreted",
]

#: Name -> supported retrieval protocols (answer-level sets have none).
AMBIGUOUS_DATASETS: dict[str, tuple[str, ...]] = {
    "condambigqa": ("pool", "paragraphs"),
    "situatedqa": (),
    "ambignq": (),
}

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalize_question(text: str) -> str:
    """Lower case, every run of non-alphanumerics collapsed to one space (the join key).

    Example:
        >>> normalize_question("Who has the highest goals in world football?")
        'who has the highest goals in world football'
    """
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def _groups(pairs: Iterable[tuple[str, Iterable[Any]]]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(interpretations, answer groups) with empty groups dropped, aligned."""
    questions: list[str] = []
    groups: list[tuple[str, ...]] = []
    for question, answers in pairs:
        group = _answers(list(answers))
        if group:
            questions.append(question)
            groups.append(group)
    return tuple(questions), tuple(groups)


def _asqa_groups(row: dict[str, Any]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    return _groups((qa["question"], qa["short_answers"]) for qa in row["qa_pairs"])


def load_condambigqa(data_dir: str | Path | None = None) -> Benchmark:
    """CondAmbigQA-200 with its 20 retrieved passages per question, joined with ASQA dev.

    Raises:
        ValueError: a question has no ASQA dev match, or more than one.
    """
    asqa: dict[str, list[dict[str, Any]]] = {}
    for row in _json(_file(data_dir, "asqa/asqa_dev.json")):
        asqa.setdefault(normalize_question(row["question"]), []).append(row)
    builder = CorpusBuilder()
    records = []
    for r in _json(_file(data_dir, "condambigqa/mcaqa.json")):
        matches = asqa.get(normalize_question(r["question"]), [])
        if len(matches) != 1:
            raise ValueError(
                f"condambigqa question {r['question']!r} has {len(matches)} ASQA dev matches; expected 1"
            )
        row = matches[0]
        pool = [builder.add(c.get("title") or "", c["text"]) for c in r["ctxs"]]
        interpretations, groups = _asqa_groups(row)
        records.append(
            QARecord(
                str(r["id"]),
                r["question"],
                _answers(row.get("all_short_answers", [])),
                (),
                tuple(dict.fromkeys(pool)),
                answer_groups=groups,
                meta={
                    "asqa_id": str(row["id"]),
                    "interpretations": interpretations,
                    "conditions": tuple(p.get("condition", "") for p in r.get("properties", [])),
                },
            )
        )
    return Benchmark("condambigqa", tuple(records), builder.docs, AMBIGUOUS_DATASETS["condambigqa"], "mrecall")


def load_asqa_interpreted(data_dir: str | Path | None = None) -> Benchmark:
    """:func:`~diverse_core.eval.datasets.load_asqa` with each record's ``qa_pairs`` questions in
    ``meta["interpretations"]``, aligned with ``answer_groups`` (pairs without a short answer are
    dropped from both)."""
    bench = load_asqa(data_dir)
    by_id = {str(row["id"]): row for row in _json(_file(data_dir, "asqa/asqa_dev.json"))}
    records = []
    for rec in bench.records:
        interpretations, groups = _asqa_groups(by_id[rec.qid])
        if groups != rec.answer_groups:
            raise ValueError(f"asqa question {rec.qid!r}: qa_pairs do not line up with answer_groups")
        records.append(replace(rec, meta={**rec.meta, "interpretations": interpretations}))
    return replace(bench, records=tuple(records))


def load_situatedqa(data_dir: str | Path | None = None, kinds: Iterable[str] = ("temp", "geo")) -> Benchmark:
    """SituatedQA dev (temporal and/or geographical): one record per distinct question.

    Args:
        data_dir: the data directory.
        kinds: ``"temp"`` and/or ``"geo"``; question ids are prefixed with the kind.
    """
    records = []
    for kind in kinds:
        if kind not in ("temp", "geo"):
            raise ValueError(f"kinds must be 'temp' and/or 'geo'; got {kind!r}")
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in _jsonl(_file(data_dir, f"situatedqa/{kind}.dev.jsonl")):
            grouped.setdefault(str(row["id"]), []).append(row)
        for qid, rows in grouped.items():
            contexts: dict[str, list[Any]] = {}
            context_of: dict[str, str] = {}
            for row in rows:
                edited = row.get("edited_question") or row["question"]
                contexts.setdefault(edited, []).extend(row.get("answer", []))
                context_of.setdefault(edited, str(row.get("date") or row.get("location") or ""))
            interpretations, groups = _groups(contexts.items())
            records.append(
                QARecord(
                    f"{kind}:{qid}",
                    rows[0]["question"],
                    _answers(rows[0].get("any_answer", [])),
                    (),
                    answer_groups=groups,
                    meta={
                        "kind": kind,
                        "interpretations": interpretations,
                        "contexts": tuple(context_of[q] for q in interpretations),
                    },
                )
            )
    return Benchmark("situatedqa", tuple(records), {}, AMBIGUOUS_DATASETS["situatedqa"], "answer")


def load_ambignq(data_dir: str | Path | None = None) -> Benchmark:
    """AmbigNQ light dev: interpretations from the first ``multipleQAs`` annotation."""
    records = []
    for r in _json(_file(data_dir, "ambignq/dev_light.json")):
        anns = r.get("annotations", [])
        multi = [a for a in anns if a.get("type") == "multipleQAs"]
        if multi:
            interpretations, groups = _groups((p["question"], p["answer"]) for p in multi[0]["qaPairs"])
        else:
            interpretations, groups = _groups(
                [(r["question"], [x for a in anns for x in a.get("answer", [])])]
            )
        every = [x for a in anns for x in a.get("answer", [])]
        every += [x for a in multi for p in a["qaPairs"] for x in p["answer"]]
        records.append(
            QARecord(
                str(r["id"]),
                r["question"],
                _answers(every),
                (),
                answer_groups=groups,
                meta={"ambiguous": bool(multi), "interpretations": interpretations},
            )
        )
    return Benchmark("ambignq", tuple(records), {}, AMBIGUOUS_DATASETS["ambignq"], "answer")


# Registration in the harness's dataset registry (this module is imported by diverse_core.eval).
SUPPORTED_PROTOCOLS.update(AMBIGUOUS_DATASETS)
DATASETS.update({"condambigqa": load_condambigqa, "situatedqa": load_situatedqa, "ambignq": load_ambignq,
                 # the harness's ASQA carries its gold interpretations (for diva@interpretations=gold)
                 "asqa": load_asqa_interpreted})
