"""DIVA for LangChain, declared on the generic pipeline face.

* :class:`DIVARetriever` - the ``k`` passages DIVA keeps for an ambiguous question: each
  LLM-written interpretation takes its top hits from one first-stage pool (or searches the
  store itself), the union is pruned by mean similarity to all interpretations. Each document
  says which interpretations it serves.
* :meth:`DIVARetriever.as_chain` / :func:`create_diva_chain` - a Runnable
  ``question -> {answer, context, interpretations, verdicts, usefulness, route, trace, warnings,
  cost, result}`` that also verifies the passages and answers (with them, or closed book when
  they are useless).
"""

from __future__ import annotations

from typing import Any

from diverse_core._lazy import deprecated_aliases
from diverse_core.pipelines.diva import DIVA
from langchain_core.runnables import Runnable

from .pipeline_retriever import PipelineRetriever, create_pipeline_chain

__all__ = ["DIVARetriever", "create_diva_chain", "DIVA_INTERPRETATIONS", "DIVA_USEFULNESS"]

#: Metadata key: every interpretation of the question (the document's own are in
#: ``pipeline_reason["interpretations"]``).
DIVA_INTERPRETATIONS = "diva_interpretations"
#: Metadata key: the verification grade (``None`` unless ``verify_in_retrieval=True``).
DIVA_USEFULNESS = "diva_usefulness"


class DIVARetriever(PipelineRetriever):
    """Retrieve for an ambiguous question with DIVA (In et al., arXiv:2409.02361): the pruned, diversified set.

    The LLM first names the question's ambiguity and rewrites it into at most
    ``max_interpretations`` unambiguous questions (two calls per query, also when only
    retrieving); no LLM call is made for the retrieval itself. With
    ``verify_in_retrieval=True`` the retriever also runs one yes/no verification call per
    interpretation and reports the grade. The chain (:meth:`as_chain`) always verifies and
    answers: ``2 + m + 2`` LLM calls (passages useful) or ``2 + m + 1`` (closed book).

    Besides the shared metadata (see :class:`PipelineRetriever`; ``pipeline_reason`` and
    ``selection_params`` hold ``interpretations`` - the interpretations this passage was
    retrieved for - and ``prune_score``), documents carry ``diva_interpretations`` and
    ``diva_usefulness``.

    Options (see :class:`~diverse_core.pipelines.diva.DIVA`): ``diversity`` (0..1, the shared knob:
    MMR pruning at ``mmr_lambda = 1 - diversity``), ``per_interpretation_k``,
    ``max_interpretations``, ``search`` (``"pool"``/``"source"``), ``prune``, ``mmr_lambda``,
    ``verify_in_retrieval``, ``on_verifier_error``, ``prompts``. ``fetch_k`` is the first-stage
    pool.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
        >>> llm = FakeListLLM(responses=["Reason: the year.\\nKinds: [Time]", "1: In 2018?\\n2: In 2019?"])
        >>> docs = DIVARetriever(llm=llm, vectorstore=store, k=2, fetch_k=8).invoke("Who won?")
        >>> len(docs), docs[0].metadata["diva_interpretations"]
        (2, ['In 2018?', 'In 2019?'])
    """

    pipeline_class = DIVA
    document_fields = {DIVA_INTERPRETATIONS: "interpretations", DIVA_USEFULNESS: "usefulness"}
    chain_keys = ("interpretations", "verdicts", "usefulness", "route")


def create_diva_chain(retriever: DIVARetriever) -> Runnable[Any, dict[str, Any]]:
    """A Runnable that answers an ambiguous question with DIVA end to end (see
    :func:`~langchain_diverse.pipeline_retriever.create_pipeline_chain`; adds
    ``interpretations``, ``verdicts``, ``usefulness`` and ``route``)."""
    return create_pipeline_chain(retriever)


#: Old names kept as deprecated aliases (each access warns): ``DivaRetriever`` -> ``DIVARetriever``.
__getattr__ = deprecated_aliases(__name__, globals(), {"DivaRetriever": "DIVARetriever"})
