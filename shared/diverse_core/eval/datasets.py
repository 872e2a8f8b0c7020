"""Loaders for the benchmark files under ``shared/data`` (see that folder's README).

Every loader takes the data directory as an argument and returns a :class:`Benchmark`
whose corpus pools every passage of the file, de-duplicated by ``(title, text)``.
Nothing is copied into the package.

Datasets (name: file, gold, protocols):

* ``hotpotqa``: ``hotpotqa/hotpot.json`` (200 dev-distractor questions, 10 paragraphs
  each); gold = the question's paragraphs whose title is in ``supporting_facts``.
* ``hotpotqa_sample``: the first 40 questions of ``hotpot.json``, shipped in the package
  (``diverse_core/demo/data``, CC BY-SA 4.0): runs without a data directory.
* ``musique``: ``musique/musique.json`` (200 questions, 20 paragraphs each);
  gold = paragraphs with ``is_supporting``.
* ``2wiki``: ``2wikimultihopqa/test.json`` (1,000 questions) over the pooled
  ``2wikimultihopqa_corpus.json`` (6,119 passages); gold = ``supporting_facts`` titles.
  No per-question pool.
* ``2wiki_sampled``: ``2wikimultihopqa/sampled_ds.json`` (500 questions, pandas
  column-oriented, 10 paragraphs each); gold = ``supporting_facts`` titles.
* ``rgb``: ``rgb/en_fact.json`` (100 queries); every query's positives and negatives
  are merged into one corpus (Dartboard protocol); gold = that query's positives.
* ``asqa``: ``asqa/asqa_dev.json`` (948 questions) with ``qa_pairs`` short answers as
  interpretation groups (MRecall). ASQA ships no retrieval corpus; as a stand-in the
  annotators' ``knowledge`` snippets of all questions are pooled (our construction,
  not ALCE's retrieval setting); there are no gold passage ids.

Example:
    >>> bench = load_dataset("hotpotqa")  # doctest: +SKIP
    >>> len(bench.records)  # doctest: +SKIP
    200
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError
from .records import Benchmark, CorpusBuilder, QARecord

__all__ = [
    "DATASETS",
    "SUPPORTED_PROTOCOLS",
    "default_data_dir",
    "resolve_data_dir",
    "load_dataset",
    "load_hotpotqa",
    "load_hotpotqa_sample",
    "PACKAGED",
    "load_musique",
    "load_2wiki",
    "load_2wiki_sampled",
    "load_rgb",
    "load_asqa",
    "FORMATS",
    "DatasetFormatError",
]

_ALL = ("pool", "paragraphs", "chunks")

#: The retrieval protocols each dataset supports.
SUPPORTED_PROTOCOLS: dict[str, tuple[str, ...]] = {
    "hotpotqa": _ALL,
    "hotpotqa_sample": _ALL,
    "musique": _ALL,
    "2wiki": ("paragraphs", "chunks"),
    "2wiki_sampled": _ALL,
    "rgb": ("pool", "paragraphs"),
    "asqa": ("pool", "paragraphs"),
}

#: Datasets shipped inside the package: they need no data directory.
PACKAGED = frozenset({"hotpotqa_sample"})

#: Environment variable that overrides the default data directory.
DATA_ENV = "DIVERSE_RAG_DATA"


def default_data_dir() -> Path:
    """``$DIVERSE_RAG_DATA`` if set, else ``../shared/data`` relative to the repository root."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    repo_root = Path(__file__).resolve().parents[3]
    return (repo_root / ".." / "shared" / "data").resolve()


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    """The data directory to use; raises FileNotFoundError naming the path when it is missing."""
    path = Path(data_dir) if data_dir is not None else default_data_dir()
    if not path.is_dir():
        raise FileNotFoundError(
            f"benchmark data directory not found: {path} "
            f"(pass data_dir / --data-dir or set {DATA_ENV})"
        )
    return path


def _file(data_dir: str | Path | None, rel: str) -> Path:
    path = resolve_data_dir(data_dir) / rel
    if not path.is_file():
        raise FileNotFoundError(f"benchmark file not found: {path}")
    return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json_value(line, f"{path}:{n}") for n, line in enumerate(fh, 1) if line.strip()]


def _json(path: Path) -> Any:
    return json_value(path.read_text(encoding="utf-8"), str(path))


