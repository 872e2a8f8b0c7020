"""Issue 24: the ``diverse-rag`` CLI never prints a traceback without ``-v``.

An untyped error (a bug, or a plugin's own failure) is forced through ``--plugin``, both while the
plugin module is imported and while its method runs: the user sees one line
``diverse-rag: error: <type>: <message> (rerun with -v for the traceback)`` and a non-zero exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from diverse_core.cli import main

REPO = Path(__file__).resolve().parents[2]
LINES = [
    {"id": "q1", "question": "Who founded Acme?", "answers": ["Ann"],
     "passages": [{"id": "a", "title": "Acme", "text": "Acme was founded by Ann.", "gold": True},
                  {"id": "b", "title": "Bolt", "text": "Bolt makes bolts in Ohio."}]},
]
PLUGIN = (
    "import os\n"
    "if os.environ.get('H24_FAIL_AT_IMPORT'):\n"
    "    raise RuntimeError('plugin module broke\\n  on two lines')\n"
    "def explode(inp, depth=1.0):\n"
    "    return {}['no such key']\n"
)


@pytest.fixture
def bench_argv(tmp_path: Path, monkeypatch: Any, fake_embedder: Any) -> list[str]:
    import diverse_core.embedders as emb

    monkeypatch.setattr(emb, "get_default_embedder", lambda: fake_embedder)
    (tmp_path / "h24_exploding_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("h24_exploding_plugin", None)
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in LINES), encoding="utf-8")
    (tmp_path / "data").mkdir()
    return ["bench", "--dataset-file", f"{data}:mine", "--plugin", "h24_exploding_plugin:explode",
            "--methods", "explode", "--k", "1", "--fetch-k", "2", "--protocols", "paragraphs",
            "--out", str(tmp_path / "out"), "--no-progress", "--no-plots", "--cache-dir", str(tmp_path / "c"),
            "--data-dir", str(tmp_path / "data")]


def _one_line(capsys: Any, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return code, err


def test_untyped_plugin_error_is_one_line(capsys: Any, bench_argv: list[str]) -> None:
    code, err = _one_line(capsys, bench_argv)
    assert code == 1
    assert err == "diverse-rag: error: KeyError: 'no such key' (rerun with -v for the traceback)"


def test_untyped_error_while_importing_the_plugin(capsys: Any, bench_argv: list[str], monkeypatch: Any) -> None:
    monkeypatch.setenv("H24_FAIL_AT_IMPORT", "1")
    code, err = _one_line(capsys, bench_argv)
    assert code == 1
    assert err.startswith("diverse-rag: error: RuntimeError: plugin module broke on two lines (rerun with -v")


def test_typed_input_errors_use_the_same_line_and_exit_2(capsys: Any, tmp_path: Path) -> None:
    code, err = _one_line(capsys, ["bench", "--datasets", "nope", "--data-dir", str(tmp_path)])
    assert code == 2
    assert err.startswith("diverse-rag: error: InvalidParameterError: unknown dataset 'nope'")
    assert err.endswith("(rerun with -v for the traceback)")


def test_verbose_raises_with_the_traceback(bench_argv: list[str]) -> None:
    with pytest.raises(KeyError, match="no such key"):
        main([*bench_argv, "-v"])


def test_interrupt_is_one_line(capsys: Any, monkeypatch: Any, tmp_path: Path) -> None:
    import diverse_core.eval.cli as ecli

    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(ecli, "run_from_args", interrupted)
    code, err = _one_line(capsys, ["bench", "--data-dir", str(tmp_path)])
    assert (code, err) == (130, "diverse-rag: interrupted")


def test_console_process_prints_no_traceback(tmp_path: Path) -> None:
    """The real process (``python -m diverse_core.cli``): stderr is one line, exit code 1."""
    (tmp_path / "h24_boom.py").write_text("raise ZeroDivisionError('boom at import')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "shared"), str(REPO)])}
    proc = subprocess.run(
        [sys.executable, "-m", "diverse_core.cli", "bench", "--plugin", "h24_boom", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "diverse-rag: error: ZeroDivisionError: boom at import (rerun with -v for the traceback)"
    )
