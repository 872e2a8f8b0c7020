"""Async paths, callback events and instrumentation spans/events."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from li_fakes import CollectEvents, ExplodingEmbedding, KeyedEmbedding
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation import root_dispatcher
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import DiverseNodePostprocessor


def _text_nodes(n: int = 10) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=f"n{i}", text=f"text {i % 7}"), score=1.0 - i / 100)
        for i in range(n)
    ]


async def test_async_matches_sync_and_uses_async_embedding() -> None:
    sync_embed, async_embed = KeyedEmbedding(dim=5), KeyedEmbedding(dim=5)
    nodes = _text_nodes()
    sync_pp = DiverseNodePostprocessor(top_n=4, method="gmmr", embed_model=sync_embed)
    async_pp = DiverseNodePostprocessor(top_n=4, method="gmmr", embed_model=async_embed)
    expected = sync_pp.postprocess_nodes(nodes, query_str="question")
    got = await async_pp.apostprocess_nodes(nodes, query_str="question")
    assert [n.node.node_id for n in got] == [n.node.node_id for n in expected]
    assert [n.node.metadata for n in got] == [n.node.metadata for n in expected]
    distinct = {n.node.text for n in nodes}
    assert dict(async_embed.async_calls) == dict.fromkeys(distinct, 1)
    assert not async_embed.sync_calls
    await async_pp.apostprocess_nodes(nodes, query_str="question")  # cached now
    assert dict(async_embed.async_calls) == dict.fromkeys(distinct, 1)


async def test_async_reuses_stored_embeddings() -> None:
    rng = np.random.default_rng(1)
    nodes = [
        NodeWithScore(node=TextNode(id_=f"n{i}", text="t", embedding=v.tolist()), score=0.5)
        for i, v in enumerate(rng.normal(size=(8, 4)))
    ]
    pp = DiverseNodePostprocessor(top_n=3, method="mmr", embed_model=ExplodingEmbedding(dim=4))
    out = await pp.apostprocess_nodes(nodes, QueryBundle("q", embedding=[1.0, 0.0, 0.0, 0.0]))
    assert len(out) == 3


async def test_async_errors_are_the_same_typed_errors() -> None:
    pp = DiverseNodePostprocessor(top_n=2, embed_model=KeyedEmbedding())
    bad = [NodeWithScore(node=TextNode(id_="x", text=""), score=1.0)]
    with pytest.raises(ValueError, match="no embedding and no text"):
        await pp.apostprocess_nodes(bad, query_str="q")


def test_callback_manager_records_a_reranking_event() -> None:
    debug = LlamaDebugHandler()
    pp = DiverseNodePostprocessor(
        top_n=3, embed_model=KeyedEmbedding(), callback_manager=CallbackManager([debug])
    )
    out = pp.postprocess_nodes(_text_nodes(), query_str="q")
    pairs = debug.get_event_pairs(CBEventType.RERANKING)
    assert len(pairs) == 1
    start, end = pairs[0]
    assert start.payload is not None and end.payload is not None
    assert len(end.payload["nodes"]) == len(out) == 3


@pytest.fixture
def instrumented() -> Iterator[tuple[CollectEvents, SimpleSpanHandler]]:
    events, spans = CollectEvents(events=[]), SimpleSpanHandler()
    root_dispatcher.add_event_handler(events)
    root_dispatcher.add_span_handler(spans)
    try:
        yield events, spans
    finally:
        root_dispatcher.event_handlers.remove(events)
        root_dispatcher.span_handlers.remove(spans)


def _span_names(spans: SimpleSpanHandler) -> list[str]:
    return [s.id_.split("-")[0] for s in spans.completed_spans]


async def test_dispatcher_spans_and_rerank_events(
    instrumented: tuple[CollectEvents, SimpleSpanHandler],
) -> None:
    events, spans = instrumented
    pp = DiverseNodePostprocessor(top_n=2, embed_model=KeyedEmbedding())
    pp.postprocess_nodes(_text_nodes(), query_str="q")
    await pp.apostprocess_nodes(_text_nodes(), query_str="q")
    names = _span_names(spans)
    assert "DiverseNodePostprocessor._postprocess_nodes" in names
    assert "DiverseNodePostprocessor._apostprocess_nodes" in names
    kinds = [e.class_name() for e in events.events]
    assert kinds.count("ReRankStartEvent") == 2 and kinds.count("ReRankEndEvent") == 2
    end = [e for e in events.events if e.class_name() == "ReRankEndEvent"][0]
    assert len(end.nodes) == 2  # type: ignore[attr-defined]
