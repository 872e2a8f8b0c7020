"""The harness plugin ``dfrag``: registration, dry run, simulated endpoint, parameters."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.dfrag import DEFAULT_LAMBDAS, sweep_candidate_sets
from diverse_core.errors import InvalidParameterError
from diverse_core.eval import MethodInput, available_plugins, get_plugin, parse_method
from diverse_core.eval.dfrag_plugin import dfrag_method, resolve_llm


@pytest.fixture
def inp() -> MethodInput:
    rng = np.random.default_rng(5)
    emb = rng.normal(size=(20, 12)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = rng.normal(size=12).astype(np.float32)
    return MethodInput(
        question="Who directed it?", query_embedding=q, texts=[f"t{i}" for i in range(20)],
        embeddings=emb, relevance=(emb @ q).astype(np.float64), k=4, qid="q1",
    )


def test_dfrag_plugin_is_registered_and_parseable():
    assert "dfrag" in available_plugins()
    assert get_plugin("dfrag").fn is dfrag_method
    grid = parse_method("dfrag@llm=simulated:0.01@max_concurrency=2")
    assert grid.params == {"llm": "simulated:0.01", "max_concurrency": 2}


def test_dfrag_plugin_dry_run_counts_distinct_sets(inp):
    out = dfrag_method(inp, llm=None)
    groups = sweep_candidate_sets(inp.query_embedding, inp.embeddings, 4, DEFAULT_LAMBDAS)
    assert out.info["n_distinct_sets"] == len(groups.groups)
    assert list(out.indices) == groups.indices[DEFAULT_LAMBDAS.index(0.6)].tolist()


def test_dfrag_plugin_simulated_endpoint(inp):
    out = dfrag_method(inp, llm="simulated:0.001", max_concurrency=3, generate=True)
    assert out.info["lambda"] == 0.6  # equal scores -> upper median
    assert out.info["cost"]["evaluator_calls"] == out.info["n_distinct_sets"]
    assert out.info["answer"] == "answer" and len(out.indices) == 4


def test_dfrag_plugin_bad_parameters(inp, monkeypatch):
    with pytest.raises(InvalidParameterError, match="unknown dfrag parameter"):
        dfrag_method(inp, temperature=1)
    with pytest.raises(InvalidParameterError, match="llm must be"):
        resolve_llm("gpt")
    monkeypatch.setenv("DIVERSE_RAG_LLM_MODEL", "some-model")
    assert type(resolve_llm("auto")).__name__ == "OpenAILLM"
