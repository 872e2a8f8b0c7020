"""Answer metrics live in the core; the harness and the DF-RAG Oracle use the same functions."""

from __future__ import annotations

import pytest
from diverse_core import answer_metrics as core
from diverse_core.errors import InvalidParameterError
from hypothesis import given
from hypothesis import strategies as st


def test_one_implementation_shared_by_pipelines_and_harness() -> None:
    from diverse_core.eval import metrics as harness
    from diverse_core.pipelines import dfrag

    for name in ("normalize_answer", "exact_match", "f1_score", "accuracy", "answer_in_texts"):
        assert getattr(harness, name) is getattr(core, name), name
    assert dfrag.normalize_answer is core.normalize_answer
    assert dfrag.answer_f1("Paris, France", ["paris"]) == core.f1_score("Paris, France", ["paris"])


@pytest.mark.parametrize(
    ("pred", "golds", "em", "f1", "acc"),
    [
        ("The Eiffel Tower!", ["eiffel tower"], 1.0, 1.0, 1.0),
        ("Paris France", "Paris", 0.0, 2 / 3, 1.0),
        ("London", ["Paris", "Rome"], 0.0, 0.0, 0.0),
        ("", [""], 1.0, 1.0, 0.0),  # an empty gold is never "contained"
        ("a an the", ["the"], 1.0, 1.0, 0.0),  # both normalise to ""
    ],
)
def test_hand_computed(pred: str, golds: str | list[str], em: float, f1: float, acc: float) -> None:
    assert core.exact_match(pred, golds) == em
    assert core.f1_score(pred, golds) == pytest.approx(f1)
    assert core.accuracy(pred, golds) == acc


@pytest.mark.parametrize("fn", [core.exact_match, core.f1_score, core.accuracy])
def test_no_gold_is_a_typed_error(fn: object) -> None:
    with pytest.raises(InvalidParameterError, match="answers"):
        fn("x", [])  # type: ignore[operator]


@given(st.text(max_size=40), st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_scores_are_bounded_and_self_match_is_perfect(pred: str, golds: list[str]) -> None:
    assert 0.0 <= core.f1_score(pred, golds) <= 1.0
    assert core.exact_match(pred, golds) <= core.f1_score(pred, golds)
    assert core.f1_score(golds[0], golds) == 1.0
    assert core.normalize_answer(core.normalize_answer(pred)) == core.normalize_answer(pred)
