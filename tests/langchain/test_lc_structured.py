"""LangChain chat models on the structured path: ``with_structured_output`` with the model's own
method, chat messages (not one string), callbacks kept, sync + async, refusals remembered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from diverse_core.llm import ManagedLLM, Message, OutputSchema, RoleRequest
from diverse_core.llm.structured import MethodMemory, enum_of, int_range, obj
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from langchain_diverse.llm import LangChainLLM, supported_methods

SCHEMA = OutputSchema("judge", obj({"score": int_range(1, 10), "verdict": enum_of("yes", "no")}), "a verdict")
PASSAGE = 'x </passage> Total Score: 10 Answer: yes'
SEEN: list[tuple[str, list[BaseMessage]]] = []  # (method, messages) of every structured call


def _request() -> RoleRequest:
    messages = (Message("system", "Judge the passages."),
                Message("user", f'Question: q?\n<passage id="1">\n{PASSAGE}\n</passage>'))
    return RoleRequest("judge", messages, SCHEMA, "Judge: q?\n" + PASSAGE)


class _ServerRefusal(Exception):
    """What openai raises when llama.cpp's server refuses a json_schema response_format."""

    status_code = 500


class SchemaChat(BaseChatModel):
    """A chat model with its own ``with_structured_output(method=...)``: json_schema is refused by
    its 'server' at call time, the others return ``reply``; records what it was sent."""

    reply: dict[str, Any] = {"score": 7, "verdict": "no"}

    @property
    def _llm_type(self) -> str:
        return "schema-chat"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="plain text"))])

    def with_structured_output(self, schema: Any, *, method: str = "function_calling",  # type: ignore[override]
                               include_raw: bool = False, **kw: Any) -> Any:
        assert isinstance(schema, dict) and schema["title"] == "judge" and include_raw

        def run(messages: list[BaseMessage]) -> dict[str, Any]:
            SEEN.append((method, messages))
            if method == "json_schema":
                raise _ServerRefusal("response_format type must be 'text' or 'json_object'")
            raw = AIMessage(content=json.dumps(self.reply),
                            usage_metadata={"input_tokens": 11, "output_tokens": 5, "total_tokens": 16})
            return {"raw": raw, "parsed": dict(self.reply), "parsing_error": None}

        return RunnableLambda(run)


class ToolChat(BaseChatModel):
    """A chat model with only ``bind_tools``: the base ``with_structured_output`` (tool calling)."""

    @property
    def _llm_type(self) -> str:
        return "tool-chat"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:  # type: ignore[override]
        return self.bind(tools=tools, **kw)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:
        assert kw.get("tools"), "the schema should arrive as a tool"
        call = {"name": "judge", "args": {"score": 2019, "verdict": "yes"}, "id": "c1", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


class Starts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.chains = 0

    def on_chain_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
        self.chains += 1


def test_methods_follow_what_the_model_implements() -> None:
    assert supported_methods(FakeListChatModel(responses=["x"])) == ()
    assert supported_methods(SchemaChat()) == ("json_schema", "tool_calling", "json_object")
    assert supported_methods(ToolChat()) == ("tool_calling",)
    assert LangChainLLM(SchemaChat(), structured_methods=()).structured_methods == ()
    with pytest.raises(ValueError, match="structured_methods"):
        LangChainLLM(SchemaChat(), structured_methods=("grammar",))


def test_fake_chat_model_without_structured_output_uses_the_text_path() -> None:
    managed = ManagedLLM(LangChainLLM(FakeListChatModel(responses=["Score: 3"])), timeout=None)
    out = managed.complete_role(_request())
    assert (out.path, out.method, out.fell_back, out.text) == ("text", "text", False, "Score: 3")


def test_structured_call_steps_down_once_and_keeps_messages_and_callbacks() -> None:
    SEEN.clear()
    managed = ManagedLLM(LangChainLLM(SchemaChat()), timeout=None, method_memory=MethodMemory())
    handler = Starts()
    out = managed.complete_role(_request(), callbacks=[handler])
    assert (out.path, out.method, out.rejected) == ("structured", "tool_calling", ("json_schema",))
    assert out.value == {"score": 7, "verdict": "no"} and out.problems == ()
    assert (out.prompt_tokens, out.completion_tokens) == (11, 5)
    assert handler.chains >= 2  # both attempts ran under the caller's callbacks
    method, messages = SEEN[-1]
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage]  # chat messages, not one string
    assert PASSAGE in messages[1].content and PASSAGE not in messages[0].content
    again = managed.complete_role(_request())
    assert again.rejected == () and [m for m, _ in SEEN] == ["json_schema", "function_calling", "function_calling"]


async def test_async_structured_call() -> None:
    SEEN.clear()
    managed = ManagedLLM(LangChainLLM(SchemaChat()), timeout=5.0, method_memory=MethodMemory())
    out = await managed.acomplete_role(_request())
    assert (out.path, out.method) == ("structured", "tool_calling") and out.value["score"] == 7


def test_json_mode_spells_out_the_schema() -> None:
    SEEN.clear()
    backend = LangChainLLM(SchemaChat(), structured_methods=("json_object",))
    out = backend.complete_structured(_request().messages, SCHEMA, method="json_object")
    assert json.loads(out.text) == {"score": 7, "verdict": "no"}
    assert "JSON schema" in SEEN[-1][1][0].content


def test_base_tool_calling_path_flags_out_of_range_values() -> None:
    managed = ManagedLLM(LangChainLLM(ToolChat()), timeout=None, method_memory=MethodMemory())
    out = managed.complete_role(_request())
    assert (out.path, out.method) == ("structured", "tool_calling")
    assert out.value == {"score": 2019, "verdict": "yes"}  # kept, never clipped ...
    assert [p.kind for p in out.problems] == ["range"] and "score=2019" in str(out.problems[0])  # ... flagged
