"""LangChain chat models and LLMs as the pipelines' text-completion backend."""

from __future__ import annotations

import time
from typing import Any

from diverse_core.llm import Completion, ManagedLLM
from langchain_core.runnables import Runnable, RunnableConfig

__all__ = ["LangChainLLM", "as_backend"]


def _message_text(out: Any) -> str:
    if isinstance(out, str):
        return out
    content = getattr(out, "content", out)
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def _usage(out: Any) -> tuple[int | None, int | None]:
    meta = getattr(out, "usage_metadata", None)
    if isinstance(meta, dict):
        return meta.get("input_tokens"), meta.get("output_tokens")
    return None, None


class LangChainLLM:
    """A LangChain chat model, LLM or string-input Runnable as a DF-RAG text backend.

    Each call is ``model.invoke(prompt, config)`` (or ``ainvoke``); pass
    ``callbacks=`` (a handler list or a callback manager, e.g. ``run_manager.get_child()``)
    per call so tracing and handlers see every Planner/Evaluator/Generator call.
    Token counts come from the message's ``usage_metadata`` when the model reports it.

    Args:
        model: a ``BaseChatModel``, ``BaseLLM`` or any ``Runnable[str, str | BaseMessage]``.
        **invoke_kwargs: extra keyword arguments for every ``invoke`` (e.g. ``stop=[...]``).

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> LangChainLLM(FakeListChatModel(responses=["hi"])).complete("hello").text
        'hi'
    """

    def __init__(self, model: Runnable[Any, Any], **invoke_kwargs: Any) -> None:
        if not hasattr(model, "invoke"):
            raise TypeError(f"model must be a LangChain Runnable; got {type(model).__name__}")
        self.model = model
        self.invoke_kwargs = invoke_kwargs

    @staticmethod
    def _config(callbacks: Any, tags: Any) -> RunnableConfig:
        config: RunnableConfig = {}
        if callbacks is not None:
            config["callbacks"] = callbacks
        if tags:
            config["tags"] = list(tags)
        return config

    def complete(self, prompt: str, *, callbacks: Any = None, tags: Any = None, **kwargs: Any) -> Completion:
        """``model.invoke(prompt)`` with the given callbacks."""
        start = time.perf_counter()
        out = self.model.invoke(prompt, self._config(callbacks, tags), **{**self.invoke_kwargs, **kwargs})
        p, c = _usage(out)
        return Completion(_message_text(out), p, c, time.perf_counter() - start)

    async def acomplete(
        self, prompt: str, *, callbacks: Any = None, tags: Any = None, **kwargs: Any
    ) -> Completion:
        """``await model.ainvoke(prompt)`` with the given callbacks."""
        start = time.perf_counter()
        out = await self.model.ainvoke(
            prompt, self._config(callbacks, tags), **{**self.invoke_kwargs, **kwargs}
        )
        p, c = _usage(out)
        return Completion(_message_text(out), p, c, time.perf_counter() - start)

    def __repr__(self) -> str:
        return f"LangChainLLM({type(self.model).__name__})"


def as_backend(llm: Any) -> Any:
    """LangChain Runnables get the adapter; core backends (and ``None``) pass through."""
    if isinstance(llm, (ManagedLLM, LangChainLLM)):
        return llm
    if isinstance(llm, Runnable):
        return LangChainLLM(llm)
    return llm
