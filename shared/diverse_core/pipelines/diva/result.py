"""The result of one DIVA run: the shared :class:`PipelineResult` plus DIVA's own decisions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contract import PipelineResult

__all__ = ["ROUTES", "DIVAResult"]

#: How the answer was written: ``"passages"`` (Useful / PartialUseful: extract the
#: question-answer pairs, then the long answer) or ``"closed_book"`` (Useless: the model's own
#: knowledge). ``None`` in a result means no answer was written (retrieval only).
ROUTES = ("passages", "closed_book")


@dataclass(frozen=True, kw_only=True)
class DIVAResult(PipelineResult):
    """Everything one DIVA run decided.

    Attributes:
        interpretations: the questions that drove retrieval (the LLM's pseudo-interpretations,
            the ones given to :meth:`DIVA.run`, or the original question alone as a fallback).
        interpretations_source: ``"generated"``, ``"given"`` or ``"fallback"`` (no interpretation
            could be read from the rewrite reply; ``warnings`` says so).
        ambiguity_reason / ambiguity_kinds: the reply of the ambiguity call (empty when the
            interpretations were given).
        search: ``"pool"`` (one first-stage pool for the question) or ``"source"`` (each
            interpretation searched the source itself).
        prune: the pruning rule (``"mean"`` is the paper's Eq. 5).
        hits: per interpretation, the ids of its top hits in rank order (Eq. 4).
        union: ids of every passage some interpretation retrieved, first-seen order.
        prune_scores: the pruning score (mean cosine to all interpretations) of each union member,
            by id.
        verdicts: per interpretation, the verifier's yes/no (``None``: unreadable reply or failed
            call, counted as yes and flagged); empty when verification did not run.
        usefulness: ``"Useful"``, ``"PartialUseful"``, ``"Useless"`` or ``None`` (not verified).
        route: ``"passages"``, ``"closed_book"`` or ``None`` (no answer written).
        qa_pairs: the extracted ``(interpretation, short answer)`` pairs (passages route).

    Example:
        >>> r = DIVAResult(question="q?", interpretations=("q1?", "q2?"), verdicts=(True, False),
        ...                usefulness="PartialUseful", route="passages")
        >>> r.summary()["usefulness"], r.to_dict()["route"]
        ('PartialUseful', 'passages')
    """

    pipeline: str = "diva"
    interpretations: tuple[str, ...] = ()
    interpretations_source: str = "generated"
    ambiguity_reason: str = ""
    ambiguity_kinds: tuple[str, ...] = ()
    search: str = "pool"
    prune: str = "mean"
    hits: tuple[tuple[str, ...], ...] = ()
    union: tuple[str, ...] = ()
    prune_scores: dict[str, float] | None = None
    verdicts: tuple[bool | None, ...] = ()
    usefulness: str | None = None
    route: str | None = None
    qa_pairs: tuple[tuple[str, str], ...] = ()

    def summary(self) -> dict[str, Any]:
        """What the faces and the harness report of a run besides the documents."""
        return {
            "interpretations": list(self.interpretations),
            "interpretations_source": self.interpretations_source,
            "ambiguity_kinds": list(self.ambiguity_kinds),
            "verdicts": list(self.verdicts),
            "usefulness": self.usefulness,
            "route": self.route,
            "hits": [list(h) for h in self.hits],
            "union_size": len(self.union),
        }
