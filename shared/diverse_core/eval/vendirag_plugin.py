"""Vendi-RAG as a harness method (``--methods vendirag@llm=...@s_update=relative``), declared on
the generic pipeline plugin (:mod:`~diverse_core.eval.pipeline_plugin`).

Options: ``initial_s``, ``diversity`` (the shared knob: ``initial_s = diversity``), ``threshold``, ``max_iterations``, ``s_update``, ``final``, ``rewrite``,
``use_judge``, ``exclude_seen``, ``objective``, ``return_documents``, ``on_llm_error``,
``fetch_k``, ``max_concurrency``, ``timeout``, ``max_retries``, ``max_chunk_chars``; the harness
keys ``llm``, ``generate``, ``max_new_tokens``, ``max_tokens``.

Offline runs:

* ``llm=none`` - a labelled dry run (``dry_run: true`` in the per-query info): no LLM, the
  first iteration's retrieval only (VRS at ``initial_s``, or at ``s = diversity``, over the
  question's candidates).
* ``llm=simulated:SECONDS`` - a scripted stand-in that sleeps ``SECONDS`` per call, reasons and
  answers with fixed text, rates every answer from ``simulated_ratings`` (one rating per judge
  call of a question, the last one repeating; default ``6``: the loop never stops, the
  worst-case cost) and "rewrites" the query back to the question. It exercises the loop, the
  s updates and the cost; it says nothing about quality.

Example:
    >>> from diverse_core.eval import get_plugin
    >>> get_plugin("vendirag").name
    'vendirag'
"""

from __future__ import annotations

import re
import threading
from typing import Any

from ..api import select
from ..errors import InvalidParameterError
from ..llm import Completion
from ..pipelines import PipelineResult
from ..pipelines.vendirag import (
    JUDGE_KEYS,
    VENDIRAG_DIVERSITY,
    VendiPrompts,
    VendiRAG,
    VendiRAGResult,
)
from .pipeline_plugin import SimulatedEndpoint, coerce, declare_pipeline_method
from .plugins import MethodInput, MethodOutput

__all__ = ["vendirag_method", "SimulatedVendiEndpoint"]

#: The plugin's own keys (Vendi-RAG's declared options and the call policy come from ``VendiRAG.OPTIONS``).
_EXTRA = {"max_chunk_chars", "simulated_ratings"}

_QUESTION = re.compile(r"^(?:Original question|Question): (.*)$", re.MULTILINE)


class SimulatedVendiEndpoint(SimulatedEndpoint):
    """The harness's latency stand-in, speaking the Vendi-RAG prompts (see the module docstring).

    Example:
        >>> import asyncio
        >>> sim = SimulatedVendiEndpoint(0.0, ratings=(3, 9))
        >>> prompt = VendiPrompts().render_judge("Q?", "A", ["c"])
        >>> from diverse_core.pipelines.vendirag import read_judgement
        >>> [read_judgement(asyncio.run(sim.acomplete(prompt)).text).quality for _ in range(3)]
        [0.3, 0.9, 0.9]
    """

    def __init__(self, latency: float, ratings: tuple[float, ...] = (6,)) -> None:
        super().__init__(latency)
        self.ratings = ratings
        self._judged: dict[str, int] = {}
        self._lock = threading.Lock()

    async def acomplete(self, prompt: str, **kw: Any) -> Completion:
        await SimulatedEndpoint.acomplete(self, "")  # the latency
        tail = prompt.rstrip()
        found = _QUESTION.findall(prompt)
        question = found[0] if found else ""
        if tail.endswith("Ratings (JSON):"):
            with self._lock:
                n = self._judged[question] = self._judged.get(question, 0) + 1
            r = self.ratings[min(n, len(self.ratings)) - 1]
            return Completion("{" + ", ".join(f'"{key}": {r:g}' for key in JUDGE_KEYS) + "}")
        if tail.endswith("New query:"):
            return Completion(question or "query")
        if tail.endswith("Reasoning:"):
            return Completion("1) the passages name the entity\n2) it links to the answer")
        return Completion("answer")


def _ratings(value: Any) -> tuple[float, ...]:
    parts = str(value).replace("-", ",").split(",")
    try:
        out = tuple(float(p) for p in parts if p.strip())
    except ValueError:
        out = ()
    if not out:
        raise InvalidParameterError(f"simulated_ratings must be numbers like 3,6,9; got simulated_ratings={value!r}")
    return out


def _build(params: dict[str, Any], k: int) -> VendiRAG:
    ratings = _ratings(params.pop("simulated_ratings", 6))
    llm = params.pop("llm")
    if isinstance(llm, SimulatedEndpoint):
        llm = SimulatedVendiEndpoint(llm.latency, ratings)
    max_chars = params.pop("max_chunk_chars", None)
    prompts = VendiPrompts(max_chunk_chars=int(max_chars) if max_chars else None)
    return VendiRAG(llm, k=k, prompts=prompts, **params)


def _info(res: PipelineResult) -> dict[str, Any]:
    assert isinstance(res, VendiRAGResult)
    return {
        "s_trajectory": list(res.s_trajectory),
        "quality_trajectory": list(res.quality_trajectory),
        "n_iterations": res.n_iterations,
        "final_iteration": res.final_iteration,
        "stop_reason": res.stop_reason,
        "queries": list(res.queries),
        "iteration_units": [list(it.chunk_ids) for it in res.iterations],
        "vendi_scores": [it.vendi_score for it in res.iterations],
    }


def _dry_run(inp: MethodInput, params: dict[str, Any]) -> MethodOutput:
    given = coerce(params.get("initial_s"))
    s = float(VENDIRAG_DIVERSITY.resolve("vendirag", given, coerce(params.get("diversity"))))
    objective = str(params.get("objective", "paper"))
    sel = select("vendi", inp.query_embedding, inp.embeddings, inp.k, s=s, objective=objective)
    return MethodOutput(
        [int(i) for i in sel.indices],
        {"s": s, "dry_run": True,
         "warnings": ["dry run: no LLM was called; this is the first iteration's VRS set at initial_s"]},
    )


#: The harness plugin: the chunks of Vendi-RAG's final iteration for one question.
vendirag_method = declare_pipeline_method("vendirag", _build, options=_EXTRA, info=_info, dry_run=_dry_run,
                                          pipeline=VendiRAG)
