"""Issue 46, item 6: the CLI's bound on parameter values is a total over every grid, a --plugin that
is a file path is one input-error line (exit 2), and a dataset file with a lone surrogate names its
file and line, through ``bench`` and ``train learned`` alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from diverse_core.cli import main
from diverse_core.eval.config import MAX_GRID_VALUES


def _one_line(capsys: Any, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return code, err


def test_the_value_bound_is_a_total_over_every_grid(capsys: Any, tmp_path: Path) -> None:
    many = ["gmmr=0.5"] * (MAX_GRID_VALUES + 1)
    code, err = _one_line(capsys, ["bench", "--methods", *many, "--datasets", "hotpotqa", "--data-dir", str(tmp_path)])
    assert code == 2
    assert "1,001 parameter values in all" in err and "MAX_GRID_VALUES" in err, err
    split = ["mmr=0:1:0.002", "gmmr=0:1:0.002"]  # 501 values each: each grid fits, together they do not
    code, err = _one_line(capsys, ["bench", "--methods", *split, "--datasets", "hotpotqa", "--data-dir", str(tmp_path)])
    assert code == 2 and "1,002 parameter values in all" in err, err


@pytest.mark.parametrize("spec", ["../../etc/passwd", "/etc/passwd", "a/b:f", "mod:../x", "mod-name"])
def test_a_plugin_path_is_one_input_error_line(capsys: Any, tmp_path: Path, spec: str) -> None:
    code, err = _one_line(capsys, ["bench", "--plugin", spec, "--datasets", "hotpotqa", "--data-dir", str(tmp_path)])
    assert code == 2
    assert err.startswith("diverse-rag: error: InvalidParameterError: --plugin must name a Python module"), err


LINE = {"id": "q1", "question": "Who founded Acme?", "answers": ["Ann"],
        "passages": [{"id": "a", "title": "Acme", "text": "Acme was founded by Ann.", "gold": True},
                     {"id": "b", "title": "Bolt", "text": "Bolt makes bolts in Ohio."}]}


def test_bench_names_the_line_of_a_lone_surrogate(capsys: Any, tmp_path: Path, monkeypatch: Any,
                                                   fake_embedder: Any) -> None:
    import diverse_core.embedders as emb

    monkeypatch.setattr(emb, "get_default_embedder", lambda: fake_embedder)
    bad = json.loads(json.dumps(LINE))
    bad["id"] = "q2"
    bad["passages"][1]["text"] = "Bolt \ud800 bolts."
    data = tmp_path / "mine.jsonl"
    data.write_text(json.dumps(LINE) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")  # ascii: \\ud800 escape
    code, err = _one_line(capsys, ["bench", "--dataset-file", f"{data}:mine", "--k", "1", "--fetch-k", "2",
                                   "--protocols", "paragraphs", "--no-progress", "--no-plots",
                                   "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")])
    assert code == 2
    assert f"{data}:2" in err and "lone surrogate" in err, err
    assert fake_embedder.calls == []


def test_train_data_names_the_line_of_a_lone_surrogate(tmp_path: Path) -> None:
    from diverse_core.eval import datasets  # the train loaders read through datasets' readers

    path = tmp_path / "train.jsonl"
    path.write_text('{"q": "fine"}\n\n{"q": "bad \\udc00 text"}\n', encoding="utf-8")
    with pytest.raises(datasets.DatasetFormatError, match=rf"{path}:3: .*lone surrogate"):
        datasets._jsonl(path)
    whole = tmp_path / "train.json"
    whole.write_text('[{"q": "ok \\ud83d\\ude00"}, {"q": "bad \\ud800"}]', encoding="utf-8")  # a pair is fine
    with pytest.raises(datasets.DatasetFormatError, match=rf"{whole}, record 1: .*lone surrogate"):
        datasets._json(whole)
