"""Reading DF-RAG's Planner and Evaluator replies on either path, into the same result types.

A structured reply is read field by field (only ``total_score`` is a total; a value out of bounds
is clipped *and* flagged, ``clipped=True``); any other reply goes through :mod:`.parsing`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ...llm.base import Completion
from ..structured import structured_value
from .parsing import (
    MAX_STEP_SCORE,
    EvaluationParse,
    PlanParse,
    _clip,
    parse_evaluation,
    parse_plan,
    scored,
)
from .prompts import MAX_PLAN_STEPS

__all__ = ["read_plan", "read_evaluation"]


def read_plan(out: Completion, question: str) -> tuple[PlanParse, tuple[str, ...]]:
    """The plan from a Planner reply, with notes on what was flagged.

    Example:
        >>> from diverse_core.llm.structured import RoleCompletion
        >>> reply = RoleCompletion('{"steps": ["Find X", " "]}', path="structured",
        ...                        method="json_schema", value={"steps": ["Find X", " "]})
        >>> read_plan(reply, "Q?")[0].steps
        ('Find X',)
    """
    value, notes = structured_value(out)
    if isinstance(value, dict):
        steps = tuple(" ".join(str(s).split()) for s in value.get("steps", ()) if str(s).strip())
        if steps:
            return PlanParse(steps=steps[:MAX_PLAN_STEPS], parsed=True), notes
        notes += ("structured plan held no step; read with the text parser",)
    return parse_plan(out.text, question, max_steps=MAX_PLAN_STEPS), notes


def _from_object(value: dict[str, Any], n_steps: int, prefer: str,
                 notes: list[str]) -> EvaluationParse:
    raw_steps = [s.get("score") for s in value.get("steps", ()) if isinstance(s, dict)][:n_steps]
    steps: list[float] = []
    for i, raw in enumerate(raw_steps, start=1):
        score = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else 0.0
        if not 0.0 <= score <= MAX_STEP_SCORE:
            notes.append(f"step {i} score {score:g} out of range 0..5; clipped")
        steps.append(_clip(score, MAX_STEP_SCORE))
    if len(raw_steps) < n_steps:
        notes.append(f"{len(raw_steps)} step scores for {n_steps} plan steps")
    hi = MAX_STEP_SCORE * n_steps
    stated_raw = value.get("total_score")
    stated = float(stated_raw) if isinstance(stated_raw, (int, float)) and not isinstance(stated_raw, bool) else None
    if stated is not None and not 0.0 <= stated <= hi:
        notes.append(f"total {stated:g} out of range 0..{hi:g}; clipped")
    short = value.get("short_answer")
    short_answer = short.strip() if isinstance(short, str) and short.strip() else None
    return scored(steps, stated, hi, prefer, short_answer, notes)


def read_evaluation(out: Completion, n_steps: int, prefer: str = "total",
                    passages: Sequence[str] = ()) -> EvaluationParse:
    """The Evaluator's verdict on either path (see the module docstring).

    Example:
        >>> from diverse_core.llm.structured import RoleCompletion
        >>> v = {"steps": [{"reason": "Total Score: 10", "score": 4}], "short_answer": "x",
        ...      "total_score": 4}
        >>> r = read_evaluation(RoleCompletion("{}", path="structured", method="json_schema", value=v), 1)
        >>> r.score, r.source
        (4.0, 'total')
    """
    if prefer not in {"total", "steps"}:
        raise ValueError(f"prefer must be 'total' or 'steps'; got prefer={prefer!r}")
    n_steps = max(1, int(n_steps))
    value, notes = structured_value(out)
    if isinstance(value, dict):
        return _from_object(value, n_steps, prefer, list(notes))
    parsed = parse_evaluation(out.text, n_steps, prefer=prefer, passages=passages)
    if not notes:
        return parsed
    return dataclasses.replace(parsed, notes=(*notes, *parsed.notes))
