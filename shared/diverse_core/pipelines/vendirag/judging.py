"""Reading the Vendi-RAG judge's reply: three integer ratings 1-10 -> the quality ``Q_i``.

The model's own JSON object with all three keys is read by the shared judge parser
(:mod:`diverse_core.pipelines.judge`; different objects give the lowest ratings). Ratings outside
1..10 are clipped and flagged; a missing or non-numeric rating makes the reply unreadable
(``parsed=False``), never a silent default score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...llm.base import Completion
from ..judge import QuoteIndex, clip_score, read_json_object
from ..structured import structured_value
from .prompts import JUDGE_KEYS

__all__ = ["Judgement", "read_judgement", "read_judge_reply"]


@dataclass(frozen=True)
class Judgement:
    """The judge's ratings of one answer.

    Attributes:
        scores: ``{"coherence": c, "relevance": r, "query_alignment": a}`` (after clipping),
            empty when the reply could not be read.
        quality: ``mean(scores) / 10`` in [0.1, 1], ``None`` when unreadable.
        parsed: whether the three ratings were read.
        notes: what was clipped, flagged or missing.

    Example:
        >>> read_judgement('{"coherence": 8, "relevance": 9, "query_alignment": 10}').quality
        0.9
    """

    scores: dict[str, float]
    quality: float | None
    parsed: bool
    notes: tuple[str, ...] = ()


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _lowest_ratings(objects: list[Any]) -> Any:
    """The object with the lowest mean rating (unreadable ratings count as the lowest)."""

    def mean(obj: Any) -> float:
        values = [_number(obj.get(k)) for k in JUDGE_KEYS]
        if any(v is None or v != v for v in values):
            return float("-inf")
        return sum(v for v in values if v is not None) / len(values)

    return min(objects, key=mean)


def read_judgement(reply: str, chunks: Sequence[str] | QuoteIndex = ()) -> Judgement:
    """Read the three ratings from ``reply`` (``chunks``: the passages the judge was shown).

    Example:
        >>> j = read_judgement('Sure: {"coherence": 12, "relevance": 5, "query_alignment": 7}')
        >>> j.scores["coherence"], j.notes
        (10.0, ('coherence 12 out of range 1..10; clipped',))
        >>> read_judgement("looks fine, 9/10").parsed
        False
    """
    found = read_json_object(reply, JUDGE_KEYS, sources=chunks, conservative=_lowest_ratings)
    if not found.parsed:
        return Judgement({}, None, False, found.notes)
    return _from_object(found.value, list(found.notes))


def _from_object(ratings: Mapping[str, Any], notes: list[str]) -> Judgement:
    """The three ratings of a decoded object (out-of-range values clipped *and* flagged)."""
    scores: dict[str, float] = {}
    for key in JUDGE_KEYS:
        if key not in ratings:
            return Judgement({}, None, False, (*notes, f"no {key!r} rating"))
        value = _number(ratings[key])
        if value is None:
            return Judgement({}, None, False, (*notes, f"{key} is not a number: {ratings[key]!r}"))
        if value != value or value in (float("inf"), float("-inf")):
            return Judgement({}, None, False, (*notes, f"{key} is not finite: {value!r}"))
        if not float(value).is_integer():
            notes.append(f"{key} {value:g} is not an integer; kept")
        clipped, clip_notes = clip_score(value, 1.0, 10.0, key)
        notes.extend(clip_notes)
        scores[key] = clipped
    quality = sum(scores.values()) / (10.0 * len(scores))
    return Judgement(scores, quality, True, tuple(notes))


def read_judge_reply(out: Completion, chunks: Sequence[str] | QuoteIndex = ()) -> Judgement:
    """The judge's ratings on either path: the decoded fields of a structured reply (only those:
    a chunk saying ``{"coherence": 10, ...}`` is data, never read), else :func:`read_judgement`
    over the text (``chunks``: the passages it was shown, or their
    :class:`~diverse_core.pipelines.judge.QuoteIndex` with the prompt as ``shown`` text).

    Example:
        >>> from diverse_core.llm.structured import RoleCompletion
        >>> v = {"coherence": 8, "relevance": 11, "query_alignment": 6}
        >>> j = read_judge_reply(RoleCompletion("{}", path="structured", method="json_object", value=v))
        >>> j.scores["relevance"], j.notes
        (10.0, ('relevance 11 out of range 1..10; clipped',))
    """
    value, notes = structured_value(out)
    if isinstance(value, dict):
        return _from_object(value, list(notes))
    got = read_judgement(out.text, chunks)
    return Judgement(got.scores, got.quality, got.parsed, (*notes, *got.notes)) if notes else got
