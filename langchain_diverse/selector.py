"""``DiverseSelector``: a ``Runnable`` that picks a diverse subset of documents already in hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diverse_core.errors import InvalidParameterError
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, Field, PrivateAttr

from .compressors import DiverseCompressor
from .embeddings import DEFAULT_CACHE_SIZE
from .selection import fold_diversity

__all__ = ["DiverseSelector"]


class DiverseSelector(RunnableSerializable[dict[str, Any], list[Document]]):
    """Selection alone, as an LCEL step: ``{"query": ..., "documents": [...]} -> k documents``.

    For pipelines that already have their candidates (a hybrid retriever, an ensemble,
    a reranker's output): the documents are embedded through the process-wide cache
    and ``k`` of them are chosen for relevance and diversity, returned as annotated
    copies (same metadata keys as :class:`~langchain_diverse.DiverseRetriever`).
    The input keys are configurable; sync, async and batch work as for any Runnable,
    and each call is traced as one run.

    Args:
        embeddings: embeds the query and the documents.
        k: documents to return (all of them, re-ordered, when fewer come in).
        method: any registered method (``diverse_core.available_methods()``, e.g. ``gmmr``,
            ``mmr``, ``learned``).
        method_params: the method's parameters.
        diversity: the shared knob in [0, 1] (a keyword kept in ``method_params``).
        query_key: input key holding the query text.
        documents_key: input key holding the candidate documents.
        cache_size: most texts kept in the model's process-wide embedding cache.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> selector = DiverseSelector(embeddings=DeterministicFakeEmbedding(size=16), k=2)
        >>> docs = [Document(page_content=t) for t in ["a", "b", "c"]]
        >>> len(selector.invoke({"query": "a", "documents": docs}))
        2
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    embeddings: Embeddings
    k: int = 4
    method: str = "gmmr"
    method_params: dict[str, Any] = Field(default_factory=dict)
    query_key: str = "query"
    documents_key: str = "documents"
    cache_size: int = DEFAULT_CACHE_SIZE

    _compressor: DiverseCompressor = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        fold_diversity(data)
        super().__init__(**data)
        self._compressor = DiverseCompressor(
            embeddings=self.embeddings, k=self.k, method=self.method,
            method_params=self.method_params, cache_size=self.cache_size,
        )

    def _unpack(self, value: Any) -> tuple[str, Sequence[Document]]:
        if not isinstance(value, Mapping):
            raise InvalidParameterError(
                f"DiverseSelector takes a dict with {self.query_key!r} and {self.documents_key!r}; "
                f"got {type(value).__name__}"
            )
        missing = [key for key in (self.query_key, self.documents_key) if key not in value]
        if missing:
            raise InvalidParameterError(
                f"DiverseSelector input lacks {missing}; got keys {sorted(map(str, value))}"
            )
        query, documents = value[self.query_key], value[self.documents_key]
        if not isinstance(query, str):
            raise InvalidParameterError(
                f"{self.query_key} must be the query text; got {type(query).__name__}"
            )
        if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
            raise InvalidParameterError(
                f"{self.documents_key} must be a list of Documents; got {type(documents).__name__}"
            )
        return query, documents

    def _select(self, value: dict[str, Any]) -> list[Document]:
        query, documents = self._unpack(value)
        return list(self._compressor.compress_documents(documents, query))

    async def _aselect(self, value: dict[str, Any]) -> list[Document]:
        query, documents = self._unpack(value)
        return list(await self._compressor.acompress_documents(documents, query))

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Select ``k`` of ``input[documents_key]`` for ``input[query_key]``."""
        return self._call_with_config(self._select, input, config, run_type="retriever")

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`invoke` (the model's async embedding calls are awaited)."""
        return await self._acall_with_config(self._aselect, input, config, run_type="retriever")
