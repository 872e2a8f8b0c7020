"""``DiverseRetriever``: fetch candidates from a vector store or a retriever, return a diverse subset."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from diverse_core.embedder_check import check_embedder
from diverse_core.errors import DimensionMismatchError, InvalidParameterError, ZeroVectorError
from diverse_core.plan import Plan
from diverse_core.registry import given_once
from diverse_core.validation import check_k, check_unit_interval
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
from pydantic import ConfigDict, Field, PrivateAttr

from ._stored import StoreSearch, supports_stored_vectors
from .embeddings import DEFAULT_CACHE_SIZE, CachedEmbeddings, KnownVectors, cached_embeddings
from .selection import (
    check_sizes,
    current_plan,
    document_texts,
    face_plan,
    fold_diversity,
    nonblank_documents,
    plan_for_call,
    select_documents,
)

__all__ = ["DiverseRetriever", "as_diverse_retriever"]

logger = logging.getLogger(__name__)


def _absorb_search_kwargs(data: dict[str, Any]) -> None:
    """Move ``k``/``fetch_k``/``lambda_mult``/``diversity``/``score_threshold`` from ``search_kwargs`` to fields.

    What ``store.as_retriever(search_type="mmr", search_kwargs={...})`` users pass is
    accepted here; a key given both ways with different values is rejected, naming both
    (:class:`~diverse_core.errors.ConflictingParametersError`).
    Everything else (``filter``, ...) stays in ``search_kwargs`` for the store search.
    """
    raw = data.get("search_kwargs")
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise InvalidParameterError(f"search_kwargs must be a dict; got search_kwargs={raw!r}")
    rest = dict(raw)
    for key in ("k", "fetch_k", "score_threshold"):
        if key in rest:
            value = rest.pop(key)
            given_once(key, data.get(key), value, f"{key}={data.get(key)!r}", f"search_kwargs={{{key!r}: {value!r}}}")
            data[key] = value
    for name in ("lambda_mult", "diversity"):
        if name in rest:
            value = rest.pop(name)
            params = dict(data.get("method_params") or {})
            given_once(name, params.get(name), value, f"method_params={params!r}", f"search_kwargs={{{name!r}: {value!r}}}")
            data["method_params"] = {**params, name: value}
    data["search_kwargs"] = rest


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


class DiverseRetriever(BaseRetriever):
    """Retrieve ``fetch_k`` candidates, then return ``k`` of them chosen for relevance *and* diversity.

    Candidates come from either a ``vectorstore`` (searched with the query embedding)
    or any ``base_retriever`` (invoked with ``fetch_k`` as its ``k``, see
    ``base_retriever_k_arg``); the selection ``method`` then picks ``k`` of them
    (any registered method, ``diverse_core.available_methods()``, with ``method_params``).
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
        diversity: the shared knob in [0, 1] (0: pure relevance, 1: the method's most diverse
            setting), mapped to the method's own parameter (a keyword, kept in
            ``method_params``; also accepted in ``search_kwargs`` and per call:
            ``invoke(q, diversity=0.8)`` replaces the configured trade-off).
        search_kwargs: extra arguments for the store search (e.g. ``filter``).
        base_retriever_k_arg: keyword under which ``fetch_k`` is passed to
            ``base_retriever.invoke`` when the retriever accepts it (``None``: never
            pass it; the retriever's own settings then decide how many candidates come
            back). A retriever whose async method does not take it while its sync
            method does is run through its sync method in a worker thread.
        use_stored_vectors: read candidate vectors from the store when it holds them
            (``InMemoryVectorStore``, FAISS, Qdrant, Chroma; PGVector returns them with
            the search itself), so a query embeds only the query; other stores' candidates are embedded once per text through the cache
            (logged as a warning once per retriever).
        score_threshold: drop candidates whose cosine similarity to the query is below
            it before selecting (``search_kwargs={"score_threshold": ...}`` maps here).
        cache_size: most texts kept in the process-wide embedding cache of the model
            (documents and queries apart; the bound only grows when shared).
        source_key: the metadata key of each document's source (``"source"``, set by
            LangChain's loaders): ``method="learned"`` counts windows of one source as one.
            ``None``: read the ``"title: "`` prefix of the texts instead.
        title_key: the metadata key of a document's display title (``None``: not read).

    ``search_kwargs`` also takes what ``store.as_retriever(search_type="mmr")`` users
    pass: ``k``, ``fetch_k``, ``lambda_mult``, ``diversity`` and ``score_threshold`` are moved to the
    fields (the same key given both ways with different values is rejected), the rest
    (``filter``, ...) goes to the store search. See also :func:`as_diverse_retriever`.

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
    score_threshold: float | None = None
    cache_size: int = DEFAULT_CACHE_SIZE
    source_key: str | None = "source"
    title_key: str | None = "title"

    _embedder_memo: tuple[Embeddings, CachedEmbeddings] | None = PrivateAttr(default=None)
    _plan: Plan | None = PrivateAttr(default=None)
    _warned: set[str] = PrivateAttr(default_factory=set)

    def __init__(self, **data: Any) -> None:
        fold_diversity(data)
        _absorb_search_kwargs(data)
        for name in ("k", "fetch_k", "cache_size"):  # before pydantic turns "3" into 3
            if name in data:
                check_k(data[name], name)
        if data.get("score_threshold") is not None:
            check_unit_interval(data["score_threshold"], "score_threshold")
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
        self._plan = face_plan(self.method, self.method_params)
        check_embedder(self._plan.method, self._plan.params, self._source_embeddings())
        check_sizes(self.k, self.fetch_k)
        if self.base_retriever is not None:
            self._check_fetch_reaches(self.base_retriever)

    # -- helpers ---------------------------------------------------------------
    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

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
        memo = self._embedder_memo
        if memo is None or memo[0] is not source:  # registry look-up once per model object
            memo = (source, cached_embeddings(source, maxsize=self.cache_size))
            self._embedder_memo = memo
        return memo[1]

    def _settings(self, kwargs: dict[str, Any]) -> tuple[Plan, int, int]:
        """The plan, ``k`` and ``fetch_k`` of one call (the face's own plan unless ``kwargs`` change them)."""
        if kwargs:
            plan, k, fetch_k = plan_for_call(self, self.k, self.fetch_k, kwargs)
        else:
            plan, (k, fetch_k) = current_plan(self), check_sizes(self.k, self.fetch_k)
        assert fetch_k is not None
        return plan, k, fetch_k

    def _check_query(self, query_vector: NDArray[np.float32], embedder: CachedEmbeddings) -> None:
        """Reject a zero query vector or one of another dimension before the store is searched."""
        if not np.any(query_vector):
            raise ZeroVectorError(
                "the query embedding is all zeros, so no cosine similarity is defined; "
                f"check the embeddings model ({type(embedder.embeddings).__name__})"
            )
        expected = _store_dimension(self.vectorstore) if self.vectorstore is not None else None
        if expected is None:
            expected = embedder.document_cache.dimension
        if expected is not None and query_vector.shape[0] != expected:
            raise DimensionMismatchError(
                f"the query embedding has dimension {query_vector.shape[0]} but the "
                f"{'store' if self.vectorstore is not None else 'document'} vectors have "
                f"dimension {expected}; were both made by the same embeddings model?"
            )

    def _reads_stored(self) -> bool:
        """Whether candidate vectors may be read from the store (same model, not turned off)."""
        store = self.vectorstore
        if store is None or not self.use_stored_vectors:
            return False
        # The store's vectors come from its own model: with another one, embed with ours.
        return self.embeddings is None or self.embeddings is store.embeddings

    def _check_known(self, known: KnownVectors | None) -> KnownVectors | None:
        """``known`` as it is; warns once when the store's vectors cannot be read."""
        if known is None and self.vectorstore is not None and self._reads_stored():
            if not supports_stored_vectors(self.vectorstore):
                self._warn_once(
                    "re-embed",
                    "DiverseRetriever cannot read stored vectors from %s: candidates are embedded "
                    "with %s through the cache (once per text per process). Stores read directly: "
                    "InMemoryVectorStore, FAISS, Qdrant, Chroma, PGVector.",
                    type(self.vectorstore).__name__, type(self._source_embeddings()).__name__,
                )
        return known

    # -- wrapped retrievers ----------------------------------------------------
    def _check_fetch_reaches(self, base: BaseRetriever) -> None:
        """Warn at construction when ``fetch_k`` cannot reach ``base`` (no keyword, no field)."""
        name = self.base_retriever_k_arg
        if name is None:
            return
        if _accepts_keyword(base._get_relevant_documents, name) or name in type(base).model_fields:
            return
        self._warn_once(
            "fetch_k",
            "%s takes no %r argument and has no %r field: fetch_k=%d is ignored and it returns "
            "its own number of candidates (set base_retriever_k_arg to the keyword it takes, "
            "or configure it to return fetch_k documents)",
            type(base).__name__, name, name, self.fetch_k,
        )

    def _sized(self, base: BaseRetriever, fetch_k: int, fn: Callable[..., Any]
               ) -> tuple[BaseRetriever, dict[str, Any]]:
        """``base`` (or a copy with its ``k`` field set) and the keyword arguments carrying fetch_k."""
        name = self.base_retriever_k_arg
        if name is None:
            return base, {}
        if _accepts_keyword(fn, name):
            return base, {name: fetch_k}
        if name in type(base).model_fields and getattr(base, name, None) != fetch_k:
            # e.g. BM25Retriever: its `k` is a field, not an argument. Set it on a shallow
            # copy so the caller's retriever is never changed.
            return base.model_copy(update={name: fetch_k}), {}
        return base, {}

    def _fetch(self, query: str, fetch_k: int, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        base = self.base_retriever
        assert base is not None
        target, kwargs = self._sized(base, fetch_k, base._get_relevant_documents)
        return target.invoke(query, config={"callbacks": run_manager.get_child()}, **kwargs)

    async def _afetch(
        self, query: str, fetch_k: int, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        base = self.base_retriever
        assert base is not None
        target, kwargs = self._sized(base, fetch_k, base._aget_relevant_documents)
        name = self.base_retriever_k_arg
        if not kwargs and target is base and name is not None and _accepts_keyword(base._get_relevant_documents, name):
            # Only the sync path takes fetch_k (BaseRetriever's default async drops it).
            config: RunnableConfig = {"callbacks": run_manager.get_sync().get_child()}
            return await asyncio.to_thread(base.invoke, query, config, **{name: fetch_k})
        return await target.ainvoke(query, config={"callbacks": run_manager.get_child()}, **kwargs)

    def _finish(
        self,
        query_vector: NDArray[np.float32],
        documents: list[Document],
        vectors: NDArray[np.float32],
        plan: Plan,
        k: int,
        query: str,
        blank: list[int],
    ) -> list[Document]:
        if self.score_threshold is not None:
            documents, vectors = _above_threshold(query_vector, documents, vectors, self.score_threshold)
        return select_documents(query_vector, documents, vectors, plan, k, question=query,
                                source_key=self.source_key, title_key=self.title_key, blank=blank)

    # -- sync ------------------------------------------------------------------
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        plan, k, fetch_k = self._settings(kwargs)
        embedder = self._embedder()
        query_vector = embedder.embed_query_array(query)
        self._check_query(query_vector, embedder)
        known: KnownVectors | None = None
        if self.vectorstore is not None:
            search = StoreSearch(self.vectorstore, self.search_kwargs, self._reads_stored())
            documents, known = search.run(query_vector.tolist(), fetch_k)
        else:
            documents = self._fetch(query, fetch_k, run_manager)
        if not documents:
            return []
        documents, blank = nonblank_documents(documents)
        vectors = embedder.embed_documents_array(document_texts(documents), known=self._check_known(known))
        return self._finish(query_vector, documents, vectors, plan, k, query, blank)

    # -- async -----------------------------------------------------------------
    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        plan, k, fetch_k = self._settings(kwargs)
        embedder = self._embedder()
        query_vector = await embedder.aembed_query_array(query)
        self._check_query(query_vector, embedder)
        known: KnownVectors | None = None
        if self.vectorstore is not None:
            search = StoreSearch(self.vectorstore, self.search_kwargs, self._reads_stored())
            documents, known = await search.arun(query_vector.tolist(), fetch_k)
        else:
            documents = await self._afetch(query, fetch_k, run_manager)
        if not documents:
            return []
        documents, blank = nonblank_documents(documents)
        texts = document_texts(documents)
        vectors = await embedder.aembed_documents_array(texts, known=self._check_known(known))
        # The selection is CPU work: keep it off the event loop.
        return await asyncio.to_thread(self._finish, query_vector, documents, vectors, plan, k, query, blank)


def _store_dimension(store: VectorStore) -> int | None:
    """The vector dimension a store declares cheaply (FAISS index, a stored in-memory vector)."""
    index = getattr(store, "index", None)
    d = getattr(index, "d", None)
    if isinstance(d, int) and d > 0 and getattr(index, "ntotal", 0) > 0:
        return d
    if isinstance(store, InMemoryVectorStore) and store.store:
        vector = next(iter(store.store.values())).get("vector")
        return len(vector) if vector is not None else None
    return None


def _above_threshold(
    query_vector: NDArray[np.float32],
    documents: list[Document],
    vectors: NDArray[np.float32],
    threshold: float,
) -> tuple[list[Document], NDArray[np.float32]]:
    """The candidates whose cosine similarity to the query is at least ``threshold``."""
    if vectors.ndim != 2 or vectors.shape[1] != query_vector.shape[0]:
        return documents, vectors  # select_documents reports the mismatch
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query_vector))
    cosine = (vectors @ query_vector) / np.where(norms > 0, norms, 1.0)
    keep = np.flatnonzero(cosine >= threshold)
    if keep.size == len(documents):
        return documents, vectors
    return [documents[i] for i in keep.tolist()], vectors[keep]


