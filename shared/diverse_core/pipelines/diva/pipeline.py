"""The DIVA pipeline (In et al. 2024, Alg. 1): diversify, verify, adapt, on the shared contract.

Per question, with ``m`` interpretations: (1) the ``interpreter`` names the ambiguity, then
rewrites the question into at most ``max_interpretations`` readings (2 calls; none read: the
question alone, with a warning); (2) each reading takes its top hits (from one pool with
``search="pool"``, from its own search with ``"source"``), the union is pruned to ``k`` by mean
cosine to all readings (Eq. 5; no LLM); (3) the ``verifier`` asks per reading whether the kept
passages answer it (``m`` concurrent calls: all yes Useful, some PartialUseful, none Useless;
unreadable or failed counts as yes, flagged); (4) the ``generator`` extracts one short answer
per reading then writes the long answer (2 calls), or answers closed book when Useless (1 call).
Retrieval only stops after pruning (2 calls, ``2 + m`` with ``verify_in_retrieval``, 0 with
given interpretations).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from ...errors import ConflictingParametersError, InvalidParameterError
from ...llm.errors import LLMError
from ...llm.structured import RoleRequest
from ...validation import check_k, check_unit_interval
from ..base import Pipeline, gather_all_or_cancel
from ..contract import Candidates, CandidateSource, ChosenDocument
from ..diversity import PipelineDiversity
from ..face_fields import FaceFields
from ..judge import QuoteIndex
from ..options import Option, check_choice
from ..roles import CallPolicy, RunContext
from .parsing import aggregate_verdicts
from .prompts import DEFAULT_MAX_INTERPRETATIONS, DivaPrompts
from .reading import (
    read_ambiguity,
    read_interpretations,
    read_long_answer,
    read_qa_pairs,
    read_verdict,
)
from .result import DIVAResult
from .retrieval import (
    DEFAULT_PER_INTERPRETATION_K,
    PRUNE_MODES,
    DivaRetrieval,
    diversify_hits,
    diversify_pool,
    merge_hit_ids,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DIVA", "DIVA_DIVERSITY", "SEARCH_MODES", "VERIFIER_ERROR_MODES"]

#: Where each interpretation's hits come from.
SEARCH_MODES = ("pool", "source")
#: What a verification call that failed after its retries counts as.
VERIFIER_ERROR_MODES = ("count_yes", "raise")



def _check_interpretations(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value) or not value:
        raise InvalidParameterError(
            f"interpretations must be a non-empty sequence of non-empty strings; got interpretations={value!r}"
        )
    return tuple(v.strip() for v in value)


#: How DIVA reads ``diversity``: it prunes the union with the MMR rule (``prune="mmr"``) at
#: ``mmr_lambda = 1 - diversity``; 0 ranks by the mean similarity to the interpretations alone.
DIVA_DIVERSITY = PipelineDiversity(
    "mmr_lambda", lambda d: 1.0 - d, "mmr_lambda = 1 - diversity, with prune='mmr'", default=0.5
)

#: DIVA's own options (see :class:`DIVA`).
DIVA_OPTIONS: tuple[Option, ...] = (
    Option("per_interpretation_k", DEFAULT_PER_INTERPRETATION_K, "hits kept per interpretation", int,
           bounds=">= 1"),
    Option("max_interpretations", DEFAULT_MAX_INTERPRETATIONS, "most interpretations the LLM may write", int,
           bounds=">= 1"),
    Option("search", "pool", "interpretations search the first-stage pool or the source", str,
           choices=SEARCH_MODES),
    Option("prune", "mean", "how the union of hits is pruned to k", str, choices=PRUNE_MODES),
    Option("mmr_lambda", None, "lambda of prune='mmr' (None: 0.5, or 1 - diversity)", float | None,
           bounds="[0, 1]"),
    Option("verify_in_retrieval", False, "also run the verification calls when only retrieving", bool),
    Option("on_verifier_error", "count_yes", "an unreadable verdict counts as yes or raises", str,
           choices=VERIFIER_ERROR_MODES),
    Option("prompts", None, "a DivaPrompts (None: the shipped prompts)", Any, harness=False),
    Option("fetch_k", None, "first-stage pool size (the source's default when None)", int | None,
           bounds=">= k", faces=False),
    DIVA_DIVERSITY.option(),
)


class DIVA(Pipeline[DIVAResult]):
    """Diversify-verify-adapt RAG for ambiguous questions (In et al., arXiv:2409.02361).

    Args:
        llm: the model for every role (``interpreter``, ``verifier``, ``generator``; see
            :class:`~diverse_core.pipelines.Pipeline`); ``None`` only for retrieval-only runs
            with given interpretations.
        interpreter_llm / verifier_llm / generator_llm: per-role overrides.
        k: passages kept after pruning (the paper's K = 5).
        fetch_k: first-stage pool size (``search="pool"``; ``None``: the source's default).
        per_interpretation_k: hits each interpretation takes before the union.
        max_interpretations: most interpretations asked for and kept.
        search: ``"pool"`` (one first-stage search, the paper's setting) or ``"source"``
            (each interpretation searches the source: m searches).
        prune: ``"mean"`` (Eq. 5), ``"max"``, ``"round_robin"`` or ``"mmr"`` (see
            :mod:`~diverse_core.pipelines.diva.retrieval`).
        mmr_lambda: ``lambda_mult`` of ``prune="mmr"`` (``None``: 0.5, or what ``diversity`` says).
        diversity: the shared knob in [0, 1]: prune with the MMR rule at ``mmr_lambda = 1 -
            diversity`` (``prune`` must be ``"mmr"`` or left out); ``mmr_lambda`` wins when both
            are given and must agree.
        verify_in_retrieval: also run the verification calls in retrieval-only runs (the
            retriever faces); the verdicts then appear in the documents' metadata.
        on_verifier_error: ``"count_yes"`` (a failed verification call counts as yes and is
            flagged, like an unreadable reply) or ``"raise"``.
        prompts: a :class:`DivaPrompts` (our default prompts otherwise).
        max_concurrency / timeout / max_retries / backoff_base / llm_kwargs: the per-call policy
            (see :class:`~diverse_core.pipelines.Pipeline`).

    Example:
        >>> from diverse_core.pipelines import InMemorySource
        >>> def fake(prompt):
        ...     if prompt.rstrip().endswith("Reason:"):
        ...         return "The year is not fixed.\\nKinds: [Time]"
        ...     if prompt.rstrip().endswith("Unambiguous questions:"):
        ...         return "1: Who won in 2018?\\n2: Who won in 2019?"
        ...     if "Verdict:" in prompt:
        ...         return "Verdict: Yes"
        ...     if "Readings:" in prompt:
        ...         return "A1: Ann\\nA2: Bob"
        ...     return "Answer: Ann won in 2018 and Bob in 2019."
        >>> emb = lambda ts: [[t.count("2018"), t.count("2019"), 0.5] for t in ts]
        >>> src = InMemorySource(["Ann won in 2018.", "Bob won in 2019.", "Cats."], embedder=emb)
        >>> res = DIVA(fake, k=2).run("Who won?", src)
        >>> res.interpretations, res.usefulness, res.route, res.cost.llm_calls
        (('Who won in 2018?', 'Who won in 2019?'), 'Useful', 'passages', 6)
        >>> [d.text for d in res.documents]
        ['Ann won in 2018.', 'Bob won in 2019.']
    """

    name = "diva"
    OPTIONS = DIVA_OPTIONS
    TEMPLATES = ("ambiguity", "rewrite", "verify", "extract", "answer", "closed_book")
    roles = ("interpreter", "verifier", "generator")
    requires_llm = False
    FACE = FaceFields(
        reports=("interpretations", "interpretations_source", "ambiguity_kinds", "verdicts", "usefulness", "route",
                 "qa_pairs"),
        on_documents={"diva_interpretations": "interpretations", "diva_usefulness": "usefulness"},
    )

    def __init__(
        self,
        llm: object = None,
        *,
        interpreter_llm: object | None = None,
        verifier_llm: object | None = None,
        generator_llm: object | None = None,
        k: int = 5,
        fetch_k: int | None = None,
        per_interpretation_k: int = DEFAULT_PER_INTERPRETATION_K,
        max_interpretations: int = DEFAULT_MAX_INTERPRETATIONS,
        search: str = "pool",
        prune: str = "mean",
        mmr_lambda: float | None = None,
        verify_in_retrieval: bool = False,
        on_verifier_error: str = "count_yes",
        prompts: DivaPrompts | None = None,
        diversity: float | None = None,
        **policy: Unpack[CallPolicy],
    ) -> None:
        self.per_interpretation_k = check_k(per_interpretation_k, "per_interpretation_k")
        self.max_interpretations = check_k(max_interpretations, "max_interpretations")
        self.search_mode = check_choice(search, "search", SEARCH_MODES)
        self.on_verifier_error = check_choice(on_verifier_error, "on_verifier_error", VERIFIER_ERROR_MODES)
        check_choice(prune, "prune", PRUNE_MODES)
        if prompts is not None and not isinstance(prompts, DivaPrompts):
            raise InvalidParameterError(f"prompts must be a DivaPrompts; got {type(prompts).__name__}")
        given = None if mmr_lambda is None else check_unit_interval(mmr_lambda, "mmr_lambda")
        self.mmr_lambda = DIVA_DIVERSITY.resolve("DIVA", given, diversity)
        if diversity is not None:
            if prune not in ("mean", "mmr"):
                raise ConflictingParametersError(
                    f"DIVA: diversity={diversity!r} prunes with the MMR rule (mmr_lambda = 1 - diversity), "
                    f"but prune={prune!r} was also given; pass prune='mmr' or leave it out"
                )
            prune = "mmr"
        self.diversity = diversity
        roles = {"interpreter": interpreter_llm, "verifier": verifier_llm, "generator": generator_llm}
        super().__init__(llm, role_llms=roles, k=k, fetch_k=fetch_k, **policy)
        self.prune = prune
        self.verify_in_retrieval = bool(verify_in_retrieval)
        self.prompts: DivaPrompts = prompts or DivaPrompts()

    # ------------------------------------------------------------------ stages
    def _need_llm(self, role: str, why: str) -> None:
        try:
            self.llms[role]
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"DIVA needs an LLM {why}: pass llm= (or {role}_llm=)") from exc

    async def _interpret(self, ctx: RunContext, question: str) -> tuple[tuple[str, ...], str, str,
                                                                          tuple[str, ...]]:
        """(interpretations, source, reason, kinds) from the two interpretation calls."""
        self._need_llm("interpreter", "to write interpretations (or pass interpretations= to run)")
        out, at = await ctx.ask_traced("interpreter", self.prompts.ambiguity_request(question), stage="ambiguity")
        amb, amb_notes = read_ambiguity(out)
        ctx.annotate(at, parsed={"reason": amb.reason, "kinds": list(amb.kinds)},
                     notes=amb_notes + (() if amb.parsed else ("no reason or kind found",)))
        request = self.prompts.rewrite_request(question, amb.reason, self.max_interpretations)
        out, at = await ctx.ask_traced("interpreter", request, stage="rewrite")
        got = read_interpretations(out, self.max_interpretations)
        ctx.annotate(at, parsed={"interpretations": list(got.interpretations)}, notes=got.notes)
        if not got.parsed:
            ctx.warn("interpreter: no interpretation could be read from the rewrite reply; "
                     "the original question alone drove retrieval")
            return (question,), "fallback", amb.reason, amb.kinds
        return got.interpretations, "generated", amb.reason, amb.kinds

    async def _embed(self, ctx: RunContext, source: CandidateSource, texts: Sequence[str]) -> NDArray[Any]:
        t0 = time.perf_counter()
        vectors = np.asarray(await source.aembed(list(texts)))
        ctx.stage("embed", time.perf_counter() - t0, texts=len(texts))
        return vectors

    async def _pool(self, ctx: RunContext, source: CandidateSource, question: str,
                    interps: tuple[str, ...], k: int) -> tuple[Candidates, DivaRetrieval]:
        """One first-stage pool for the question; each interpretation takes its top hits from it."""
        got = await gather_all_or_cancel(
            [self.search(ctx, source, question, self.fetch_k), self._embed(ctx, source, interps)]
        )
        found, vectors = cast(Candidates, got[0]), cast(NDArray[Any], got[1])
        retrieval = diversify_pool(
            found.embeddings, vectors, k=k, per_interpretation_k=self.per_interpretation_k,
            relevance=found.relevance, prune=self.prune, mmr_lambda=self.mmr_lambda,
        )
        return found, retrieval

    async def _per_source(self, ctx: RunContext, source: CandidateSource, question: str,
                          interps: tuple[str, ...], k: int) -> tuple[Candidates, DivaRetrieval]:
        """Each interpretation searches the source; the union is rebuilt as one candidate list."""
        searches = [self.search(ctx, source, q, self.per_interpretation_k, stage="search-interpretation")
                    for q in interps]
        got = await gather_all_or_cancel([*searches, self._embed(ctx, source, (question, *interps))])
        founds = [cast(Candidates, f) for f in got[:-1]]
        vectors = cast(NDArray[Any], got[-1])
        merged = Candidates.union(question, founds, vectors[0])
        _, hit_lists = merge_hit_ids([f.ids for f in founds])
        retrieval = diversify_hits(hit_lists, merged.embeddings, vectors[1:], k=k, relevance=merged.relevance,
                                   prune=self.prune, mmr_lambda=self.mmr_lambda)
        return merged, retrieval

    async def _verify(self, ctx: RunContext, interps: tuple[str, ...],
                      passages: tuple[str, ...]) -> tuple[bool | None, ...]:
        """One yes/no call per interpretation over the kept passages (concurrent)."""
        self._need_llm("verifier", "to verify the passages")
        gate = asyncio.Semaphore(self.llms.max_concurrency)
        index = QuoteIndex(passages)  # the passages normalised once for every verdict

        async def one(j: int, interp: str) -> tuple[bool | None, str | None]:
            async with gate:
                try:
                    out, at = await ctx.ask_traced("verifier", self.prompts.verify_request(interp, passages),
                                                   stage="verify")
                except LLMError as exc:
                    if self.on_verifier_error == "raise":
                        raise
                    return None, f"{type(exc).__name__}: {exc}"
            verdict, notes = read_verdict(out, index.again())
            ctx.annotate(at, parsed={"interpretation": j, "verdict": verdict},
                         notes=notes + (() if verdict is not None else ("no yes/no verdict; counted as yes",)))
            for note in notes:
                if note.startswith("ambiguous"):
                    ctx.warn(f"verifier: interpretation {j}: {note}")
            return verdict, None

        got = await gather_all_or_cancel([one(j, q) for j, q in enumerate(interps)])
        failed = [j for j, (_, err) in enumerate(got) if err is not None]
        unreadable = [j for j, (v, err) in enumerate(got) if v is None and err is None]
        if failed:
            ctx.warn(f"verifier: the call(s) for interpretation(s) {failed} failed after their retries "
                     f"and were counted as yes ({got[failed[0]][1]})")
        if unreadable:
            ctx.warn(f"verifier: the reply(ies) for interpretation(s) {unreadable} had no yes/no verdict "
                     "and were counted as yes")
        return tuple(v for v, _ in got)

    async def _generate(self, ctx: RunContext, question: str, interps: tuple[str, ...],
                        passages: tuple[str, ...], useless: bool) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """(answer, route, qa_pairs): closed book when the passages are useless, else the two calls."""
        if useless:
            return await self._long_answer(ctx, self.prompts.closed_book_request(question), "closed_book"), \
                "closed_book", ()
        out, at = await ctx.ask_traced("generator", self.prompts.extract_request(question, interps, passages),
                                       stage="extract")
        qa, qa_notes = read_qa_pairs(out, interps)
        ctx.annotate(at, parsed={"qa_pairs": [list(p) for p in qa.pairs], "missing": list(qa.missing)},
                     notes=qa_notes)
        if not qa.pairs:
            ctx.warn("generator: the extraction reply had no answer lines; the long answer was written "
                     "from the passages without question-answer pairs")
        elif qa.missing:
            ctx.warn(f"generator: no short answer was extracted for interpretation(s) {list(qa.missing)}")
        answer = await self._long_answer(ctx, self.prompts.answer_request(question, qa.pairs, passages), "answer")
        return answer, "passages", qa.pairs

    @staticmethod
    async def _long_answer(ctx: RunContext, request: RoleRequest, stage: str) -> str:
        out, at = await ctx.ask_traced("generator", request, stage=stage)
        answer, notes = read_long_answer(out)
        if notes:
            ctx.annotate(at, notes=notes)
        return answer

    # ------------------------------------------------------------------ main flow
    def _no_llm_hint(self) -> str:
        return "; retrieval without an LLM needs the interpretations: interpretations=[...], generate=False"

    def _needs_llm(self, generate: bool, options: Mapping[str, Any]) -> bool:
        """Generating needs the LLM; so does retrieval unless the interpretations are given."""
        return generate or options.get("interpretations") is None

    async def _arun(  # type: ignore[override]  # per-run options: checked by Pipeline.arun
        self, question: str, source: CandidateSource, ctx: RunContext, *, k: int, generate: bool,
        interpretations: Sequence[str] | None = None,
    ) -> DIVAResult:
        """One DIVA run. ``interpretations``: use these questions instead of generating them (e.g. a
        dataset's gold interpretations): no interpretation call, all of them used (no cap); with
        ``generate=False`` the run then needs no LLM at all."""
        given = None if interpretations is None else _check_interpretations(interpretations)
        kinds: tuple[str, ...] = ()
        if given is not None:
            interps, origin, reason = given, "given", ""
            ctx.stage("interpretations", interpretations=list(given), source="given")
        else:
            interps, origin, reason, kinds = await self._interpret(ctx, question)

        diversify = self._pool if self.search_mode == "pool" else self._per_source
        found, retrieval = await diversify(ctx, source, question, interps, k)
        union_ids = tuple(found.ids[int(i)] for i in retrieval.union)
        hits = tuple(tuple(found.ids[int(i)] for i in h) for h in retrieval.hits)
        ctx.stage("diversify", prune=self.prune, union=list(union_ids), hits=[list(h) for h in hits],
                  kept=[found.ids[int(i)] for i in retrieval.indices],
                  kept_scores=retrieval.scores.tolist())

        served = retrieval.kept_served_by
        reasons = [{"interpretations": [interps[j] for j in s], "prune_score": float(score)}
                   for s, score in zip(served, retrieval.scores.tolist(), strict=True)]
        documents: tuple[ChosenDocument, ...] = self.choose(
            found, retrieval.indices.tolist(), scores=retrieval.scores.tolist(), reasons=reasons
        )
        passages = tuple(d.text for d in documents)

        verdicts: tuple[bool | None, ...] = ()
        usefulness: str | None = None
        if generate or self.verify_in_retrieval:
            verdicts = await self._verify(ctx, interps, passages)
            summary = aggregate_verdicts(verdicts, unreadable_as=True)
            usefulness = summary.grade.value
            ctx.stage("grade", usefulness=usefulness, counted=list(summary.counted))

        answer: str | None = None
        route: str | None = None
        qa_pairs: tuple[tuple[str, str], ...] = ()
        if generate:
            answer, route, qa_pairs = await self._generate(
                ctx, question, interps, passages, useless=usefulness == "Useless"
            )
            if not answer:
                ctx.warn("generator: the answer is empty")

        return DIVAResult(
            question=question,
            answer=answer,
            documents=documents,
            interpretations=interps,
            interpretations_source=origin,
            ambiguity_reason=reason,
            ambiguity_kinds=kinds,
            search=self.search_mode,
            prune=self.prune,
            hits=hits,
            union=union_ids,
            prune_scores=dict(zip(union_ids, retrieval.union_scores.tolist(), strict=True)),
            verdicts=verdicts,
            usefulness=usefulness,
            route=route,
            qa_pairs=qa_pairs,
            **self.finish(ctx),
        )
