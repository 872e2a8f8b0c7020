"""LlamaIndex face of Vendi-RAG: retriever and query engine, sync and async, with scripted LLMs."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from diverse_core.errors import InvalidParameterError  # noqa: E402
from li_events import CountStarts  # noqa: E402
from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.llms import CustomLLM, MockLLM  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.prompts import PromptTemplate  # noqa: E402
from vendi_fakes import hash_vector, judge_json, role_of  # noqa: E402

from llamaindex_diverse import VendiRAGQueryEngine, VendiRAGRetriever  # noqa: E402

TEXTS = [f"fact {i} about topic {i % 4} " + "word " * (i % 5) for i in range(16)]


class HashEmbedding(BaseEmbedding):
    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _get_text_embedding(self, text: str) -> list[float]:
        return hash_vector(text, 16).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query, 16).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query, 16).tolist()


class ScriptedLlama(CustomLLM):
    """Judge ratings 3, 6, 9 in call order; rewrites are the exact text of TEXTS[10]."""

    calls: int = 0
    judge_calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls += 1
        role = role_of(prompt)
        if role == "judge":
            self.judge_calls += 1
            text = judge_json([3, 6, 9][min(self.judge_calls, 3) - 1])
        elif role == "rewriter":
            text = TEXTS[10]
        elif role == "answerer":
            text = "Mangalia"
        else:
            text = "1) steps"
        return CompletionResponse(text=text, additional_kwargs={"prompt_tokens": 7, "completion_tokens": 1})

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):  # pragma: no cover
        yield self.complete(prompt)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=HashEmbedding())


def _engine(index: VectorStoreIndex, llm: Any, **kw: Any) -> VendiRAGQueryEngine:
    return VendiRAGQueryEngine.from_args(
        index.as_retriever(similarity_top_k=12), llm=llm, embed_model=HashEmbedding(), k=3, **kw
    )


def test_query_engine_response_metadata_and_instrumentation(index):
    llm = ScriptedLlama()
    handler = CountStarts(prompts=set())
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    try:
        resp = _engine(index, llm).query("which fact?")
    finally:
        dispatcher.event_handlers.remove(handler)
    meta = resp.metadata
    result = meta["vendirag_result"]
    assert resp.response == "Mangalia" and meta["vendirag_stop_reason"] == "threshold"
    assert meta["vendirag_s_trajectory"] == pytest.approx([0.8, 0.7, 0.4])
    assert meta["vendirag_quality_trajectory"] == pytest.approx([0.3, 0.6, 0.9])
    assert meta["vendirag_final_iteration"] == 3 and len(meta["vendirag_iterations"]) == 3
    assert meta["vendirag_cost"]["llm_calls"] == llm.calls == 3 * 3 + 2
    assert meta["vendirag_cost"]["prompt_tokens"] == 7 * llm.calls
    assert [n.node.get_content() for n in resp.source_nodes] == list(result.iterations[2].texts)
    assert resp.source_nodes[0].node.get_content() == TEXTS[10].strip()
    assert len(handler.prompts) == llm.calls
    node_meta = resp.source_nodes[0].node.metadata
    assert node_meta["selection_method"] == "vendirag" and node_meta["selection_params"]["iteration"] == 3
    assert "selection_method" in resp.source_nodes[0].node.excluded_llm_metadata_keys


def test_query_engine_async_matches_sync(index):
    a = asyncio.run(_engine(index, ScriptedLlama(), s_update="relative").aquery("which fact?"))
    b = _engine(index, ScriptedLlama(), s_update="relative").query("which fact?")
    assert a.metadata["vendirag_s_trajectory"] == pytest.approx(b.metadata["vendirag_s_trajectory"])
    assert [n.node.node_id for n in a.source_nodes] == [n.node.node_id for n in b.source_nodes]


def test_retriever_sync_async_and_mock_llm(index):
    base = index.as_retriever(similarity_top_k=10)
    retriever = VendiRAGRetriever(base, llm=ScriptedLlama(), embed_model=HashEmbedding(), k=4)
    nodes = retriever.retrieve("anything")
    assert len(nodes) == 4 and [n.node.metadata["selection_rank"] for n in nodes] == [0, 1, 2, 3]
    anodes = asyncio.run(VendiRAGRetriever(base, llm=ScriptedLlama(), embed_model=HashEmbedding(),
                                           k=4).aretrieve("anything"))
    assert [n.node.node_id for n in anodes] == [n.node.node_id for n in nodes]
    # MockLLM echoes prompts: no readable ratings, so every iteration is unjudged (and says so)
    res, mock_nodes = VendiRAGRetriever(base, llm=MockLLM(), embed_model=HashEmbedding(), k=2,
                                        max_iterations=2, rewrite=False).run_pipeline("anything")
    assert len(mock_nodes) == 2 and res.quality_trajectory == (None, None)
    assert any("not judged" in w for w in res.warnings)
    assert np.all([n.node.metadata["selection_method"] == "vendirag" for n in mock_nodes])


def test_bad_configuration(index):
    with pytest.raises(InvalidParameterError, match="unknown option"):
        VendiRAGRetriever(index.as_retriever(), llm=MockLLM(), lambdas=(0.5,))
    with pytest.raises(InvalidParameterError, match="final"):
        VendiRAGRetriever(index.as_retriever(), llm=MockLLM(), final="first")
    with pytest.raises(InvalidParameterError, match="VendiRAGRetriever"):
        VendiRAGQueryEngine(index.as_retriever())  # type: ignore[arg-type]


def test_prompts_through_prompt_mixin_and_no_streaming(index):
    engine = _engine(index, ScriptedLlama())
    prompts = engine.get_prompts()
    assert set(prompts) == {"reasoning", "answer", "judge", "judge_retry", "rewrite"}
    new = prompts["reasoning"].get_template().replace("step by step", "carefully, step by step")
    engine.update_prompts({"reasoning": PromptTemplate(new)})
    assert "carefully, step by step" in engine.retriever.pipeline.prompts.reasoning
    resp = engine.query("which fact?")
    first = resp.metadata["vendirag_result"].llm_calls("reasoner")[0]
    assert "carefully, step by step" in first.prompt
    with pytest.raises(InvalidParameterError, match="several calls"):
        _engine(index, ScriptedLlama(), streaming=True).query("which fact?")
