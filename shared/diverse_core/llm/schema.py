"""Role output schemas: builders for the JSON-schema subset grammar engines enforce, the
validator and the fitting of length bounds to a grammar engine and a token budget."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHARS_PER_TOKEN",
    "GRAMMAR_MAX_LENGTH",
    "OutputSchema",
    "SchemaProblem",
    "array",
    "enum_of",
    "int_range",
    "longest_json",
    "obj",
    "string",
    "token_budget",
]

#: The longest ``maxLength`` sent to a backend: llama.cpp's grammar compiler refuses longer
#: bounded strings (llama-cpp-python 0.3.36: 1000 passes, 1200 fails) and its server drops the call.
GRAMMAR_MAX_LENGTH = 1000
#: Characters per token assumed when a schema is fitted to ``max_tokens`` (half the ~4 of English BPE).
CHARS_PER_TOKEN = 2.0


# ----------------------------------------------------------------------------- schema builders
def obj(properties: Mapping[str, Mapping[str, Any]], *, required: Sequence[str] | None = None) -> dict[str, Any]:
    """A closed JSON object schema (every property required unless ``required`` says otherwise)."""
    return {
        "type": "object",
        "properties": {k: dict(v) for k, v in properties.items()},
        "required": list(properties if required is None else required),
        "additionalProperties": False,
    }


def array(items: Mapping[str, Any], *, min_items: int = 0, max_items: int | None = None) -> dict[str, Any]:
    """An array schema."""
    out: dict[str, Any] = {"type": "array", "items": dict(items), "minItems": min_items}
    if max_items is not None:
        out["maxItems"] = max_items
    return out


def string(max_length: int | None = None, *, min_length: int = 0) -> dict[str, Any]:
    """A string schema (``max_length`` bounds what a grammar lets the model write)."""
    out: dict[str, Any] = {"type": "string"}
    if min_length:
        out["minLength"] = min_length
    if max_length is not None:
        out["maxLength"] = max_length
    return out


def int_range(lo: int, hi: int) -> dict[str, Any]:
    """An integer in ``lo..hi`` written as an ``enum`` *and* bounds: grammar engines that ignore
    ``minimum``/``maximum`` still enforce the enum.

    Example:
        >>> int_range(0, 3)["enum"]
        [0, 1, 2, 3]
    """
    if hi < lo:
        raise ValueError(f"int_range needs lo <= hi; got lo={lo}, hi={hi}")
    return {"type": "integer", "enum": list(range(lo, hi + 1)), "minimum": lo, "maximum": hi}


def enum_of(*values: str) -> dict[str, Any]:
    """A string restricted to ``values``."""
    return {"type": "string", "enum": list(values)}


# ----------------------------------------------------------------------------- validation
@dataclass(frozen=True)
class SchemaProblem:
    """One way a decoded value breaks its schema.

    Attributes:
        path: where, e.g. ``"steps[1].score"`` (``""`` = the whole value).
        kind: ``"type"`` / ``"missing"`` / ``"extra"`` (a wrong *shape*), ``"range"`` (outside
            an enum or bound), ``"length"`` (too many / too few items or characters), ``"size"``
            (a reply too long to decode) or ``"more"`` (problems not listed).
        message: a readable description.
    """

    path: str
    kind: str
    message: str

    @property
    def shape(self) -> bool:
        """Whether the value's shape is broken (not just a bound)."""
        return self.kind in {"type", "missing", "extra"}

    def __str__(self) -> str:
        return self.message


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, name: str) -> bool:
    if name in {"integer", "number"} and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    if name == "number" and isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, _TYPES.get(name, (object,)))


