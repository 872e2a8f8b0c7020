"""A LlamaIndex instrumentation handler shared by the pipeline face tests."""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMCompletionStartEvent
from pydantic import Field


class CountStarts(BaseEventHandler):
    """Records the prompt of every LLM completion start (distinct prompts: a CustomLLM's
    ``acomplete`` wraps ``complete``, so one call can emit two start events)."""

    prompts: set[str] = Field(default_factory=set)

    @classmethod
    def class_name(cls) -> str:
        return "CountStarts"

    def handle(self, event: Any, **kw: Any) -> None:
        if isinstance(event, LLMCompletionStartEvent):
            self.prompts.add(event.prompt)
