"""DF-RAG for LangChain, declared on the generic pipeline face.

* :class:`DFRAGRetriever` - returns the chunks of the λ that DF-RAG's Evaluator chose.
* :meth:`DFRAGRetriever.as_chain` / :func:`create_dfrag_chain` - a Runnable
  ``question -> {answer, context, lambda, scores, plan, trace, warnings, cost, result}``.
* :class:`LangChainLLM` - any chat model / LLM as a core text backend (re-exported).
"""

from __future__ import annotations

from typing import Any

from diverse_core._lazy import deprecated_aliases, deprecated_method
from diverse_core.pipelines.dfrag import DFRAG
from langchain_core.runnables import Runnable

from .llm import LangChainLLM
from .pipeline_retriever import PipelineRetriever, create_pipeline_chain

__all__ = [
    "LangChainLLM",
    "DFRAGRetriever",
    "create_dfrag_chain",
    "DFRAG_LAMBDA",
    "DFRAG_LAMBDA_SCORES",
    "DFRAG_PLAN",
]

DFRAG_LAMBDA = "dfrag_lambda"
DFRAG_LAMBDA_SCORES = "dfrag_lambda_scores"
DFRAG_PLAN = "dfrag_plan"


class DFRAGRetriever(PipelineRetriever):
    """Retrieve ``fetch_k`` candidates, then return the ``k`` chunks of DF-RAG's chosen λ.

    The candidates' gMMR selections over the λ grid are scored by an LLM Evaluator against a
    Planner's plan (Khan et al. 2026, Sec. 3.4); the best λ (ties: upper median) decides the
    returned documents. Besides the shared metadata (see :class:`PipelineRetriever`; here
    ``selection_params`` holds ``lambda_mult``, ``lambda_source`` and ``k``), documents carry
    ``dfrag_lambda``, ``dfrag_lambda_scores`` and ``dfrag_plan``.

    Options (see :class:`~diverse_core.dfrag.DFRAG`): ``diversity`` (0..1, the shared knob: λ grid cut
    to values ≥ 1 − diversity), ``lambdas``, ``sampling``,
    ``incremental_context``, ``prompts``, ``score_from``, ``on_evaluator_error``, ``evaluator``
    (``"adaptive"``: λ chosen by the trained scorer, no LLM needed to retrieve), ``selector``.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
        >>> llm = FakeListLLM(responses=["1) find it"] + ["1. Score: 3\\nTotal Score: 3"] * 10)
        >>> docs = DFRAGRetriever(llm=llm, vectorstore=store, k=2, fetch_k=8).invoke("fact")
        >>> len(docs), docs[0].metadata["selection_method"]
        (2, 'dfrag')
    """

    pipeline_class = DFRAG
    document_fields = {DFRAG_LAMBDA: "lambda", DFRAG_LAMBDA_SCORES: "scores", DFRAG_PLAN: "plan"}
    chain_keys = ("lambda", "lambda_source", "scores", "plan")

    #: Old names of :meth:`run_pipeline` / :meth:`arun_pipeline` (each call warns).
    run_dfrag = deprecated_method("run_dfrag", "run_pipeline")
    arun_dfrag = deprecated_method("arun_dfrag", "arun_pipeline")


def create_dfrag_chain(retriever: DFRAGRetriever) -> Runnable[Any, dict[str, Any]]:
    """A Runnable that answers a question with DF-RAG end to end (see
    :func:`~langchain_diverse.pipeline_retriever.create_pipeline_chain`; adds ``lambda``,
    ``lambda_source``, ``scores`` and ``plan``)."""
    return create_pipeline_chain(retriever)


#: Old names kept as deprecated aliases (each access warns): ``DFRAG_SCORES`` ->
#: ``DFRAG_LAMBDA_SCORES`` (named like its key, as every other metadata key constant is).
__getattr__ = deprecated_aliases(__name__, globals(), {"DFRAG_SCORES": "DFRAG_LAMBDA_SCORES"})
