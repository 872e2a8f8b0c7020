"""Vendi-RAG for LangChain, declared on the generic pipeline face.

* :class:`VendiRAGRetriever` - runs the Vendi-RAG loop and returns the final iteration's chunks
  (or, with ``return_documents="union"``, every chunk the loop used).
* :meth:`VendiRAGRetriever.as_chain` / :func:`create_vendirag_chain` - a Runnable
  ``question -> {answer, context, iterations, s_trajectory, quality, trace, warnings, cost, result}``.

The retriever needs an LLM: the judge's scores decide what later iterations retrieve, so even
``invoke`` (retrieval only) runs the whole loop - 3 LLM calls per iteration plus a rewrite
between iterations.
"""

from __future__ import annotations

from typing import Any

from diverse_core._lazy import deprecated_aliases, deprecated_method
from diverse_core.pipelines.vendirag import VendiRAG
from langchain_core.runnables import Runnable

from .pipeline_retriever import PipelineRetriever, create_pipeline_chain

__all__ = [
    "VendiRAGRetriever",
    "create_vendirag_chain",
    "VENDIRAG_ITERATION",
    "VENDIRAG_S_TRAJECTORY",
    "VENDIRAG_QUALITY_TRAJECTORY",
]

#: Metadata key: the iteration whose chunks (and answer) were returned.
VENDIRAG_ITERATION = "vendirag_iteration"
#: Metadata key: s of every iteration.
VENDIRAG_S_TRAJECTORY = "vendirag_s_trajectory"
#: Metadata key: the judge's quality Q_i of every iteration (``None`` where not judged); the
#: name the LlamaIndex face gives it too.
VENDIRAG_QUALITY_TRAJECTORY = "vendirag_quality_trajectory"
#: Deprecated metadata key, still written: the same trajectory under the name that means the final
#: quality elsewhere (the chain's ``quality``, LlamaIndex's ``vendirag_quality``).
_OLD_QUALITY_KEY = "vendirag_quality"


class VendiRAGRetriever(PipelineRetriever):
    """Retrieve with the Vendi-RAG loop: VRS at an adaptive ``s``, reasoning, an answer, an LLM
    judge, a rewritten query, repeated until the judge's quality reaches ``threshold``.

    Returns the chunks of the final iteration (``final="best"``: the best-judged one) or, with
    ``return_documents="union"``, every chunk the loop used. Besides the shared metadata (see
    :class:`PipelineRetriever`; ``selection_params`` holds ``iteration``, ``s``, ``quality``,
    ``query`` and ``k``), documents carry ``vendirag_iteration``, ``vendirag_s_trajectory`` and
    ``vendirag_quality_trajectory`` (also, deprecated, as ``vendirag_quality``). **Needs an LLM**
    even for retrieval (the judge drives it).

    Options (see :class:`~diverse_core.pipelines.vendirag.VendiRAG`): ``diversity`` (0..1, the shared
    knob: the first iteration's ``s``), ``initial_s`` (``None``: 0.8),
    ``threshold`` (0.85), ``max_iterations`` (5), ``s_update`` (``"paper"``/``"relative"``/
    ``"fixed"``), ``final`` (``"best"``/``"last"``), ``rewrite``, ``use_judge``,
    ``exclude_seen``, ``objective``, ``return_documents``, ``on_llm_error``, ``prompts``.

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

    pipeline_class = VendiRAG
    document_fields = {
        VENDIRAG_ITERATION: "final_iteration",
        VENDIRAG_S_TRAJECTORY: "s_trajectory",
        VENDIRAG_QUALITY_TRAJECTORY: "quality_trajectory",
        _OLD_QUALITY_KEY: "quality_trajectory",
    }
    chain_keys = ("iterations", "final_iteration", "s_trajectory", "quality", "stop_reason")

    #: Old names of :meth:`run_pipeline` / :meth:`arun_pipeline` (each call warns).
    run_vendirag = deprecated_method("run_vendirag", "run_pipeline")
    arun_vendirag = deprecated_method("arun_vendirag", "arun_pipeline")


def create_vendirag_chain(retriever: VendiRAGRetriever) -> Runnable[Any, dict[str, Any]]:
    """A Runnable that answers a question with Vendi-RAG end to end (see
    :func:`~langchain_diverse.pipeline_retriever.create_pipeline_chain`; adds ``iterations``,
    ``final_iteration``, ``s_trajectory``, ``quality`` and ``stop_reason``)."""
    return create_pipeline_chain(retriever)


#: Old names kept as deprecated aliases (each access warns): ``VENDIRAG_QUALITY`` (the key of the
#: quality trajectory) -> ``VENDIRAG_QUALITY_TRAJECTORY``.
__getattr__ = deprecated_aliases(__name__, globals(), {"VENDIRAG_QUALITY": "VENDIRAG_QUALITY_TRAJECTORY"})
