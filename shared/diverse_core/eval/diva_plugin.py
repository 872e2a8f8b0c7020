"""DIVA as a harness method (``--methods diva@llm=...@search=source``), declared on the generic
pipeline plugin (:mod:`~diverse_core.eval.pipeline_plugin`).

Options: ``fetch_k`` (first-stage pool; default the harness's ``--fetch-k``),
``per_interpretation_k``, ``max_interpretations``, ``search`` (``pool``/``source``), ``prune``
(``mean``/``max``/``round_robin``/``mmr``), ``mmr_lambda``, ``verify_in_retrieval``,
``on_verifier_error``, ``max_concurrency``, ``timeout``, ``max_retries``,
``max_passage_chars``, ``interpretations`` (only ``generated``, see below); the harness keys
``llm``, ``generate``, ``max_new_tokens``, ``max_tokens``.

Retrieval-only runs still call the LLM twice per question (the interpretations), so the method
needs an LLM even without ``@generate=true``; ``llm=none`` is refused (no dry run: DIVA without
interpretations is plain top-k). ``llm=simulated:SECONDS`` runs offline for latency and
call-count studies only: its replies carry no interpretation, so every question falls back to
the question alone (flagged in the per-query warnings).

Gold interpretations: the harness gives a method only the question and its candidates
(:class:`~diverse_core.eval.plugins.MethodInput` has no record metadata), so
``interpretations=gold`` cannot be served here; the gold-driven retrieval figures come from
``benchmarks/diva_retrieval.py`` (``DIVA.run(..., interpretations=...)`` in code).

Example:
    >>> from diverse_core.eval import get_plugin
    >>> get_plugin("diva").name
    'diva'
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParameterError
from ..pipelines import PipelineResult
from ..pipelines.diva import DIVA, DivaPrompts, DivaResult
from .pipeline_plugin import declare_pipeline_method

__all__ = ["diva_method"]

_OPTIONS = {"fetch_k", "per_interpretation_k", "max_interpretations", "search", "prune", "mmr_lambda",
            "verify_in_retrieval", "on_verifier_error", "max_concurrency", "timeout", "max_retries",
            "max_passage_chars", "interpretations"}


def _build(params: dict[str, Any], k: int) -> DIVA:
    params = dict(params)
    source = str(params.pop("interpretations", "generated"))
    if source != "generated":
        raise InvalidParameterError(
            f"diva: interpretations={source!r} is not available in the harness (a method sees no record "
            "metadata); only 'generated'. Gold-driven retrieval: benchmarks/diva_retrieval.py"
        )
    max_chars = params.pop("max_passage_chars", None)
    prompts = DivaPrompts(max_passage_chars=int(max_chars) if max_chars else None)
    return DIVA(params.pop("llm"), k=k, prompts=prompts, **params)


def _info(res: PipelineResult) -> dict[str, Any]:
    assert isinstance(res, DivaResult)
    return res.summary()


#: The harness plugin: DIVA's pruned, diversified passages for one question (and its answer
#: with ``@generate=true``).
diva_method = declare_pipeline_method("diva", _build, options=_OPTIONS, info=_info)
