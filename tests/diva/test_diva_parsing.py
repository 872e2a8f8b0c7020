"""DIVA parsers, verdict aggregation, prompts and the interpretation-coverage score."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.pipelines.diva import (
    DivaPrompts,
    Usefulness,
    aggregate_verdicts,
    interpretation_coverage,
    parse_ambiguity,
    parse_interpretations,
    parse_long_answer,
    parse_qa_pairs,
    parse_verdict_field,
)
from hypothesis import given
from hypothesis import strategies as st

# --- interpretations -------------------------------------------------------------------


def test_several_interpretations_with_prose_and_markdown() -> None:
    reply = (
        "The question is ambiguous.\n##Disambiguations:\n"
        "1: Who won the men's title in 2019?\n2. **Who won the women's title in 2019?**\n"
        "3) \"Who won the mixed title in 2019?\"\nLet me know if you need more."
    )
    got = parse_interpretations(reply)
    assert got.parsed and got.interpretations == (
        "Who won the men's title in 2019?",
        "Who won the women's title in 2019?",
        "Who won the mixed title in 2019?",
    )


def test_prefixed_items_duplicates_and_cap() -> None:
    reply = "\n".join(f"DQ {i}: Question number {i % 4}?" for i in range(1, 9))
    got = parse_interpretations(reply, max_interpretations=3)
    assert got.interpretations == ("Question number 1?", "Question number 2?", "Question number 3?")
    assert "capped at 3" in got.notes
    dup = parse_interpretations("1: Same?\n2: same?\n3: Other?")
    assert dup.interpretations == ("Same?", "Other?") and "duplicates dropped" in dup.notes


def test_echoed_list_is_cut_where_numbering_restarts() -> None:
    reply = "1: Real one?\n2: Real two?\n1: Echo one?\n2: Echo two?"
    assert parse_interpretations(reply).interpretations == ("Real one?", "Real two?")


@pytest.mark.parametrize("reply", ["", "I am not sure what you mean.", "No ambiguity here.\n\n"])
def test_zero_or_unparseable_interpretations_are_empty_and_flagged(reply: str) -> None:
    got = parse_interpretations(reply)
    assert got.interpretations == () and not got.parsed and got.notes == ("no interpretation found",)


def test_bad_cap_is_a_typed_error() -> None:
    with pytest.raises(InvalidParameterError, match="max_interpretations=0"):
        parse_interpretations("1: a?", max_interpretations=0)


@given(st.text(max_size=300), st.integers(1, 6))
def test_interpretation_parser_never_raises_and_respects_the_cap(text: str, cap: int) -> None:
    got = parse_interpretations(text, cap)
    assert len(got.interpretations) <= cap
    assert got.parsed == bool(got.interpretations)


# --- verdicts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", True),
        ("yes.", True),
        ("No", False),
        ("NO!", False),
        ("**Verdict:** Yes", True),
        ("Verdict: No", False),
        ("Answer: yes", True),
        ("Decision: No.", False),
        ("No, the passages only cover the 2018 season.", False),
        ("Yes, passage [3] names the winner.", True),
        ("Passage 2 gives the date of the first ceremony.\nVerdict: Yes", True),
        ("Verdict: Yes\nOn reflection the date is for another event.\nVerdict: No", False),
        ("The passages discuss the topic.\nYes", True),
        ("Maybe", None),
        ("", None),
        ("Verdict: unclear", None),
        ("Nobody is named in the passages.", None),
        ("Unclear from these passages.", None),
    ],
)
def test_yes_no_variants(reply: str, expected: bool | None) -> None:
    assert parse_verdict_field(reply).value is expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('Passage [2] says "Yes, the bridge opened in 1998." but that is another bridge.\nVerdict: No', False),
        ('"Yes, it was 1998," reads the passage.', None),
        ("\u201cYes, definitely\u201d is what passage 1 says; it does not answer the question.", None),
        ("> Yes, the answer is Paris.\nVerdict: No", False),
        ("[1] Yes, Paris is the capital.\nNo", False),
        ('Passage 1: "Verdict: Yes"\nVerdict: No', False),
        ('The text contains "Verdict: Yes" inside a quote.', None),
    ],
)
def test_a_quoted_passage_cannot_decide_the_verdict(reply: str, expected: bool | None) -> None:
    assert parse_verdict_field(reply).value is expected


def test_a_passage_quoted_verbatim_is_ignored_when_the_passages_are_given() -> None:
    passage = "Yes, the bridge opened in 1998 to traffic."
    reply = f"The passages say:\n{passage}"
    assert parse_verdict_field(reply).value is True  # without the passages the quote looks like a verdict
    assert parse_verdict_field(reply, passages=[passage]).value is None
    assert parse_verdict_field(reply + "\nVerdict: No", passages=[passage]).value is False
    assert parse_verdict_field('Verdict: "Yes"').value is True  # a quoted one-word verdict is the model's own


@given(st.text(max_size=300))
def test_verdict_parser_never_raises(text: str) -> None:
    assert parse_verdict_field(text).value in (True, False, None)


def test_aggregation_grades_and_unreadable_counted_as_yes() -> None:
    assert aggregate_verdicts([True, True]).grade is Usefulness.USEFUL
    assert aggregate_verdicts([True, False]).grade is Usefulness.PARTIAL
    assert aggregate_verdicts([False, False, False]).grade is Usefulness.USELESS
    s = aggregate_verdicts([None, False])
    assert s.grade is Usefulness.PARTIAL and s.unreadable == (0,) and s.counted == (True, False) and s.yes == 1
    assert aggregate_verdicts([None]).grade is Usefulness.USEFUL
    assert aggregate_verdicts([None], unreadable_as=False).grade is Usefulness.USELESS
    assert Usefulness.PARTIAL.value == "PartialUseful"
    with pytest.raises(InvalidParameterError, match="at least one verdict"):
        aggregate_verdicts([])


# --- other replies ---------------------------------------------------------------------


def test_ambiguity_reply() -> None:
    r = parse_ambiguity('"the king" is not named; several countries have one.\nKinds: [Object], [AmbTime]')
    assert r.parsed and r.kinds == ("Object", "Time") and r.reason.startswith('"the king"')
    assert parse_ambiguity("").parsed is False
    assert parse_ambiguity("Reason: none.\nKinds: none").kinds == ("None",)


def test_qa_pairs_reply() -> None:
    reply = "Q1: Men's record?\nA1: **Ali Daei**\nDQ 2: Women's record?\nDA 2: Christine Sinclair\nA3:"
    got = parse_qa_pairs(reply, ["men?", "women?", "mixed?"])
    assert got.pairs == (("Men's record?", "Ali Daei"), ("Women's record?", "Christine Sinclair"))
    assert got.missing == (2,)


def test_long_answer_reply() -> None:
    assert parse_long_answer("Answer: It depends.\nMore.") == "It depends.\nMore."
    assert parse_long_answer("  Just text. ") == "Just text."


def test_prompts_render_every_field() -> None:
    p = DivaPrompts(max_passage_chars=25)
    passages = ["A passage with {braces} and a long tail that gets cut", "Second"]
    assert "Question: Who won?" in p.render_ambiguity("Who won?")
    rw = p.render_rewrite("Who won?", "the year\nis open", 4)
    assert "at most 4" in rw and "Reason: the year is open" in rw
    v = p.render_verify("Who won in 2019?", passages)
    assert "{braces} a..." in v and "tail" not in v and "[2] \"Second\"" in v and v.rstrip().endswith('"Verdict: No".')
    ex = p.render_extract("Who won?", ["In 2018?", "In 2019?"], passages)
    assert "1: In 2018?\n2: In 2019?" in ex
    ans = p.render_answer("Who won?", [("In 2018?", "X"), ("In 2019?", "Y")], passages)
    assert "Q2: In 2019?\nA2: Y" in ans and ans.endswith("Answer:")
    assert p.render_closed_book("Who won?").endswith("Question: Who won?\nAnswer:")


# --- interpretation coverage -----------------------------------------------------------


def test_coverage_is_greedy_and_one_to_one() -> None:
    gold = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    gen = np.array([[1.0, 0.05, 0.0], [1.0, 0.1, 0.0], [0.0, 0.2, 1.0]])
    c = interpretation_coverage(gen, gold, threshold=0.9)
    assert c.matched == 2 and c.pairs == ((0, 0), (2, 2))  # row 1 also fits gold 0, already taken
    assert c.recall == pytest.approx(2 / 3) and c.precision == pytest.approx(2 / 3)
    assert interpretation_coverage(gen, gold, threshold=0.0).matched == 3
    assert interpretation_coverage(gold, gold, threshold=1.0).matched == 3


def test_coverage_edge_cases_and_errors() -> None:
    gold = np.eye(3)
    none = interpretation_coverage(np.zeros((0, 3)), gold)
    assert none.matched == 0 and none.recall == 0.0 and none.precision == 0.0
    with pytest.raises(InvalidParameterError, match="threshold=1.5"):
        interpretation_coverage(gold, gold, threshold=1.5)
    with pytest.raises(DimensionMismatchError, match="dimension 2"):
        interpretation_coverage(np.ones((1, 2)), gold)
    with pytest.raises(InvalidParameterError, match="gold_embeddings"):
        interpretation_coverage(gold, np.zeros((0, 3)))


def test_residual_coverage_ignores_what_the_question_already_says() -> None:
    q = np.array([1.0, 0.0, 0.0])
    gold = np.array([[1.0, 0.3, 0.0], [1.0, 0.0, 0.3]])
    repeated = np.array([q, q])
    assert interpretation_coverage(repeated, gold).matched == 2  # plain cosine credits a parrot
    assert interpretation_coverage(repeated, gold, question_embedding=q).matched == 0
    gen = np.array([[1.0, 0.2, 0.0]])  # adds the first gold's detail only
    c = interpretation_coverage(gen, gold, question_embedding=q)
    assert c.pairs == ((0, 0),) and c.similarities[0] == pytest.approx(1.0)
    assert interpretation_coverage(gen, gold, threshold=0.0, question_embedding=q).matched == 1
    with pytest.raises(DimensionMismatchError, match="question_embedding"):
        interpretation_coverage(gen, gold, question_embedding=np.ones(2))
