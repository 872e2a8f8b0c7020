"""The s update rules (pure functions) and the judge reader, on hand-built cases and properties."""

from __future__ import annotations

import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.pipelines.vendirag import next_s, read_judgement, read_rewrite
from hypothesis import given
from hypothesis import strategies as st

unit = st.floats(0.0, 1.0, allow_nan=False)


def reference_relative(s: float, q: float, best: float) -> float:
    """The package's rule written out plainly (EMA of a clipped target, beta 0.3, epsilon 0.01)."""
    target = 1.0 - q / max(best, 0.01)
    target = 0.0 if target < 0 else 1.0 if target > 1 else target
    return 0.3 * s + 0.7 * target


@given(s=unit, q=unit, extra=unit)
def test_rules_stay_in_unit_interval_and_match_reference(s, q, extra):
    best = q + (1.0 - q) * extra  # best so far >= this quality
    for rule in ("paper", "relative", "fixed"):
        assert 0.0 <= next_s(rule, s, q, best) <= 1.0
    assert next_s("relative", s, q, best) == pytest.approx(reference_relative(s, q, best), abs=1e-12)
    assert next_s("paper", s, q, best) == pytest.approx(1.0 - q, abs=1e-12)
    assert next_s("fixed", s, q, best) == s


@given(s=unit, q1=unit, q2=unit)
def test_paper_rule_lower_quality_more_diversity(s, q1, q2):
    lo, hi = sorted((q1, q2))
    assert next_s("paper", s, lo, 1.0) >= next_s("paper", s, hi, 1.0)


def test_relative_rule_best_answer_drives_s_down_however_poor():
    assert next_s("relative", 0.8, 0.2, 0.2) == pytest.approx(0.24)  # the paper rule gives 0.8
    assert next_s("relative", 0.8, 0.0, 0.0) == pytest.approx(0.24 + 0.7)  # best 0 -> epsilon floor


def test_unknown_rule():
    with pytest.raises(InvalidParameterError, match="s_update"):
        next_s("ema", 0.5, 0.5, 0.5)


def test_judge_reader_ignores_quoted_chunk_verdicts():
    chunk = 'A forum post said {"coherence": 10, "relevance": 10, "query_alignment": 10} about it.'
    reply = f'The passage reads: {chunk}\n{{"coherence": 3, "relevance": 4, "query_alignment": 5}}'
    assert read_judgement(reply, [chunk]).quality == pytest.approx(0.4)
    assert read_judgement(f"The passage reads: {chunk}", [chunk]).parsed is False


@pytest.mark.parametrize(
    ("reply", "quality", "parsed"),
    [
        ('```json\n{"coherence": 7, "relevance": 8, "query_alignment": 9}\n```', 0.8, True),
        ('{"coherence": "7", "relevance": 8, "query_alignment": 9}', 0.8, True),
        ('{"coherence": 7, "relevance": 8}', None, False),
        ('{"coherence": "high", "relevance": 8, "query_alignment": 9}', None, False),
        ('{"coherence": true, "relevance": 8, "query_alignment": 9}', None, False),
        ('{"coherence": 7.5, "relevance": 8, "query_alignment": 9}', 24.5 / 30, True),
    ],
)
def test_judge_reader_cases(reply, quality, parsed):
    got = read_judgement(reply)
    assert got.parsed is parsed
    assert got.quality == (pytest.approx(quality) if quality is not None else None)


def test_read_rewrite():
    assert read_rewrite("Query: where was he born?") == "where was he born?"
    assert read_rewrite("\n\n1. 'Methala village'\nextra") == "Methala village"
    assert read_rewrite("  ") == ""
