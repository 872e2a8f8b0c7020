"""Tolerant parsers for DIVA's LLM replies, and the verdict aggregation (In et al. 2024, Eq. 7).

None of them raises on odd text; what they cannot read is reported (``parsed=False``, ``None``),
never guessed, and a verdict is only the reply's own (see :func:`parse_verdict_field`).

Example:
    >>> parse_verdict_field('Passage [2] reads "Yes, in 1998".\\nVerdict: No').value
    False
    >>> aggregate_verdicts([True, None, False]).grade.value
    'PartialUseful'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from ...errors import InvalidParameterError
from ..dfrag.parsing import parse_plan
from ..judge import FieldParse, QuoteIndex, read_yes_no
from .prompts import AMBIGUITY_KINDS, DEFAULT_MAX_INTERPRETATIONS

__all__ = [
    "Usefulness",
    "InterpretationParse",
    "AmbiguityParse",
    "VerdictSummary",
    "QAParse",
    "parse_interpretations",
    "parse_ambiguity",
    "parse_verdict_field",
    "aggregate_verdicts",
    "parse_qa_pairs",
    "parse_long_answer",
]

_MD = re.compile(r"[*_`#]+")
# "DQ 1:", "Question 2.", "Interpretation 3)" -> "1:", "2.", "3)" (parse_plan reads plain numbers).
_ITEM_PREFIX = re.compile(
    r"^(\s*(?:[-*+\u2022]\s*)?)(?:d?q|question|interpretation|disambiguation|reading)\s*(?=\d{1,2}\s*[).:\]-])",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\"[^\"]{6,}\"|\u201c[^\u201d]{6,}\u201d", re.DOTALL)
_CITATION = re.compile(r"^\s*(?:\[\d+\]|passage\s*\d+\s*[:.)])", re.IGNORECASE)
_KINDS_LINE = re.compile(r"^\s*(?:kinds?|types?)\s*:\s*(.*)$", re.IGNORECASE)
_REASON_LABEL = re.compile(r"^\s*reason\s*:\s*", re.IGNORECASE)
_QA_LINE = re.compile(r"^\s*(?:d)?([qa])\s*(\d{1,2})\s*[:.)\-]\s*(.*)$", re.IGNORECASE)
_ANSWER_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*", re.IGNORECASE | re.MULTILINE)


class Usefulness(str, Enum):
    """The paper's retrieval-quality grades."""

    USEFUL = "Useful"
    PARTIAL = "PartialUseful"
    USELESS = "Useless"


@dataclass(frozen=True)
class InterpretationParse:
    """Interpretations read from a rewrite reply.

    Attributes:
        interpretations: distinct questions in reply order, at most the cap (may be empty).
        parsed: ``False`` when no list item was found.
        notes: what was repaired (duplicates dropped, cap applied, nothing found).
    """

    interpretations: tuple[str, ...]
    parsed: bool
    notes: tuple[str, ...] = field(default=())


def parse_interpretations(
    text: str, max_interpretations: int = DEFAULT_MAX_INTERPRETATIONS
) -> InterpretationParse:
    """Read the numbered (or bulleted) unambiguous questions of a rewrite reply.

    Prose and headings around the list are ignored, ``DQ 1:``/``Question 1:`` prefixes
    are accepted, a repeated list (an echoed example) is cut where the numbering
    restarts, and case/space-insensitive duplicates are dropped.

    Example:
        >>> parse_interpretations("Sure.\\n1: Who won in 2018?\\n2. **Who won in 2019?**").interpretations
        ('Who won in 2018?', 'Who won in 2019?')
        >>> parse_interpretations("I cannot tell.").parsed
        False
    """
    if isinstance(max_interpretations, bool) or not isinstance(max_interpretations, int) or max_interpretations < 1:
        raise InvalidParameterError(
            f"max_interpretations must be a positive integer; got max_interpretations={max_interpretations!r}"
        )
    lines = [_ITEM_PREFIX.sub(r"\1", _MD.sub("", raw)) for raw in text.splitlines()]
    plan = parse_plan("\n".join(lines), "", max_steps=99)
    if not plan.parsed:
        return InterpretationParse((), False, ("no interpretation found",))
    items = [step.strip().strip("\"'\u201c\u201d").strip() for step in plan.steps]
    found, notes = distinct_items(items, len(plan.steps), max_interpretations)
    return InterpretationParse(found, bool(found), notes)


