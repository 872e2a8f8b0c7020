"""diverse_core: framework-neutral diversity-aware selection for retrieval-augmented generation.

The core picks ``k`` of ``n`` candidate embeddings for a query, trading relevance
against redundancy, with one of the registered methods (:func:`available_methods`):
``topk``, ``mmr``, ``gmmr``, ``dartboard``, ``vendi``, ``dpp``, ``msd``, ``cover``,
``ssd``, ``gist``, and the trained selectors ``adaptive`` (gMMR's λ per query) and
``learned`` (the set, pick by pick). It depends only on numpy and scipy.

Example:
    >>> import numpy as np
    >>> import diverse_core as dc
    >>> rng = np.random.default_rng(0)
    >>> q, cands = rng.normal(size=16), rng.normal(size=(50, 16))
    >>> sel = dc.select("gmmr", q, cands, k=5, lambda_mult=0.7)
    >>> len(sel)
    5
"""

from __future__ import annotations

import logging as _logging

from . import methods as _methods  # noqa: F401  (registers all twelve built-in methods)
from . import metrics
from ._version import __version__
from .api import select, sweep
from .errors import (
    DimensionMismatchError,
    DiverseRAGError,
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    NonNumericInputError,
    UnknownMethodError,
    ZeroVectorError,
)
from .methods.dartboard import QUERY, PairScorer
from .metrics import *  # noqa: F403  (every name of metrics.__all__, listed there once)
from .registry import MethodSpec, available_methods, get_method, register_method
from .result import Selection, Sweep
from .tuning import BinarySearchResult, argmax_upper_median, binary_search_sample, upper_median

# The library logs (warnings for fallbacks it takes on its own) but never configures
# logging: applications attach handlers to "diverse_core" if they want the records.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

__all__ = [
    "select",
    "sweep",
    "Selection",
    "Sweep",
    "MethodSpec",
    "available_methods",
    "get_method",
    "register_method",
    "QUERY",
    "PairScorer",
    "DiverseRAGError",
    "InvalidParameterError",
    "EmptyCandidatesError",
    "DimensionMismatchError",
    "NonFiniteInputError",
    "NonNumericInputError",
    "ZeroVectorError",
    "UnknownMethodError",
    "upper_median",
    "argmax_upper_median",
    "binary_search_sample",
    "BinarySearchResult",
    "__version__",
]
__all__ += metrics.__all__
