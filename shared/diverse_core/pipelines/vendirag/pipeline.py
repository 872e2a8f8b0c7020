"""The Vendi-RAG loop (Rezaei & Dieng 2025, Algorithm 1) on the shared pipeline contract."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ...api import select
from ...errors import InvalidParameterError
from ...llm.base import Completion
from ...llm.errors import LLMError
from ...llm.structured import RoleRequest
from ...methods.vendi import OBJECTIVES
from ...metrics import mean_pairwise_similarity, vendi_score
from ...validation import check_k, check_unit_interval
from ..base import Pipeline
from ..contract import Candidates, CandidateSource, ChosenDocument
from ..diversity import PipelineDiversity
from ..face_fields import FaceFields
from ..judge import QuoteIndex
from ..options import Option, check_choice
from ..roles import CallPolicy, RunContext
from ..structured import field_text, structured_value, unusable_json
from .judging import Judgement, read_judge_reply
from .prompts import VendiPrompts, read_rewrite
from .result import IterationRecord, VendiRAGResult
from .s_update import S_UPDATES, next_s

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["VendiRAG", "VENDIRAG_DIVERSITY"]

_FINAL = ("best", "last")
_RETURN = ("final", "union")
_ON_ERROR = ("stop", "raise")


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be True or False; got {name}={value!r}")
    return value


@dataclasses.dataclass
class _Step:
    """The mutable state of one iteration while it runs."""

    found: Candidates
    local: list[int]
    failures: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    error: LLMError | None = None


#: How Vendi-RAG reads ``diversity``: the first iteration's VRS weight ``s`` (0: relevance only);
#: later iterations move ``s`` by the judge's quality (``s_update``) as before.
VENDIRAG_DIVERSITY = PipelineDiversity(
    "initial_s", float, "initial_s = diversity (later iterations follow s_update)", default=0.8
)

#: Vendi-RAG's own options (see :class:`VendiRAG`).
VENDIRAG_OPTIONS: tuple[Option, ...] = (
    Option("initial_s", None, "the first iteration's diversity weight s (None: 0.8, or diversity)",
           float | None, bounds="[0, 1]"),
    Option("threshold", 0.85, "stop once the judge's quality reaches it", float, bounds="[0, 1]"),
    Option("max_iterations", 5, "most iterations of the loop", int, bounds=">= 1"),
    Option("s_update", "paper", "how s changes between iterations", str, choices=tuple(S_UPDATES)),
    Option("final", "best", "return the best-judged or the last iteration", str, choices=_FINAL),
    Option("rewrite", True, "rewrite the query between iterations", bool),
    Option("use_judge", True, "ask the LLM judge for the quality", bool),
    Option("exclude_seen", False, "later iterations skip chunks already used", bool),
    Option("objective", "paper", "the VRS objective of the vendi method", str, choices=OBJECTIVES),
    Option("return_documents", "final", "the final iteration's chunks or every chunk used", str,
           choices=_RETURN),
    Option("on_llm_error", "stop", "a failed LLM call stops the loop or raises", str, choices=_ON_ERROR),
    Option("prompts", None, "a VendiPrompts (None: the shipped prompts)", Any, harness=False),
    Option("fetch_k", None, "candidates per search (the source's default when None)", int | None,
           bounds=">= k", faces=False),
    VENDIRAG_DIVERSITY.option(),
)


class VendiRAG(Pipeline[VendiRAGResult]):
    """Vendi-RAG: retrieve with VRS, reason, answer, have an LLM judge score the answer, move
    the diversity weight ``s`` by that score, rewrite the query, and try again.

    Per iteration: search with the current query, choose ``k`` chunks by greedy VRS at ``s_i``
    (:func:`diverse_core.select` ``"vendi"``), then one **reasoning** call over the query and
    chunks, one **answer** call over the *original* question, the chunks and every reasoning
    note so far, and one **judge** call rating coherence, relevance and query alignment (1-10)
    -> ``Q_i = mean / 10``. Stop when ``Q_i >= threshold``; else one **rewrite** call gives the
    next query and ``s`` follows ``s_update``. An unreadable judge reply is asked once more, then
    the iteration is unjudged (a warning: it cannot end the loop, ``s`` stays). Retrieval needs
    the LLM too (the judge steers later iterations): ``generate=False`` only leaves ``answer``
    empty.

    Args:
        llm: the model for every role (see :class:`~diverse_core.pipelines.Pipeline`).
        reasoner_llm / answerer_llm / judge_llm / rewriter_llm: per-role overrides.
        k: chunks per iteration.
        fetch_k: candidates per search (``None``: the source's default pool).
        initial_s: the first iteration's diversity weight (``None``: the paper's 0.8, or
            ``diversity``).
        threshold: τ, the quality that ends the loop (paper: 0.85).
        max_iterations: N.
        s_update: ``"paper"`` (``s_{i+1} = 1 - Q_i``), ``"relative"`` (the ``vendirag``
            package's rule) or ``"fixed"`` (see :mod:`~diverse_core.pipelines.vendirag.s_update`).
        final: the iteration returned: ``"best"`` (highest Q, ties to the later; the last when
            none was judged) or ``"last"``.
        rewrite: rewrite the query between iterations (``False``: search the question every time).
        use_judge: ``False`` runs all ``max_iterations`` with no judge call and ``s`` fixed
            (the paper's Vendi-RAG* variant); the last iteration is returned.
        exclude_seen: drop chunks chosen by earlier iterations from the candidates.
        objective: VRS objective, ``"paper"`` or ``"vendirag"`` (the package's variant).
        return_documents: ``"final"`` (the final iteration's chunks) or ``"union"`` (every
            chunk the loop used, in order of first use).
        on_llm_error: ``"stop"`` (a failed reasoning/answer call ends the loop with the best
            iteration so far, raised when there is none; a failed rewrite keeps the query; a
            failed judge call leaves the iteration unjudged; each a warning) or ``"raise"``.
        prompts: a :class:`VendiPrompts` (our default prompts otherwise).
        diversity: the shared knob in [0, 1]: ``initial_s = diversity``; ``initial_s`` wins when
            both are given and must agree.
        timeout / max_retries / backoff_base / max_concurrency / llm_kwargs: the LLM call policy.

    Example:
        >>> import numpy as np
        >>> from diverse_core.pipelines import InMemorySource
        >>> def embed(texts):
        ...     return np.array([[t.count("a") + 1.0, t.count("b") + 1.0, len(t)] for t in texts])
        >>> src = InMemorySource(["a a", "b b", "a b", "aab", "bba", "abab"], embedder=embed)
        >>> def fake(prompt):
        ...     if prompt.rstrip().endswith("Ratings (JSON):"):
        ...         return '{"coherence": 9, "relevance": 9, "query_alignment": 9}'
        ...     return "steps" if prompt.rstrip().endswith("Reasoning:") else "ab"
        >>> res = VendiRAG(fake, k=2).run("a or b?", src)
        >>> res.answer, res.n_iterations, res.stop_reason, res.cost.llm_calls
        ('ab', 1, 'threshold', 3)
    """

    name = "vendirag"
    OPTIONS = VENDIRAG_OPTIONS
    #: (No single answer call can be streamed: the loop writes and judges its answers itself.)
    TEMPLATES = ("reasoning", "answer", "judge", "judge_retry", "rewrite")
    roles = ("reasoner", "answerer", "judge", "rewriter")
    FACE = FaceFields(
        reports=("iterations", "final_iteration", "s_trajectory", "quality_trajectory", "quality", "stop_reason"),
        on_documents={
            "vendirag_iteration": "final_iteration",
            "vendirag_s_trajectory": "s_trajectory",
            "vendirag_quality_trajectory": "quality_trajectory",
        },
    )

    def __init__(
        self,
        llm: object,
        *,
        reasoner_llm: object | None = None,
        answerer_llm: object | None = None,
        judge_llm: object | None = None,
        rewriter_llm: object | None = None,
        k: int = 5,
        fetch_k: int | None = None,
        initial_s: float | None = None,
        threshold: float = 0.85,
        max_iterations: int = 5,
        s_update: str = "paper",
        final: str = "best",
        rewrite: bool = True,
        use_judge: bool = True,
        exclude_seen: bool = False,
        objective: str = "paper",
        return_documents: str = "final",
        on_llm_error: str = "stop",
        prompts: VendiPrompts | None = None,
        diversity: float | None = None,
        **policy: Unpack[CallPolicy],
    ) -> None:
        given = None if initial_s is None else check_unit_interval(initial_s, "initial_s")
        self.initial_s = float(VENDIRAG_DIVERSITY.resolve("VendiRAG", given, diversity))
        self.diversity = diversity
        self.threshold = check_unit_interval(threshold, "threshold")
        self.max_iterations = check_k(max_iterations, "max_iterations")
        self.s_update = check_choice(s_update, "s_update", tuple(S_UPDATES))
        self.final = check_choice(final, "final", _FINAL)
        self.rewrite = _flag(rewrite, "rewrite")
        self.use_judge = _flag(use_judge, "use_judge")
        self.exclude_seen = _flag(exclude_seen, "exclude_seen")
        self.objective = check_choice(objective, "objective", OBJECTIVES)
        self.return_documents = check_choice(return_documents, "return_documents", _RETURN)
        self.on_llm_error = check_choice(on_llm_error, "on_llm_error", _ON_ERROR)
        if prompts is not None and not isinstance(prompts, VendiPrompts):
            raise InvalidParameterError(f"prompts must be a VendiPrompts; got {type(prompts).__name__}")
        self.prompts: VendiPrompts = prompts or VendiPrompts()
        roles = {"reasoner": reasoner_llm, "answerer": answerer_llm, "judge": judge_llm,
                 "rewriter": rewriter_llm}
        super().__init__(llm, role_llms=roles, k=k, fetch_k=fetch_k, **policy)

    # ------------------------------------------------------------------ one LLM call
    async def _call(self, ctx: RunContext, role: str, prompt: str | RoleRequest, i: int,
                    step: _Step) -> tuple[Completion | None, int | None]:
        """One call; a failure after the retries is raised (``on_llm_error="raise"``) or recorded."""
        try:
            out, at = await ctx.ask_traced(role, prompt, stage=role)
        except LLMError as exc:
            if self.on_llm_error == "raise":
                raise
            step.failures.append(f"{role} call failed: {type(exc).__name__}: {exc}")
            step.error = exc
            return None, None
        ctx.annotate(at, parsed={"iteration": i})
        return out, at

    async def _judge(self, ctx: RunContext, question: str, answer: str, texts: tuple[str, ...], i: int,
                     step: _Step) -> tuple[Judgement | None, int]:
        """The judge's ratings (one retry after an unreadable reply); ``None`` when unjudged."""
        calls = 0
        for attempt in (1, 2):
            request = self.prompts.judge_request(question, answer, texts, retry=attempt > 1)
            out, at = await self._call(ctx, "judge", request, i, step)
            if out is None or at is None:
                return None, calls
            calls += 1
            # the prompt is shown text too: a model that echoes it must not score the example
            got = read_judge_reply(out, QuoteIndex(texts, shown=(request.prompt,)))
            ctx.annotate(at, parsed={"attempt": attempt, "scores": got.scores, "quality": got.quality},
                         notes=got.notes)
            if got.parsed:
                if attempt > 1:
                    step.notes.append("the first judge reply was unreadable; the retry was read")
                step.notes.extend(got.notes)
                return got, calls
            step.failures.append(f"judge reply {attempt} unreadable: {'; '.join(got.notes)}")
        return None, calls

    @staticmethod
    def _field(ctx: RunContext, out: Completion, at: int | None, name: str) -> str:
        """A free-text field of a structured reply (the whole text on the text path)."""
        text, notes = field_text(out, name)
        if notes and at is not None:
            ctx.annotate(at, notes=notes)
        return text

    # ------------------------------------------------------------------ selection
    def _select(self, found: Candidates, k: int, s: float, seen: set[str]) -> _Step:
        """VRS at ``s`` over the candidates (minus the chunks already used, with ``exclude_seen``)."""
        keep = np.arange(len(found))
        notes: list[str] = []
        if self.exclude_seen and seen:
            unseen = keep[~np.isin(np.asarray(found.ids, dtype=object), list(seen))]
            if unseen.size == 0:
                notes.append("every candidate was chosen before; exclude_seen ignored for this iteration")
            else:
                keep = unseen
                if unseen.size < k:
                    notes.append(f"only {unseen.size} unseen candidates; chose {unseen.size} instead of {k}")
        sel = select("vendi", found.query_embedding, found.embeddings[keep], k, s=s, objective=self.objective)
        return _Step(found, [int(keep[j]) for j in sel.indices], notes=notes)

    # ------------------------------------------------------------------ the calls of an iteration
    async def _reason_answer_judge(
        self, ctx: RunContext, question: str, query: str, texts: tuple[str, ...], notes_so_far: list[str],
        i: int, step: _Step,
    ) -> tuple[str | None, str | None, Judgement | None, int]:
        """Reasoning over the current query, the answer over the original question and every
        note so far, then the judge: ``(reasoning, answer, judgement, judge_calls)``."""
        out, at = await self._call(ctx, "reasoner", self.prompts.reasoning_request(query, texts), i, step)
        if out is None:
            return None, None, None, 0
        reasoning = self._field(ctx, out, at, "reasoning")
        notes_so_far.append(reasoning)
        out, at = await self._call(ctx, "answerer", self.prompts.answer_request(question, texts, notes_so_far),
                                   i, step)
        if out is None:
            return reasoning, None, None, 0
        answer = self._field(ctx, out, at, "answer")
        if not answer:
            step.notes.append("the answer is empty")
        if not self.use_judge:
            return reasoning, answer, None, 0
        judgement, judge_calls = await self._judge(ctx, question, answer, texts, i, step)
        return reasoning, answer, judgement, judge_calls

    async def _rewrite(self, ctx: RunContext, question: str, query: str, answer: str, reasoning: str,
                       i: int, step: _Step) -> str:
        """The next query (the current one when the call fails or its reply holds none)."""
        request = self.prompts.rewrite_request(question, query, answer, reasoning)
        out, at = await self._call(ctx, "rewriter", request, i, step)
        if out is None:
            return query
        value, _ = structured_value(out)
        if isinstance(value, dict):
            new = " ".join(str(value["query"]).split())
        else:  # never the JSON text of an unusable structured reply
            new = "" if unusable_json(out) else read_rewrite(out.text)
        if not new:
            step.failures.append("the rewrite reply held no query; the query was kept")
        if at is not None:
            ctx.annotate(at, parsed={"query": new or query})
        return new or query

    # ------------------------------------------------------------------ the loop
    async def _arun(  # type: ignore[override]  # per-run options: checked by Pipeline.arun
        self, question: str, source: CandidateSource, ctx: RunContext, *, k: int, generate: bool
    ) -> VendiRAGResult:
        s, query = self.initial_s, question
        best_quality = 0.0
        notes_so_far: list[str] = []
        seen: set[str] = set()
        records: list[IterationRecord] = []
        steps: list[_Step] = []
        stop_reason = "max_iterations"

        for i in range(1, self.max_iterations + 1):
            before = ctx.cost()
            found = await self.search(ctx, source, query, self.fetch_k)
            step = self._select(found, k, s, seen)
            chosen = found.take(step.local)
            seen.update(chosen.ids)
            ctx.stage("select", iteration=i, s=s, ids=list(chosen.ids))

            reasoning, answer, judgement, judge_calls = await self._reason_answer_judge(
                ctx, question, query, chosen.texts, notes_so_far, i, step)

            failed = answer is None
            quality = None if judgement is None else judgement.quality
            if quality is not None:
                best_quality = max(best_quality, quality)
            stop = quality is not None and quality >= self.threshold
            last = failed or stop or i == self.max_iterations
            s_next: float | None = None
            next_query: str | None = None
            if not last:
                s_next = s if (quality is None or not self.use_judge) else next_s(self.s_update, s, quality, best_quality)
                next_query = query
                if self.rewrite:
                    assert answer is not None and reasoning is not None
                    next_query = await self._rewrite(ctx, question, query, answer, reasoning, i, step)

            after = ctx.cost()
            record = IterationRecord(
                index=i, s=s, query=query, chunk_ids=chosen.ids, texts=chosen.texts,
                positions=chosen.positions, vendi_score=vendi_score(chosen.embeddings),
                mean_similarity=mean_pairwise_similarity(chosen.embeddings) if len(chosen) > 1 else None,
                mean_relevance=float(np.mean(chosen.relevance)), reasoning=reasoning, answer=answer,
                scores=None if judgement is None else dict(judgement.scores), quality=quality,
                judge_calls=judge_calls, s_next=s_next, next_query=next_query,
                calls=after.llm_calls - before.llm_calls,
                failed_calls=after.failed_calls - before.failed_calls,
                prompt_tokens=after.prompt_tokens - before.prompt_tokens,
                completion_tokens=after.completion_tokens - before.completion_tokens,
                failures=tuple(step.failures), notes=tuple(step.notes),
            )
            records.append(record)
            steps.append(step)
            self._warn(ctx, record, judged=self.use_judge and not failed)
            ctx.stage("iteration", iteration=i, s=s, query=query, quality=quality, s_next=s_next,
                      next_query=next_query, failures=list(step.failures))
            if last:
                stop_reason = "llm_error" if failed else "threshold" if stop else stop_reason
                break
            assert s_next is not None and next_query is not None
            s, query = s_next, next_query

        answered = [r for r in records if r.answer is not None]
        if not answered:  # the first iteration's reasoning or answer call failed
            error = steps[-1].error
            raise error if error is not None else LLMError(f"vendirag: no answer ({records[-1].failures})")
        final = self._final(answered, ctx)
        documents = self._documents(records, steps, final)
        return VendiRAGResult(
            question=question,
            answer=final.answer if generate else None,
            documents=documents,
            iterations=tuple(records),
            final_iteration=final.index,
            stop_reason=stop_reason,
            quality=final.quality,
            s_update=self.s_update,
            final=self.final,
            threshold=self.threshold,
            use_judge=self.use_judge,
            return_documents=self.return_documents,
            **self.finish(ctx),
        )

    # ------------------------------------------------------------------ result helpers
    @staticmethod
    def _warn(ctx: RunContext, record: IterationRecord, *, judged: bool) -> None:
        """Surface what fell back in an iteration as run warnings (never silent)."""
        i = record.index
        for failure in record.failures:
            ctx.warn(f"iteration {i}: {failure}")
        if record.answer is None:
            ctx.warn(f"iteration {i}: the loop stopped because a reasoning/answer call failed")
        elif judged and record.quality is None:
            ctx.warn(f"iteration {i}: not judged (no readable ratings after one retry); it cannot end "
                     f"the loop and s stayed at {record.s:g}")
        for note in record.notes:
            if any(flag in note for flag in ("clipped", "empty", "ignored", "ambiguous")):
                ctx.warn(f"iteration {i}: {note}")

    def _final(self, answered: list[IterationRecord], ctx: RunContext) -> IterationRecord:
        """The iteration whose answer and chunks are returned."""
        judged = [r for r in answered if r.quality is not None]
        if self.final == "last" or not self.use_judge:
            return answered[-1]
        if not judged:
            ctx.warn("final='best' but no iteration was judged; the last answered iteration is returned")
            return answered[-1]
        return max(judged, key=lambda r: (r.quality, r.index))

    def _documents(self, records: list[IterationRecord], steps: list[_Step],
                   final: IterationRecord) -> tuple[ChosenDocument, ...]:
        """The final iteration's chunks, or the union of every iteration's (first use order)."""

        def of(rec: IterationRecord, step: _Step) -> tuple[ChosenDocument, ...]:
            reason = {"iteration": rec.index, "s": rec.s, "quality": rec.quality, "query": rec.query}
            return self.choose(step.found, step.local, scores=[rec.quality] * len(step.local),
                               reasons=[reason] * len(step.local))

        if self.return_documents == "final":
            return of(final, steps[final.index - 1])
        used: dict[str, list[int]] = {}
        docs: dict[str, ChosenDocument] = {}
        for rec, step in zip(records, steps, strict=True):
            for doc in of(rec, step):
                used.setdefault(doc.id, []).append(rec.index)
                docs.setdefault(doc.id, doc)
        return tuple(
            dataclasses.replace(doc, rank=rank, reason={**doc.reason, "iterations": used[doc.id]})
            for rank, doc in enumerate(docs.values())
        )
