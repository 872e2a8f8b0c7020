"""``DiverseRetriever``: fetch candidates from a vector store or a retriever, return a diverse subset."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from diverse_core.errors import InvalidParameterError
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .embeddings import CachedEmbeddings, KnownVectors, cached_embeddings
from .selection import (
    SelectionPlan,
    document_texts,
    plan_for_call,
    plan_selection,
    select_documents,
)

__all__ = ["DiverseRetriever"]


def _stored_vector_lookup(store: VectorStore, documents: Sequence[Document]) -> KnownVectors | None:
    """Read candidate vectors a store already holds (cache misses only), or ``None``.

    Only :class:`InMemoryVectorStore` exposes its vectors cheaply (by document id);
    other stores' candidates are embedded once per process through the cache.
    """
    if not isinstance(store, InMemoryVectorStore):
        return None
    table = store.store

    def known(texts: list[str]) -> list[Any | None]:
        # Called on cache misses only, so the id index is built only when needed.
        by_text = {doc.page_content: doc.id for doc in documents if doc.id is not None}
        found: list[Any | None] = []
        for text in texts:
            entry = table.get(by_text[text]) if text in by_text else None
            found.append(None if entry is None or entry.get("text") != text else entry["vector"])
        return found

    return known


def _accepts_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes keyword ``name`` (explicitly or through ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    if name in params:
        return params[name].kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _private(model: BaseModel) -> dict[str, Any]:
    """The private attributes of ``model`` (pydantic's documented ``__pydantic_private__``).

    Reading ``model._attr`` goes through pydantic's ``__getattr__`` fallback (about 2 µs);
    the hot path reads this dict instead (one slot read). Writes still use ``model._attr = v``.
    """
    return model.__pydantic_private__  # type: ignore[return-value]


def _same_value(a: Any, b: Any) -> bool:
    """Equal and of the same type (``True == 1`` must not reuse a plan validated for 1)."""
    return type(a) is type(b) and bool(a == b)


def _same_settings(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Whether ``(method, method_params, k, fetch_k)`` are unchanged since ``old`` was taken."""
    old_method, old_params, old_k, old_fetch_k = old
    method, params, k, fetch_k = new
    try:
        return (
            _same_value(old_method, method)
            and _same_value(old_k, k)
            and _same_value(old_fetch_k, fetch_k)
            and isinstance(params, dict)
            and len(params) == len(old_params)
            and all(
                name in old_params and _same_value(old_params[name], value)
                for name, value in params.items()
            )
        )
    except (TypeError, ValueError):  # e.g. array-valued parameters: just re-validate
        return False


class DiverseRetriever(BaseRetriever):
    """Retrieve ``fetch_k`` candidates, then return ``k`` of them chosen for relevance *and* diversity.

    Candidates come from either a ``vectorstore`` (searched with the query embedding)
    or any ``base_retriever`` (invoked with ``fetch_k`` as its ``k``, see
    ``base_retriever_k_arg``); the selection ``method`` then picks ``k`` of them
    (``topk``, ``mmr``, ``gmmr``, ``dartboard`` or ``vendi``, with ``method_params``).
    Embeddings are cached per text for the whole process. Returned documents are
    copies carrying ``relevance_score``, ``selection_score``, ``selection_rank``,
    ``selection_method`` and ``selection_params`` in their metadata.

    ``k``, ``fetch_k``, ``method`` and ``method_params`` can also be given per call:
    ``retriever.invoke(query, k=3, method_params={"lambda_mult": 0.3})``.

    Args:
        vectorstore: the store to search (its ``embeddings`` are used unless
            ``embeddings`` is given).
        base_retriever: a retriever to take candidates from instead (needs ``embeddings``).
        embeddings: the model that embeds the query and the candidate texts.
        k: documents to return.
        fetch_k: candidates to fetch (``k <= fetch_k``).
        method: selection method name.
        method_params: the method's parameters, e.g. ``{"lambda_mult": 0.5}``.
        search_kwargs: extra arguments for the store search (e.g. ``filter``).
        base_retriever_k_arg: keyword under which ``fetch_k`` is passed to
            ``base_retriever.invoke`` when the retriever accepts it (``None``: never
            pass it; the retriever's own settings then decide how many candidates come
            back). A retriever whose async method does not take it while its sync
            method does is run through its sync method in a worker thread.
        use_stored_vectors: read candidate vectors from the store when it exposes
            them (``InMemoryVectorStore``) instead of embedding their texts.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        >>> _ = store.add_texts([f"text {i}" for i in range(30)])
        >>> retriever = DiverseRetriever(vectorstore=store, k=3, method="gmmr",
        ...                              method_params={"lambda_mult": 0.6})
        >>> docs = retriever.invoke("text 1")
        >>> [d.metadata["selection_rank"] for d in docs]
        [0, 1, 2]
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vectorstore: VectorStore | None = None
    base_retriever: BaseRetriever | None = None
    embeddings: Embeddings | None = None
    k: int = 4
    fetch_k: int = 20
    method: str = "gmmr"
    method_params: dict[str, Any] = Field(default_factory=dict)
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    base_retriever_k_arg: str | None = "k"
    use_stored_vectors: bool = True

    _embedder_memo: tuple[Embeddings, CachedEmbeddings] | None = PrivateAttr(default=None)
    _plan_memo: tuple[tuple[Any, ...], SelectionPlan] | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Checked here rather than in a pydantic validator so callers get the typed
        # errors (InvalidParameterError, UnknownMethodError) unwrapped.
        if (self.vectorstore is None) == (self.base_retriever is None):
            raise InvalidParameterError(
                "give exactly one of vectorstore= or base_retriever=; got "
                f"vectorstore={type(self.vectorstore).__name__}, "
                f"base_retriever={type(self.base_retriever).__name__}"
            )
        if self.base_retriever is not None and self.embeddings is None:
            raise InvalidParameterError(
                "base_retriever= needs embeddings= to embed the query and the candidates"
            )
        self._embedder()  # the store must expose embeddings when none are given
        plan_selection(self.method, self.method_params, self.k, self.fetch_k)

    # -- helpers ---------------------------------------------------------------
    def _source_embeddings(self) -> Embeddings:
        if self.embeddings is not None:
            return self.embeddings
        store_emb = self.vectorstore.embeddings if self.vectorstore is not None else None
        if store_emb is None:
            raise InvalidParameterError(
                f"the vector store {type(self.vectorstore).__name__} exposes no embeddings; "
                "pass embeddings="
            )
        return store_emb

    def _embedder(self) -> CachedEmbeddings:
        source = self._source_embeddings()
        memo: tuple[Embeddings, CachedEmbeddings] | None = _private(self)["_embedder_memo"]
        if memo is None or memo[0] is not source:  # namespace look-up once per model object
            memo = (source, cached_embeddings(source))
            self._embedder_memo = memo
        return memo[1]

    def _plan(self, kwargs: dict[str, Any]) -> SelectionPlan:
        settings = (self.method, self.method_params, self.k, self.fetch_k)
        if kwargs:
            return plan_for_call(settings, kwargs)
        # No per-call overrides: reuse the plan validated for the current settings
        # (fields may be reassigned or method_params edited in place, so compare).
        memo: tuple[tuple[Any, ...], SelectionPlan] | None = _private(self)["_plan_memo"]
        if memo is not None and _same_settings(memo[0], settings):
            return memo[1]
        plan = plan_for_call(settings, kwargs)
        self._plan_memo = ((self.method, dict(self.method_params), self.k, self.fetch_k), plan)
        return plan

    def _known(self, documents: Sequence[Document]) -> KnownVectors | None:
        store = self.vectorstore
        if store is None or not self.use_stored_vectors:
            return None
        if self.embeddings is not None and self.embeddings is not store.embeddings:
            return None  # the store's vectors come from another model
        return _stored_vector_lookup(store, documents)

    def _fetch_kwargs(self, plan: SelectionPlan, fn: Callable[..., Any]) -> dict[str, Any]:
        name = self.base_retriever_k_arg
        if name is None or not _accepts_keyword(fn, name):
            return {}
        return {name: plan.fetch_k}

    async def _afetch_from_retriever(
        self, query: str, plan: SelectionPlan, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        base = self.base_retriever
        assert base is not None
        kwargs = self._fetch_kwargs(plan, base._aget_relevant_documents)
        if not kwargs and self._fetch_kwargs(plan, base._get_relevant_documents):
            # Only the sync path takes fetch_k (BaseRetriever's default async drops it).
            sync_kwargs = self._fetch_kwargs(plan, base._get_relevant_documents)
            config: RunnableConfig = {"callbacks": run_manager.get_sync().get_child()}
            return await asyncio.to_thread(base.invoke, query, config, **sync_kwargs)
        return await base.ainvoke(query, config={"callbacks": run_manager.get_child()}, **kwargs)

    def _finish(
        self,
        query_vector: NDArray[np.float32],
        documents: list[Document],
        vectors: NDArray[np.float32],
        plan: SelectionPlan,
    ) -> list[Document]:
        return select_documents(query_vector, documents, vectors, plan)

    # -- sync ------------------------------------------------------------------
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        plan = self._plan(kwargs)
        embedder = self._embedder()
        query_vector = embedder.embed_query_array(query)
        if self.vectorstore is not None:
            documents = self.vectorstore.similarity_search_by_vector(
                query_vector.tolist(), k=plan.fetch_k or self.fetch_k, **self.search_kwargs
            )
        else:
            assert self.base_retriever is not None
            fetch = self._fetch_kwargs(plan, self.base_retriever._get_relevant_documents)
            documents = self.base_retriever.invoke(
                query, config={"callbacks": run_manager.get_child()}, **fetch
            )
        if not documents:
            return []
        texts = document_texts(documents)
        vectors = embedder.embed_documents_array(texts, known=self._known(documents))
        return self._finish(query_vector, documents, vectors, plan)

    # -- async -----------------------------------------------------------------
    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        plan = self._plan(kwargs)
        embedder = self._embedder()
        query_vector = await embedder.aembed_query_array(query)
        if self.vectorstore is not None:
            documents = await self.vectorstore.asimilarity_search_by_vector(
                query_vector.tolist(), k=plan.fetch_k or self.fetch_k, **self.search_kwargs
            )
        else:
            documents = await self._afetch_from_retriever(query, plan, run_manager)
        if not documents:
            return []
        texts = document_texts(documents)
        vectors = await embedder.aembed_documents_array(texts, known=self._known(documents))
        # The selection is CPU work: keep it off the event loop.
        return await asyncio.to_thread(self._finish, query_vector, documents, vectors, plan)
