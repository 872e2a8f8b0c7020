"""LangChain face of DF-RAG: adapter, retriever and chain with fake models and callbacks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from dfrag_fakes import passages_of, role_of, score_reply  # noqa: E402
from diverse_core.dfrag import DEFAULT_LAMBDAS, sweep_candidate_sets  # noqa: E402
from diverse_core.errors import InvalidParameterError  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models import (  # noqa: E402
    BaseChatModel,
    FakeListChatModel,
    FakeListLLM,
)
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from lc_callbacks import AsyncCounter, Counter  # noqa: E402

from langchain_diverse.dfrag import DFRAGRetriever, LangChainLLM, create_dfrag_chain  # noqa: E402

TEXTS = [f"fact {i} about topic {i % 4}" for i in range(16)]


class RoutedChatModel(BaseChatModel):
    """Replies by DF-RAG role; evaluator score depends on the passages it sees."""

    favourite: str = "fact 3 "

    @property
    def _llm_type(self) -> str:
        return "routed-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        role = role_of(prompt)
        if role == "planner":
            text = "1) Find the fact\n2) Find the topic"
        elif role == "evaluator":
            hit = any(p.startswith(self.favourite) for p in passages_of(prompt))
            text = score_reply(9 if hit else 2)
        else:
            text = "forty-two"
        msg = AIMessage(content=text, usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12})
        return ChatResult(generations=[ChatGeneration(message=msg)])


@pytest.fixture
def store() -> InMemoryVectorStore:
    s = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    s.add_texts(TEXTS)
    return s


def _groups(store: InMemoryVectorStore, query: str, k: int, fetch_k: int):
    emb = store.embeddings
    docs = store.similarity_search_by_vector(emb.embed_query(query), k=fetch_k)
    vecs = emb.embed_documents([d.page_content for d in docs])
    return docs, sweep_candidate_sets(emb.embed_query(query), vecs, k, DEFAULT_LAMBDAS)


def test_dfrag_langchain_adapter_text_and_usage():
    llm = LangChainLLM(RoutedChatModel())
    out = llm.complete("x\nPlan:")
    assert out.text.startswith("1) Find") and (out.prompt_tokens, out.completion_tokens) == (10, 2)
    assert asyncio.run(llm.acomplete("Answer:")).text == "forty-two"
    assert LangChainLLM(FakeListLLM(responses=["plain"])).complete("p").text == "plain"
    with pytest.raises(TypeError, match="Runnable"):
        LangChainLLM(object())  # type: ignore[arg-type]


def test_dfrag_langchain_retriever_picks_evaluator_best_and_callbacks_see_every_call(store):
    query = "fact topic"
    docs, groups = _groups(store, query, 3, 12)
    fav = RoutedChatModel().favourite
    hit = [lam for lam in DEFAULT_LAMBDAS if any(docs[i].page_content.startswith(fav) for i in groups.key_of(lam))]
    assert hit and len(hit) < len(DEFAULT_LAMBDAS)
    handler = Counter()
    retriever = DFRAGRetriever(llm=RoutedChatModel(), vectorstore=store, k=3, fetch_k=12)
    out = retriever.invoke(query, config={"callbacks": [handler]})
    assert len(out) == 3
    meta = out[0].metadata
    assert meta["dfrag_lambda"] == hit[len(hit) // 2]
    assert meta["selection_method"] == "dfrag" and [d.metadata["selection_rank"] for d in out] == [0, 1, 2]
    assert meta["selection_params"]["lambda_mult"] == meta["dfrag_lambda"]
    assert meta["dfrag_plan"] == ["Find the fact", "Find the topic"]
    assert set(meta["dfrag_lambda_scores"]) == {f"{v:g}" for v in DEFAULT_LAMBDAS}
    assert any(d.page_content.startswith(fav) for d in out)
    # planner + one evaluation per distinct set; no generator for the retriever
    assert handler.llm_starts == 1 + len(groups.groups)
    assert handler.parents == {handler.retriever_runs[0]}  # nested under the retriever run


def test_dfrag_langchain_async_retriever_and_async_handler(store):
    handler = AsyncCounter()
    retriever = DFRAGRetriever(llm=RoutedChatModel(), vectorstore=store, k=3, fetch_k=12)
    out = asyncio.run(retriever.ainvoke("fact topic", config={"callbacks": [handler]}))
    sync_out = retriever.invoke("fact topic")
    assert [d.page_content for d in out] == [d.page_content for d in sync_out]
    _, groups = _groups(store, "fact topic", 3, 12)
    assert handler.llm_starts == 1 + len(groups.groups)


def test_dfrag_langchain_chain_with_fake_list_models(store):
    query = "fact topic"
    _, groups = _groups(store, query, 3, 10)
    n = len(groups.groups)
    # Planner first, then n identical evaluations (any order), then the generator.
    responses = ["1) Find the fact"] + ["1. Score: 4. Reason: ok\nTotal Score: 4"] * n + ["Paris"]
    for model in (FakeListChatModel(responses=responses), FakeListLLM(responses=responses)):
        handler = Counter()
        retriever = DFRAGRetriever(llm=model, vectorstore=store, k=3, fetch_k=10)
        out = create_dfrag_chain(retriever).invoke({"question": query}, config={"callbacks": [handler]})
        assert out["answer"] == "Paris"
        assert out["lambda"] == 0.6  # all tied -> upper median of the grid
        assert len(out["context"]) == 3 and out["plan"] == ["Find the fact"]
        assert out["cost"]["llm_calls"] == n + 2 == handler.llm_starts
        assert out["result"].n_distinct_sets == n


def test_dfrag_langchain_chain_async_and_batch(store):
    chain = DFRAGRetriever(llm=RoutedChatModel(), vectorstore=store, k=3, fetch_k=12).as_chain()
    a = asyncio.run(chain.ainvoke("fact topic"))
    b = chain.batch(["fact topic", "topic 2"])
    assert a["answer"] == "forty-two" == b[0]["answer"]
    assert a["lambda"] == b[0]["lambda"]
    assert a["cost"]["prompt_tokens"] == 10 * a["cost"]["llm_calls"]


def test_dfrag_langchain_base_retriever_source(store):
    base = store.as_retriever(search_kwargs={"k": 12})
    emb = store.embeddings
    handler = Counter()
    out = DFRAGRetriever(llm=RoutedChatModel(), base_retriever=base, embeddings=emb, k=3).invoke(
        "fact topic", config={"callbacks": [handler]}
    )
    assert len(out) == 3 and len(handler.retriever_runs) == 2  # ours + the nested base retriever


def test_dfrag_langchain_bad_configuration(store):
    with pytest.raises(InvalidParameterError, match="exactly one"):
        DFRAGRetriever(llm=RoutedChatModel())
    with pytest.raises(InvalidParameterError, match="fetch_k must be >= k"):
        DFRAGRetriever(llm=RoutedChatModel(), vectorstore=store, k=5, fetch_k=3)
    with pytest.raises(InvalidParameterError, match="sampling"):
        DFRAGRetriever(llm=RoutedChatModel(), vectorstore=store, sampling="nope")
    with pytest.raises(InvalidParameterError, match="question"):
        DFRAGRetriever(llm=RoutedChatModel(), vectorstore=store).as_chain().invoke({"q": 1})
