"""Sentence splitting and sentence windows."""

from __future__ import annotations

from diverse_core.eval.chunking import sentence_windows, split_sentences


def test_split_sentences_regex() -> None:
    text = 'He said "no." Then he left! Did he? It cost 5.5 dollars. (Born 1990.) End'
    assert split_sentences(text) == [
        'He said "no."',
        "Then he left!",
        "Did he?",
        "It cost 5.5 dollars.",
        "(Born 1990.)",
        "End",
    ]
    assert split_sentences("  ") == []
    assert split_sentences("lower case. continues here") == ["lower case. continues here"]


def test_windows_of_two_stride_one() -> None:
    assert sentence_windows(["A.", "B.", "C.", "D."]) == ["A. B.", "B. C.", "C. D."]
    assert sentence_windows(["A.", " ", "B."]) == ["A. B."]
    assert sentence_windows(["Only."]) == ["Only."]
    assert sentence_windows([]) == []

