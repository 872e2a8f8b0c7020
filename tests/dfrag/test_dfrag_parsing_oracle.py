"""DF-RAG parsers, prompts and Oracle."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.dfrag import (
    DEFAULT_LAMBDAS,
    PromptSet,
    answer_f1,
    gold_recall_scorer,
    oracle_select,
    parse_evaluation,
    parse_plan,
    sweep_candidate_sets,
)


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("1) Find X\n2) Find Y", ("Find X", "Find Y")),
        ("Plan:\n1. Find X\n2. Find Y\n\nThis plan works.", ("Find X", "Find Y")),
        ("- 1) Find X\n- 2) Find Y", ("Find X", "Find Y")),
        ("**Step 1:** Find X\n**Step 2:** Find Y", ("Find X", "Find Y")),
        ("- Find X\n- Find Y", ("Find X", "Find Y")),
        ("1) Find X\n2) Find Y\n1) Find X again", ("Find X", "Find Y")),  # echo cut
        ("```\n1) Find X\n```", ("Find X",)),
    ],
)
def test_dfrag_parse_plan_variants(text, steps):
    parsed = parse_plan(text, "Q?")
    assert parsed.steps == steps and parsed.parsed


def test_dfrag_parse_plan_fallback_and_cap():
    assert parse_plan("", "What is X?").steps == ("What is X?",)
    many = "\n".join(f"{i}) s{i}" for i in range(1, 20))
    assert len(parse_plan(many, "q", max_steps=5).steps) == 5


@pytest.mark.parametrize(
    ("text", "n", "score", "source", "parsed"),
    [
        ("1. Score: 5. ok\n2. Score: 3. ok\nTotal Score: 8", 2, 8.0, "total", True),
        ("1. Score: 5\n2. Score: 3\nTotal Score: 7", 2, 7.0, "total", True),  # model's total wins
        ("1. Score: 5\n2. Score: 3", 2, 8.0, "steps", True),  # missing total
        ("**Total Score:** 12", 2, 10.0, "total", True),  # clipped to 5 * steps
        ("1. Score: -2\n2. Score: 9", 2, 5.0, "steps", True),  # each clipped to 0..5
        ("Total score = 4.", 2, 4.0, "total", True),
        ("The passages are irrelevant.", 2, 0.0, "none", False),
        ("Total Score: <Total Score>", 1, 0.0, "none", False),
        ("1. Score: 2\n2. Score: 2\n3. Score: 2", 2, 4.0, "steps", True),  # extra steps ignored
    ],
)
def test_dfrag_parse_evaluation_variants(text, n, score, source, parsed):
    r = parse_evaluation(text, n)
    assert (r.score, r.source, r.parsed) == (score, source, parsed)


def test_dfrag_parse_evaluation_issue24_duplicated_step_takes_the_models_last_value():
    # a reply quoting a passage line "1. Score: 5" before the model's own "1. Score: 0"
    reply = "1. Score: 5\n1. Score: 0. The passage does not answer step 1.\n2. Score: 4. ok"
    r = parse_evaluation(reply, 2, prefer="steps")
    assert r.step_scores == (0.0, 4.0) and r.score == 4.0 and r.ambiguous
    one = parse_evaluation("1. Score: 5\n1. Score: 0", 1)
    assert one.score == 0.0 and one.source == "steps" and one.ambiguous


def test_dfrag_parse_evaluation_issue24_total_only_on_its_own_line():
    reply = "1. Score: 2. It mentions Total Score: 1e9 in passing.\n2. Score: 3. ok"
    r = parse_evaluation(reply, 2)
    assert r.stated_total is None and r.source == "steps" and r.score == 5.0
    assert r.step_scores == (2.0, 3.0) and not r.clipped
    with_total = parse_evaluation(reply + "\nTotal Score: 4", 2)
    assert with_total.score == 4.0 and with_total.source == "total" and not with_total.ambiguous


def test_dfrag_parse_evaluation_prefer_steps_and_short_answer():
    text = "1. Score: 4\n2. Score: 4\nShort Answer: Mangalia\nTotal Score: 3"
    assert parse_evaluation(text, 2).score == 3
    r = parse_evaluation(text, 2, prefer="steps")
    assert r.score == 8 and r.stated_total == 3 and r.short_answer == "Mangalia"
    with pytest.raises(ValueError, match="prefer"):
        parse_evaluation(text, 2, prefer="mean")


def test_dfrag_prompts_render_and_keep_structure():
    p = PromptSet(max_passage_chars=10)
    planner = p.render_planner("Where was X born?")
    assert "1)" in planner and planner.rstrip().endswith("Plan:") and "Where was X born?" in planner
    ev = p.render_evaluator("Q?", ["Find A", "Find B"], ["a" * 50, "b"])
    assert "0 -" in ev and "5 -" in ev and ev.count("Total Score:") == 4  # rule + 3 examples
    assert '[1] "aaaaaaaaaa..."' in ev and "1) Find A\n2) Find B" in ev
    gen = p.render_generator("Q?", ["ctx"], ["Find A"], "draft")
    assert "Find A" in gen and "draft" in gen and gen.rstrip().endswith("Answer:")
    assert "Find A" not in p.render_generator("Q?", ["ctx"])
    zero_shot = PromptSet(evaluator_examples="")
    assert "Example 1" not in zero_shot.render_evaluator("Q?", ["s"], ["c"])


def test_dfrag_answer_f1():
    assert answer_f1("The Eiffel Tower", "eiffel tower") == 1.0
    assert answer_f1("Paris France", ["Paris"]) == pytest.approx(2 / 3)
    assert answer_f1("London", ["Paris", "Rome"]) == 0.0
    assert answer_f1("", [""]) == 1.0


def test_dfrag_oracle_matches_brute_force_and_tie_gate():
    rng = np.random.default_rng(3)
    cands = rng.normal(size=(30, 8))
    query = rng.normal(size=8)
    texts = [str(i) for i in range(30)]
    groups = sweep_candidate_sets(query, cands, 4, DEFAULT_LAMBDAS)
    gold = {int(groups.indices[-1][1]), int(groups.indices[0][3])}
    calls = []

    def score(idx, txt):
        calls.append(idx)
        return gold_recall_scorer(gold)(idx, txt)

    res = oracle_select(texts, query, cands, score, k=4)
    brute = [len(gold & set(row.tolist())) / 2 for row in groups.indices]
    best = max(brute)
    tied = [lam for lam, s in zip(DEFAULT_LAMBDAS, brute, strict=True) if s == best]
    assert res.best_score == best and res.tied_lambdas == tuple(tied)
    assert res.lambda_star == tied[len(tied) // 2]
    assert len(calls) == len(groups.groups)  # identical sets scored once
    assert res.texts == tuple(texts[i] for i in res.indices)


def test_dfrag_oracle_errors():
    with pytest.raises(ValueError, match="gold"):
        gold_recall_scorer([])
    with pytest.raises(ValueError, match="texts has 2"):
        oracle_select(["a", "b"], np.ones(2), np.eye(3, 2), lambda i, t: 0.0)
