"""DIVA (diversify-verify-adapt; In et al., arXiv:2409.02361): the parts that need no pipeline contract.

* :mod:`.retrieval` - retrieval diversification: per-interpretation hits, union, pruning.
* :mod:`.prompts` - the six prompts (ambiguity, rewrite, verify, extract, answer, closed book).
* :mod:`.parsing` - interpretation list, yes/no verdicts, Useful/PartialUseful/Useless.
* :mod:`.quality` - how many gold interpretations a generated set covers.
* :class:`DIVA` - the pipeline end to end (:mod:`.pipeline`), :class:`DIVAResult` its result.

Example:
    >>> import numpy as np
    >>> from diverse_core.pipelines.diva import diversify_pool
    >>> diversify_pool(np.eye(4), np.eye(4)[:2], k=2, per_interpretation_k=1).indices.tolist()
    [0, 1]
"""

from __future__ import annotations

# Each module's public names are re-exported whole (its __all__ is the one list of them).
from . import parsing, pipeline, quality, result, retrieval
from .parsing import *  # noqa: F403
from .pipeline import *  # noqa: F403
from .prompts import DEFAULT_MAX_INTERPRETATIONS, DivaPrompts
from .quality import *  # noqa: F403
from .result import *  # noqa: F403
from .retrieval import *  # noqa: F403

__all__ = [
    *pipeline.__all__,
    *result.__all__,
    *retrieval.__all__,
    "DEFAULT_MAX_INTERPRETATIONS",
    "DivaPrompts",
    *parsing.__all__,
    *quality.__all__,
]
