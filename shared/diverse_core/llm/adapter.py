"""The framework-neutral half of a framework model adapter (LangChain's ``LangChainLLM``,
LlamaIndex's ``LlamaIndexLLM``): which structured methods it tries, whether the model's async
calls are its own, which methods have worked, the retry-free copy of the model for a method's
first requests, and how one structured call ends.

An adapter subclasses :class:`FrameworkAdapter`, calls :meth:`~FrameworkAdapter._adapt` in its
constructor, runs each structured framework call through :meth:`~FrameworkAdapter._call` /
:meth:`~FrameworkAdapter._acall`, and implements ``_reply`` (the framework's reply as a
:class:`~diverse_core.llm.Completion`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .base import Completion
from .errors import unreadable_reply
from .loops import serves_running_loop
from .structured import STRUCTURED_METHODS, StructuredOutputUnsupported, refusal_from_error

__all__ = ["FrameworkAdapter"]


class FrameworkAdapter:
    """Structured-call bookkeeping shared by the framework adapters (see the module docstring).

    Attributes:
        structured_methods: the structured methods this adapter tries, in order.
        native_async: read by :class:`~diverse_core.llm.ManagedLLM`: ``False`` runs
            ``complete`` in its own daemon pool for async calls too, so a hung call is abandoned
            at its timeout.

    **One model, many loops.** One model is usually shared by a whole service, but its async
    client's connections belong to one loop: its async API serves only the first event loop that
    calls it (never a synchronous ``run()``'s private one); other loops get its synchronous API
    in :class:`~diverse_core.llm.ManagedLLM`'s workers (see :meth:`serves_running_loop`).

    Example:
        >>> class Echo(FrameworkAdapter):
        ...     def __init__(self) -> None:
        ...         self._adapt(object(), None, detect=lambda m: ("json_object",), native=lambda m: True)
        ...     def _reply(self, out, method, start):
        ...         return Completion(str(out))
        >>> echo = Echo()
        >>> echo.structured_methods, echo._settled('{"a": 1}', "json_object", 0.0).text
        (('json_object',), '{"a": 1}')
    """

    structured_methods: tuple[str, ...]
    native_async: bool

    def _adapt(
        self,
        model: Any,
        structured_methods: Sequence[str] | None,
        *,
        detect: Callable[[Any], Sequence[str]],
        native: Callable[[Any], bool],
    ) -> None:
        """Set up for ``model``: the structured methods (``detect(model)`` unless given; a typed
        error for an unknown one), ``native_async`` (``native(model)``), the lock and memories."""
        methods = detect(model) if structured_methods is None else structured_methods
        if isinstance(methods, str) or any(m not in STRUCTURED_METHODS for m in methods):
            raise ValueError(f"structured_methods must be a sequence of {STRUCTURED_METHODS}; "
                             f"got structured_methods={structured_methods!r}")
        self.structured_methods = tuple(methods)
        self.native_async = native(model)
        self._loop_owner = _unwrapped(model)  # whose async client the async calls use
        self._lock = threading.Lock()
        self._proven: set[str] = set()  # structured methods that returned a reply once
        self._quiet: Any = None  # the model without its client's retries (built on first probe)

    def serves_running_loop(self) -> bool:
        """Whether the model's async API may serve a call on the running loop (read by
        :class:`~diverse_core.llm.ManagedLLM`; see :func:`diverse_core.llm.loops.serves_running_loop`)."""
        return serves_running_loop(self._loop_owner)

    def _check_method(self, method: str) -> None:
        """Refuse a structured method this adapter was not set up to try."""
        if method not in self.structured_methods:
            raise StructuredOutputUnsupported(method, f"not in this adapter's structured_methods "
                                                      f"{self.structured_methods}")

    def _model_for(self, method: str, model: Any, without_retries: Callable[[Any], Any]) -> Any:
        """``model`` once ``method`` has worked; until then its copy without the client's own
        retries (``without_retries(model)``, built once), so a refused probe costs one request,
        not ``max_retries + 1``."""
        if method in self._proven:
            return model
        with self._lock:
            if self._quiet is None:
                self._quiet = without_retries(model)
            return self._quiet

    def _call(self, method: str, invoke: Callable[[], Any]) -> Completion:
        """One structured framework call, ended by :meth:`_settled` or :meth:`_failed`."""
        start = time.perf_counter()
        try:
            out = invoke()
        except Exception as exc:  # noqa: BLE001 - a refusal is told apart in _failed, the rest re-raised
            return self._failed(exc, method, start)
        return self._settled(out, method, start)

    async def _acall(self, method: str, invoke: Callable[[], Awaitable[Any]]) -> Completion:
        """Asynchronous :meth:`_call`."""
        start = time.perf_counter()
        try:
            out = await invoke()
        except Exception as exc:  # noqa: BLE001 - a refusal is told apart in _failed, the rest re-raised
            return self._failed(exc, method, start)
        return self._settled(out, method, start)

    def _failed(self, exc: Exception, method: str, start: float) -> Completion:
        """How a structured call that raised ends: a refusal of ``method`` becomes
        :class:`StructuredOutputUnsupported` (the negotiation tries the next method); anything
        else is raised as it is (an adapter may turn some errors into a reply instead)."""
        refused = refusal_from_error(exc, method)
        if refused is not None:
            raise refused from exc
        self._raise_unreadable(exc)
        raise exc

    @staticmethod
    def _raise_unreadable(exc: Exception) -> None:
        """Raise :func:`~diverse_core.llm.errors.unreadable_reply` (retried) when there is one."""
        unreadable = unreadable_reply(exc)
        if unreadable is not None:
            raise unreadable from exc

    def _settled(self, out: Any, method: str, start: float) -> Completion:
        """How a structured call that returned ends: ``method`` has proved itself; the reply."""
        self._proven.add(method)
        return self._reply(out, method, start)

    def _reply(self, out: Any, method: str, start: float) -> Completion:
        """The framework's reply as a :class:`Completion` (the adapter implements it)."""
        raise NotImplementedError


def _unwrapped(model: Any) -> Any:
    """The model inside bindings (LangChain's ``model.bind(...)`` keeps it as ``bound``), so every
    binding of one model shares its loop."""
    for _ in range(16):
        inner = getattr(model, "bound", None)
        if inner is None or inner is model:
            break
        model = inner
    return model
