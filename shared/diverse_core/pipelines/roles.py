"""One LLM-role helper for every pipeline: per-role models with a shared retry/timeout policy,
and the per-run context that calls them, records the trace and meters the cost."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from ..errors import InvalidParameterError
from ..llm.base import Completion
from ..llm.errors import LLMError
from ..llm.managed import ManagedLLM
from ..llm.structured import RoleCompletion, RoleRequest, messages_text
from .contract import PipelineCost, TraceEvent
from .structured import reread

__all__ = ["LLMRoles", "RunContext", "CallPolicy"]


class CallPolicy(TypedDict, total=False):
    """The per-call policy every pipeline's constructor takes (``**policy``) and hands to
    :class:`LLMRoles`: its keywords, declared once (see :class:`LLMRoles` for each one).

    Example:
        >>> sorted(CallPolicy.__annotations__)
        ['backoff_base', 'llm_kwargs', 'max_concurrency', 'max_retries', 'timeout']
    """

    timeout: float | None
    max_retries: int
    backoff_base: float
    max_concurrency: int
    llm_kwargs: Mapping[str, Mapping[str, Any]] | None


class LLMRoles:
    """The models a pipeline calls, one per role, each wrapped once in :class:`ManagedLLM` (a
    model given twice shares one concurrency limit; one already wrapped keeps its policy).

    Args:
        roles: the pipeline's role names, e.g. ``("planner", "evaluator", "generator")``.
        llm: the default model (``None``: roles without an override have no model and
            raise when called): anything with ``complete(prompt, **kw)`` (optionally
            ``acomplete``), a plain callable ``prompt -> str``, or a ``ManagedLLM``.
        overrides: per-role models (``None`` values are ignored).
        timeout / max_retries / backoff_base / max_concurrency: the policy for models this
            helper wraps (see :class:`~diverse_core.llm.ManagedLLM`).
        llm_kwargs: extra keyword arguments per role for every call.

    Example:
        >>> roles = LLMRoles(("judge",), lambda p: "ok", max_retries=0)
        >>> roles["judge"].complete("x").text
        'ok'
    """

    def __init__(
        self,
        roles: Sequence[str],
        llm: object,
        *,
        overrides: Mapping[str, object | None] | None = None,
        timeout: float | None = 120.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        max_concurrency: int = 4,
        llm_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.names = tuple(roles)
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidParameterError(
                f"max_concurrency must be a positive integer; got max_concurrency={max_concurrency!r}"
            )
        for name, given in (("overrides", overrides), ("llm_kwargs", llm_kwargs)):
            unknown = sorted(set(given or {}) - set(self.names))
            if unknown:
                raise InvalidParameterError(f"{name} keys must be among {self.names}; got {unknown}")
        self.max_concurrency = max_concurrency
        wrapped: dict[int, ManagedLLM] = {}

        def manage(model: object) -> ManagedLLM:
            if isinstance(model, ManagedLLM):
                return model
            if id(model) not in wrapped:
                wrapped[id(model)] = ManagedLLM(
                    model,
                    timeout=timeout,
                    max_retries=max_retries,
                    backoff_base=backoff_base,
                    max_concurrency=max_concurrency,
                )
            return wrapped[id(model)]

        self.default: ManagedLLM | None = None if llm is None else manage(llm)
        self._models: dict[str, ManagedLLM | None] = {}
        for role in self.names:
            model = (overrides or {}).get(role) or llm
            self._models[role] = None if model is None else manage(model)
        self.llm_kwargs = {role: dict((llm_kwargs or {}).get(role, {})) for role in self.names}

    def __getitem__(self, role: str) -> ManagedLLM:
        if role not in self._models:
            raise InvalidParameterError(f"unknown LLM role {role!r}; roles: {self.names}")
        model = self._models[role]
        if model is None:
            raise InvalidParameterError(f"no LLM for role {role!r}: pass llm= (or a model for this role)")
        return model

    def models(self) -> Iterable[ManagedLLM]:
        """The distinct wrapped models."""
        return {id(m): m for m in self._models.values() if m is not None}.values()

    def close(self) -> None:
        """Release the wrapped models' worker threads."""
        for model in self.models():
            model.close()


