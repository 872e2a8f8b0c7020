"""DF-RAG for LlamaIndex: :class:`DFRAGRetriever` and :class:`DFRAGQueryEngine` (generated from the
core's declaration, see :func:`~llamaindex_diverse.pipeline_engine.retriever_class`) and
:class:`LlamaIndexLLM` (re-exported).

The retriever returns the nodes of the λ that DF-RAG's Evaluator chose; the query engine's
``Response.metadata`` holds λ*, the score per λ, the plan, warnings, cost and trace.

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

from __future__ import annotations

from .llm import LlamaIndexLLM
from .pipeline_engine import query_engine_class, retriever_class

__all__ = ["DFRAGRetriever", "DFRAGQueryEngine", "response_metadata", "LlamaIndexLLM"]

DFRAGRetriever = retriever_class("dfrag")
DFRAGQueryEngine = query_engine_class("dfrag")

#: The DFRAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = DFRAGRetriever.response_metadata
