"""DR-RAG for LangChain, declared on the generic pipeline face.

* :class:`DRRAGRetriever` - stage-1 documents plus the bridge documents found by searching with
  the question followed by each stage-1 document, kept by the pair classifier (no LLM needed).
* :meth:`DRRAGRetriever.as_chain` / :func:`create_drrag_chain` - a Runnable
  ``question -> {answer, context, mode, stage2_queries, trace, warnings, cost, result}`` (one LLM
  call per question).
"""

from __future__ import annotations

from typing import Any

from diverse_core.pipelines.drrag import DRRAG
from langchain_core.runnables import Runnable

from .pipeline_retriever import PipelineRetriever, create_pipeline_chain

__all__ = ["DRRAGRetriever", "create_drrag_chain"]


class DRRAGRetriever(PipelineRetriever):
    """DR-RAG's two-stage retrieval over a vector store or any retriever.

    Documents carry, besides the shared metadata, ``selection_params`` with ``stage`` (1 or 2),
    ``via`` (the id of the stage-1 document whose concatenated search found it), ``probability``
    (the classifier's, when one was asked), ``mode`` and ``filled``. ``llm`` is only needed for
    the chain (the answer).

    Options (see :class:`~diverse_core.pipelines.drrag.DRRAG`): ``k1``, ``m``, ``mode``,
    ``classifier``, ``threshold``, ``fill``, ``per_doc``, ``cis_rule``, ``protect_stage1``.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
        >>> docs = DRRAGRetriever(vectorstore=store, k=4, fetch_k=8, mode="qdc").invoke("fact")
        >>> [d.metadata["selection_params"]["stage"] for d in docs]
        [1, 1, 2, 2]
    """

    pipeline_class = DRRAG
    chain_keys = ("mode", "stage2_queries")


def create_drrag_chain(retriever: DRRAGRetriever) -> Runnable[Any, dict[str, Any]]:
    """A Runnable that answers a question with DR-RAG end to end (see
    :func:`~langchain_diverse.pipeline_retriever.create_pipeline_chain`; adds ``mode`` and
    ``stage2_queries``). Needs the retriever's ``llm`` (one call, the answer)."""
    return create_pipeline_chain(retriever)
