"""The DF-RAG pipeline (``df-rag.txt`` Sec. 3.4): Planner, gMMR λ sweep, Evaluator,
tie gate, Generator."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..errors import DimensionMismatchError, InvalidParameterError
from ..llm.base import Completion
from ..llm.errors import LLMError
from ..llm.managed import ManagedLLM
from ..tuning import argmax_upper_median, binary_search_sample
from ..validation import check_k
from .candidates import DEFAULT_LAMBDAS, CandidateGroups, check_lambdas, sweep_candidate_sets
from .parsing import EvaluationParse, parse_evaluation, parse_plan
from .prompts import PromptSet
from .result import CandidateSet, DFRAGCost, DFRAGResult

__all__ = ["DFRAG", "run_sync"]

T = TypeVar("T")
_ROLES = ("planner", "evaluator", "generator")


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even inside a running event loop
    (then it runs on a fresh loop in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: Future[Any] = Future()

    def target() -> None:
        try:
            box.set_result(asyncio.run(coro))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box.set_exception(exc)

    thread = threading.Thread(target=target, name="diverse-rag-dfrag")
    thread.start()
    thread.join()
    return box.result()


@dataclass
class _Meter:
    """Per-run accounting."""

    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_ROLES, 0))
    failed: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0

    def add(self, role: str, out: Completion) -> None:
        self.calls[role] += 1
        self.retries += out.attempts - 1
        self.prompt_tokens += out.prompt_tokens or 0
        self.completion_tokens += out.completion_tokens or 0
        self.llm_seconds += out.latency

    def cost(self, wall: float) -> DFRAGCost:
        return DFRAGCost(
            llm_calls=sum(self.calls.values()),
            planner_calls=self.calls["planner"],
            evaluator_calls=self.calls["evaluator"],
            generator_calls=self.calls["generator"],
            failed_calls=self.failed,
            retries=self.retries,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            llm_seconds=self.llm_seconds,
            wall_time=wall,
        )


class DFRAG:
    """Query-adaptive diversity (DF-RAG): pick gMMR's λ per query with an LLM judge.

    For a question and its candidate chunks: the Planner writes a plan while the gMMR
    sweep builds one chunk set per λ (both at once); every *distinct* set is scored by
    the Evaluator against the plan (concurrently, at most ``max_concurrency`` calls);
    λ* is the best-scoring λ, ties resolved by the upper median of the tied λ values;
    the Generator answers from λ*'s chunks (optionally with the Incremental Context:
    the plan plus the Evaluator's short answer).

    Args:
        llm: the model for all three roles: any object with ``complete(prompt, **kw)``
            (optionally ``acomplete``) returning a ``Completion`` or ``str``, or a plain
            callable. LangChain/LlamaIndex models: wrap with ``LangChainLLM`` /
            ``LlamaIndexLLM`` (or use the framework faces).
        planner_llm / evaluator_llm / generator_llm: per-role overrides.
        lambdas: the λ grid (strictly increasing, in [0, 1]); default 0.1, 0.2, ..., 1.0.
        k: chunks per set.
        fetch_k: restrict the sweep to the ``fetch_k`` candidates most similar to the
            query (``None`` = all candidates given).
        sampling: ``"uniform"`` (score every distinct set) or ``"binary"`` (binary-search
            sampling, App. B.3; O(log L) evaluations, run one after another).
        incremental_context: append plan + the Evaluator's short answer to the Generator's context.
        max_concurrency: most LLM calls in flight at once.
        timeout / max_retries / backoff_base: per-call timeout and retry policy
            (see :class:`~diverse_core.llm.ManagedLLM`); ignored for models passed
            already wrapped in a ``ManagedLLM``.
        prompts: a :class:`PromptSet` (our default prompts otherwise).
        score_from: ``"total"`` (the model's ``Total Score``; step sum when missing) or
            ``"steps"`` (always the sum of step scores, Eq. 4, when present).
        on_evaluator_error: ``"score_zero"`` (a call that fails after retries scores 0 and
            is flagged) or ``"raise"``.
        llm_kwargs: extra keyword arguments per role, e.g.
            ``{"planner": {"max_tokens": 128}, "generator": {"max_tokens": 32}}``.

    Example:
        >>> import numpy as np
        >>> def fake(prompt):
        ...     if "Plan:" in prompt and "Passages:" not in prompt:
        ...         return "1) Find the capital"
        ...     if "Evaluation:" in prompt:
        ...         return "1. Score: 5. Reason: stated\\nTotal Score: 5"
        ...     return "Paris"
        >>> rng = np.random.default_rng(0)
        >>> texts = [f"chunk {i}" for i in range(8)]
        >>> res = DFRAG(fake, k=3).run("Capital of France?", texts,
        ...                            rng.normal(size=4), rng.normal(size=(8, 4)))
        >>> res.answer, len(res.indices)
        ('Paris', 3)
    """

    def __init__(
        self,
        llm: object,
        *,
        planner_llm: object | None = None,
        evaluator_llm: object | None = None,
        generator_llm: object | None = None,
        lambdas: ArrayLike = DEFAULT_LAMBDAS,
        k: int = 5,
        fetch_k: int | None = None,
        sampling: str = "uniform",
        incremental_context: bool = False,
        max_concurrency: int = 4,
        timeout: float | None = 120.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        prompts: PromptSet | None = None,
        score_from: str = "total",
        on_evaluator_error: str = "score_zero",
        llm_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.lambdas = check_lambdas(lambdas)
        self.k = check_k(k, "k")
        self.fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        if sampling not in {"uniform", "binary"}:
            raise InvalidParameterError(f"sampling must be 'uniform' or 'binary'; got sampling={sampling!r}")
        if score_from not in {"total", "steps"}:
            raise InvalidParameterError(f"score_from must be 'total' or 'steps'; got score_from={score_from!r}")
        if on_evaluator_error not in {"score_zero", "raise"}:
            raise InvalidParameterError(
                f"on_evaluator_error must be 'score_zero' or 'raise'; got on_evaluator_error={on_evaluator_error!r}"
            )
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidParameterError(
                f"max_concurrency must be a positive integer; got max_concurrency={max_concurrency!r}"
            )
        self.sampling = sampling
        self.incremental_context = bool(incremental_context)
        self.max_concurrency = max_concurrency
        self.prompts = prompts or PromptSet()
        self.score_from = score_from
        self.on_evaluator_error = on_evaluator_error
        self.llm_kwargs = {role: dict((llm_kwargs or {}).get(role, {})) for role in _ROLES}
        unknown = set(llm_kwargs or {}) - set(_ROLES)
        if unknown:
            raise InvalidParameterError(f"llm_kwargs keys must be {_ROLES}; got {sorted(unknown)}")
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

        self.llm = manage(llm)
        self.planner_llm = manage(planner_llm) if planner_llm is not None else self.llm
        self.evaluator_llm = manage(evaluator_llm) if evaluator_llm is not None else self.llm
        self.generator_llm = manage(generator_llm) if generator_llm is not None else self.llm

    # ------------------------------------------------------------------ helpers
    async def _call(
        self, role: str, model: ManagedLLM, prompt: str, meter: _Meter, call_kwargs: Mapping[str, Any]
    ) -> Completion:
        try:
            out = await model.acomplete(prompt, **{**self.llm_kwargs[role], **call_kwargs})
        except LLMError:
            meter.failed += 1
            raise
        meter.add(role, out)
        return out

    def _check_inputs(
        self, question: str, texts: Sequence[str], candidate_embeddings: ArrayLike
    ) -> None:
        if not isinstance(question, str) or not question.strip():
            raise InvalidParameterError(f"question must be a non-empty string; got question={question!r}")
        n = int(np.shape(candidate_embeddings)[0]) if np.ndim(candidate_embeddings) >= 1 else 0
        if len(texts) != n:
            raise DimensionMismatchError(
                f"texts has {len(texts)} entries but candidate_embeddings has {n} rows"
            )

    async def _evaluate(
        self,
        question: str,
        steps: tuple[str, ...],
        key: tuple[int, ...],
        groups: CandidateGroups,
        texts: Sequence[str],
        meter: _Meter,
        call_kwargs: Mapping[str, Any],
        gate: asyncio.Semaphore,
    ) -> CandidateSet:
        order = groups.order[key]
        prompt = self.prompts.render_evaluator(question, steps, [texts[i] for i in order])
        async with gate:
            try:
                out = await self._call("evaluator", self.evaluator_llm, prompt, meter, call_kwargs)
            except LLMError as exc:
                if self.on_evaluator_error == "raise":
                    raise
                return CandidateSet(groups.groups[key], order, 0.0, None, None, f"{type(exc).__name__}: {exc}")
        parsed: EvaluationParse = parse_evaluation(out.text, len(steps), prefer=self.score_from)
        return CandidateSet(groups.groups[key], order, parsed.score, parsed, out.text, None)

    # ------------------------------------------------------------------ main flow
    async def arun(
        self,
        question: str,
        texts: Sequence[str],
        query_embedding: ArrayLike,
        candidate_embeddings: ArrayLike,
        *,
        generate: bool = True,
        call_kwargs: Mapping[str, Any] | None = None,
    ) -> DFRAGResult:
        """Run DF-RAG for one question (async).

        Args:
            question: the query.
            texts: candidate chunk texts, one per row of ``candidate_embeddings``.
            query_embedding: shape (d,).
            candidate_embeddings: shape (n, d).
            generate: run the Generator (``False`` = retrieval only: choose λ* and stop).
            call_kwargs: keyword arguments passed to every LLM call of this run (e.g. a
                framework adapter's ``callbacks=``).

        Raises:
            InvalidParameterError / DimensionMismatchError: bad inputs.
            LLMError / LLMTimeoutError: the Planner or Generator failed after retries
                (or an Evaluator call, with ``on_evaluator_error="raise"``).
        """
        start = time.perf_counter()
        self._check_inputs(question, texts, candidate_embeddings)
        kw = dict(call_kwargs or {})
        meter = _Meter()
        plan_task = asyncio.ensure_future(
            self._call("planner", self.planner_llm, self.prompts.render_planner(question), meter, kw)
        )
        try:
            groups = await asyncio.to_thread(
                sweep_candidate_sets, query_embedding, candidate_embeddings, self.k, self.lambdas, self.fetch_k
            )
        except BaseException:
            plan_task.cancel()
            raise
        plan_out = await plan_task
        plan = parse_plan(plan_out.text, question)
        steps = plan.steps
        gate = asyncio.Semaphore(self.max_concurrency)
        evaluated: dict[tuple[int, ...], CandidateSet] = {}

        if self.sampling == "uniform":
            keys = list(groups.groups)
            sets = await asyncio.gather(
                *(self._evaluate(question, steps, key, groups, texts, meter, kw, gate) for key in keys)
            )
            evaluated = dict(zip(keys, sets, strict=True))
            scored = list(self.lambdas)
            scores = [float(evaluated[groups.key_of(lam)].score or 0.0) for lam in scored]
            lambda_star = argmax_upper_median(scored, scores)
        else:
            loop = asyncio.get_running_loop()

            def score_fn(lam: float) -> float:
                key = groups.key_of(lam)
                if key not in evaluated:
                    fut = asyncio.run_coroutine_threadsafe(
                        self._evaluate(question, steps, key, groups, texts, meter, kw, gate), loop
                    )
                    evaluated[key] = fut.result()
                return float(evaluated[key].score or 0.0)

            search = await asyncio.to_thread(binary_search_sample, list(self.lambdas), score_fn)
            scored = list(search.evaluated)
            scores = list(search.scores)
            lambda_star = search.chosen

        best = max(scores)
        tied = tuple(lam for lam, s in zip(scored, scores, strict=True) if s == best)
        star_key = groups.key_of(lambda_star)
        star_set = evaluated[star_key]
        chosen = tuple(int(i) for i in groups.indices[self.lambdas.index(lambda_star)])
        chosen_texts = tuple(texts[i] for i in chosen)
        short_answer = star_set.evaluation.short_answer if star_set.evaluation else None

        answer: str | None = None
        if generate:
            prompt = self.prompts.render_generator(
                question,
                chosen_texts,
                steps if self.incremental_context else None,
                short_answer,
            )
            gen = await self._call("generator", self.generator_llm, prompt, meter, kw)
            answer = gen.text.strip()

        candidate_sets = tuple(
            evaluated.get(key, CandidateSet(lams, groups.order[key])) for key, lams in groups.groups.items()
        )
        lambda_scores: dict[float, float | None] = {}
        failures: list[float] = []
        for lam, key in zip(self.lambdas, groups.keys, strict=True):
            cs = evaluated.get(key)
            lambda_scores[lam] = cs.score if cs is not None else None
            if cs is not None and cs.failed:
                failures.append(lam)
        return DFRAGResult(
            question=question,
            answer=answer,
            lambda_star=float(lambda_star),
            indices=chosen,
            texts=chosen_texts,
            plan=steps,
            plan_parsed=plan.parsed,
            lambdas=self.lambdas,
            lambda_scores=lambda_scores,
            candidate_sets=candidate_sets,
            tied_lambdas=tied,
            parse_failures=tuple(failures),
            short_answer=short_answer,
            sampling=self.sampling,
            incremental_context=self.incremental_context,
            cost=meter.cost(time.perf_counter() - start),
            raw_plan=plan_out.text,
        )

    def run(
        self,
        question: str,
        texts: Sequence[str],
        query_embedding: ArrayLike,
        candidate_embeddings: ArrayLike,
        *,
        generate: bool = True,
        call_kwargs: Mapping[str, Any] | None = None,
    ) -> DFRAGResult:
        """Synchronous :meth:`arun` (safe to call inside a running event loop)."""
        result: DFRAGResult = run_sync(
            self.arun(
                question,
                texts,
                query_embedding,
                candidate_embeddings,
                generate=generate,
                call_kwargs=call_kwargs,
            )
        )
        return result

    def __repr__(self) -> str:
        return (
            f"DFRAG(k={self.k}, fetch_k={self.fetch_k}, lambdas={list(self.lambdas)}, "
            f"sampling={self.sampling!r}, incremental_context={self.incremental_context}, "
            f"max_concurrency={self.max_concurrency})"
        )
