"""DF-RAG, kept importable from its first home: the pipeline now lives in
:mod:`diverse_core.pipelines.dfrag` beside the other LLM pipelines.

Example:
    >>> from diverse_core.dfrag import DFRAG, DEFAULT_LAMBDAS
    >>> DEFAULT_LAMBDAS[0], DEFAULT_LAMBDAS[-1]
    (0.1, 1.0)
"""

from __future__ import annotations

from ..pipelines.dfrag import *  # noqa: F403
from ..pipelines.dfrag import __all__  # noqa: F401
