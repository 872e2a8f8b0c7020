"""Tolerant parsers for Planner and Evaluator output.

The Evaluator's reply is read by the shared judge parser (:mod:`diverse_core.pipelines.judge`), so
what it quotes from the passages is never its verdict. The parsers never raise on prose, markdown
or scores past the scale: a plan falls back to the question itself, an evaluation with no score at
all is reported as unparsed (the pipeline scores it 0 and flags it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..judge import QuoteIndex, read_field, read_number, read_numbered

__all__ = ["parse_plan", "parse_evaluation", "EvaluationParse", "PlanParse", "MAX_STEP_SCORE"]

#: Highest score of one plan step (the paper's 0-5 scale).
MAX_STEP_SCORE = 5.0

_MD = re.compile(r"[*_`#>]+")
_ENUM = re.compile(
    r"^\s*(?:[-*+\u2022]\s*)?(?:\(?(?:step|sub-?question|q)?\s*(\d{1,2})\s*[).:\]-]|[-*+\u2022])\s*(.+)$",
    re.IGNORECASE,
)
_PLAN_HEADER = re.compile(r"^\s*(?:output\s+)?(?:planner\s*)?plan\s*:?\s*$", re.IGNORECASE)
#: The label of the stated total (``Total Score``, ``Total support score``, ``Total``).
_TOTAL_LABEL = r"total[ \t]*(?:support[ \t]*)?(?:score)?"
_SHORT_ANSWER = r"(?:short|final|draft)?[ \t]*answer"


def _clean(line: str) -> str:
    return _MD.sub("", line).strip()


@dataclass(frozen=True)
class PlanParse:
    """Steps parsed from a Planner reply.

    Attributes:
        steps: the sub-questions, in order (never empty).
        parsed: ``False`` when no list was found and the fallback was used.
    """

    steps: tuple[str, ...]
    parsed: bool


def parse_plan(text: str, question: str, max_steps: int = 8) -> PlanParse:
    """Extract the numbered (or bulleted) sub-questions from a Planner reply.

    Prose before/after the list and markdown are ignored; a repeated list (models
    sometimes echo the example) is cut at the first restart of the numbering.
    Without any list item, the whole question becomes the single step.

    Example:
        >>> parse_plan("Sure! Plan:\\n1) Find X\\n2) **Find Y**\\nHope it helps.", "Q?").steps
        ('Find X', 'Find Y')
    """
    steps: list[str] = []
    last_num = 0
    for raw in text.splitlines():
        line = _clean(raw)
        if not line or _PLAN_HEADER.match(line):
            continue
        m = _ENUM.match(line)
        if not m:
            if steps:  # prose after the list ends it
                break
            continue
        num = int(m.group(1)) if m.group(1) else last_num + 1
        if steps and num <= last_num:  # numbering restarted: an echo
            break
        body = m.group(2).strip()
        if re.match(r"^(question|example)\s*:", body, re.IGNORECASE):
            continue
        if body:
            steps.append(body)
            last_num = num
        if len(steps) >= max_steps:
            break
    if not steps:
        return PlanParse(steps=(question.strip() or "Answer the question",), parsed=False)
    return PlanParse(steps=tuple(steps), parsed=True)


@dataclass(frozen=True)
class EvaluationParse:
    """Scores parsed from an Evaluator reply.

    Attributes:
        score: the Retrieval Support used to rank the chunk set (0 when unparsed).
        step_scores: per-step scores found, each clipped to ``0..5``.
        stated_total: the ``Total Score`` the model wrote, or ``None``.
        source: ``"total"``, ``"steps"`` or ``"none"`` - where ``score`` came from.
        short_answer: the ``Short Answer:`` line, if any.
        parsed: ``False`` when no score could be read (then ``score`` is 0).
        notes: what was repaired (clipping, missing total, ...).
        ambiguous: the reply stated different totals, step scores or short answers, or its
            only one repeats a passage line (see :mod:`diverse_core.pipelines.judge`).
        clipped: a score was out of range and clipped.
    """

    score: float
    step_scores: tuple[float, ...]
    stated_total: float | None
    source: str
    short_answer: str | None
    parsed: bool
    notes: tuple[str, ...] = field(default=())
    ambiguous: bool = False
    clipped: bool = False


def _clip(value: float, hi: float) -> float:
    return min(max(value, 0.0), hi)


def parse_evaluation(
    text: str, n_steps: int, prefer: str = "total", passages: Sequence[str] = ()
) -> EvaluationParse:
    """Read per-step scores and the ``Total Score`` from an Evaluator reply.

    Rules: step scores are clipped to ``0..5`` (only the first ``n_steps`` count); the
    stated total (the last ``Total Score: N``) is clipped to ``0..5 * n_steps``; a
    missing total is replaced by the sum of the step scores. With ``prefer="steps"``
    the sum of the step scores (Eq. 4) is used whenever step scores were found. Text quoted
    from ``passages`` is ignored (see the module docstring).

    Example:
        >>> r = parse_evaluation("1. Score: 4. ok\\n2. **Score:** 7. too high", n_steps=2)
        >>> r.score, r.source, r.notes
        (9.0, 'steps', ('step score clipped to 0..5', 'no total; summed step scores'))
    """
    if prefer not in {"total", "steps"}:
        raise ValueError(f"prefer must be 'total' or 'steps'; got prefer={prefer!r}")
    n_steps = max(1, int(n_steps))
    notes: list[str] = []
    index = QuoteIndex(passages)  # normalised once for the three readers
    total_read = read_number(text, "total score", sources=index, label=_TOTAL_LABEL)
    stated: float | None = total_read.value if total_read.parsed else None
    step_read = read_numbered(text, "score", sources=index, limit=n_steps)
    raw_steps = [float(v) for v in step_read.value.values()] if step_read.parsed else []
    if any(not 0.0 <= v <= MAX_STEP_SCORE for v in raw_steps):
        notes.append("step score clipped to 0..5")
    steps = [_clip(v, MAX_STEP_SCORE) for v in raw_steps]
    short_read = read_field(text, "short answer", sources=index, label=_SHORT_ANSWER, pattern=r"[^\n]*\S")
    short: str | None = _clean(short_read.value) or None if short_read.parsed else None
    ambiguous = total_read.ambiguous or step_read.ambiguous or short_read.ambiguous
    if ambiguous:
        notes.extend(n for got in (total_read, step_read, short_read) if got.ambiguous for n in got.notes)
    hi = MAX_STEP_SCORE * n_steps
    if stated is not None and not 0.0 <= stated <= hi:
        notes.append(f"total clipped to 0..{hi:g}")
    return scored(steps, stated, hi, prefer, short, notes, ambiguous)


def scored(steps: list[float], stated: float | None, hi: float, prefer: str, short: str | None,
           notes: list[str], ambiguous: bool = False) -> EvaluationParse:
    """The evaluation from read (already clipped) step scores and the stated total, on either path:
    the step sum or the total clipped to ``0..hi``, as ``prefer`` and what was found say."""
    source = "steps" if steps and (prefer == "steps" or stated is None) else "total" if stated is not None else "none"
    if source == "steps" and stated is None:
        notes.append("no total; summed step scores")
    if source == "none":
        notes.append("no score found")
    score = float(sum(steps)) if source == "steps" else _clip(stated, hi) if stated is not None else 0.0
    return EvaluationParse(score, tuple(steps), stated, source, short, source != "none", tuple(notes), ambiguous,
                           any("clipped" in n for n in notes))