def _check(value: Any, schema: Mapping[str, Any], path: str, out: list[SchemaProblem]) -> None:
    where = path or "value"
    kind = schema.get("type")
    if isinstance(kind, str) and not _type_ok(value, kind):
        out.append(SchemaProblem(path, "type", f"{where} should be {kind}; got {value!r:.60}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        opts = list(schema["enum"])
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in opts)
        run = ints and len(opts) > 2 and opts == list(range(opts[0], opts[0] + len(opts)))
        shown = f"{opts[0]}..{opts[-1]}" if run else opts
        out.append(SchemaProblem(path, "range", f"{where}={value!r:.60} is not one of {shown}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if "enum" not in schema and ((lo is not None and value < lo) or (hi is not None and value > hi)):
            out.append(SchemaProblem(path, "range", f"{where}={value!r} is outside {lo}..{hi}"))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > int(schema["maxLength"]):
            out.append(SchemaProblem(path, "length", f"{where} has {len(value)} characters; at most "
                                                     f"{schema['maxLength']} allowed"))
        if len(value) < int(schema.get("minLength", 0)):
            out.append(SchemaProblem(path, "length", f"{where} is shorter than {schema['minLength']} characters"))
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                out.append(SchemaProblem(f"{path}.{key}".lstrip("."), "missing", f"{where} lacks {key!r}"))
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in props:
                    out.append(SchemaProblem(f"{path}.{key}".lstrip("."), "extra", f"{where} has unknown key {key!r}"))
        for key, sub in props.items():
            if key in value:
                _check(value[key], sub, f"{path}.{key}".lstrip("."), out)
    if isinstance(value, (list, tuple)):
        n = len(value)
        if n < int(schema.get("minItems", 0)):
            out.append(SchemaProblem(path, "length", f"{where} has {n} items; at least {schema['minItems']} needed"))
        if "maxItems" in schema and n > int(schema["maxItems"]):
            out.append(SchemaProblem(path, "length", f"{where} has {n} items; at most {schema['maxItems']} allowed"))
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _check(item, items, f"{path}[{i}]", out)


@dataclass(frozen=True)
class OutputSchema:
    """A role's output: a JSON schema (the subset grammar engines enforce) with a name.

    Attributes:
        name: a short identifier (``^[A-Za-z0-9_-]+$``; OpenAI and tool calling need one).
        schema: the JSON schema of the object the role returns.
        description: one line saying what the object is (used as the tool's description).

    Example:
        >>> s = OutputSchema("judge", obj({"score": int_range(1, 10)}))
        >>> [p.message for p in s.validate({"score": 2019})]
        ['score=2019 is not one of 1..10']
    """

    name: str
    schema: Mapping[str, Any]
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "_-" for c in self.name):
            raise ValueError(f"OutputSchema.name must match ^[A-Za-z0-9_-]+$; got name={self.name!r}")
        if self.schema.get("type") != "object":
            raise ValueError(f"OutputSchema.schema must describe an object; got type={self.schema.get('type')!r}")

    def validate(self, value: Any) -> tuple[SchemaProblem, ...]:
        """Every way ``value`` breaks the schema (empty when it conforms)."""
        out: list[SchemaProblem] = []
        _check(value, self.schema, "", out)
        return tuple(out)

    def as_dict(self) -> dict[str, Any]:
        """A deep, JSON-ready copy of the schema."""
        copied: dict[str, Any] = json.loads(json.dumps(self.schema))
        return copied

    def grammar_safe(self, max_length: int = GRAMMAR_MAX_LENGTH, *, budget: int | None = None,
                     chars_per_token: float = CHARS_PER_TOKEN) -> OutputSchema:
        """The schema as sent to a backend: string length bounds a grammar engine can compile,
        fitted to the call's token budget.

        * Every ``maxLength`` is capped at ``max_length`` (:data:`GRAMMAR_MAX_LENGTH`).
        * With ``budget`` (the call's ``max_tokens``), when the longest JSON the schema allows
          (:func:`longest_json`) would not fit in ``budget * chars_per_token`` characters, the
          longest strings' ``maxLength`` are lowered to the largest common cap that fits (to 1
          when nothing fits), so a grammar-constrained reply closes its JSON before the model
          runs out of tokens. ``chars_per_token=1`` makes that certain for ASCII text. Schemas
          with an unbounded string or array are left as they are.

        The result accepts a subset of what the original does; replies are always validated
        against the original.

        Example:
            >>> s = OutputSchema("a", obj({"text": string(5000), "tag": string(20)}))
            >>> p = s.grammar_safe().schema["properties"]
            >>> p["text"]["maxLength"], p["tag"]["maxLength"]
            (1000, 20)
            >>> p = s.grammar_safe(budget=80).schema["properties"]  # 80 tokens, about 160 characters
            >>> p["text"]["maxLength"], p["tag"]["maxLength"], longest_json(s.grammar_safe(budget=80).schema) <= 160
            (109, 20, True)
            >>> t = OutputSchema("b", obj({"tag": string(20)}))
            >>> t.grammar_safe(budget=512) is t
            True
        """
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1; got max_length={max_length!r}")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"budget must be a positive integer or None; got budget={budget!r}")
        capped = _scale_lengths(self.as_dict(), lambda n: min(n, max_length))
        if budget is not None:
            if not chars_per_token > 0:
                raise ValueError(f"chars_per_token must be positive; got chars_per_token={chars_per_token!r}")
            capped = _fit_to_budget(capped, int(budget * chars_per_token))
        if capped == self.schema:
            return self
        return OutputSchema(self.name, capped, self.description)


def token_budget(*values: Any) -> int | None:
    """The first of ``values`` that is a positive integer (a ``max_tokens`` setting), else ``None``.

    Example:
        >>> token_budget(None, True, 0, 192, 64)
        192
    """
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)


def _scale_lengths(node: Any, new_length: Any) -> Any:
    """A copy of ``node`` with every integer ``maxLength`` replaced by ``new_length(maxLength)``
    (never below the node's ``minLength``, never below 1)."""
    if isinstance(node, dict):
        out = {k: _scale_lengths(v, new_length) for k, v in node.items()}
        if isinstance(out.get("maxLength"), int):
            out["maxLength"] = max(int(new_length(out["maxLength"])), int(out.get("minLength", 0)), 1)
        return out
    if isinstance(node, list):
        return [_scale_lengths(v, new_length) for v in node]
    return node


_Strings = list[tuple[float, int, int]]  # (multiplicity, maxLength, minLength) of each bounded string


def _longest(node: Mapping[str, Any]) -> tuple[float, _Strings]:
    """``(fixed, strings)``: the longest JSON ``node`` allows is ``fixed`` (``inf``: unbounded)
    plus each bounded string's multiplicity times its ``maxLength`` (an estimate: one space
    around each separator, no escapes)."""
    if "enum" in node:
        return float(max((len(json.dumps(v)) for v in node["enum"]), default=4)), []
    kind = node.get("type")
    if kind == "string":
        if not isinstance(node.get("maxLength"), int):
            return math.inf, []
        return 2.0, [(1.0, int(node["maxLength"]), int(node.get("minLength", 0)))]
    fixed_size = {"integer": 24.0, "number": 24.0, "boolean": 5.0, "null": 4.0}
    if kind in fixed_size:
        return fixed_size[str(kind)], []
    if kind == "array":
        items, n = node.get("items"), node.get("maxItems")
        if not isinstance(items, Mapping) or not isinstance(n, int):
            return math.inf, []
        fixed, strings = _longest(items)
        return 4.0 + n * (fixed + 3.0), [(n * m, hi, lo) for m, hi, lo in strings]
    if kind == "object":
        total, out = 4.0, []
        for key, sub in node.get("properties", {}).items():
            f, strings = _longest(sub)
            total += len(json.dumps(key)) + 6.0 + f  # '"key" : value , '
            out += strings
        return total, out
    return math.inf, []


def _size(fixed: float, strings: _Strings, cap: int) -> float:
    return fixed + sum(m * max(min(hi, cap), lo, 1) for m, hi, lo in strings)


def longest_json(schema: Mapping[str, Any]) -> float:
    """The most characters a JSON value of ``schema`` can take (``inf`` when unbounded).

    Example:
        >>> longest_json(obj({"verdict": enum_of("yes", "no")}))
        24.0
    """
    fixed, strings = _longest(schema)
    return fixed + sum(m * hi for m, hi, _ in strings)


def _fit_to_budget(schema: dict[str, Any], budget: int) -> dict[str, Any]:
    """Cap the longest strings at one common length so that the longest JSON fits ``budget``."""
    fixed, strings = _longest(schema)
    if not strings or not math.isfinite(fixed):
        return schema
    top = max(hi for _, hi, _ in strings)
    if _size(fixed, strings, top) <= budget:
        return schema
    if _size(fixed, strings, 1) > budget:  # cannot fit: the shortest strings make a cut least likely
        shortest: dict[str, Any] = _scale_lengths(schema, lambda n: 1)
        return shortest
    lo, hi = 1, top  # the largest cap that fits: _size(lo) <= budget < _size(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _size(fixed, strings, mid) <= budget else (lo, mid)
    fitted: dict[str, Any] = _scale_lengths(schema, lambda n: min(n, lo))
    return fitted
