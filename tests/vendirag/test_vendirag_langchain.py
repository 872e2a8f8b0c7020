"""LangChain face of Vendi-RAG: retriever (sync/async), chain, callbacks on every LLM call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from diverse_core.errors import InvalidParameterError  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models import BaseChatModel, FakeListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from lc_callbacks import AsyncCounter, Counter  # noqa: E402
from vendi_fakes import judge_json, role_of  # noqa: E402

from langchain_diverse import VendiRAGRetriever, create_vendirag_chain  # noqa: E402

TEXTS = [f"fact {i} about topic {i % 4}" for i in range(16)]
QUESTION = "which fact about topic 1?"


class ScriptedChat(BaseChatModel):
    """Replies by Vendi-RAG role; judge ratings from ``ratings`` in call order; the rewrite is
    the exact text of TEXTS[5] (so the next search finds it first)."""

    ratings: list[int] = [4, 9]
    judge_calls: int = 0
    answers: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-vendirag"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        role = role_of(prompt)
        if role == "judge":
            self.judge_calls += 1
            text = judge_json(self.ratings[min(self.judge_calls, len(self.ratings)) - 1])
        elif role == "rewriter":
            text = TEXTS[5]
        elif role == "answerer":
            self.answers += 1
            text = f"answer-{self.answers}"
        else:
            text = "1) look at the facts"
        msg = AIMessage(content=text, usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12})
        return ChatResult(generations=[ChatGeneration(message=msg)])


@pytest.fixture
def store() -> InMemoryVectorStore:
    s = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    s.add_texts(TEXTS)
    return s


def test_retriever_runs_the_loop_and_callbacks_see_every_call(store):
    handler = Counter()
    retriever = VendiRAGRetriever(llm=ScriptedChat(), vectorstore=store, k=3, fetch_k=12)
    docs = retriever.invoke(QUESTION, config={"callbacks": [handler]})
    assert len(docs) == 3 and docs[0].page_content == TEXTS[5]  # iteration 2 searched the rewrite
    meta = docs[0].metadata
    assert meta["selection_method"] == "vendirag" and meta["vendirag_iteration"] == 2
    assert meta["vendirag_s_trajectory"] == pytest.approx([0.8, 0.6])
    assert meta["vendirag_quality_trajectory"] == pytest.approx([0.4, 0.9])
    assert meta["selection_params"]["iteration"] == 2 and meta["selection_params"]["query"] == TEXTS[5]
    assert meta["pipeline_warnings"] == []
    # 3 calls per iteration + 1 rewrite, all nested under the retriever run
    assert handler.llm_starts == 7 and handler.parents == {handler.retriever_runs[0]}


def test_async_retriever_matches_sync(store):
    handler = AsyncCounter()
    retriever = VendiRAGRetriever(llm=ScriptedChat(), vectorstore=store, k=3, fetch_k=12)
    a = asyncio.run(retriever.ainvoke(QUESTION, config={"callbacks": [handler]}))
    b = VendiRAGRetriever(llm=ScriptedChat(), vectorstore=store, k=3, fetch_k=12).invoke(QUESTION)
    assert [d.page_content for d in a] == [d.page_content for d in b]
    assert handler.llm_starts == 7


def test_chain_output_and_fake_list_model(store):
    responses = ["1) think", "Paris", judge_json(3), TEXTS[7], "2) think more", "Lyon", judge_json(10)]
    handler = Counter()
    retriever = VendiRAGRetriever(llm=FakeListChatModel(responses=responses), vectorstore=store, k=3,
                                  fetch_k=12, s_update="fixed")
    out = create_vendirag_chain(retriever).invoke({"question": QUESTION}, config={"callbacks": [handler]})
    assert out["answer"] == "Lyon" and out["final_iteration"] == 2 and out["stop_reason"] == "threshold"
    assert out["s_trajectory"] == [0.8, 0.8] and out["quality"] == pytest.approx(1.0)
    assert [it["query"] for it in out["iterations"]] == [QUESTION, TEXTS[7]]
    assert out["iterations"][0]["reasoning"] == "1) think" and out["iterations"][0]["calls"] == 4
    assert out["cost"]["llm_calls"] == 7 == handler.llm_starts
    assert out["cost"]["judge_calls"] == 2 and out["cost"]["rewriter_calls"] == 1
    assert len(out["context"]) == 3 and out["context"][0].page_content == TEXTS[7]


def test_chain_async_union_and_tokens(store):
    chain = VendiRAGRetriever(llm=ScriptedChat(), vectorstore=store, k=3, fetch_k=12,
                              return_documents="union").as_chain()
    out = asyncio.run(chain.ainvoke(QUESTION))
    ids = [d.page_content for d in out["context"]]
    assert len(ids) == len(set(ids)) and 3 < len(ids) <= 6
    assert out["cost"]["prompt_tokens"] == 10 * out["cost"]["llm_calls"]


def test_bad_configuration(store):
    with pytest.raises(InvalidParameterError, match="s_update"):
        VendiRAGRetriever(llm=ScriptedChat(), vectorstore=store, s_update="ema")
    with pytest.raises(InvalidParameterError, match="needs an LLM"):
        VendiRAGRetriever(vectorstore=store)
