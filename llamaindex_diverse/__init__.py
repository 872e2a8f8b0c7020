"""LlamaIndex faces of diverse-rag: diversity-aware node postprocessing and retrieval.

Requires the llamaindex extra: ``pip install -e ".[llamaindex]"`` in the repository.

Example:
    >>> from llamaindex_diverse import DiverseNodePostprocessor
    >>> pp = DiverseNodePostprocessor(top_n=5, method="gmmr", method_params={"lambda_mult": 0.6})
    >>> pp.method
    'gmmr'
"""

from __future__ import annotations

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'llamaindex_diverse needs llama-index-core: pip install -e ".[llamaindex]" (in the repository)'
    ) from exc

import logging as _logging

from diverse_core import __version__
from diverse_core._lazy import package_exports
from diverse_core.pipeline_names import pipeline_faces

from ._metadata import SELECTION_METADATA_KEYS
from .embeddings import MiniLMEmbedding
from .postprocessor import DiverseNodePostprocessor
from .retriever import DiverseRetriever

__all__ = [
    "DiverseNodePostprocessor",
    "DiverseRetriever",
    "MiniLMEmbedding",
    "SELECTION_METADATA_KEYS",
    "__version__",
]

# Library logger: warnings for fallbacks (re-embedding); no handlers of ours.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

# The LLM pipelines' faces are imported on first use (they pull in the pipelines' cores):
# ``from llamaindex_diverse import DFRAGRetriever`` works as before, and importing the package
# stays cheap. Every built-in pipeline's retriever and query engine is named from the core's one list.
_LAZY = {
    **dict.fromkeys(pipeline_faces("{cls}QueryEngine", "{cls}Retriever"), ".pipeline_engine"),
    "LlamaIndexLLM": ".llm",
    "PipelineQueryEngine": ".pipeline_engine",
    "PipelineRetriever": ".pipeline_engine",
    "LlamaIndexSource": ".sources",
}
__all__ += list(_LAZY)

__getattr__, __dir__ = package_exports(__name__, globals(), _LAZY, {})
