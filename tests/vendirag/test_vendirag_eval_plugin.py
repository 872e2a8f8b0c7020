"""The harness method ``vendirag``: registration, dry run, the simulated endpoint over a tiny
in-memory corpus (rewrites searched through the source), per-query info, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core import select
from diverse_core.errors import InvalidParameterError
from diverse_core.eval import MethodInput, available_plugins, get_plugin, parse_method
from diverse_core.eval.vendirag_plugin import vendirag_method
from vendi_fakes import CORPUS, CountingSource, hash_embed

QUESTION = "Which subject links passage 3 and passage 10?"


def _input(source: CountingSource | None = None, k: int = 4) -> MethodInput:
    base = source or CountingSource(CORPUS, embedder=hash_embed)
    found = base.search(QUESTION, 20)
    units = np.asarray([int(i) for i in found.ids], dtype=np.int64)
    if source is not None:
        source.queries.clear()
    return MethodInput(
        question=QUESTION, query_embedding=found.query_embedding.astype(np.float32),
        texts=list(found.texts), embeddings=found.embeddings.astype(np.float32),
        relevance=found.relevance, k=k, qid="q1", units=units,
        source_factory=(lambda: source) if source is not None else None,
    )


def test_registered_and_parseable():
    assert "vendirag" in available_plugins() and get_plugin("vendirag").fn is vendirag_method
    grid = parse_method("vendirag@llm=simulated:0@s_update=relative@simulated_ratings=3-6-9")
    assert grid.params == {"llm": "simulated:0", "s_update": "relative", "simulated_ratings": "3-6-9"}


def test_dry_run_is_the_first_iteration_vrs_set():
    inp = _input()
    out = vendirag_method(inp, llm="none")
    sel = select("vendi", inp.query_embedding, inp.embeddings, 4, s=0.8)
    assert list(out.indices) == sel.indices.tolist() and out.info["dry_run"] is True


def test_simulated_endpoint_over_a_searchable_source():
    source = CountingSource(CORPUS, embedder=hash_embed)
    inp = _input(source)
    out = vendirag_method(inp, llm="simulated:0", simulated_ratings="3-6-9", generate=True)
    info = out.info
    assert info["s_trajectory"] == pytest.approx([0.8, 0.7, 0.4])
    assert info["quality_trajectory"] == pytest.approx([0.3, 0.6, 0.9])
    assert info["stop_reason"] == "threshold" and info["final_iteration"] == 3
    assert info["cost"]["llm_calls"] == 11 and info["cost"]["searches"] == 3
    assert source.queries == [QUESTION] * 3  # the simulated rewrite returns the question
    assert info["answer"] == "answer" and out.units == [int(u) for u in info["iteration_units"][2]]
    assert list(out.indices) == inp.local_indices(out.units)
    assert info["warnings"] == []


def test_default_simulation_runs_every_iteration_without_a_source():
    # a hand-built input has no searchable source: its pool is the question's candidates, and
    # without an embedder rewritten queries cannot be searched, so rewrite=false
    inp = _input(k=3)
    out = vendirag_method(inp, llm="simulated:0", rewrite=False, max_iterations=3, s_update="fixed")
    assert out.info["n_iterations"] == 3 and out.info["stop_reason"] == "max_iterations"
    assert out.info["cost"]["llm_calls"] == 9 and len(out.indices) == 3


def test_bad_parameters():
    inp = _input()
    with pytest.raises(InvalidParameterError, match="unknown vendirag parameter"):
        vendirag_method(inp, llm="simulated:0", lambdas=0.5)
    with pytest.raises(InvalidParameterError, match="simulated_ratings"):
        vendirag_method(inp, llm="simulated:0", simulated_ratings="high")
    with pytest.raises(InvalidParameterError, match="s_update"):
        vendirag_method(inp, llm="simulated:0", s_update="ema")
