"""Your own labelled questions as a folder: the custom-data format that ``diverse-rag train learned`` reads.

A folder with two UTF-8 JSONL files (one JSON object per line):

``corpus.jsonl``, the units your store holds (chunks or passages), one per line::

    {"id": "c1", "text": "Dune is a 1965 novel by Frank Herbert.", "source": "dune.md", "title": "Dune"}

``id`` and ``text`` are required and ids are unique; ``source`` (the page, file or parent
document: what LangChain loaders put in ``metadata["source"]``, LlamaIndex in
``ref_doc_id``) and ``title`` (a display name, ``metadata["title"]``) are optional. The
text is indexed as it is: give it the way your store holds it.

``questions.jsonl``, the labelled questions, one per line::

    {"id": "q1", "question": "Who wrote Dune?", "gold": ["c1"], "answers": ["Frank Herbert"]}

``id``, ``question`` and ``gold`` (the corpus ids that hold the evidence, at least one)
are required; ``answers`` is optional.

Example:
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "corpus.jsonl").write_text(json.dumps({"id": "c1", "text": "Ann wrote it."}) + "\\n")
    >>> _ = (d / "questions.jsonl").write_text(json.dumps({"id": "q", "question": "Who?", "gold": ["c1"]}) + "\\n")
    >>> bench = load_custom_dir(d)
    >>> bench.records[0].gold_doc_ids, bench.corpus["c1"].text
    (('c1',), 'Ann wrote it.')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .datasets import DatasetFormatError
from .records import Benchmark, Document, QARecord
from .userdata import jsonl_objects

__all__ = ["CUSTOM_FORMAT", "is_custom_dir", "load_custom_dir"]

#: One-line description of the format, used in every format error.
CUSTOM_FORMAT = ('a folder with corpus.jsonl ({"id", "text", "source"?, "title"?} per line) and questions.jsonl '
                 '({"id", "question", "gold": [corpus ids], "answers"?} per line); see diverse_core.eval.customdata')


def is_custom_dir(path: str | Path | None) -> bool:
    """Whether ``path`` is a folder in the custom-data format (it holds ``questions.jsonl``)."""
    return path is not None and (Path(path) / "questions.jsonl").is_file()


def _fail(path: Path, lineno: int, problem: str) -> DatasetFormatError:
    return DatasetFormatError(f"{path}:{lineno}: {problem}; expected {CUSTOM_FORMAT}")


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise FileNotFoundError(f"custom data file not found: {path} (expected {CUSTOM_FORMAT})")
    out = list(jsonl_objects(path, CUSTOM_FORMAT))
    if not out:
        raise _fail(path, 1, "the file is empty")
    return out


def _string(obj: dict[str, Any], key: str, path: Path, lineno: int, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key in ("id", "source"):
        value = str(value)
    if not isinstance(value, str) or (required and not value.strip()):
        raise _fail(path, lineno, f"'{key}' must be a non-empty string, got {value!r:.60}")
    return value


def load_custom_dir(path: str | Path, name: str = "custom") -> Benchmark:
    """Read a custom-data folder (see the module docstring) into a :class:`Benchmark`.

    Raises:
        FileNotFoundError: a file is missing. DatasetFormatError: a line does not match the format
            (the message names the file, the line and the problem).
    """
    root = Path(path)
    corpus_path, questions_path = root / "corpus.jsonl", root / "questions.jsonl"
    corpus: dict[str, Document] = {}
    for lineno, obj in _lines(corpus_path):
        doc_id = _string(obj, "id", corpus_path, lineno)
        if doc_id in corpus:
            raise _fail(corpus_path, lineno, f"duplicate id {doc_id!r}")
        corpus[doc_id] = Document(doc_id, _string(obj, "title", corpus_path, lineno, required=False).strip(),
                                  _string(obj, "text", corpus_path, lineno).strip(),
                                  source=_string(obj, "source", corpus_path, lineno, required=False))
    records = []
    for lineno, obj in _lines(questions_path):
        qid = _string(obj, "id", questions_path, lineno)
        question = _string(obj, "question", questions_path, lineno)
        gold = obj.get("gold")
        if not isinstance(gold, list) or not gold:
            raise _fail(questions_path, lineno, f"'gold' must be a non-empty list of corpus ids, got {gold!r:.60}")
        missing = [g for g in gold if str(g) not in corpus]
        if missing:
            raise _fail(questions_path, lineno, f"gold id(s) {missing[:5]} are not ids of corpus.jsonl")
        answers = obj.get("answers", [])
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise _fail(questions_path, lineno, "'answers' must be a list of strings")
        records.append(QARecord(qid, question, tuple(answers), tuple(dict.fromkeys(str(g) for g in gold))))
    return Benchmark(name, tuple(records), corpus, ("paragraphs", "chunks"), as_stored=True)
