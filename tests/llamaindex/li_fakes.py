"""Test doubles for the LlamaIndex face: deterministic, call-counting embedding models."""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent


def unit(values: list[float]) -> list[float]:
    """``values`` scaled to unit length."""
    arr = np.asarray(values, dtype=np.float64)
    return (arr / np.linalg.norm(arr)).tolist()


class KeyedEmbedding(BaseEmbedding):
    """Maps known texts to fixed vectors, other texts to a hash-seeded random vector.

    Counts every text it embeds (sync and async separately) so tests can check that
    the postprocessor embeds each distinct text once, or not at all.
    """

    model_name: str = "keyed-test-embedding"
    dim: int = 3

    _table: dict[str, list[float]] = PrivateAttr(default_factory=dict)
    _sync_texts: Counter[str] = PrivateAttr(default_factory=Counter)
    _async_texts: Counter[str] = PrivateAttr(default_factory=Counter)
    _batches: list[list[str]] = PrivateAttr(default_factory=list)

    def __init__(self, table: dict[str, list[float]] | None = None, dim: int = 3) -> None:
        super().__init__(dim=dim)
        self._table = dict(table or {})

    @classmethod
    def class_name(cls) -> str:
        return "KeyedEmbedding"

    @property
    def sync_calls(self) -> Counter[str]:
        return self._sync_texts

    @property
    def async_calls(self) -> Counter[str]:
        return self._async_texts

    @property
    def batches(self) -> list[list[str]]:
        return self._batches

    def vector(self, text: str) -> list[float]:
        if text in self._table:
            return list(self._table[text])
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return unit(np.random.default_rng(seed).normal(size=self.dim).tolist())

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        self._batches.append(list(texts))
        self._sync_texts.update(texts)
        return [self.vector(t) for t in texts]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self.vector(query)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        self._batches.append(list(texts))
        self._async_texts.update(texts)
        return [self.vector(t) for t in texts]

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self.vector(query)


class ExplodingEmbedding(KeyedEmbedding):
    """Fails on any text embedding: proves that stored node embeddings are reused."""

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        raise AssertionError(f"embed model called for {texts}")

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        raise AssertionError(f"embed model called for {texts}")


class CollectEvents(BaseEventHandler):
    """Instrumentation handler that keeps every event it receives (for assertions)."""

    events: list[BaseEvent] = []

    @classmethod
    def class_name(cls) -> str:
        return "CollectEvents"

    def handle(self, event: BaseEvent, **kwargs: object) -> None:
        self.events.append(event)
