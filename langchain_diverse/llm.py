"""LangChain chat models and LLMs as the pipelines' backend (structured role calls through the
chat model's own ``with_structured_output``)."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Hashable, Sequence
from typing import Any

from diverse_core.llm import (
    Completion,
    ManagedLLM,
    Message,
    OutputSchema,
    StructuredOutputUnsupported,
)
from diverse_core.llm.adapter import FrameworkAdapter
from diverse_core.llm.structured import STRUCTURED_METHODS, schema_hint, token_budget
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

__all__ = ["LangChainLLM", "as_backend", "native_async", "supported_methods"]


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


def _text_completion(out: Any, start: float) -> Completion:
    return Completion(_message_text(out), *_usage(out), time.perf_counter() - start)


#: The core's method names -> ``with_structured_output(method=...)``.
_LC_METHOD = {"json_schema": "json_schema", "tool_calling": "function_calling", "json_object": "json_mode"}
_ROLES: dict[str, type[BaseMessage]] = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def supported_methods(model: object) -> tuple[str, ...]:
    """The structured methods a LangChain model's ``with_structured_output`` can take: all three
    when its class overrides it with a ``method`` argument (``ChatOpenAI``, ``ChatOllama``, ...;
    a refused one is remembered), ``tool_calling`` when only ``bind_tools`` is implemented, else none.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> supported_methods(FakeListChatModel(responses=["x"]))
        ()
    """
    if not isinstance(model, BaseChatModel):
        return ()
    cls = type(model)
    if cls.with_structured_output is not BaseChatModel.with_structured_output:
        try:
            params = inspect.signature(cls.with_structured_output).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        if "method" in params:
            return STRUCTURED_METHODS
        return ("json_schema",)  # its own, unnamed method: the model enforces the schema itself
    if cls.bind_tools is not BaseChatModel.bind_tools:
        return ("tool_calling",)
    return ()


def native_async(model: object) -> bool:
    """Whether ``model.ainvoke`` is truly asynchronous, not LangChain's fallback to the sync code
    in the loop's default executor (whose thread ``asyncio.run`` joins, so a hung call would
    outlast the timeout; such a model runs in :class:`~diverse_core.llm.ManagedLLM`'s daemon pool).

    Native: a class implementing ``_agenerate`` (or an LLM's ``_acall``), a ``RunnableLambda`` of
    an async function, a binding or sequence of native parts, a Runnable overriding ``ainvoke``.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> from langchain_core.runnables import RunnableLambda
        >>> async def echo(x: str) -> str:
        ...     return x
        >>> native_async(FakeListChatModel(responses=["x"])), native_async(RunnableLambda(echo))
        (False, True)
    """
    from langchain_core.language_models import BaseLLM
    from langchain_core.language_models.chat_models import SimpleChatModel
    from langchain_core.language_models.llms import LLM
    from langchain_core.runnables import RunnableBinding, RunnableLambda, RunnableSequence

    cls = type(model)
    if isinstance(model, BaseChatModel):
        return cls._agenerate not in (BaseChatModel._agenerate, SimpleChatModel._agenerate)
    if isinstance(model, BaseLLM):
        if isinstance(model, LLM) and cls._acall is not LLM._acall:
            return True
        return cls._agenerate not in (BaseLLM._agenerate, LLM._agenerate)
    if isinstance(model, RunnableLambda):
        return callable(getattr(model, "afunc", None))
    if isinstance(model, RunnableBinding):
        return native_async(model.bound)
    if isinstance(model, RunnableSequence):
        return all(native_async(step) for step in model.steps)
    return cls.ainvoke is not Runnable.ainvoke


def _lc_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    return [_ROLES[m.role](content=m.content) for m in messages]


class LangChainLLM(FrameworkAdapter):
    """A LangChain chat model, LLM or string-input Runnable as a pipeline backend.

    Text calls are ``model.invoke(prompt, config)`` (or ``ainvoke``). Structured role calls go
    through the model's own ``with_structured_output(schema, method=..., include_raw=True)`` with
    the role's chat messages (``json_mode`` also spells the schema out); a refused method is
    remembered per model and the next one tried, then the text prompt (see
    :mod:`diverse_core.llm.structured`). Pass ``callbacks=`` per call (e.g.
    ``run_manager.get_child()``) so tracing sees every role call. Token counts come from the
    message's ``usage_metadata``.

    Args:
        model: a ``BaseChatModel``, ``BaseLLM`` or any ``Runnable[str, str | BaseMessage]``.
        structured_methods: the structured methods to try (default:
            :func:`supported_methods`); ``()`` keeps every role on the text path.
        **invoke_kwargs: extra keyword arguments for every ``invoke`` (e.g. ``stop=[...]``).

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> LangChainLLM(FakeListChatModel(responses=["hi"])).complete("hello").text
        'hi'
    """

    def __init__(self, model: Runnable[Any, Any], *, structured_methods: Sequence[str] | None = None,
                 **invoke_kwargs: Any) -> None:
        if not hasattr(model, "invoke"):
            raise TypeError(f"model must be a LangChain Runnable; got {type(model).__name__}")
        self.model = model
        self.invoke_kwargs = invoke_kwargs
        # structured methods (see supported_methods), native_async (see native_async), memories
        self._adapt(model, structured_methods, detect=supported_methods, native=native_async)
        self._runnables: dict[tuple[str, str, bool], Runnable[Any, Any]] = {}

    @property
    def max_tokens(self) -> int | None:
        """The model's ``max_tokens`` (the structured path fits its length bounds to it)."""
        return token_budget(self.invoke_kwargs.get("max_tokens"), getattr(self.model, "max_tokens", None),
                            getattr(self.model, "max_new_tokens", None), getattr(self.model, "num_predict", None))

    @property
    def structured_key(self) -> Hashable | None:
        """Names the served model (class, model name, endpoint), so every wrapper of it shares
        what it refused; ``None`` (this adapter only) when the model does not name itself."""
        name = next((getattr(self.model, a) for a in ("model_name", "model", "model_id")
                     if isinstance(getattr(self.model, a, None), str)), None)
        if name is None:
            return None
        base = next((str(getattr(self.model, a)) for a in ("openai_api_base", "base_url")
                     if getattr(self.model, a, None)), "")
        return ("langchain", type(self.model).__name__, name, base)

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
        return _text_completion(out, start)

    async def acomplete(self, prompt: str, *, callbacks: Any = None, tags: Any = None, **kwargs: Any) -> Completion:
        """``await model.ainvoke(prompt)`` with the given callbacks."""
        start = time.perf_counter()
        out = await self.model.ainvoke(prompt, self._config(callbacks, tags), **{**self.invoke_kwargs, **kwargs})
        return _text_completion(out, start)

    # ------------------------------------------------------------------ structured calls
    def _structured(self, schema: OutputSchema, method: str) -> Runnable[Any, Any]:
        """``model.with_structured_output(...)`` for this schema and method, built once (on the
        model without its client's retries until the method has worked: see ``_model_for``)."""
        self._check_method(method)
        probing = method not in self._proven
        key = (method, json.dumps(schema.as_dict(), sort_keys=True) + schema.name, probing)
        with self._lock:
            built = self._runnables.get(key)
        if built is not None:
            return built
        spec = {"title": schema.name, "description": schema.description or schema.name, **schema.as_dict()}
        model = self._model_for(method, self.model, _without_retries)
        wso: Any = model.with_structured_output
        try:
            if supported_methods(self.model) == STRUCTURED_METHODS:
                built = wso(spec, method=_LC_METHOD[method], include_raw=True)
            else:
                built = wso(spec, include_raw=True)
        except (NotImplementedError, ValueError, TypeError) as exc:
            raise StructuredOutputUnsupported(method, f"{type(exc).__name__}: {exc}") from exc
        with self._lock:
            self._runnables[key] = built
        return built

    def _inputs(self, messages: Sequence[Message], schema: OutputSchema, method: str) -> list[BaseMessage]:
        if method == "json_object":  # JSON mode may not read the schema: spell it out
            messages = schema_hint(messages, schema)
        return _lc_messages(messages)

    def _reply(self, out: Any, method: str, start: float) -> Completion:
        if not isinstance(out, dict) or "raw" not in out:  # a model's own wrapper without include_raw
            parsed = out.model_dump() if hasattr(out, "model_dump") else out
            return Completion(json.dumps(parsed), latency=time.perf_counter() - start)
        raw = out.get("raw")
        p, c = _usage(raw)
        parsed = out.get("parsed")
        if hasattr(parsed, "model_dump"):
            parsed = parsed.model_dump()
        if isinstance(parsed, dict):
            text = json.dumps(parsed)
        else:  # not parsed: hand the raw reply on, the core flags what is wrong with it
            calls = getattr(raw, "tool_calls", None) or []
            text = json.dumps(calls[0].get("args", {})) if calls else _message_text(raw)
            if method == "tool_calling" and not calls and not text.strip().startswith("{"):
                raise StructuredOutputUnsupported(method, "the reply held no tool call")
        return Completion(text, p, c, time.perf_counter() - start)

    def _failed(self, exc: Exception, method: str, start: float) -> Completion:
        """A reply the structured runnable's parser refused (``OutputParserException``) goes on
        as text (its ``llm_output``: the core flags it, the role's text parser reads it); without
        one, ``method`` is refused. Anything else as :meth:`FrameworkAdapter._failed`."""
        from langchain_core.exceptions import OutputParserException

        if isinstance(exc, OutputParserException):
            reply = getattr(exc, "llm_output", None)
            if isinstance(reply, str) and reply.strip():
                return Completion(reply, latency=time.perf_counter() - start)
            raise StructuredOutputUnsupported(method, f"its output parser failed: {str(exc)[:200]}") from exc
        return super()._failed(exc, method, start)

    def complete_structured(self, messages: Sequence[Message], schema: OutputSchema, *, method: str,
                            callbacks: Any = None, tags: Any = None, **kwargs: Any) -> Completion:
        """One structured call through ``with_structured_output`` (see the class docstring).

        Raises:
            StructuredOutputUnsupported: the model or its server refused ``method``.
        """
        runnable, args = self._structured(schema, method), self._inputs(messages, schema, method)
        config, kw = self._config(callbacks, tags), {**self.invoke_kwargs, **kwargs}
        return self._call(method, lambda: runnable.invoke(args, config, **kw))

    async def acomplete_structured(self, messages: Sequence[Message], schema: OutputSchema, *,
                                   method: str, callbacks: Any = None, tags: Any = None,
                                   **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete_structured` (``ainvoke``)."""
        runnable, args = self._structured(schema, method), self._inputs(messages, schema, method)
        config, kw = self._config(callbacks, tags), {**self.invoke_kwargs, **kwargs}
        return await self._acall(method, lambda: runnable.ainvoke(args, config, **kw))

    def __repr__(self) -> str:
        return f"LangChainLLM({type(self.model).__name__})"


def _without_retries(model: Any) -> Any:
    """A copy of ``model`` whose client does not retry (``model`` itself when it has no retries or
    cannot be copied); ``ChatOpenAI``'s ``root_client`` / ``root_async_client`` become their
    ``with_options(max_retries=0)`` (same connection pool, nothing new to close)."""
    copy = getattr(model, "model_copy", None)
    own = getattr(model, "max_retries", None)  # ChatOpenAI: None = the openai client's default (2)
    client = getattr(getattr(model, "root_client", None), "max_retries", None)
    if not callable(copy) or not any(isinstance(r, int) and not isinstance(r, bool) and r > 0
                                     for r in (own, client)):
        return model
    update: dict[str, Any] = {"max_retries": 0}
    for root, leaf in (("root_client", "client"), ("root_async_client", "async_client")):
        client = getattr(model, root, None)
        with_options = getattr(client, "with_options", None)
        if callable(with_options):
            quiet = with_options(max_retries=0)
            update[root] = quiet
            chat = getattr(quiet, "chat", None)
            if getattr(model, leaf, None) is not None and chat is not None:
                update[leaf] = chat.completions
    try:
        return copy(update=update)
    except Exception:  # noqa: BLE001 - a model that cannot be copied keeps its retries
        return model


def as_backend(llm: Any) -> Any:
    """LangChain Runnables get the adapter; core backends (and ``None``) pass through."""
    if isinstance(llm, (ManagedLLM, LangChainLLM)):
        return llm
    if isinstance(llm, Runnable):
        return LangChainLLM(llm)
    return llm
