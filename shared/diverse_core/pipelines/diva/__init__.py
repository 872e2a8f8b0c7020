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

from ..._lazy import deprecated_aliases
from .parsing import (
    AmbiguityParse,
    InterpretationParse,
    QAParse,
    Usefulness,
    VerdictSummary,
    aggregate_verdicts,
    parse_ambiguity,
    parse_interpretations,
    parse_long_answer,
    parse_qa_pairs,
    parse_verdict,
)
from .pipeline import DIVA, SEARCH_MODES, VERIFIER_ERROR_MODES
from .prompts import DEFAULT_MAX_INTERPRETATIONS, DivaPrompts
from .quality import (
    DEFAULT_MATCH_THRESHOLD,
    DEFAULT_PLAIN_MATCH_THRESHOLD,
    InterpretationCoverage,
    interpretation_coverage,
)
from .result import ROUTES, DIVAResult
from .retrieval import (
    DEFAULT_K,
    DEFAULT_PER_INTERPRETATION_K,
    PRUNE_MODES,
    DivaRetrieval,
    diversify_hits,
    diversify_pool,
    merge_hit_ids,
)

__all__ = [
    "DIVA",
    "DIVAResult",
    "ROUTES",
    "SEARCH_MODES",
    "VERIFIER_ERROR_MODES",
    "DEFAULT_K",
    "DEFAULT_PER_INTERPRETATION_K",
    "DEFAULT_MAX_INTERPRETATIONS",
    "DEFAULT_MATCH_THRESHOLD",
    "DEFAULT_PLAIN_MATCH_THRESHOLD",
    "PRUNE_MODES",
    "DivaRetrieval",
    "diversify_pool",
    "diversify_hits",
    "merge_hit_ids",
    "DivaPrompts",
    "Usefulness",
    "InterpretationParse",
    "AmbiguityParse",
    "VerdictSummary",
    "QAParse",
    "parse_interpretations",
    "parse_ambiguity",
    "parse_verdict",
    "aggregate_verdicts",
    "parse_qa_pairs",
    "parse_long_answer",
    "InterpretationCoverage",
    "interpretation_coverage",
]

#: Old name kept as a deprecated alias (each access warns): ``DivaResult`` -> ``DIVAResult``.
__getattr__ = deprecated_aliases(__name__, globals(), {"DivaResult": "DIVAResult"})
