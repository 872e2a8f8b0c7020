"""LlamaIndex LLMs on the structured path: ``structured_predict`` / ``astructured_predict`` with
chat messages, the integration's own method (tool calling / JSON in the prompt), events kept,
values validated by the core (flagged, never lost to a ValidationError)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from diverse_core.llm import ManagedLLM, Message, OutputSchema, RoleRequest
from diverse_core.llm.structured import MethodMemory, enum_of, int_range, obj
from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMStructuredPredictStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import Field

from llamaindex_diverse.llm import LlamaIndexLLM, output_class, structured_method

SCHEMA = OutputSchema("judge", obj({"score": int_range(1, 10), "verdict": enum_of("yes", "no")}), "a verdict")
PASSAGE = "Total Score: 10. Answer: yes. {not_a_template_field}"
SEEN: list[Any] = []


def _request() -> RoleRequest:
    messages = (Message("system", "Judge the passages."),
                Message("user", f'Question: q?\n<passage id="1">\n{PASSAGE}\n</passage>'))
    return RoleRequest("judge", messages, SCHEMA, "Judge: q?\n" + PASSAGE)


def _tool_reply(messages: Any, **kw: Any) -> ChatMessage:
    SEEN.append(list(messages))
    call = ToolCallBlock(tool_call_id="c1", tool_name="judge", tool_kwargs={"score": 7, "verdict": "no"})
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])


class JsonLLM(MockLLM):
    """A completion-only LLM that answers with a fixed JSON object."""

    reply: str = '{"score": 2019, "verdict": "yes"}'

    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:  # type: ignore[override]
        SEEN.append(prompt)
        return CompletionResponse(text=self.reply)


class StructuredStarts(BaseEventHandler):
    n: int = Field(default=0)

    @classmethod
    def class_name(cls) -> str:
        return "StructuredStarts"

    def handle(self, event: Any, **kw: Any) -> None:
        if isinstance(event, LLMStructuredPredictStartEvent):
            self.n += 1


def test_output_class_carries_the_exact_schema_but_accepts_any_value() -> None:
    cls = output_class(SCHEMA)
    assert cls.model_json_schema()["properties"]["score"]["enum"] == list(range(1, 11))
    assert cls.model_validate({"score": 2019}).model_dump(exclude_unset=True) == {"score": 2019}


def test_method_follows_the_integration() -> None:
    assert structured_method(MockLLM()) == ()  # a plain completion model: the text path
    fc = MockFunctionCallingLLM()
    assert structured_method(fc) == (("tool_calling",) if fc.metadata.is_function_calling_model else ("json_object",))
    assert structured_method(object()) == ()
    with pytest.raises(ValueError, match="structured_methods"):
        LlamaIndexLLM(MockLLM(), structured_methods=("grammar",))


def test_tool_calling_llm_gets_chat_messages_and_fires_events(monkeypatch: Any) -> None:
    SEEN.clear()
    llm = MockFunctionCallingLLM(response_generator=_tool_reply, is_chat_model=True)
    monkeypatch.setattr(type(llm), "metadata", property(
        lambda self: LLMMetadata(is_chat_model=True, is_function_calling_model=True, model_name="mock-fc")))
    handler = StructuredStarts()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    try:
        managed = ManagedLLM(LlamaIndexLLM(llm), timeout=None, method_memory=MethodMemory())
        out = managed.complete_role(_request())
    finally:
        dispatcher.event_handlers.remove(handler)
    assert (out.path, out.method) == ("structured", "tool_calling")
    assert out.value == {"score": 7, "verdict": "no"} and out.problems == ()
    roles = [m.role for m in SEEN[-1]]
    assert roles[:2] == [MessageRole.SYSTEM, MessageRole.USER]  # chat messages, not one string
    assert PASSAGE in SEEN[-1][1].content  # braces in a passage are data, not a template field
    assert handler.n >= 1


async def test_json_in_the_prompt_path_async_flags_out_of_range() -> None:
    SEEN.clear()
    managed = ManagedLLM(LlamaIndexLLM(JsonLLM(), structured_methods=("json_object",)), timeout=5.0,
                         method_memory=MethodMemory())
    out = await managed.acomplete_role(_request())
    assert (out.path, out.method) == ("structured", "json_object")
    assert out.value == {"score": 2019, "verdict": "yes"}  # kept, not clipped, not lost
    assert [p.kind for p in out.problems] == ["range"]
    assert '"enum"' in SEEN[-1] and "Judge the passages." in SEEN[-1]  # the schema reached the model


def test_unparseable_reply_is_flagged_and_left_to_the_text_parser() -> None:
    llm = JsonLLM()
    llm.reply = "Score: 4, no JSON here"
    backend = LlamaIndexLLM(llm, structured_methods=("json_object",))
    out = ManagedLLM(backend, timeout=None, method_memory=MethodMemory()).complete_role(_request())
    assert out.path == "structured" and out.value is None and out.problems
    assert "Score: 4" in out.text  # the role's text parser still sees the reply


def test_text_only_override() -> None:
    backend = LlamaIndexLLM(JsonLLM(), structured_methods=())
    out = ManagedLLM(backend, timeout=None).complete_role(_request())
    assert (out.path, out.fell_back) == ("text", False)
    assert json.loads(out.text)["score"] == 2019


class RawNewlineLLM(MockLLM):
    """``structured_predict`` fails as pydantic does on a reply with a raw newline in a string."""

    def structured_predict(self, output_cls: Any, prompt: Any, llm_kwargs: Any = None, **kw: Any) -> Any:  # type: ignore[override]
        return output_cls.model_validate_json('{"score": 3, "verdict": "no\n"}')


def test_a_reply_pydantic_refuses_reaches_the_core_whole() -> None:
    llm = LlamaIndexLLM(RawNewlineLLM(), structured_methods=("json_object",))
    out = ManagedLLM(llm, method_memory=MethodMemory()).complete_role(_request())
    assert out.path == "structured" and out.text == '{"score": 3, "verdict": "no\n"}'
    # decoded by the core (a raw newline is unambiguous); the stray newline breaks the enum: flagged
    assert out.value == {"score": 3, "verdict": "no\n"} and [p.kind for p in out.problems] == ["range"]
