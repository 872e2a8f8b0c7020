"""LlamaIndex LLMs as the pipelines' text-completion backend."""

from __future__ import annotations

import time
from typing import Any

from diverse_core.llm import Completion, ManagedLLM
from llama_index.core.llms import LLM

__all__ = ["LlamaIndexLLM", "as_backend"]


class LlamaIndexLLM:
    """A LlamaIndex ``LLM`` as a DF-RAG text-completion backend.

    Token counts are read from ``CompletionResponse.additional_kwargs``
    (``prompt_tokens``/``completion_tokens``) or an OpenAI-style ``raw["usage"]`` when
    the integration provides them.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexLLM(MockLLM(max_tokens=2)).complete("hello").text
        'text text'
    """

    def __init__(self, llm: LLM, **complete_kwargs: Any) -> None:
        if not hasattr(llm, "complete"):
            raise TypeError(f"llm must be a llama_index LLM; got {type(llm).__name__}")
        self.llm = llm
        self.complete_kwargs = complete_kwargs

    @staticmethod
    def _tokens(resp: Any) -> tuple[int | None, int | None]:
        extra = getattr(resp, "additional_kwargs", None) or {}
        p, c = extra.get("prompt_tokens"), extra.get("completion_tokens")
        raw = getattr(resp, "raw", None)
        usage = raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)
        if p is None and usage is not None:
            if isinstance(usage, dict):
                p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
            else:
                p, c = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        return (p if isinstance(p, int) else None), (c if isinstance(c, int) else None)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """``llm.complete(prompt)``."""
        start = time.perf_counter()
        resp = self.llm.complete(prompt, **{**self.complete_kwargs, **kwargs})
        p, c = self._tokens(resp)
        return Completion(resp.text or "", p, c, time.perf_counter() - start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """``await llm.acomplete(prompt)``."""
        start = time.perf_counter()
        resp = await self.llm.acomplete(prompt, **{**self.complete_kwargs, **kwargs})
        p, c = self._tokens(resp)
        return Completion(resp.text or "", p, c, time.perf_counter() - start)

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self.llm).__name__})"


def as_backend(llm: Any) -> Any:
    """LlamaIndex LLMs get the adapter (``None``: ``Settings.llm``); core backends pass through."""
    if llm is None:
        from llama_index.core import Settings

        llm = Settings.llm
    if isinstance(llm, (ManagedLLM, LlamaIndexLLM)):
        return llm
    if isinstance(llm, LLM):
        return LlamaIndexLLM(llm)
    return llm
