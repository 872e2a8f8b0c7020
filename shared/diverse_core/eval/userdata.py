"""Your own questions in the harness: a JSONL dataset format and :func:`register_dataset`.

Format (UTF-8 JSONL, one JSON object per line). A *question line*::

    {"id": "q1", "question": "Who founded X?", "answers": ["Ann"],
     "passages": [{"id": "p1", "title": "X", "text": "X was founded by Ann.", "gold": true},
                  {"id": "p2", "title": "Y", "text": "..."}],
     "gold": ["p1"]}

``id`` and ``question`` are required; ``answers`` (strings) is optional; ``passages``
are the question's own candidates (enables the ``pool`` protocol), each with a
``text`` and optional ``id``/``title``/``gold``; ``gold`` lists passage ids that
support the answer (alternatively mark passages ``"gold": true``). A *passage line*
adds a passage to the shared corpus without a question, to be referenced by id::

    {"passage": {"id": "p9", "title": "Z", "text": "..."}}

Every passage of the file is pooled for the ``paragraphs`` and ``chunks`` protocols.
Load it with ``--dataset-file PATH[:NAME]`` on the command line, or in Python::

    from diverse_core.eval import load_jsonl_dataset, register_dataset
    register_dataset("mine", lambda data_dir: load_jsonl_dataset("mine.jsonl", "mine"))

Example:
    >>> import json, tempfile, os
    >>> line = {"id": "q1", "question": "Who?", "passages": [{"id": "a", "text": "Ann did.", "gold": True}]}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
    ...     _ = fh.write(json.dumps(line) + "\\n")
    >>> bench = load_jsonl_dataset(fh.name, "mine"); os.unlink(fh.name)
    >>> bench.records[0].gold_doc_ids, bench.protocols
    (('0',), ('pool', 'paragraphs', 'chunks'))
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .datasets import DATASETS, DatasetFormatError, json_value
from .plugins import check_registration
from .records import Benchmark, CorpusBuilder, QARecord

__all__ = ["DatasetFormatError", "JSONL_FORMAT", "load_jsonl_dataset", "register_dataset", "parse_dataset_file",
           "jsonl_objects"]

#: One-line description of the expected format, used in every format error.
JSONL_FORMAT = (
    'JSONL, one object per line: {"id", "question", "answers"?: [str], '
    '"passages"?: [{"id"?, "title"?, "text", "gold"?: bool}], "gold"?: [passage id]} '
    'or {"passage": {"id", "title"?, "text"}} (see diverse_core.eval.userdata)'
)


def _fail(path: Path, lineno: int, problem: str, expected: str = JSONL_FORMAT) -> DatasetFormatError:
    return DatasetFormatError(f"{path}:{lineno}: {problem}; expected {expected}")


def _text(value: Any, path: Path, lineno: int, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, lineno, f"{what} must be a non-empty string, got {value!r:.60}")
    return value


def _passage(p: Any, path: Path, lineno: int, builder: CorpusBuilder, ids: dict[str, str]) -> tuple[str, bool]:
    if not isinstance(p, dict):
        raise _fail(path, lineno, f"a passage must be an object, got {type(p).__name__}")
    text = _text(p.get("text"), path, lineno, "passage 'text'")
    title = p.get("title") or ""
    if not isinstance(title, str):
        raise _fail(path, lineno, f"passage 'title' must be a string, got {title!r:.60}")
    doc = builder.add(title, text)
    if p.get("id") is not None:
        ids[str(p["id"])] = doc
    return doc, bool(p.get("gold", False))


def jsonl_objects(path: Path, expected: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line's JSON object with its line number.

    Raises:
        DatasetFormatError: a line that is not UTF-8, not JSON (syntax, nesting too deep for the
            parser, an integer over Python's digit limit) or not an object, naming the line and
            ``expected`` (the format).
    """
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _fail(path, lineno, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)",
                            expected) from None
            if not line.strip():
                continue
            try:
                obj = json_value(line, f"{path}:{lineno}")
            except DatasetFormatError:
                raise
            except json.JSONDecodeError as exc:
                hint = " (a JSON array? write one object per line)" if line.lstrip().startswith("[") else ""
                raise _fail(path, lineno, f"not valid JSON ({exc.msg}){hint}", expected) from None
            except RecursionError:
                raise _fail(path, lineno, "JSON nested too deeply to read", expected) from None
            except ValueError as exc:  # e.g. an integer literal over the interpreter's digit limit
                raise _fail(path, lineno, f"unreadable JSON value ({' '.join(str(exc).split())[:120]})",
                            expected) from None
            if not isinstance(obj, dict):
                raise _fail(path, lineno, f"each line must be a JSON object, got {type(obj).__name__}", expected)
            yield lineno, obj


