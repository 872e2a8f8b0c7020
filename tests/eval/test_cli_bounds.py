"""Issue 33 item 6: the CLI bounds its grids and turns every malformed input into one typed line.

Before: ``--methods gmmr=0:1:1e-9`` built a billion-value grid (memory grew until the process was
killed), ``0:inf:1`` and ``0:1e308:1e-308`` raised ``OverflowError``, and a dataset file that is
not UTF-8 or nests too deeply, or an ``--out`` that is a file, escaped as ``UnicodeDecodeError``,
``RecursionError``, ``FileExistsError`` or ``NotADirectoryError``. Now each case prints one line
``diverse-rag: error: <typed error>: ...`` and exits 2 before anything is embedded.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from diverse_core.cli import main
from diverse_core.errors import InvalidParameterError
from diverse_core.eval.config import MAX_GRID_VALUES, parse_values
from hypothesis import given, settings
from hypothesis import strategies as st

LINE = {"id": "q1", "question": "Who founded Acme?", "answers": ["Ann"],
        "passages": [{"id": "a", "title": "Acme", "text": "Acme was founded by Ann.", "gold": True},
                     {"id": "b", "title": "Bolt", "text": "Bolt makes bolts in Ohio."}]}


def _one_line(capsys: Any, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert code != 0
    return code, err


@pytest.fixture
def base(tmp_path: Path, monkeypatch: Any, fake_embedder: Any) -> list[str]:
    """A bench command that would run on a --dataset-file (fake embedder, no plots)."""
    import diverse_core.embedders as emb

    monkeypatch.setattr(emb, "get_default_embedder", lambda: fake_embedder)
    (tmp_path / "data").mkdir()
    return ["bench", "--k", "1", "--fetch-k", "2", "--protocols", "paragraphs",
            "--no-progress", "--no-plots", "--data-dir", str(tmp_path / "data")]


# ---------------------------------------------------------------------------- grids
@pytest.mark.parametrize("grid, says", [
    ("0:1:1e-9", "1,000,000,001 values; at most 1,000"),
    ("0:inf:1", "finite lo <= hi"),
    ("0:1e308:1e-308", "too many values"),
    ("-1e308:1e308:1e-300", "too many values"),
    ("nan:1:0.1", "finite lo <= hi"),
    ("0:1:0", "step > 0"),
    ("0,inf", "finite numbers"),
    ("1e999", "finite numbers"),
    (",".join(["0.5"] * (MAX_GRID_VALUES + 1)), "1,001 values"),
])
def test_grid_errors_are_one_typed_line(capsys: Any, tmp_path: Path, grid: str, says: str) -> None:
    code, err = _one_line(capsys, ["bench", "--methods", f"gmmr={grid}", "--datasets", "hotpotqa",
                                   "--data-dir", str(tmp_path)])
    assert code == 2
    assert err.startswith("diverse-rag: error: InvalidParameterError: "), err
    assert says in err, err


def test_the_largest_accepted_grid_is_documented_and_accepted() -> None:
    assert len(parse_values(f"0:1:{1 / (MAX_GRID_VALUES - 1)}")) == MAX_GRID_VALUES
    with pytest.raises(InvalidParameterError, match="MAX_GRID_VALUES"):
        parse_values(f"0:1:{1 / MAX_GRID_VALUES}")


_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**6, 10**6).map(str),
    st.sampled_from(["1e-9", "1e-308", "1e308", "inf", "-inf", "nan", "", " ", "1e", "0x10", "1_0"]),
)
_grids = st.one_of(
    st.tuples(_numbers, _numbers, _numbers).map(":".join),
    st.lists(_numbers, max_size=8).map(",".join),
    st.text(max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(_grids)
def test_any_grid_string_is_values_or_a_typed_error(spec: str) -> None:
    try:
        values = parse_values(spec)
    except InvalidParameterError:
        return
    assert len(values) <= MAX_GRID_VALUES
    assert all(isinstance(v, float) and math.isfinite(v) for v in values)


@settings(max_examples=25, deadline=None)
@given(_grids)
def test_any_grid_on_the_command_line_is_one_line(spec: str) -> None:
    """Through ``main()``: a bad grid or (for a good one) the unknown dataset: one line, exit 2."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["bench", "--methods", f"gmmr={spec}", "--datasets", "no_such_dataset", "--data-dir", "."])
    text = err.getvalue().strip()
    assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, text
    assert text.startswith("diverse-rag: error: "), text


# ---------------------------------------------------------------------------- malformed inputs
def _dataset(tmp_path: Path, content: bytes) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    return f"{path}:bad"


@pytest.mark.parametrize("content, says", [
    (b'{"id": "q1", "question": "caf\xe9?"}\n', "bad.jsonl:1: not UTF-8 text"),
    (json.dumps(LINE).encode() + b"\n" + b"[" * 100_000 + b"\n", "bad.jsonl:2: JSON nested too deeply"),
    (b'{"id": ' + b"9" * 5001 + b', "question": "q?"}\n', "bad.jsonl:1: unreadable JSON value"),
])
def test_malformed_dataset_files_are_one_typed_line(capsys: Any, base: list[str], tmp_path: Path,
                                                     content: bytes, says: str) -> None:
    argv = [*base, "--dataset-file", _dataset(tmp_path, content), "--out", str(tmp_path / "out")]
    code, err = _one_line(capsys, argv)
    assert code == 2
    assert err.startswith("diverse-rag: error: DatasetFormatError: "), err
    assert says in err, err


@pytest.mark.parametrize("option", ["--out", "--per-query-dir", "--cache-dir"])
@pytest.mark.parametrize("where", ["is a file", "under a file"])
def test_a_folder_option_that_is_a_file_is_one_typed_line(capsys: Any, base: list[str], tmp_path: Path,
                                                          option: str, where: str) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x", encoding="utf-8")
    path = blocker if where == "is a file" else blocker / "sub"
    good = _dataset(tmp_path, json.dumps(LINE).encode() + b"\n")
    argv = [*base, "--dataset-file", good, "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    argv += [option, str(path)]  # the last one given wins
    code, err = _one_line(capsys, argv)
    assert code == 2
    assert err.startswith(f"diverse-rag: error: InvalidParameterError: {option} must be a folder"), err


def test_demo_out_that_is_a_file_is_one_typed_line(capsys: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x", encoding="utf-8")
    code, err = _one_line(capsys, ["demo", "--out", str(blocker)])
    assert code == 2
    assert err.startswith("diverse-rag: error: InvalidParameterError: --out must be a folder"), err


def test_a_plugin_that_is_not_python_is_one_typed_line(capsys: Any, tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "h33_not_python.py").write_bytes(b"def f(inp, x=1.0):\n    return '\xff\xfe'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, err = _one_line(capsys, ["bench", "--plugin", "h33_not_python:f", "--datasets", "hotpotqa",
                                   "--data-dir", str(tmp_path)])
    assert code == 2
    assert err.startswith("diverse-rag: error: InvalidParameterError: --plugin 'h33_not_python:f'"), err
