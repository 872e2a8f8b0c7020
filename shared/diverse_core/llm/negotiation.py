"""Structured-method negotiation of :class:`~diverse_core.llm.ManagedLLM`: which methods a role
call tries, stepping down on a refusal (remembered per model), the probe gate, and the reply as a
:class:`~diverse_core.llm.structured.RoleCompletion` (see :mod:`diverse_core.llm.structured`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any

from .base import Completion, TextLLM
from .decoding import decode_json
from .policy import _Job
from .schema import token_budget
from .structured import (
    SHARED_MEMORY,
    MethodMemory,
    RoleCompletion,
    RoleRequest,
    StructuredOutputUnsupported,
)
from .workers import Slots

__all__ = ["StructuredNegotiation"]

_log = logging.getLogger("diverse_core")


def _structured_out(raw: object) -> object:
    """A structured backend's return value as a Completion (a decoded object is re-serialised)."""
    if isinstance(raw, (Completion, str)):
        return raw
    dump = getattr(raw, "model_dump", None)  # a pydantic model from a framework adapter
    if callable(dump):
        raw = dump()
    if isinstance(raw, Mapping):
        return Completion(text=json.dumps(dict(raw)))
    raise TypeError(
        "complete_structured must return a Completion, a JSON str or a mapping; "
        f"got {type(raw).__name__}"
    )


class StructuredNegotiation:
    """Structured role calls (a mixin of ``ManagedLLM``, which sets the attributes below and runs
    each attempt with its call policy)."""

    inner: TextLLM
    structured_methods: tuple[str, ...]
    _structured_native: bool
    _memory: MethodMemory
    _memory_key: Hashable
    # ManagedLLM's: run a job under the call policy; the job of a text call
    _run_sync: Callable[[_Job], Completion]
    _run_async: Callable[[_Job], Awaitable[Completion]]
    _text_job: Callable[[str, dict[str, Any]], _Job]

    def _method_memory(self, given: MethodMemory | None) -> tuple[MethodMemory, Hashable]:
        """Where refusals are remembered: the backend's ``structured_key`` in the shared
        memory (every wrapper of that model learns at once), else this wrapper's own."""
        key = getattr(self.inner, "structured_key", None)
        if key is not None:
            try:
                hash(key)
            except TypeError:
                key = None
        if key is None:
            return given or MethodMemory(), ("backend", id(self.inner))
        return given or SHARED_MEMORY, ("key", key)

    @property
    def method_memory(self) -> MethodMemory:
        """The memory of refused methods this wrapper consults."""
        return self._memory

    def refused_methods(self) -> dict[str, str]:
        """The structured methods this model refused so far, with the reasons."""
        return self._memory.rejected(self._memory_key)

    def role_methods(self, request: RoleRequest) -> tuple[str, ...]:
        """The structured methods ``request`` would try now, strongest first (``()``: text)."""
        if not request.structured or not self.structured_methods:
            return ()
        return self._memory.usable(self._memory_key, self.structured_methods)

    def _structured_job(self, request: RoleRequest, method: str, kwargs: dict[str, Any]) -> _Job:
        backend: Any = self.inner
        assert request.schema is not None  # structured requests have one
        args = (request.messages, request.schema.grammar_safe(budget=self._token_budget(kwargs)))

        def sync() -> object:
            return _structured_out(backend.complete_structured(*args, method=method, **kwargs))

        async def native() -> object:
            return _structured_out(await backend.acomplete_structured(*args, method=method, **kwargs))

        return _Job(sync, native if self._structured_native else None)

    def _token_budget(self, kwargs: Mapping[str, Any]) -> int | None:
        """The call's ``max_tokens`` (its own, else the backend's), which the grammar-bound
        schema is fitted to (:meth:`OutputSchema.grammar_safe`); ``None`` when unknown."""
        return token_budget(kwargs.get("max_tokens"), kwargs.get("max_new_tokens"),
                            getattr(self.inner, "max_tokens", None), getattr(self.inner, "max_new_tokens", None))

    def _refused(self, exc: StructuredOutputUnsupported, method: str, rejected: list[str]) -> None:
        self._memory.reject(self._memory_key, method, exc.reason or str(exc))
        rejected.append(method)
        _log.info("%r refused structured method %r (%s); trying the next one", self.inner, method, exc)

    def _structured_reply(self, out: Completion, request: RoleRequest, method: str,
                          rejected: list[str]) -> RoleCompletion:
        self._memory.confirm(self._memory_key, method)
        assert request.schema is not None  # structured requests have one
        value, problems = decode_json(out.text, request.schema)
        return RoleCompletion(**vars(out), path="structured", method=method, value=value, problems=problems,
                              rejected=tuple(rejected))

    def _text_reply(self, out: Completion, request: RoleRequest, rejected: list[str]) -> RoleCompletion:
        fell_back = request.structured and bool(self.structured_methods)
        if fell_back and self._memory.first_warning(self._memory_key):
            refused = self._memory.rejected(self._memory_key)
            _log.warning(
                "%r refused every structured method (%s); its roles use the text prompts and parsers",
                self.inner, "; ".join(f"{m}: {why}" for m, why in refused.items()) or "none usable",
            )
        return RoleCompletion(**vars(out), path="text", method="text", fell_back=fell_back,
                              rejected=tuple(rejected))

    def _gate(self, request: RoleRequest) -> Slots | None:
        """The model's probe gate while no structured method is known to work for it."""
        if not self.role_methods(request) or self._memory.confirmed(self._memory_key) is not None:
            return None
        return self._memory.gate(self._memory_key)

    def _still_probing(self, gate: Slots) -> Slots | None:
        """The acquired ``gate``, or ``None`` (released) when a method was confirmed meanwhile."""
        if self._memory.confirmed(self._memory_key) is None:
            return gate
        gate.release()
        return None

    def complete_role(self, request: RoleRequest, **kwargs: Any) -> RoleCompletion:
        """One role call, structured when the backend can take it (see
        :mod:`diverse_core.llm.structured`): the strongest method this model has not
        refused, stepping down on a refusal (remembered, paid once per model), then the
        text prompt (``fell_back=True``, logged once per model as a warning).

        Raises:
            LLMTimeoutError / LLMError: as :meth:`complete`.
        """
        rejected: list[str] = []
        gate = self._gate(request)
        if gate is not None:
            gate.acquire()
            gate = self._still_probing(gate)
        try:
            for method in self.role_methods(request):
                try:
                    out = self._run_sync(self._structured_job(request, method, kwargs))
                except StructuredOutputUnsupported as exc:
                    self._refused(exc, method, rejected)
                    continue
                return self._structured_reply(out, request, method, rejected)
        finally:
            if gate is not None:
                gate.release()
        return self._text_reply(self._run_sync(self._text_job(request.prompt, kwargs)), request, rejected)

    async def acomplete_role(self, request: RoleRequest, **kwargs: Any) -> RoleCompletion:
        """Asynchronous :meth:`complete_role`."""
        rejected: list[str] = []
        gate = self._gate(request)
        if gate is not None:
            await gate.aacquire()
            gate = self._still_probing(gate)
        try:
            for method in self.role_methods(request):
                try:
                    out = await self._run_async(self._structured_job(request, method, kwargs))
                except StructuredOutputUnsupported as exc:
                    self._refused(exc, method, rejected)
                    continue
                return self._structured_reply(out, request, method, rejected)
        finally:
            if gate is not None:
                gate.release()
        out = await self._run_async(self._text_job(request.prompt, kwargs))
        return self._text_reply(out, request, rejected)