#: ``search_type`` names LangChain users know, mapped to a selection method.
_SEARCH_TYPES = {"similarity": "topk", "mmr": "mmr"}


def as_diverse_retriever(
    store: VectorStore | BaseRetriever,
    search_type: str | None = None,
    search_kwargs: Mapping[str, Any] | None = None,
    **fields: Any,
) -> DiverseRetriever:
    """``store.as_retriever(...)`` with diversity: the one-line swap for existing code.

    Takes what ``as_retriever`` takes: ``search_type`` is ``"mmr"`` or ``"similarity"``
    (LangChain's names) or any selection method (``"gmmr"``, ``"dartboard"``,
    ``"vendi"``, ...); ``search_kwargs`` may hold ``k``, ``fetch_k``, ``lambda_mult``,
    ``score_threshold`` (mapped onto :class:`DiverseRetriever`'s fields) and ``filter``
    or other store arguments. A ``VectorStoreRetriever`` (what ``as_retriever``
    returned) is unwrapped: its store, ``search_type`` and ``search_kwargs`` are kept
    unless given here. Other fields of :class:`DiverseRetriever` go in ``fields``.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        >>> _ = store.add_texts([f"text {i}" for i in range(30)])
        >>> before = store.as_retriever(search_type="mmr", search_kwargs={"k": 3, "fetch_k": 10})
        >>> after = as_diverse_retriever(store, search_type="gmmr",
        ...                              search_kwargs={"k": 3, "fetch_k": 10, "lambda_mult": 0.6})
        >>> len(after.invoke("text 1")), as_diverse_retriever(before).method
        (3, 'mmr')
    """
    from langchain_core.vectorstores import VectorStoreRetriever

    if isinstance(store, VectorStoreRetriever):
        if search_type is None and store.search_type in _SEARCH_TYPES:
            search_type = store.search_type
        if search_kwargs is None:
            search_kwargs = store.search_kwargs
        store = store.vectorstore
    if not isinstance(store, VectorStore):
        raise InvalidParameterError(
            "as_diverse_retriever takes a VectorStore or a VectorStoreRetriever; got "
            f"{type(store).__name__} (wrap other retrievers with "
            "DiverseRetriever(base_retriever=..., embeddings=...))"
        )
    if search_type is not None:
        if "method" in fields:
            raise InvalidParameterError(
                f"give search_type or method, not both; got search_type={search_type!r}, "
                f"method={fields['method']!r}"
            )
        fields["method"] = _SEARCH_TYPES.get(search_type, search_type)
    return DiverseRetriever(vectorstore=store, search_kwargs=dict(search_kwargs or {}), **fields)
