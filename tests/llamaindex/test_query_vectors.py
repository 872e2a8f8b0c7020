"""Query embeddings skip LlamaIndex's per-call events only when nobody would see them, and give the
model's own vector either way (``llamaindex_diverse._query_vectors``, used by ``LlamaIndexSource``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
from li_fakes import CollectEvents  # noqa: E402
from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.callbacks import CallbackManager, LlamaDebugHandler  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402

from llamaindex_diverse._query_vectors import aembed_query, embed_query  # noqa: E402
from llamaindex_diverse.sources import LlamaIndexSource  # noqa: E402


class _Model(MockEmbedding):
    """A mock whose query vector depends on the text."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(len(query)), 1.0, 0.0, 0.5]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


@pytest.fixture
def public_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of BaseEmbedding's public (instrumented) query methods: each reads the model's
    payload for its events first (the methods themselves stay as LlamaIndex wraps them)."""
    calls: list[str] = []
    payload = BaseEmbedding.to_payload

    def spy(self: BaseEmbedding, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(self).__name__)
        return payload(self, *args, **kwargs)

    monkeypatch.setattr(BaseEmbedding, "to_payload", spy)
    return calls


def _model(**kwargs: Any) -> _Model:
    return _Model(embed_dim=4, **kwargs)


def test_unobserved_query_embedding_skips_the_events(public_calls: list[str]) -> None:
    model = _model()
    assert embed_query(model, "abc") == [3.0, 1.0, 0.0, 0.5]
    assert asyncio.run(aembed_query(model, "abcd")) == [4.0, 1.0, 0.0, 0.5]
    assert public_calls == []


def test_source_search_embeds_the_query_without_events(public_calls: list[str]) -> None:
    model = _model()
    index = VectorStoreIndex.from_documents([Document(text=t) for t in ("a", "bb", "ccc")], embed_model=model)
    source = LlamaIndexSource(index, embed_model=model, fetch_k=2)
    public_calls.clear()  # (building the index embedded its documents)
    found = source.search("bb")
    assert found.query_embedding.tolist() == [2.0, 1.0, 0.0, 0.5]
    assert source.embed(["xyz"]).tolist() == [[3.0, 1.0, 0.0, 0.5]]
    assert public_calls == []


def test_a_callback_handler_sees_the_embedding(public_calls: list[str]) -> None:
    debug = LlamaDebugHandler()
    model = _model(callback_manager=CallbackManager([debug]))
    assert embed_query(model, "abc") == [3.0, 1.0, 0.0, 0.5]
    assert asyncio.run(aembed_query(model, "ab")) == [2.0, 1.0, 0.0, 0.5]
    assert public_calls == ["_Model", "_Model"]
    assert len(debug.get_event_pairs()) == 2


def test_an_event_handler_sees_the_embedding(public_calls: list[str]) -> None:
    root, recorder = get_dispatcher("root"), CollectEvents(events=[])
    root.add_event_handler(recorder)
    try:
        assert embed_query(_model(), "abc") == [3.0, 1.0, 0.0, 0.5]
    finally:
        root.event_handlers.remove(recorder)
    assert public_calls == ["_Model"]
    seen = [e.class_name() for e in recorder.events]
    assert "EmbeddingStartEvent" in seen and "EmbeddingEndEvent" in seen


def test_an_embeddings_cache_is_used(public_calls: list[str]) -> None:
    from llama_index.core.storage.kvstore import SimpleKVStore

    model = _model(embeddings_cache=SimpleKVStore())
    assert embed_query(model, "abc") == [3.0, 1.0, 0.0, 0.5]
    assert public_calls == ["_Model"]
