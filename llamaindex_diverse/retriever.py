"""``DiverseRetriever``: any LlamaIndex retriever followed by diversity-aware selection."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from diverse_core.embedder_check import check_embedder
from diverse_core.errors import InvalidParameterError
from diverse_core.validation import check_k
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle

from ._pg_rows import (
    RETRIEVE_DISPATCHERS,
    PgCandidates,
    collected_reader,
    collecting,
    pg_guard,
    row_searcher,
    searching_with_vectors,
)
from ._stored import reading, stored_vectors_of
from .postprocessor import DiverseNodePostprocessor

__all__ = ["DiverseRetriever"]

logger = logging.getLogger(__name__)

#: The dispatchers whose events and spans a vector index retriever's ``retrieve`` and the
#: postprocessor send (the row shortcut skips them).
_OBSERVED = (*RETRIEVE_DISPATCHERS, get_dispatcher("llamaindex_diverse.postprocessor"))


def _declared_fetch_k(retriever: BaseRetriever) -> int | None:
    """``similarity_top_k`` of retrievers that expose it (vector index retrievers do)."""
    value = getattr(retriever, "similarity_top_k", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class DiverseRetriever(BaseRetriever):
    """Fetch ``fetch_k`` candidates with a base retriever, keep ``top_n`` diverse ones.

    Equivalent to the base retriever followed by a :class:`DiverseNodePostprocessor`,
    packaged as a retriever so it plugs in wherever LlamaIndex takes one (query
    engines, chat engines, routers). Sync ``retrieve`` and async ``aretrieve`` both
    work; the async path awaits the base retriever and the embedding model.

    Candidate vectors are the stores' own when they keep them (SimpleVectorStore,
    Qdrant, FAISS, ``PGVectorStore``). Over ``PGVectorStore`` a plain
    ``index.as_retriever()`` in the default mode is searched with the store's query that
    keeps the vector column (rows and vectors in one statement); otherwise the vectors
    are read by node id in one batch. There, when no callback handler, event handler or
    span handler observes the base retriever or the postprocessor, the selection runs on
    the rows' vectors and only the ``top_n`` chosen rows are turned into nodes (the same
    nodes, scores and metadata; the base retriever's own retrieve events are what is
    skipped, so with an observer every candidate becomes a node first, as before).

    Args:
        retriever: the base retriever, e.g. ``index.as_retriever(similarity_top_k=20)``.
        postprocessor: a configured :class:`DiverseNodePostprocessor`; or leave it out
            and give ``top_n``/``method``/``method_params``/``embed_model``.
        top_n: nodes returned (``k`` is an alias); default 4.
        method: the selection method (see :class:`DiverseNodePostprocessor`).
        method_params: its parameters (see :class:`DiverseNodePostprocessor`).
        embed_model: embeds the query and nodes lacking an embedding.
        diversity: the shared knob in [0, 1] (see :class:`DiverseNodePostprocessor`).
        fetch_k: candidates the base retriever returns. Read from the retriever's
            ``similarity_top_k`` when it has one; used to reject ``top_n > fetch_k``.
        callback_manager: defaults to the base retriever's; also given to the postprocessor.
        source_key: for ``method="learned"``, the metadata key of a node's source id (default:
            its ``ref_doc_id``; see :class:`DiverseNodePostprocessor`).
        title_key: the metadata key of a node's display title (default ``"title"``).

    Raises:
        InvalidParameterError: ``top_n > fetch_k``, ``fetch_k`` disagreeing with the
            retriever's ``similarity_top_k``, or a postprocessor given together with
            selection settings.

    Example:
        >>> from llama_index.core import Document, VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> index = VectorStoreIndex.from_documents(
        ...     [Document(text=t) for t in ["a", "b", "c"]], embed_model=MockEmbedding(embed_dim=8))
        >>> retriever = DiverseRetriever(index.as_retriever(similarity_top_k=3), top_n=2,
        ...                              method="gmmr", embed_model=MockEmbedding(embed_dim=8))
        >>> len(retriever.retrieve("a question"))
        2
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        postprocessor: DiverseNodePostprocessor | None = None,
        *,
        top_n: int | None = None,
        k: int | None = None,
        method: str | None = None,
        method_params: Mapping[str, Any] | None = None,
        embed_model: BaseEmbedding | None = None,
        fetch_k: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        diversity: float | None = None,
        source_key: str | None = None,
        title_key: str | None = None,
    ) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise InvalidParameterError(
                f"retriever must be a llama_index BaseRetriever; got {type(retriever).__name__}"
            )
        settings = {
            "top_n": top_n, "k": k, "method": method,
            "method_params": method_params, "embed_model": embed_model, "diversity": diversity,
            "source_key": source_key, "title_key": title_key,
        }
        given = sorted(name for name, value in settings.items() if value is not None)
        if postprocessor is not None:
            if given:
                raise InvalidParameterError(
                    f"pass either postprocessor or selection settings, not both; got "
                    f"postprocessor and {given}"
                )
            if not isinstance(postprocessor, DiverseNodePostprocessor):
                raise InvalidParameterError(
                    "postprocessor must be a DiverseNodePostprocessor; got "
                    f"{type(postprocessor).__name__}"
                )
        else:
            postprocessor = DiverseNodePostprocessor(
                top_n=top_n,
                k=k,
                method=method or "gmmr",
                method_params=method_params,
                embed_model=embed_model,
                diversity=diversity,
                source_key=source_key,
                title_key="title" if title_key is None else title_key,
            )
        if postprocessor.embed_model is None and (searcher := getattr(retriever, "_embed_model", None)) is not None:
            plan = postprocessor._current_plan()  # the embeddings the index searched with
            check_embedder(plan.method, plan.params, searcher)
        declared = _declared_fetch_k(retriever)
        if fetch_k is not None:
            fetch_k = check_k(fetch_k, "fetch_k")
            if declared is not None and declared != fetch_k:
                raise InvalidParameterError(
                    f"fetch_k={fetch_k} but the base retriever has similarity_top_k={declared}; "
                    "build it with similarity_top_k=fetch_k"
                )
        fetch_k = fetch_k if fetch_k is not None else declared
        if fetch_k is not None and postprocessor.top_n > fetch_k:
            raise InvalidParameterError(
                f"top_n={postprocessor.top_n} is larger than fetch_k={fetch_k}: the selection "
                "needs at least top_n candidates; raise fetch_k (similarity_top_k)"
            )
        cm = callback_manager or getattr(retriever, "callback_manager", None) or CallbackManager()
        super().__init__(callback_manager=cm, verbose=verbose)
        postprocessor.callback_manager = cm
        self._retriever = retriever
        self._postprocessor = postprocessor
        self._fetch_k = fetch_k
        self._warned = False

    @classmethod
    def from_index(
        cls,
        index: Any,
        *,
        top_n: int = 4,
        fetch_k: int = 20,
        method: str = "gmmr",
        method_params: Mapping[str, Any] | None = None,
        embed_model: BaseEmbedding | None = None,
        diversity: float | None = None,
        source_key: str | None = None,
        title_key: str | None = None,
        **retriever_kwargs: Any,
    ) -> DiverseRetriever:
        """Wrap ``index.as_retriever(similarity_top_k=fetch_k, **retriever_kwargs)``.

        ``embed_model`` defaults to the index's own embedding model, so nodes that the
        vector store returns without embeddings are embedded like the index did.
        """
        if top_n > fetch_k:
            raise InvalidParameterError(
                f"top_n={top_n} is larger than fetch_k={fetch_k}; raise fetch_k"
            )
        model = embed_model if embed_model is not None else getattr(index, "_embed_model", None)
        return cls(
            index.as_retriever(similarity_top_k=fetch_k, **retriever_kwargs),
            top_n=top_n,
            method=method,
            method_params=method_params,
            embed_model=model if isinstance(model, BaseEmbedding) else None,
            fetch_k=fetch_k,
            diversity=diversity,
            source_key=source_key,
            title_key=title_key,
        )

    @property
    def retriever(self) -> BaseRetriever:
        """The wrapped base retriever."""
        return self._retriever

    @property
    def postprocessor(self) -> DiverseNodePostprocessor:
        """The selection step."""
        return self._postprocessor

    @property
    def fetch_k(self) -> int | None:
        """Candidates fetched per query, when known."""
        return self._fetch_k

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"retriever": self._retriever}

    def _searcher(self) -> BaseRetriever:
        """The base retriever, or its stand-in that also returns the stored vectors
        (``PGVectorStore``: one statement for rows and vectors, see ``_pg_rows``)."""
        return searching_with_vectors(self._retriever, self._postprocessor.embed_model) or self._retriever

    def _row_searcher(self) -> Any:
        """The ``PGVectorStore`` stand-in when the selection may run on the search's rows: only
        when nobody observes the base retriever's or the postprocessor's events, spans and
        callbacks (those are what the shortcut skips), else ``None``."""
        return row_searcher(self._retriever, self._postprocessor.embed_model, _OBSERVED,
                            self.callback_manager, self._postprocessor.callback_manager)

    def _stored_reader(self, nodes: list[NodeWithScore], found: dict[str, Any]) -> Any:
        """The stored-vector reader for this call (vectors the search returned first, then a
        read by node id); warns once when nodes must be embedded."""
        read = collected_reader(found, stored_vectors_of(self._retriever, self._postprocessor.embed_model))
        if read is None and not self._warned and any(n.node.embedding is None for n in nodes):
            self._warned = True
            logger.warning(
                "DiverseRetriever cannot read stored vectors behind %s: node texts are embedded "
                "with the embed model through the cache (once per text per process). Read "
                "directly: index.as_retriever() over SimpleVectorStore, Qdrant, FAISS or PGVectorStore.",
                type(self._retriever).__name__,
            )
        return read

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        rows = self._row_searcher()
        with collecting() as found, pg_guard(self._retriever):
            if rows is None:
                got = self._searcher().retrieve(query_bundle)
            else:  # the base retriever's nodes, or (selected on at once) the rows
                got = rows.search_rows(query_bundle, self._postprocessor.reads_rows)
        if isinstance(got, PgCandidates):
            return self._postprocessor.select_rows(got, query_bundle)
        with reading(self._stored_reader(got, found)):
            return self._postprocessor.postprocess_nodes(got, query_bundle=query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # A vector index retriever's async path embeds the query into a bundle of its
        # own, so the postprocessor would embed it a second time: embed it here, once.
        model = getattr(self._retriever, "_embed_model", None)
        store = getattr(self._retriever, "_vector_store", None)
        if (
            query_bundle.embedding is None
            and isinstance(model, BaseEmbedding)
            and getattr(store, "is_embedding_query", False)
            and query_bundle.embedding_strs
        ):
            query_bundle.embedding = await model.aget_agg_embedding_from_queries(
                query_bundle.embedding_strs
            )
        rows = self._row_searcher()
        with collecting() as found, pg_guard(self._retriever):
            if rows is None:
                got = await self._searcher().aretrieve(query_bundle)
            else:
                got = await rows.asearch_rows(query_bundle, self._postprocessor.reads_rows)
        if isinstance(got, PgCandidates):
            return await self._postprocessor.aselect_rows(got, query_bundle)
        with reading(self._stored_reader(got, found)):
            return await self._postprocessor.apostprocess_nodes(got, query_bundle=query_bundle)
