"""Vendi-RAG for LlamaIndex: :class:`VendiRAGRetriever` and :class:`VendiRAGQueryEngine`, generated
from the core's declaration like every pipeline face (see :mod:`~llamaindex_diverse.pipeline_engine`;
the example of :mod:`llamaindex_diverse.dfrag` applies as it is).

The retriever returns the final iteration's nodes (or every node the loop used); the query engine's
``Response.metadata`` holds the per-iteration trace, s trajectory, quality, warnings and cost. Both
need an LLM: the judge's scores decide what later iterations retrieve.
"""

from __future__ import annotations

from .pipeline_engine import query_engine_class, retriever_class

__all__ = ["VendiRAGRetriever", "VendiRAGQueryEngine", "response_metadata"]

VendiRAGRetriever = retriever_class("vendirag")
VendiRAGQueryEngine = query_engine_class("vendirag")

#: The VendiRAG fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = VendiRAGRetriever.response_metadata
