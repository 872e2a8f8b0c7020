"""``DiverseNodePostprocessor``: diversity-aware selection as a LlamaIndex node postprocessor."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
from diverse_core.embedder_check import check_embedder
from diverse_core.errors import InvalidParameterError
from diverse_core.plan import Plan, make_plan, shown_params
from diverse_core.registry import with_diversity
from diverse_core.result import Selection
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

from ._metadata import with_selection_metadata
from ._observers import has_event_handlers
from ._pg_rows import PgCandidates
from ._stored import StoredVectors, known_for, store_reader
from ._vectors import (
    ModelBoundCache,
    model_namespace,
    nodes_to_embed,
    query_strings,
    stack_node_vectors,
)

_log = logging.getLogger("llamaindex_diverse")

__all__ = ["DiverseNodePostprocessor"]

dispatcher = get_dispatcher(__name__)


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
    _plan: Plan = PrivateAttr()

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
        plan = make_plan(method, params, face=True)  # typed error on a bad method/params
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
        self._plan = plan
        if embed_model is not None:
            check_embedder(plan.method, plan.params, embed_model)

    @classmethod
    def class_name(cls) -> str:
        return "DiverseNodePostprocessor"

    # ------------------------------------------------------------------ helpers

    def _current_plan(self) -> Plan:
        """The plan, built again only when ``method`` or ``method_params`` changed (reassigned or
        edited in place) since it was built."""
        if not self._plan.built_from(self.method, self.method_params):
            self._plan = make_plan(self.method, self.method_params, face=True)
        return self._plan

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

    # The events (pydantic models checking every node: ~0.1 ms a call) are built only when a handler
    # listens, as the callback event only when the manager has handlers.
    def _start(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> QueryBundle:
        if has_event_handlers(dispatcher):
            dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n,
                                              model_name=f"diverse:{self.method}"))
        if query_bundle is None:
            raise InvalidParameterError("DiverseNodePostprocessor needs the query: pass query_bundle or query_str")
        return query_bundle

    def _reranking(self, nodes: list[NodeWithScore], bundle: QueryBundle) -> AbstractContextManager[EventContext | None]:
        if not self.callback_manager.handlers:
            return nullcontext()
        return self.callback_manager.event(CBEventType.RERANKING, payload={
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: f"diverse:{self.method}",
            EventPayload.QUERY_STR: bundle.query_str,
            EventPayload.TOP_K: self.top_n,
        })

    def _relevance(self, scores: Sequence[float | None], nodes: Sequence[NodeWithScore]) -> NDArray[np.float64] | None:
        if not self.use_node_scores:
            return None
        if None in scores:
            i = list(scores).index(None)
            raise InvalidParameterError(
                f"use_node_scores=True but node {nodes[i].node.node_id!r} (position {i}) has score=None"
            )
        return np.asarray(scores, dtype=np.float64)

    def _source_id(self, node: Any) -> Any:
        """A node's source: ``metadata[source_key]`` when set and present, else its ``ref_doc_id``."""
        found = None if self.source_key is None else node.metadata.get(self.source_key)
        return node.ref_doc_id if found is None else found

    def _select(
        self,
        plan: Plan,
        candidates: NDArray[np.floating],
        query_embedding: Sequence[float],
        relevance: NDArray[np.float64] | None,
        inputs: dict[str, Any],
        picked: Any,
        blank: Sequence[int] = (),
    ) -> list[NodeWithScore]:
        """Run ``plan`` on the candidate vectors (the query in their precision: float32 cache rows are
        selected in float32) and return copies of the chosen nodes (``picked(indices)``) carrying the
        selection metadata, in pick order."""
        dtype = np.float32 if candidates.dtype == np.float32 else np.float64
        sel: Selection = plan.run(np.asarray(query_embedding, dtype=dtype), candidates, self.top_n,
                                  relevance=relevance, inputs=inputs)
        shown = {**plan.shown, **shown_params(sel.details)}
        if blank:
            shown[BLANK_NODES] = list(blank)
        return [
            with_selection_metadata(item, method=sel.method, params=shown, rank=rank, score=score, relevance=rel,
                                    hide_from_models=self.hide_selection_metadata)
            for rank, (item, score, rel) in enumerate(
                zip(picked(sel.indices.tolist()), sel.scores.tolist(), sel.relevance.tolist(), strict=True)
            )
        ]

    def _node_inputs(self, plan: Plan, nodes: list[NodeWithScore], bundle: QueryBundle, positions: list[int],
                     texts: list[str]) -> dict[str, Any]:
        """What a method that reads text (and sources) takes: the question, the nodes' ``metadata_mode``
        content (the text the vectors embed; already rendered when every node was embedded here), their
        sources and titles."""
        if not plan.spec.reads_text:
            return {}
        if len(positions) != len(nodes):
            texts = [item.node.get_content(metadata_mode=self.metadata_mode) for item in nodes]
        reads, key = plan.spec.reads_sources, self.title_key
        return plan.inputs(
            bundle.query_str, texts,
            sources=[self._source_id(item.node) for item in nodes] if reads else None,
            names=[item.node.metadata.get(key) for item in nodes] if reads and key is not None else None,
        )

    def _pick_nodes(self, plan: Plan, nodes: list[NodeWithScore], bundle: QueryBundle, query: Sequence[float],
                    positions: list[int], texts: list[str], embedded: Any, label: str | None,
                    blank: Sequence[int] = ()) -> list[NodeWithScore]:
        candidates = stack_node_vectors(nodes, positions, embedded, label)
        relevance = self._relevance([item.score for item in nodes], nodes)
        inputs = self._node_inputs(plan, nodes, bundle, positions, texts)
        return self._select(plan, candidates, query, relevance, inputs, lambda picks: [nodes[i] for i in picks],
                            blank)

    def _to_embed(self, nodes: list[NodeWithScore]) -> tuple[list[int], list[str], Any, str | None]:
        """The nodes to embed (positions, texts), and the cache and namespace of the model
        that embeds them (``None`` when every node carries its vector)."""
        positions, texts = nodes_to_embed(nodes, self.metadata_mode)
        if not texts:
            return positions, texts, None, None
        model = self._resolve_embed_model()
        return positions, texts, self._cache.for_model(model), model_namespace(model)

    # ------------------------------------------------------------------ rows (PGVectorStore)

    def reads_rows(self, rows: PgCandidates) -> bool:
        """Whether :meth:`select_rows` can select on ``rows`` as they are (a method that reads
        text needs rows whose nodes have no metadata and a known source)."""
        return not self._current_plan().spec.reads_text or rows.readable()

    def _select_rows(self, plan: Plan, rows: PgCandidates, bundle: QueryBundle,
                     query: Sequence[float]) -> list[NodeWithScore]:
        # No node has metadata: its content is its text, its source its ref_doc_id, no title.
        inputs = plan.inputs(bundle.query_str, rows.texts, sources=rows.sources) if plan.spec.reads_text else {}
        relevance = np.asarray(rows.scores, dtype=np.float64) if self.use_node_scores else None
        return self._select(plan, rows.vectors, query, relevance, inputs, rows.nodes)

    def select_rows(self, rows: PgCandidates, bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`postprocess_nodes` over a search's rows: the selection runs on the stored vectors
        and only the chosen rows become nodes; the same nodes, scores and metadata. Sends no
        events (for callers that checked nobody observes them); see :meth:`reads_rows`."""
        plan = self._current_plan()
        query = bundle.embedding
        if query is None:
            query = self._resolve_embed_model().get_agg_embedding_from_queries(query_strings(bundle))
        return self._select_rows(plan, rows, bundle, query)

    async def aselect_rows(self, rows: PgCandidates, bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`select_rows` (the selection in a worker thread)."""
        plan = self._current_plan()
        query = bundle.embedding
        if query is None:
            query = await self._resolve_embed_model().aget_agg_embedding_from_queries(query_strings(bundle))
        return await asyncio.to_thread(self._select_rows, plan, rows, bundle, query)

    # ------------------------------------------------------------------ sync / async

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        bundle, plan = self._start(nodes, query_bundle), self._current_plan()
        if not nodes:
            return _ended(None, [])
        nodes, blank = nonblank_nodes(nodes, self.metadata_mode)
        with self._reranking(nodes, bundle) as event:
            positions, texts, cache, label = self._to_embed(nodes)
            embedded = None if cache is None else cache.embed(texts, known_for(nodes, positions, self._store_read))
            query = bundle.embedding
            if query is None:
                query = self._resolve_embed_model().get_agg_embedding_from_queries(query_strings(bundle))
            return _ended(event, self._pick_nodes(plan, nodes, bundle, query, positions, texts, embedded, label,
                                                  blank))

    @dispatcher.span
    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        bundle, plan = self._start(nodes, query_bundle), self._current_plan()
        if not nodes:
            return _ended(None, [])
        nodes, blank = nonblank_nodes(nodes, self.metadata_mode)
        with self._reranking(nodes, bundle) as event:
            positions, texts, cache, label = self._to_embed(nodes)
            embedded = None
            if cache is not None:
                embedded = await cache.aembed(texts, None, known_for(nodes, positions, self._store_read))
            query = bundle.embedding
            if query is None:
                query = await self._resolve_embed_model().aget_agg_embedding_from_queries(query_strings(bundle))
            picked = await asyncio.to_thread(self._pick_nodes, plan, nodes, bundle, query, positions, texts,
                                             embedded, label, blank)
            return _ended(event, picked)


#: The ``selection_params`` key listing the nodes left out for having neither an embedding nor text
#: (their positions among the nodes given).
BLANK_NODES = "blank_nodes"


def nonblank_nodes(nodes: list[NodeWithScore], metadata_mode: Any) -> tuple[list[NodeWithScore], list[int]]:
    """``nodes`` without those that carry no embedding and no text to embed, and the positions left
    out (logged at WARNING): one blank node does not fail every query that fetches it. When every node
    is blank, ``nodes`` come back whole and embedding them raises the typed error naming the first."""
    blank = [i for i, item in enumerate(nodes) if item.node.embedding is None and _no_text(item, metadata_mode)]
    if not blank or len(blank) == len(nodes):
        return nodes, []
    _log.warning("left out %d node(s) with no embedding and no text (positions %s)", len(blank), blank[:20])
    skip = set(blank)
    return [item for i, item in enumerate(nodes) if i not in skip], blank


def _no_text(item: NodeWithScore, metadata_mode: Any) -> bool:
    """Whether the node's content to embed is empty or white space (content that cannot be rendered
    is left to the embedding step, which names it)."""
    try:
        return not item.node.get_content(metadata_mode=metadata_mode).strip()
    except ValueError:
        return False


def _ended(event: EventContext | None, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
    """``nodes``, after the end of the callback event (when one was started) and the rerank end event
    (built only when a handler listens)."""
    if event is not None:
        event.on_end(payload={EventPayload.NODES: nodes})
    if has_event_handlers(dispatcher):
        dispatcher.event(ReRankEndEvent(nodes=nodes))
    return nodes
