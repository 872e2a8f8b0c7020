"""DF-RAG pipeline driven by scripted fake LLMs: every branch of λ selection."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from dfrag_fakes import ScriptedLLM, passages_of, role_of, score_reply
from diverse_core import sweep
from diverse_core.dfrag import DEFAULT_LAMBDAS, DFRAG, sweep_candidate_sets
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.llm import LLMError


def _ids(passages: list[str]) -> set[int]:
    return {int(p.split()[-1]) for p in passages}


def _run(llm: object, pool: tuple, **kw: object):
    texts, query, cands = pool
    return DFRAG(llm, k=4, backoff_base=0.001, **kw).run("Who? Where?", texts, query, cands)


def test_dfrag_groups_match_core_sweep(pool):
    texts, query, cands = pool
    groups = sweep_candidate_sets(query, cands, 4, DEFAULT_LAMBDAS)
    sw = sweep("gmmr", query, cands, 4, values=DEFAULT_LAMBDAS)
    np.testing.assert_array_equal(groups.indices, sw.indices)
    assert sum(len(v) for v in groups.groups.values()) == len(DEFAULT_LAMBDAS)
    assert len(groups.groups) == len({tuple(sorted(r)) for r in sw.indices.tolist()})


def test_dfrag_unique_best(pool):
    groups = sweep_candidate_sets(pool[1], pool[2], 4, DEFAULT_LAMBDAS)
    target = groups.key_of(0.5)
    assert len(groups.groups[target]) == 1  # only λ=0.5 yields this set
    llm = ScriptedLLM(lambda ps: score_reply(10 if tuple(sorted(_ids(ps))) == target else 3))
    res = _run(llm, pool)
    assert res.lambda_star == 0.5
    assert res.tied_lambdas == (0.5,)
    assert res.indices == groups.order[target]
    assert res.texts == tuple(f"chunk {i}" for i in res.indices)
    assert res.answer == "the answer"
    assert res.plan == ("Find A", "Find B") and res.plan_parsed
    assert res.lambda_scores[0.5] == 10 and res.lambda_scores[0.1] == 3
    assert res.parse_failures == ()
    assert res.short_answer == "draft"


@pytest.mark.parametrize(
    ("chunk", "expected"),
    [
        (2, 0.8),  # sets with chunk 2: λ 0.6..1.0 (5 tied) -> median 0.8
        (5, 0.9),  # sets with chunk 5: λ 0.5, 0.6, 0.9, 1.0 (4 tied) -> upper median 0.9
    ],
)
def test_dfrag_ties_resolved_by_upper_median(pool, chunk, expected):
    groups = sweep_candidate_sets(pool[1], pool[2], 4, DEFAULT_LAMBDAS)
    tied = tuple(lam for lam in DEFAULT_LAMBDAS if chunk in groups.key_of(lam))
    llm = ScriptedLLM(lambda ps: score_reply(9 if chunk in _ids(ps) else 2))
    res = _run(llm, pool)
    assert res.tied_lambdas == tied
    assert res.lambda_star == expected == tied[len(tied) // 2]


def test_dfrag_all_equal_scores_pick_upper_median_of_grid(pool):
    res = _run(ScriptedLLM(lambda ps: score_reply(4)), pool)
    assert res.tied_lambdas == DEFAULT_LAMBDAS
    assert res.lambda_star == 0.6


def test_dfrag_parse_failures_score_zero_and_are_flagged(pool):
    groups = sweep_candidate_sets(pool[1], pool[2], 4, DEFAULT_LAMBDAS)
    bad = groups.key_of(0.1)
    llm = ScriptedLLM(
        lambda ps: "I am not sure what you mean." if tuple(sorted(_ids(ps))) == bad else score_reply(5)
    )
    res = _run(llm, pool)
    assert res.parse_failures == groups.groups[bad] == (0.1, 0.2, 0.3)
    assert all(res.lambda_scores[lam] == 0 for lam in res.parse_failures)
    failed = [cs for cs in res.candidate_sets if cs.failed]
    assert len(failed) == 1 and failed[0].evaluation is not None and not failed[0].evaluation.parsed
    assert res.lambda_star == 0.7  # upper median of the seven λ scored 5


def test_dfrag_all_unparseable_falls_back_to_median_without_raising(pool):
    res = _run(ScriptedLLM(lambda ps: "**no idea**"), pool)
    assert res.parse_failures == DEFAULT_LAMBDAS
    assert res.lambda_star == 0.6


def test_dfrag_tolerant_parsing_of_messy_replies(pool):
    groups = sweep_candidate_sets(pool[1], pool[2], 4, DEFAULT_LAMBDAS)
    target = groups.key_of(0.4)

    def messy(ps: list[str]) -> str:
        if tuple(sorted(_ids(ps))) == target:  # no total, markdown, out-of-range score
            return "Sure, here is my evaluation:\n- **Step 1** - Score: 9\n- **Step 2** - Score: 4"
        return "Evaluation\n1. Score: 1\n2. Score: 1\n**Total Score:** 2\nThanks!"

    res = _run(ScriptedLLM(messy, plan="Here is the plan:\n**1.** Find A\n**2.** Find B\nDone."), pool)
    assert res.plan == ("Find A", "Find B")
    assert res.lambda_scores[0.4] == 9  # 5 (clipped) + 4
    assert res.lambda_star == 0.4


def test_dfrag_unparseable_plan_falls_back_to_question(pool):
    res = _run(ScriptedLLM(lambda ps: score_reply(3, 1), plan="I refuse."), pool)
    assert res.plan == ("Who? Where?",) and not res.plan_parsed


def test_dfrag_identical_sets_are_evaluated_once(pool):
    groups = sweep_candidate_sets(pool[1], pool[2], 4, DEFAULT_LAMBDAS)
    llm = ScriptedLLM(lambda ps: score_reply(3))
    res = _run(llm, pool)
    assert llm.calls == {"planner": 1, "evaluator": len(groups.groups), "generator": 1}
    assert len(groups.groups) < len(DEFAULT_LAMBDAS)
    assert res.n_distinct_sets == len(groups.groups)
    assert res.cost.evaluator_calls == len(groups.groups)
    assert res.cost.llm_calls == len(groups.groups) + 2
    assert res.cost.prompt_tokens == sum(len(p.split()) for p in llm.prompts)
    assert res.cost.completion_tokens == 3 * res.cost.llm_calls
    assert res.cost.wall_time > 0


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_dfrag_concurrency_limit_is_respected(pool, limit):
    llm = ScriptedLLM(lambda ps: score_reply(3), delay=0.02)
    _run(llm, pool, max_concurrency=limit)
    assert llm.peak == limit  # reached (6 evaluations) but never exceeded


def test_dfrag_binary_search_sampling(pool):
    groups = sweep_candidate_sets(pool[1], pool[2], 4, DEFAULT_LAMBDAS)
    peak = 0.7
    llm = ScriptedLLM(
        lambda ps: score_reply(
            max(0, 10 - round(10 * min(abs(lam - peak) for lam in groups.groups[tuple(sorted(_ids(ps)))])))
        )
    )
    res = _run(llm, pool, sampling="binary")
    assert res.sampling == "binary"
    assert res.lambda_star in (0.7, 0.8)  # 0.7 and 0.8 share one set
    assert groups.key_of(res.lambda_star) == groups.key_of(peak)
    assert llm.calls["evaluator"] < len(groups.groups)
    assert any(v is None for v in res.lambda_scores.values())
    assert sum(cs.score is not None for cs in res.candidate_sets) == llm.calls["evaluator"]


def test_dfrag_incremental_context_reaches_generator(pool):
    llm = ScriptedLLM(lambda ps: score_reply(6))
    res = _run(llm, pool, incremental_context=True)
    gen = [p for p in llm.prompts if role_of(p) == "generator"][0]
    assert "1) Find A" in gen and "Draft answer from that check: draft" in gen
    assert all(f'"{t}"' in gen for t in res.texts)
    plain = ScriptedLLM(lambda ps: score_reply(6))
    _run(plain, pool)
    gen_plain = [p for p in plain.prompts if role_of(p) == "generator"][0]
    assert "Find A" not in gen_plain


def test_dfrag_retrieval_only_skips_generator(pool):
    texts, query, cands = pool
    llm = ScriptedLLM(lambda ps: score_reply(6))
    res = DFRAG(llm, k=4).run("q?", texts, query, cands, generate=False)
    assert res.answer is None and llm.calls["generator"] == 0


def test_dfrag_fetch_k_restricts_pool(pool):
    texts, query, cands = pool
    cos = (cands @ query) / np.linalg.norm(cands, axis=1)
    top = set(np.argsort(-cos)[:6].tolist())
    llm = ScriptedLLM(lambda ps: score_reply(3))
    res = DFRAG(llm, k=3, fetch_k=6).run("q?", texts, query, cands)
    assert all(set(cs.indices) <= top for cs in res.candidate_sets)


def test_dfrag_evaluator_prompt_has_plan_and_chunks(pool):
    llm = ScriptedLLM(lambda ps: score_reply(3))
    _run(llm, pool)
    ev = [p for p in llm.prompts if role_of(p) == "evaluator"]
    assert all("1) Find A\n2) Find B" in p and "Total Score" in p for p in ev)
    assert all(len(passages_of(p)) == 4 for p in ev)


def test_dfrag_evaluator_errors_score_zero_or_raise(pool):
    class Flaky(ScriptedLLM):
        def complete(self, prompt, **kw):
            if role_of(prompt) == "evaluator" and "chunk 10" in prompt.rsplit("Passages:", 1)[1]:
                raise ValueError("model crashed")  # not transient: no retry
            return super().complete(prompt, **kw)

    res = _run(Flaky(lambda ps: score_reply(5)), pool)
    assert res.parse_failures == (0.1, 0.2, 0.3)
    assert res.cost.failed_calls == 1
    bad = [cs for cs in res.candidate_sets if cs.error]
    assert len(bad) == 1 and "model crashed" in bad[0].error
    with pytest.raises(LLMError, match="model crashed"):
        _run(Flaky(lambda ps: score_reply(5)), pool, on_evaluator_error="raise")


def test_dfrag_planner_failure_raises(pool):
    def broken(prompt: str) -> str:
        raise ValueError("no planner today")

    with pytest.raises(LLMError, match="no planner today"):
        _run(broken, pool)


def test_dfrag_timeout_then_retry_succeeds(pool):
    class SlowFirst(ScriptedLLM):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.seen: set[str] = set()

        async def acomplete(self, prompt, **kw):
            if role_of(prompt) == "evaluator" and prompt not in self.seen:
                self.seen.add(prompt)
                await asyncio.sleep(5)  # first attempt of every evaluation times out
            return self.complete(prompt, **kw)

    llm = SlowFirst(lambda ps: score_reply(4))
    res = _run(llm, pool, timeout=0.05, max_retries=2)
    assert res.parse_failures == ()
    assert res.cost.retries == res.n_distinct_sets
    assert res.cost.failed_calls == 0


def test_dfrag_run_inside_running_event_loop(pool):
    texts, query, cands = pool

    async def main():
        pipe = DFRAG(ScriptedLLM(lambda ps: score_reply(5)), k=3)
        sync_res = pipe.run("q?", texts, query, cands)  # must not clash with this loop
        async_res = await pipe.arun("q?", texts, query, cands)
        return sync_res, async_res

    a, b = asyncio.run(main())
    assert a.lambda_star == b.lambda_star and a.indices == b.indices


def test_dfrag_plain_callable_and_sync_only_llm(pool):
    texts, query, cands = pool

    def fn(prompt: str) -> str:
        return {"planner": "1) step", "evaluator": "1. Score: 2\nTotal Score: 2"}.get(role_of(prompt), "ans")

    res = DFRAG(fn, k=3).run("q?", texts, query, cands)
    assert res.answer == "ans" and res.lambda_star == 0.6


def test_dfrag_result_to_dict_is_plain(pool):
    import json

    res = _run(ScriptedLLM(lambda ps: score_reply(5)), pool)
    d = res.to_dict()
    json.dumps(d)
    assert set(d["lambda_scores"]) == {f"{v:g}" for v in DEFAULT_LAMBDAS}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"lambdas": [0.5, 0.2]}, "strictly increasing"),
        ({"lambdas": [0.1, 1.5]}, r"\[0, 1\]"),
        ({"lambdas": []}, "at least one"),
        ({"k": 0}, "k must be a positive integer"),
        ({"fetch_k": -3}, "fetch_k"),
        ({"sampling": "random"}, "sampling"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"score_from": "avg"}, "score_from"),
        ({"on_evaluator_error": "ignore"}, "on_evaluator_error"),
        ({"llm_kwargs": {"judge": {}}}, "llm_kwargs"),
        ({"timeout": -1}, "timeout"),
    ],
)
def test_dfrag_bad_parameters_raise_typed_errors(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        DFRAG(lambda p: "x", **kw)


def test_dfrag_bad_inputs(pool):
    texts, query, cands = pool
    pipe = DFRAG(ScriptedLLM(lambda ps: score_reply(5)), k=3)
    with pytest.raises(DimensionMismatchError, match="texts has 11 entries"):
        pipe.run("q?", texts[:-1], query, cands)
    with pytest.raises(InvalidParameterError, match="question"):
        pipe.run("  ", texts, query, cands)
    with pytest.raises(DimensionMismatchError):
        pipe.run("q?", texts, query[:5], cands)
    with pytest.raises(TypeError, match="llm must have a complete"):
        DFRAG(object())
