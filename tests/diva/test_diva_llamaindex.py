"""LlamaIndex face of DIVA: VectorStoreIndex + a scripted custom LLM; retriever and query engine,
sync and async, instrumentation sees every LLM call, both generation routes."""

from __future__ import annotations

import asyncio
import doctest
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from diva_fakes import I2018, I2019, PASSAGES, QUESTION, ScriptedDiva, vector_embedder  # noqa: E402
from diverse_core.errors import InvalidParameterError  # noqa: E402
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.instrumentation.events.llm import LLMCompletionStartEvent  # noqa: E402
from llama_index.core.llms import CustomLLM  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

import llamaindex_diverse.diva as li_diva  # noqa: E402
from llamaindex_diverse import DIVAQueryEngine, DIVARetriever  # noqa: E402


class HandEmbedding(BaseEmbedding):
    @classmethod
    def class_name(cls) -> str:
        return "HandEmbedding"

    def _get_text_embedding(self, text: str) -> list[float]:
        return vector_embedder([text])[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return vector_embedder([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class ScriptedLlamaLLM(CustomLLM):
    """Replies from a :class:`ScriptedDiva` by prompt stage."""

    script: Any = None

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-diva")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        text = self.script.complete(prompt).text
        return CompletionResponse(text=text, additional_kwargs={"prompt_tokens": 7, "completion_tokens": 1})

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):  # type: ignore[no-untyped-def]  # pragma: no cover
        yield self.complete(prompt)


class Prompts(BaseEventHandler):
    prompts: list[str] = []

    @classmethod
    def class_name(cls) -> str:
        return "DivaPrompts"

    def handle(self, event: Any, **kw: Any) -> None:
        if isinstance(event, LLMCompletionStartEvent):
            self.prompts.append(event.prompt)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    nodes = [TextNode(text=text, id_=pid) for pid, (text, _) in PASSAGES.items()]
    return VectorStoreIndex(nodes=nodes, embed_model=HandEmbedding())


def _retriever(index: VectorStoreIndex, script: ScriptedDiva, **kw: Any) -> DIVARetriever:
    opts: dict[str, Any] = {"k": 3, "per_interpretation_k": 3, "max_retries": 0}
    opts.update(kw)
    return DIVARetriever(index.as_retriever(similarity_top_k=6), llm=ScriptedLlamaLLM(script=script),
                         embed_model=HandEmbedding(), **opts)


def test_retriever_sync_and_async(index):
    script = ScriptedDiva()
    r = _retriever(index, script)
    nodes = r.retrieve(QUESTION)
    assert [n.node.node_id for n in nodes] == ["p4", "p1", "p3"]
    params = [n.node.metadata["selection_params"] for n in nodes]
    assert [p["interpretations"] for p in params] == [[I2018, I2019], [I2018], [I2019]]
    assert all(p["k"] == 3 and p["prune_score"] > 0 for p in params)
    assert nodes[0].node.metadata["selection_method"] == "diva"
    assert "selection_params" in nodes[0].node.excluded_llm_metadata_keys
    assert script.total == 2  # retrieval only: the two interpretation calls
    anodes = asyncio.run(r.aretrieve(QUESTION))
    assert [n.node.node_id for n in anodes] == ["p4", "p1", "p3"] and script.total == 4


@pytest.mark.parametrize(("verdict", "route", "calls"), [
    (lambda i, p: "Verdict: Yes" if "2018" in i else "Verdict: No", "passages", 6),
    (lambda i, p: "Verdict: No", "closed_book", 5),
])
def test_query_engine_routes_metadata_and_instrumentation(index, verdict, route, calls):
    script = ScriptedDiva(verdict=verdict)
    engine = DIVAQueryEngine(_retriever(index, script))
    handler = Prompts(prompts=[])
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    try:
        resp = engine.query(QUESTION)
    finally:
        dispatcher.event_handlers.remove(handler)
    meta = resp.metadata
    assert meta["diva_route"] == route and meta["diva_interpretations"] == [I2018, I2019]
    assert meta["diva_usefulness"] == ("PartialUseful" if route == "passages" else "Useless")
    assert meta["diva_verdicts"] == ([True, False] if route == "passages" else [False, False])
    assert meta["diva_cost"]["llm_calls"] == calls == script.total
    assert meta["diva_cost"]["prompt_tokens"] == 7 * calls
    assert resp.response.startswith("It depends" if route == "passages" else "From memory")
    assert [n.node.node_id for n in resp.source_nodes] == ["p4", "p1", "p3"]
    assert meta["diva_result"].route == route and meta["diva_warnings"] == []
    # every LLM call is visible to instrumentation (count distinct prompts: CustomLLM's
    # acomplete wraps complete, so a call may emit two start events)
    assert len(set(handler.prompts)) == calls


def test_query_engine_async_matches_sync_and_from_args(index):
    engine = DIVAQueryEngine.from_args(index.as_retriever(similarity_top_k=6),
                                       llm=ScriptedLlamaLLM(script=ScriptedDiva()),
                                       embed_model=HandEmbedding(), k=3, per_interpretation_k=3)
    a = asyncio.run(engine.aquery(QUESTION))
    b = engine.query(QUESTION)
    assert a.response == b.response and a.metadata["diva_route"] == "passages"
    assert [n.node.node_id for n in a.source_nodes] == [n.node.node_id for n in b.source_nodes]
    assert set(engine.get_prompts()) == {"ambiguity", "rewrite", "verify", "extract", "answer", "closed_book"}


def test_search_option_and_bad_configuration(index):
    r = _retriever(index, ScriptedDiva(), search="source", verify_in_retrieval=True)
    result, nodes = r.run_pipeline(QUESTION)
    assert result.search == "source" and result.cost.searches == 2 and result.usefulness == "Useful"
    assert len(nodes) == 3
    with pytest.raises(InvalidParameterError, match="unknown option"):
        _retriever(index, ScriptedDiva(), lambdas=(0.5,))
    with pytest.raises(InvalidParameterError, match="DIVARetriever"):
        DIVAQueryEngine(index.as_retriever())  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="streaming"):
        DIVAQueryEngine(_retriever(index, ScriptedDiva()), streaming=True).query(QUESTION)


def test_docstring_example():
    assert doctest.testmod(li_diva, optionflags=doctest.ELLIPSIS).failed == 0
