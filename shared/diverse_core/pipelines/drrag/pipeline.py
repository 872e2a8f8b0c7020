"""The DR-RAG pipeline (Hei et al., arXiv:2406.07348) on the shared contract: stage-1 retrieval, query-document
concatenation (QDC) searches, classifier selection (CFS / CIS), one Generator call."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidParameterError
from ...llm.structured import RoleRequest, passage_blocks
from ...validation import check_k, check_unit_interval
from ..base import Pipeline, off_loop
from ..contract import Candidates, CandidateSource, PipelineResult
from ..diversity import PipelineDiversity
from ..face_fields import FaceFields
from ..options import Option, check_choice
from ..roles import CallPolicy, RunContext
from ..structured import ANSWER_SCHEMA, DATA_NOTE, role_request
from .classifier import PairClassifier, PairFn, default_classifier, make_scorer
from .features import split_title
from .select import CIS_RULES, MODES, PER_DOC, DrragSelection, default_k1, select_drrag

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DRRAG", "DRRAG_DIVERSITY", "DRRAGResult", "concat_query", "GENERATOR_TEMPLATE", "GENERATOR_SYSTEM", "UNTITLED_WARNING"]

#: The Generator's prompt (our wording): answer from the passages, briefly.
GENERATOR_TEMPLATE = """Use the passages to answer the question. Several passages may each hold one part of the answer: connect them. Reply with the answer only, in a few words.

Passages:
{passages}

Question: {question}
Answer:"""

#: The Generator's instructions on the structured path (reply schema: ``{"answer": ...}``).
GENERATOR_SYSTEM = """Use the passages to answer the question. Several passages may each hold one part of the answer: connect them. Put the answer only, in a few words, in the "answer" field of a JSON object.
""" + DATA_NOTE


def concat_query(question: str, document: str) -> str:
    """The text of a stage-2 search: the question followed by a stage-1 document (QDC)."""
    return f"{question} {document}"


@dataclass(frozen=True, kw_only=True)
class DRRAGResult(PipelineResult):
    """A DR-RAG run: the shared result plus the selection's details.

    Attributes:
        mode: ``"qdc"``, ``"cfs"`` or ``"cis"``.
        k1: stage-1 documents used.
        stage2_queries: the concatenated search texts, one per stage-1 document.
        rejected: ids the classifier examined and never accepted.
        pairs_scored: classifier calls (pairs) made.
        notes: advice about the input that is no failure (passages without titles for the
            shipped classifier: a normal input, which costs recall); unlike ``warnings`` they
            leave ``ok`` true, so ``ok`` stays a health signal.
    """

    pipeline: str = "drrag"
    mode: str = "cfs"
    k1: int = 0
    stage2_queries: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    pairs_scored: int = 0
    notes: tuple[str, ...] = ()


#: The warning of a CFS/CIS run whose passages carry no title for the shipped classifier to read.
UNTITLED_WARNING = (
    "drrag: none of the {n} candidate passages has a title (\"title: text\"); the shipped pair "
    "classifier compares one passage's title with the other passage and accepts few pairs without "
    "titles: give titled passages or your own classifier="
)


def _load_classifier(text: str) -> PairClassifier | None:
    """The harness's ``@classifier=PATH``: a saved :class:`PairClassifier` (``none``: the shipped one)."""
    return None if text.lower() == "none" else PairClassifier.load(text)


#: DR-RAG takes no ``diversity``: it has no relevance/diversity trade-off to set.
DRRAG_DIVERSITY = PipelineDiversity(
    None,
    reason="DR-RAG has no relevance/diversity trade-off; its second stage adds the documents that "
    "the question joined with a first-stage document retrieves, kept by a pair classifier (k1 sets "
    "how many documents come from the question's own ranking, mode how the others are chosen)",
)

#: DR-RAG's own options (see :class:`DRRAG`).
DRRAG_OPTIONS: tuple[Option, ...] = (
    Option("k1", None, "stage-1 documents (default ceil(k / 2))", int | None, bounds="1 <= k1 <= k"),
    Option("m", 5, "hits examined per concatenated search", int, bounds=">= 1"),
    Option("mode", "cfs", "what comes back: the paper's CFS, CIS or plain QDC", str, choices=MODES),
    Option("classifier", None, "a PairClassifier or (question, doc_a, doc_b) -> probability; "
           "harness: a saved classifier's path", Any, parse=_load_classifier),
    Option("threshold", None, "accept a pair at this probability (default: the classifier's own)",
           float | None, bounds="[0, 1]"),
    Option("fill", False, "top the result up to k from the question's ranking", bool),
    Option("per_doc", "first", "which accepted hits of one stage-1 document count", str, choices=PER_DOC),
    Option("cis_rule", "stage1", "what a CIS candidate is paired with", str, choices=CIS_RULES),
    Option("protect_stage1", True, "never drop a stage-1 document", bool),
    Option("fetch_k", None, "stage-1 search size (the source's default when None)", int | None,
           bounds=">= k", faces=False),
    Option("prompt", GENERATOR_TEMPLATE, "the Generator's template ({passages}, {question})", str,
           harness=False),
    DRRAG_DIVERSITY.option(),
)


