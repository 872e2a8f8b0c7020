"""The contract every LLM pipeline stands on: candidate sources, one result type, one cost record.

A pipeline searches a :class:`CandidateSource` as often as its algorithm needs, calls its LLM roles
through a :class:`~diverse_core.pipelines.roles.RunContext` and returns a :class:`PipelineResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, EmptyCandidatesError

__all__ = [
    "Candidates",
    "CandidateSource",
    "ChosenDocument",
    "TraceEvent",
    "PipelineCost",
    "PipelineResult",
]


@dataclass(frozen=True, eq=False)
class Candidates:
    """What one search of a :class:`CandidateSource` returned, best first.

    Attributes:
        query: the query text that was searched.
        texts: the candidates' texts (what an LLM reads).
        ids: stable ids, one per candidate (the store's id, or a content hash).
        embeddings: shape (n, d), one row per candidate (float32 or float64, as given).
        query_embedding: shape (d,), the searched text's embedding.
        relevance: shape (n,), cosine similarity of each candidate to the query.
        payloads: the framework's own object per candidate (a LangChain ``Document``, a
            LlamaIndex ``NodeWithScore``, built when first read) or ``None``.
        positions: each candidate's position in the source's own collection, when it has a
            fixed order (in-memory sources, the benchmark corpus); else ``None``.
        notes: what the source left out or flagged (e.g. blank documents); each one becomes a
            warning of the run that searched.

    Example:
        >>> import numpy as np
        >>> c = Candidates.build("q", ["a", "b"], ["1", "2"], np.eye(2), np.array([1.0, 0.0]))
        >>> c.relevance.tolist(), len(c)
        ([1.0, 0.0], 2)
    """

    query: str
    texts: tuple[str, ...]
    ids: tuple[str, ...]
    embeddings: NDArray[Any]
    query_embedding: NDArray[Any]
    relevance: NDArray[np.float64]
    payloads: Sequence[Any] = ()
    positions: tuple[int, ...] | None = None
    notes: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        query: str,
        texts: Sequence[str],
        ids: Sequence[str],
        embeddings: Any,
        query_embedding: Any,
        *,
        payloads: Sequence[Any] | None = None,
        positions: Sequence[int] | None = None,
    ) -> Candidates:
        """Check shapes, compute the cosine relevance and freeze the lists.

        Raises:
            EmptyCandidatesError: no candidates.
            DimensionMismatchError: lengths or dimensions disagree.
        """
        emb = _floating(embeddings)
        q = _floating(query_embedding).reshape(-1)
        n = len(texts)
        if n == 0:
            raise EmptyCandidatesError(f"no candidates were found for query={query!r}")
        if emb.ndim != 2 or emb.shape[0] != n:
            raise DimensionMismatchError(
                f"embeddings must have one row per text: got shape {emb.shape} for {n} texts"
            )
        if emb.shape[1] != q.shape[0]:
            raise DimensionMismatchError(
                f"query_embedding has dimension {q.shape[0]} but candidate embeddings have {emb.shape[1]}"
            )
        for name, seq in (("ids", ids), ("payloads", payloads), ("positions", positions)):
            if seq is not None and len(seq) != n:
                raise DimensionMismatchError(f"{name} has {len(seq)} entries for {n} texts")
        emb64, q64 = emb.astype(np.float64), q.astype(np.float64)  # (one copy each)
        norms = np.linalg.norm(emb64, axis=1) * float(np.linalg.norm(q64))
        dots = emb64 @ q64
        relevance = np.divide(dots, norms, out=np.zeros(n), where=norms > 0)
        return cls(
            query=query,
            texts=tuple(texts),
            ids=tuple(str(i) for i in ids),
            embeddings=emb,
            query_embedding=q,
            relevance=relevance,
            payloads=tuple(payloads) if payloads is not None else (None,) * n,
            positions=tuple(int(p) for p in positions) if positions is not None else None,
        )

    @classmethod
    def union(cls, query: str, founds: Sequence[Candidates], query_embedding: Any) -> Candidates:
        """Every candidate of ``founds`` once (by id, in first-seen order), with its relevance to
        ``query_embedding``; positions only when every one has its position.

        Example:
            >>> import numpy as np
            >>> a = Candidates.build("q", ["x", "y"], ["1", "2"], np.eye(2), np.array([1.0, 0.0]))
            >>> Candidates.union("q", [a, a.take([1])], np.array([0.0, 1.0])).relevance.tolist()
            [0.0, 1.0]
        """
        first: dict[str, tuple[Candidates, int]] = {}
        for found in founds:
            for i, cid in enumerate(found.ids):
                first.setdefault(cid, (found, i))
        where = list(first.values())
        positions = [f.positions[i] for f, i in where if f.positions is not None]
        return cls.build(
            query, [f.texts[i] for f, i in where], list(first), np.vstack([f.embeddings[i] for f, i in where]),
            query_embedding, payloads=[f.payloads[i] for f, i in where],
            positions=positions if len(positions) == len(where) else None,
        )

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, order: Sequence[int]) -> Candidates:
        """The candidates at ``order`` (local indices), in that order."""
        idx = [int(i) for i in order]
        return Candidates(
            query=self.query,
            texts=tuple(self.texts[i] for i in idx),
            ids=tuple(self.ids[i] for i in idx),
            embeddings=self.embeddings[idx],
            query_embedding=self.query_embedding,
            relevance=self.relevance[idx],
            payloads=tuple(self.payloads[i] for i in idx),
            positions=None if self.positions is None else tuple(self.positions[i] for i in idx),
        )


@runtime_checkable
class CandidateSource(Protocol):
    """Where a pipeline's candidates come from: searchable by text (``k=None``: the source's
    default pool size), and an embedder of texts into the same space, sync and async."""

    def search(self, query: str, k: int | None = None) -> Candidates:
        """The ``k`` candidates most relevant to ``query``, best first."""
        ...

    async def asearch(self, query: str, k: int | None = None) -> Candidates:
        """Asynchronous :meth:`search`."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embeddings of ``texts`` as queries, shape (len(texts), d)."""
        ...

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Asynchronous :meth:`embed`."""
        ...


@dataclass(frozen=True)
class ChosenDocument:
    """One document a pipeline chose, with why.

    Attributes:
        id: the candidate's stable id.
        text: its text.
        rank: position in the pipeline's output (0 = first).
        relevance: cosine similarity to the question (or to the query that found it).
        score: the pipeline's own score for it or its set (``None`` when it has none).
        reason: JSON-friendly, pipeline-specific facts: e.g. ``{"lambda_mult": 0.6}`` for
            DF-RAG, ``{"stage": 2, "via": "doc-3", "probability": 0.91}`` for DR-RAG.
        payload: the framework object it came from (``None`` in the core).
        position: its position in the source's collection, when the source has one.
    """

    id: str
    text: str
    rank: int
    relevance: float
    score: float | None = None
    reason: Mapping[str, Any] = field(default_factory=dict)
    payload: Any = None
    position: int | None = None


@dataclass(frozen=True)
class TraceEvent:
    """One step of a run: an LLM call (``role`` set) or a pipeline stage (``role`` is ``None``).

    Attributes:
        stage: what the step was for (``"plan"``, ``"evaluate"``, ``"search"``, ...).
        role: the LLM role called, or ``None`` for a non-LLM stage.
        prompt: the prompt sent (LLM calls).
        reply: the raw reply (``None`` when the call failed).
        parsed: the values read from the reply, or the stage's data.
        error: the error after the retries, if the call failed.
        notes: what was repaired or flagged (clipped scores, parse fallbacks, ...).
        attempts: backend invocations this call took (1 = no retry).
        seconds: wall seconds of the call or stage.
        path: LLM calls: ``"structured"`` (a schema-constrained reply) or ``"text"`` (the text
            prompt and parser); ``None`` for stages.
        method: LLM calls: ``"json_schema"``, ``"tool_calling"``, ``"json_object"`` or ``"text"``.
    """

    stage: str
    role: str | None = None
    prompt: str | None = None
    reply: str | None = None
    parsed: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    notes: tuple[str, ...] = ()
    attempts: int = 0
    seconds: float = 0.0
    path: str | None = None
    method: str | None = None


@dataclass(frozen=True)
class PipelineCost:
    """What one run cost.

    Attributes:
        calls: successful LLM calls per role (every role of the pipeline listed).
        attempts: backend invocations in total (retries and failed calls included).
        failed_calls: calls that raised after their retries.
        retries: extra attempts after transient errors (of successful and failed calls).
        prompt_tokens / completion_tokens: summed where the backend reports them.
        llm_seconds: summed latency of the successful calls.
        wall_time: seconds from start to result.
        searches: searches of the candidate source.
        structured_calls: successful calls that took the structured path.
        text_calls: successful calls that took the text path (prompt + text parser).
        fallbacks: text calls meant to be structured that the backend refused.

    Example:
        >>> c = PipelineCost(calls={"planner": 1, "evaluator": 4})
        >>> c.llm_calls, c.evaluator_calls, c.to_dict()["planner_calls"]
        (5, 4, 1)
    """

    calls: Mapping[str, int] = field(default_factory=dict)
    attempts: int = 0
    failed_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0
    wall_time: float = 0.0
    searches: int = 0
    structured_calls: int = 0
    text_calls: int = 0
    fallbacks: int = 0

    @property
    def llm_calls(self) -> int:
        """Successful LLM calls over every role."""
        return int(sum(self.calls.values()))

    def __getattr__(self, name: str) -> int:
        calls = self.__dict__.get("calls", {})
        if name.endswith("_calls") and name[: -len("_calls")] in calls:
            return int(calls[name[: -len("_calls")]])
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        """A flat JSON-friendly dict (``llm_calls`` and ``<role>_calls`` included)."""
        out = asdict(self)
        out["calls"] = dict(self.calls)
        out["llm_calls"] = self.llm_calls
        out.update({f"{role}_calls": n for role, n in self.calls.items()})
        return out


@dataclass(frozen=True, kw_only=True)
class PipelineResult:
    """Everything one pipeline run decided; pipelines subclass it to add their own fields.

    Attributes:
        pipeline: the pipeline's name (``"dfrag"``, ``"drrag"``, ...).
        question: the question.
        answer: the generated answer (``None`` for retrieval-only runs).
        documents: the chosen documents in order, each with why it was chosen.
        trace: every stage and LLM call, in order.
        warnings: everything that fell back or failed and was not raised (never silent).
        cost: a :class:`PipelineCost`.

    Example:
        >>> r = PipelineResult(pipeline="toy", question="q?", answer="a")
        >>> r.to_dict()["pipeline"], r.ok
        ('toy', True)
    """

    pipeline: str
    question: str
    answer: str | None = None
    documents: tuple[ChosenDocument, ...] = ()
    trace: tuple[TraceEvent, ...] = ()
    warnings: tuple[str, ...] = ()
    cost: PipelineCost = field(default_factory=PipelineCost)

    @property
    def ok(self) -> bool:
        """``True`` when nothing fell back (``warnings`` is empty)."""
        return not self.warnings

    def llm_calls(self, role: str | None = None) -> tuple[TraceEvent, ...]:
        """The trace's LLM calls (of one role, when given)."""
        return tuple(e for e in self.trace if e.role is not None and (role is None or e.role == role))

    def summary(self) -> dict[str, Any]:
        """What the faces and the harness report of a run besides the documents (here nothing)."""
        return {}

    def fields(self, names: Sequence[str]) -> dict[str, Any]:
        """The run's ``names`` for a face's output: each from :meth:`summary`, else the result's
        attribute of that name made JSON-friendly (tuples as lists).

        Example:
            >>> PipelineResult(pipeline="toy", question="q?", warnings=("w",)).fields(["warnings"])
            {'warnings': ['w']}
        """
        summary = self.summary() if names else {}
        return {name: summary[name] if name in summary else _jsonable(getattr(self, name)) for name in names}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (payloads dropped)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "documents":
                value = [{k: v for k, v in asdict(d).items() if k != "payload"} for d in self.documents]
            elif name == "trace":
                value = [asdict(e) for e in self.trace]
            elif name == "cost":
                value = self.cost.to_dict()
            else:
                value = _jsonable(value)
            out[name] = value
        return out


def _floating(values: Any) -> NDArray[Any]:
    """float32 / float64 arrays as they are; anything else as float64."""
    arr = np.asarray(values)
    if arr.dtype in (np.float32, np.float64):
        return arr
    return np.asarray(arr, dtype=np.float64)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return _jsonable(asdict(value))
    if isinstance(value, dict):
        return {(f"{k:g}" if isinstance(k, float) else k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
