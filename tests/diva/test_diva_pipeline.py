"""The DIVA pipeline end to end with scripted fake LLMs: every branch, call counts, failures,
the union and pruning on hand-built vectors, trace and cost."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from diva_fakes import I2018, I2019, QUESTION, ScriptedDiva, hand_source, vector_embedder
from diverse_core.errors import InvalidParameterError
from diverse_core.llm.errors import LLMError, LLMTimeoutError
from diverse_core.pipelines import InMemorySource, get_pipeline
from diverse_core.pipelines.diva import DIVA, DivaPrompts, DIVAResult
from hypothesis import given, settings
from hypothesis import strategies as st

C = 0.5 / math.sqrt(0.82)  # mean cosine of p1 (and of p3) to the two interpretations


def _diva(llm: object, **kw: object) -> DIVA:
    opts: dict[str, object] = {"k": 3, "per_interpretation_k": 3, "max_retries": 0}
    opts.update(kw)
    return DIVA(llm, **opts)  # type: ignore[arg-type]


def _no(interp: str, prompt: str) -> str:
    return "The passages say nothing about it.\nVerdict: No"


def _yes_2018_only(interp: str, prompt: str) -> str:
    return "Verdict: Yes" if "2018" in interp else "Verdict: No"


# ---------------------------------------------------------------------------- routes and calls
def test_useful_route_known_documents_calls_and_answer() -> None:
    llm = ScriptedDiva()
    res = _diva(llm).run(QUESTION, hand_source())
    assert isinstance(res, DIVAResult) and res.pipeline == "diva"
    assert res.interpretations == (I2018, I2019) and res.interpretations_source == "generated"
    assert res.ambiguity_kinds == ("Time",) and res.ambiguity_reason == "the year is not given."
    # union: interpretation 2018's hits, then 2019's new ones; p5 is never retrieved
    assert res.hits == (("p0", "p1", "p4"), ("p2", "p3", "p4"))
    assert res.union == ("p0", "p1", "p4", "p2", "p3")
    # pruning by mean cosine: p4 (serves both) first; p1 and p3 tie, the earlier in the union wins
    assert [d.id for d in res.documents] == ["p4", "p1", "p3"]
    np.testing.assert_allclose([d.score for d in res.documents], [math.sqrt(0.5), C, C])
    np.testing.assert_allclose([res.prune_scores[i] for i in res.union], [0.5, C, math.sqrt(0.5), 0.5, C])
    assert [d.reason["interpretations"] for d in res.documents] == [[I2018, I2019], [I2018], [I2019]]
    assert [d.reason["prune_score"] for d in res.documents] == [d.score for d in res.documents]
    assert res.verdicts == (True, True) and res.usefulness == "Useful" and res.route == "passages"
    assert res.qa_pairs == ((I2018, "Ann"), (I2019, "Bob"))
    assert res.answer == "It depends on the year: Ann won in 2018 and Bob in 2019."
    assert res.ok and res.warnings == ()
    assert dict(res.cost.calls) == {"interpreter": 2, "verifier": 2, "generator": 2}
    assert res.cost.llm_calls == llm.total == 2 + 2 + 2
    assert res.cost.searches == 1


def test_partial_useful_answers_with_the_passages() -> None:
    llm = ScriptedDiva(verdict=_yes_2018_only)
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.verdicts == (True, False) and res.usefulness == "PartialUseful"
    assert res.route == "passages" and llm.calls["extract"] == 1 and llm.calls["closed_book"] == 0
    assert res.cost.llm_calls == 6


def test_useless_answers_closed_book_in_one_call() -> None:
    llm = ScriptedDiva(verdict=_no)
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.verdicts == (False, False) and res.usefulness == "Useless" and res.route == "closed_book"
    assert res.answer == "From memory: it depends on the year." and res.qa_pairs == ()
    assert llm.calls["extract"] == llm.calls["answer"] == 0
    assert dict(res.cost.calls) == {"interpreter": 2, "verifier": 2, "generator": 1}
    closed = [p for p in llm.prompts if p.startswith("The question below is ambiguous")]
    assert len(closed) == 1 and not any(t in closed[0] for t in (d.text for d in res.documents))


@pytest.mark.parametrize("m", [1, 3, 5])
@pytest.mark.parametrize(("verdict", "route", "generator_calls"),
                         [(lambda i, p: "Verdict: Yes", "passages", 2), (_no, "closed_book", 1)])
def test_call_counts_per_route(m, verdict, route, generator_calls) -> None:  # type: ignore[no-untyped-def]
    rewrite = "\n".join(f"{j}: Who won the cup in {2014 + j}?" for j in range(1, m + 1))
    llm = ScriptedDiva(rewrite=rewrite, verdict=verdict)
    res = _diva(llm).run(QUESTION, hand_source())
    assert len(res.interpretations) == m and res.route == route
    assert res.cost.llm_calls == llm.total == 2 + m + generator_calls
    assert res.cost.verifier_calls == m and len(res.verdicts) == m


def test_interpretations_are_capped_at_max_interpretations() -> None:
    rewrite = "\n".join(f"{j}. Who won the cup in {2010 + j}?" for j in range(1, 8))
    llm = ScriptedDiva(rewrite=rewrite)
    res = _diva(llm, max_interpretations=4).run(QUESTION, hand_source())
    assert res.interpretations == tuple(f"Who won the cup in {2010 + j}?" for j in range(1, 5))
    assert "at most 4 questions" in next(p for p in llm.prompts if p.rstrip().endswith("questions:"))
    assert res.cost.llm_calls == 2 + 4 + 2
    rewrite_event = next(e for e in res.trace if e.stage == "rewrite")
    assert "capped at 4" in rewrite_event.notes


@pytest.mark.parametrize("reply", ["", "I am not sure how to read this question."])
def test_zero_or_unparseable_interpretations_fall_back_to_the_question(reply: str) -> None:
    llm = ScriptedDiva(rewrite=reply)
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.interpretations == (QUESTION,) and res.interpretations_source == "fallback"
    assert not res.ok and any("original question alone" in w for w in res.warnings)
    assert res.cost.llm_calls == 2 + 1 + 2
    # one interpretation = the question: the kept set is the question's nearest passages
    src = hand_source()
    assert [d.id for d in res.documents] == list(src.search(QUESTION, 3).ids)


def test_unreadable_verdicts_count_as_yes_and_are_flagged() -> None:
    llm = ScriptedDiva(verdict=lambda i, p: "Hard to say." if "2019" in i else "Verdict: No")
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.verdicts == (False, None) and res.usefulness == "PartialUseful" and res.route == "passages"
    assert any("no yes/no verdict" in w and "[1]" in w for w in res.warnings)
    verify = [e for e in res.trace if e.stage == "verify"]
    assert {e.parsed["interpretation"]: e.parsed["verdict"] for e in verify} == {0: False, 1: None}


def test_a_quoted_passage_cannot_decide_the_verdict() -> None:
    llm = ScriptedDiva(verdict=lambda i, p: 'Passage [1] reads "Ann won in 2018 and Bob in 2019."\nVerdict: No')
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.verdicts == (False, False) and res.route == "closed_book"


# ---------------------------------------------------------------------------- failures
def test_transient_failures_are_retried_and_counted() -> None:
    llm = ScriptedDiva(fail={"ambiguity": 2, "verify": 1})
    res = _diva(llm, max_retries=2, backoff_base=0.0).run(QUESTION, hand_source())
    assert res.usefulness == "Useful" and res.ok
    assert res.cost.retries == 3 and res.cost.failed_calls == 0
    assert res.cost.attempts == res.cost.llm_calls + 3
    assert next(e for e in res.trace if e.stage == "ambiguity").attempts == 3


def test_a_failed_verification_counts_as_yes_and_is_flagged() -> None:
    llm = ScriptedDiva(fail={"verify": -1})
    res = _diva(llm, max_retries=1, backoff_base=0.0).run(QUESTION, hand_source())
    assert res.verdicts == (None, None) and res.usefulness == "Useful" and res.route == "passages"
    assert res.cost.failed_calls == 2 and res.cost.verifier_calls == 0
    assert llm.attempts["verify"] == 4  # (1 + max_retries) per interpretation, no more
    assert any("failed after their retries" in w for w in res.warnings)
    assert all(e.error for e in res.trace if e.stage == "verify")


def test_a_failed_verification_raises_when_asked_to() -> None:
    llm = ScriptedDiva(fail={"verify": -1})
    with pytest.raises(LLMError):
        _diva(llm, max_retries=1, backoff_base=0.0, on_verifier_error="raise").run(QUESTION, hand_source())


@pytest.mark.parametrize("stage", ["rewrite", "answer", "closed_book"])
def test_timeouts_are_bounded_by_the_retry_policy(stage: str) -> None:
    llm = ScriptedDiva(hang=(stage,), hang_s=5.0, verdict=_no if stage == "closed_book" else _yes_2018_only)
    pipe = _diva(llm, timeout=0.05, max_retries=1, backoff_base=0.0)
    with pytest.raises(LLMTimeoutError):
        pipe.run(QUESTION, hand_source())
    assert llm.started[stage] == 2  # 1 + max_retries attempts, no more
    assert llm.calls[stage] == 0  # every attempt timed out before replying
    pipe.close()


def test_interpreter_errors_raise_after_the_retries() -> None:
    llm = ScriptedDiva(fail={"rewrite": -1})
    with pytest.raises(LLMError):
        _diva(llm, max_retries=2, backoff_base=0.0).run(QUESTION, hand_source())
    assert llm.attempts["rewrite"] == 3


# ---------------------------------------------------------------------------- retrieval only
def test_retrieval_only_makes_the_two_interpretation_calls() -> None:
    llm = ScriptedDiva()
    res = _diva(llm).run(QUESTION, hand_source(), generate=False)
    assert res.answer is None and res.route is None and res.usefulness is None and res.verdicts == ()
    assert dict(res.cost.calls) == {"interpreter": 2, "verifier": 0, "generator": 0}
    assert [d.id for d in res.documents] == ["p4", "p1", "p3"]


def test_verify_in_retrieval_adds_the_verification_calls() -> None:
    llm = ScriptedDiva(verdict=_yes_2018_only)
    res = _diva(llm, verify_in_retrieval=True).run(QUESTION, hand_source(), generate=False)
    assert res.answer is None and res.route is None and res.usefulness == "PartialUseful"
    assert res.cost.llm_calls == 2 + 2


def test_given_interpretations_need_no_llm() -> None:
    res = _diva(None).run(QUESTION, hand_source(), generate=False, interpretations=[I2018, I2019])
    assert res.interpretations_source == "given" and res.cost.llm_calls == 0
    assert [d.id for d in res.documents] == ["p4", "p1", "p3"]
    with pytest.raises(InvalidParameterError, match="interpretations="):
        _diva(None).run(QUESTION, hand_source(), generate=False)
    with pytest.raises(InvalidParameterError, match="no LLM"):
        _diva(None).run(QUESTION, hand_source(), interpretations=[I2018])


def test_given_interpretations_with_an_llm_skip_the_interpretation_calls() -> None:
    llm = ScriptedDiva()
    res = _diva(llm).run(QUESTION, hand_source(), interpretations=[I2018, I2019, "Who won the cup in 2020?"])
    assert llm.calls["ambiguity"] == llm.calls["rewrite"] == 0
    assert res.cost.llm_calls == 3 + 2 and len(res.verdicts) == 3


# ---------------------------------------------------------------------------- search modes
def test_pool_versus_per_interpretation_search_known_results() -> None:
    question = "Who won the cup (2018)?"  # its 3 nearest: p0, p1, p4 - no 2019-only passage
    given = [I2018, I2019]
    pool = _diva(None).run(question, hand_source(default_k=3), generate=False, interpretations=given)
    assert set(pool.union) == {"p0", "p1", "p4"}
    assert [d.id for d in pool.documents] == ["p4", "p1", "p0"] and pool.cost.searches == 1
    own = _diva(None, search="source").run(question, hand_source(), generate=False, interpretations=given)
    assert own.hits == (("p0", "p1", "p4"), ("p2", "p3", "p4"))
    assert own.union == ("p0", "p1", "p4", "p2", "p3")
    # p1 and p3 tie on the mean score; p1 is more relevant to this 2018-leaning question
    assert [d.id for d in own.documents] == ["p4", "p1", "p3"] and own.cost.searches == 2
    assert own.search == "source" and [d.reason["interpretations"] for d in own.documents][2] == [I2019]
    assert [d.position for d in own.documents] == [4, 1, 3]


def _reference(pool_vecs: np.ndarray, interp_vecs: np.ndarray, per_k: int, k: int) -> list[int]:
    """A slow reference of Eq. 4-5 over one pool: loops, no shared code."""
    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    union: list[int] = []
    for q in interp_vecs:
        sims = [(-cos(q, p), i) for i, p in enumerate(pool_vecs)]
        for _, i in sorted(sims)[:per_k]:
            if i not in union:
                union.append(i)
    scored = [(-sum(cos(q, pool_vecs[i]) for q in interp_vecs) / len(interp_vecs), pos, i)
              for pos, i in enumerate(union)]
    return [i for _, _, i in sorted(scored)[:k]]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 4), per_k=st.integers(1, 4), k=st.integers(1, 6))
def test_pipeline_matches_a_slow_reference_on_random_vectors(seed: int, m: int, per_k: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(12, 5))
    interps = rng.normal(size=(m, 5))
    texts = [f"passage {i}" for i in range(12)]
    queries = [f"reading {j}" for j in range(m)]
    table = {**dict(zip(texts, pool, strict=True)), **dict(zip(queries, interps, strict=True)),
             "question": rng.normal(size=5)}
    src = InMemorySource(texts, embedder=lambda ts: np.array([table[t] for t in ts]), default_k=12)
    res = _diva(None, k=k, per_interpretation_k=per_k).run("question", src, generate=False,
                                                           interpretations=queries)
    found = src.search("question")
    order = {t: i for i, t in enumerate(found.texts)}  # reference indices are pool (search) order
    pool_vecs = np.array([table[t] for t in found.texts])
    expect = _reference(pool_vecs, interps, per_k, k)
    assert [order[d.text] for d in res.documents] == expect
    assert all(d.reason["interpretations"] for d in res.documents)  # every kept passage serves one


# ---------------------------------------------------------------------------- trace, cost, prompts
def test_trace_and_cost_contents() -> None:
    llm = ScriptedDiva(verdict=_yes_2018_only)
    res = _diva(llm).run(QUESTION, hand_source())
    stages = [e.stage for e in res.trace]
    llm_stages = [e.stage for e in res.trace if e.role is not None]
    assert llm_stages == ["ambiguity", "rewrite", "verify", "verify", "extract", "answer"]
    assert {"search", "embed", "diversify", "grade"} <= set(stages)
    assert stages.index("diversify") < stages.index("verify") < stages.index("grade") < stages.index("extract")
    roles = {e.stage: e.role for e in res.trace if e.role is not None}
    assert roles == {"ambiguity": "interpreter", "rewrite": "interpreter", "verify": "verifier",
                     "extract": "generator", "answer": "generator"}
    rewrite = next(e for e in res.trace if e.stage == "rewrite")
    assert rewrite.parsed["interpretations"] == [I2018, I2019] and rewrite.reply is not None
    diversify = next(e for e in res.trace if e.stage == "diversify")
    assert diversify.parsed["kept"] == ["p4", "p1", "p3"] and diversify.parsed["prune"] == "mean"
    assert next(e for e in res.trace if e.stage == "grade").parsed["usefulness"] == "PartialUseful"
    extract = next(e for e in res.trace if e.stage == "extract")
    assert extract.parsed["qa_pairs"] == [[I2018, "Ann"], [I2019, "Bob"]]
    assert res.cost.prompt_tokens > 0 and res.cost.completion_tokens == 4 * 6
    assert res.cost.wall_time >= res.cost.llm_seconds >= 0
    # the kept passages are what the verifier, the extractor and the writer read
    for prompt in llm.prompts:
        if not prompt.rstrip().endswith(("Reason:", "questions:")):
            assert all(d.text in prompt for d in res.documents)
    json.dumps(res.to_dict())
    assert res.summary()["verdicts"] == [True, False]


def test_missing_short_answers_are_flagged() -> None:
    llm = ScriptedDiva(extract="A1: Ann")
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.qa_pairs == ((I2018, "Ann"),) and any("interpretation(s) [1]" in w for w in res.warnings)
    llm = ScriptedDiva(extract="No idea.")
    res = _diva(llm).run(QUESTION, hand_source())
    assert res.qa_pairs == () and res.route == "passages"
    assert any("no answer lines" in w for w in res.warnings)


def test_verification_runs_concurrently_within_max_concurrency() -> None:
    rewrite = "\n".join(f"{j}: Who won the cup in {2010 + j}?" for j in range(1, 6))
    llm = ScriptedDiva(rewrite=rewrite, delay=0.02)
    _diva(llm, max_concurrency=2).run(QUESTION, hand_source())
    assert llm.peak == 2
    llm = ScriptedDiva(rewrite=rewrite, delay=0.02)
    _diva(llm, max_concurrency=1).run(QUESTION, hand_source())
    assert llm.peak == 1


def test_prompt_templates_can_be_replaced() -> None:
    pipe = _diva(ScriptedDiva())
    assert set(pipe.prompt_templates()) == {"ambiguity", "rewrite", "verify", "extract", "answer", "closed_book"}
    pipe.update_prompt_templates({"closed_book": "The question below is ambiguous. Q={question}"})
    assert pipe.prompts.render_closed_book("x?") == "The question below is ambiguous. Q=x?"
    with pytest.raises(InvalidParameterError, match="unknown prompt"):
        pipe.update_prompt_templates({"planner": "x"})
    custom = DIVA(ScriptedDiva(), prompts=DivaPrompts(max_passage_chars=5))
    assert custom.prompts.max_passage_chars == 5


@pytest.mark.parametrize(("kw", "name"), [
    ({"search": "web"}, "search"), ({"prune": "min"}, "prune"), ({"on_verifier_error": "skip"}, "on_verifier_error"),
    ({"per_interpretation_k": 0}, "per_interpretation_k"), ({"max_interpretations": 0}, "max_interpretations"),
    ({"fetch_k": -1}, "fetch_k"), ({"k": 0}, "k"), ({"mmr_lambda": 2.0}, "mmr_lambda"),
    ({"prompts": "text"}, "prompts"),
])
def test_bad_parameters_name_the_parameter(kw: dict[str, object], name: str) -> None:
    with pytest.raises(InvalidParameterError, match=name):
        DIVA(ScriptedDiva(), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["one string", [], ["ok", "  "], [3]])
def test_bad_given_interpretations(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="interpretations"):
        _diva(None).run(QUESTION, hand_source(), generate=False, interpretations=bad)  # type: ignore[arg-type]


def test_registered_and_async() -> None:
    import asyncio

    assert get_pipeline("diva") is DIVA
    llm = ScriptedDiva()
    res = asyncio.run(_diva(llm).arun(QUESTION, hand_source()))
    assert res.usefulness == "Useful" and res.cost.llm_calls == 6
    assert "DIVA(k=3" in repr(_diva(llm))
    assert vector_embedder(["unknown"]).tolist() == [[0.0, 0.0, 1.0]]
