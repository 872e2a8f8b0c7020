"""DIVA as a harness method (``--methods diva@llm=...@search=source``), declared on the generic
pipeline plugin (:mod:`~diverse_core.eval.pipeline_plugin`).

Options: ``fetch_k`` (first-stage pool; default the harness's ``--fetch-k``),
``per_interpretation_k``, ``max_interpretations``, ``search`` (``pool``/``source``), ``prune``
(``mean``/``max``/``round_robin``/``mmr``), ``mmr_lambda``, ``diversity`` (the shared knob: prune
with MMR at ``mmr_lambda = 1 - diversity``), ``verify_in_retrieval``,
``on_verifier_error``, ``max_concurrency``, ``timeout``, ``max_retries``,
``max_passage_chars``, ``interpretations`` (``generated``, or ``gold``: see below); the harness keys
``llm``, ``generate``, ``max_new_tokens``, ``max_tokens``.

Retrieval-only runs still call the LLM twice per question (the interpretations), so the method
needs an LLM even without ``@generate=true``; ``llm=none`` is refused (no dry run: DIVA without
interpretations is plain top-k). ``llm=simulated:SECONDS`` runs offline for latency and
call-count studies only: its replies carry no interpretation, so every question falls back to
the question alone (flagged in the per-query warnings).

Gold interpretations: ``interpretations=gold`` drives DIVA with the record's own disambiguated
questions (``meta["interpretations"]``: ASQA's ``qa_pairs``, CondAmbigQA joined to them) instead
of generated ones; retrieval-only runs then need no LLM at all (``diva@interpretations=gold``),
which measures DIVA's retrieval the way ``benchmarks/diva_retrieval.py`` does, through the
pipeline.

Example:
    >>> from diverse_core.eval import get_plugin
    >>> get_plugin("diva").name
    'diva'
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParameterError
from ..pipelines.diva import DIVA, DivaPrompts
from .pipeline_plugin import declare_pipeline_method
from .plugins import MethodInput

__all__ = ["diva_method"]

#: The plugin's own keys (DIVA's declared options and the call policy come from ``DIVA.OPTIONS``).
_EXTRA = {"max_passage_chars", "interpretations"}


def _interpretation_source(params: dict[str, Any]) -> str:
    source = str(params.get("interpretations", "generated"))
    if source not in {"generated", "gold"}:
        raise InvalidParameterError(f"diva: interpretations must be 'generated' or 'gold'; got interpretations={source!r}")
    return source


def _build(params: dict[str, Any], k: int) -> DIVA:
    _interpretation_source(params)
    params.pop("interpretations", None)
    max_chars = params.pop("max_passage_chars", None)
    prompts = DivaPrompts(max_passage_chars=int(max_chars) if max_chars else None)
    return DIVA(params.pop("llm", None), k=k, prompts=prompts, **params)


def _run_kwargs(inp: MethodInput, params: dict[str, Any]) -> dict[str, Any]:
    if _interpretation_source(params) != "gold":
        return {}
    gold = inp.meta.get("interpretations")
    if not gold:
        raise InvalidParameterError(
            f"diva: interpretations=gold needs the record's meta['interpretations'] (ASQA, CondAmbigQA); "
            f"question {inp.qid!r} has none"
        )
    return {"interpretations": [str(q) for q in gold]}


#: The harness plugin: DIVA's pruned, diversified passages for one question (and its answer
#: with ``@generate=true``).
diva_method = declare_pipeline_method(
    "diva", _build, options=_EXTRA, run_kwargs=_run_kwargs, pipeline=DIVA,
    needs_llm=lambda params: _interpretation_source(params) != "gold",
)
