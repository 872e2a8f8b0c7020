"""The four pipelines end to end against a real OpenAI-compatible server (llama-cpp-python with the
packaged SmolLM2-135M), through three clients: the project's OpenAILLM, LangChain's ChatOpenAI
and LlamaIndex's OpenAILike. Every role call must take the structured path and decode to a
schema-valid object. SmolLM2-135M: plumbing, not quality - nothing here checks an answer."""

from __future__ import annotations

from typing import Any

import pytest
from diverse_core.llm import OpenAILLM
from diverse_core.pipelines import InMemorySource, get_pipeline
from llama_server import LlamaCppServer
from tiny_corpus import PASSAGES, QUESTION, hash_embedder

pytestmark = pytest.mark.real_server

MAX_TOKENS = 160
#: Small settings: few LLM calls per run (the suite's budget is minutes, on 2 cores).
PIPELINES: dict[str, dict[str, Any]] = {
    "dfrag": {"k": 3, "fetch_k": 8, "lambdas": (0.0, 0.5, 1.0)},
    "vendirag": {"k": 3, "fetch_k": 8, "max_iterations": 1},
    "diva": {"k": 3, "fetch_k": 8, "max_interpretations": 2},
    "drrag": {"k": 3, "mode": "qdc"},
}


def _client(kind: str, server: LlamaCppServer) -> Any:
    if kind == "openai":
        return OpenAILLM(model=server.alias, base_url=server.base_url, max_tokens=MAX_TOKENS)
    if kind == "langchain":
        chat_openai = pytest.importorskip("langchain_openai", reason="pip install langchain-openai").ChatOpenAI
        from langchain_diverse.llm import as_backend

        model = chat_openai(model=server.alias, base_url=server.base_url, api_key="EMPTY",
                            max_tokens=MAX_TOKENS, temperature=0.0, max_retries=0)
        return as_backend(model)
    openai_like = pytest.importorskip("llama_index.llms.openai_like",
                                      reason="pip install llama-index-llms-openai-like").OpenAILike
    from llamaindex_diverse.llm import as_backend as li_backend

    llm = openai_like(model=server.alias, api_base=server.base_url, api_key="EMPTY", max_tokens=MAX_TOKENS,
                      temperature=0.0, is_chat_model=True, max_retries=0, timeout=60.0)
    return li_backend(llm)


@pytest.mark.parametrize("client", ["openai", "langchain", "llamaindex"])
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_takes_the_structured_path(llama_server: LlamaCppServer, client: str, name: str) -> None:
    backend = _client(client, llama_server)
    # timeout: a guard against a hung server, generous for a loaded 2-core machine
    pipeline = get_pipeline(name)(backend, timeout=240.0, max_retries=1, **PIPELINES[name])
    source = InMemorySource(PASSAGES, embedder=hash_embedder)
    result = pipeline.run(QUESTION, source, generate=True)
    calls = [e for e in result.trace if e.role is not None]
    assert calls, "the pipeline made no LLM call"
    assert all(e.error is None for e in calls), [e.error for e in calls]
    paths = {(e.role, e.path, e.method) for e in calls}
    assert all(path == "structured" for _, path, _ in paths), paths
    problems = [(e.role, n) for e in calls for n in e.notes if n.startswith("schema:") or "unreadable" in n]
    assert not problems, problems  # every reply decoded to a schema-valid object
    assert result.cost.structured_calls == len(calls) and result.cost.fallbacks == 0
    assert result.documents and isinstance(result.answer, str)
