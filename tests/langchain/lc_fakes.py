"""Hand-built embeddings with known answers for the LangChain face tests."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

#: Query "q" points along x. Three near-duplicates are the most relevant (cos ~0.90);
#: "bridge" is less relevant (cos 0.70) but covers another direction; "noise" is off-topic.
VECTORS: dict[str, list[float]] = {
    "q": [1.0, 0.0, 0.0, 0.0],
    "dup a": [0.9, 0.436, 0.0, 0.0],
    "dup b": [0.9, 0.43, 0.01, 0.0],
    "dup c": [0.9, 0.433, 0.0, 0.01],
    "bridge": [0.7, 0.0, 0.714, 0.0],
    "noise": [0.05, 0.0, 0.1, 1.0],
}
CORPUS = ["dup a", "dup b", "dup c", "bridge", "noise"]
DUPS = {"dup a", "dup b", "dup c"}

#: Methods and parameters that must return a duplicate and then the bridge (k=2).
DIVERSE = [
    ("mmr", {"lambda_mult": 0.5}),
    ("gmmr", {"lambda_mult": 0.5}),
    ("dartboard", {"sigma": 0.1}),
    ("vendi", {"s": 0.3}),
    ("dpp", {"diversity": 0.5}),
    ("msd", {"diversity": 0.5}),
    ("ssd", {"diversity": 0.5}),
    ("gist", {"lam": 1.0}),
]


class TableEmbeddings(Embeddings):
    """Embeddings looked up in a table; records every call (sync and async separately)."""

    def __init__(self, table: dict[str, list[float]] | None = None, query_dim: int | None = None):
        self.table = dict(VECTORS if table is None else table)
        self.query_dim = query_dim
        self.calls: list[tuple[str, list[str]]] = []

    def _vec(self, text: str) -> list[float]:
        return list(self.table[text])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("embed_documents", list(texts)))
        return [self._vec(t) for t in texts]

    def _query_vec(self, text: str) -> list[float]:
        vec = self._vec(text)
        return vec if self.query_dim is None else (vec + [0.5] * self.query_dim)[: self.query_dim]

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(("embed_query", [text]))
        return self._query_vec(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("aembed_documents", list(texts)))
        return [self._vec(t) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        self.calls.append(("aembed_query", [text]))
        return self._query_vec(text)

    def called(self, name: str) -> list[list[str]]:
        return [texts for kind, texts in self.calls if kind == name]


