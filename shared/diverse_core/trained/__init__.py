"""What the two trained selectors, ``adaptive`` and ``learned``, share; it imports neither of them.

:mod:`~diverse_core.trained.scale` puts a pool's cosines on a common scale (any embedder reads alike),
:mod:`~diverse_core.trained.candidates` describes each candidate before any pick,
:mod:`~diverse_core.trained.gold` holds the gold model (a logistic regression), the set labels and
the model-file reader, and :mod:`~diverse_core.trained.inputs` checks the inputs both read (the
question and texts, ``variant``, ``diversity``, ``model``) and builds their registry entry.

Example:
    >>> from diverse_core.trained import pick_variant
    >>> pick_variant(("embedding", "text"), has_text=True, variant="auto")
    'text'
"""

from __future__ import annotations

from .candidates import (
    EMBEDDING_CANDIDATE_FEATURES,
    TEXT_CANDIDATE_FEATURES,
    CandidateText,
    SharedNames,
    candidate_features,
    static_features,
)
from .gold import GoldModel, coverage_labels, fit_gold_model, read_model_file, sigmoid
from .inputs import VARIANTS, TrainedMethod, check_per_question, pick_variant, text_inputs
from .scale import PoolScale

__all__ = [
    "EMBEDDING_CANDIDATE_FEATURES",
    "TEXT_CANDIDATE_FEATURES",
    "VARIANTS",
    "CandidateText",
    "GoldModel",
    "PoolScale",
    "SharedNames",
    "TrainedMethod",
    "candidate_features",
    "check_per_question",
    "coverage_labels",
    "fit_gold_model",
    "pick_variant",
    "read_model_file",
    "sigmoid",
    "static_features",
    "text_inputs",
]
