"""Structured LLM calls: chat messages, one JSON schema per role, method negotiation, validation.

A pipeline role asks its model through a :class:`RoleRequest` (chat messages, the role's
:class:`OutputSchema`, and the text prompt kept as the fallback);
:meth:`ManagedLLM.complete_role <diverse_core.llm.ManagedLLM.complete_role>` sends it the
strongest way the backend takes (:data:`STRUCTURED_METHODS`, then ``text``). A backend adds
``structured_methods``, optionally ``structured_key``, and ``complete_structured(messages,
schema, *, method, **kw)`` (optionally its async twin), raising
:class:`StructuredOutputUnsupported` for a method it refuses. Every decoded value is validated
again here and each problem *flagged* in :attr:`RoleCompletion.problems`; a reply that is not
JSON of the schema's shape has ``value=None`` and goes to the role's text parser. The methods,
the backend contract and the flags: ``docs/guides/structured-output.md``.

Schemas are plain JSON-schema dicts (no pydantic). Messages (:mod:`.messages`), schemas
(:mod:`.schema`) and decoding (:mod:`.decoding`) are re-exported here.

Example:
    >>> s = OutputSchema("verdict", obj({"verdict": enum_of("yes", "no")}))
    >>> s.validate({"verdict": "maybe"})[0].kind
    'range'
    >>> decode_json('{"verdict": "yes"}', s)
    ({'verdict': 'yes'}, ())
"""

from __future__ import annotations

import re
import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from . import decoding, messages, schema
from .base import Completion
from .decoding import *  # noqa: F403  (re-exported: decoding.__all__)
from .errors import LLMError
from .messages import *  # noqa: F403
from .messages import Message
from .schema import *  # noqa: F403
from .schema import OutputSchema, SchemaProblem
from .workers import Slots

__all__ = [
    "METHODS",
    "STRUCTURED_METHODS",
    "RoleRequest",
    "RoleCompletion",
    "StructuredLLM",
    "StructuredOutputUnsupported",
    "MethodMemory",
    "declared_methods",
    "refusal_from_error",
    "refusals_raised",
]
# The message, schema and decoding helpers stay importable from here (their lists live there).
__all__ += messages.__all__
__all__ += schema.__all__
__all__ += decoding.__all__

#: Structured methods, strongest first (what negotiation tries, in this order).
STRUCTURED_METHODS: tuple[str, ...] = ("json_schema", "tool_calling", "json_object")
#: Every path a role call can take.
METHODS: tuple[str, ...] = (*STRUCTURED_METHODS, "text")

Path = Literal["structured", "text"]


# ----------------------------------------------------------------------------- requests and replies
@dataclass(frozen=True)
class RoleRequest:
    """What a pipeline role asks for.

    Attributes:
        role: the role's name (``"evaluator"``, ``"judge"``, ...).
        messages: the chat messages for the structured path.
        schema: the role's output schema (``None``: a free-text role; only the text path).
        prompt: the text prompt used on the text path (today's template).
        sources: the passages the role was shown (the text parser ignores what it quotes).

    Example:
        >>> r = RoleRequest("judge", (Message("user", "Q?"),), None, "Q?")
        >>> r.structured
        False
    """

    role: str
    messages: tuple[Message, ...]
    schema: OutputSchema | None
    prompt: str
    sources: tuple[str, ...] = ()

    @property
    def structured(self) -> bool:
        """Whether this request can take a structured path (it has a schema and messages)."""
        return self.schema is not None and bool(self.messages)


@dataclass(frozen=True)
class RoleCompletion(Completion):
    """A :class:`Completion` that also says which path the call took and what it decoded.

    Attributes:
        path: ``"structured"`` or ``"text"``.
        method: ``"json_schema"``, ``"tool_calling"``, ``"json_object"`` or ``"text"``.
        value: the decoded, shape-valid JSON object (``None`` on the text path or when the
            structured reply could not be decoded).
        problems: schema problems of the decoded reply (bounds flagged, never clipped here).
        fell_back: the backend declares structured methods but none was usable for this model
            (rejected now or earlier), so the text path was used.
        rejected: structured methods the backend refused during this call.
    """

    path: Path = "text"
    method: str = "text"
    value: Any = None
    problems: tuple[SchemaProblem, ...] = ()
    fell_back: bool = False
    rejected: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- backends
class StructuredOutputUnsupported(LLMError):
    """A backend refuses a structured method (raise it from ``complete_structured``).

    It is never retried: the negotiation remembers the refusal for the model and tries the
    next weaker method.

    Args:
        method: the refused method.
        reason: why (the server's message).
    """

    def __init__(self, method: str, reason: str = "") -> None:
        super().__init__(f"structured method {method!r} not supported: {reason}".rstrip(": "))
        self.method = method
        self.reason = reason


_REFUSAL_STATUS = {400, 404, 422, 500, 501}
_REFUSAL_WORDS = re.compile(
    r"response_format|json_schema|json schema|schema|tool|function|grammar|not supported|unsupported"
    r"|must be 'text'|not implemented",
    re.IGNORECASE,
)


