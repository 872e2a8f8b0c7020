"""DIVA for LlamaIndex, declared on the generic pipeline faces.

* :class:`DIVARetriever` - the ``k`` nodes DIVA keeps for an ambiguous question (each node's
  ``selection_params["interpretations"]`` says which interpretations it serves).
* :class:`DIVAQueryEngine` - verifies the kept nodes and answers with them, or from the model's
  own knowledge when they are useless; ``Response.metadata`` holds the interpretations, the
  verdicts, the grade, the route, warnings, cost and trace.
"""

from __future__ import annotations

from diverse_core._lazy import deprecated_aliases
from diverse_core.pipelines.diva import DIVA

from .pipeline_engine import PipelineQueryEngine, PipelineRetriever

__all__ = ["DIVARetriever", "DIVAQueryEngine", "response_metadata"]


class DIVARetriever(PipelineRetriever):
    """A base retriever's candidates, diversified over the question's interpretations (DIVA).

    The LLM writes the interpretations (two calls per query, also when only retrieving); each
    takes its top ``per_interpretation_k`` nodes from the ``fetch_k`` first-stage hits
    (``search="source"``: each interpretation searches the index itself); the union is pruned
    to ``k`` by mean similarity to all interpretations. ``verify_in_retrieval=True`` adds the
    verification calls (one per interpretation).

    Options (see :class:`~diverse_core.pipelines.diva.DIVA`): ``diversity`` (0..1, the shared knob:
    MMR pruning at ``mmr_lambda = 1 - diversity``), ``per_interpretation_k``,
    ``max_interpretations``, ``search``, ``prune``, ``mmr_lambda``, ``verify_in_retrieval``,
    ``on_verifier_error``, ``prompts``; the rest as in
    :class:`~llamaindex_diverse.pipeline_engine.PipelineRetriever`. Nodes carry
    ``selection_method="diva"`` and ``selection_params={"interpretations": [...],
    "prune_score": ..., "k": ...}``.

    Example:
        >>> from llama_index.core import Document, VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> from llama_index.core.llms import MockLLM
        >>> emb = MockEmbedding(embed_dim=8)
        >>> index = VectorStoreIndex.from_documents([Document(text=t) for t in "abcdef"], embed_model=emb)
        >>> r = DIVARetriever(index.as_retriever(similarity_top_k=6), llm=MockLLM(), embed_model=emb, k=2)
        >>> len(r.retrieve("question"))
        2
    """

    pipeline_class = DIVA
    response_fields = ("interpretations", "interpretations_source", "ambiguity_kinds", "verdicts",
                       "usefulness", "route", "qa_pairs")


class DIVAQueryEngine(PipelineQueryEngine):
    """Answer an ambiguous question with DIVA: interpretations, diversified retrieval,
    verification, and an answer from the passages (Useful / PartialUseful) or closed book
    (Useless).

    ``Response.metadata`` holds ``diva_interpretations``, ``diva_interpretations_source``,
    ``diva_ambiguity_kinds``, ``diva_verdicts``, ``diva_usefulness``, ``diva_route``,
    ``diva_qa_pairs``, ``diva_warnings``, ``diva_cost``, ``diva_trace`` and the full
    ``diva_result``. The answer takes one or two calls depending on the verdicts, so
    ``streaming=True`` is not supported.

    Example:
        >>> engine = DIVAQueryEngine.from_args(index.as_retriever(similarity_top_k=50),
        ...                                    llm=llm, k=5)  # doctest: +SKIP
        >>> resp = engine.query("Who won the cup?")  # doctest: +SKIP
        >>> resp.metadata["diva_route"], len(resp.source_nodes)  # doctest: +SKIP
    """

    retriever_class = DIVARetriever


#: The DIVA fields a query engine puts in ``Response.metadata`` (a function of the result).
response_metadata = DIVARetriever.response_metadata


#: Old names kept as deprecated aliases (each access warns).
__getattr__ = deprecated_aliases(
    __name__, globals(), {"DivaRetriever": "DIVARetriever", "DivaQueryEngine": "DIVAQueryEngine"}
)
