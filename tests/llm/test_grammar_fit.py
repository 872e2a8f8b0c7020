"""What the structured path sends to a backend: length bounds a grammar engine can compile
(llama.cpp's server crashed on a 1,200-character ``maxLength``), fitted to the call's token budget
(a 135M model filled a 1,000-character answer and was cut off mid-string), the strict/non-strict
wire forms, and the lenient decoding of raw control characters. Replies are always validated
against the role's original schema."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from diverse_core.llm import Completion, ManagedLLM, Message, OpenAILLM, OutputSchema, RoleRequest
from diverse_core.llm.structured import (
    GRAMMAR_MAX_LENGTH,
    MethodMemory,
    array,
    decode_json,
    enum_of,
    int_range,
    longest_json,
    obj,
    string,
)
from diverse_core.pipelines.diva.prompts import LONG_ANSWER_SCHEMA
from diverse_core.pipelines.vendirag.prompts import REASONING_SCHEMA
from hypothesis import given, settings
from hypothesis import strategies as st


def _lengths(node: Any) -> list[int]:
    if isinstance(node, dict):
        own = [node["maxLength"]] if isinstance(node.get("maxLength"), int) else []
        return own + [n for v in node.values() for n in _lengths(v)]
    if isinstance(node, list):
        return [n for v in node for n in _lengths(v)]
    return []


def _reference_longest(value_schema: dict[str, Any]) -> float:
    """Slow reference: the longest value actually built and serialised with a space around
    every separator and inside every bracket (as the grammars allow)."""
    def longest_value(s: dict[str, Any]) -> Any:
        if "enum" in s:
            return max(s["enum"], key=lambda v: len(json.dumps(v)))
        kind = s["type"]
        if kind == "string":
            return "x" * s["maxLength"]
        if kind == "integer":
            return -(10 ** 22)  # 24 characters: the allowance for a number
        if kind == "array":
            return [longest_value(s["items"]) for _ in range(s["maxItems"])]
        return {k: longest_value(v) for k, v in s["properties"].items()}

    text = json.dumps(longest_value(value_schema), separators=(" , ", " : "))
    extra = text.count("{") * 2 + text.count("[") * 2  # a space after each opening and before each closing
    return float(len(text) + extra)


def _reference_fit(schema: OutputSchema, budget: int) -> int | None:
    """Slow reference for the common cap: the largest c (counting down) whose capped schema fits."""
    lengths = _lengths(schema.schema)
    top = max(lengths)
    if longest_json(schema.schema) <= budget:
        return top
    for cap in range(top, 0, -1):
        capped = OutputSchema(schema.name, _cap(schema.as_dict(), cap))
        if longest_json(capped.schema) <= budget:
            return cap
    return None


def _cap(node: Any, cap: int) -> Any:
    if isinstance(node, dict):
        out = {k: _cap(v, cap) for k, v in node.items()}
        if isinstance(out.get("maxLength"), int):
            out["maxLength"] = max(min(out["maxLength"], cap), out.get("minLength", 0), 1)
        return out
    if isinstance(node, list):
        return [_cap(v, cap) for v in node]
    return node


# ----------------------------------------------------------------------------- known answers
def test_long_bounds_are_capped_for_grammar_engines() -> None:
    for schema in (LONG_ANSWER_SCHEMA, REASONING_SCHEMA):
        assert max(_lengths(schema.schema)) > GRAMMAR_MAX_LENGTH  # the bounds that crashed llama.cpp
        safe = schema.grammar_safe()
        assert max(_lengths(safe.schema)) == GRAMMAR_MAX_LENGTH
        assert schema.schema == OutputSchema(schema.name, schema.as_dict()).schema  # original untouched


def test_small_schemas_pass_unchanged() -> None:
    verdict = OutputSchema("v", obj({"verdict": enum_of("yes", "no"), "why": string(40)}))
    assert verdict.grammar_safe() is verdict
    assert verdict.grammar_safe(budget=200) is verdict


def test_budget_fit_lowers_the_longest_strings_only() -> None:
    s = OutputSchema("a", obj({"answer": string(600), "tag": string(10), "score": int_range(0, 10)}))
    fitted = s.grammar_safe(budget=100, chars_per_token=1)
    props = fitted.schema["properties"]
    assert props["tag"]["maxLength"] == 10 and props["score"] == s.schema["properties"]["score"]
    assert longest_json(fitted.schema) <= 100
    one_more = OutputSchema("a", _cap(s.as_dict(), props["answer"]["maxLength"] + 1))
    assert longest_json(one_more.schema) > 100  # the largest cap that fits


def test_unbounded_schemas_are_left_alone_impossible_ones_get_the_shortest_strings() -> None:
    unbounded = OutputSchema("u", obj({"steps": array(string(300))}))  # no maxItems
    assert math.isinf(longest_json(unbounded.schema))
    assert unbounded.grammar_safe(budget=50) is unbounded
    tight = OutputSchema("t", obj({"a_rather_long_key_name": string(50), "another_long_key_name": string(50)}))
    shortest = tight.grammar_safe(budget=20, chars_per_token=1)  # even 1-character strings do not fit
    assert _lengths(shortest.schema) == [1, 1]  # the least likely to be cut


def test_min_length_is_kept() -> None:
    s = OutputSchema("q", obj({"query": string(300, min_length=5)}))
    assert s.grammar_safe(budget=8).schema["properties"]["query"]["minLength"] == 5
    assert s.grammar_safe(budget=8).schema["properties"]["query"]["maxLength"] >= 5


@pytest.mark.parametrize("kwargs", [{"max_length": 0}, {"budget": 0}, {"budget": True}, {"budget": 2.5},
                                    {"budget": 10, "chars_per_token": 0}])
def test_bad_arguments_name_the_parameter(kwargs: dict[str, Any]) -> None:
    name = list(kwargs)[-1]
    with pytest.raises(ValueError, match=name):
        LONG_ANSWER_SCHEMA.grammar_safe(**kwargs)


def test_raw_control_characters_inside_strings_decode() -> None:
    s = OutputSchema("a", obj({"answer": string(100)}))
    value, problems = decode_json('{"answer": "Paris\nis\tthe capital"}', s)
    assert value == {"answer": "Paris\nis\tthe capital"} and problems == ()


# ----------------------------------------------------------------------------- properties
_leaf = st.one_of(
    st.builds(lambda n, lo: string(n, min_length=min(lo, n)), st.integers(1, 3000), st.integers(0, 8)),
    st.builds(lambda hi: int_range(0, hi), st.integers(0, 12)),
    st.just(enum_of("yes", "no", "partial")),
)
_node = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.builds(lambda item, n: array(item, max_items=n), inner, st.integers(1, 6)),
        st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=8), inner, min_size=1, max_size=4).map(obj),
    ),
    max_leaves=6,
)
_schemas = st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=8), _node, min_size=1, max_size=4).map(
    lambda props: OutputSchema("s", obj(props)))


@settings(max_examples=150, deadline=None)
@given(_schemas, st.integers(10, 4000))
def test_fitted_schema_fits_and_is_a_subset(schema: OutputSchema, budget: int) -> None:
    fitted = schema.grammar_safe(budget=budget, chars_per_token=1)  # budget in characters
    original, new = _lengths(schema.schema), _lengths(fitted.schema)
    assert len(original) == len(new)
    mins = _min_lengths(schema.schema)
    # a subset: no bound grows, none drops below its minLength or 1, none above the grammar cap
    assert all(m_new <= max(m_old, lo) and m_new >= max(lo, 1) and m_new <= max(GRAMMAR_MAX_LENGTH, lo)
               for m_old, m_new, lo in zip(original, new, mins, strict=True))
    capped = schema.grammar_safe()
    if _has_strings(schema.schema) and longest_json(capped.schema) > budget:
        reference = _reference_fit(capped, budget)
        if reference is not None:
            assert longest_json(fitted.schema) <= budget
            assert fitted.schema == _cap(capped.as_dict(), reference)  # the binary search finds the slow loop's cap
        else:  # nothing fits: the shortest strings
            assert fitted.schema == _cap(capped.as_dict(), 1)
    else:
        assert fitted.schema == capped.schema
    # longest_json is a safe (never short) estimate of the longest serialised value
    assert _reference_longest(fitted.as_dict()) <= longest_json(fitted.schema)


def _min_lengths(node: Any) -> list[int]:
    if isinstance(node, dict):
        own = [int(node.get("minLength", 0))] if isinstance(node.get("maxLength"), int) else []
        return own + [n for v in node.values() for n in _min_lengths(v)]
    if isinstance(node, list):
        return [n for v in node for n in _min_lengths(v)]
    return []


def _has_strings(node: Any) -> bool:
    return bool(_lengths(node))


# ----------------------------------------------------------------------------- the wire
class _Recorder:
    """A backend that records the schema it is sent and answers with a fixed reply."""

    structured_methods = ("json_object",)

    def __init__(self, reply: str, max_tokens: int | None) -> None:
        self.reply, self.max_tokens, self.sent = reply, max_tokens, []

    def complete(self, prompt: str, **kw: Any) -> Completion:
        return Completion("text")

    def complete_structured(self, messages: Any, schema: OutputSchema, *, method: str, **kw: Any) -> Completion:
        self.sent.append((schema, kw.get("max_tokens")))
        return Completion(self.reply)


def test_managed_llm_sends_the_fitted_schema_and_validates_against_the_original() -> None:
    reply = json.dumps({"answer": "x" * 900})  # longer than the fitted bound, within the original
    backend = _Recorder(reply, max_tokens=64)
    llm = ManagedLLM(backend, method_memory=MethodMemory())
    request = RoleRequest("generator", (Message("user", "q?"),), LONG_ANSWER_SCHEMA, "q?")
    out = llm.complete_role(request)
    sent, _ = backend.sent[-1]
    assert longest_json(sent.schema) <= 64 * 2 and sent.schema != LONG_ANSWER_SCHEMA.schema  # ~2 chars/token
    assert out.value == {"answer": "x" * 900} and out.problems == ()
    llm.complete_role(request, max_tokens=400)  # the call's own max_tokens wins
    assert 64 * 2 < longest_json(backend.sent[-1][0].schema) <= 400 * 2
    llm.close()


def test_unknown_budget_only_caps() -> None:
    backend = _Recorder('{"answer": "a"}', max_tokens=None)
    llm = ManagedLLM(backend, method_memory=MethodMemory())
    llm.complete_role(RoleRequest("generator", (Message("user", "q?"),), LONG_ANSWER_SCHEMA, "q?"))
    assert max(_lengths(backend.sent[-1][0].schema)) == GRAMMAR_MAX_LENGTH
    llm.close()


class _Api:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.completions = self

    def create(self, **body: Any) -> Any:
        self.bodies.append(body)
        call = [type("C", (), {"function": type("F", (), {"arguments": '{"answer": "a"}'})()})()]
        msg = type("M", (), {"content": '{"answer": "a"}', "tool_calls": call})()
        return type("R", (), {"choices": [type("Ch", (), {"message": msg})()], "usage": None})()


def _client() -> Any:
    return type("Client", (), {"chat": _Api()})()


SHORT = OutputSchema("answer", obj({"answer": string(120)}))


@pytest.mark.parametrize("method", ["json_schema", "tool_calling"])
def test_openai_strict_only_for_openai_itself(method: str) -> None:
    msgs = (Message("user", "q?"),)

    def sent(llm: OpenAILLM) -> dict[str, Any]:
        llm.complete_structured(msgs, SHORT, method=method)
        body = llm.client.chat.bodies[-1]
        spec = body["response_format"]["json_schema"] if method == "json_schema" else body["tools"][0]["function"]
        return {"strict": spec["strict"], "schema": spec.get("schema", spec.get("parameters"))}

    openai = sent(OpenAILLM("gpt", client=_client()))
    assert openai["strict"] is True and "maxLength" not in json.dumps(openai["schema"])
    local = sent(OpenAILLM("smol", base_url="http://127.0.0.1:8080/v1", client=_client()))
    assert local["strict"] is False and local["schema"]["properties"]["answer"]["maxLength"] == 120
    forced = sent(OpenAILLM("smol", base_url="http://127.0.0.1:8080/v1", client=_client(), strict=True))
    assert forced["strict"] is True and "maxLength" not in json.dumps(forced["schema"])


def test_openai_strict_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="strict"):
        OpenAILLM("m", strict="yes")  # type: ignore[arg-type]
