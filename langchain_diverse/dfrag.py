"""DF-RAG for LangChain: an LLM adapter, a retriever and a ready question-answering Runnable.

* :class:`LangChainLLM` - any chat model / LLM (or Runnable that takes a string) as
  DF-RAG's text-completion backend; callbacks reach every call.
* :class:`DFRAGRetriever` - a ``BaseRetriever`` returning the chunks of the λ that DF-RAG's
  Evaluator chose for each query.
* :meth:`DFRAGRetriever.as_chain` / :func:`create_dfrag_chain` - a Runnable
  ``question -> {answer, context, lambda, scores, plan, cost}``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from diverse_core.dfrag import DEFAULT_LAMBDAS, DFRAG, DFRAGResult, PromptSet
from diverse_core.errors import InvalidParameterError
from diverse_core.llm import Completion, ManagedLLM
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.vectorstores import VectorStore
from numpy.typing import NDArray
from pydantic import ConfigDict, Field, PrivateAttr

from .embeddings import CachedEmbeddings, cached_embeddings
from .selection import (
    RELEVANCE_SCORE,
    SELECTION_METHOD,
    SELECTION_PARAMS,
    SELECTION_RANK,
    SELECTION_SCORE,
    document_texts,
)

__all__ = [
    "LangChainLLM",
    "DFRAGRetriever",
    "create_dfrag_chain",
    "DFRAG_LAMBDA",
    "DFRAG_SCORES",
    "DFRAG_PLAN",
]

DFRAG_LAMBDA = "dfrag_lambda"
DFRAG_SCORES = "dfrag_lambda_scores"
DFRAG_PLAN = "dfrag_plan"


def _message_text(out: Any) -> str:
    if isinstance(out, str):
        return out
    content = getattr(out, "content", out)
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def _usage(out: Any) -> tuple[int | None, int | None]:
    meta = getattr(out, "usage_metadata", None)
    if isinstance(meta, dict):
        return meta.get("input_tokens"), meta.get("output_tokens")
    return None, None


class LangChainLLM:
    """A LangChain chat model, LLM or string-input Runnable as a DF-RAG text backend.

    Each call is ``model.invoke(prompt, config)`` (or ``ainvoke``); pass
    ``callbacks=`` (a handler list or a callback manager, e.g. ``run_manager.get_child()``)
    per call so tracing and handlers see every Planner/Evaluator/Generator call.
    Token counts come from the message's ``usage_metadata`` when the model reports it.

    Args:
        model: a ``BaseChatModel``, ``BaseLLM`` or any ``Runnable[str, str | BaseMessage]``.
        **invoke_kwargs: extra keyword arguments for every ``invoke`` (e.g. ``stop=[...]``).

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> LangChainLLM(FakeListChatModel(responses=["hi"])).complete("hello").text
        'hi'
    """

    def __init__(self, model: Runnable[Any, Any], **invoke_kwargs: Any) -> None:
        if not hasattr(model, "invoke"):
            raise TypeError(f"model must be a LangChain Runnable; got {type(model).__name__}")
        self.model = model
        self.invoke_kwargs = invoke_kwargs

    @staticmethod
    def _config(callbacks: Any, tags: Any) -> RunnableConfig:
        config: RunnableConfig = {}
        if callbacks is not None:
            config["callbacks"] = callbacks
        if tags:
            config["tags"] = list(tags)
        return config

    def complete(self, prompt: str, *, callbacks: Any = None, tags: Any = None, **kwargs: Any) -> Completion:
        """``model.invoke(prompt)`` with the given callbacks."""
        start = time.perf_counter()
        out = self.model.invoke(prompt, self._config(callbacks, tags), **{**self.invoke_kwargs, **kwargs})
        p, c = _usage(out)
        return Completion(_message_text(out), p, c, time.perf_counter() - start)

    async def acomplete(
        self, prompt: str, *, callbacks: Any = None, tags: Any = None, **kwargs: Any
    ) -> Completion:
        """``await model.ainvoke(prompt)`` with the given callbacks."""
        start = time.perf_counter()
        out = await self.model.ainvoke(
            prompt, self._config(callbacks, tags), **{**self.invoke_kwargs, **kwargs}
        )
        p, c = _usage(out)
        return Completion(_message_text(out), p, c, time.perf_counter() - start)

    def __repr__(self) -> str:
        return f"LangChainLLM({type(self.model).__name__})"


def _as_backend(llm: Any) -> Any:
    """LangChain Runnables get the adapter; DF-RAG/other backends pass through."""
    if isinstance(llm, (ManagedLLM, LangChainLLM)):
        return llm
    if isinstance(llm, Runnable):
        return LangChainLLM(llm)
    return llm


class DFRAGRetriever(BaseRetriever):
    """Retrieve ``fetch_k`` candidates, then return the ``k`` chunks of DF-RAG's chosen λ.

    The candidates' gMMR selections over the λ grid are scored by an LLM Evaluator
    against a Planner's plan (``df-rag.txt`` Sec. 3.4); the best λ (ties: upper median)
    decides the returned documents. Every LLM call goes through the run's callbacks.

    Returned documents are copies whose metadata carries ``relevance_score``,
    ``selection_score`` (the chosen set's Retrieval Support), ``selection_rank``,
    ``selection_method`` (``"dfrag"``), ``selection_params`` (``lambda_mult``, ``k``),
    ``dfrag_lambda``, ``dfrag_lambda_scores`` and ``dfrag_plan``. The full
    :class:`~diverse_core.dfrag.DFRAGResult` is available from :meth:`run_dfrag`.

    Args:
        llm: a LangChain chat model / LLM, or any DF-RAG text backend.
        vectorstore / base_retriever: where candidates come from (exactly one).
        embeddings: embeds query and candidates (default: the store's embeddings).
        k, fetch_k, lambdas, sampling, incremental_context, max_concurrency, timeout,
            max_retries, prompts, score_from: DF-RAG settings (see
            :class:`~diverse_core.dfrag.DFRAG`).
        search_kwargs: extra arguments for the store search.
        llm_kwargs: per-role extra arguments for the LLM calls.

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

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    llm: Any
    vectorstore: VectorStore | None = None
    base_retriever: BaseRetriever | None = None
    embeddings: Embeddings | None = None
    k: int = 5
    fetch_k: int = 50
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS
    sampling: str = "uniform"
    incremental_context: bool = False
    max_concurrency: int = 4
    timeout: float | None = 120.0
    max_retries: int = 3
    prompts: PromptSet | None = None
    score_from: str = "total"
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    llm_kwargs: dict[str, dict[str, Any]] = Field(default_factory=dict)

    _pipeline: DFRAG = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if (self.vectorstore is None) == (self.base_retriever is None):
            raise InvalidParameterError(
                "give exactly one of vectorstore= or base_retriever=; got "
                f"vectorstore={type(self.vectorstore).__name__}, "
                f"base_retriever={type(self.base_retriever).__name__}"
            )
        if self.fetch_k < self.k:
            raise InvalidParameterError(f"fetch_k must be >= k; got fetch_k={self.fetch_k!r}, k={self.k!r}")
        self._embedder()
        self._pipeline = DFRAG(
            _as_backend(self.llm),
            lambdas=self.lambdas,
            k=self.k,
            sampling=self.sampling,
            incremental_context=self.incremental_context,
            max_concurrency=self.max_concurrency,
            timeout=self.timeout,
            max_retries=self.max_retries,
            prompts=self.prompts,
            score_from=self.score_from,
            llm_kwargs=self.llm_kwargs,
        )

    @property
    def pipeline(self) -> DFRAG:
        """The core :class:`~diverse_core.dfrag.DFRAG` pipeline this retriever runs."""
        return self._pipeline

    # -- helpers ---------------------------------------------------------------
    def _embedder(self) -> CachedEmbeddings:
        emb = self.embeddings
        if emb is None and self.vectorstore is not None:
            emb = self.vectorstore.embeddings
        if emb is None:
            raise InvalidParameterError(
                "no embeddings: pass embeddings= (required with base_retriever=, or when the "
                "vector store exposes none)"
            )
        return cached_embeddings(emb)

    def _call_kwargs(self, callbacks: Any) -> dict[str, Any]:
        backend = self._pipeline.llm.inner
        return {"callbacks": callbacks} if isinstance(backend, LangChainLLM) else {}

    @staticmethod
    def _documents(documents: Sequence[Document], result: DFRAGResult, relevance: NDArray[np.float64]) -> list[Document]:
        star = next(cs for cs in result.candidate_sets if result.lambda_star in cs.lambdas)
        scores = {f"{lam:g}": s for lam, s in result.lambda_scores.items()}
        out = []
        for rank, idx in enumerate(result.indices):
            doc = documents[idx]
            meta = dict(doc.metadata)
            meta.update(
                {
                    RELEVANCE_SCORE: float(relevance[idx]),
                    SELECTION_SCORE: float(star.score or 0.0),
                    SELECTION_RANK: rank,
                    SELECTION_METHOD: "dfrag",
                    SELECTION_PARAMS: {"lambda_mult": result.lambda_star, "k": len(result.indices)},
                    DFRAG_LAMBDA: result.lambda_star,
                    DFRAG_SCORES: scores,
                    DFRAG_PLAN: list(result.plan),
                }
            )
            out.append(Document(page_content=doc.page_content, metadata=meta, id=doc.id))
        return out

    @staticmethod
    def _relevance(q: NDArray[np.float32], vecs: NDArray[np.float32]) -> NDArray[np.float64]:
        qv = np.asarray(q, dtype=np.float64)
        v = np.asarray(vecs, dtype=np.float64)
        denom = np.linalg.norm(v, axis=1) * max(float(np.linalg.norm(qv)), 1e-300)
        return np.asarray((v @ qv) / np.where(denom > 0, denom, 1.0), dtype=np.float64)

    # -- the DF-RAG run ----------------------------------------------------------
    def run_dfrag(
        self, query: str, *, generate: bool = False, callbacks: Any = None
    ) -> tuple[DFRAGResult, list[Document]]:
        """Fetch, embed and run DF-RAG; returns the full result and the chosen documents."""
        embedder = self._embedder()
        qv = embedder.embed_query_array(query)
        if self.vectorstore is not None:
            docs = self.vectorstore.similarity_search_by_vector(qv.tolist(), k=self.fetch_k, **self.search_kwargs)
        else:
            assert self.base_retriever is not None
            docs = self.base_retriever.invoke(query, {"callbacks": callbacks} if callbacks else None)
        if not docs:
            raise InvalidParameterError(f"no candidate documents were retrieved for query={query!r}")
        vecs = embedder.embed_documents_array(document_texts(docs))
        result = self._pipeline.run(
            query, document_texts(docs), qv, vecs, generate=generate, call_kwargs=self._call_kwargs(callbacks)
        )
        return result, self._documents(docs, result, self._relevance(qv, vecs))

    async def arun_dfrag(
        self, query: str, *, generate: bool = False, callbacks: Any = None
    ) -> tuple[DFRAGResult, list[Document]]:
        """Asynchronous :meth:`run_dfrag`."""
        embedder = self._embedder()
        qv = await embedder.aembed_query_array(query)
        if self.vectorstore is not None:
            docs = await self.vectorstore.asimilarity_search_by_vector(
                qv.tolist(), k=self.fetch_k, **self.search_kwargs
            )
        else:
            assert self.base_retriever is not None
            docs = await self.base_retriever.ainvoke(query, {"callbacks": callbacks} if callbacks else None)
        if not docs:
            raise InvalidParameterError(f"no candidate documents were retrieved for query={query!r}")
        vecs = await embedder.aembed_documents_array(document_texts(docs))
        result = await self._pipeline.arun(
            query, document_texts(docs), qv, vecs, generate=generate, call_kwargs=self._call_kwargs(callbacks)
        )
        return result, self._documents(docs, result, self._relevance(qv, vecs))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.run_dfrag(query, callbacks=run_manager.get_child())[1]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return (await self.arun_dfrag(query, callbacks=run_manager.get_child()))[1]

    def as_chain(self) -> Runnable[Any, dict[str, Any]]:
        """A Runnable ``question -> {answer, context, lambda, scores, plan, cost, result}``."""
        return create_dfrag_chain(self)


def _question(inputs: Any) -> str:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, dict):
        for key in ("question", "query", "input"):
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
    raise InvalidParameterError(
        f"input must be a question string or a dict with 'question'; got {type(inputs).__name__}"
    )


def _output(result: DFRAGResult, docs: list[Document]) -> dict[str, Any]:
    return {
        "answer": result.answer,
        "context": docs,
        "lambda": result.lambda_star,
        "scores": {f"{lam:g}": s for lam, s in result.lambda_scores.items()},
        "plan": list(result.plan),
        "cost": asdict(result.cost),
        "result": result,
    }


def create_dfrag_chain(retriever: DFRAGRetriever) -> Runnable[Any, dict[str, Any]]:
    """A Runnable that answers a question with DF-RAG end to end (sync, async, batch, stream).

    Input: a question string or ``{"question": ...}``. Output: ``answer``, ``context``
    (the chosen documents), ``lambda`` (λ*), ``scores`` (score per λ), ``plan``, ``cost``
    (LLM calls, tokens, wall time) and ``result`` (the full ``DFRAGResult``).
    The run's callbacks see every LLM call.

    Example:
        >>> chain = create_dfrag_chain(retriever)  # doctest: +SKIP
        >>> chain.invoke("Where was the author of Dracula born?")["answer"]  # doctest: +SKIP
    """

    def invoke(inputs: Any, config: RunnableConfig) -> dict[str, Any]:
        result, docs = retriever.run_dfrag(_question(inputs), generate=True, callbacks=config.get("callbacks"))
        return _output(result, docs)

    async def ainvoke(inputs: Any, config: RunnableConfig) -> dict[str, Any]:
        result, docs = await retriever.arun_dfrag(
            _question(inputs), generate=True, callbacks=config.get("callbacks")
        )
        return _output(result, docs)

    return RunnableLambda(invoke, afunc=ainvoke, name="DFRAG")
