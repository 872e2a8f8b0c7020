"""The Vendi-RAG loop with scripted judges: s trajectories, stopping, final choice, failures,
call counts, tokens, and the queries that reach the source."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from diverse_core import select
from diverse_core.errors import InvalidParameterError
from diverse_core.llm.errors import LLMError, LLMTimeoutError
from diverse_core.metrics import mean_pairwise_similarity, vendi_score
from diverse_core.pipelines import get_pipeline
from diverse_core.pipelines.vendirag import VendiRAG, VendiRAGResult
from vendi_fakes import (
    COMPLETION_TOKENS,
    CORPUS,
    PROMPT_TOKENS,
    CountingSource,
    ScriptedVendiLLM,
    hash_embed,
)

Q = "Which subject links passage 3 and passage 10?"


def run(llm: ScriptedVendiLLM, source: CountingSource, **kw: object) -> VendiRAGResult:
    kw.setdefault("max_retries", 0)
    res = VendiRAG(llm, **kw).run(Q, source)
    assert isinstance(res, VendiRAGResult)
    return res


# --------------------------------------------------------------------------- s trajectories
def test_paper_rule_trajectory_and_stop(source):
    # judge scores 2, 5, 8 (each rating), then 9/9/8 (mean 8.67 >= 8.5): stop in iteration 4
    res = run(ScriptedVendiLLM([2, 5, 8, '{"coherence": 9, "relevance": 9, "query_alignment": 8}']), source)
    assert res.s_trajectory == pytest.approx((0.8, 0.8, 0.5, 0.2), abs=1e-12)
    assert res.quality_trajectory == pytest.approx((0.2, 0.5, 0.8, 26 / 30), abs=1e-12)
    assert res.stop_reason == "threshold" and res.stopped_early and res.n_iterations == 4
    assert res.final_iteration == 4 and res.answer == "answer-4" and res.quality == pytest.approx(26 / 30)
    assert [r.s_next for r in res.iterations] == pytest.approx([0.8, 0.5, 0.2, None], abs=1e-12)
    assert res.ok, res.warnings


def test_stop_test_is_mean_at_least_threshold(source):
    # 8/9/8 has mean 8.33 < 8.5: no stop; 9/9/8 stops
    res = run(ScriptedVendiLLM(['{"coherence": 8, "relevance": 9, "query_alignment": 8}', 10]), source)
    assert res.n_iterations == 2 and res.stop_reason == "threshold"
    # a threshold the quality meets exactly stops too
    res = run(ScriptedVendiLLM([5, 7]), CountingSource(CORPUS, embedder=hash_embed), threshold=0.7)
    assert res.n_iterations == 2 and res.quality == pytest.approx(0.7)


def test_relative_rule_trajectory_rising_scores(source):
    # the package's rule: s' = 0.3 s + 0.7 clip(1 - Q / best); rising scores are each the best -> target 0
    res = run(ScriptedVendiLLM([2, 5, 8, 9]), source, s_update="relative")
    assert res.s_trajectory == pytest.approx((0.8, 0.24, 0.072, 0.0216), abs=1e-12)
    assert res.stop_reason == "threshold"


def test_relative_rule_trajectory_falling_scores(source):
    res = run(ScriptedVendiLLM([8, 4, 6, 2, 2]), source, s_update="relative")
    # Q: .8 (best .8, target 0), .4 (target .5), .6 (target .25), .2 (target .75)
    assert res.s_trajectory == pytest.approx((0.8, 0.24, 0.422, 0.3016, 0.61548), abs=1e-12)
    assert res.stop_reason == "max_iterations" and res.n_iterations == 5


def test_fixed_rule_keeps_s(source):
    res = run(ScriptedVendiLLM([2, 5, 8, 9]), source, s_update="fixed", initial_s=0.6)
    assert res.s_trajectory == (0.6, 0.6, 0.6, 0.6)


def test_s_reaches_the_selection(source):
    res = run(ScriptedVendiLLM([2, 5, 8, 9]), source, k=4)
    for rec in res.iterations:
        found = source.search(rec.query, 50)
        sel = select("vendi", found.query_embedding, found.embeddings, 4, s=rec.s)
        assert rec.chunk_ids == tuple(found.ids[i] for i in sel.indices)


# --------------------------------------------------------------------------- cap, final, judge off
def test_iteration_cap_and_call_counts(source):
    llm = ScriptedVendiLLM([5])
    res = run(llm, source, max_iterations=5)
    assert res.n_iterations == 5 and res.stop_reason == "max_iterations"
    assert [r.calls for r in res.iterations] == [4, 4, 4, 4, 3]  # 3 + a rewrite while continuing
    assert res.cost.calls == {"reasoner": 5, "answerer": 5, "judge": 5, "rewriter": 4} == llm.calls
    assert res.cost.llm_calls == 19 and res.cost.searches == 5
    res2 = run(ScriptedVendiLLM([5]), CountingSource(CORPUS, embedder=hash_embed), max_iterations=2)
    assert res2.n_iterations == 2 and res2.cost.llm_calls == 7


def test_token_accounting(source):
    res = run(ScriptedVendiLLM([5, 6, 9]), source)
    calls = res.cost.llm_calls
    assert calls == 4 + 4 + 3
    assert res.cost.prompt_tokens == PROMPT_TOKENS * calls
    assert res.cost.completion_tokens == COMPLETION_TOKENS * calls
    assert sum(r.prompt_tokens for r in res.iterations) == res.cost.prompt_tokens
    assert [r.completion_tokens for r in res.iterations] == [8, 8, 6]


def test_final_best_vs_last(source):
    scores = [5, 7, 6]
    best = run(ScriptedVendiLLM(scores), source, max_iterations=3)
    last = run(ScriptedVendiLLM(scores), CountingSource(CORPUS, embedder=hash_embed), max_iterations=3,
               final="last")
    assert best.final_iteration == 2 and best.answer == "answer-2" and best.quality == pytest.approx(0.7)
    assert last.final_iteration == 3 and last.answer == "answer-3" and last.quality == pytest.approx(0.6)
    assert [d.id for d in best.documents] == list(best.iterations[1].chunk_ids)
    assert [d.id for d in last.documents] == list(last.iterations[2].chunk_ids)
    assert best.documents[0].reason["iteration"] == 2 and best.documents[0].score == pytest.approx(0.7)
    # ties go to the later iteration
    tie = run(ScriptedVendiLLM([7, 7, 5]), CountingSource(CORPUS, embedder=hash_embed), max_iterations=3)
    assert tie.final_iteration == 2


def test_without_judge_runs_all_iterations_at_fixed_s(source):
    llm = ScriptedVendiLLM([10])
    res = run(llm, source, use_judge=False, max_iterations=3)
    assert res.n_iterations == 3 and res.s_trajectory == (0.8, 0.8, 0.8)
    assert llm.calls == {"reasoner": 3, "answerer": 3, "judge": 0, "rewriter": 2}
    assert res.final_iteration == 3 and res.quality is None and res.ok


# --------------------------------------------------------------------------- queries reach the source
def test_rewritten_queries_reach_the_source(source):
    llm = ScriptedVendiLLM([3, 4, 9], rewrites=lambda n: f'New query: "detail {n} of subject {n}"')
    res = run(llm, source)
    assert source.queries == [Q, "detail 1 of subject 1", "detail 2 of subject 2"]
    assert res.queries == tuple(source.queries) and res.cost.searches == 3
    assert [r.next_query for r in res.iterations] == ["detail 1 of subject 1", "detail 2 of subject 2", None]
    # the reasoning call sees the current query; the answer and judge calls see the original question
    reasoning_prompts = [p for role, p in llm.prompts if role == "reasoner"]
    assert "Question: detail 2 of subject 2" in reasoning_prompts[2]
    assert all(f"Question: {Q}" in p for role, p in llm.prompts if role in {"answerer", "judge"})
    # the answer call carries every reasoning note so far
    last_answer = [p for role, p in llm.prompts if role == "answerer"][-1]
    assert all(f"reasoning step of round {n}" in last_answer for n in (1, 2, 3))


def test_rewrite_off_searches_the_question(source):
    llm = ScriptedVendiLLM([3, 4, 9])
    res = run(llm, source, rewrite=False)
    assert source.queries == [Q, Q, Q] and llm.calls["rewriter"] == 0
    assert res.cost.llm_calls == 9


def test_empty_rewrite_keeps_the_query(source):
    res = run(ScriptedVendiLLM([3, 9], rewrites=lambda n: "  \n"), source)
    assert source.queries == [Q, Q]
    assert any("held no query" in w for w in res.warnings)


# --------------------------------------------------------------------------- chunks and trace
def test_trace_records_set_statistics(source):
    res = run(ScriptedVendiLLM([3, 9]), source, k=4)
    for rec in res.iterations:
        emb = hash_embed(rec.texts)
        assert len(rec.chunk_ids) == 4 and rec.texts == tuple(CORPUS[int(i)] for i in rec.chunk_ids)
        assert rec.vendi_score == pytest.approx(vendi_score(emb), abs=1e-5)
        assert rec.mean_similarity == pytest.approx(mean_pairwise_similarity(emb), abs=1e-5)
        assert rec.reasoning.startswith("1) reasoning") and rec.answer.startswith("answer-")
        assert set(rec.scores) == {"coherence", "relevance", "query_alignment"}
    stages = [e.stage for e in res.trace]
    assert stages.count("iteration") == 2 and stages.count("search") == 2
    judge_events = res.llm_calls("judge")
    assert judge_events[0].parsed["quality"] == pytest.approx(0.3) and judge_events[0].parsed["iteration"] == 1
    d = res.to_dict()
    assert d["iterations"][0]["s"] == 0.8 and d["final_iteration"] == 2


def test_exclude_seen_and_union(source):
    res = run(ScriptedVendiLLM([3, 4, 5]), source, max_iterations=3, exclude_seen=True, rewrite=False,
              return_documents="union", k=3)
    ids = [set(r.chunk_ids) for r in res.iterations]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert [d.id for d in res.documents] == [i for r in res.iterations for i in r.chunk_ids]
    assert [d.rank for d in res.documents] == list(range(9))
    assert res.documents[4].reason["iterations"] == [2]
    # without exclusion the same query finds overlapping sets; the union lists each chunk once
    res2 = run(ScriptedVendiLLM([3, 4, 5]), CountingSource(CORPUS, embedder=hash_embed), max_iterations=3,
               rewrite=False, return_documents="union", k=3, s_update="fixed")
    assert res2.iterations[0].chunk_ids == res2.iterations[1].chunk_ids
    assert len(res2.documents) == 3 and res2.documents[0].reason["iterations"] == [1, 2, 3]


def test_generate_false_still_runs_the_loop(source):
    llm = ScriptedVendiLLM([3, 9])
    res = VendiRAG(llm, max_retries=0).run(Q, source, generate=False)
    assert res.answer is None and res.n_iterations == 2 and llm.calls["judge"] == 2
    assert res.iterations[-1].answer == "answer-2" and len(res.documents) == 5


def test_async_matches_sync(source):
    a = asyncio.run(VendiRAG(ScriptedVendiLLM([2, 5, 9]), max_retries=0).arun(Q, source))
    b = VendiRAG(ScriptedVendiLLM([2, 5, 9]), max_retries=0).run(Q, source)
    assert a.s_trajectory == b.s_trajectory and [d.id for d in a.documents] == [d.id for d in b.documents]


# --------------------------------------------------------------------------- judge output and failures
def test_unparseable_judge_retried_once_then_unjudged(source):
    llm = ScriptedVendiLLM(["a fine answer, 9/10", "still no json", 2, 9])
    res = run(llm, source)
    first = res.iterations[0]
    assert first.quality is None and first.judge_calls == 2 and first.calls == 5
    assert res.s_trajectory == pytest.approx((0.8, 0.8, 0.8), abs=1e-12)  # s unchanged after the failure
    assert res.n_iterations == 3 and res.final_iteration == 3
    assert any("iteration 1: not judged" in w for w in res.warnings)
    assert len(first.failures) == 2 and not res.ok
    retry_prompt = [p for role, p in llm.prompts if role == "judge"][1]
    assert "could not be read" in retry_prompt


def test_unparseable_then_readable_judge(source):
    res = run(ScriptedVendiLLM(["no idea", 9]), source)
    assert res.n_iterations == 1 and res.quality == pytest.approx(0.9)
    assert res.iterations[0].judge_calls == 2 and res.cost.llm_calls == 4
    assert "retry was read" in res.iterations[0].notes[0]
    assert res.warnings == ("iteration 1: judge reply 1 unreadable: no JSON object with keys "
                            "['coherence', 'relevance', 'query_alignment']",)


def test_unjudged_cannot_stop_and_best_ignores_it(source):
    res = run(ScriptedVendiLLM(["nothing", "nothing", "nothing", "nothing"]), source, max_iterations=2)
    assert res.quality_trajectory == (None, None) and res.stop_reason == "max_iterations"
    assert res.final_iteration == 2
    assert any("no iteration was judged" in w for w in res.warnings)


def test_out_of_range_scores_clipped_and_flagged(source):
    res = run(ScriptedVendiLLM(['{"coherence": 14, "relevance": 0, "query_alignment": 9}', 9]), source)
    assert res.iterations[0].scores == {"coherence": 10.0, "relevance": 1.0, "query_alignment": 9.0}
    assert res.iterations[0].quality == pytest.approx(20 / 30)
    assert sum("clipped" in w for w in res.warnings) == 2


def test_judge_timeouts_bounded_by_retry_policy(source):
    # every judge attempt times out: 1 + max_retries attempts per call, then unjudged
    def fail(role, n):
        return TimeoutError("slow judge") if role == "judge" else None

    llm = ScriptedVendiLLM([9], fail=fail)
    res = VendiRAG(llm, max_retries=2, backoff_base=0.0, max_iterations=2).run(Q, source)
    assert llm.attempts["judge"] == 2 * 3 and llm.calls["judge"] == 0
    assert res.cost.failed_calls == 2 and res.cost.retries == 4
    assert res.quality_trajectory == (None, None) and res.s_trajectory == (0.8, 0.8)
    assert any("judge call failed: LLMTimeoutError" in w for w in res.warnings)


def test_real_timeout_then_recovery(source):
    class Slow(ScriptedVendiLLM):
        async def acomplete(self, prompt, **kw):
            if self.attempts["judge"] == 0 and prompt.rstrip().endswith("Ratings (JSON):"):
                self.attempts["judge"] += 1
                await asyncio.sleep(5)
            return self.complete(prompt, **kw)

    llm = Slow([9])
    res = VendiRAG(llm, max_retries=1, backoff_base=0.0, timeout=0.05).run(Q, source)
    assert res.n_iterations == 1 and res.quality == pytest.approx(0.9)
    assert res.cost.retries == 1 and res.cost.failed_calls == 0


def test_reasoning_error_stops_loop_with_best_so_far(source):
    def fail(role, n):
        return ValueError("bad request") if role == "reasoner" and n == 2 else None

    res = run(ScriptedVendiLLM([6], fail=fail), source)
    assert res.stop_reason == "llm_error" and res.n_iterations == 2
    assert res.final_iteration == 1 and res.answer == "answer-1"
    assert res.iterations[1].answer is None and res.cost.failed_calls == 1
    assert any("reasoner call failed" in w for w in res.warnings)
    with pytest.raises(LLMError, match="bad request"):
        run(ScriptedVendiLLM([6], fail=fail), CountingSource(CORPUS, embedder=hash_embed),
            on_llm_error="raise")


def test_first_iteration_failure_raises(source):
    def fail(role, n):
        return TimeoutError("down") if role == "answerer" else None

    with pytest.raises(LLMTimeoutError):
        VendiRAG(ScriptedVendiLLM([9], fail=fail), max_retries=1, backoff_base=0.0).run(Q, source)


def test_rewrite_failure_keeps_query(source):
    def fail(role, n):
        return ValueError("no") if role == "rewriter" else None

    res = run(ScriptedVendiLLM([3, 9], fail=fail), source)
    assert source.queries == [Q, Q] and res.n_iterations == 2
    assert any("rewriter call failed" in w for w in res.warnings)


# --------------------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"initial_s": 1.5}, "initial_s"),
        ({"threshold": -0.1}, "threshold"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"s_update": "ema"}, "s_update"),
        ({"final": "first"}, "final"),
        ({"rewrite": "yes"}, "rewrite"),
        ({"objective": "other"}, "objective"),
        ({"return_documents": "all"}, "return_documents"),
        ({"on_llm_error": "ignore"}, "on_llm_error"),
        ({"fetch_k": 0}, "fetch_k"),
        ({"k": 0}, "k"),
    ],
)
def test_bad_options_name_the_parameter(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        VendiRAG(ScriptedVendiLLM([9]), **kw)


def test_registry_and_llm_required():
    assert get_pipeline("vendirag") is VendiRAG
    with pytest.raises(InvalidParameterError, match="needs an LLM"):
        VendiRAG(None)


def test_fetch_k_limits_the_pool(source):
    res = run(ScriptedVendiLLM([9]), source, fetch_k=6, k=5)
    search = next(e for e in res.trace if e.stage == "search")
    assert search.parsed["k"] == 6 and len(search.parsed["ids"]) == 6
    assert np.isin(res.iterations[0].chunk_ids, search.parsed["ids"]).all()


def test_a_reply_equal_to_the_prompt_example_is_still_read(source):
    # the prompt is a parser source (so echoing models are not scored), but a reply that only
    # holds the same ratings as the prompt's example is the model's own verdict
    res = run(ScriptedVendiLLM(['{"coherence": 4, "relevance": 6, "query_alignment": 5}', 9]), source)
    assert res.quality_trajectory == pytest.approx((0.5, 0.9)) and res.ok


def test_exclude_seen_with_an_exhausted_pool_warns(source):
    res = run(ScriptedVendiLLM([3]), source, fetch_k=5, k=5, exclude_seen=True, rewrite=False,
              max_iterations=2)
    assert set(res.iterations[0].chunk_ids) == set(res.iterations[1].chunk_ids)
    assert any("exclude_seen ignored" in w for w in res.warnings)