#: A JSON escape of a UTF-16 surrogate (``\ud800``-``\udfff``): the only way a lone surrogate,
#: which has no UTF-8 encoding, gets into text read from a UTF-8 file.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_value(raw: str, where: str) -> Any:
    """``json.loads(raw)``, refusing text with a lone surrogate (a ``\\ud800`` escape without its
    pair: no UTF-8 encoding, so no embedding cache key) with a :class:`DatasetFormatError` naming
    ``where`` (``path:line``) and, for a JSON array, the record. Syntax errors propagate as
    ``json.JSONDecodeError``."""
    value = json.loads(raw)
    if _SURROGATE_ESCAPE.search(raw) is None:
        return value
    records = value if isinstance(value, list) else [value]
    for i, record in enumerate(records):
        try:
            json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            at = f", record {i}" if isinstance(value, list) else ""
            raise DatasetFormatError(
                f"{where}{at}: a text holds a lone surrogate ({exc.object[exc.start:exc.end]!r}: a JSON "
                "escape such as \\ud800 without its pair), which has no UTF-8 encoding; fix or drop it"
            ) from None
    return value


def _answers(first: Any, aliases: Iterable[Any] = ()) -> tuple[str, ...]:
    out: list[str] = []
    items = list(first) if isinstance(first, list) else [first]
    for a in [*items, *aliases]:
        if isinstance(a, list):  # RGB answers may nest alternatives
            out.extend(str(x) for x in a)
        elif a is not None and str(a).strip():
            out.append(str(a))
    return tuple(dict.fromkeys(out))


def _context_record(
    builder: CorpusBuilder,
    qid: str,
    question: str,
    answers: tuple[str, ...],
    context: list[list[Any]],
    gold_titles: Iterable[str],
    meta: dict[str, Any],
    support_facts: Iterable[Any] = (),
) -> QARecord:
    """A record from an original-format ``context`` of ``[title, [sentences]]`` pairs.

    ``support_facts``: ``[title, sentence index]`` pairs; each gold passage's supporting
    sentences become its :attr:`QARecord.support`.
    """
    pool: list[str] = []
    by_title: dict[str, list[str]] = {}
    raw: dict[str, list[Any]] = {}
    for title, sents in context:
        sentences = tuple(s.strip() for s in sents if s.strip())
        doc_id = builder.add(title, " ".join(sentences), sentences)
        pool.append(doc_id)
        by_title.setdefault(title.strip(), []).append(doc_id)
        raw.setdefault(title.strip(), list(sents))
    support: dict[str, list[str]] = {}
    for fact in support_facts:
        t, idx = str(fact[0]).strip(), fact[1]
        sents = raw.get(t, [])
        if isinstance(idx, int) and 0 <= idx < len(sents) and str(sents[idx]).strip():
            for d in by_title.get(t, []):
                support.setdefault(d, []).append(str(sents[idx]).strip())
    gold: list[str] = []
    for t in dict.fromkeys(x.strip() for x in gold_titles):
        if t not in by_title:
            raise ValueError(f"question {qid!r}: gold title {t!r} is not among its paragraphs")
        gold.extend(by_title[t])
    return QARecord(qid, question, answers, tuple(dict.fromkeys(gold)), tuple(dict.fromkeys(pool)), meta=meta,
                    support={d: tuple(dict.fromkeys(v)) for d, v in support.items()})


def _distractor_record(builder: CorpusBuilder, r: dict[str, Any], qid: str, meta: dict[str, Any]) -> QARecord:
    """A record of the HotpotQA distractor format (``question``, ``answer``, ``context``,
    ``supporting_facts`` of ``[title, sentence index]``), shared by HotpotQA and the 2Wiki
    sample; the supporting sentences become :attr:`QARecord.support`."""
    facts = r["supporting_facts"]
    return _context_record(builder, qid, r["question"], _answers(r["answer"]), r["context"],
                           (t for t, _ in facts), meta, facts)


def _hotpot(name: str, rows: Iterable[dict[str, Any]]) -> Benchmark:
    builder = CorpusBuilder()
    records = [_distractor_record(builder, r, str(r["_id"]), {"type": r.get("type"), "level": r.get("level")})
               for r in rows]
    return Benchmark(name, tuple(records), builder.docs, SUPPORTED_PROTOCOLS[name])


def load_hotpotqa(data_dir: str | Path | None = None) -> Benchmark:
    """HotpotQA dev-distractor sample (``hotpotqa/hotpot.json``)."""
    return _hotpot("hotpotqa", _jsonl(_file(data_dir, "hotpotqa/hotpot.json")))


