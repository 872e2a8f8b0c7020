"""DR-RAG for LlamaIndex: :class:`DRRAGRetriever` (no LLM needed) and :class:`DRRAGQueryEngine` (one
LLM call per question), generated from the core's declaration (see
:func:`~llamaindex_diverse.pipeline_engine.retriever_class`).

Example:
    >>> from llama_index.core import Document, VectorStoreIndex
    >>> from llama_index.core.embeddings import MockEmbedding
    >>> emb = MockEmbedding(embed_dim=8)
    >>> index = VectorStoreIndex.from_documents([Document(text=f"f{i}") for i in range(6)], embed_model=emb)
    >>> len(DRRAGRetriever(index, embed_model=emb, k=4, mode="qdc").retrieve("f1"))
    4
"""

from __future__ import annotations

from .pipeline_engine import query_engine_class, retriever_class

__all__ = ["DRRAGRetriever", "DRRAGQueryEngine", "response_metadata"]

DRRAGRetriever = retriever_class("drrag")
DRRAGQueryEngine = query_engine_class("drrag")

#: The DRRAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = DRRAGRetriever.response_metadata
