"""DF-RAG for LangChain: :class:`DFRAGRetriever` (generated from the core's declaration, see
:func:`~langchain_diverse.pipeline_retriever.retriever_class`), :func:`create_dfrag_chain`, the
metadata keys of its documents and :class:`LangChainLLM` (re-exported).

The retriever returns the ``k`` chunks of the λ that DF-RAG's Evaluator chose (Khan et al. 2026,
Sec. 3.4); its documents carry ``dfrag_lambda``, ``dfrag_lambda_scores`` and ``dfrag_plan``.
``evaluator="adaptive"`` chooses λ with the trained scorer, with no LLM call to retrieve.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.language_models import FakeListLLM
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
    >>> llm = FakeListLLM(responses=["1) find it"] + ["1. Score: 3\\nTotal Score: 3"] * 10)
    >>> docs = DFRAGRetriever(llm=llm, vectorstore=store, k=2, fetch_k=8).invoke("fact")
    >>> len(docs), docs[0].metadata["selection_method"]
    (2, 'dfrag')
"""

from __future__ import annotations

from .llm import LangChainLLM
from .pipeline_retriever import create_pipeline_chain, retriever_class

__all__ = [
    "LangChainLLM",
    "DFRAGRetriever",
    "create_dfrag_chain",
    "DFRAG_LAMBDA",
    "DFRAG_LAMBDA_SCORES",
    "DFRAG_PLAN",
]

DFRAGRetriever = retriever_class("dfrag")
create_dfrag_chain = create_pipeline_chain

DFRAG_LAMBDA = "dfrag_lambda"
DFRAG_LAMBDA_SCORES = "dfrag_lambda_scores"
DFRAG_PLAN = "dfrag_plan"