def load_hotpotqa_sample(data_dir: str | Path | None = None) -> Benchmark:
    """The packaged 40-question HotpotQA dev sample (``diverse_core/demo/data``); ``data_dir`` is unused."""
    from ..demo.sample import sample_records

    return _hotpot("hotpotqa_sample", sample_records())


def load_musique(data_dir: str | Path | None = None) -> Benchmark:
    """MuSiQue-Ans dev sample (``musique/musique.json``)."""
    builder = CorpusBuilder()
    records = []
    for r in _jsonl(_file(data_dir, "musique/musique.json")):
        pool, gold = _musique_paragraphs(builder, r)
        answers = _answers(r["answer"], r.get("answer_aliases", []))
        records.append(
            QARecord(
                str(r["id"]),
                r["question"],
                answers,
                tuple(dict.fromkeys(gold)),
                tuple(dict.fromkeys(pool)),
                meta={"hops": len(r.get("question_decomposition", []))},
                support=_musique_support(r, pool, answers),
            )
        )
    return Benchmark("musique", tuple(records), builder.docs, SUPPORTED_PROTOCOLS["musique"])


def _musique_paragraphs(builder: CorpusBuilder, r: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(pool, gold): the doc ids of a MuSiQue question's paragraphs, and of its supporting ones."""
    pool, gold = [], []
    for p in r["paragraphs"]:
        doc_id = builder.add(p["title"], p["paragraph_text"])
        pool.append(doc_id)
        if p.get("is_supporting"):
            gold.append(doc_id)
    return pool, gold


def _musique_support(r: dict[str, Any], pool: list[str], answers: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Per supporting paragraph, the answer of the hop it supports (the last hop: every alias)."""
    steps = r.get("question_decomposition") or []
    out: dict[str, list[str]] = {}
    for i, step in enumerate(steps):
        idx = step.get("paragraph_support_idx")
        if not isinstance(idx, int) or not 0 <= idx < len(pool):
            continue
        found = [str(step.get("answer") or "").strip()] + (list(answers) if i == len(steps) - 1 else [])
        out.setdefault(pool[idx], []).extend(a for a in found if a)
    return {d: tuple(dict.fromkeys(v)) for d, v in out.items() if v}


def load_2wiki(data_dir: str | Path | None = None) -> Benchmark:
    """2WikiMultihopQA, 1,000 questions over the pooled 6,119-passage corpus."""
    builder = CorpusBuilder()
    by_title: dict[str, list[str]] = {}
    for p in _json(_file(data_dir, "2wikimultihopqa/2wikimultihopqa_corpus.json")):
        doc_id = builder.add(p["title"], p["text"])
        ids = by_title.setdefault(p["title"].strip(), [])
        if doc_id not in ids:
            ids.append(doc_id)
    records = []
    for r in _json(_file(data_dir, "2wikimultihopqa/test.json")):
        titles = list(dict.fromkeys(x.strip() for x in r["supporting_facts"]))
        for t in titles:
            if t not in by_title:
                raise ValueError(f"question {r['id']!r}: gold title {t!r} is not in the corpus")
        gold = [d for t in titles for d in by_title[t]]
        answers = _answers(r["answer"], r.get("answer_aliases", []))
        # No supporting-sentence index in this file: a gold page's window supports when it holds the
        # answer or names another gold page (the bridge), a proxy.
        support = {d: tuple(dict.fromkeys([*answers, *(o for o in titles if o != t)]))
                   for t in titles for d in by_title[t]}
        records.append(
            QARecord(
                str(r["id"]),
                r["question"],
                answers,
                tuple(dict.fromkeys(gold)),
                support=support,
            )
        )
    return Benchmark("2wiki", tuple(records), builder.docs, SUPPORTED_PROTOCOLS["2wiki"])


def load_2wiki_sampled(data_dir: str | Path | None = None) -> Benchmark:
    """2WikiMultihopQA 500-question distractor sample (``sampled_ds.json``, column-oriented)."""
    cols = _json(_file(data_dir, "2wikimultihopqa/sampled_ds.json"))
    rows = [{c: cols[c][key] for c in cols} for key in cols["id"]]
    builder = CorpusBuilder()
    records = [_distractor_record(builder, r, str(r["_1"]), {"type": r.get("type")}) for r in rows]
    return Benchmark("2wiki_sampled", tuple(records), builder.docs, SUPPORTED_PROTOCOLS["2wiki_sampled"])


def load_rgb(data_dir: str | Path | None = None) -> Benchmark:
    """RGB English ``en_fact`` with positives and negatives merged into one corpus."""
    builder = CorpusBuilder()
    records = []
    for r in _jsonl(_file(data_dir, "rgb/en_fact.json")):
        pos = [builder.add("", t) for t in r["positive"]]
        neg = [builder.add("", t) for t in r["negative"]]
        records.append(
            QARecord(
                str(r["id"]),
                r["query"],
                _answers(r["answer"]),
                tuple(dict.fromkeys(pos)),
                tuple(dict.fromkeys(pos + neg)),
            )
        )
    return Benchmark("rgb", tuple(records), builder.docs, SUPPORTED_PROTOCOLS["rgb"], metric="ndcg")


def load_asqa(data_dir: str | Path | None = None) -> Benchmark:
    """ASQA dev: questions, ``qa_pairs`` short-answer groups and pooled knowledge snippets."""
    builder = CorpusBuilder()
    records = []
    for r in _json(_file(data_dir, "asqa/asqa_dev.json")):
        pool = [
            builder.add(k.get("wikipage") or "", k["content"])
            for a in r.get("annotations", [])
            for k in a.get("knowledge", [])
            if (k.get("content") or "").strip()
        ]
        groups = tuple(
            tuple(dict.fromkeys(s for s in qa["short_answers"] if s.strip()))
            for qa in r["qa_pairs"]
        )
        records.append(
            QARecord(
                str(r["id"]),
                r["question"],
                _answers(r.get("all_short_answers", [])),
                (),
                tuple(dict.fromkeys(pool)),
                answer_groups=tuple(g for g in groups if g),
            )
        )
    return Benchmark("asqa", tuple(records), builder.docs, SUPPORTED_PROTOCOLS["asqa"], metric="mrecall")


DATASETS: dict[str, Callable[[str | Path | None], Benchmark]] = {
    "hotpotqa": load_hotpotqa,
    "hotpotqa_sample": load_hotpotqa_sample,
    "musique": load_musique,
    "2wiki": load_2wiki,
    "2wiki_sampled": load_2wiki_sampled,
    "rgb": load_rgb,
    "asqa": load_asqa,
}


class DatasetFormatError(InvalidParameterError):
    """A dataset file does not have the expected format (the message names file and format)."""


#: What each built-in loader expects (named in format errors).
FORMATS: dict[str, str] = {
    "hotpotqa": "hotpotqa/hotpot.json: JSONL of HotpotQA records {_id, question, answer, supporting_facts, context}",
    "hotpotqa_sample": "the packaged diverse_core/demo/data/hotpotqa_dev_sample.jsonl.gz (HotpotQA records)",
    "musique": "musique/musique.json: JSONL of MuSiQue records {id, question, answer, paragraphs[{title, "
    "paragraph_text, is_supporting}]}",
    "2wiki": "2wikimultihopqa/test.json (JSON array {id, question, answer, supporting_facts: [title]}) and "
    "2wikimultihopqa_corpus.json (JSON array {title, text})",
    "2wiki_sampled": "2wikimultihopqa/sampled_ds.json: pandas column-oriented JSON {id, _1, question, context, ...}",
    "rgb": "rgb/en_fact.json: JSONL {id, query, answer, positive: [str], negative: [str]}",
    "asqa": "asqa/asqa_dev.json: JSON array {id, question, qa_pairs, annotations[{knowledge}]}",
}


def load_dataset(name: str, data_dir: str | Path | None = None) -> Benchmark:
    """Load a benchmark by name (one of :data:`DATASETS`, built in or registered).

    Raises:
        InvalidParameterError: unknown name. FileNotFoundError: missing folder or file.
        DatasetFormatError: a file that does not match the dataset's format (names it).
    """
    if name not in DATASETS:
        raise InvalidParameterError(f"unknown dataset {name!r}; available: {sorted(DATASETS)}")
    try:
        return DATASETS[name](data_dir)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:
        if isinstance(exc, InvalidParameterError):
            raise
        what = FORMATS.get(name, "the format its loader documents")
        raise DatasetFormatError(
            f"dataset {name!r} in {resolve_data_dir(data_dir)} does not match the expected format "
            f"({type(exc).__name__}: {str(exc)[:120]}); expected {what}"
        ) from exc
