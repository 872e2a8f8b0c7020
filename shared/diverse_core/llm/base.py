"""The text-completion protocol every LLM backend satisfies, and its result type: anything with
``complete(prompt, **kw)`` (and optionally ``acomplete``) returning a :class:`Completion` or a
string can drive the pipelines."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Completion",
    "TextLLM",
    "AsyncTextLLM",
    "CallableLLM",
    "as_completion",
    "ensure_llm",
]


@dataclass(frozen=True)
class Completion:
    """One LLM answer with its accounting.

    Attributes:
        text: the generated text.
        prompt_tokens: tokens in the prompt, or ``None`` when the backend does not say.
        completion_tokens: tokens generated, or ``None`` when unknown.
        latency: seconds the successful attempt took.
        attempts: how many attempts it took (1 = no retry).

    Example:
        >>> Completion("Paris", prompt_tokens=12, completion_tokens=1).text
        'Paris'
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency: float = 0.0
    attempts: int = 1


@runtime_checkable
class TextLLM(Protocol):
    """A synchronous text-completion model: ``complete(prompt, **kw) -> Completion``."""

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """Complete ``prompt``; keyword arguments are backend-specific."""
        ...


@runtime_checkable
class AsyncTextLLM(TextLLM, Protocol):
    """A :class:`TextLLM` that also has a native ``acomplete``."""

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete`."""
        ...


def as_completion(value: object, latency: float = 0.0) -> Completion:
    """Coerce a backend's return value (``Completion`` or ``str``) to :class:`Completion`."""
    if isinstance(value, Completion):
        return value
    if isinstance(value, str):
        return Completion(text=value, latency=latency)
    raise TypeError(
        f"an LLM must return a Completion or a str; got {type(value).__name__}"
    )


class CallableLLM:
    """Turn a plain function ``prompt -> str`` (sync or async) into a :class:`TextLLM`.

    Args:
        fn: ``fn(prompt) -> str`` or ``async fn(prompt) -> str`` (it may also return a
            :class:`Completion`). Extra keyword arguments are passed through only if
            ``fn`` accepts ``**kwargs``.

    Example:
        >>> llm = CallableLLM(lambda p: "1) find the capital")
        >>> llm.complete("plan?").text
        '1) find the capital'
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable; got {type(fn).__name__}")
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        try:
            params = inspect.signature(fn).parameters.values()
            self._takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):  # builtins without a signature
            self._takes_kwargs = False

    @property
    def native_async(self) -> bool:
        """Whether :meth:`acomplete` awaits ``fn`` (else ManagedLLM runs it in its own workers)."""
        return self._is_async

    def _kw(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return kwargs if self._takes_kwargs else {}

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """Call the function (an async one is run to completion in a fresh loop)."""
        start = time.perf_counter()
        if self._is_async:
            out = asyncio.run(self.fn(prompt, **self._kw(kwargs)))
        else:
            out = self.fn(prompt, **self._kw(kwargs))
        return as_completion(out, time.perf_counter() - start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Await the function, or run a sync one in a worker thread."""
        start = time.perf_counter()
        if self._is_async:
            out = await self.fn(prompt, **self._kw(kwargs))
        else:
            out = await asyncio.to_thread(self.fn, prompt, **self._kw(kwargs))
        return as_completion(out, time.perf_counter() - start)


def ensure_llm(llm: object, name: str = "llm") -> TextLLM:
    """Return ``llm`` as a :class:`TextLLM`; plain callables are wrapped in :class:`CallableLLM`.

    Raises:
        TypeError: naming ``name`` when ``llm`` has no ``complete`` and is not callable.
    """
    if isinstance(llm, TextLLM):
        return llm
    if callable(llm):
        return CallableLLM(llm)
    raise TypeError(
        f"{name} must have a complete(prompt, **kw) method or be a callable prompt -> str; "
        f"got {type(llm).__name__}. Wrap LangChain/LlamaIndex models with "
        "langchain_diverse.dfrag.LangChainLLM / llamaindex_diverse.dfrag.LlamaIndexLLM."
    )
