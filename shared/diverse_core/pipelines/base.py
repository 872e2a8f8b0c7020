"""The base class every LLM pipeline derives from: ``run``/``arun`` over a candidate source."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ..errors import InvalidParameterError
from ..llm.loops import on_private_loop, private_loop
from ..llm.structured import RoleRequest
from ..validation import check_k
from .contract import Candidates, CandidateSource, ChosenDocument, PipelineResult
from .face_fields import FaceFields
from .options import Option
from .roles import CallPolicy, LLMRoles, RunContext
from .structured import field_text

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Pipeline", "run_sync", "gather_all_or_cancel", "on_sync_run_loop", "off_loop"]

T = TypeVar("T")
R = TypeVar("R", bound=PipelineResult)


#: Whether the running event loop is the private loop of one synchronous ``run()``: only that
#: run's own tasks wait on it, so blocking work may run on it (inside a coroutine only).
on_sync_run_loop = on_private_loop


async def off_loop(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` in a worker thread, so the event loop stays free for others; inline on a
    synchronous run's own loop (:func:`on_sync_run_loop`), where nobody else waits."""
    if on_sync_run_loop():
        return fn(*args)
    return await asyncio.to_thread(fn, *args)


def _run_on_fresh_loop(coro: Any) -> Any:
    """``asyncio.run(coro)`` without joining the loop's default executor, where a hung sync model
    call would hold the caller past every timeout (its threads end when their call returns)."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        with private_loop(loop):  # the run's tasks copy this context
            return loop.run_until_complete(coro)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even inside a running event loop
    (then it runs on a fresh loop in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_on_fresh_loop(coro)
    box: Future[Any] = Future()

    def target() -> None:
        try:
            box.set_result(_run_on_fresh_loop(coro))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box.set_exception(exc)

    thread = threading.Thread(target=target, name="diverse-rag-pipeline")
    thread.start()
    thread.join()
    return box.result()


async def gather_all_or_cancel(aws: Sequence[Awaitable[T]]) -> list[T]:
    """Await every awaitable; on the first failure cancel the rest, wait for them, and raise
    that one error (no sibling error is left unretrieved or logged)."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class Pipeline(ABC, Generic[R]):
    """An LLM pipeline: a question and a :class:`CandidateSource` in, a :class:`PipelineResult` out.

    Generic in its result type (``class DFRAG(Pipeline[DFRAGResult])``). A subclass declares its
    ``name`` and LLM ``roles`` and implements :meth:`_arun`; it makes every
    LLM call through the run's :class:`RunContext` (``await ctx.ask(role, prompt)``) and every
    search through :meth:`search`, so trace, cost and the retry/timeout policy come for free,
    and the framework faces and the benchmark harness can run it with no code of its own.

    Args:
        llm: the model for every role (``None`` for pipelines that can run without one, in
            retrieval-only mode): anything with ``complete(prompt, **kw)``, a plain callable,
            a ``ManagedLLM``; LangChain / LlamaIndex models are adapted by their faces.
        role_llms: per-role models overriding ``llm``.
        k: documents to choose.
        fetch_k: candidates a pipeline asks of its first search (``None``: the source's default).
        **policy: the per-call policy (:class:`~diverse_core.pipelines.roles.CallPolicy`:
            ``timeout``, ``max_retries``, ``backoff_base``, ``max_concurrency`` and
            ``llm_kwargs``, extra keyword arguments per role), handed to :class:`LLMRoles`.

    Example:
        >>> class Echo(Pipeline):
        ...     name, roles = "echo", ("writer",)
        ...     async def _arun(self, question, source, ctx, *, k, generate):
        ...         found = await self.search(ctx, source, question, k)
        ...         answer = (await ctx.ask("writer", question)).text if generate else None
        ...         return PipelineResult(pipeline=self.name, question=question, answer=answer,
        ...                               documents=self.choose(found, range(len(found))),
        ...                               **self.finish(ctx))
        >>> from diverse_core.pipelines import InMemorySource
        >>> src = InMemorySource(["x y", "y z"], embedder=lambda ts: [[t.count("x"), 1.0] for t in ts])
        >>> Echo(lambda p: "hi", k=1).run("x", src).answer
        'hi'
    """

    name: ClassVar[str] = "pipeline"
    roles: ClassVar[tuple[str, ...]] = ()
    #: The pipeline's own constructor options, declared once for both faces and the harness
    #: (see :mod:`diverse_core.pipelines.options`).
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    requires_llm: ClassVar[bool] = True
    #: What the framework faces report besides the documents (see :mod:`~diverse_core.pipelines.face_fields`).
    FACE: ClassVar[FaceFields] = FaceFields()
    #: The fields of ``prompts`` (a frozen dataclass of templates) that :meth:`prompt_templates` exposes.
    TEMPLATES: ClassVar[tuple[str, ...]] = ()
    prompts: Any = None

    def __init__(
        self,
        llm: object = None,
        *,
        role_llms: Mapping[str, object | None] | None = None,
        k: int = 5,
        fetch_k: int | None = None,
        **policy: Unpack[CallPolicy],
    ) -> None:
        self.k = check_k(k, "k")
        self.fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        if llm is None and self.requires_llm:
            raise InvalidParameterError(f"{type(self).__name__} needs an LLM; got llm=None")
        self.llms = LLMRoles(self.roles, llm, overrides=role_llms, **policy)

    # ------------------------------------------------------------------ the contract
    @abstractmethod
    async def _arun(
        self, question: str, source: CandidateSource, ctx: RunContext, *, k: int, generate: bool,
        **options: Any,
    ) -> R:
        """The algorithm: search ``source``, call LLM roles through ``ctx``, build the result.
        ``options`` are the pipeline's own per-run keywords (e.g. DIVA's ``interpretations``)."""

    def _run_options(self) -> set[str]:
        """The per-run options this pipeline's ``_arun`` takes (its extra keyword-only arguments)."""
        params = inspect.signature(self._arun).parameters.values()
        return {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY} - {"k", "generate"}

    @property
    def trained_method(self) -> tuple[str, dict[str, Any]] | None:
        """The trained core method a run selects with, and its parameters (None: none), for the
        faces' embedder check (:mod:`diverse_core.embedder_check`)."""
        return None

    def _no_llm_hint(self) -> str:
        """What else lets a run go without an LLM (appended to the error)."""
        return ""

    def _needs_llm(self, generate: bool, options: Mapping[str, Any]) -> bool:
        """Whether this run needs a model (default: when it generates). Pipelines whose
        retrieval calls an LLM override this."""
        return generate

    async def arun(
        self,
        question: str,
        source: CandidateSource,
        *,
        generate: bool = True,
        k: int | None = None,
        call_kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> R:
        """Run the pipeline for one question (async).

        Args:
            question: the question.
            source: where candidates come from (see :class:`CandidateSource`).
            generate: write an answer (``False``: retrieval only; pipelines whose retrieval
                needs no LLM then make no LLM call).
            k: documents to choose for this call (default: the pipeline's ``k``).
            call_kwargs: keyword arguments for every LLM call of this run (e.g. a framework
                adapter's ``callbacks=``).
            **options: the pipeline's own per-run options (see its ``_arun``).
        """
        if not isinstance(question, str) or not question.strip():
            raise InvalidParameterError(f"question must be a non-empty string; got question={question!r}")
        if not isinstance(source, CandidateSource):
            raise InvalidParameterError(
                f"source must be a CandidateSource (search/asearch/embed/aembed); got {type(source).__name__}"
            )
        k = self.k if k is None else check_k(k, "k")
        unknown = sorted(set(options) - self._run_options()) if options else []  # (a signature read)
        if unknown:
            raise InvalidParameterError(
                f"unknown run option(s) {unknown} for {type(self).__name__}; accepted: {sorted(self._run_options())}"
            )
        if self.llms.default is None and self._needs_llm(generate, options):
            what = "pass llm=" + (" or generate=False" if generate else "") + self._no_llm_hint()
            raise InvalidParameterError(f"{type(self).__name__} has no LLM for this run: {what}")
        ctx = RunContext(self.llms, call_kwargs)
        return await self._arun(question, source, ctx, k=k, generate=generate, **options)

    def run(self, question: str, source: Any, *args: Any, **kwargs: Any) -> R:
        """Synchronous :meth:`arun`, same arguments (safe to call inside a running event loop)."""
        result: R = run_sync(self.arun(question, source, *args, **kwargs))
        return result

    # ------------------------------------------------------------------ helpers for subclasses
    @staticmethod
    async def search(ctx: RunContext, source: CandidateSource, query: str, k: int | None,
                     *, stage: str = "search") -> Candidates:
        """Search ``source`` (async), recording the search in the trace and the cost (and what
        the source flagged in the warnings)."""
        t0 = time.perf_counter()
        found = await source.asearch(query, k)
        ctx.count_search()
        ctx.stage(stage, time.perf_counter() - t0, query=query, k=k, ids=list(found.ids))
        for note in found.notes:
            ctx.warn(note)
        return found

    @staticmethod
    def choose(
        found: Candidates,
        order: Sequence[int],
        *,
        scores: Sequence[float | None] | None = None,
        reasons: Sequence[Mapping[str, Any]] | None = None,
    ) -> tuple[ChosenDocument, ...]:
        """:class:`ChosenDocument` records for the candidates at ``order`` (local indices)."""
        out = []
        for rank, i in enumerate(int(j) for j in order):
            out.append(
                ChosenDocument(
                    id=found.ids[i],
                    text=found.texts[i],
                    rank=rank,
                    relevance=float(found.relevance[i]),
                    score=None if scores is None else scores[rank],
                    reason=dict(reasons[rank]) if reasons is not None else {},
                    payload=found.payloads[i] if found.payloads else None,
                    position=None if found.positions is None else found.positions[i],
                )
            )
        return tuple(out)

    @staticmethod
    async def answer(ctx: RunContext, request: RoleRequest) -> str:
        """The ``generator`` role's answer (its ``answer`` field on the structured path); an
        empty answer is a warning of the run."""
        out, at = await ctx.ask_traced("generator", request, stage="generate")
        answer, notes = field_text(out, "answer")
        ctx.annotate(at, notes=notes)
        if not answer:
            ctx.warn("generator: the answer is empty")
        return answer

    @staticmethod
    def finish(ctx: RunContext) -> dict[str, Any]:
        """The shared result fields of a run: ``trace``, ``warnings``, ``cost``."""
        return {"trace": tuple(ctx.trace), "warnings": tuple(ctx.warnings), "cost": ctx.cost()}

    # ------------------------------------------------------------------ prompts and streaming
    def prompt_templates(self) -> dict[str, str]:
        """The pipeline's prompt templates by name (``str.format`` templates, the fields
        :attr:`TEMPLATES` names of its ``prompts``); faces expose them (e.g. LlamaIndex's
        ``get_prompts``)."""
        return {name: getattr(self.prompts, name) for name in self.TEMPLATES}

    def update_prompt_templates(self, templates: Mapping[str, str]) -> None:
        """Replace prompt templates by name.

        Raises:
            InvalidParameterError: an unknown name.
        """
        unknown = sorted(set(templates) - set(self.prompt_templates()))
        if unknown:
            raise InvalidParameterError(
                f"unknown prompt(s) {unknown} for {type(self).__name__}; known: {sorted(self.prompt_templates())}"
            )
        self._set_prompt_templates(dict(templates))

    def _set_prompt_templates(self, templates: dict[str, str]) -> None:
        self.prompts = dataclasses.replace(self.prompts, **templates)

    def answer_prompt(self, result: PipelineResult) -> tuple[str, str] | None:
        """``(role, prompt)`` of the single call that writes the answer for a retrieval-only
        ``result``, so a face can stream it; ``None`` when the answer takes several calls."""
        return None

    def close(self) -> None:
        """Release the LLM worker threads."""
        self.llms.close()

    def __repr__(self) -> str:
        shown: dict[str, Any] = {"k": self.k, "fetch_k": self.fetch_k}
        for option in self.OPTIONS:  # the plain values (no prompt texts or model objects)
            value = getattr(self, option.name, None)
            if option.harness and isinstance(value, (str, int, float, tuple)):
                shown[option.name] = value
        return f"{type(self).__name__}({', '.join(f'{name}={value!r}' for name, value in shown.items())})"
