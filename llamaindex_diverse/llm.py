"""LlamaIndex LLMs as the pipelines' backend (structured role calls through the LLM's own
``structured_predict``)."""

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
)
from diverse_core.llm.adapter import FrameworkAdapter
from diverse_core.llm.structured import refusal_from_error, token_budget
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.prompts import ChatPromptTemplate
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

__all__ = ["LlamaIndexLLM", "as_backend", "native_async", "output_class", "structured_method"]

_ROLES = {"system": MessageRole.SYSTEM, "user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}


def output_class(schema: OutputSchema) -> type[BaseModel]:
    """A pydantic class whose JSON schema is exactly the role's (so a backend enforces its enums
    and bounds) but which accepts any value: the core validates and *flags* what is wrong.

    Example:
        >>> from diverse_core.llm.structured import obj, int_range
        >>> cls = output_class(OutputSchema("judge", obj({"score": int_range(1, 3)})))
        >>> cls.model_json_schema()["properties"]["score"]["enum"], cls(score=7).score
        ([1, 2, 3], 7)
    """
    exact = schema.as_dict()

    def replace(js: dict[str, Any]) -> None:
        js.clear()
        js.update(json.loads(json.dumps(exact)))
        if schema.description:
            js.setdefault("description", schema.description)

    fields: dict[str, Any] = {key: (Any, None) for key in exact.get("properties", {})}
    config = ConfigDict(extra="allow", json_schema_extra=replace)
    model: type[BaseModel] = create_model(schema.name, __config__=config, **fields)
    model.__doc__ = schema.description or schema.name
    return model


def structured_method(llm: object) -> tuple[str, ...]:
    """The structured method a LlamaIndex LLM's ``structured_predict`` uses, as the core names it:
    ``json_schema`` when it sends the schema as ``response_format``, ``tool_calling`` for
    function-calling models, ``json_object`` for chat models and OpenAI-like endpoints (which also
    get ``response_format={"type": "json_object", "schema": ...}``), ``()`` for anything else.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> structured_method(MockLLM())
        ()
    """
    if not isinstance(llm, LLM):
        return ()
    uses_schema = getattr(llm, "_should_use_structure_outputs", None)
    try:
        if callable(uses_schema) and uses_schema():
            return ("json_schema",)
    except Exception:  # noqa: BLE001 - an integration that cannot tell: not json_schema
        pass
    if getattr(llm.metadata, "is_function_calling_model", False):
        return ("tool_calling",)
    if _openai_like(llm) or getattr(llm.metadata, "is_chat_model", False):
        return ("json_object",)
    return ()


def native_async(llm: object) -> bool:
    """Whether ``llm.acomplete`` / ``achat`` are truly asynchronous: ``CustomLLM``'s (and
    ``MockLLM``'s) call the sync method on the loop, blocking it past any timeout, unless the
    subclass implements both itself; such an LLM runs in :class:`~diverse_core.llm.ManagedLLM`'s
    daemon pool instead. Every other ``LLM`` integration is native.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> native_async(MockLLM())
        False
    """
    from llama_index.core.llms.custom import CustomLLM

    if not isinstance(llm, CustomLLM):
        return callable(getattr(llm, "acomplete", None))
    def own(name: str) -> bool:  # LlamaIndex's instrumentation wraps methods: compare the code
        mine = inspect.unwrap(getattr(type(llm), name))
        return getattr(mine, "__code__", None) is not getattr(inspect.unwrap(getattr(CustomLLM, name)), "__code__", None)

    return own("acomplete") and own("achat")


def _openai_like(llm: object) -> bool:
    return any(c.__name__ == "OpenAILike" for c in type(llm).__mro__)


class LlamaIndexLLM(FrameworkAdapter):
    """A LlamaIndex ``LLM`` as a pipeline backend.

    Text calls are ``llm.complete(prompt)``. Structured role calls go through the LLM's own
    ``structured_predict`` / ``astructured_predict`` with the role's chat messages and a pydantic
    class carrying its schema (:func:`output_class`), by the method :func:`structured_method`
    names; a refusal is remembered per model and the text prompt used instead. Instrumentation
    events fire as for any ``structured_predict`` call. Token counts (text path) come from
    ``additional_kwargs`` or an OpenAI-style ``raw["usage"]``.

    Args:
        llm: a LlamaIndex ``LLM``. For an OpenAI-compatible server use ``OpenAILike(...,
            is_chat_model=True)`` so messages go to the chat endpoint.
        structured_methods: override :func:`structured_method` (``()``: text path only).
        **complete_kwargs: extra keyword arguments for every ``complete``.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexLLM(MockLLM(max_tokens=2)).complete("hello").text
        'text text'
    """

    def __init__(self, llm: LLM, *, structured_methods: Sequence[str] | None = None,
                 **complete_kwargs: Any) -> None:
        if not hasattr(llm, "complete"):
            raise TypeError(f"llm must be a llama_index LLM; got {type(llm).__name__}")
        self.llm = llm
        self.complete_kwargs = complete_kwargs
        # structured methods (see structured_method), native_async (see native_async), memories
        self._adapt(llm, structured_methods, detect=structured_method, native=native_async)
        self._classes: dict[str, type[BaseModel]] = {}

    @property
    def max_tokens(self) -> int | None:
        """The LLM's ``max_tokens`` (the structured path fits its length bounds to it)."""
        return token_budget(self.complete_kwargs.get("max_tokens", getattr(self.llm, "max_tokens", None)))

    @property
    def structured_key(self) -> Hashable | None:
        """Names the served model (class, model name, endpoint); ``None`` when it has no name."""
        name = getattr(self.llm, "model", None) or getattr(self.llm.metadata, "model_name", None)
        if not isinstance(name, str) or not name or name == "unknown":
            return None
        base = str(getattr(self.llm, "api_base", None) or "")
        return ("llamaindex", type(self.llm).__name__, name, base)

    def _output_cls(self, schema: OutputSchema) -> type[BaseModel]:
        key = json.dumps(schema.as_dict(), sort_keys=True) + schema.name
        with self._lock:
            if key not in self._classes:
                self._classes[key] = output_class(schema)
            return self._classes[key]

    def _prepare(self, messages: Sequence[Message], schema: OutputSchema, method: str,
                 kwargs: dict[str, Any]) -> tuple[type[BaseModel], ChatPromptTemplate, dict[str, Any]]:
        self._check_method(method)
        template = ChatPromptTemplate(
            message_templates=[ChatMessage(role=_ROLES[m.role], content=m.content) for m in messages]
        )
        llm_kwargs = {**self.complete_kwargs, **kwargs}
        if method == "json_object" and _openai_like(self.llm):
            llm_kwargs.setdefault("response_format", {"type": "json_object", "schema": schema.as_dict()})
        return self._output_cls(schema), template, llm_kwargs

    def _llm_for(self, method: str) -> Any:
        """The LLM, or until ``method`` has worked once its copy without retries (``OpenAILike``
        retries itself *and* through its client: up to 16 requests per refused probe)."""
        return self._model_for(method, self.llm, _without_retries)

    def _reply(self, out: Any, method: str, start: float) -> Completion:
        value = out.model_dump(exclude_unset=True) if isinstance(out, BaseModel) else out
        return Completion(json.dumps(value), latency=time.perf_counter() - start)

    def _failed(self, exc: Exception, method: str, start: float) -> Completion:
        """A refusal is raised as such, an unreadable body is retried; a reply the integration
        could not parse goes on as text (the core flags it, the role's text parser reads it)."""
        if refusal_from_error(exc, method) is not None or not isinstance(exc, (ValueError, TypeError)):
            return super()._failed(exc, method, start)
        self._raise_unreadable(exc)
        if isinstance(exc, ValidationError):
            # pydantic's JSON errors carry the whole reply as their input: hand it on whole (its
            # message truncates it), so the core's decoder reads what pydantic refused (e.g. a raw
            # newline inside a string)
            raw = next((e.get("input") for e in exc.errors() if isinstance(e.get("input"), str)), None)
            return Completion(raw if raw is not None else str(exc), latency=time.perf_counter() - start)
        return Completion(str(exc), latency=time.perf_counter() - start)

    def complete_structured(self, messages: Sequence[Message], schema: OutputSchema, *, method: str,
                            **kwargs: Any) -> Completion:
        """``llm.structured_predict(...)`` for the role's schema and messages.

        Raises:
            StructuredOutputUnsupported: the server refused the structured request.
        """
        cls, template, llm_kwargs = self._prepare(messages, schema, method, kwargs)
        llm = self._llm_for(method)
        return self._call(method, lambda: llm.structured_predict(cls, template, llm_kwargs=llm_kwargs))

    async def acomplete_structured(self, messages: Sequence[Message], schema: OutputSchema, *,
                                   method: str, **kwargs: Any) -> Completion:
        """``await llm.astructured_predict(...)``."""
        cls, template, llm_kwargs = self._prepare(messages, schema, method, kwargs)
        llm = self._llm_for(method)
        return await self._acall(method, lambda: llm.astructured_predict(cls, template, llm_kwargs=llm_kwargs))

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
        return Completion(resp.text or "", *self._tokens(resp), time.perf_counter() - start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """``await llm.acomplete(prompt)``."""
        start = time.perf_counter()
        resp = await self.llm.acomplete(prompt, **{**self.complete_kwargs, **kwargs})
        return Completion(resp.text or "", *self._tokens(resp), time.perf_counter() - start)

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self.llm).__name__})"


def _without_retries(llm: Any) -> Any:
    """A copy of ``llm`` with ``max_retries=0`` whose ``_client``/``_aclient`` are the original's
    ``with_options(max_retries=0)`` (nothing new to close); ``llm`` when it has no retries or
    cannot be copied."""
    retries = getattr(llm, "max_retries", None)
    copy = getattr(llm, "model_copy", None)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries <= 0 or not callable(copy):
        return llm
    try:
        quiet = copy(update={"max_retries": 0})
    except Exception:  # noqa: BLE001 - an LLM that cannot be copied keeps its retries
        return llm
    if getattr(llm, "reuse_client", False):
        for getter, attr in (("_get_client", "_client"), ("_get_aclient", "_aclient")):
            get = getattr(llm, getter, None)
            try:
                client = get() if callable(get) else None
                if client is not None and callable(getattr(client, "with_options", None)):
                    setattr(quiet, attr, client.with_options(max_retries=0))
            except Exception:  # noqa: BLE001 - then the copy builds its own client, without retries
                setattr(quiet, attr, None)
    return quiet


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
