"""Turn nodes and queries into the vectors the core selects on.

Nodes that already carry an embedding are used as they are; the others are embedded
from their ``MetadataMode.EMBED`` content (what a vector index embeds) through a
bounded per-text cache bound to one embedding model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import chain

import numpy as np
from diverse_core.embedding_cache import EmbeddingCache
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from numpy.typing import NDArray

__all__ = [
    "ModelBoundCache",
    "model_namespace",
    "nodes_to_embed",
    "query_strings",
    "stack_node_vectors",
]


def model_namespace(model: BaseEmbedding) -> str:
    """Cache namespace of an embedding model: its class and model name."""
    return f"{model.class_name()}:{model.model_name}"


class ModelBoundCache:
    """An :class:`EmbeddingCache` for whichever embedding model is in use.

    A new cache starts when the model object changes (e.g. ``Settings.embed_model``
    was replaced), so vectors of two models are never mixed.
    """

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._model: BaseEmbedding | None = None
        self._cache: EmbeddingCache | None = None
        self._lock = threading.Lock()

    def for_model(self, model: BaseEmbedding) -> EmbeddingCache:
        """The cache of ``model`` (created on first use)."""
        with self._lock:
            if self._cache is None or self._model is not model:
                self._cache = EmbeddingCache(
                    model.get_text_embedding_batch,
                    maxsize=self._maxsize,
                    namespace=model_namespace(model),
                )
                self._model = model
            return self._cache


def nodes_to_embed(
    nodes: Sequence[NodeWithScore], metadata_mode: MetadataMode
) -> tuple[list[int], list[str]]:
    """Positions and texts of the nodes that carry no embedding.

    Raises:
        InvalidParameterError: a node has neither an embedding nor any text.
    """
    positions: list[int] = []
    texts: list[str] = []
    for i, item in enumerate(nodes):
        if item.node.embedding is not None:
            continue
        text = item.node.get_content(metadata_mode=metadata_mode)
        if not text or not text.strip():
            raise InvalidParameterError(
                f"node {item.node.node_id!r} (position {i}) has no embedding and no text to "
                "embed; give it an embedding or text content"
            )
        positions.append(i)
        texts.append(text)
    return positions, texts


def _dimension_error(nodes: Sequence[NodeWithScore], dims: list[int]) -> DimensionMismatchError:
    first = dims[0]
    bad = next(i for i, d in enumerate(dims) if d != first)
    return DimensionMismatchError(
        f"node embeddings differ in dimension: node {nodes[0].node.node_id!r} has {first}, "
        f"node {nodes[bad].node.node_id!r} (position {bad}) has {dims[bad]}"
    )


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
    n = len(nodes)
    if not positions:
        return _lists_to_matrix(nodes, range(n))
    assert embedded is not None
    if len(positions) == n:  # every vector came from the cache, in node order
        return embedded
    d = embedded.shape[1]
    out = np.empty((n, d), dtype=np.float64)
    out[positions] = embedded
    mask = np.ones(n, dtype=bool)
    mask[positions] = False
    stored = [i for i in range(n) if mask[i]]
    if stored:
        dims = [len(nodes[i].node.embedding or ()) for i in stored]
        if any(x != d for x in dims):
            bad = next(i for i, x in zip(stored, dims, strict=True) if x != d)
            raise DimensionMismatchError(
                f"node {nodes[bad].node.node_id!r} (position {bad}) carries a "
                f"{len(nodes[bad].node.embedding or ())}-d embedding but {model_label} embeds "
                f"text into {d}-d vectors; use the embed model that built the index"
            )
        out[stored] = _lists_to_matrix(nodes, stored)
    return out


def _lists_to_matrix(nodes: Sequence[NodeWithScore], rows: Sequence[int]) -> NDArray[np.float64]:
    """Stack the ``embedding`` lists of ``nodes[rows]`` (one flat pass, no per-row arrays)."""
    lists = [nodes[i].node.embedding or [] for i in rows]
    d = len(lists[0])
    if any(len(v) != d for v in lists):
        raise _dimension_error([nodes[i] for i in rows], [len(v) for v in lists])
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.float64, count=len(lists) * d)
    return flat.reshape(len(lists), d)


def query_strings(query_bundle: QueryBundle) -> list[str]:
    """The strings LlamaIndex embeds for a query (custom embedding strings or the query)."""
    strs = [s for s in query_bundle.embedding_strs if s]
    if not strs:
        raise InvalidParameterError(
            "query_bundle has no embedding and no text to embed; got "
            f"query_str={query_bundle.query_str!r}"
        )
    return strs