class DRRAG(Pipeline[DRRAGResult]):
    """DR-RAG: find the documents a question alone does not retrieve, with one LLM call.

    Stage 1 takes the ``k1`` documents most similar to the question; stage 2 searches again with
    the question followed by each stage-1 document and examines each search's first ``m`` new
    hits; ``mode`` decides what comes back (see :func:`~diverse_core.pipelines.drrag.select_drrag`).
    A Generator answers from the chosen documents (``generate=False``: no LLM call at all).

    Args:
        llm: the Generator's model (``None`` for retrieval only).
        k: documents to return (CFS/CIS may return fewer unless ``fill=True``).
        k1: stage-1 documents (default ``ceil(k / 2)``).
        m: hits examined per concatenated search.
        mode: ``"cfs"`` (default, the paper's final method), ``"cis"`` or ``"qdc"``.
        classifier: a :class:`PairClassifier` (default: the shipped one, trained on MiniLM
            features of TRAIN questions only) or any ``(question, doc_a, doc_b) -> probability``
            callable. The shipped one compares one passage's title (the text before the first
            ``": "``) with the other passage: without titles it accepts few pairs, which the
            run says in ``result.notes`` (not a warning: ``ok`` stays true).
        threshold: accept a pair at this probability (default: the classifier's own threshold,
            chosen on held-out TRAIN pairs; 0.5 for a callable).
        fill: top the result up to ``k`` from the question's ranking (ours, not the paper's).
        per_doc / cis_rule / protect_stage1: the paper's ambiguous readings (see ``select_drrag``).
        fetch_k: stage-1 search size (the source's default when ``None``; at least ``k``).
        prompt: the Generator's template (``{passages}``, ``{question}``).
        diversity: the shared knob, accepted only as ``None`` (DR-RAG has no relevance/diversity
            trade-off; any value raises ``InvalidParameterError`` saying so).

    Example:
        >>> from diverse_core.pipelines import InMemorySource
        >>> src = InMemorySource(["Ann wrote Tales.", "Tales is a book.", "Bo lives in Oslo."],
        ...                      embedder=lambda ts: [[t.count("Ann"), t.count("Tales"), 1.0] for t in ts])
        >>> res = DRRAG(k=2, mode="qdc").run("Who wrote Tales?", src, generate=False)
        >>> [d.reason["stage"] for d in res.documents]
        [1, 2]
    """

    name = "drrag"
    roles = ("generator",)
    OPTIONS = DRRAG_OPTIONS
    requires_llm = False
    FACE = FaceFields(reports=("mode", "stage2_queries", "rejected"), retrieval_llm=lambda options: False)

    def __init__(
        self,
        llm: object = None,
        *,
        k: int = 4,
        k1: int | None = None,
        m: int = 5,
        mode: str = "cfs",
        classifier: PairClassifier | PairFn | None = None,
        threshold: float | None = None,
        fill: bool = False,
        per_doc: str = "first",
        cis_rule: str = "stage1",
        protect_stage1: bool = True,
        fetch_k: int | None = None,
        prompt: str = GENERATOR_TEMPLATE,
        diversity: float | None = None,
        **policy: Unpack[CallPolicy],
    ) -> None:
        DRRAG_DIVERSITY.resolve("DRRAG", None, diversity)  # refuses every value but None
        super().__init__(llm, k=k, fetch_k=fetch_k, **policy)
        self.mode = check_choice(mode, "mode", MODES)
        self.per_doc = check_choice(per_doc, "per_doc", PER_DOC)
        self.cis_rule = check_choice(cis_rule, "cis_rule", CIS_RULES)
        self.k1 = None if k1 is None else check_k(k1, "k1")
        if self.k1 is not None and self.k1 > self.k:
            raise InvalidParameterError(f"k1 must be <= k={self.k}; got k1={k1!r}")
        self.m = check_k(m, "m")
        self.threshold = None if threshold is None else check_unit_interval(threshold, "threshold")
        if classifier is not None and not callable(classifier):
            raise InvalidParameterError(f"classifier must be a PairClassifier or a callable; got {classifier!r}")
        self.classifier = classifier
        self.fill = bool(fill)
        self.protect_stage1 = bool(protect_stage1)
        self.prompt = prompt

    # ------------------------------------------------------------------ prompts
    def prompt_templates(self) -> dict[str, str]:
        """The Generator's template."""
        return {"generator": self.prompt}

    def _set_prompt_templates(self, templates: dict[str, str]) -> None:
        self.prompt = templates.get("generator", self.prompt)

    def render(self, question: str, texts: Sequence[str]) -> str:
        """The Generator prompt for the chosen passages."""
        passages = "\n".join(f"[{i + 1}] {t}" for i, t in enumerate(texts))
        return self.prompt.format(passages=passages, question=question.strip())

    def request(self, question: str, texts: Sequence[str]) -> RoleRequest:
        """The Generator's request: chat messages with the passages as numbered data blocks and
        the ``{"answer": ...}`` schema; a replaced ``prompt`` template keeps the text path."""
        user = f"Passages:\n{passage_blocks(texts)}\n\nQuestion: {question.strip()}"
        schema = ANSWER_SCHEMA if self.prompt == GENERATOR_TEMPLATE else None
        return role_request("generator", GENERATOR_SYSTEM, user, schema, self.render(question, texts), texts)

    def answer_prompt(self, result: PipelineResult) -> tuple[str, str] | None:
        """The Generator's prompt for a retrieval-only result (for streaming faces)."""
        return "generator", self.render(result.question, [d.text for d in result.documents])

    # ------------------------------------------------------------------ the algorithm
    def _select(self, question: str, first: Candidates, hits: Sequence[Candidates], k: int, k1: int
                ) -> tuple[DrragSelection[int], Candidates, int]:
        """Pool every candidate once (by id), then run the selection over pool indices."""
        pool = Candidates.union(question, (first, *hits), first.query_embedding)
        index = {cid: i for i, cid in enumerate(pool.ids)}
        calls = {"pairs": 0}
        scorer = None
        clf = None if self.mode == "qdc" else self.classifier if self.classifier is not None else default_classifier()
        if clf is not None:
            q = np.asarray(first.query_embedding, dtype=np.float64)
            base = make_scorer(clf, question, pool.texts, q, np.asarray(pool.embeddings, dtype=np.float64))

            def scorer(a: Sequence[int], b: Sequence[int]) -> Any:
                calls["pairs"] += len(a)
                return base(a, b)

        threshold = self.threshold if self.threshold is not None else float(getattr(clf, "threshold", 0.5))
        selection = select_drrag(
            [index[c] for c in first.ids],
            [[index[c] for c in h.ids] for h in hits],
            k,
            mode=self.mode, k1=k1, m=self.m, scorer=scorer, threshold=threshold, fill=self.fill,
            per_doc=self.per_doc, cis_rule=self.cis_rule, protect_stage1=self.protect_stage1,
        )
        return selection, pool, calls["pairs"]

    async def _arun(  # type: ignore[override]  # per-run options: checked by Pipeline.arun
        self, question: str, source: CandidateSource, ctx: RunContext, *, k: int, generate: bool
    ) -> DRRAGResult:
        k1 = min(self.k1 if self.k1 is not None else default_k1(k), k)
        first = await self.search(ctx, source, question, self.fetch_k if self.fetch_k else max(k, self.m + k))
        stage1 = first.texts[:k1]
        queries = [concat_query(question, text) for text in stage1]
        hits = await asyncio.gather(
            *(self.search(ctx, source, qtext, self.m + k, stage="search-qdc") for qtext in queries)
        )
        selection, pool, pairs = await off_loop(self._select, question, first, hits, k, k1)
        ids = pool.ids
        ctx.stage("select", mode=self.mode, k1=k1, chosen=[ids[i] for i in selection.ids],
                  rejected=[ids[i] for i in selection.rejected], pairs_scored=pairs)
        if self.mode != "qdc" and len(selection) < k and not self.fill:
            ctx.stage("note", message=f"{self.mode} returned {len(selection)} of k={k} documents (fill=False)")
        notes: tuple[str, ...] = ()
        if self.mode != "qdc" and self.classifier is None and not any(split_title(t)[0] for t in pool.texts):
            notes = (UNTITLED_WARNING.format(n=len(pool)),)
            ctx.stage("note", message=notes[0])
        picks = selection.picks
        reasons = [{"stage": p.stage, "via": None if p.source is None else ids[p.source],
                    "probability": p.probability, "mode": p.mode, "filled": p.filled} for p in picks]
        documents = self.choose(pool, [p.doc_id for p in picks], scores=[p.probability for p in picks],
                                reasons=reasons)
        answer = await self.answer(ctx, self.request(question, [d.text for d in documents])) if generate else None
        return DRRAGResult(
            question=question,
            answer=answer,
            documents=documents,
            mode=self.mode,
            k1=k1,
            stage2_queries=tuple(queries),
            rejected=tuple(ids[i] for i in selection.rejected),
            pairs_scored=pairs,
            notes=notes,
            **self.finish(ctx),
        )
