"""Hostile and schema-breaking structured replies (issue 33, items 2 and 4).

Item 2: whatever a structured reply holds - a 5,001-digit integer (``ValueError: Exceeds the
limit (4300 digits)``), 100,000 nested arrays (``RecursionError``), a reply too long to decode -
``run()`` returns (the reply is flagged and read with the text parser), in all four pipelines,
with scripted backends and through ``OpenAILLM`` over HTTP.

Item 4: a reply that breaks its schema (an unknown key, an over-long string, too many items, a
wrong type) is repaired with a warning or read with the text parser with a warning - never
returned as is with ``ok=True``; an answer is never the JSON text of the reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from diverse_core.llm import OpenAILLM, OutputSchema
from diverse_core.llm.structured import MAX_REPLY_CHARS, decode_json, obj, string
from diverse_core.pipelines.dfrag import DFRAG
from diverse_core.pipelines.dfrag.prompts import MAX_PLAN_STEPS
from diverse_core.pipelines.diva.pipeline import DIVA
from diverse_core.pipelines.drrag.pipeline import DRRAG
from diverse_core.pipelines.vendirag.pipeline import VendiRAG
from http_fakes import REPLY, send_json
from hypothesis import given, settings
from hypothesis import strategies as st
from structured_fakes import StructuredFake, example, source

QUESTION = "In which city was the author of Dracula born?"

DIGITS = '{"answer": ' + "9" * 5001 + "}"
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = json.dumps({"answer": "a" * (MAX_REPLY_CHARS + 10)})
HOSTILE = {"digits": DIGITS, "depth": DEEP, "size": HUGE}

PIPELINES: dict[str, Callable[[Any], Any]] = {
    "dfrag": lambda llm: DFRAG(llm, k=2, lambdas=(0.2, 0.8), max_retries=0),
    "vendirag": lambda llm: VendiRAG(llm, k=2, max_iterations=2, max_retries=0),
    "diva": lambda llm: DIVA(llm, k=3, max_retries=0),
    "drrag": lambda llm: DRRAG(llm, k=2, max_retries=0),
}


class _Every(dict):  # type: ignore[type-arg]
    """Replies for every schema name: ``fn(schema)``."""

    def __init__(self, fn: Callable[[OutputSchema], Any]) -> None:
        super().__init__()
        self.fn = fn

    def get(self, name: str, default: Any = None) -> Any:
        return lambda messages, schema: self.fn(schema)


def _check_flagged(result: Any) -> None:
    assert not result.ok and any("broke its schema" in w for w in result.warnings), result.warnings
    answer = result.answer or ""
    assert not answer.lstrip().startswith(("{", "[")), answer[:80]


# ----------------------------------------------------------------------------- decoding never raises
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_decode_json_flags_hostile_text(kind: str) -> None:
    value, problems = decode_json(HOSTILE[kind], OutputSchema("answer", obj({"answer": string(300)})))
    assert value is None and problems and problems[0].kind in {"type", "size"}


def test_decode_json_size_bound_is_documented_and_adjustable() -> None:
    s = OutputSchema("answer", obj({"answer": string(300)}))
    assert decode_json('{"answer": "x"}', s, max_chars=10)[1][0].kind == "size"
    assert decode_json('{"answer": "x"}', s)[0] == {"answer": "x"}


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    st.text(max_size=200),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                 lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                 max_leaves=20).map(json.dumps),
))
def test_decode_json_returns_whatever_the_text(text: str) -> None:
    s = OutputSchema("answer", obj({"answer": string(30)}))
    value, problems = decode_json(text, s)
    assert value is None or (isinstance(value, dict) and not s.validate(value) or problems)
    if value is not None:
        assert set(value) == {"answer"} and len(value["answer"]) <= 30


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_replies_never_escape_run(name: str, kind: str) -> None:
    fake = StructuredFake(text=lambda p: "Dublin")
    fake.replies = _Every(lambda schema: HOSTILE[kind])  # the constructor copies into a plain dict
    result = PIPELINES[name](fake).run(QUESTION, source(), generate=True)
    _check_flagged(result)


# ----------------------------------------------------------------------------- through OpenAILLM
class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    content = ""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        reply = json.loads(json.dumps(REPLY))
        reply["choices"][0]["message"]["content"] = type(self).content
        send_json(self, 200, reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hostile_server() -> Iterator[tuple[str, type[_Hostile]]]:
    handler = type("Handler", (_Hostile,), {})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_replies_through_openai_llm(hostile_server: tuple[str, type[_Hostile]], kind: str) -> None:
    base_url, handler = hostile_server
    handler.content = HOSTILE[kind]
    with OpenAILLM(model="m", base_url=base_url) as llm:
        for name, make in PIPELINES.items():
            result = make(llm).run(QUESTION, source(), generate=True)
            _check_flagged(result)
            assert result.cost.structured_calls > 0, name


# ----------------------------------------------------------------------------- schema violations
def _run(name: str, replies: dict[str, Any], **kw: Any) -> Any:
    fake = StructuredFake(replies=replies, text=kw.pop("text", lambda p: "Dublin"))
    return PIPELINES[name](fake).run(QUESTION, source(), generate=True, **kw)


def _warned(result: Any, *words: str) -> str:
    found = [w for w in result.warnings if "broke its schema" in w]
    assert found and not result.ok, result.warnings
    text = " | ".join(found)
    for word in words:
        assert word in text, text
    return text


def test_drrag_generator_extra_key_is_dropped_and_flagged() -> None:
    result = _run("drrag", {"answer": {"answer": "Mangalia", "confidence": 0.9}})
    assert result.answer == "Mangalia"
    _warned(result, "unknown key 'confidence' (dropped)", "repaired")


def test_drrag_generator_overlong_answer_is_cut_and_flagged() -> None:
    result = _run("drrag", {"answer": {"answer": "M" * 5000}})
    assert result.answer == "M" * 300
    _warned(result, "5000 characters; at most 300 allowed (cut)")


@pytest.mark.parametrize("reply", [{"answer": 42}, {}, {"answer": ["Mangalia"]}, [1, 2]])
def test_drrag_generator_wrong_shape_is_never_the_answer(reply: Any) -> None:
    result = _run("drrag", {"answer": json.dumps(reply)})
    assert result.answer == ""  # not the JSON text
    _warned(result, "unusable; read with the text parser")


def test_dfrag_long_plans_are_cut_or_rejected() -> None:
    steps = [f"Find fact {i}" for i in range(5_000)]
    result = _run("dfrag", {"plan": {"steps": steps}, "answer": {"answer": "Dublin", "extra": 1}})
    assert len(result.plan) <= MAX_PLAN_STEPS and result.plan[0] == "Find fact 0"
    assert result.answer == "Dublin"
    _warned(result, "5000 items; at most", "(cut)", "unknown key 'extra' (dropped)")
    # 50,000 steps (~850,000 characters) are past MAX_REPLY_CHARS: not decoded, read as text
    result = _run("dfrag", {"plan": {"steps": [f"Find fact {i}" for i in range(50_000)]}})
    assert len(result.plan) <= MAX_PLAN_STEPS
    _warned(result, "MAX_REPLY_CHARS", "unusable")


def test_dfrag_evaluator_extra_key_and_wrong_type() -> None:
    def evaluation(messages: Any, schema: OutputSchema) -> dict[str, Any]:
        return {**example(schema.schema), "confidence": "high"}

    result = _run("dfrag", {"plan": {"steps": ["Find the author"]}, "evaluation": evaluation})
    _warned(result, "unknown key 'confidence'")
    result = _run("dfrag", {"plan": {"steps": ["Find the author"]},
                            "evaluation": {"steps": "all good", "short_answer": 3, "total_score": "x"}})
    _warned(result, "unusable")


def test_vendirag_answer_and_reasoning_repaired_judge_and_rewrite_rejected() -> None:
    result = _run("vendirag", {"answer": {"answer": "Dublin", "why": "x"}, "reasoning": {"reasoning": "r" * 5000},
                               "ratings": {"coherence": 9, "relevance": 9, "query_alignment": 9}})
    assert result.answer == "Dublin"
    _warned(result, "unknown key 'why'", "(cut)")
    result = _run("vendirag", {"ratings": {"coherence": "high", "relevance": 1, "query_alignment": 1},
                               "rewrite": {"query": ["a", "list"]}}, text=lambda p: "Dublin")
    text = _warned(result, "coherence should be integer")
    assert "query should be string" in text
    assert all(not it.query.lstrip().startswith("{") for it in result.iterations)
    result = _run("vendirag", {"answer": {"answer": 7}})
    assert result.answer == "" or not result.answer.startswith("{")
    _warned(result, "answer should be string")


def test_diva_too_many_interpretations_and_extra_key() -> None:
    result = _run("diva", {"interpretations": {"questions": [f"Reading {i}?" for i in range(50)]},
                           "long_answer": {"answer": "It depends.", "score": 3}})
    assert len(result.interpretations) <= 5
    assert result.answer == "It depends."
    _warned(result, "50 items; at most", "unknown key 'score'")


def test_diva_long_answer_wrong_type_is_never_the_answer() -> None:
    result = _run("diva", {"long_answer": {"answer": {"text": "x"}}})
    assert not (result.answer or "").startswith("{")
    _warned(result, "answer should be string")


def test_conforming_replies_stay_ok() -> None:
    result = _run("drrag", {"answer": {"answer": "Dublin"}})
    assert result.ok and result.answer == "Dublin"
