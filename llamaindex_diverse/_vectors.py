"""Turn nodes and queries into the vectors the core selects on.

Nodes that already carry an embedding are used as they are; the others are embedded
from their ``MetadataMode.EMBED`` content (what a vector index embeds) through a
bounded per-text cache bound to one embedding model.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np
from diverse_core.embedding_cache import EmbeddingCache, KnownAt, model_caches
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode
from numpy.typing import NDArray

__all__ = [
    "BoundCache",
    "ModelBoundCache",
    "NodeTextMemo",
    "model_namespace",
    "nodes_to_embed",
    "query_strings",
    "stack_node_vectors",
]


def model_namespace(model: BaseEmbedding) -> str:
    """Cache namespace of an embedding model: its class and model name."""
    return f"{model.class_name()}:{model.model_name}"


class BoundCache:
    """The process-wide text cache of one model, bound to that model's batch embedding call.

    ``embed``/``aembed`` take the texts (and optionally ``known`` stored vectors, see
    :meth:`diverse_core.embedding_cache.EmbeddingCache.embed`); misses go to
    ``model.get_text_embedding_batch`` / ``aget_text_embedding_batch``.
    """

    __slots__ = ("cache", "model")

    def __init__(self, cache: EmbeddingCache, model: BaseEmbedding) -> None:
        self.cache = cache
        self.model = model

    def embed(self, texts: Sequence[str], known: KnownAt | None = None) -> NDArray[np.float32]:
        """Vectors of ``texts`` (cache misses embedded in one batch)."""
        return self.cache.embed(texts, self.model.get_text_embedding_batch, known)

    async def aembed(
        self,
        texts: Sequence[str],
        aembed_fn: Any = None,
        known: KnownAt | None = None,
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
        self._memo: BoundCache | None = None

    def for_model(self, model: BaseEmbedding) -> BoundCache:
        """The cache of ``model`` (created on first use)."""
        memo = self._memo
        if memo is None or memo.model is not model:
            memo = BoundCache(model_caches(model).cache("text", self._maxsize), model)
            self._memo = memo
        return memo


_PLAIN_GET_CONTENT = TextNode.get_content
_PLAIN_METADATA_STR = BaseNode.get_metadata_str


_PLAIN_CLASSES: dict[type, bool] = {}


def _is_plain_class(cls: type) -> bool:
    """Whether ``cls`` renders its content with ``TextNode``'s own methods (memoised per class)."""
    plain = _PLAIN_CLASSES.get(cls)
    if plain is None:
        plain = (
            getattr(cls, "get_content", None) is _PLAIN_GET_CONTENT
            and getattr(cls, "get_metadata_str", None) is _PLAIN_METADATA_STR
        )
        _PLAIN_CLASSES[cls] = plain
    return plain


class NodeTextMemo:
    """``node.get_content(metadata_mode)`` of text nodes, memoised by everything it depends on.

    Rendering a node's metadata into its embedding text (what a vector index embeds,
    and the embedding-cache key of a node without an embedding) costs several µs per
    node, and the same nodes come back query after query. For nodes whose class uses
    :class:`~llama_index.core.schema.TextNode`'s own ``get_content`` and
    ``get_metadata_str``, the rendered text is a function of the node text, the mode,
    the metadata keys with ``str()`` of their values, the mode's excluded keys and the
    three templates; all of them form the memo key, so any change to a node (text,
    metadata, exclusions, templates) renders it afresh. Nodes without metadata embed
    their text as is (no rendering, no memo); other node classes are always rendered.

    Args:
        maxsize: most rendered texts kept (the memo is emptied when it is full).

    Example:
        >>> from llama_index.core.schema import MetadataMode, TextNode
        >>> memo = NodeTextMemo(maxsize=100)
        >>> node = TextNode(text="body", metadata={"title": "T"})
        >>> memo.render(node, MetadataMode.EMBED) == node.get_content(MetadataMode.EMBED)
        True
    """

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._memo: dict[tuple[object, ...], str] = {}

    def __len__(self) -> int:
        return len(self._memo)

    def render(self, node: BaseNode, mode: MetadataMode) -> str:
        """The text ``node.get_content(metadata_mode=mode)`` returns."""
        if not isinstance(node, TextNode) or not _is_plain_class(type(node)):
            return node.get_content(metadata_mode=mode)
        metadata = node.metadata
        if not metadata or mode == MetadataMode.NONE:
            return node.text  # what TextNode.get_content returns when no metadata is shown
        if mode == MetadataMode.EMBED:
            excluded = tuple(node.excluded_embed_metadata_keys)
        elif mode == MetadataMode.LLM:
            excluded = tuple(node.excluded_llm_metadata_keys)
        else:
            excluded = ()
        key = (
            node.text,
            mode,
            excluded,
            node.metadata_template,
            node.metadata_separator,
            node.text_template,
            # type(k): keys 1 and 1.0 are equal but render differently; values render as str().
            tuple([(type(k), k, _rendered_as(v)) for k, v in metadata.items()]),
        )
        text = self._memo.get(key)
        if text is None:
            text = node.get_content(metadata_mode=mode)
            if len(self._memo) >= self._maxsize:
                self._memo.clear()
            self._memo[key] = text
        return text


def _rendered_as(value: Any) -> object:
    """What stands for ``value``'s ``str()`` in a memo key: an int (or bool) itself (equal ints
    render alike, and ``str()`` of one over the interpreter's digit limit raises), else its ``str()``."""
    return (type(value), value) if type(value) in (int, bool) else str(value)


_node_of = attrgetter("node")
_embedding_of = attrgetter("embedding")
_metadata_of = attrgetter("metadata")
_text_of = attrgetter("text")


def _plain_text_nodes(nodes: list[BaseNode], mode: MetadataMode) -> list[str] | None:
    """The nodes' ``text`` when that is what every one of them embeds, else ``None``.

    True for text nodes (``TextNode``'s own ``get_content``/``get_metadata_str``)
    without metadata to show and with non-blank text: the common case of nodes
    coming back from a vector store, checked in whole-list passes.
    """
    if not all(_is_plain_class(cls) for cls in set(map(type, nodes))):
        return None
    if mode != MetadataMode.NONE and any(map(_metadata_of, nodes)):
        return None
    texts: list[str] = list(map(_text_of, nodes))
    if not all(texts) or any(map(str.isspace, texts)):
        return None  # let the per-node pass name the blank node
    return texts


def nodes_to_embed(
    nodes: Sequence[NodeWithScore],
    metadata_mode: MetadataMode,
    memo: NodeTextMemo | None = None,
) -> tuple[list[int], list[str]]:
    """Positions and texts of the nodes that carry no embedding.

    Args:
        nodes: the candidates.
        metadata_mode: which content is embedded.
        memo: reuse rendered node texts across calls (see :class:`NodeTextMemo`).

    Raises:
        InvalidParameterError: a node has neither an embedding nor any text.
    """
    inner: list[BaseNode] = list(map(_node_of, nodes))
    embeddings = list(map(_embedding_of, inner))
    missing = embeddings.count(None)
    if missing == 0:
        return [], []
    if missing == len(inner):
        texts = _plain_text_nodes(inner, metadata_mode)
        if texts is not None:
            return list(range(len(inner))), texts
    render = memo.render if memo is not None else None
    positions: list[int] = []
    texts = []
    for i, (node, embedding) in enumerate(zip(inner, embeddings, strict=True)):
        if embedding is not None:
            continue
        try:
            text = render(node, metadata_mode) if render else node.get_content(metadata_mode=metadata_mode)
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