def distinct_items(items: Sequence[str], given: int, cap: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(items, notes)``: the non-empty ``items`` without case/space-insensitive repeats, at most
    ``cap``; ``given`` is how many there were before clean-up."""
    seen: dict[str, str] = {}
    for item in items:
        if item:
            seen.setdefault(" ".join(item.lower().split()), item)
    found = list(seen.values())
    notes = ["duplicates dropped"] if len(found) < given else []
    if len(found) > cap:
        notes.append(f"capped at {cap}")
    return tuple(found[:cap]), tuple(notes)


@dataclass(frozen=True)
class AmbiguityParse:
    """The reply of prompt (a).

    Attributes:
        reason: why the question is ambiguous (the text before the ``Kinds:`` line).
        kinds: recognised labels from :data:`AMBIGUITY_KINDS`, in reply order.
        parsed: ``False`` when neither a reason nor a label was found.
    """

    reason: str
    kinds: tuple[str, ...]
    parsed: bool


def parse_ambiguity(text: str) -> AmbiguityParse:
    """Read the reason and the ambiguity labels of a prompt (a) reply.

    Example:
        >>> r = parse_ambiguity("Reason: the year is not fixed.\\nKinds: [Time], [Location]")
        >>> r.reason, r.kinds
        ('the year is not fixed.', ('Time', 'Location'))
    """
    reason_lines: list[str] = []
    kinds: list[str] = []
    by_name = {k.lower(): k for k in AMBIGUITY_KINDS}
    for raw in text.splitlines():
        line = _MD.sub("", raw).strip()
        m = _KINDS_LINE.match(line)
        if m:
            for label in re.findall(r"\[([^\]]+)\]", m.group(1)) or m.group(1).split(","):
                name = by_name.get(label.strip().lower().removeprefix("amb"))
                if name and name not in kinds:
                    kinds.append(name)
            break
        if line:
            reason_lines.append(_REASON_LABEL.sub("", line))
    reason = " ".join(" ".join(reason_lines).split())
    return AmbiguityParse(reason, tuple(kinds), bool(reason or kinds))


def parse_verdict_field(text: str, passages: Sequence[str] | QuoteIndex = ()) -> FieldParse:
    """The verdict of a verification reply with its flags (``value``: ``True`` / ``False`` /
    ``None``; ``ambiguous``: the pipeline warns).

    The shared judge parser (:func:`~diverse_core.pipelines.judge.read_yes_no`) reads it:
    the model's own line that starts with, or is labelled, yes or no; lines and sentences
    quoted verbatim from ``passages`` and block quotes do not count, and a line that could be
    an echo of a passage (``Yes.`` when a passage says "Yes.") loses to the model's own.
    Before that, DIVA also drops partial quotes: double-quoted spans of six characters
    or more (a quoted ``"Yes"`` stays) and passage citation lines (``[2] ...``).

    Example:
        >>> got = parse_verdict_field("Verdict: No\\nYes.", ["Was it open? Yes."])
        >>> got.value, got.ambiguous
        (False, True)
    """
    body = _QUOTED.sub(" ", text)
    own = "\n".join(ln for ln in body.splitlines() if not _CITATION.match(_MD.sub("", ln)))
    return read_yes_no(own, sources=passages)


@dataclass(frozen=True)
class VerdictSummary:
    """Aggregated verification (Eq. 7).

    Attributes:
        grade: Useful (every interpretation supported), PartialUseful (some) or Useless (none).
        counted: the verdicts as counted (unreadable replaced by ``unreadable_as``).
        unreadable: positions of the unreadable verdicts (the pipeline flags them).
    """

    grade: Usefulness
    counted: tuple[bool, ...]
    unreadable: tuple[int, ...]

    @property
    def yes(self) -> int:
        """Number of interpretations counted as supported."""
        return sum(self.counted)


def aggregate_verdicts(verdicts: Sequence[bool | None], unreadable_as: bool = True) -> VerdictSummary:
    """Grade one passage set from its per-interpretation verdicts.

    Args:
        verdicts: one verdict per interpretation (``None`` = unreadable reply).
        unreadable_as: how an unreadable verdict counts (the issue: as yes).

    Example:
        >>> s = aggregate_verdicts([True, True, None])
        >>> s.grade.value, s.unreadable
        ('Useful', (2,))
        >>> aggregate_verdicts([False, None], unreadable_as=False).grade.value
        'Useless'
    """
    if len(verdicts) == 0:
        raise InvalidParameterError("verdicts must hold at least one verdict; got an empty sequence")
    unreadable = tuple(i for i, v in enumerate(verdicts) if v is None)
    counted = tuple(bool(unreadable_as) if v is None else bool(v) for v in verdicts)
    yes = sum(counted)
    grade = (
        Usefulness.USEFUL if yes == len(counted) else Usefulness.USELESS if yes == 0 else Usefulness.PARTIAL
    )
    return VerdictSummary(grade, counted, unreadable)


@dataclass(frozen=True)
class QAParse:
    """Question-answer pairs of a prompt (d) reply.

    Attributes:
        pairs: ``(question, answer)`` per interpretation that got an answer, in
            interpretation order (the reply's ``Q<n>`` text when given, else the
            interpretation itself).
        missing: 0-based interpretations without an answer line.
    """

    pairs: tuple[tuple[str, str], ...]
    missing: tuple[int, ...]


def parse_qa_pairs(text: str, interpretations: Sequence[str]) -> QAParse:
    """Read ``Q<n>:`` / ``A<n>:`` (or ``DQ n`` / ``DA n``) lines, one answer per interpretation.

    Example:
        >>> parse_qa_pairs("Q1: Men?\\nA1: Ronaldo\\nA2: Sinclair", ["Men?", "Women?"]).pairs
        (('Men?', 'Ronaldo'), ('Women?', 'Sinclair'))
    """
    questions: dict[int, str] = {}
    answers: dict[int, str] = {}
    for raw in text.splitlines():
        m = _QA_LINE.match(_MD.sub("", raw))
        if not m or not m.group(3).strip():
            continue
        target = questions if m.group(1).lower() == "q" else answers
        target.setdefault(int(m.group(2)) - 1, m.group(3).strip())
    pairs, missing = [], []
    for i, interp in enumerate(interpretations):
        if i in answers:
            pairs.append((questions.get(i, interp.strip()), answers[i]))
        else:
            missing.append(i)
    return QAParse(tuple(pairs), tuple(missing))


def parse_long_answer(text: str) -> str:
    """The long answer of a prompt (e)/(f) reply: the text after the first ``Answer:`` label.

    Example:
        >>> parse_long_answer("Here you go.\\nAnswer: It depends on the year.")
        'It depends on the year.'
    """
    m = _ANSWER_LABEL.search(text)
    return (text[m.end() :] if m else text).strip()
