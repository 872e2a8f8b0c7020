"""LangChain faces of diverse-rag: a diversity-aware retriever, a document compressor and embeddings.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from langchain_diverse import DiverseRetriever
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    >>> _ = store.add_texts(["alpha", "beta", "gamma", "delta"])
    >>> len(DiverseRetriever(vectorstore=store, k=2, fetch_k=4).invoke("alpha"))
    2
"""

from __future__ import annotations

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "langchain_diverse needs langchain-core; install the extra (in the repository): "
        'pip install -e ".[langchain]"'
    ) from exc

import logging as _logging

from diverse_core import __version__
from diverse_core._lazy import package_exports
from diverse_core.pipeline_names import pipeline_faces

from .compressors import DiverseCompressor
from .embeddings import (
    CachedEmbeddings,
    MiniLMEmbeddings,
    cached_embeddings,
    clear_embedding_caches,
)
from .errors import EmptyDocumentError
from .retrievers import DiverseRetriever, as_diverse_retriever
from .selection import (
    RELEVANCE_SCORE,
    SELECTION_METADATA_KEYS,
    SELECTION_METHOD,
    SELECTION_PARAMS,
    SELECTION_RANK,
    SELECTION_SCORE,
)
from .selector import DiverseSelector

# Library logger: warnings for fallbacks (re-embedding, ignored fetch_k); no handlers of ours.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

__all__ = [
    "DiverseRetriever",
    "as_diverse_retriever",
    "DiverseSelector",
    "DiverseCompressor",
    "CachedEmbeddings",
    "MiniLMEmbeddings",
    "cached_embeddings",
    "clear_embedding_caches",
    "EmptyDocumentError",
    "SELECTION_METADATA_KEYS",
    "RELEVANCE_SCORE",
    "SELECTION_SCORE",
    "SELECTION_RANK",
    "SELECTION_METHOD",
    "SELECTION_PARAMS",
    "__version__",
]

# The LLM pipelines' faces are imported on first use (they pull in the pipelines' cores):
# ``from langchain_diverse import DFRAGRetriever`` works as before, and importing the package stays
# cheap. Every built-in pipeline's retriever and chain factory is named from the core's one list.
_LAZY = {
    **dict.fromkeys(pipeline_faces("{cls}Retriever", "create_{name}_chain"), ".pipeline_retriever"),
    "LangChainLLM": ".llm",
    "PipelineRetriever": ".pipeline_retriever",
    "create_pipeline_chain": ".pipeline_retriever",
    "LangChainSource": ".sources",
}
__all__ += list(_LAZY)

#: Renamed public names: the old one still works, with a DeprecationWarning on each access.
_DEPRECATED = {"METADATA_KEYS": "SELECTION_METADATA_KEYS"}
__getattr__, __dir__ = package_exports(__name__, globals(), _LAZY, _DEPRECATED)
