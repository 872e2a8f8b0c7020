"""The pipeline contract: candidate sources, the result/cost types, LLM roles and the run context."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, EmptyCandidatesError, InvalidParameterError
from diverse_core.llm import LLMError
from diverse_core.pipelines import (
    Candidates,
    CandidateSource,
    InMemorySource,
    LLMRoles,
    PipelineCost,
    PipelineResult,
    PoolSource,
    RunContext,
    available_pipelines,
    get_pipeline,
)
from two_search_pipeline import SECOND_QUERY_PREFIX, TwoSearch


class CountingEmbedder:
    """3-d vectors from letter counts; records every text it embeds."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return np.array([[t.count("a") + 0.1, t.count("b") + 0.1, t.count("c") + 0.1] for t in texts])


TEXTS = ["aaa", "bbb", "ccc", "aab", "abc"]


def test_candidates_build_checks_shapes_and_computes_cosines():
    c = Candidates.build("q", ["a", "b"], ["1", "2"], [[1.0, 0.0], [0.0, 2.0]], [3.0, 0.0])
    assert c.relevance.tolist() == [1.0, 0.0] and c.payloads == (None, None) and len(c) == 2
    assert c.take([1]).texts == ("b",) and c.take([1]).relevance.tolist() == [0.0]
    with pytest.raises(EmptyCandidatesError):
        Candidates.build("q", [], [], np.zeros((0, 2)), [1.0, 0.0])
    with pytest.raises(DimensionMismatchError, match="dimension 3"):
        Candidates.build("q", ["a"], ["1"], [[1.0, 0.0]], [1.0, 0.0, 0.0])
    with pytest.raises(DimensionMismatchError, match="ids has 1"):
        Candidates.build("q", ["a", "b"], ["1"], np.eye(2), [1.0, 0.0])


def test_in_memory_source_ranks_by_cosine_and_embeds_each_text_once():
    emb = CountingEmbedder()
    src = InMemorySource(TEXTS, emb, default_k=3)
    assert isinstance(src, CandidateSource)
    found = src.search("a", k=2)
    assert found.texts == ("aaa", "aab") and found.positions == (0, 3) and found.ids == ("0", "3")
    assert len(src.search("b")) == 3  # default_k
    assert len(src.search("c", k=99)) == len(TEXTS)  # k > n: everything, best first
    assert asyncio.run(src.asearch("a", k=2)).texts == found.texts
    assert sorted(emb.seen) == sorted([*TEXTS, "a", "b", "c"])  # each text once, queries cached
    assert src.embed(["a"]).shape == (1, 3) and emb.seen.count("a") == 1
    with pytest.raises(InvalidParameterError, match="k must"):
        src.search("a", k=0)
    with pytest.raises(InvalidParameterError, match="query"):
        src.search("  ")
    with pytest.raises(InvalidParameterError, match="empty"):
        InMemorySource([], emb)
    with pytest.raises(DimensionMismatchError):
        InMemorySource(TEXTS, emb, embeddings=np.ones((2, 3)))


def test_in_memory_source_ties_go_to_the_lower_position():
    src = InMemorySource(["x", "x", "x"], lambda ts: np.ones((len(ts), 2)))
    assert src.search("x", k=2).positions == (0, 1)


def test_pool_source_keeps_pool_order_and_needs_an_embedder_for_new_texts():
    src = PoolSource("q?", ["a", "b", "c"], np.eye(3), np.array([0.0, 1.0, 0.5]))
    assert src.search("q?", k=2).texts == ("b", "c")
    assert src.search("q?").texts == ("a", "b", "c")
    with pytest.raises(InvalidParameterError, match="no embedder"):
        src.search("another query")


def test_pipeline_cost_reads_roles_and_flattens():
    cost = PipelineCost(calls={"judge": 2, "writer": 1}, attempts=4, retries=1)
    assert cost.llm_calls == 3 and cost.judge_calls == 2
    assert cost.to_dict()["writer_calls"] == 1 and cost.to_dict()["llm_calls"] == 3
    with pytest.raises(AttributeError):
        _ = cost.planner_calls


def test_llm_roles_share_wrapping_and_reject_unknown_roles():
    model = lambda p: "ok"  # noqa: E731
    roles = LLMRoles(("a", "b"), model, overrides={"b": None})
    assert roles["a"] is roles["b"] and len(list(roles.models())) == 1
    with pytest.raises(InvalidParameterError, match="unknown LLM role"):
        roles["c"]
    with pytest.raises(InvalidParameterError, match="llm_kwargs"):
        LLMRoles(("a",), model, llm_kwargs={"z": {}})
    with pytest.raises(InvalidParameterError, match="no LLM for role"):
        LLMRoles(("a",), None)["a"]


def test_run_context_meters_successes_failures_and_trace():
    def flaky(prompt: str) -> str:
        if prompt == "bad":
            raise ValueError("no")
        return "fine"

    ctx = RunContext(LLMRoles(("judge",), flaky, max_retries=0))
    assert asyncio.run(ctx.ask("judge", "good", stage="judge")).text == "fine"
    with pytest.raises(LLMError):
        asyncio.run(ctx.ask("judge", "bad"))
    cost = ctx.cost()
    assert cost.judge_calls == 1 and cost.failed_calls == 1 and cost.attempts == 2
    assert [e.error is None for e in ctx.trace] == [True, False]
    assert ctx.trace[0].reply == "fine" and ctx.trace[0].stage == "judge"


def test_test_pipeline_runs_on_the_core_source_with_two_searches():
    emb = CountingEmbedder()
    src = InMemorySource(TEXTS, emb, default_k=3)
    res = TwoSearch(lambda p: "answer: " + p, k=2, tag="t").run("a", src)
    assert isinstance(res, PipelineResult) and res.answer == "answer: a | t"
    assert [d.text for d in res.documents] == ["aaa", "aab"]
    assert [d.reason["stage"] for d in res.documents] == [1, 2]
    assert res.cost.searches == 2 and res.cost.writer_calls == 1
    searches = [e.parsed["query"] for e in res.trace if e.stage == "search"]
    assert searches == ["a", SECOND_QUERY_PREFIX + "aaa"]
    assert TwoSearch(None, k=2).run("a", src, generate=False).answer is None
    with pytest.raises(InvalidParameterError, match="no LLM"):
        TwoSearch(None).run("a", src)
    with pytest.raises(InvalidParameterError, match="CandidateSource"):
        TwoSearch(None).run("a", ["not", "a", "source"], generate=False)  # type: ignore[arg-type]


def test_pipeline_registry_knows_dfrag():
    assert "dfrag" in available_pipelines() and get_pipeline("dfrag").name == "dfrag"
    with pytest.raises(InvalidParameterError.__mro__[1], match="unknown pipeline"):
        get_pipeline("nope")
