"""LangChain callback handlers shared by the pipeline face tests: they count LLM runs and record
which run each one is nested under."""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler


class Counter(BaseCallbackHandler):
    """Counts chat-model and LLM starts, their parent runs, and the retriever runs."""

    def __init__(self) -> None:
        self.llm_starts = 0
        self.parents: set[Any] = set()
        self.retriever_runs: list[Any] = []
        self._lock = threading.Lock()

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        with self._lock:
            self.llm_starts += 1
            self.parents.add(parent_run_id)

    def on_llm_start(self, serialized, prompts, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        with self._lock:
            self.llm_starts += 1
            self.parents.add(parent_run_id)

    def on_retriever_start(self, serialized, query, *, run_id, **kw):  # type: ignore[no-untyped-def]
        self.retriever_runs.append(run_id)


class AsyncCounter(AsyncCallbackHandler):
    """Counts chat-model starts seen by an async handler."""

    def __init__(self) -> None:
        self.llm_starts = 0

    async def on_chat_model_start(self, serialized, messages, **kw):  # type: ignore[no-untyped-def]
        self.llm_starts += 1
