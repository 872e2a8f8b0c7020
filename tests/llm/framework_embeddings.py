"""A deterministic embedder (``texts -> array``) as a LangChain ``Embeddings`` and as a LlamaIndex
``BaseEmbedding``, for face tests that spend their time in the LLM calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["langchain_embeddings", "llamaindex_embedding"]

Embed = Callable[[Sequence[str]], np.ndarray]


def langchain_embeddings(embed: Embed) -> Any:
    from langchain_core.embeddings import Embeddings

    class Hash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

    return Hash()


def llamaindex_embedding(embed: Embed) -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class Hash(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    return Hash(model_name="hash")
