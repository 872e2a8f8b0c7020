"""A LlamaIndex query engine with and without diversity-aware node selection (offline).

The corpus repeats the most query-like fact in several phrasings. A plain engine fills
its context with those paraphrases. The diverse engine differs in one line: it fetches
10 candidates and passes ``node_postprocessors=[DiverseNodePostprocessor(top_n=4, ...)]``,
which keeps the best paraphrase and spends the rest of the context on other aspects.

Runs offline with the packaged MiniLM embedding and LlamaIndex's ``MockLLM`` (swap in
any real LLM). Run: ``python examples/llamaindex_query_engine.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import Settings, VectorStoreIndex  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from llamaindex_diverse import DiverseNodePostprocessor, MiniLMEmbedding  # noqa: E402

CHUNKS = [
    "The Eiffel Tower was built between 1887 and 1889.",
    "Construction of the Eiffel Tower took place from 1887 to 1889.",
    "Work on the Eiffel Tower began in 1887 and finished in 1889.",
    "The Eiffel Tower was completed in 1889 after two years of construction.",
    "The tower was built as the entrance arch for the 1889 World's Fair in Paris.",
    "Gustave Eiffel's engineering company designed and built the tower.",
    "About 300 workers assembled 18,000 wrought-iron parts with 2.5 million rivets.",
    "Many Parisian artists protested against the tower while it was being built.",
    "The Eiffel Tower is 330 metres tall including its antennas.",
    "The tower receives around seven million visitors a year.",
]
QUESTION = "When was the Eiffel Tower built?"


def show(title: str, nodes: list) -> None:
    print(f"\n{title}")
    for item in nodes:
        rank = item.node.metadata.get("selection_rank", "-")
        print(f"  [{rank}] score={item.score:.3f}  {item.node.get_content()}")


def main() -> None:
    Settings.embed_model = MiniLMEmbedding()
    Settings.llm = MockLLM(max_tokens=32)
    index = VectorStoreIndex([TextNode(text=t) for t in CHUNKS])

    pick = DiverseNodePostprocessor(top_n=4, method="gmmr", method_params={"lambda_mult": 0.6})

    plain = index.as_query_engine(similarity_top_k=4)
    diverse = index.as_query_engine(similarity_top_k=10, node_postprocessors=[pick])

    show("Plain top-4:", plain.query(QUESTION).source_nodes)
    show("gMMR (lambda_mult=0.6), 4 of 10:", diverse.query(QUESTION).source_nodes)


if __name__ == "__main__":
    main()
