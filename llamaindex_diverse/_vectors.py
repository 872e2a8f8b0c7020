"""Turn nodes and queries into the vectors the core selects on.

Nodes that already carry an embedding are used as they are; the others are embedded
from their ``MetadataMode.EMBED`` content (what a vector index embeds) through a
bounded per-text cache bound to one embedding model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from diverse_core.embedding_cache import EmbeddingCache, KnownAt, model_caches
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from numpy.typing import NDArray

__all__ = [
    "BoundCache",
    "ModelBoundCache",
    "model_namespace",
    "nodes_to_embed",
    "query_strings",
    "stack_node_vectors",
]


def model_namespace(model: BaseEmbedding) -> str:
    """Cache namespace of an embedding model: its class and model name."""
    return f"{model.class_name()}:{model.model_name}"


class BoundCache(NamedTuple):
    """The process-wide text cache of one model, bound to that model's batch embedding call.

    ``embed``/``aembed`` take the texts (and optionally ``known`` stored vectors, see
    :meth:`diverse_core.embedding_cache.EmbeddingCache.embed`); misses go to
    ``model.get_text_embedding_batch`` / ``aget_text_embedding_batch``.
    """

    cache: EmbeddingCache
    model: BaseEmbedding

    def embed(self, texts: Sequence[str], known: KnownAt | None = None) -> NDArray[np.float32]:
        """Vectors of ``texts`` (cache misses embedded in one batch)."""
        return self.cache.embed(texts, self.model.get_text_embedding_batch, known)

    async def aembed(
        self, texts: Sequence[str], aembed_fn: Any = None, known: KnownAt | None = None
    ) -> NDArray[np.float32]:
        """Async :meth:`embed` (misses awaited from ``aembed_fn`` or the model's async batch)."""
        fn = aembed_fn if aembed_fn is not None else self.model.aget_text_embedding_batch
        return await self.cache.aembed(texts, fn, known)


class ModelBoundCache:
    """The text cache of whichever embedding model is in use, shared process-wide.

    Looks the model up in the core registry
    (:func:`diverse_core.embedding_cache.model_caches`: keyed on the model object, held
    weakly), so every postprocessor, retriever and pipeline on one model shares one
    cache and vectors of two models are never mixed. ``maxsize`` raises the shared
    cache's bound (it never lowers it).
    """

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize

    def for_model(self, model: BaseEmbedding) -> BoundCache:
        """The cache of ``model`` (created on first use)."""
        return BoundCache(model_caches(model).cache("text", self._maxsize), model)


def nodes_to_embed(
    nodes: Sequence[NodeWithScore],
    metadata_mode: MetadataMode,
) -> tuple[list[int], list[str]]:
    """Positions and texts of the nodes that carry no embedding.

    Args:
        nodes: the candidates.
        metadata_mode: which content is embedded.

    Raises:
        InvalidParameterError: a node has neither an embedding nor any text.
    """
    positions: list[int] = []
    texts: list[str] = []
    for i, item in enumerate(nodes):
        node = item.node
        if node.embedding is not None:
            continue
        try:
            text = node.get_content(metadata_mode=metadata_mode)
        except ValueError as exc:  # e.g. str() of an int over the interpreter's digit limit
            raise InvalidParameterError(
                f"node {node.node_id!r} (position {i}): its content to embed cannot be rendered "
                f"({' '.join(str(exc).split())[:160]}); store such a metadata value as a string or "
                "leave its key out of the embedded text (excluded_embed_metadata_keys)"
            ) from None
        if not text or text.isspace():
            raise InvalidParameterError(
                f"node {node.node_id!r} (position {i}) has no embedding and no text to "
                "embed; give it an embedding or text content"
            )
        positions.append(i)
        texts.append(text)
    return positions, texts


def stack_node_vectors(
    nodes: Sequence[NodeWithScore],
    positions: list[int],
    embedded: NDArray[np.float32] | None,
    model_label: str | None,
) -> NDArray[np.floating]:
    """Matrix (n, d) of node vectors: stored embeddings, plus ``embedded`` rows at ``positions``.

    Raises:
        DimensionMismatchError: vectors of different dimensions (e.g. nodes embedded by
            the index's model and the postprocessor's ``embed_model`` disagree).
    """
    if embedded is not None and len(positions) == len(nodes):  # every vector came from the cache
        return embedded
    stored = sorted(set(range(len(nodes))).difference(positions))
    lists = [nodes[i].node.embedding or [] for i in stored]
    d = len(lists[0]) if embedded is None else embedded.shape[1]
    bad = next((i for i, v in zip(stored, lists, strict=True) if len(v) != d), None)
    if bad is not None:
        got, name = len(nodes[bad].node.embedding or ()), nodes[bad].node.node_id
        if embedded is None:
            raise DimensionMismatchError(
                f"node embeddings differ in dimension: node {nodes[0].node.node_id!r} has {d}, "
                f"node {name!r} (position {bad}) has {got}"
            )
        raise DimensionMismatchError(
            f"node {name!r} (position {bad}) carries a {got}-d embedding but {model_label} embeds "
            f"text into {d}-d vectors; use the embed model that built the index"
        )
    out = np.empty((len(nodes), d), dtype=np.float64)
    if positions:
        out[positions] = embedded
    out[stored] = np.asarray(lists, dtype=np.float64).reshape(len(stored), d)
    return out


def query_strings(query_bundle: QueryBundle) -> list[str]:
    """The strings LlamaIndex embeds for a query (custom embedding strings or the query)."""
    strs = [s for s in query_bundle.embedding_strs if s]
    if not strs:
        raise InvalidParameterError(
            "query_bundle has no embedding and no text to embed; got "
            f"query_str={query_bundle.query_str!r}"
        )
    return strs
