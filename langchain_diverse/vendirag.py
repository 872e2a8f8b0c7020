"""Vendi-RAG for LangChain: :class:`VendiRAGRetriever` (generated from the core's declaration, see
:func:`~langchain_diverse.pipeline_retriever.retriever_class`), :func:`create_vendirag_chain` and
the metadata keys of its documents.

The retriever runs the Vendi-RAG loop and returns the final iteration's chunks (or, with
``return_documents="union"``, every chunk the loop used). It needs an LLM even for retrieval: the
judge's scores decide what later iterations retrieve (3 LLM calls per iteration plus a rewrite).

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.language_models import FakeListLLM
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
    >>> judge = '{"coherence": 9, "relevance": 9, "query_alignment": 9}'
    >>> llm = FakeListLLM(responses=["1) think", "fact 3", judge])
    >>> docs = VendiRAGRetriever(llm=llm, vectorstore=store, k=2, fetch_k=8).invoke("fact")
    >>> len(docs), docs[0].metadata["selection_method"], docs[0].metadata["vendirag_iteration"]
    (2, 'vendirag', 1)
"""

from __future__ import annotations

from .pipeline_retriever import create_pipeline_chain, retriever_class

__all__ = [
    "VendiRAGRetriever",
    "create_vendirag_chain",
    "VENDIRAG_ITERATION",
    "VENDIRAG_S_TRAJECTORY",
    "VENDIRAG_QUALITY_TRAJECTORY",
]

VendiRAGRetriever = retriever_class("vendirag")
create_vendirag_chain = create_pipeline_chain

#: Metadata key: the iteration whose chunks (and answer) were returned.
VENDIRAG_ITERATION = "vendirag_iteration"
#: Metadata key: s of every iteration.
VENDIRAG_S_TRAJECTORY = "vendirag_s_trajectory"
#: Metadata key: the judge's quality Q_i of every iteration (``None`` where not judged).
VENDIRAG_QUALITY_TRAJECTORY = "vendirag_quality_trajectory"
