"""``diverse-rag train {adaptive,drrag}`` forwards its options to the harness's trainers."""

from __future__ import annotations

from typing import Any

import pytest
from diverse_core.cli import main


@pytest.mark.parametrize(("model", "prog"), [("adaptive", "train_adaptive"), ("drrag", "train_drrag")])
def test_help_reaches_the_trainer(capsys: Any, model: str, prog: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", model, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: diverse-rag train {model} ")  # the command the user typed (issue 47)
    assert f"python -m diverse_core.eval.{prog}" not in out


@pytest.mark.parametrize("model", ["adaptive", "drrag"])
def test_options_are_forwarded(monkeypatch: Any, model: str) -> None:
    import importlib

    module = importlib.import_module(f"diverse_core.eval.train_{model}")
    seen: list[tuple[list[str], str]] = []
    monkeypatch.setattr(module, "main", lambda argv, prog: seen.append((list(argv), prog)) or 0)
    assert main(["train", model, "--data-dir", "/nowhere", "--seed", "3"]) == 0
    assert seen == [(["--data-dir", "/nowhere", "--seed", "3"], f"diverse-rag train {model}")]


def test_unknown_model_is_a_usage_error(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "nope"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
