"""LLM-free adaptive diversity: a learned choice of gMMR's ``lambda_mult`` per query.

Importing this package registers the core method ``"adaptive"``, so
``diverse_core.select("adaptive", query, candidates, k)`` (and every framework face
that takes a method name) runs gMMR over the λ grid and keeps the set the shipped
model prefers. ``select("adaptive", ..., question=q, texts=texts)`` uses the text-aware
variant (the faces and the harness pass both); ``sources=`` and ``names=`` are taken as ``learned`` takes them
(the shipped model reads neither). ``select(..., model="path.npz")`` uses a model you trained with
:meth:`AdaptiveSelector.fit`; :meth:`AdaptiveSelector.choose` also returns the chosen λ.

Example:
    >>> import numpy as np
    >>> import diverse_core as dc
    >>> rng = np.random.default_rng(0)
    >>> q, c = rng.normal(size=8), rng.normal(size=(30, 8))
    >>> own = dc.select("adaptive", q, c, k=3).details["lambda_mult"]  # the predicted λ*
    >>> dc.select("adaptive", q, c, k=3, diversity=0.5).details["lambda_mult"] == own
    True
"""

from __future__ import annotations

from typing import Any

from ..registry import DiversityMap, MethodSpec
from ..text.view import TextView, text_view
from ..trained.candidates import candidate_features
from ..trained.gold import GoldModel, coverage_labels, fit_gold_model
from ..trained.inputs import TrainedMethod
from .candidates import gold_set_features
from .features import FEATURE_NAMES, LEXICAL_SET_FEATURES, lexical_set_features, set_features
from .model import SetScorer, fit_set_scorer
from .selector import (
    DEFAULT_LAMBDAS,
    DEFAULT_MODEL,
    AdaptiveChoice,
    AdaptiveSelector,
    diversity_lambda,
    lambda_sets,
    load_selector,
)
from .training import QueryExample, fit_variants, query_example
from .variant import VARIANTS, SelectorVariant, variant_feature_names

__all__ = [
    "AdaptiveChoice",
    "AdaptiveSelector",
    "SelectorVariant",
    "GoldModel",
    "QueryExample",
    "TextView",
    "query_example",
    "fit_variants",
    "fit_gold_model",
    "candidate_features",
    "gold_set_features",
    "lexical_set_features",
    "text_view",
    "variant_feature_names",
    "LEXICAL_SET_FEATURES",
    "VARIANTS",
    "SetScorer",
    "fit_set_scorer",
    "set_features",
    "lambda_sets",
    "coverage_labels",
    "diversity_lambda",
    "load_selector",
    "FEATURE_NAMES",
    "DEFAULT_LAMBDAS",
    "DEFAULT_MODEL",
    "SPEC",
]


def _details(choice: AdaptiveChoice, diversity: float | None) -> dict[str, Any]:
    details: dict[str, Any] = {"lambda_mult": float(choice.lambda_mult), "variant": choice.variant}
    if diversity is not None:
        details["predicted_lambda"] = float(choice.predicted_lambda or choice.lambda_mult)
    return details


_METHOD = TrainedMethod(load_selector, AdaptiveSelector, (),
                        "None (the shipped model), a path to a saved model or an AdaptiveSelector", _details)

#: The ``adaptive`` selection method (registered by ``import diverse_core``).
SPEC = MethodSpec(
    name="adaptive", run=_METHOD.run,
    defaults={"model": None, "variant": "auto", "question": None, "texts": None, "sources": None, "names": None,
              "diversity": None},
    check=_METHOD.check, param="diversity", run_sweep=_METHOD.sweep, reads_text=True, reads_sources=True,
    diversity=DiversityMap(
        "diversity", float,
        "its own parameter: None = the predicted λ*; lambda_mult piecewise linear through "
        "1 (d = 0), λ* (d = 0.5) and the grid's lowest λ, 0.1 (d = 1)",
    ),
)
