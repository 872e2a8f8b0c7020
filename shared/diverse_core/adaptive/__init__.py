"""LLM-free adaptive diversity: a learned choice of gMMR's ``lambda_mult`` per query.

Importing this package registers the core method ``"adaptive"``, so
``diverse_core.select("adaptive", query, candidates, k)`` (and every framework face
that takes a method name) runs gMMR over the λ grid and keeps the set the shipped
model prefers. ``select("adaptive", ..., question=q, texts=texts)`` uses the text-aware
variant (the faces and the harness pass both). ``select(..., model="path.npz")`` uses a model you trained with
:meth:`AdaptiveSelector.fit`; :meth:`AdaptiveSelector.choose` also returns the chosen λ.

Example:
    >>> import numpy as np
    >>> import diverse_core as dc
    >>> rng = np.random.default_rng(0)
    >>> dc.select("adaptive", rng.normal(size=8), rng.normal(size=(30, 8)), k=3).indices.shape
    (3,)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..registry import DiversityMap, MethodSpec
from ..validation import PreparedInputs
from .candidates import GoldModel, candidate_features, fit_gold_model, gold_set_features
from .features import FEATURE_NAMES, LEXICAL_SET_FEATURES, lexical_set_features, set_features
from .lexical import TextView, text_view
from .model import SetScorer, fit_set_scorer
from .selector import (
    DEFAULT_LAMBDAS,
    DEFAULT_MODEL,
    AdaptiveChoice,
    AdaptiveSelector,
    check_optional_diversity,
    coverage_labels,
    diversity_lambda,
    lambda_sets,
    load_selector,
    query_features,
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
    "query_features",
    "lambda_sets",
    "coverage_labels",
    "diversity_lambda",
    "load_selector",
    "FEATURE_NAMES",
    "DEFAULT_LAMBDAS",
    "DEFAULT_MODEL",
    "SPEC",
]


def _run(
    prep: PreparedInputs, *, model: Any = None, variant: str = "auto", question: str | None = None,
    texts: Any = None, diversity: float | None = None, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64], dict[str, Any]]:
    given = {} if diversity is None else {"diversity": diversity}  # the native call unchanged without it
    choice = load_selector(model).choose_prepared(prep, question=question, texts=texts, variant=variant, **given)
    details = {"lambda_mult": float(choice.lambda_mult), "variant": choice.variant}
    if diversity is not None:
        details["predicted_lambda"] = float(choice.predicted_lambda or choice.lambda_mult)
    return choice.indices, choice.scores, details


def _sweep(prep: PreparedInputs, values: NDArray[np.float64], *, model: Any = None, variant: str = "auto",
           question: str | None = None, texts: Any = None, **_: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    choices = load_selector(model).sweep_prepared(prep, [float(v) for v in values], question=question, texts=texts,
                                                  variant=variant)
    return np.stack([c.indices for c in choices]), np.stack([c.scores for c in choices])


def _check(params: dict[str, Any]) -> dict[str, Any]:
    model = params["model"]
    if model is not None and not isinstance(model, (str, Path, AdaptiveSelector)):
        raise InvalidParameterError(
            f"model must be None (the shipped model), a path to a saved model or an AdaptiveSelector; "
            f"got model={model!r}"
        )
    if isinstance(model, (str, Path)) and not Path(model).is_file():
        raise InvalidParameterError(f"model file not found: model={str(model)!r}")
    if params["variant"] not in ("auto", *VARIANTS):
        raise InvalidParameterError(f"variant must be 'auto', 'text' or 'embedding'; got variant={params['variant']!r}")
    return check_optional_diversity(params)


#: The ``adaptive`` selection method (registered by ``import diverse_core``).
SPEC = MethodSpec(
    name="adaptive", run=_run,
    defaults={"model": None, "variant": "auto", "question": None, "texts": None, "diversity": None},
    check=_check, param="diversity", run_sweep=_sweep, reads_text=True,
    diversity=DiversityMap(
        "diversity", float,
        "its own parameter: None = the predicted λ*; lambda_mult piecewise linear through "
        "1 (d = 0), λ* (d = 0.5) and the grid's lowest λ, 0.1 (d = 1)",
    ),
)
