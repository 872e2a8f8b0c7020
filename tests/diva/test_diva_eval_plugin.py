"""The harness method ``diva``: a scripted LLM through the runner, the simulated endpoint,
parameters and what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diva_fakes import I2018, I2019, PASSAGES, QUESTION, VECTORS, ScriptedDiva
from diverse_core.errors import InvalidParameterError
from diverse_core.eval import (
    BenchConfig,
    MethodInput,
    available_plugins,
    get_plugin,
    parse_method,
    run_benchmark,
)
from diverse_core.eval.diva_plugin import diva_method
from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord
from diverse_core.pipelines import InMemorySource


def _embed(texts: list[str]) -> np.ndarray:
    """Hand vectors; a corpus unit gets the vector of the passage it contains."""
    out = []
    for t in texts:
        vec = VECTORS.get(t) or next((v for p, v in PASSAGES.values() if p in t), [0.0, 0.0, 1.0])
        out.append(vec)
    return np.array(out, dtype=np.float32)


def _bench() -> tuple[Benchmark, dict[str, str]]:
    b = CorpusBuilder()
    ids = {pid: b.add(f"T{pid}", text) for pid, (text, _) in PASSAGES.items()}
    rec = QARecord("q0", QUESTION, ("Ann",), (ids["p0"], ids["p2"]), (), meta={"interpretations": [I2018, I2019]})
    return Benchmark("toy-ambig", (rec,), b.docs, ("paragraphs",), "recall"), ids


def _run(tmp_path: Path, spec: str) -> Any:
    bench, _ = _bench()
    cfg = BenchConfig(
        tasks=[("toy-ambig", "paragraphs")], benchmarks={"toy-ambig": bench}, k=3, fetch_k=6,
        embedder=_embed, model_name="hand", cache_dir=tmp_path / "c", out_dir=tmp_path / "o",
        results_md=tmp_path / "R.md", progress=False, plots=False, methods=[parse_method(spec)],
    )
    (setting,) = run_benchmark(cfg).tasks[0].settings
    return setting


def test_registered_and_parseable() -> None:
    assert "diva" in available_plugins() and get_plugin("diva").fn is diva_method
    grid = parse_method("diva@llm=simulated:0@search=source@per_interpretation_k=3")
    assert grid.params == {"llm": "simulated:0", "search": "source", "per_interpretation_k": 3}


def test_runner_with_a_scripted_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scripts: list[ScriptedDiva] = []

    def scripted(spec: str, **kw: Any) -> ScriptedDiva:
        scripts.append(ScriptedDiva())
        return scripts[-1]

    monkeypatch.setattr("diverse_core.eval.pipeline_plugin.resolve_llm", scripted)
    setting = _run(tmp_path, "diva@llm=scripted@per_interpretation_k=3")
    info = setting.info[0]
    assert info["interpretations"] == [I2018, I2019] and info["interpretations_source"] == "generated"
    # the kept passages: p4 (both readings), p1 (2018), p3 (2019); the gold are p0 and p2
    assert [r["interpretations"] for r in info["reasons"]] == [[I2018, I2019], [I2018], [I2019]]
    assert info["cost"]["llm_calls"] == 2 and info["usefulness"] is None and "answer" not in info
    assert setting.mean("recall") == 0.0
    answered = _run(tmp_path, "diva@llm=scripted@per_interpretation_k=3@generate=true").info[0]
    assert answered["route"] == "passages" and answered["answer"].startswith("It depends")
    assert answered["cost"]["llm_calls"] == 6 and answered["verdicts"] == [True, True]


def test_runner_with_the_gold_interpretations_needs_no_llm(tmp_path: Path) -> None:
    info = _run(tmp_path, "diva@interpretations=gold@per_interpretation_k=3").info[0]
    assert info["interpretations"] == [I2018, I2019] and info["interpretations_source"] == "given"
    assert [r["interpretations"] for r in info["reasons"]] == [[I2018, I2019], [I2018], [I2019]]
    assert info["cost"]["llm_calls"] == 0


def test_runner_with_the_simulated_endpoint(tmp_path: Path) -> None:
    info = _run(tmp_path, "diva@llm=simulated:0@generate=true").info[0]
    # the stand-in writes no interpretation: the question alone drives retrieval, flagged
    assert info["interpretations_source"] == "fallback"
    assert any("original question alone" in w for w in info["warnings"])
    assert any("no yes/no verdict" in w for w in info["warnings"])
    assert info["route"] == "passages" and info["cost"]["llm_calls"] == 2 + 1 + 2


def test_refusals_and_bad_parameters() -> None:
    src = InMemorySource([t for t, _ in PASSAGES.values()], embedder=_embed)
    inp = MethodInput(question=QUESTION, query_embedding=_embed([QUESTION])[0], texts=list(src.texts),
                      embeddings=src.matrix, relevance=np.zeros(6), k=3, source_factory=lambda: src)
    with pytest.raises(InvalidParameterError, match="no dry run"):
        diva_method(inp, llm="none")
    with pytest.raises(InvalidParameterError, match="record"):
        diva_method(inp, llm="simulated:0", interpretations="gold")
    with pytest.raises(InvalidParameterError, match="unknown diva parameter"):
        diva_method(inp, llm="simulated:0", lambdas="0.5")
    with pytest.raises(InvalidParameterError, match="search"):
        diva_method(inp, llm="simulated:0", search="web")
