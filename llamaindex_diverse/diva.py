"""DIVA for LlamaIndex: :class:`DIVARetriever` and :class:`DIVAQueryEngine`, generated from the
core's declaration like every pipeline face (see :mod:`~llamaindex_diverse.pipeline_engine`; the
example of :mod:`llamaindex_diverse.dfrag` applies as it is).

The retriever keeps the ``k`` nodes DIVA chooses for an ambiguous question (each node's
``selection_params["interpretations"]`` says which interpretations it serves); the query engine
verifies them and answers with them, or closed book when they are useless.
"""

from __future__ import annotations

from .pipeline_engine import query_engine_class, retriever_class

__all__ = ["DIVARetriever", "DIVAQueryEngine", "response_metadata"]

DIVARetriever = retriever_class("diva")
DIVAQueryEngine = query_engine_class("diva")

#: The DIVA fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = DIVARetriever.response_metadata
