"""Vendi-RAG for LlamaIndex, declared on the generic pipeline faces.

* :class:`VendiRAGRetriever` - the final iteration's nodes (or every node the loop used).
* :class:`VendiRAGQueryEngine` - ``Response.response`` is the final iteration's answer,
  ``source_nodes`` its chunks, ``metadata`` the per-iteration trace, s trajectory, quality,
  warnings, cost and the full result.

Both need an LLM: the judge's scores decide what later iterations retrieve.
"""

from __future__ import annotations

from diverse_core._lazy import deprecated_method
from diverse_core.pipelines.vendirag import VendiRAG

from .pipeline_engine import PipelineQueryEngine, PipelineRetriever

__all__ = ["VendiRAGRetriever", "VendiRAGQueryEngine", "response_metadata"]


class VendiRAGRetriever(PipelineRetriever):
    """A base retriever searched by the Vendi-RAG loop; returns the final iteration's nodes.

    Options (see :class:`~diverse_core.pipelines.vendirag.VendiRAG`): ``diversity`` (0..1, the shared
    knob: the first iteration's ``s``), ``initial_s``,
    ``threshold``, ``max_iterations``, ``s_update``, ``final``, ``rewrite``, ``use_judge``,
    ``exclude_seen``, ``objective``, ``return_documents``, ``on_llm_error``, ``prompts``; the
    rest as in :class:`~llamaindex_diverse.pipeline_engine.PipelineRetriever`. Nodes carry
    ``selection_method="vendirag"`` and ``selection_params={"iteration", "s", "quality",
    "query", "k"}``. **Needs an LLM** (default ``Settings.llm``) even for retrieval.

    Example:
        >>> from llama_index.core import Document, VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> from llama_index.core.llms import MockLLM
        >>> emb = MockEmbedding(embed_dim=8)
        >>> index = VectorStoreIndex.from_documents([Document(text=t) for t in "abcdef"], embed_model=emb)
        >>> r = VendiRAGRetriever(index.as_retriever(similarity_top_k=6), llm=MockLLM(), embed_model=emb,
        ...                       k=2, max_iterations=2, rewrite=False)
        >>> len(r.retrieve("question"))  # MockLLM gives no ratings: both iterations unjudged
        2
    """

    pipeline_class = VendiRAG
    response_fields = ("iterations", "final_iteration", "s_trajectory", "quality_trajectory", "quality",
                       "stop_reason")

    #: Old names of :meth:`run_pipeline` / :meth:`arun_pipeline` (each call warns).
    run_vendirag = deprecated_method("run_vendirag", "run_pipeline")
    arun_vendirag = deprecated_method("arun_vendirag", "arun_pipeline")


class VendiRAGQueryEngine(PipelineQueryEngine):
    """Answer with Vendi-RAG: the iterative VRS / reasoning / answer / judge / rewrite loop.

    ``Response.metadata`` holds ``vendirag_iterations`` (one dict per iteration: s, query,
    chunk ids, Vendi score, mean similarity, reasoning, answer, scores, quality, calls,
    tokens, failures), ``vendirag_final_iteration``, ``vendirag_s_trajectory``,
    ``vendirag_quality_trajectory``, ``vendirag_quality``, ``vendirag_stop_reason``,
    ``vendirag_warnings``, ``vendirag_cost``, ``vendirag_trace`` and ``vendirag_result``.

    Example:
        >>> engine = VendiRAGQueryEngine.from_args(index.as_retriever(similarity_top_k=50),
        ...                                        llm=llm, k=5)  # doctest: +SKIP
        >>> resp = engine.query("Where was the director of the film born?")  # doctest: +SKIP
        >>> resp.metadata["vendirag_s_trajectory"], len(resp.source_nodes)  # doctest: +SKIP
    """

    retriever_class = VendiRAGRetriever


#: The Vendi-RAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = VendiRAGRetriever.response_metadata