def refusal_from_error(exc: Exception, method: str) -> StructuredOutputUnsupported | None:
    """``exc`` as a refusal of ``method`` when the server says it cannot do it, else ``None``.

    For backends that reach an HTTP server through a client library (openai, LangChain,
    LlamaIndex): an HTTP 400/404/422/500/501 whose message names ``response_format``, a
    schema, tools, a grammar or "not supported" is a refusal (not retried; the negotiation
    steps down); anything else keeps the retry policy.

    Example:
        >>> class InternalServerError(Exception):
        ...     status_code = 500
        >>> refusal_from_error(InternalServerError("response_format type must be 'text' or 'json_object'"),
        ...          "json_schema").method
        'json_schema'
        >>> refusal_from_error(InternalServerError("worker crashed"), "json_schema") is None
        True
    """
    status = getattr(exc, "status_code", None)
    if status not in _REFUSAL_STATUS or not _REFUSAL_WORDS.search(str(exc)):
        return None
    return StructuredOutputUnsupported(method, f"HTTP {status}: {str(exc)[:200]}")


@contextmanager
def refusals_raised(method: str) -> Iterator[None]:
    """Re-raise an error of the block as :class:`StructuredOutputUnsupported` when it is a
    refusal of ``method`` (:func:`refusal_from_error`); any other error passes unchanged.

    Example:
        >>> class BadRequest(Exception):
        ...     status_code = 400
        >>> try:
        ...     with refusals_raised("tool_calling"):
        ...         raise BadRequest("tools are not supported by this model")
        ... except StructuredOutputUnsupported as exc:
        ...     exc.method
        'tool_calling'
    """
    try:
        yield
    except Exception as exc:
        refused = refusal_from_error(exc, method)
        if refused is None:
            raise
        raise refused from exc


@runtime_checkable
class StructuredLLM(Protocol):
    """A backend that can return schema-shaped JSON (see the module docstring)."""

    structured_methods: Sequence[str]

    def complete_structured(
        self, messages: Sequence[Message], schema: OutputSchema, *, method: str, **kwargs: Any
    ) -> Completion | str | Mapping[str, Any]:
        """One structured call with ``method``; raises :class:`StructuredOutputUnsupported`."""
        ...


def declared_methods(backend: object) -> tuple[str, ...]:
    """The structured methods a backend declares, strongest first, unknown names dropped.

    ``structured_methods`` may be an attribute, a property or a zero-argument method.

    Example:
        >>> class B:
        ...     structured_methods = ("json_object", "json_schema", "bogus")
        ...     def complete_structured(self, messages, schema, *, method, **kw): ...
        >>> declared_methods(B()), declared_methods(object())
        (('json_schema', 'json_object'), ())
    """
    if not callable(getattr(backend, "complete_structured", None)):
        return ()
    declared = getattr(backend, "structured_methods", ())
    if callable(declared):
        declared = declared()
    if isinstance(declared, str):
        declared = (declared,)
    names = set(declared or ())
    return tuple(m for m in STRUCTURED_METHODS if m in names)


# ----------------------------------------------------------------------------- negotiation memory
@dataclass
class _ModelState:
    rejected: dict[str, str] = field(default_factory=dict)  # method -> reason
    confirmed: str | None = None  # a method that returned a reply
    gate: Slots = field(default_factory=lambda: Slots(1))
    warned: bool = False


class MethodMemory:
    """Which structured methods each model refused (thread- and event-loop-safe).

    Keys identify a served model (a backend's ``structured_key``, else the backend object).
    Until a method has worked for a model, its calls take the model's *probe gate* one at a
    time, so concurrent first calls pay a refusal once, not once each.

    Example:
        >>> mem = MethodMemory()
        >>> mem.reject("m", "json_schema", "HTTP 500")
        >>> mem.usable("m", ("json_schema", "json_object"))
        ('json_object',)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[Hashable, _ModelState] = {}

    def _state(self, key: Hashable) -> _ModelState:
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = _ModelState()
            return state

    def usable(self, key: Hashable, methods: Sequence[str]) -> tuple[str, ...]:
        """``methods`` minus those the model refused (the confirmed one first)."""
        state = self._state(key)
        with self._lock:
            left = [m for m in methods if m not in state.rejected]
            if state.confirmed in left:
                left.remove(state.confirmed)
                left.insert(0, state.confirmed)
        return tuple(left)

    def reject(self, key: Hashable, method: str, reason: str = "") -> None:
        """Remember that the model refused ``method``."""
        state = self._state(key)
        with self._lock:
            state.rejected.setdefault(method, reason)
            if state.confirmed == method:
                state.confirmed = None

    def confirm(self, key: Hashable, method: str) -> None:
        """Remember that ``method`` worked for the model (its calls stop taking the gate)."""
        state = self._state(key)
        with self._lock:
            state.confirmed = method

    def confirmed(self, key: Hashable) -> str | None:
        """The method known to work for the model, if any."""
        state = self._state(key)
        with self._lock:
            return state.confirmed

    def rejected(self, key: Hashable) -> dict[str, str]:
        """The methods the model refused, with the reasons."""
        state = self._state(key)
        with self._lock:
            return dict(state.rejected)

    def gate(self, key: Hashable) -> Slots:
        """The model's probe gate (one call at a time while no method is confirmed)."""
        return self._state(key).gate

    def first_warning(self, key: Hashable) -> bool:
        """``True`` once per model: whether to log the fall-back-to-text warning now."""
        state = self._state(key)
        with self._lock:
            first, state.warned = not state.warned, True
            return first

    def forget(self, key: Hashable | None = None) -> None:
        """Forget one model (or every model)."""
        with self._lock:
            if key is None:
                self._states.clear()
            else:
                self._states.pop(key, None)


#: The process-wide memory for backends that name their model with ``structured_key``.
SHARED_MEMORY = MethodMemory()
