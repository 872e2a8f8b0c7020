"""LangChain face of DIVA: InMemoryVectorStore + a scripted fake chat model; retriever (sync,
async), chain (sync, async, batch), callbacks see every LLM call, options reach the pipeline."""

from __future__ import annotations

import asyncio
import doctest
import threading
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from diva_fakes import I2018, I2019, PASSAGES, QUESTION, ScriptedDiva, vector_embedder  # noqa: E402
from diverse_core.errors import InvalidParameterError  # noqa: E402
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

import langchain_diverse.diva as lc_diva  # noqa: E402
from langchain_diverse import DIVARetriever, create_diva_chain  # noqa: E402


class HandEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return vector_embedder(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return vector_embedder([text])[0].tolist()


class ScriptedChat(BaseChatModel):
    """A chat model whose replies come from a :class:`ScriptedDiva` (by prompt stage)."""

    script: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted-diva"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:
        text = self.script.complete(str(messages[-1].content)).text
        msg = AIMessage(content=text, usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12})
        return ChatResult(generations=[ChatGeneration(message=msg)])


class Starts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.llm_parents: list[Any] = []
        self.top_runs: list[Any] = []
        self._lock = threading.Lock()

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        with self._lock:
            self.llm_parents.append(parent_run_id)

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        if parent_run_id is None:
            self.top_runs.append(run_id)

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):  # type: ignore[no-untyped-def]
        if parent_run_id is None:
            self.top_runs.append(run_id)


class AsyncStarts(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.n = 0

    async def on_chat_model_start(self, serialized, messages, **kw):  # type: ignore[no-untyped-def]
        self.n += 1


@pytest.fixture
def store() -> InMemoryVectorStore:
    s = InMemoryVectorStore(HandEmbeddings())
    s.add_texts([t for t, _ in PASSAGES.values()], ids=list(PASSAGES))
    return s


def _retriever(store: InMemoryVectorStore, script: ScriptedDiva, **kw: Any) -> DIVARetriever:
    opts: dict[str, Any] = {"k": 3, "fetch_k": 6, "per_interpretation_k": 3, "max_retries": 0}
    opts.update(kw)
    return DIVARetriever(llm=ScriptedChat(script=script), vectorstore=store, **opts)


def test_retriever_returns_the_pruned_documents_with_their_interpretations(store):
    script, handler = ScriptedDiva(), Starts()
    docs = _retriever(store, script).invoke(QUESTION, config={"callbacks": [handler]})
    assert [d.id for d in docs] == ["p4", "p1", "p3"]
    assert [d.metadata["pipeline_reason"]["interpretations"] for d in docs] == [[I2018, I2019], [I2018], [I2019]]
    meta = docs[0].metadata
    assert meta["selection_method"] == "diva" and meta["selection_params"]["k"] == 3
    assert meta["diva_interpretations"] == [I2018, I2019] and meta["diva_usefulness"] is None
    assert meta["pipeline_warnings"] == [] and [d.metadata["selection_rank"] for d in docs] == [0, 1, 2]
    # retrieval only: the two interpretation calls, both children of the retriever run
    assert script.total == 2 and len(handler.llm_parents) == 2
    assert set(handler.llm_parents) == set(handler.top_runs) and len(handler.top_runs) == 1


def test_async_retriever_and_async_callbacks(store):
    script, handler = ScriptedDiva(verdict=lambda i, p: "Verdict: No"), AsyncStarts()
    retriever = _retriever(store, script, verify_in_retrieval=True)
    docs = asyncio.run(retriever.ainvoke(QUESTION, config={"callbacks": [handler]}))
    assert [d.id for d in docs] == ["p4", "p1", "p3"]
    assert docs[0].metadata["diva_usefulness"] == "Useless"
    assert handler.n == 2 + 2 == script.total
    assert [d.id for d in retriever.invoke(QUESTION, k=2)] == ["p4", "p1"]


@pytest.mark.parametrize(("verdict", "route", "calls"),
                         [(lambda i, p: "Verdict: Yes", "passages", 6), (lambda i, p: "Verdict: No", "closed_book", 5)])
def test_chain_answers_and_callbacks_see_every_llm_call(store, verdict, route, calls):
    script, handler = ScriptedDiva(verdict=verdict), Starts()
    chain = create_diva_chain(_retriever(store, script))
    out = chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
    assert out["route"] == route and out["interpretations"] == [I2018, I2019]
    assert out["usefulness"] == ("Useful" if route == "passages" else "Useless")
    assert out["answer"].startswith("It depends" if route == "passages" else "From memory")
    assert [d.id for d in out["context"]] == ["p4", "p1", "p3"]
    assert out["cost"]["llm_calls"] == calls == len(handler.llm_parents) == script.total
    assert out["cost"]["prompt_tokens"] == 10 * calls
    assert set(handler.llm_parents) == set(handler.top_runs) and len(handler.top_runs) == 1
    assert out["result"].route == route and out["warnings"] == []


def test_chain_async_and_batch(store):
    chain = _retriever(store, ScriptedDiva()).as_chain()
    a = asyncio.run(chain.ainvoke(QUESTION))
    b = chain.batch([QUESTION, QUESTION])
    assert a["answer"] == b[0]["answer"] == b[1]["answer"] and a["verdicts"] == [True, True]


def test_options_reach_the_pipeline_and_bad_options_are_named(store):
    r = _retriever(store, ScriptedDiva(), search="source", max_interpretations=2, prune="max")
    assert (r.pipeline.search_mode, r.pipeline.max_interpretations, r.pipeline.prune) == ("source", 2, "max")
    result, docs = r.run_pipeline(QUESTION)
    # max pruning: the passages that match one interpretation exactly come first
    assert [d.id for d in docs] == ["p0", "p2", "p1"] and result.cost.searches == 2
    with pytest.raises(InvalidParameterError, match="search"):
        _retriever(store, ScriptedDiva(), search="web")
    with pytest.raises(InvalidParameterError, match="unknown per-call option"):
        _retriever(store, ScriptedDiva()).invoke(QUESTION, fetch_k=3)


def test_fallback_warnings_reach_the_documents(store):
    docs = _retriever(store, ScriptedDiva(rewrite="no idea")).invoke(QUESTION)
    assert any("original question alone" in w for w in docs[0].metadata["pipeline_warnings"])
    assert docs[0].metadata["diva_interpretations"] == [QUESTION]


def test_docstring_example():
    assert doctest.testmod(lc_diva, optionflags=doctest.ELLIPSIS).failed == 0
