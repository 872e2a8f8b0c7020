"""Vendi-RAG for LlamaIndex: :class:`VendiRAGRetriever` and :class:`VendiRAGQueryEngine` (generated
from the core's declaration, see :func:`~llamaindex_diverse.pipeline_engine.retriever_class`).

The retriever returns the final iteration's nodes (or every node the loop used); the query engine's
``Response.metadata`` holds the per-iteration trace, s trajectory, quality, warnings and cost. Both
need an LLM: the judge's scores decide what later iterations retrieve.

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

from __future__ import annotations

from .pipeline_engine import query_engine_class, retriever_class

__all__ = ["VendiRAGRetriever", "VendiRAGQueryEngine", "response_metadata"]

VendiRAGRetriever = retriever_class("vendirag")
VendiRAGQueryEngine = query_engine_class("vendirag")

#: The VendiRAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = VendiRAGRetriever.response_metadata
