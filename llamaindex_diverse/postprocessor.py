"""``DiverseNodePostprocessor``: diversity-aware selection as a LlamaIndex node postprocessor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
from diverse_core import get_method, select
from diverse_core.embedding_cache import KnownAt
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.registry import resolve_user_params, with_diversity
from diverse_core.result import Selection
from diverse_core.text import source_inputs
from diverse_core.validation import check_k
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.callbacks.base import EventContext
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from numpy.typing import NDArray

from ._metadata import json_friendly_params, with_selection_metadata
from ._observers import has_event_handlers
from ._pg_rows import PgCandidates
from ._stored import StoredVectors, known_for, store_reader
from ._vectors import (
    BoundCache,
    ModelBoundCache,
    NodeTextMemo,
    model_namespace,
    nodes_to_embed,
    query_strings,
    stack_node_vectors,
)

__all__ = ["DiverseNodePostprocessor"]

dispatcher = get_dispatcher(__name__)


def _has_event_handlers() -> bool:
    """Whether any instrumentation event handler would see this module's events (when
    nobody listens, the events, pydantic models validating every node, are not built)."""
    return has_event_handlers(dispatcher)


def _end_event(nodes: list[NodeWithScore]) -> None:
    if _has_event_handlers():
        dispatcher.event(ReRankEndEvent(nodes=nodes))


def _same_params(old: dict[str, Any], new: Mapping[str, Any]) -> bool:
    """Same names, types and values (``True == 1`` must not pass for a validated 1)."""
    try:
        return len(old) == len(new) and all(
            name in old and type(old[name]) is type(value) and bool(old[name] == value)
            for name, value in new.items()
        )
    except (TypeError, ValueError):  # e.g. array-valued parameters: just re-validate
        return False


class DiverseNodePostprocessor(BaseNodePostprocessor):
    """Keep ``top_n`` nodes that are relevant to the query *and* different from each other.

    Runs one of the ``diverse_core`` methods (any of ``diverse_core.available_methods()``,
    e.g. ``gmmr``, ``mmr``, ``learned``) over the retrieved nodes. Node vectors are the nodes' own embeddings when
    present; otherwise the node text (``metadata_mode`` content, what a vector index
    embeds) is embedded with ``embed_model`` through a bounded per-text cache. The query
    vector is ``QueryBundle.embedding`` (set by vector retrievers) or is embedded.

    Returned nodes are copies, in pick order. ``NodeWithScore.score`` stays the
    retrieval relevance; the node metadata gains ``selection_method``,
    ``selection_params``, ``selection_rank`` (0-based), ``selection_score`` (the
    method's objective at the pick) and ``selection_relevance`` (relevance the method
    used). These keys are hidden from embedding and LLM prompts unless
    ``hide_selection_metadata=False``. A method that reads text (``adaptive``) is given
    the query string (``QueryBundle.query_str``) and the nodes' ``metadata_mode``
    content (the text that is embedded); ``selection_params`` then also shows what it
    chose (``lambda_mult``, ``variant``), never the texts.

    Args:
        top_n: nodes to keep (``k`` is accepted as an alias). Fewer nodes in than
            ``top_n`` returns all of them, re-ordered.
        method: any registered method name (``diverse_core.available_methods()``).
        diversity: the shared knob in [0, 1] (0: pure relevance, 1: the method's most
            diverse setting), mapped to the method's own parameter; kept in ``method_params``.
        method_params: the method's parameters, e.g. ``{"lambda_mult": 0.5}``
            (mmr/gmmr), ``{"sigma": 0.1}`` (dartboard), ``{"s": 0.5}`` (vendi);
            validated here, defaults filled in.
        embed_model: embeds nodes without embeddings and queries without one;
            defaults to ``Settings.embed_model``, resolved only when needed. It must
            be the model that built the index.
        use_node_scores: use ``NodeWithScore.score`` as relevance (e.g. after a
            cross-encoder reranker) instead of cosine similarity to the query.
        metadata_mode: which node content is embedded (``MetadataMode.EMBED``).
        hide_selection_metadata: add the selection keys to the nodes'
            ``excluded_embed_metadata_keys`` and ``excluded_llm_metadata_keys``.
        cache_size: most node texts whose vectors are kept (LRU).
        vector_store: the vector store the nodes come from (``SimpleVectorStore``,
            Qdrant, ``PGVectorStore``): nodes without embeddings get their stored
            vectors, read by node id in one batch, instead of being embedded. Give it
            only when the store's vectors were made by ``embed_model`` (the index's
            model). :class:`DiverseRetriever` finds the store of a vector index
            retriever by itself.
        source_key: for a method that reads sources (``learned``): the metadata key naming
            a node's source; ``None`` (default): the node's ``ref_doc_id`` (its SOURCE
            relationship, set by node parsers), so chunks of one document count as one.
            Nodes with neither fall back to the ``"title: "`` prefix of their text.
        title_key: the metadata key of a node's display title (``None``: not read).

    Raises:
        UnknownMethodError, InvalidParameterError: bad ``method``, ``method_params``,
            ``top_n`` or ``cache_size`` (at construction).

    Example:
        >>> from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
        >>> nodes = [NodeWithScore(node=TextNode(text=t, embedding=e), score=s)
        ...          for t, e, s in [("a", [1.0, 0.0], 0.9), ("a'", [1.0, 0.01], 0.9),
        ...                          ("b", [0.6, 0.8], 0.6)]]
        >>> pp = DiverseNodePostprocessor(top_n=2, method="mmr",
        ...                               method_params={"lambda_mult": 0.3})
        >>> out = pp.postprocess_nodes(nodes, QueryBundle("q", embedding=[1.0, 0.0]))
        >>> [n.node.text for n in out], out[1].node.metadata["selection_rank"]
        (['a', 'b'], 1)
    """

    top_n: int = Field(default=4, description="Number of nodes to keep.")
    method: str = Field(default="gmmr", description="diverse_core selection method.")
    method_params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of the selection method."
    )
    embed_model: BaseEmbedding | None = Field(
        default=None,
        exclude=True,
        description="Embeds nodes without embeddings (default: Settings.embed_model).",
    )
    use_node_scores: bool = Field(
        default=False, description="Use NodeWithScore.score as relevance instead of cosine."
    )
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.EMBED, description="Node content that is embedded."
    )
    hide_selection_metadata: bool = Field(
        default=True, description="Exclude the selection keys from embed/LLM metadata."
    )
    cache_size: int = Field(default=10_000, description="Most node texts kept in the cache.")
    vector_store: Any = Field(
        default=None, exclude=True, description="Read node vectors from this store."
    )
    source_key: str | None = Field(
        default=None,
        description="Metadata key of a node's source for methods that read sources (learned); "
        "None: the node's ref_doc_id (its SOURCE relationship).",
    )
    title_key: str | None = Field(
        default="title", description="Metadata key of a node's display title (None: not read)."
    )

    _store_read: StoredVectors | None = PrivateAttr(default=None)
    _cache: ModelBoundCache = PrivateAttr()
    _texts: NodeTextMemo = PrivateAttr()
    _params_memo: tuple[str, dict[str, Any], dict[str, Any]] | None = PrivateAttr(default=None)

    def __init__(
        self,
        top_n: int | None = None,
        method: str = "gmmr",
        method_params: Mapping[str, Any] | None = None,
        *,
        k: int | None = None,
        embed_model: BaseEmbedding | None = None,
        use_node_scores: bool = False,
        metadata_mode: MetadataMode = MetadataMode.EMBED,
        hide_selection_metadata: bool = True,
        cache_size: int = 10_000,
        vector_store: Any = None,
        callback_manager: CallbackManager | None = None,
        diversity: float | None = None,
        source_key: str | None = None,
        title_key: str | None = "title",
    ) -> None:
        if top_n is not None and k is not None and top_n != k:
            raise InvalidParameterError(
                f"top_n and k are aliases; got top_n={top_n!r} and k={k!r}"
            )
        n_keep = check_k(top_n if top_n is not None else (k if k is not None else 4), "top_n")
        params = with_diversity(method_params, diversity)
        resolve_user_params(get_method(method), params)  # typed error on a bad method/params
        if embed_model is not None and not isinstance(embed_model, BaseEmbedding):
            raise InvalidParameterError(
                f"embed_model must be a llama_index BaseEmbedding; got {type(embed_model).__name__}"
            )
        store_read = store_reader(vector_store) if vector_store is not None else None
        if vector_store is not None and store_read is None:
            raise InvalidParameterError(
                "vector_store must be a store whose vectors can be read by node id "
                f"(SimpleVectorStore, Qdrant, PGVectorStore); got {type(vector_store).__name__}"
            )
        super().__init__(
            top_n=n_keep,
            method=method,
            method_params=params,
            embed_model=embed_model,
            use_node_scores=use_node_scores,
            metadata_mode=metadata_mode,
            hide_selection_metadata=hide_selection_metadata,
            cache_size=check_k(cache_size, "cache_size"),
            vector_store=vector_store,
            callback_manager=callback_manager or CallbackManager(),
            source_key=source_key,
            title_key=title_key,
        )
        self._store_read = store_read
        self._cache = ModelBoundCache(self.cache_size)
        self._texts = NodeTextMemo(self.cache_size)

    @classmethod
    def class_name(cls) -> str:
        return "DiverseNodePostprocessor"

    # ------------------------------------------------------------------ helpers

    def _private(self) -> dict[str, Any]:
        # pydantic's private-attribute dict: ``self._x`` goes through a slow __getattr__.
        return self.__pydantic_private__  # type: ignore[return-value]

    def _resolved_params(self) -> dict[str, Any]:
        """Method parameters with defaults, validated once per setting.

        ``method`` and ``method_params`` may be reassigned (or edited in place) after
        construction, so the memo is reused only while both still equal, type for
        type, what was validated.
        """
        method, params = self.method, self.method_params
        memo: tuple[str, dict[str, Any], dict[str, Any]] | None = self._private()["_params_memo"]
        if memo is not None and memo[0] == method and _same_params(memo[1], params):
            return memo[2]
        resolved = resolve_user_params(get_method(method), params)
        self._params_memo = (method, dict(params), resolved)
        return resolved

    def _resolve_embed_model(self) -> BaseEmbedding:
        if self.embed_model is not None:
            return self.embed_model
        from llama_index.core import Settings

        try:
            return Settings.embed_model
        except (ImportError, ValueError) as exc:
            raise InvalidParameterError(
                "DiverseNodePostprocessor needs an embedding model for nodes or queries "
                "without embeddings, but Settings.embed_model could not be resolved "
                f"({exc}); pass embed_model=... (the model that built the index)"
            ) from exc

    def _event_payload(self, nodes: list[NodeWithScore], query_bundle: QueryBundle) -> dict[str, Any]:
        return {
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: f"diverse:{self.method}",
            EventPayload.QUERY_STR: query_bundle.query_str,
            EventPayload.TOP_K: self.top_n,
        }

    def _start(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> QueryBundle:
        if _has_event_handlers():
            dispatcher.event(
                ReRankStartEvent(
                    query=query_bundle,
                    nodes=nodes,
                    top_n=self.top_n,
                    model_name=f"diverse:{self.method}",
                )
            )
        if query_bundle is None:
            raise InvalidParameterError(
                "DiverseNodePostprocessor needs the query: pass query_bundle or query_str"
            )
        return query_bundle

    def _relevance(self, nodes: Sequence[NodeWithScore]) -> NDArray[np.float64] | None:
        if not self.use_node_scores:
            return None
        missing = [i for i, item in enumerate(nodes) if item.score is None]
        if missing:
            i = missing[0]
            raise InvalidParameterError(
                f"use_node_scores=True but node {nodes[i].node.node_id!r} (position {i}) "
                "has score=None"
            )
        return np.fromiter((float(item.score) for item in nodes), dtype=np.float64, count=len(nodes))  # type: ignore[arg-type]

    def _reranking_event(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle
    ) -> AbstractContextManager[EventContext | None]:
        """The RERANKING callback event, or nothing when the manager has no handlers."""
        if not self.callback_manager.handlers:
            return nullcontext()
        return self.callback_manager.event(
            CBEventType.RERANKING, payload=self._event_payload(nodes, query_bundle)
        )

    def _text_inputs(
        self,
        nodes: list[NodeWithScore],
        bundle: QueryBundle,
        positions: list[int],
        embed_texts: list[str],
    ) -> dict[str, Any]:
        """``question`` and ``texts`` for a method that reads text (and ``sources``/``names`` for
        one that reads sources), else nothing.

        The texts are the nodes' ``metadata_mode`` content, the text the vectors embed
        (already rendered when every node was embedded here).
        """
        if not get_method(self.method).reads_text:
            return {}
        if len(positions) == len(nodes):
            texts = embed_texts
        else:
            render, mode = self._private()["_texts"].render, self.metadata_mode
            texts = [render(item.node, mode) for item in nodes]
        return self._reading_inputs(
            bundle, texts, lambda: [self._source_id(item.node) for item in nodes],
            lambda key: [item.node.metadata.get(key) for item in nodes],
        )

    def _reading_inputs(
        self,
        bundle: QueryBundle,
        texts: list[str],
        sources: Callable[[], list[Any]],
        titles: Callable[[str], list[Any]],
    ) -> dict[str, Any]:
        """The inputs of a text-reading method: the question, ``texts`` and, for one that reads
        sources, the candidates' ``sources()`` and ``titles(title_key)``."""
        out: dict[str, Any] = {"question": bundle.query_str, "texts": texts}
        if get_method(self.method).reads_sources:
            out.update(source_inputs(sources(), None if self.title_key is None else titles(self.title_key)))
        return out

    def _source_id(self, node: Any) -> Any:
        """A node's source: ``metadata[source_key]`` when set and present, else its ``ref_doc_id``."""
        if self.source_key is not None:
            found = node.metadata.get(self.source_key)
            if found is not None:
                return found
        return node.ref_doc_id

    def _pick(
        self,
        candidates: NDArray[np.floating],
        query_embedding: Sequence[float],
        relevance: NDArray[np.float64] | None,
        params: dict[str, Any],
        text_inputs: dict[str, Any],
    ) -> Selection:
        """Run the method on the candidate vectors (the query in their precision)."""
        # Same precision as the candidates: float32 cache rows are selected in float32.
        dtype = np.float32 if candidates.dtype == np.float32 else np.float64
        query = np.asarray(query_embedding, dtype=dtype)
        if query.ndim != 1 or query.shape[0] != candidates.shape[1]:
            raise DimensionMismatchError(
                f"query embedding has shape {query.shape} but node vectors have dimension "
                f"{candidates.shape[1]}; embed queries and nodes with the same model"
            )
        return select(self.method, query, candidates, self.top_n, relevance=relevance, **params, **text_inputs)

    def _annotated(
        self, picked: list[NodeWithScore], sel: Selection, text_inputs: dict[str, Any]
    ) -> list[NodeWithScore]:
        """Copies of the ``picked`` nodes (in pick order) carrying the selection metadata."""
        filled = get_method(self.method).filled_params
        used = {n: v for n, v in sel.params.items() if n not in text_inputs and n not in filled}  # never the texts
        shown = json_friendly_params({**used, **sel.details})
        hide = self.hide_selection_metadata
        return [
            with_selection_metadata(
                item,
                method=sel.method,
                params=shown,
                rank=rank,
                score=score,
                relevance=rel,
                hide_from_models=hide,
            )
            for rank, (item, score, rel) in enumerate(
                zip(picked, sel.scores.tolist(), sel.relevance.tolist(), strict=True)
            )
        ]

    def _select(
        self,
        nodes: list[NodeWithScore],
        positions: list[int],
        embedded: NDArray[np.float32] | None,
        model_label: str | None,
        query_embedding: Sequence[float],
        params: dict[str, Any],
        text_inputs: dict[str, Any],
    ) -> list[NodeWithScore]:
        candidates = stack_node_vectors(nodes, positions, embedded, model_label)
        sel = self._pick(candidates, query_embedding, self._relevance(nodes), params, text_inputs)
        return self._annotated([nodes[i] for i in sel.indices.tolist()], sel, text_inputs)

    def _to_embed(self, nodes: list[NodeWithScore]) -> tuple[list[int], list[str], BoundCache | None, str | None]:
        """The nodes to embed (positions, texts), and the cache and namespace of the model
        that embeds them (``None`` when every node carries its vector)."""
        positions, texts = nodes_to_embed(nodes, self.metadata_mode, self._private()["_texts"])
        if not texts:
            return positions, texts, None, None
        model = self._resolve_embed_model()
        return positions, texts, self._private()["_cache"].for_model(model), model_namespace(model)

    def _known(self, nodes: list[NodeWithScore], positions: list[int]) -> KnownAt | None:
        return known_for(nodes, positions, self._private()["_store_read"])

    # ------------------------------------------------------------------ rows (PGVectorStore)

    def reads_rows(self, rows: PgCandidates) -> bool:
        """Whether :meth:`select_rows` can select on ``rows`` as they are (a method that reads
        text needs rows whose nodes have no metadata and a known source)."""
        return not get_method(self.method).reads_text or rows.readable()

    def _row_inputs(self, rows: PgCandidates, bundle: QueryBundle) -> dict[str, Any]:
        if not get_method(self.method).reads_text:
            return {}
        # No node has metadata: its content is its text, metadata[...] is None, its source its ref_doc_id.
        return self._reading_inputs(bundle, rows.texts, lambda: rows.sources, lambda _: [None] * len(rows.texts))

    def _select_rows(
        self, rows: PgCandidates, bundle: QueryBundle, query: Sequence[float], params: dict[str, Any]
    ) -> list[NodeWithScore]:
        text_inputs = self._row_inputs(rows, bundle)
        relevance = np.asarray(rows.scores, dtype=np.float64) if self.use_node_scores else None
        sel = self._pick(rows.vectors, query, relevance, params, text_inputs)
        return self._annotated(rows.nodes(sel.indices.tolist()), sel, text_inputs)

    def select_rows(self, rows: PgCandidates, bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`postprocess_nodes` over a search's rows: the selection runs on the stored vectors
        and only the chosen rows become nodes; the same nodes, scores and metadata. Sends no
        events (for callers that checked nobody observes them); see :meth:`reads_rows`."""
        params = self._resolved_params()
        query = bundle.embedding
        if query is None:
            query = self._resolve_embed_model().get_agg_embedding_from_queries(query_strings(bundle))
        return self._select_rows(rows, bundle, query, params)

    async def aselect_rows(self, rows: PgCandidates, bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`select_rows` (the selection in a worker thread)."""
        params = self._resolved_params()
        query = bundle.embedding
        if query is None:
            query = await self._resolve_embed_model().aget_agg_embedding_from_queries(query_strings(bundle))
        return await asyncio.to_thread(self._select_rows, rows, bundle, query, params)

    # ------------------------------------------------------------------ sync / async

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        bundle = self._start(nodes, query_bundle)
        params = self._resolved_params()
        if not nodes:
            return _ended([])
        with self._reranking_event(nodes, bundle) as event:
            positions, texts, cache, label = self._to_embed(nodes)
            embedded = cache.embed(texts, self._known(nodes, positions)) if cache is not None else None
            query = bundle.embedding
            if query is None:
                query = self._resolve_embed_model().get_agg_embedding_from_queries(query_strings(bundle))
            text_inputs = self._text_inputs(nodes, bundle, positions, texts)
            result = self._select(nodes, positions, embedded, label, query, params, text_inputs)
            _on_end(event, result)
        return _ended(result)

    @dispatcher.span
    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        bundle = self._start(nodes, query_bundle)
        params = self._resolved_params()
        if not nodes:
            return _ended([])
        with self._reranking_event(nodes, bundle) as event:
            positions, texts, cache, label = self._to_embed(nodes)
            embedded = None
            if cache is not None:
                embedded = await cache.aembed(texts, None, self._known(nodes, positions))
            query = bundle.embedding
            if query is None:
                model = self._resolve_embed_model()
                query = await model.aget_agg_embedding_from_queries(query_strings(bundle))
            text_inputs = self._text_inputs(nodes, bundle, positions, texts)
            result = await asyncio.to_thread(
                self._select, nodes, positions, embedded, label, query, params, text_inputs
            )
            _on_end(event, result)
        return _ended(result)


def _on_end(event: EventContext | None, nodes: list[NodeWithScore]) -> None:
    """End the RERANKING callback event (when one was started) with the returned nodes."""
    if event is not None:
        event.on_end(payload={EventPayload.NODES: nodes})


def _ended(nodes: list[NodeWithScore]) -> list[NodeWithScore]:
    """``nodes``, after the rerank end event (sent only when somebody listens)."""
    _end_event(nodes)
    return nodes
