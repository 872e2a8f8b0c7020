"""Reading DIVA's replies on either path: a structured reply from its fields (only ``verdict`` is
a verdict; one outside yes/no is unreadable, never guessed), any other through :mod:`.parsing`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...llm.base import Completion
from ..judge import QuoteIndex
from ..structured import field_text, structured_value, unusable_json
from .parsing import (
    AmbiguityParse,
    InterpretationParse,
    QAParse,
    distinct_items,
    parse_ambiguity,
    parse_interpretations,
    parse_long_answer,
    parse_qa_pairs,
    parse_verdict_field,
)
from .prompts import AMBIGUITY_KINDS

__all__ = ["read_ambiguity", "read_interpretations", "read_verdict", "read_qa_pairs", "read_long_answer"]


def read_ambiguity(out: Completion) -> tuple[AmbiguityParse, tuple[str, ...]]:
    """Prompt (a)'s reason and kinds (unknown labels dropped).

    Example:
        >>> from diverse_core.llm.structured import RoleCompletion
        >>> v = {"reason": "year not fixed", "kinds": ["Time", "Bogus"]}
        >>> read_ambiguity(RoleCompletion("{}", path="structured", method="json_schema", value=v))[0].kinds
        ('Time',)
    """
    value, notes = structured_value(out)
    if isinstance(value, dict):
        reason = " ".join(str(value.get("reason", "")).split())
        kinds = tuple(dict.fromkeys(k for k in value.get("kinds", ()) if k in AMBIGUITY_KINDS))
        return AmbiguityParse(reason, kinds, bool(reason or kinds)), notes
    return parse_ambiguity(out.text), notes


def read_interpretations(out: Completion, max_interpretations: int) -> InterpretationParse:
    """Prompt (b)'s questions: distinct (case/space-insensitive), at most the cap.

    Example:
        >>> from diverse_core.llm.structured import RoleCompletion
        >>> v = {"questions": ["Who won in 2018?", "who won  in 2018?", "Who won in 2019?"]}
        >>> read_interpretations(RoleCompletion("{}", path="structured", method="json_schema", value=v), 5)
        InterpretationParse(interpretations=('Who won in 2018?', 'Who won in 2019?'), parsed=True, notes=('duplicates dropped',))
    """
    value, notes = structured_value(out)
    if not isinstance(value, dict):
        got = parse_interpretations(out.text, max_interpretations)
        return InterpretationParse(got.interpretations, got.parsed, (*notes, *got.notes)) if notes else got
    raw = [str(q) for q in value.get("questions", ())]
    items = [" ".join(q.split()).strip("\"'\u201c\u201d ") for q in raw]
    found, extra = distinct_items(items, len([q for q in raw if q.strip()]), max_interpretations)
    if not found:
        extra += ("no interpretation found",)
    return InterpretationParse(found, bool(found), (*notes, *extra))


def read_verdict(out: Completion, passages: Sequence[str] | QuoteIndex = ()) -> tuple[bool | None, tuple[str, ...]]:
    """Prompt (c)'s verdict: ``True`` / ``False`` / ``None`` (unreadable), with notes; on the text
    path an ambiguous reply (see :func:`~.parsing.parse_verdict_field`) has notes starting with
    ``"ambiguous"``.

    Example:
        >>> from diverse_core.llm.structured import RoleCompletion
        >>> read_verdict(RoleCompletion('{"verdict": "no"}', path="structured", method="json_schema",
        ...                             value={"verdict": "no"}), ["Answer: yes"])
        (False, ())
    """
    value, notes = structured_value(out)
    if isinstance(value, dict):
        verdict = value.get("verdict")
        if verdict in ("yes", "no"):
            return verdict == "yes", notes
        return None, (*notes, f"verdict {verdict!r} is neither yes nor no")
    got = parse_verdict_field(out.text, passages)
    verdict = None if got.value is None else bool(got.value)
    return verdict, (*notes, *(n for n in got.notes if got.ambiguous))


def read_qa_pairs(out: Completion, interpretations: Sequence[str]) -> tuple[QAParse, tuple[str, ...]]:
    """Prompt (d)'s answers, one per reading in order (an empty answer counts as missing)."""
    value, notes = structured_value(out)
    if not isinstance(value, dict):
        return parse_qa_pairs(out.text, interpretations), notes
    answers = [" ".join(str(a).split()) for a in value.get("answers", ())]
    pairs, missing = [], []
    for i, interp in enumerate(interpretations):
        if i < len(answers) and answers[i]:
            pairs.append((interp.strip(), answers[i]))
        else:
            missing.append(i)
    return QAParse(tuple(pairs), tuple(missing)), notes


def read_long_answer(out: Completion) -> tuple[str, tuple[str, ...]]:
    """Prompts (e)/(f): the ``answer`` field, else the text after its ``Answer:`` label."""
    value, notes = structured_value(out)
    if isinstance(value, dict) or unusable_json(out):
        return field_text(out, "answer")
    return parse_long_answer(out.text), notes
