"""Answer and retrieval metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.eval.metrics import (
    accuracy,
    all_gold_at_k,
    answer_in_texts,
    exact_match,
    f1_score,
    mrecall_at_k,
    ndcg_at_k,
    normalize_answer,
    recall_at_k,
    rouge_l,
)


def test_normalize_answer_squad_rules() -> None:
    assert normalize_answer("  The Eiffel-Tower, an icon! ") == "eiffeltower icon"
    assert normalize_answer("A cat and THE hat") == "cat and hat"


def test_exact_match_uses_best_alias() -> None:
    assert exact_match("the Beatles", ["Rolling Stones", "Beatles"]) == 1.0
    assert exact_match("Beatles band", "Beatles") == 0.0


def test_f1_hand_computed() -> None:
    # pred tokens [new, york, city], gold [new, york]: P = 2/3, R = 1, F1 = 0.8
    assert f1_score("New York City", "new york") == pytest.approx(0.8)
    # pred [barack, obama], gold [obama]: P = 1/2, R = 1 -> 2/3; best over aliases
    assert f1_score("Barack Obama", ["George Bush", "Obama"]) == pytest.approx(2 / 3)
    assert f1_score("nothing", "else") == 0.0
    # repeated tokens count with multiplicity: pred [a1, a1, b] vs gold [a1, b]: P=2/3, R=1
    assert f1_score("x x y", "x y") == pytest.approx(0.8)


def test_accuracy_is_word_bounded_containment() -> None:
    assert accuracy("It was played in Tampa, Florida in 2021.", "Tampa, Florida") == 1.0
    assert accuracy("Tampaflorida", "Tampa Florida") == 0.0
    assert accuracy("cart", "car") == 0.0
    assert answer_in_texts(["no", "the answer is Paris"], ["paris"]) == 1.0


def test_empty_answers_rejected() -> None:
    with pytest.raises(InvalidParameterError, match="answers"):
        f1_score("x", [])


def test_recall_and_all_gold() -> None:
    ranked = ["d3", "d1", "d9", "d2"]
    assert recall_at_k(ranked, ["d1", "d2"], k=2) == 0.5
    assert recall_at_k(ranked, ["d1", "d2"], k=4) == 1.0
    assert all_gold_at_k(ranked, ["d1", "d2"], k=3) == 0.0
    assert all_gold_at_k(ranked, ["d1", "d2"], k=4) == 1.0
    with pytest.raises(InvalidParameterError, match="k must be"):
        recall_at_k(ranked, ["d1"], k=0)
    with pytest.raises(InvalidParameterError, match="gold"):
        recall_at_k(ranked, [], k=2)


def test_ndcg_hand_computed_and_order_preserved() -> None:
    runs = {"b": ["x", "a"], "a": ["a"], "10": ["z", "y", "q"], "2": ["q"]}
    qrels = {"b": ["a"], "a": ["a", "c"], "10": ["q"], "2": ["q"]}
    got = ndcg_at_k(runs, qrels, k=5)
    expected = [
        1 / math.log2(3),  # relevant at rank 2 of 1 relevant
        1 / (1 + 1 / math.log2(3)),  # 1 of 2 relevant found, at rank 1
        1 / math.log2(4),  # rank 3
        1.0,
    ]
    assert got.tolist() == pytest.approx(expected)


def test_ndcg_cutoff() -> None:
    runs = {"q": ["x", "y", "a"]}
    assert ndcg_at_k(runs, {"q": ["a"]}, k=2).tolist() == [0.0]


def test_mrecall_definition() -> None:
    groups = [["Ali Daei", "Daei"], ["Josef Bican"], ["Christine Sinclair"]]
    texts = ["Daei holds the record.", "Bican scored more."]
    # 1 of 3 groups covered ("Bican" alone is not an accepted answer)
    assert mrecall_at_k(texts, groups, k=1) == 1.0
    assert mrecall_at_k(texts, groups, k=2) == 0.0
    texts.append("Josef Bican and Christine Sinclair")
    assert mrecall_at_k(texts, groups, k=5) == 1.0  # all 3 (< k) covered
    with pytest.raises(InvalidParameterError, match="answer_groups"):
        mrecall_at_k(texts, [], k=5)


def test_rouge_l_hand_computed() -> None:
    # LCS("the cat sat", "the cat sat down") = 3 tokens: P = 1, R = 3/4, F = 6/7
    assert rouge_l("the cat sat", "the cat sat down") == pytest.approx(6 / 7)
    assert rouge_l("dogs", ["cats", "dogs"]) == pytest.approx(1.0)
