"""DF-RAG for LlamaIndex, declared on the generic pipeline faces.

* :class:`DFRAGRetriever` - the nodes of the λ that DF-RAG's Evaluator chose.
* :class:`DFRAGQueryEngine` - ``Response.source_nodes`` are the chosen chunks and
  ``metadata`` holds λ*, the score per λ, the plan, warnings, cost and trace.
* :class:`LlamaIndexLLM` - any LlamaIndex ``LLM`` as a core text backend (re-exported).
"""

from __future__ import annotations

from typing import Any

from diverse_core._lazy import deprecated_method
from diverse_core.pipelines.dfrag import DFRAG

from .llm import LlamaIndexLLM
from .pipeline_engine import PipelineQueryEngine, PipelineRetriever

__all__ = ["LlamaIndexLLM", "DFRAGRetriever", "DFRAGQueryEngine", "response_metadata"]


class DFRAGRetriever(PipelineRetriever):
    """A base retriever's candidates, narrowed to the ``k`` nodes of DF-RAG's chosen λ.

    Options (see :class:`~diverse_core.dfrag.DFRAG`): ``diversity`` (0..1, the shared knob: λ grid cut
    to values ≥ 1 − diversity), ``lambdas``, ``sampling``,
    ``incremental_context``, ``prompts``, ``score_from``, ``on_evaluator_error``; the rest as in
    :class:`~llamaindex_diverse.pipeline_engine.PipelineRetriever`. Nodes carry
    ``selection_method="dfrag"`` and ``selection_params={"lambda_mult": λ*, ...}``.

    Example:
        >>> from llama_index.core import Document, VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> from llama_index.core.llms import MockLLM
        >>> emb = MockEmbedding(embed_dim=8)
        >>> index = VectorStoreIndex.from_documents([Document(text=t) for t in "abcdef"], embed_model=emb)
        >>> r = DFRAGRetriever(index.as_retriever(similarity_top_k=6), llm=MockLLM(), embed_model=emb, k=2)
        >>> len(r.retrieve("question"))
        2
    """

    pipeline_class = DFRAG
    response_fields = ("lambda", "lambda_source", "scores", "tied_lambdas", "plan", "parse_failures",
                       "n_distinct_sets")
    response_names = {"scores": "lambda_scores"}

    @classmethod
    def _llm_from_settings(cls, options: dict[str, Any]) -> bool:
        # the LLM evaluator needs a model (Settings.llm by default); the adaptive one does not
        return options.get("evaluator", "llm") == "llm"

    #: Old names of :meth:`run_pipeline` / :meth:`arun_pipeline` (each call warns).
    run_dfrag = deprecated_method("run_dfrag", "run_pipeline")
    arun_dfrag = deprecated_method("arun_dfrag", "arun_pipeline")


class DFRAGQueryEngine(PipelineQueryEngine):
    """Answer with DF-RAG: Planner, λ sweep, Evaluator, tie gate and Generator.

    ``Response.metadata`` holds ``dfrag_lambda``, ``dfrag_lambda_source``,
    ``dfrag_lambda_scores``, ``dfrag_tied_lambdas``, ``dfrag_plan``, ``dfrag_parse_failures``,
    ``dfrag_n_distinct_sets``, ``dfrag_warnings``, ``dfrag_cost``, ``dfrag_trace`` and the full
    ``dfrag_result``.

    Example:
        >>> engine = DFRAGQueryEngine.from_args(index.as_retriever(similarity_top_k=50),
        ...                                     llm=llm, k=5)  # doctest: +SKIP
        >>> resp = engine.query("Where was the author of Dracula born?")  # doctest: +SKIP
        >>> resp.metadata["dfrag_lambda"], len(resp.source_nodes)  # doctest: +SKIP
    """

    retriever_class = DFRAGRetriever


#: The DF-RAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = DFRAGRetriever.response_metadata