class RunContext:
    """One run's accounting and trace; pipelines make every LLM call through :meth:`ask`.

    Args:
        roles: the pipeline's :class:`LLMRoles`.
        call_kwargs: keyword arguments for every call of this run (e.g. a LangChain
            adapter's ``callbacks=``).

    Example:
        >>> import asyncio
        >>> ctx = RunContext(LLMRoles(("judge",), lambda p: "7", max_retries=0))
        >>> asyncio.run(ctx.ask("judge", "score?", stage="judge")).text, ctx.cost().llm_calls
        ('7', 1)
    """

    def __init__(self, roles: LLMRoles, call_kwargs: Mapping[str, Any] | None = None) -> None:
        self.roles = roles
        self.call_kwargs = dict(call_kwargs or {})
        self.start = time.perf_counter()
        self._lock = threading.Lock()
        self._calls = dict.fromkeys(roles.names, 0)
        self._totals = {"attempts": 0, "failed_calls": 0, "retries": 0, "prompt_tokens": 0,
                        "completion_tokens": 0, "searches": 0, "structured_calls": 0, "text_calls": 0,
                        "fallbacks": 0}
        self._fell_back: set[int] = set()  # models whose fall-back to text was reported this run
        self._llm_seconds = 0.0
        self.trace: list[TraceEvent] = []
        self.warnings: list[str] = []

    # ----------------------------------------------------------------- recording
    def record(self, event: TraceEvent) -> None:
        """Append a stage event to the trace."""
        with self._lock:
            self.trace.append(event)

    def stage(self, stage: str, seconds: float = 0.0, **data: Any) -> None:
        """Record a non-LLM stage with its data."""
        self.record(TraceEvent(stage=stage, parsed=data, seconds=seconds))

    def warn(self, message: str) -> None:
        """Record something that fell back (surfaced by the faces; never silent)."""
        with self._lock:
            if message not in self.warnings:
                self.warnings.append(message)

    def count_search(self, n: int = 1) -> None:
        """Count searches of the candidate source."""
        with self._lock:
            self._totals["searches"] += n

    def annotate(self, index: int, *, parsed: Mapping[str, Any] | None = None,
                 notes: Sequence[str] = ()) -> None:
        """Attach parsed values / notes to the trace event at ``index`` (from :meth:`ask`)."""
        with self._lock:
            ev = self.trace[index]
            self.trace[index] = dataclasses.replace(
                ev, parsed={**ev.parsed, **(parsed or {})}, notes=ev.notes + tuple(notes)
            )

    # ----------------------------------------------------------------- calling
    async def ask(self, role: str, prompt: str | RoleRequest, *, stage: str | None = None,
                  **kwargs: Any) -> Completion:
        """Call ``role``'s model (retries, timeout, concurrency limit from its policy), recorded
        in the trace and metered; a failure is recorded and re-raised as ``LLMError``.

        ``prompt`` is a text prompt, or a :class:`~diverse_core.llm.structured.RoleRequest`
        (chat messages + schema + the text prompt as fallback; the reply is then a
        :class:`~diverse_core.llm.structured.RoleCompletion` saying which path it took). A
        structured reply that broke its schema, and a model that refused structured output
        (once per run and model), are warnings of the run.
        """
        return (await self.ask_traced(role, prompt, stage=stage, **kwargs))[0]

    async def ask_traced(self, role: str, prompt: str | RoleRequest, *, stage: str | None = None,
                         **kwargs: Any) -> tuple[Completion, int]:
        """:meth:`ask`, also returning the call's trace index (for :meth:`annotate`)."""
        model = self.roles[role]
        t0 = time.perf_counter()
        call_kw = {**self.roles.llm_kwargs[role], **self.call_kwargs, **kwargs}
        request = prompt if isinstance(prompt, RoleRequest) else None
        shown = prompt if isinstance(prompt, str) else (
            messages_text(prompt.messages) if model.role_methods(prompt) else prompt.prompt)
        try:
            if request is not None:
                out: Completion = await model.acomplete_role(request, **call_kw)
            else:
                out = await model.acomplete(shown, **call_kw)
        except LLMError as exc:
            received = getattr(exc, "received", None)  # attempts that reached the backend
            attempts = int(received if isinstance(received, int) else model.max_retries + 1)
            with self._lock:
                self._totals["failed_calls"] += 1
                self._totals["attempts"] += attempts
                self._totals["retries"] += max(0, attempts - 1)
                self.trace.append(TraceEvent(
                    stage=stage or role, role=role, prompt=shown, error=f"{type(exc).__name__}: {exc}",
                    attempts=attempts, seconds=time.perf_counter() - t0,
                ))
            raise
        path, method = "text", "text"
        notes: tuple[str, ...] = ()
        if isinstance(out, RoleCompletion):
            out, reread_note = reread(out, request) if request is not None else (out, None)
            if reread_note:
                self.warn(f"{role}: {reread_note}")
            path, method = out.path, out.method
            if out.path == "text" and request is not None:
                shown = request.prompt
            notes = tuple(f"schema: {p}" for p in out.problems)
            if out.problems:
                self._report_schema(role, out)
            if out.rejected:
                notes += (f"refused structured method(s): {', '.join(out.rejected)}",)
            if out.path == "text" and out.fell_back:
                notes += ("structured output refused by the model; the text prompt was used",)
                self._report_fallback(model, role)
        with self._lock:
            self._calls[role] += 1
            refused = len(out.rejected) if isinstance(out, RoleCompletion) else 0
            self._totals["attempts"] += out.attempts + refused  # refused attempts reached the backend too
            self._totals["retries"] += out.attempts - 1
            self._totals["prompt_tokens"] += out.prompt_tokens or 0
            self._totals["completion_tokens"] += out.completion_tokens or 0
            self._llm_seconds += out.latency
            self._totals["structured_calls" if path == "structured" else "text_calls"] += 1
            self._totals["fallbacks"] += int(isinstance(out, RoleCompletion) and out.fell_back)
            self.trace.append(TraceEvent(
                stage=stage or role, role=role, prompt=shown, reply=out.text, notes=notes,
                attempts=out.attempts, seconds=time.perf_counter() - t0, path=path, method=method,
            ))
            index = len(self.trace) - 1
        return out, index

    def _report_schema(self, role: str, out: RoleCompletion) -> None:
        """A warning for a structured reply that broke its schema (repaired, or read as text)."""
        shown = "; ".join(str(p) for p in out.problems[:3])
        if len(out.problems) > 3:
            shown += f"; and {len(out.problems) - 3} more"
        what = ("repaired and used" if out.value is not None
                else "unusable; read with the text parser")
        self.warn(f"{role}: structured reply broke its schema ({shown}); {what}")

    def _report_fallback(self, model: ManagedLLM, role: str) -> None:
        """One warning per run and model: its structured calls fell back to the text path."""
        with self._lock:
            if id(model) in self._fell_back:
                return
            self._fell_back.add(id(model))
        refused = model.refused_methods()
        why = "; ".join(f"{m}: {r}" for m, r in refused.items()) or "no structured method usable"
        self.warn(f"{role}: {model.inner!r} refused structured output ({why}); this run's calls to it "
                  "use the text prompts and parsers")

    def cost(self) -> PipelineCost:
        """The cost so far."""
        with self._lock:
            return PipelineCost(
                calls=dict(self._calls),
                llm_seconds=self._llm_seconds,
                wall_time=time.perf_counter() - self.start,
                **self._totals,
            )
