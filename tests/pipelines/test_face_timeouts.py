"""Issue 33 item 3: the faces honour ``timeout`` as the core does, for every pipeline.

A chat model / LLM that hangs (5 s, far past ``timeout=0.3``) behind each face of each pipeline,
called sync and async: the call ends within ``timeout * (max_retries + 1) + 1 s`` (the issue's
bound) with a typed ``LLMError`` or a result that says what failed. Before the fix a LangChain
model without native async ran in the event loop's default executor, which ``asyncio.run`` (every
sync ``run()``) joins, so a sync call lasted the whole hang; a LlamaIndex ``CustomLLM``'s
``acomplete`` ran the sync call inside the event loop, so no timeout could fire at all.

The hung calls wait on an event that the test sets at the end, so abandoned worker threads end
with the test; each test also checks the model's worker pool never held more threads than
``max_concurrency`` (the bound on abandoned calls).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from diverse_core.llm import LLMError

TIMEOUT = 0.3
RETRIES = 1
HANG = 5.0
BOUND = TIMEOUT * (RETRIES + 1) + 1.0
DIM = 16
TEXTS = [f"fact {i}: the river {w} flows past town {i % 3}." for i, w in enumerate("abcdefgh")]
QUESTION = "Which river flows past town 1?"

PIPELINES = ["DFRAG", "DIVA", "VendiRAG", "DRRAG"]
OPTIONS: dict[str, dict[str, Any]] = {
    "DFRAG": {"lambdas": [0.2, 0.8]},
    "DIVA": {},
    "VendiRAG": {"max_iterations": 2},
    "DRRAG": {"k1": 2, "mode": "qdc", "fill": True},
}


def vec(text: str) -> list[float]:
    seed = int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:12], 16)
    v = np.random.default_rng(seed).normal(size=DIM)
    return (v / np.linalg.norm(v)).tolist()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown: every 'hung' call returns, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def _check(outcome: Any, elapsed: float) -> None:
    assert elapsed <= BOUND, f"took {elapsed:.2f}s > {BOUND:.2f}s (timeout={TIMEOUT}, max_retries={RETRIES})"
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, LLMError), repr(outcome)
    else:  # a pipeline that tolerates the failure says so
        assert outcome, "a run over a hung model returned no warning"


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - checked by _check
        out = exc
    return out, time.perf_counter() - start


def _pool_threads(pipeline: Any) -> int:
    pools = [m._executor for m in pipeline.llms.models() if m._executor is not None]
    return max((p.threads for p in pools), default=0)


# ---------------------------------------------------------------------------- LangChain
def _langchain(release: threading.Event, *, tools: bool, native: bool) -> Any:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    def reply() -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="1"))])

    class HungChat(BaseChatModel):
        """Sleeps in ``_generate``; async only through LangChain's executor fallback."""

        @property
        def _llm_type(self) -> str:
            return "hung"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            release.wait(HANG)
            return reply()

    class HungToolChat(HungChat):
        """Also takes tools, so role calls go through ``with_structured_output`` (tool calling)."""

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self.bind(tools=tools, **kw)

    class HungNativeChat(HungToolChat):
        """Natively async: sleeps in ``_agenerate`` (cancelled at the timeout)."""

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                             **kw: Any) -> ChatResult:
            await asyncio.sleep(HANG)
            return reply()

    class Hash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [vec(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return vec(text)

    cls = HungNativeChat if native else (HungToolChat if tools else HungChat)
    return cls(), Hash()


def _lc_retriever(pipeline: str, model: Any, emb: Any) -> Any:
    from langchain_core.vectorstores import InMemoryVectorStore

    import langchain_diverse

    store = InMemoryVectorStore(emb)
    store.add_texts(TEXTS)
    cls = getattr(langchain_diverse, f"{pipeline.upper() if pipeline == 'DIVA' else pipeline}Retriever")
    k = 4 if pipeline == "DRRAG" else 2
    return cls(llm=model, vectorstore=store, k=k, fetch_k=8, timeout=TIMEOUT, max_retries=RETRIES,
               **OPTIONS[pipeline])


def _lc_outcome(out: Any) -> Any:
    return out if isinstance(out, BaseException) else out["warnings"]


@pytest.mark.parametrize("model_kind", ["text", "tools", "native"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_langchain_chain_over_a_hung_chat_model_ends_within_the_timeout_bound(
    pipeline: str, mode: str, model_kind: str, release: threading.Event
) -> None:
    model, emb = _langchain(release, tools=model_kind == "tools", native=model_kind == "native")
    retriever = _lc_retriever(pipeline, model, emb)
    chain = retriever.as_chain()
    if mode == "sync":
        out, elapsed = _timed(lambda: chain.invoke(QUESTION))
    else:
        out, elapsed = _timed(lambda: asyncio.run(chain.ainvoke(QUESTION)))
    _check(_lc_outcome(out), elapsed)
    assert _pool_threads(retriever.pipeline) <= retriever.max_concurrency


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("pipeline", ["DFRAG", "DIVA", "VendiRAG"])  # DR-RAG retrieves without the LLM
def test_langchain_retriever_over_a_hung_chat_model_ends_within_the_timeout_bound(
    pipeline: str, mode: str, release: threading.Event
) -> None:
    model, emb = _langchain(release, tools=True, native=False)
    retriever = _lc_retriever(pipeline, model, emb)
    if mode == "sync":
        out, elapsed = _timed(lambda: retriever.run_pipeline(QUESTION))
    else:
        out, elapsed = _timed(lambda: asyncio.run(retriever.arun_pipeline(QUESTION)))
    _check(out if isinstance(out, BaseException) else out[0].warnings, elapsed)


def test_repeated_sync_calls_keep_the_abandoned_threads_bounded(release: threading.Event) -> None:
    """Five sync runs over a model hung for the whole test: each ends within the bound and the
    abandoned calls stay in the model's bounded daemon pool (no thread per run)."""
    model, emb = _langchain(release, tools=False, native=False)
    retriever = _lc_retriever("DFRAG", model, emb)
    before = threading.active_count()
    for _ in range(5):
        out, elapsed = _timed(lambda: retriever.run_pipeline(QUESTION, generate=True))
        _check(out if isinstance(out, BaseException) else out[0].warnings, elapsed)
    assert _pool_threads(retriever.pipeline) <= retriever.max_concurrency
    assert threading.active_count() - before <= retriever.max_concurrency + 1
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("diverse-rag-llm"))


# ---------------------------------------------------------------------------- LlamaIndex
def _llamaindex(release: threading.Event, *, chat: bool) -> Any:
    pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class HungLLM(CustomLLM):
        """Sleeps in ``complete``; ``CustomLLM``'s ``acomplete``/``achat`` call it in the loop."""

        is_chat: bool = False

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_chat_model=self.is_chat, model_name="hung")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            release.wait(HANG)
            return CompletionResponse(text="1")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            raise NotImplementedError

    class Hash(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return vec(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return vec(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return vec(text)

    return HungLLM(is_chat=chat), Hash()


def _li_engine(pipeline: str, llm: Any, emb: Any) -> Any:
    from llama_index.core import Document, VectorStoreIndex

    import llamaindex_diverse

    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=emb)
    name = pipeline.upper() if pipeline == "DIVA" else pipeline
    engine_cls = getattr(llamaindex_diverse, f"{name}QueryEngine")
    k = 4 if pipeline == "DRRAG" else 2
    return engine_cls.from_args(index, llm=llm, embed_model=emb, k=k, fetch_k=8, timeout=TIMEOUT,
                                max_retries=RETRIES, **OPTIONS[pipeline])


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_llamaindex_engine_over_a_hung_llm_ends_within_the_timeout_bound(
    pipeline: str, mode: str, chat: bool, release: threading.Event
) -> None:
    llm, emb = _llamaindex(release, chat=chat)
    engine = _li_engine(pipeline, llm, emb)
    if mode == "sync":
        out, elapsed = _timed(lambda: engine.query(QUESTION))
    else:
        out, elapsed = _timed(lambda: asyncio.run(engine.aquery(QUESTION)))
    warnings = out if isinstance(out, BaseException) else out.metadata[f"{engine.retriever.pipeline.name}_warnings"]
    _check(warnings, elapsed)
    pipe = engine.retriever.pipeline
    assert _pool_threads(pipe) <= 4  # the faces' default max_concurrency


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("pipeline", ["DFRAG", "DIVA", "VendiRAG"])
def test_llamaindex_retriever_over_a_hung_llm_ends_within_the_timeout_bound(
    pipeline: str, mode: str, release: threading.Event
) -> None:
    llm, emb = _llamaindex(release, chat=True)
    retriever = _li_engine(pipeline, llm, emb).retriever
    if mode == "sync":
        out, elapsed = _timed(lambda: retriever.run_pipeline(QUESTION))
    else:
        out, elapsed = _timed(lambda: asyncio.run(retriever.arun_pipeline(QUESTION)))
    _check(out if isinstance(out, BaseException) else out[0].warnings, elapsed)


# ---------------------------------------------------------------------------- detection
def test_native_async_detection() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_core.language_models import LLM, FakeListChatModel, FakeListLLM
    from langchain_core.runnables import RunnableLambda
    from llama_index.core.llms import MockLLM

    from langchain_diverse.llm import LangChainLLM
    from langchain_diverse.llm import native_async as lc_native
    from llamaindex_diverse.llm import LlamaIndexLLM
    from llamaindex_diverse.llm import native_async as li_native

    async def afunc(x: str) -> str:
        return x

    assert not lc_native(FakeListChatModel(responses=["x"]))
    assert lc_native(FakeListLLM(responses=["x"]))  # implements _acall itself

    class SyncLLM(LLM):
        @property
        def _llm_type(self) -> str:
            return "sync"

        def _call(self, prompt: str, stop: Any = None, run_manager: Any = None, **kw: Any) -> str:
            return prompt

    assert not lc_native(SyncLLM())
    assert not lc_native(RunnableLambda(lambda x: x))
    assert lc_native(RunnableLambda(lambda x: x, afunc=afunc))
    assert not lc_native(FakeListChatModel(responses=["x"]).bind(stop=["."]))
    assert LangChainLLM(FakeListChatModel(responses=["x"])).native_async is False
    assert not li_native(MockLLM())
    assert LlamaIndexLLM(MockLLM()).native_async is False


# ---------------------------------------------------------------------------- hung evaluator only
EVALUATOR_MARK = "strict judge of retrieved passages"  # in DF-RAG's evaluator prompts only


@pytest.mark.parametrize("face", ["langchain", "llamaindex", "core"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_dfrag_with_a_hung_evaluator_ends_within_two_calls_bounds(
    face: str, mode: str, release: threading.Event
) -> None:
    """The fuzzer's hung-evaluator mode: the planner and generator answer, every evaluator call
    hangs. The run is two LLM stages long after the planner (evaluations, then the answer), so it
    ends within two calls' bound, in the faces as in the core. (With the default
    ``max_concurrency=4`` the abandoned evaluator attempts hold every worker, so the answer call
    may time out unstarted: a typed ``LLMTimeoutError``.)"""
    from diverse_core.pipelines import InMemorySource
    from diverse_core.pipelines.dfrag import DFRAG

    def reply(prompt: str) -> str:
        if EVALUATOR_MARK in prompt:
            release.wait(HANG)
        return "Answer: town 1"

    kw = {"k": 2, "timeout": TIMEOUT, "max_retries": RETRIES, "lambdas": [0.2, 0.8]}
    if face == "langchain":
        _, emb = _langchain(release, tools=False, native=False)
        from langchain_core.runnables import RunnableLambda

        chain = _lc_retriever("DFRAG", RunnableLambda(lambda p: reply(str(p))), emb).as_chain()
        call, acall = (lambda: chain.invoke(QUESTION)), (lambda: chain.ainvoke(QUESTION))
    elif face == "llamaindex":
        llm, emb = _llamaindex(release, chat=False)
        llm_cls = type(llm)

        class EvalHung(llm_cls):  # type: ignore[misc, valid-type]
            def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
                from llama_index.core.llms import CompletionResponse

                return CompletionResponse(text=reply(prompt))

        engine = _li_engine("DFRAG", EvalHung(), emb)
        call, acall = (lambda: engine.query(QUESTION)), (lambda: engine.aquery(QUESTION))
    else:
        source = InMemorySource(TEXTS, lambda ts: np.array([vec(t) for t in ts]), default_k=8)
        pipe = DFRAG(reply, **kw)
        call, acall = (lambda: pipe.run(QUESTION, source, generate=True)), (
            lambda: pipe.arun(QUESTION, source, generate=True))
    out, elapsed = _timed(call if mode == "sync" else (lambda: asyncio.run(acall())))
    assert elapsed <= 2 * BOUND, f"took {elapsed:.2f}s > {2 * BOUND:.2f}s"
    assert isinstance(out, LLMError) or out is not None, repr(out)
