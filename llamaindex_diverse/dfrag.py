"""DF-RAG for LlamaIndex: an LLM adapter, a retriever and a query engine.

* :class:`LlamaIndexLLM` - any LlamaIndex ``LLM`` as DF-RAG's text backend (its
  ``complete``/``acomplete`` calls are instrumented by LlamaIndex as usual).
* :class:`DFRAGRetriever` - a ``BaseRetriever`` returning the nodes of the λ that DF-RAG's
  Evaluator chose for each query.
* :class:`DFRAGQueryEngine` - a query engine whose ``Response.source_nodes`` are the
  chosen chunks and whose ``metadata`` holds λ*, the score per λ, the plan and the cost.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import numpy as np
from diverse_core.dfrag import DEFAULT_LAMBDAS, DFRAG, DFRAGResult, PromptSet
from diverse_core.errors import InvalidParameterError
from diverse_core.llm import Completion, ManagedLLM
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from numpy.typing import NDArray

from ._metadata import with_selection_metadata
from ._vectors import ModelBoundCache, nodes_to_embed, stack_node_vectors

__all__ = ["LlamaIndexLLM", "DFRAGRetriever", "DFRAGQueryEngine", "response_metadata"]


class LlamaIndexLLM:
    """A LlamaIndex ``LLM`` as a DF-RAG text-completion backend.

    Token counts are read from ``CompletionResponse.additional_kwargs``
    (``prompt_tokens``/``completion_tokens``) or an OpenAI-style ``raw["usage"]`` when
    the integration provides them.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexLLM(MockLLM(max_tokens=2)).complete("hello").text
        'text text'
    """

    def __init__(self, llm: LLM, **complete_kwargs: Any) -> None:
        if not hasattr(llm, "complete"):
            raise TypeError(f"llm must be a llama_index LLM; got {type(llm).__name__}")
        self.llm = llm
        self.complete_kwargs = complete_kwargs

    @staticmethod
    def _tokens(resp: Any) -> tuple[int | None, int | None]:
        extra = getattr(resp, "additional_kwargs", None) or {}
        p, c = extra.get("prompt_tokens"), extra.get("completion_tokens")
        raw = getattr(resp, "raw", None)
        usage = raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)
        if p is None and usage is not None:
            if isinstance(usage, dict):
                p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
            else:
                p, c = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        return (p if isinstance(p, int) else None), (c if isinstance(c, int) else None)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """``llm.complete(prompt)``."""
        start = time.perf_counter()
        resp = self.llm.complete(prompt, **{**self.complete_kwargs, **kwargs})
        p, c = self._tokens(resp)
        return Completion(resp.text or "", p, c, time.perf_counter() - start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """``await llm.acomplete(prompt)``."""
        start = time.perf_counter()
        resp = await self.llm.acomplete(prompt, **{**self.complete_kwargs, **kwargs})
        p, c = self._tokens(resp)
        return Completion(resp.text or "", p, c, time.perf_counter() - start)

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self.llm).__name__})"


def _as_backend(llm: Any) -> Any:
    if llm is None:
        from llama_index.core import Settings

        llm = Settings.llm
    if isinstance(llm, (ManagedLLM, LlamaIndexLLM)):
        return llm
    if isinstance(llm, LLM):
        return LlamaIndexLLM(llm)
    return llm


def response_metadata(result: DFRAGResult) -> dict[str, Any]:
    """The DF-RAG fields a query engine puts in ``Response.metadata``."""
    return {
        "dfrag_lambda": result.lambda_star,
        "dfrag_lambda_scores": {f"{lam:g}": s for lam, s in result.lambda_scores.items()},
        "dfrag_tied_lambdas": list(result.tied_lambdas),
        "dfrag_plan": list(result.plan),
        "dfrag_parse_failures": list(result.parse_failures),
        "dfrag_n_distinct_sets": result.n_distinct_sets,
        "dfrag_cost": asdict(result.cost),
        "dfrag_result": result,
    }


class DFRAGRetriever(BaseRetriever):
    """A base retriever's candidates, narrowed to the ``k`` nodes of DF-RAG's chosen λ.

    Args:
        retriever: the base retriever (fetches the candidate pool, e.g.
            ``index.as_retriever(similarity_top_k=50)``).
        llm: a LlamaIndex ``LLM`` (default ``Settings.llm``) or any DF-RAG text backend.
        embed_model: embeds nodes lacking an embedding and the query (default
            ``Settings.embed_model``, resolved only when needed).
        k, lambdas, sampling, incremental_context, max_concurrency, timeout,
            max_retries, prompts, score_from, llm_kwargs: see :class:`~diverse_core.dfrag.DFRAG`.
        hide_selection_metadata: keep the selection metadata out of LLM/embedding text.

    Returned nodes are copies carrying ``selection_method="dfrag"``,
    ``selection_params={"lambda_mult": λ*, "k": k}``, ``selection_rank``,
    ``selection_score`` (the chosen set's Retrieval Support) and ``selection_relevance``.

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

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: Any = None,
        *,
        embed_model: BaseEmbedding | None = None,
        k: int = 5,
        lambdas: Any = DEFAULT_LAMBDAS,
        sampling: str = "uniform",
        incremental_context: bool = False,
        max_concurrency: int = 4,
        timeout: float | None = 120.0,
        max_retries: int = 3,
        prompts: PromptSet | None = None,
        score_from: str = "total",
        llm_kwargs: dict[str, dict[str, Any]] | None = None,
        hide_selection_metadata: bool = True,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise InvalidParameterError(
                f"retriever must be a llama_index BaseRetriever; got {type(retriever).__name__}"
            )
        if embed_model is not None and not isinstance(embed_model, BaseEmbedding):
            raise InvalidParameterError(
                f"embed_model must be a llama_index BaseEmbedding; got {type(embed_model).__name__}"
            )
        self._pipeline = DFRAG(
            _as_backend(llm),
            lambdas=lambdas,
            k=k,
            sampling=sampling,
            incremental_context=incremental_context,
            max_concurrency=max_concurrency,
            timeout=timeout,
            max_retries=max_retries,
            prompts=prompts,
            score_from=score_from,
            llm_kwargs=llm_kwargs,
        )
        cm = callback_manager or getattr(retriever, "callback_manager", None) or CallbackManager()
        super().__init__(callback_manager=cm, verbose=verbose)
        self._retriever = retriever
        self._embed_model = embed_model
        self._cache = ModelBoundCache(maxsize=8192)
        self.hide_selection_metadata = hide_selection_metadata

    @property
    def pipeline(self) -> DFRAG:
        """The core :class:`~diverse_core.dfrag.DFRAG` pipeline."""
        return self._pipeline

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"retriever": self._retriever}

    def _model(self) -> BaseEmbedding:
        if self._embed_model is not None:
            return self._embed_model
        from llama_index.core import Settings

        return Settings.embed_model

    def _vectors(self, nodes: list[NodeWithScore]) -> NDArray[np.float64]:
        positions, texts = nodes_to_embed(nodes, MetadataMode.EMBED)
        embedded = None
        if positions:
            model = self._model()
            embedded = self._cache.for_model(model).embed(texts)
            label = model.model_name
        else:
            label = None
        return np.asarray(stack_node_vectors(nodes, positions, embedded, label), dtype=np.float64)

    async def _avectors(self, nodes: list[NodeWithScore]) -> NDArray[np.float64]:
        positions, texts = nodes_to_embed(nodes, MetadataMode.EMBED)
        if not positions:
            return np.asarray(stack_node_vectors(nodes, positions, None, None), dtype=np.float64)
        model = self._model()
        embedded = await self._cache.for_model(model).aembed(texts, model.aget_text_embedding_batch)
        return np.asarray(stack_node_vectors(nodes, positions, embedded, model.model_name), dtype=np.float64)

    def _query_vector(self, qb: QueryBundle) -> NDArray[np.float64]:
        if qb.embedding is not None:
            return np.asarray(qb.embedding, dtype=np.float64)
        return np.asarray(self._model().get_query_embedding(qb.query_str), dtype=np.float64)

    async def _aquery_vector(self, qb: QueryBundle) -> NDArray[np.float64]:
        if qb.embedding is not None:
            return np.asarray(qb.embedding, dtype=np.float64)
        return np.asarray(await self._model().aget_query_embedding(qb.query_str), dtype=np.float64)

    @staticmethod
    def _texts(nodes: list[NodeWithScore]) -> list[str]:
        return [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]

    def _chosen(
        self, nodes: list[NodeWithScore], result: DFRAGResult, qv: NDArray[np.float64], vecs: NDArray[np.float64]
    ) -> list[NodeWithScore]:
        star = next(cs for cs in result.candidate_sets if result.lambda_star in cs.lambdas)
        norms = np.linalg.norm(vecs, axis=1) * max(float(np.linalg.norm(qv)), 1e-300)
        rel = (vecs @ qv) / np.where(norms > 0, norms, 1.0)
        return [
            with_selection_metadata(
                nodes[idx],
                method="dfrag",
                params={"lambda_mult": result.lambda_star, "k": len(result.indices)},
                rank=rank,
                score=float(star.score or 0.0),
                relevance=float(rel[idx]),
                hide_from_models=self.hide_selection_metadata,
            )
            for rank, idx in enumerate(result.indices)
        ]

    def run_dfrag(self, query: str | QueryBundle, *, generate: bool = False) -> tuple[DFRAGResult, list[NodeWithScore]]:
        """Fetch, embed and run DF-RAG; returns the full result and the chosen nodes."""
        qb = QueryBundle(query) if isinstance(query, str) else query
        nodes = self._retriever.retrieve(qb)
        if not nodes:
            raise InvalidParameterError(f"no candidate nodes were retrieved for query={qb.query_str!r}")
        vecs = self._vectors(nodes)
        qv = self._query_vector(qb)
        result = self._pipeline.run(qb.query_str, self._texts(nodes), qv, vecs, generate=generate)
        return result, self._chosen(nodes, result, qv, vecs)

    async def arun_dfrag(
        self, query: str | QueryBundle, *, generate: bool = False
    ) -> tuple[DFRAGResult, list[NodeWithScore]]:
        """Asynchronous :meth:`run_dfrag`."""
        qb = QueryBundle(query) if isinstance(query, str) else query
        nodes = await self._retriever.aretrieve(qb)
        if not nodes:
            raise InvalidParameterError(f"no candidate nodes were retrieved for query={qb.query_str!r}")
        vecs = await self._avectors(nodes)
        qv = await self._aquery_vector(qb)
        result = await self._pipeline.arun(qb.query_str, self._texts(nodes), qv, vecs, generate=generate)
        return result, self._chosen(nodes, result, qv, vecs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.run_dfrag(query_bundle)[1]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return (await self.arun_dfrag(query_bundle))[1]


class DFRAGQueryEngine(BaseQueryEngine):
    """Answer with DF-RAG: Planner, λ sweep, Evaluator, tie gate and Generator.

    ``Response.response`` is the Generator's answer, ``Response.source_nodes`` the
    chosen chunks (with selection metadata) and ``Response.metadata`` holds
    ``dfrag_lambda``, ``dfrag_lambda_scores``, ``dfrag_tied_lambdas``, ``dfrag_plan``,
    ``dfrag_parse_failures``, ``dfrag_n_distinct_sets``, ``dfrag_cost`` and the full
    ``dfrag_result``.

    Args:
        retriever: a :class:`DFRAGRetriever` (it carries the LLM and settings).

    Example:
        >>> engine = DFRAGQueryEngine.from_args(index.as_retriever(similarity_top_k=50),
        ...                                     llm=llm, k=5)  # doctest: +SKIP
        >>> resp = engine.query("Where was the author of Dracula born?")  # doctest: +SKIP
        >>> resp.metadata["dfrag_lambda"], len(resp.source_nodes)  # doctest: +SKIP
    """

    def __init__(self, retriever: DFRAGRetriever, callback_manager: CallbackManager | None = None) -> None:
        if not isinstance(retriever, DFRAGRetriever):
            raise InvalidParameterError(
                f"retriever must be a DFRAGRetriever; got {type(retriever).__name__} "
                "(use DFRAGQueryEngine.from_args to wrap a plain retriever)"
            )
        self._dfrag_retriever = retriever
        super().__init__(callback_manager=callback_manager or retriever.callback_manager)

    @classmethod
    def from_args(cls, retriever: BaseRetriever, llm: Any = None, **kwargs: Any) -> DFRAGQueryEngine:
        """Build from a plain base retriever; ``kwargs`` go to :class:`DFRAGRetriever`."""
        return cls(DFRAGRetriever(retriever, llm, **kwargs))

    @property
    def retriever(self) -> DFRAGRetriever:
        """The DF-RAG retriever."""
        return self._dfrag_retriever

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    @staticmethod
    def _response(result: DFRAGResult, nodes: list[NodeWithScore]) -> Response:
        return Response(response=result.answer, source_nodes=nodes, metadata=response_metadata(result))

    def _query(self, query_bundle: QueryBundle) -> Response:
        result, nodes = self._dfrag_retriever.run_dfrag(query_bundle, generate=True)
        return self._response(result, nodes)

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        result, nodes = await self._dfrag_retriever.arun_dfrag(query_bundle, generate=True)
        return self._response(result, nodes)
