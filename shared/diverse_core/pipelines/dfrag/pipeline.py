"""The DF-RAG pipeline (Khan et al. 2026, Sec. 3.4): Planner, gMMR λ sweep, Evaluator, tie gate,
Generator, on the shared pipeline contract."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ...errors import DimensionMismatchError, InvalidParameterError
from ...llm.errors import LLMError
from ...tuning import argmax_upper_median, peak_search_steps, upper_median
from ..base import Pipeline, gather_all_or_cancel, run_sync  # noqa: F401  (run_sync re-exported)
from ..contract import Candidates, CandidateSource, PipelineResult
from ..diversity import PipelineDiversity
from ..face_fields import FaceFields
from ..options import Option, check_choice
from ..roles import CallPolicy, RunContext
from ..sources import PoolSource
from .candidates import (
    DEFAULT_LAMBDAS,
    CandidateGroups,
    check_lambdas,
    lambdas_for_diversity,
    sweep_candidate_sets,
)
from .prompts import PromptSet
from .reading import read_evaluation, read_plan
from .result import CandidateSet, DFRAGResult

_log = logging.getLogger("diverse_core")

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DFRAG", "DFRAG_DIVERSITY", "run_sync"]


def _float_tuple(text: str) -> tuple[float, ...]:
    """The harness's ``@lambdas=0.2,0.5,0.8``."""
    return tuple(float(v) for v in text.split(",") if v.strip())


#: How DF-RAG reads ``diversity``: how far toward diversity the λ grid the Evaluator chooses
#: from reaches (0: λ = 1 only, relevance; 1: the whole default grid).
DFRAG_DIVERSITY = PipelineDiversity(
    "lambdas", lambdas_for_diversity, "lambdas = the values of 0.1..1.0 that are >= 1 - diversity",
    default=DEFAULT_LAMBDAS,
)

#: DF-RAG's own options (see :class:`DFRAG`).
DFRAG_OPTIONS: tuple[Option, ...] = (
    Option("lambdas", None, "the gMMR lambda grid the Evaluator chooses from (None: 0.1..1.0, or "
           "as diversity says)", tuple[float, ...] | None, bounds="each in [0, 1]", parse=_float_tuple),
    Option("sampling", "uniform", "every lambda ('uniform') or a binary search over them", str,
           choices=("uniform", "binary")),
    Option("incremental_context", False, "the Evaluator sees each set's new chunks only", bool),
    Option("prompts", None, "a PromptSet (None: the shipped prompts)", Any, harness=False),
    Option("score_from", "total", "the Evaluator's total or the sum of its step scores", str,
           choices=("total", "steps")),
    Option("on_evaluator_error", "score_zero", "an unreadable Evaluator reply scores 0 or raises", str,
           choices=("score_zero", "raise")),
    Option("evaluator", "llm", "who chooses lambda: the LLM Evaluator or the trained adaptive scorer", str,
           choices=("llm", "adaptive")),
    Option("selector", None, "the adaptive scorer for evaluator='adaptive' (None: the shipped one)", Any,
           harness=False),
    Option("fetch_k", None, "candidates per search (the source's default when None)", int | None,
           bounds=">= k", faces=False),
    DFRAG_DIVERSITY.option(),
)


