"""LlamaIndex face of DF-RAG: adapter, retriever and query engine with scripted LLMs."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from dfrag_fakes import passages_of, role_of, score_reply  # noqa: E402
from diverse_core.errors import InvalidParameterError  # noqa: E402
from li_events import CountStarts  # noqa: E402
from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.llms import CustomLLM, MockLLM  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402

from llamaindex_diverse.dfrag import (  # noqa: E402
    DFRAGQueryEngine,
    DFRAGRetriever,
    LlamaIndexLLM,
)

TEXTS = [f"fact {i} about topic {i % 4} " + "word " * (i % 5) for i in range(16)]


class ScriptedLlamaLLM(CustomLLM):
    """Replies by DF-RAG role; the evaluator favours sets containing ``fact 10``."""

    favourite: str = "fact 10 "
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls += 1
        role = role_of(prompt)
        if role == "planner":
            text = "1) Find the fact\n2) Find the topic"
        elif role == "evaluator":
            hit = any(p.startswith(self.favourite) for p in passages_of(prompt))
            text = score_reply(8 if hit else 1)
        else:
            text = "Mangalia"
        return CompletionResponse(text=text, additional_kwargs={"prompt_tokens": 7, "completion_tokens": 1})

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):  # pragma: no cover
        yield self.complete(prompt)


class HashEmbedding(BaseEmbedding):
    """Deterministic, text-dependent vectors (MockEmbedding gives every text the same one)."""

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _vec(self, text: str) -> list[float]:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        return np.random.default_rng(seed).normal(size=16).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vec(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=t) for t in TEXTS], embed_model=HashEmbedding()
    )


def _engine(index: VectorStoreIndex, llm: Any, **kw: Any) -> DFRAGQueryEngine:
    return DFRAGQueryEngine.from_args(
        index.as_retriever(similarity_top_k=12), llm=llm, embed_model=HashEmbedding(), k=3, **kw
    )


def test_dfrag_llamaindex_adapter():
    out = LlamaIndexLLM(ScriptedLlamaLLM()).complete("x\nPlan:")
    assert out.text.startswith("1) Find") and (out.prompt_tokens, out.completion_tokens) == (7, 1)
    assert asyncio.run(LlamaIndexLLM(MockLLM(max_tokens=1)).acomplete("p")).text == "text"
    with pytest.raises(TypeError, match="llama_index LLM"):
        LlamaIndexLLM(object())  # type: ignore[arg-type]


def test_dfrag_llamaindex_query_engine_response_and_instrumentation(index):
    llm = ScriptedLlamaLLM()
    handler = CountStarts()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    try:
        resp = _engine(index, llm).query("which fact?")
    finally:
        dispatcher.event_handlers.remove(handler)
    meta = resp.metadata
    result = meta["dfrag_result"]
    assert resp.response == "Mangalia"
    assert len(resp.source_nodes) == 3
    assert [n.node.get_content() for n in resp.source_nodes] == list(result.texts)
    assert any(n.node.get_content().startswith(llm.favourite) for n in resp.source_nodes)
    hit = [lam for lam, s in result.lambda_scores.items() if s == 8]
    assert 0 < len(hit) < 10
    assert meta["dfrag_lambda"] == hit[len(hit) // 2] and meta["dfrag_tied_lambdas"] == hit
    assert meta["dfrag_plan"] == ["Find the fact", "Find the topic"]
    assert meta["dfrag_cost"]["llm_calls"] == llm.calls == result.n_distinct_sets + 2
    assert meta["dfrag_cost"]["prompt_tokens"] == 7 * llm.calls
    # every LLM call is visible to instrumentation (CustomLLM's acomplete wraps complete,
    # so each call can emit two start events; count distinct prompts)
    assert len(handler.prompts) == llm.calls
    node_meta = resp.source_nodes[0].node.metadata
    assert node_meta["selection_method"] == "dfrag"
    assert node_meta["selection_params"]["lambda_mult"] == meta["dfrag_lambda"]
    assert "selection_method" in resp.source_nodes[0].node.excluded_llm_metadata_keys


def test_dfrag_llamaindex_async_matches_sync(index):
    engine = _engine(index, ScriptedLlamaLLM(), incremental_context=True)
    a = asyncio.run(engine.aquery("which fact?"))
    b = engine.query("which fact?")
    assert a.metadata["dfrag_lambda"] == b.metadata["dfrag_lambda"]
    assert [n.node.node_id for n in a.source_nodes] == [n.node.node_id for n in b.source_nodes]


def test_dfrag_llamaindex_retriever_variant_and_mock_llm(index):
    base = index.as_retriever(similarity_top_k=10)
    retriever = DFRAGRetriever(base, llm=MockLLM(max_tokens=8), embed_model=HashEmbedding(), k=4)
    nodes = retriever.retrieve("anything")
    assert len(nodes) == 4 and [n.node.metadata["selection_rank"] for n in nodes] == [0, 1, 2, 3]
    anodes = asyncio.run(retriever.aretrieve("anything"))
    assert [n.node.node_id for n in anodes] == [n.node.node_id for n in nodes]


def test_dfrag_llamaindex_bad_configuration(index):
    with pytest.raises(InvalidParameterError, match="BaseRetriever"):
        DFRAGRetriever(object(), llm=MockLLM())  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="DFRAGRetriever"):
        DFRAGQueryEngine(index.as_retriever())  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="k must be"):
        DFRAGRetriever(index.as_retriever(), llm=MockLLM(), k=0)