def load_jsonl_dataset(path: str | Path, name: str | None = None) -> Benchmark:
    """Read a dataset in the format above into a :class:`Benchmark`.

    Raises:
        FileNotFoundError: no such file. DatasetFormatError: the file does not match the format
            (not UTF-8, not JSON, nested too deeply, or not the fields above), naming the line.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"dataset file not found: {p}")
    builder = CorpusBuilder()
    ids: dict[str, str] = {}
    pending: list[tuple[int, str, str, tuple[str, ...], list[str], list[str], list[Any]]] = []
    for lineno, obj in jsonl_objects(p, JSONL_FORMAT):
        if "passage" in obj and "question" not in obj:
            _passage(obj["passage"], p, lineno, builder, ids)
            continue
        if "id" not in obj:
            raise _fail(p, lineno, "missing 'id'")
        question = _text(obj.get("question"), p, lineno, "'question'")
        answers = obj.get("answers", [])
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise _fail(p, lineno, "'answers' must be a list of strings")
        passages = obj.get("passages", [])
        if not isinstance(passages, list):
            raise _fail(p, lineno, "'passages' must be a list")
        pool, gold = [], []
        for item in passages:
            doc, is_gold = _passage(item, p, lineno, builder, ids)
            pool.append(doc)
            if is_gold:
                gold.append(doc)
        refs = obj.get("gold", [])
        if not isinstance(refs, list):
            raise _fail(p, lineno, "'gold' must be a list of passage ids")
        pending.append((lineno, str(obj["id"]), question, tuple(answers), pool, gold, refs))
    if not pending:
        raise _fail(p, 1, "no question lines")
    records = []
    for lineno, qid, question, answers, pool, gold, refs in pending:
        for ref in refs:
            if str(ref) not in ids:
                raise _fail(p, lineno, f"gold passage id {ref!r} is not the id of any passage in the file")
            gold.append(ids[str(ref)])
        records.append(QARecord(qid, question, answers, tuple(dict.fromkeys(gold)),
                                tuple(dict.fromkeys(pool))))
    has_pool = all(r.pool_doc_ids for r in records)
    protocols = ("pool", "paragraphs", "chunks") if has_pool else ("paragraphs", "chunks")
    return Benchmark(name or p.stem, tuple(records), builder.docs, protocols)


def register_dataset(name: str, loader: Callable[[str | Path | None], Benchmark], *, replace: bool = False) -> None:
    """Make ``loader(data_dir) -> Benchmark`` available as dataset ``name`` (like ``register_plugin``).

    Raises:
        InvalidParameterError: the name is taken (pass ``replace=True``) or ``loader`` is not callable.
    """
    check_registration(DATASETS, name, loader, replace=replace, kind="dataset",
                       subject=f"dataset loader for {name!r}")
    DATASETS[name] = loader


def parse_dataset_file(spec: str) -> tuple[Path, str]:
    """``PATH[:NAME]`` -> (path, name); the name defaults to the file's stem."""
    path, sep, name = spec.rpartition(":")
    if not sep or not name or "/" in name or "\\" in name or not path:
        return Path(spec), Path(spec).stem
    return Path(path), name
