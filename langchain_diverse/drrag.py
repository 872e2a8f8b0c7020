"""DR-RAG for LangChain: :class:`DRRAGRetriever` (generated from the core's declaration, see
:func:`~langchain_diverse.pipeline_retriever.retriever_class`) and :func:`create_drrag_chain`.

The retriever returns the stage-1 documents plus the bridge documents found by searching with the
question followed by each stage-1 document, kept by the pair classifier (no LLM needed);
``selection_params`` holds ``stage``, ``via``, ``probability``, ``mode`` and ``filled``.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
    >>> docs = DRRAGRetriever(vectorstore=store, k=4, fetch_k=8, mode="qdc").invoke("fact")
    >>> [d.metadata["selection_params"]["stage"] for d in docs]
    [1, 1, 2, 2]
"""

from __future__ import annotations

from .pipeline_retriever import create_pipeline_chain, retriever_class

__all__ = ["DRRAGRetriever", "create_drrag_chain"]

DRRAGRetriever = retriever_class("drrag")
create_drrag_chain = create_pipeline_chain
