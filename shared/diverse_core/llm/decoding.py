"""Decoding a structured reply: bounded, never raising, validated and repaired where it can be."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .schema import OutputSchema, SchemaProblem

__all__ = ["MAX_PROBLEMS", "MAX_REPLY_CHARS", "decode_json", "repair_value"]


#: The longest structured reply decoded (characters): a longer one is flagged, never decoded, so
#: no reply makes decoding take unbounded time or memory (the pipelines' are a few thousand).
MAX_REPLY_CHARS = 200_000
#: At most this many schema problems are listed per reply (then one saying how many more).
MAX_PROBLEMS = 20


def _repair(value: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of ``value`` without unknown keys of closed objects, strings and arrays cut to
    their ``maxLength`` / ``maxItems``."""
    kind = schema.get("type")
    if isinstance(value, dict) and kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        closed = schema.get("additionalProperties") is False
        return {k: (_repair(v, props[k]) if k in props else v) for k, v in value.items()
                if not closed or k in props}
    if isinstance(value, (list, tuple)) and kind == "array":
        n = schema.get("maxItems")
        kept = list(value[: int(n)] if isinstance(n, int) else value)
        items = schema.get("items")
        return [_repair(v, items) for v in kept] if isinstance(items, Mapping) else kept
    if isinstance(value, str) and kind == "string" and isinstance(schema.get("maxLength"), int):
        return value[: int(schema["maxLength"])]
    return value


def _capped(problems: Sequence[SchemaProblem]) -> tuple[SchemaProblem, ...]:
    if len(problems) <= MAX_PROBLEMS:
        return tuple(problems)
    more = len(problems) - MAX_PROBLEMS
    return (*problems[:MAX_PROBLEMS], SchemaProblem("", "more", f"... and {more} more schema problems"))


def repair_value(value: Any, schema: OutputSchema) -> tuple[Any, tuple[SchemaProblem, ...]]:
    """Validate ``value`` and repair what can be repaired: ``(value, problems)``.

    Unknown keys are dropped and over-long strings and arrays cut (flagged, saying so); a wrong
    type or a missing key rejects the value (``None``); a value outside an enum or bound is kept
    and flagged. ``problems`` is empty only for a conforming value.

    Example:
        >>> from diverse_core.llm.schema import obj, string
        >>> s = OutputSchema("a", obj({"answer": string(5)}))
        >>> v, probs = repair_value({"answer": "Mangalia", "confidence": 0.9}, s)
        >>> v, [str(p) for p in probs]
        ({'answer': 'Manga'}, ["value has unknown key 'confidence' (dropped)", 'answer has 8 characters; at most 5 allowed (cut)'])
        >>> repair_value({"answer": 42}, s)[0] is None
        True
    """
    problems = schema.validate(value)
    if not problems:
        return value, ()
    if any(p.kind in {"type", "missing"} for p in problems):
        return None, _capped(problems)
    fixed = _repair(value, schema.schema)
    left = schema.validate(fixed)
    if any(p.shape for p in left):  # e.g. a closed object whose schema names no type
        return None, _capped(problems)
    cut = {"extra": " (dropped)", "length": " (cut)"}
    flagged = []
    for p in problems:
        repaired = p.kind == "extra" or (p.kind == "length" and p not in left)
        note = cut.get(p.kind, "") if repaired else ""
        flagged.append(SchemaProblem(p.path, p.kind, f"{p.message}{note}") if note else p)
    return fixed, _capped(flagged)


def decode_json(text: str, schema: OutputSchema, *,
                max_chars: int = MAX_REPLY_CHARS) -> tuple[Any, tuple[SchemaProblem, ...]]:
    """Decode a structured reply, validate it and repair what can be repaired.

    Tolerates a markdown fence, whitespace and raw control characters inside strings. Returns
    ``(value, problems)`` as :func:`repair_value`; ``value`` is ``None`` (and ``problems`` says
    why) for text that is no JSON object of the schema's shape. It never raises: a reply longer
    than ``max_chars``, too many digits or too deep nesting is unreadable like any other.

    Example:
        >>> from diverse_core.llm.schema import int_range, obj
        >>> s = OutputSchema("a", obj({"n": int_range(0, 5)}))
        >>> decode_json('```json\\n{"n": 9}\\n```', s)[0], [str(p) for p in decode_json('{"n": 9}', s)[1]]
        ({'n': 9}, ['n=9 is not one of 0..5'])
        >>> decode_json("no json here", s)[0] is None
        True
        >>> decode_json('{"n": ' + "9" * 5001 + "}", s)[0] is None
        True
    """
    if not isinstance(text, str):
        return None, (SchemaProblem("", "type", f"reply is not text ({type(text).__name__})"),)
    if len(text) > max_chars:
        return None, (SchemaProblem("", "size", f"reply has {len(text)} characters; more than the "
                                                f"{max_chars} decoded (MAX_REPLY_CHARS)"),)
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and body.count("```") == 2:  # one fence, nothing after
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        # strict=False: a raw newline or tab inside a string (grammar engines allow them) is read
        # as that character; it is unambiguous, unlike anything else JSON forbids.
        value = json.loads(body, strict=False)
    except json.JSONDecodeError as exc:
        return None, (SchemaProblem("", "type", f"reply is not valid JSON ({exc.msg} at char {exc.pos})"),)
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        return None, (SchemaProblem("", "type", f"reply is not readable JSON ({str(exc)[:80]})"),)
    except RecursionError:
        return None, (SchemaProblem("", "type", "reply is not readable JSON (nested too deeply)"),)
    return repair_value(value, schema)
