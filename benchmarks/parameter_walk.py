"""How far a parameter travels: the library functions between a face and the kernel that reads it.

Two walks (issue 44): ``diversity`` given in a LangChain retriever's ``search_kwargs`` until gMMR's
kernel (``gmmr.gmmr_sweep``), and the nodes' sources (``ref_doc_id``) from the LlamaIndex
postprocessor until the learned selector's source feature (``pairview._source_ids``). A profile hook
records the library call stack when the kernel is entered (the hops of one call), and counts how
often the method's parameters are resolved (``MethodSpec.resolve_params``) at construction and per
call. Run on any checkout: ``PYTHONPATH=shared:. python benchmarks/parameter_walk.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOTS = ("diverse_core", "langchain_diverse", "llamaindex_diverse")


def _library(frame: Any) -> bool:
    parts = Path(frame.f_code.co_filename).parts
    return any(root in parts for root in ROOTS) and "benchmarks" not in parts


class Walk:
    """The library stack when each of ``marks`` is first entered, and how often parameters are resolved."""

    def __init__(self, *marks: str) -> None:
        self.stacks: dict[str, list[str]] = {}
        self.marks, self.resolved = marks, 0

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call" or not _library(frame):
            return
        name = frame.f_code.co_name
        if name == "resolve_params":
            self.resolved += 1
        if name in self.marks and name not in self.stacks:
            stack, f = [], frame
            while f is not None:
                if _library(f):
                    stack.append(f.f_code.co_qualname)
                f = f.f_back
            self.stacks[name] = stack[::-1]

    def run(self, fn: Any) -> Any:
        sys.setprofile(self)
        try:
            return fn()
        finally:
            sys.setprofile(None)


def _report(title: str, build: Any, call: Any, marks: tuple[str, ...]) -> None:
    made = Walk(*marks)
    face = made.run(build)
    call(face)  # a first call may build what later calls reuse
    walk = Walk(*marks)
    walk.run(lambda: call(face))
    print(f"{title}\n  parameters resolved at construction: {made.resolved}, per (second) call: {walk.resolved}")
    for when, w in (("construction", made), ("call", walk)):
        for mark, stack in w.stacks.items():
            print(f"  {when}: {len(stack) - 1} hops to {mark}: " + " -> ".join(stack))


def main() -> None:
    import numpy as np
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )

    from langchain_diverse import DiverseRetriever
    from llamaindex_diverse import DiverseNodePostprocessor

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts([f"text {i}" for i in range(30)])
    _report("diversity: LangChain search_kwargs -> gMMR kernel",
            lambda: DiverseRetriever(vectorstore=store, k=3, fetch_k=10, search_kwargs={"diversity": 0.3}),
            lambda r: r.invoke("text 1"), ("native", "gmmr_sweep"))

    rng = np.random.default_rng(0)
    nodes = []
    for i in range(12):
        node = TextNode(text=f"Page {i % 3}: fact {i}", embedding=rng.normal(size=8).tolist())
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc-{i % 3}")
        nodes.append(NodeWithScore(node=node, score=0.5))
    bundle = QueryBundle("Which page?", embedding=rng.normal(size=8).tolist())
    _report("sources: LlamaIndex postprocessor (ref_doc_id) -> learned's source feature",
            lambda: DiverseNodePostprocessor(top_n=3, method="learned"),
            lambda pp: pp.postprocess_nodes(nodes, bundle), ("source_inputs", "_source_ids"))


if __name__ == "__main__":
    main()
