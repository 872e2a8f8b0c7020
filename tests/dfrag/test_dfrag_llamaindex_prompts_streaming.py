"""DF-RAG's LlamaIndex query engine: prompts through PromptMixin, and a streamed answer."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")

from dfrag_fakes import role_of, score_reply  # noqa: E402
from diverse_core.errors import InvalidParameterError  # noqa: E402
from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.base.response.schema import StreamingResponse  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.prompts import PromptTemplate  # noqa: E402

from llamaindex_diverse import DFRAGQueryEngine  # noqa: E402


class Routed(CustomLLM):
    seen: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    def _text(self, prompt: str) -> str:
        self.seen.append(prompt)
        role = role_of(prompt)
        return {"planner": "1) Find it", "evaluator": score_reply(4, 1)}.get(role, "streamed answer")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw):  # type: ignore[no-untyped-def]
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw):  # type: ignore[no-untyped-def]
        text = self._text(prompt)

        def gen():  # type: ignore[no-untyped-def]
            acc = ""
            for word in text.split(" "):
                delta = word if not acc else " " + word
                acc += delta
                yield CompletionResponse(text=acc, delta=delta)

        return gen()


@pytest.fixture
def index() -> VectorStoreIndex:
    emb = MockEmbedding(embed_dim=8)
    return VectorStoreIndex.from_documents([Document(text=f"fact {i}") for i in range(8)], embed_model=emb)


def _engine(index: VectorStoreIndex, **kw):  # type: ignore[no-untyped-def]
    return DFRAGQueryEngine.from_args(index.as_retriever(similarity_top_k=8), llm=Routed(),
                                      embed_model=MockEmbedding(embed_dim=8), k=3, **kw)


def test_dfrag_llamaindex_prompts_through_prompt_mixin(index):
    engine = _engine(index)
    prompts = engine.get_prompts()
    assert {"planner", "evaluator", "generator"} <= set(prompts)
    assert "{question}" in prompts["planner"].get_template()
    engine.update_prompts({"generator": PromptTemplate("ANSWER BRIEFLY {context}{incremental_context} Q: {question}")})
    llm = engine.retriever.pipeline.llms["generator"].inner.llm
    llm.seen.clear()
    engine.query("fact?")
    assert any(p.startswith("ANSWER BRIEFLY") for p in llm.seen)
    with pytest.raises(InvalidParameterError, match="unknown prompt"):
        engine.update_prompts({"judge": PromptTemplate("x")})


def test_dfrag_llamaindex_streaming_answer(index):
    resp = _engine(index, streaming=True).query("fact?")
    assert isinstance(resp, StreamingResponse)
    assert "".join(resp.response_gen) == "streamed answer"
    assert len(resp.source_nodes) == 3 and resp.metadata["dfrag_cost"]["generator_calls"] == 0
    aresp = asyncio.run(_engine(index, streaming=True).aquery("fact?"))

    async def collect() -> str:
        return "".join([d async for d in aresp.async_response_gen()])

    assert asyncio.run(collect()) == "streamed answer"
