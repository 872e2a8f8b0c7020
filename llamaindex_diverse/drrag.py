"""DR-RAG for LlamaIndex, declared on the generic pipeline faces: :class:`DRRAGRetriever`
(no LLM needed) and :class:`DRRAGQueryEngine` (one LLM call per question)."""

from __future__ import annotations

from diverse_core.pipelines.drrag import DRRAG

from .pipeline_engine import PipelineQueryEngine, PipelineRetriever

__all__ = ["DRRAGRetriever", "DRRAGQueryEngine", "response_metadata"]


class DRRAGRetriever(PipelineRetriever):
    """DR-RAG's two-stage retrieval over an index or any retriever (``llm`` is optional: the
    retriever makes no LLM call). Nodes carry ``selection_params`` with ``stage``, ``via``,
    ``probability``, ``mode`` and ``filled``.

    Options (see :class:`~diverse_core.pipelines.drrag.DRRAG`): ``k1``, ``m``, ``mode``,
    ``classifier``, ``threshold``, ``fill``, ``per_doc``, ``cis_rule``, ``protect_stage1``.

    Example:
        >>> from llama_index.core import Document, VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> emb = MockEmbedding(embed_dim=8)
        >>> index = VectorStoreIndex.from_documents([Document(text=f"f{i}") for i in range(6)], embed_model=emb)
        >>> len(DRRAGRetriever(index, embed_model=emb, k=4, mode="qdc").retrieve("f1"))
        4
    """

    pipeline_class = DRRAG
    llm_default_from_settings = False
    response_fields = ("mode", "stage2_queries", "rejected")


class DRRAGQueryEngine(PipelineQueryEngine):
    """Answer with DR-RAG: ``Response.source_nodes`` are the chosen nodes; ``metadata`` holds
    ``drrag_mode``, ``drrag_stage2_queries``, ``drrag_rejected`` and the shared warnings, cost,
    trace and result. Needs an LLM (``llm=``) for the answer."""

    retriever_class = DRRAGRetriever


#: The DR-RAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = DRRAGRetriever.response_metadata
