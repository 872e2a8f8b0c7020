"""DF-RAG as a harness method (``--methods dfrag@llm=...@sampling=binary``), declared on the
generic pipeline plugin (:mod:`~diverse_core.eval.pipeline_plugin`), plus its measurements.

Options: ``sampling`` (``uniform``/``binary``), ``max_concurrency``, ``incremental_context``,
``score_from``, ``timeout``, ``max_retries``, ``zero_shot`` (drop the evaluator's examples),
``max_passage_chars``, ``lambdas``, ``diversity`` (the shared knob: the Evaluator chooses among
the grid's λ >= 1 - diversity), ``evaluator`` (``adaptive``: the LLM-free trained scorer chooses λ, no LLM
needed to retrieve); the harness keys ``llm``, ``generate``, ``max_new_tokens``, ``max_tokens``.
``llm=none`` is an explicit, labelled dry run (``dry_run: true`` in the per-query info): no
LLM, the upper-median λ's set, i.e. what an all-tied evaluation picks (over ``lambdas``, or the
part of the grid that ``diversity`` leaves). Without ``@llm=`` the
method uses ``auto`` and fails with a one-line error when no LLM is available.

One command benchmarks any OpenAI-compatible endpoint against cosine, fixed-λ gMMR and
the Oracle (which the harness adds when the gMMR grid covers 0.1..1.0)::

    DIVERSE_RAG_LLM_MODEL=qwen2.5-7b-instruct OPENAI_BASE_URL=http://localhost:8000/v1 \\
    OPENAI_API_KEY=EMPTY diverse-rag bench --datasets hotpotqa:chunks musique:chunks \\
        2wiki:chunks --methods cosine gmmr=0.1:1:0.1 dfrag --quick 30 --out /tmp/dfrag

Measurements of the pipeline through this plugin: ``examples/dfrag_measure.py``.
"""

from __future__ import annotations

from typing import Any

from ..pipelines.dfrag import (
    DFRAG,
    DFRAG_DIVERSITY,
    PromptSet,
    check_lambdas,
    sweep_candidate_sets,
)
from ..tuning import upper_median
from .pipeline_plugin import SimulatedEndpoint, coerce, declare_pipeline_method, resolve_llm
from .plugins import MethodInput, MethodOutput

__all__ = ["dfrag_method", "resolve_llm", "SimulatedEndpoint"]

#: The plugin's own keys (DF-RAG's declared options and the call policy come from ``DFRAG.OPTIONS``).
_EXTRA = {"zero_shot", "max_passage_chars"}


def _build(params: dict[str, Any], k: int) -> DFRAG:
    zero_shot = params.pop("zero_shot", False) is True
    max_chars = params.pop("max_passage_chars", None)
    prompts = PromptSet(
        evaluator_examples="" if zero_shot else PromptSet().evaluator_examples,
        max_passage_chars=int(max_chars) if max_chars else None,
    )
    return DFRAG(params.pop("llm", None), k=k, prompts=prompts, **params)


def _dry_grid(params: dict[str, Any]) -> tuple[float, ...]:
    """The λ grid a run with these (text) options would sweep: ``lambdas``, or what ``diversity``
    leaves of the default grid (the pipeline's own rule, :data:`DFRAG_DIVERSITY`)."""
    raw = params.get("lambdas")
    parse = next(o.parse for o in DFRAG.OPTIONS if o.name == "lambdas")
    given = None if raw is None else check_lambdas(parse(raw) if isinstance(raw, str) and parse else raw)
    return tuple(DFRAG_DIVERSITY.resolve("dfrag", given, coerce(params.get("diversity"))))


def _dry_run(inp: MethodInput, params: dict[str, Any]) -> MethodOutput:
    grid = _dry_grid(params)
    groups = sweep_candidate_sets(inp.query_embedding, inp.embeddings, inp.k, grid)
    lam = upper_median(grid)
    return MethodOutput(
        [int(i) for i in groups.indices[grid.index(lam)]],
        {"lambda": lam, "n_distinct_sets": len(groups.groups), "dry_run": True,
         "warnings": ["dry run: no LLM was called; this is the upper-median lambda's gMMR set"]},
    )


#: The harness plugin: DF-RAG's chosen chunk set for one question.
dfrag_method = declare_pipeline_method(
    "dfrag", _build, options=_EXTRA, dry_run=_dry_run, pipeline=DFRAG,
    needs_llm=lambda params: params.get("evaluator", "llm") != "adaptive",
)
