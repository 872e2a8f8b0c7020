"""diverse_core: framework-neutral diversity-aware selection for retrieval-augmented generation.

The core picks ``k`` of ``n`` candidate embeddings for a query, trading relevance
against redundancy, with one of the registered methods (:func:`available_methods`):
``topk``, ``mmr``, ``gmmr``, ``dartboard``, ``vendi``, ``dpp``, ``msd``, ``cover``,
``ssd``, ``gist``, and the trained selectors ``adaptive`` (gMMR's λ per query) and
``learned`` (the set, pick by pick). It depends only on numpy and scipy.

The package exports what a newcomer needs: :func:`select` and :func:`sweep` with their results,
the error types to catch, the trained selectors and the LLM pipelines (imported on first use).
Everything else stays in its module: the set metrics in :mod:`diverse_core.metrics`, the method
contract and registry (``MethodSpec``, ``register_method``, ``get_method``) in
:mod:`diverse_core.registry`, the other error types in :mod:`diverse_core.errors`.

Example:
    >>> import numpy as np
    >>> import diverse_core as dc
    >>> rng = np.random.default_rng(0)
    >>> q, cands = rng.normal(size=16), rng.normal(size=(50, 16))
    >>> sel = dc.select("gmmr", q, cands, k=5, diversity=0.3)
    >>> len(sel)
    5
"""

from __future__ import annotations

import logging as _logging

from . import builtin_methods as _builtin_methods  # noqa: F401  (registers the twelve built-in methods)
from . import metrics
from ._lazy import package_exports as _package_exports
from ._version import __version__ as __version__
from .adaptive import AdaptiveSelector
from .api import select, sweep
from .errors import (
    ConflictingParametersError,
    DiverseRAGError,
    InvalidParameterError,
    UnknownMethodError,
)
from .learned import LearnedSelector
from .pipeline_names import BUILTIN_PIPELINES as _PIPELINES
from .registry import available_methods
from .result import Selection, Sweep

# The library logs (warnings for fallbacks it takes on its own) but never configures
# logging: applications attach handlers to "diverse_core" if they want the records.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

__all__ = [
    "select",
    "sweep",
    "Selection",
    "Sweep",
    "available_methods",
    "DiverseRAGError",
    "InvalidParameterError",
    "ConflictingParametersError",
    "UnknownMethodError",
    "AdaptiveSelector",
    "LearnedSelector",
]

# The pipelines pull in the LLM layer: imported on first use, named from the one pipeline list.
_LAZY = {
    cls: module.removeprefix(__name__) for module, _, cls in (path.partition(":") for path in _PIPELINES.values())
}
__all__ += list(_LAZY)

#: Names the package exported before the surface was trimmed -> the module that holds them now;
#: they still work, with a DeprecationWarning on each access.
_MOVED = {
    **dict.fromkeys(["QUERY", "PairScorer"], ".methods.dartboard"),
    **dict.fromkeys(["MethodSpec", "get_method", "register_method"], ".registry"),
    **dict.fromkeys(
        ["EmptyCandidatesError", "DimensionMismatchError", "NonFiniteInputError", "NonNumericInputError", "ZeroVectorError"],
        ".errors",
    ),
    **dict.fromkeys(["upper_median", "argmax_upper_median", "binary_search_sample", "BinarySearchResult"], ".tuning"),
    **dict.fromkeys(metrics.__all__, ".metrics"),
}
__getattr__, __dir__ = _package_exports(__name__, globals(), _LAZY, {}, moved=_MOVED)