class DFRAG(Pipeline[DFRAGResult]):
    """Query-adaptive diversity (DF-RAG): pick gMMR's λ per query with an LLM judge.

    For a question and its candidate chunks: the Planner writes a plan while the gMMR
    sweep builds one chunk set per λ (both at once); every *distinct* set is scored by
    the Evaluator against the plan (concurrently, at most ``max_concurrency`` calls);
    λ* is the best-scoring λ, ties resolved by the upper median of the tied λ values;
    the Generator answers from λ*'s chunks (optionally with the Incremental Context:
    the plan plus the Evaluator's short answer). When every evaluation failed or could not
    be parsed, λ* is the grid's upper median and the result says it is a fallback.

    Args:
        llm: the model for all three roles (see :class:`~diverse_core.pipelines.Pipeline`).
        planner_llm / evaluator_llm / generator_llm: per-role overrides.
        lambdas: the λ grid (strictly increasing, in [0, 1]); ``None``: 0.1, 0.2, ..., 1.0, or
            the part of it that ``diversity`` leaves.
        diversity: the shared knob in [0, 1]: the Evaluator chooses among the default grid's
            values ``>= 1 - diversity`` (0: λ = 1 only; 1: the whole grid, the paper's setting).
            ``lambdas`` wins when both are given and must agree; not with ``evaluator="adaptive"``.
        k: chunks per set.
        fetch_k: candidates asked of the source (``None``: the source's default pool).
        sampling: ``"uniform"`` (score every distinct set) or ``"binary"`` (binary-search
            sampling, App. B.3: O(log L) evaluations).
        incremental_context: append plan + the Evaluator's short answer to the Generator's context.
        prompts: a :class:`PromptSet` (our default prompts otherwise).
        score_from: ``"total"`` (the model's ``Total Score``; step sum when missing) or
            ``"steps"`` (always the sum of step scores, Eq. 4, when present).
        on_evaluator_error: ``"score_zero"`` (a call that fails after retries scores 0 and
            is flagged) or ``"raise"``.
        evaluator: ``"llm"`` (the Planner + LLM Evaluator, the paper) or ``"adaptive"`` (the
            trained set scorer of :class:`~diverse_core.adaptive.AdaptiveSelector` scores every
            λ's set from the question and texts: no Planner or Evaluator call,
            ``lambda_source="adaptive"``, ``llm=None`` allowed for retrieval only).
        selector: the :class:`~diverse_core.adaptive.AdaptiveSelector` for ``evaluator="adaptive"``
            (default: the shipped one; its λ grid replaces ``lambdas``).
        max_concurrency / timeout / max_retries / backoff_base / llm_kwargs: the per-call policy
            (see :class:`~diverse_core.pipelines.Pipeline`).

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
        >>> res.answer, len(res.indices), res.lambda_source
        ('Paris', 3, 'evaluator')
    """

    name = "dfrag"
    OPTIONS = DFRAG_OPTIONS
    TEMPLATES = ("planner", "evaluator", "evaluator_examples", "generator", "incremental_context")
    roles = ("planner", "evaluator", "generator")
    requires_llm = False  # checked in __init__: only evaluator="adaptive" runs without one
    FACE = FaceFields(
        reports=("lambda", "lambda_source", "scores", "tied_lambdas", "plan", "parse_failures", "n_distinct_sets"),
        labels={"scores": "lambda_scores"},
        on_documents={"dfrag_lambda": "lambda", "dfrag_lambda_scores": "scores", "dfrag_plan": "plan"},
        retrieval_llm=lambda options: options.get("evaluator", "llm") == "llm",  # the adaptive evaluator needs none
    )

    def __init__(
        self,
        llm: object,
        *,
        planner_llm: object | None = None,
        evaluator_llm: object | None = None,
        generator_llm: object | None = None,
        lambdas: ArrayLike | None = None,
        k: int = 5,
        fetch_k: int | None = None,
        sampling: str = "uniform",
        incremental_context: bool = False,
        prompts: PromptSet | None = None,
        score_from: str = "total",
        on_evaluator_error: str = "score_zero",
        evaluator: str = "llm",
        selector: Any = None,
        diversity: float | None = None,
        **policy: Unpack[CallPolicy],
    ) -> None:
        check_choice(evaluator, "evaluator", ("llm", "adaptive"))
        if diversity is not None and evaluator == "adaptive":
            raise InvalidParameterError(
                f"DFRAG: diversity={diversity!r} narrows the LLM Evaluator's lambda grid, but "
                "evaluator='adaptive' chooses from the trained scorer's own grid; leave one of them out"
            )
        given = None if lambdas is None else check_lambdas(lambdas)
        self.lambdas: tuple[float, ...] = DFRAG_DIVERSITY.resolve("DFRAG", given, diversity)
        if llm is None and evaluator == "llm":
            raise TypeError("llm must have a complete(prompt, **kw) method or be a callable; got None")
        self.evaluator, self.selector, self.diversity = evaluator, selector, diversity
        self.sampling = check_choice(sampling, "sampling", ("uniform", "binary"))
        self.score_from = check_choice(score_from, "score_from", ("total", "steps"))
        self.on_evaluator_error = check_choice(on_evaluator_error, "on_evaluator_error", ("score_zero", "raise"))
        self.incremental_context = bool(incremental_context)
        self.prompts: PromptSet = prompts or PromptSet()
        roles = {"planner": planner_llm, "evaluator": evaluator_llm, "generator": generator_llm}
        super().__init__(llm, role_llms=roles, k=k, fetch_k=fetch_k, **policy)

    @property
    def trained_method(self) -> tuple[str, dict[str, Any]] | None:
        """``("adaptive", {"model": selector})`` when the trained scorer chooses λ."""
        return ("adaptive", {"model": self.selector}) if self.evaluator == "adaptive" else None

    # ------------------------------------------------------------------ prompts
    def answer_prompt(self, result: PipelineResult) -> tuple[str, str] | None:
        """The Generator's prompt for a retrieval-only DF-RAG result."""
        if not isinstance(result, DFRAGResult):
            return None
        steps = result.plan if self.incremental_context else None
        prompt = self.prompts.render_generator(result.question, result.texts, steps, result.short_answer)
        return "generator", prompt

    # ------------------------------------------------------------------ evaluation
    async def _evaluate(
        self,
        ctx: RunContext,
        question: str,
        steps: tuple[str, ...],
        key: tuple[int, ...],
        groups: CandidateGroups,
        found: Candidates,
        pos: Sequence[int],
        gate: asyncio.Semaphore,
    ) -> CandidateSet:
        order = groups.order[key]
        passages = [found.texts[i] for i in order]
        request = self.prompts.evaluator_request(question, steps, passages)
        lams = groups.groups[key]
        global_order = tuple(pos[i] for i in order)
        async with gate:
            try:
                out, at = await ctx.ask_traced("evaluator", request, stage="evaluate")
            except LLMError as exc:
                if self.on_evaluator_error == "raise":
                    raise
                return CandidateSet(lams, global_order, 0.0, None, None, f"{type(exc).__name__}: {exc}")
        parsed = read_evaluation(out, len(steps), prefer=self.score_from, passages=passages)
        ctx.annotate(at, parsed={"lambdas": list(lams), "score": parsed.score, "source": parsed.source,
                                 "short_answer": parsed.short_answer}, notes=parsed.notes)
        if parsed.clipped or parsed.ambiguous:
            ctx.warn(f"evaluator reply for lambda={lams[0]:g}: {'; '.join(parsed.notes)}")
        return CandidateSet(lams, global_order, parsed.score, parsed, out.text, None)

    async def _binary(
        self,
        score: Callable[[float], Awaitable[float]],
        evaluated: dict[tuple[int, ...], CandidateSet],
        groups: CandidateGroups,
    ) -> tuple[list[float], list[float], float]:
        """Binary-search sampling (App. B.3), each step's two sets scored concurrently."""
        grid = list(self.lambdas)
        order: list[int] = []

        async def value(i: int) -> float:
            if i not in order:
                order.append(i)
            return await score(grid[i])

        steps = peak_search_steps(len(grid))
        if len(grid) == 1:
            await value(0)
        try:
            pair = next(steps)
            while True:
                left, right = await gather_all_or_cancel([value(pair[0]), value(pair[1])])
                pair = steps.send((left, right))
        except StopIteration:
            pass
        scored = [grid[i] for i in order]
        scores = [float(evaluated[groups.key_of(lam)].score or 0.0) for lam in scored]
        return scored, scores, float(argmax_upper_median(scored, scores))

    # ------------------------------------------------------------------ main flow
    def _needs_llm(self, generate: bool, options: Mapping[str, Any]) -> bool:
        return generate or self.evaluator == "llm"  # the Planner and the Evaluator choose lambda

    async def _arun(  # type: ignore[override]  # per-run options: checked by Pipeline.arun
        self, question: str, source: CandidateSource, ctx: RunContext, *, k: int, generate: bool
    ) -> DFRAGResult:
        if self.evaluator == "adaptive":
            return await self._arun_adaptive(question, source, ctx, k=k, generate=generate)
        plan_task = asyncio.ensure_future(
            ctx.ask_traced("planner", self.prompts.planner_request(question), stage="plan")
        )
        try:
            found = await self.search(ctx, source, question, self.fetch_k)
            groups = await asyncio.to_thread(
                sweep_candidate_sets, found.query_embedding, found.embeddings, k, self.lambdas
            )
            ctx.stage("sweep", lambdas=list(self.lambdas), distinct_sets=len(groups.groups))
            plan_out, plan_at = await plan_task
        except BaseException:
            plan_task.cancel()
            await asyncio.gather(plan_task, return_exceptions=True)
            raise
        pos = found.positions if found.positions is not None else tuple(range(len(found)))
        plan, plan_notes = read_plan(plan_out, question)
        ctx.annotate(plan_at, parsed={"steps": list(plan.steps), "parsed": plan.parsed}, notes=plan_notes)
        if not plan.parsed:
            ctx.warn("planner reply had no list of steps; the question itself was used as the plan")
        steps = plan.steps
        gate = asyncio.Semaphore(self.llms.max_concurrency)
        evaluated: dict[tuple[int, ...], CandidateSet] = {}
        locks: dict[tuple[int, ...], asyncio.Lock] = {}

        async def score(lam: float) -> float:
            key = groups.key_of(lam)
            lock = locks.setdefault(key, asyncio.Lock())
            async with lock:
                if key not in evaluated:
                    evaluated[key] = await self._evaluate(ctx, question, steps, key, groups, found, pos, gate)
            return float(evaluated[key].score or 0.0)

        if self.sampling == "uniform":
            scored = list(self.lambdas)
            scores = await gather_all_or_cancel([score(lam) for lam in scored])
            lambda_star = argmax_upper_median(scored, scores)
        else:
            scored, scores, lambda_star = await self._binary(score, evaluated, groups)

        failures = [lam for lam, key in zip(self.lambdas, groups.keys, strict=True)
                    if key in evaluated and evaluated[key].failed]
        lambda_source = "evaluator"
        if evaluated and all(cs.failed for cs in evaluated.values()):
            lambda_source = "fallback"
            lambda_star = upper_median(list(self.lambdas))
            message = (f"evaluator: all {len(evaluated)} evaluations failed or were unparseable; "
                       f"lambda={lambda_star:g} (the grid's upper median) is a fallback, not the Evaluator's choice")
            ctx.warn(message)
            _log.warning("DF-RAG: %s", message)
        elif failures:
            message = (f"evaluator: {len(failures)} of {len(self.lambdas)} lambda values failed or were "
                       f"unparseable and scored 0: {failures}")
            ctx.warn(message)
            _log.info("DF-RAG: %s", message)

        best = max(scores)
        tied = tuple(lam for lam, s in zip(scored, scores, strict=True) if s == best)
        star_local = [int(i) for i in groups.indices[self.lambdas.index(lambda_star)]]
        chosen_texts = tuple(found.texts[i] for i in star_local)
        star_set = evaluated.get(groups.key_of(lambda_star))
        short_answer = star_set.evaluation.short_answer if star_set and star_set.evaluation else None

        answer = await self.answer(ctx, self.prompts.generator_request(
            question, chosen_texts, steps if self.incremental_context else None, short_answer)) if generate else None

        candidate_sets = tuple(
            evaluated.get(key, CandidateSet(lams, tuple(pos[i] for i in groups.order[key])))
            for key, lams in groups.groups.items()
        )
        lambda_scores: dict[float, float | None] = {
            lam: (evaluated[key].score if key in evaluated else None)
            for lam, key in zip(self.lambdas, groups.keys, strict=True)
        }
        reason = {"lambda_mult": float(lambda_star), "lambda_source": lambda_source}
        return self._result(
            ctx, question, found, star_local, answer, reason, None if star_set is None else star_set.score,
            plan=steps, plan_parsed=plan.parsed, lambdas=self.lambdas, lambda_scores=lambda_scores,
            candidate_sets=candidate_sets, tied_lambdas=tied, parse_failures=tuple(failures),
            short_answer=short_answer, incremental_context=self.incremental_context, raw_plan=plan_out.text,
        )

    def _result(self, ctx: RunContext, question: str, found: Candidates, local: Sequence[int], answer: str | None,
                reason: dict[str, Any], set_score: float | None, **fields: Any) -> DFRAGResult:
        """The result of a run that chose the candidates ``local`` (``reason`` names λ and its source)."""
        pos = found.positions if found.positions is not None else tuple(range(len(found)))
        return DFRAGResult(
            question=question,
            answer=answer,
            documents=self.choose(found, local, scores=[set_score] * len(local), reasons=[reason] * len(local)),
            lambda_star=float(reason["lambda_mult"]),
            lambda_source=reason["lambda_source"],
            indices=tuple(pos[i] for i in local),
            texts=tuple(found.texts[i] for i in local),
            sampling=self.sampling,
            **fields,
            **self.finish(ctx),
        )

    async def _arun_adaptive(
        self, question: str, source: CandidateSource, ctx: RunContext, *, k: int, generate: bool
    ) -> DFRAGResult:
        """λ chosen by the trained set scorer (no Planner, no Evaluator); then the Generator."""
        from ...adaptive import AdaptiveSelector

        selector = self.selector if self.selector is not None else AdaptiveSelector.default()
        found = await self.search(ctx, source, question, self.fetch_k)
        choice = await asyncio.to_thread(
            selector.choose, found.query_embedding, found.embeddings, k,
            question=question, texts=list(found.texts),
        )
        grid = tuple(float(v) for v in choice.lambdas)
        predicted = [float(v) for v in choice.predicted]
        ctx.stage("adaptive", lambdas=list(grid), predicted=predicted, chosen=choice.lambda_mult,
                  variant=choice.variant)
        local = [int(i) for i in choice.indices]
        texts = tuple(found.texts[i] for i in local)
        answer = await self.answer(ctx, self.prompts.generator_request(question, texts)) if generate else None
        best = max(predicted)
        reason = {"lambda_mult": float(choice.lambda_mult), "lambda_source": "adaptive", "variant": choice.variant}
        return self._result(
            ctx, question, found, local, answer, reason, None, plan=(), plan_parsed=False, lambdas=grid,
            lambda_scores=dict(zip(grid, predicted, strict=True)),
            tied_lambdas=tuple(v for v, p in zip(grid, predicted, strict=True) if p == best),
        )

    # ------------------------------------------------------------------ entry points
    def _source(
        self, question: str, source: Any, query_embedding: ArrayLike | None, candidate_embeddings: ArrayLike | None
    ) -> CandidateSource:
        """A source, or the first API's fixed pool (texts + query and candidate embeddings)."""
        if isinstance(source, CandidateSource):
            if query_embedding is not None or candidate_embeddings is not None:
                raise InvalidParameterError("pass either a source or texts + embeddings, not both")
            return source
        if query_embedding is None or candidate_embeddings is None:
            raise InvalidParameterError(
                "pass a CandidateSource, or texts with query_embedding and candidate_embeddings"
            )
        if not isinstance(question, str) or not question.strip():
            raise InvalidParameterError(f"question must be a non-empty string; got question={question!r}")
        texts = list(source)
        n = int(np.shape(candidate_embeddings)[0]) if np.ndim(candidate_embeddings) >= 1 else 0
        if len(texts) != n:
            raise DimensionMismatchError(f"texts has {len(texts)} entries but candidate_embeddings has {n} rows")
        return PoolSource(question, texts, candidate_embeddings, query_embedding)

    async def arun(  # the first API's fixed pool, positionally
        self,
        question: str,
        source: CandidateSource | Sequence[str],
        query_embedding: ArrayLike | None = None,
        candidate_embeddings: ArrayLike | None = None,
        **run: Any,
    ) -> DFRAGResult:
        """Run DF-RAG for one question (async).

        Args:
            question: the query.
            source: a :class:`~diverse_core.pipelines.CandidateSource` searched once with the
                question for ``fetch_k`` candidates; or (the first API) the candidate texts,
                with ``query_embedding`` (d,) and ``candidate_embeddings`` (n, d).
            **run: ``generate`` (``False`` = retrieval only: choose λ* and stop), ``k`` and
                ``call_kwargs``, as for :meth:`Pipeline.arun <diverse_core.pipelines.Pipeline.arun>`.

        Raises:
            InvalidParameterError / DimensionMismatchError: bad inputs.
            LLMError / LLMTimeoutError: the Planner or Generator failed after retries
                (or an Evaluator call, with ``on_evaluator_error="raise"``).
        """
        src = self._source(question, source, query_embedding, candidate_embeddings)
        return await super().arun(question, src, **run)
