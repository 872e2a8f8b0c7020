"""Adapter for the ``openai`` client: OpenAI or any OpenAI-compatible endpoint
(vLLM, llama.cpp server, Ollama, TGI, ...). Requires the ``llm`` extra."""

from __future__ import annotations

import os
import time
from typing import Any

from .base import Completion

__all__ = ["OpenAILLM"]

_HINT = 'the openai client is missing; install the llm extra: pip install "diverse-rag[llm]"'


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError(_HINT) from exc
    return openai


class OpenAILLM:
    """Chat-completions (or legacy completions) through the ``openai`` client.

    Args:
        model: model name served by the endpoint; defaults to env ``DIVERSE_RAG_LLM_MODEL``.
        base_url: endpoint URL; defaults to env ``OPENAI_BASE_URL`` (the client's default).
        api_key: key; defaults to env ``OPENAI_API_KEY`` (``"EMPTY"`` for keyless local servers).
        chat: use ``chat.completions`` (default) or the legacy ``completions`` API.
        temperature: sampling temperature (0 = greedy, as in DF-RAG).
        max_tokens: cap on generated tokens per call.
        client / async_client: ready ``openai.OpenAI`` / ``openai.AsyncOpenAI`` instances
            (then ``base_url``/``api_key`` are ignored).
        **request_kwargs: extra fields sent with every request.

    The client's own retries are disabled (``max_retries=0``) so that
    :class:`~diverse_core.llm.ManagedLLM` owns the retry policy.

    Example:
        >>> llm = OpenAILLM(model="qwen2.5-7b", base_url="http://localhost:8000/v1",
        ...                 api_key="EMPTY")  # doctest: +SKIP
        >>> llm.complete("Say hi").text  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        chat: bool = True,
        temperature: float = 0.0,
        max_tokens: int | None = 512,
        client: Any = None,
        async_client: Any = None,
        **request_kwargs: Any,
    ) -> None:
        model = model or os.environ.get("DIVERSE_RAG_LLM_MODEL")
        if not model:
            raise ValueError(
                "model is required: pass model=... or set DIVERSE_RAG_LLM_MODEL"
            )
        self.model = model
        self.chat = chat
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.request_kwargs = request_kwargs
        self._base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self._client = client
        self._async_client = async_client

    @property
    def client(self) -> Any:
        """The synchronous ``openai.OpenAI`` client (created on first use)."""
        if self._client is None:
            openai = _import_openai()
            self._client = openai.OpenAI(base_url=self._base_url, api_key=self._api_key, max_retries=0)
        return self._client

    @property
    def async_client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client (created on first use)."""
        if self._async_client is None:
            openai = _import_openai()
            self._async_client = openai.AsyncOpenAI(
                base_url=self._base_url, api_key=self._api_key, max_retries=0
            )
        return self._async_client

    def _request(self, prompt: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.request_kwargs)
        body.update(kwargs)
        if self.chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body

    def _parse(self, resp: Any, start: float) -> Completion:
        choice = resp.choices[0]
        text = choice.message.content if self.chat else choice.text
        usage = getattr(resp, "usage", None)
        return Completion(
            text=text or "",
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            latency=time.perf_counter() - start,
        )

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """One request; ``kwargs`` override request fields (e.g. ``max_tokens``)."""
        start = time.perf_counter()
        api = self.client.chat.completions if self.chat else self.client.completions
        return self._parse(api.create(**self._request(prompt, kwargs)), start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete` with ``AsyncOpenAI``."""
        start = time.perf_counter()
        client = self.async_client
        api = client.chat.completions if self.chat else client.completions
        return self._parse(await api.create(**self._request(prompt, kwargs)), start)

    def __repr__(self) -> str:
        return f"OpenAILLM(model={self.model!r}, base_url={self._base_url!r})"
