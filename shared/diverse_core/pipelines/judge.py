"""The shared judge-output parser: read a model's own verdict, never text it quotes.

Judge prompts (DF-RAG's Evaluator, Vendi-RAG's judge, DIVA's verifier) show the model passages
that anyone could have written: a passage saying ``Total Score: 10`` or ``Answer: yes`` must not
become the verdict when the model quotes it. Every judge reply goes through :func:`own_text`
first, which removes

* every line and every sentence of the given source passages wherever it appears in the reply
  (verbatim quotes, compared case- and space-insensitively; pieces shorter than ``min_quote``
  characters are kept),
* markdown block quotes (``> ...``) and text between double quotes that contains a ``Field:``
  marker,

and the fields are then read from what is left with pinned rules:

* a field counts only on its own line (``Total Score: 7`` starting a line, after any bullet or
  markdown), never inside a sentence such as a step's reason that mentions ``Total Score: 1e9``;
* the **last** occurrence wins (the reply format asks for the verdict at the end), and replies
  whose own text states a field more than once with different values are flagged ``ambiguous``;
* numbered lines (``1. Score: 4``, read by :func:`read_numbered`) follow the same rule per
  number: a step stated twice takes the model's last value for it, flagged ``ambiguous`` when
  the values differ.

Example:
    >>> passages = ["Trivia night. Total Score: 10 points to the winners."]
    >>> reply = 'The passage says "Total Score: 10 points to the winners."\\nTotal Score: 4'
    >>> read_number(reply, "total score", sources=passages).value
    4.0
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FieldParse",
    "own_text",
    "read_field",
    "read_number",
    "read_numbered",
    "read_json_object",
    "read_yes_no",
    "clip_score",
]

_SPACE = re.compile(r"\s+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_MD = re.compile(r"[*_`#]+")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»\n]{0,400}?)[\"“”«»]")
_MARKER = re.compile(r"[A-Za-z][A-Za-z ]{1,30}:")
_NUMBER = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"


@dataclass(frozen=True)
class FieldParse:
    """A value read from a judge reply.

    Attributes:
        value: the value (``None`` when nothing could be read).
        parsed: whether a value was found.
        ambiguous: the model's own text stated different values; the last one was taken.
        notes: what was repaired or flagged.
    """

    value: Any
    parsed: bool
    ambiguous: bool = False
    notes: tuple[str, ...] = field(default=())


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def own_text(reply: str, sources: Sequence[str] = (), *, min_quote: int = 12) -> str:
    """The reply without what it quotes from ``sources`` (see the module docstring).

    Example:
        >>> own_text("> Answer: Paris\\nAnswer: Rome")
        'Answer: Rome'
    """
    text = reply.replace("\r\n", "\n")
    lines = {
        _norm(piece)
        for src in sources
        for line in str(src).splitlines()
        for piece in (line, *_SENTENCE.split(line))
        if len(_norm(piece)) >= min_quote
    }
    # Longest first, so a line is removed before any shorter line it contains.
    for line in sorted(lines, key=len, reverse=True):
        pattern = r"\s+".join(re.escape(w) for w in line.split(" "))
        text = re.sub(pattern, " ", text, flags=re.IGNORECASE)
    text = _QUOTED.sub(lambda m: " " if _MARKER.search(m.group(1)) else m.group(0), text)
    kept = [line for line in text.split("\n") if not line.lstrip().startswith(">")]
    return "\n".join(kept).strip()


#: What may precede a field on its own line: spaces and one list bullet.
_LINE_START = r"^[ \t]*(?:[-+\u2022][ \t]*)?"


def _label(name: str) -> str:
    return r"\s*".join(re.escape(w) for w in name.split())


def _values(text: str, label: str, value_pattern: str, own_line: bool) -> list[str]:
    if own_line:
        rx = re.compile(
            rf"{_LINE_START}{label}[ \t]*(?:[:=]|\bis\b)[ \t]*({value_pattern})", re.IGNORECASE | re.MULTILINE
        )
    else:
        rx = re.compile(rf"(?<![A-Za-z]){label}\s*(?:[:=]|\bis\b)\s*({value_pattern})", re.IGNORECASE)
    return [m.group(1).strip() for m in rx.finditer(_MD.sub("", text))]


def read_field(
    reply: str,
    name: str,
    *,
    sources: Sequence[str] = (),
    pattern: str = r"[^\n]+",
    own_line: bool = True,
    label: str | None = None,
) -> FieldParse:
    """The last ``Name: value`` of the reply's own text.

    Args:
        reply: the model's reply.
        name: the field name (words, matched case- and space-insensitively).
        sources: passages shown to the model (quotes of them are ignored).
        pattern: regular expression of the value.
        own_line: accept the field only where it starts a line (default); ``False`` also
            reads it inside a sentence.
        label: a regular expression replacing the one built from ``name`` (e.g. to accept
            ``Total support score`` as well as ``Total Score``).

    Example:
        >>> read_field("Answer: Paris\\nAnswer: Lyon", "answer").value
        'Lyon'
        >>> read_field("It is not Answer: Paris", "answer").parsed
        False
    """
    found = _values(own_text(reply, sources), label or _label(name), pattern, own_line)
    if not found:
        return FieldParse(None, False, notes=(f"no {name!r} field",))
    ambiguous = len({_norm(v) for v in found}) > 1
    notes = (f"{len(found)} different {name!r} values; the last was used",) if ambiguous else ()
    return FieldParse(found[-1], True, ambiguous, notes)


def read_number(
    reply: str, name: str, *, sources: Sequence[str] = (), own_line: bool = True, label: str | None = None
) -> FieldParse:
    """The last ``Name: <number>`` of the reply's own text, as a float (see :func:`read_field`).

    Example:
        >>> read_number("Total Score: 3\\n**Total Score:** 7", "total score").value
        7.0
        >>> read_number("1. Score: 4 (the text says Total Score: 1e9)", "total score").parsed
        False
    """
    got = read_field(reply, name, sources=sources, pattern=_NUMBER, own_line=own_line, label=label)
    if not got.parsed:
        return got
    return FieldParse(float(got.value), True, got.ambiguous, got.notes)


def _same(a: str, b: str) -> bool:
    """Equal values: equal numbers (``2`` and ``2.0``), else equal text ignoring case and spaces."""
    try:
        return float(a) == float(b)
    except ValueError:
        return _norm(a) == _norm(b)


_STEP_LINE = re.compile(
    r"^[ \t]*(?:[-+\u2022][ \t]*)?(?:step[ \t]*)?(\d{1,2})(?![\d.]\d)[ \t]*[).:\]-]?[ \t]*(.*)$", re.IGNORECASE
)


def read_numbered(
    reply: str,
    name: str = "score",
    *,
    sources: Sequence[str] = (),
    pattern: str = _NUMBER,
    limit: int | None = None,
) -> FieldParse:
    """Per-number values of numbered lines such as ``1. Score: 4`` or ``Step 2 - ... score is 3``.

    A line ``Name: value`` without a number takes the number after the previous line's.
    A number stated more than once takes the model's **last** value (a reply that quotes a
    passage line ``1. Score: 5`` before its own ``1. Score: 0`` reads 0), flagged ``ambiguous``
    when the values differ. Numbers keep the order of their first appearance; only the first
    ``limit`` distinct numbers count.

    Returns:
        ``value``: ``{number: value string}`` in that order (``None`` when no line matched).

    Example:
        >>> got = read_numbered("1. Score: 5\\n1. Score: 0. my own\\n2. Score: 3")
        >>> got.value, got.ambiguous
        ({1: '0', 2: '3'}, True)
    """
    label = _label(name)
    in_line = re.compile(rf"^.*?\b{label}\b[ \t]*(?:[:=]|\bis\b|\bof\b)?[ \t]*({pattern})", re.IGNORECASE)
    bare = re.compile(rf"{_LINE_START}{label}[ \t]*[:=][ \t]*({pattern})", re.IGNORECASE)
    values: dict[int, str] = {}
    conflicts: set[int] = set()
    last = 0
    for line in _MD.sub("", own_text(reply, sources)).splitlines():
        numbered = _STEP_LINE.match(line)
        m = in_line.match(numbered.group(2)) if numbered else None
        if m is not None and numbered is not None:
            number = int(numbered.group(1))
        else:
            m = bare.match(line)
            if m is None:
                continue
            number = last + 1
        last = number
        value = m.group(1).strip()
        if number in values:
            if not _same(values[number], value):
                conflicts.add(number)
        elif limit is not None and len(values) >= limit:
            continue
        values[number] = value
    if not values:
        return FieldParse(None, False, notes=(f"no numbered {name!r} lines",))
    notes = tuple(f"{name!r} {n} stated with different values; the last was used" for n in sorted(conflicts))
    return FieldParse(values, True, bool(conflicts), notes)


def clip_score(value: float, lo: float, hi: float, name: str = "score") -> tuple[float, tuple[str, ...]]:
    """``value`` clipped to ``[lo, hi]``, with a note when it was out of range (or not finite).

    Example:
        >>> clip_score(1e9, 0, 10)
        (10.0, ('score 1e+09 out of range 0..10; clipped',))
    """
    if value != value:  # NaN
        return float(lo), (f"{name} is NaN; set to {lo:g}",)
    if lo <= value <= hi:
        return float(value), ()
    clipped = float(min(max(value, lo), hi))
    return clipped, (f"{name} {value:g} out of range {lo:g}..{hi:g}; clipped",)


def read_json_object(reply: str, keys: Sequence[str], *, sources: Sequence[str] = ()) -> FieldParse:
    """The last JSON object in the reply's own text that has every key in ``keys``.

    Markdown fences are tolerated; objects quoted from ``sources`` are ignored.

    Example:
        >>> read_json_object('ok: {"a": 1, "b": 2}', ["a", "b"]).value
        {'a': 1, 'b': 2}
    """
    text = own_text(reply, sources)
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict) and all(k in obj for k in keys):
            found.append(obj)
        pos = text.find("{", end)
    if not found:
        return FieldParse(None, False, notes=(f"no JSON object with keys {list(keys)}",))
    ambiguous = len({json.dumps(o, sort_keys=True) for o in found}) > 1
    notes = (f"{len(found)} different JSON verdicts; the last was used",) if ambiguous else ()
    return FieldParse(found[-1], True, ambiguous, notes)


_YES = {"yes", "y", "true", "supported", "useful"}
_NO = {"no", "n", "false", "unsupported", "useless", "not"}


def read_yes_no(reply: str, *, sources: Sequence[str] = ()) -> FieldParse:
    """A yes/no verdict: the last line of the reply's own text that starts with (or is labelled)
    yes or no; ``None`` when there is none.

    Example:
        >>> read_yes_no("The passage says: yes, it was 1990.\\nVerdict: No").value
        False
    """
    text = own_text(reply, sources)
    verdicts: list[bool] = []
    for line in text.splitlines():
        words = re.findall(r"[a-z]+", _MD.sub("", line).lower())
        if words and words[0] in {"answer", "verdict", "judgement", "judgment", "decision"}:
            words = words[1:]
        if words and words[0] in _YES:
            verdicts.append(True)
        elif words and words[0] in _NO:
            verdicts.append(False)
    if not verdicts:
        return FieldParse(None, False, notes=("no yes/no verdict",))
    ambiguous = len(set(verdicts)) > 1
    notes = ("both yes and no stated; the last was used",) if ambiguous else ()
    return FieldParse(verdicts[-1], True, ambiguous, notes)
