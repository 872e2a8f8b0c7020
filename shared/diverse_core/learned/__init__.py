"""LLM-free learned set selection: pick the k documents one at a time with a trained step model.

Importing this package registers the core method ``"learned"``:
``diverse_core.select("learned", query, candidates, k, question=q, texts=texts)`` builds
the set greedily, each pick the candidate a trained model finds most likely to be gold
evidence that the picks do not cover yet (see :mod:`~diverse_core.learned.selector`).
``sources=[...]`` (one id per candidate: page, file or parent document) tells it which
candidates come from the same source, ``names=[...]`` their display names; without them the
``"title: "`` prefix of each text is read as both. ``model="paragraphs"`` uses the model trained on whole passages, ``model="path.npz"`` one you
trained with :meth:`LearnedSelector.fit`; without texts the embedding-only variant runs.

Example:
    >>> import numpy as np
    >>> import diverse_core as dc
    >>> rng = np.random.default_rng(0)
    >>> dc.select("learned", rng.normal(size=8), rng.normal(size=(30, 8)), k=3).indices.shape
    (3,)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..adaptive.selector import check_optional_diversity
from ..errors import InvalidParameterError
from ..registry import DiversityMap, MethodSpec
from ..validation import PreparedInputs
from .card import ModelCard, card_path
from .greedy import greedy_picks
from .selector import (
    DEFAULT_MODELS,
    FORMAT_VERSION,
    VARIANTS,
    LearnedChoice,
    LearnedSelector,
    load_learned,
)
from .state import (
    EMBEDDING_STATE_FEATURES,
    TEXT_STATE_FEATURES,
    PairView,
    QueryState,
    SetTracker,
    feature_names,
    pair_view,
)
from .training import (
    DEFAULT_TRAIN_CONFIG,
    CVResult,
    LearnedExample,
    StepModels,
    TrainConfig,
    cross_validate,
    fit_step_models,
    step_rows,
)

__all__ = [
    "LearnedSelector",
    "LearnedChoice",
    "ModelCard",
    "card_path",
    "LearnedExample",
    "StepModels",
    "TrainConfig",
    "CVResult",
    "DEFAULT_TRAIN_CONFIG",
    "QueryState",
    "SetTracker",
    "PairView",
    "pair_view",
    "feature_names",
    "greedy_picks",
    "fit_step_models",
    "cross_validate",
    "step_rows",
    "load_learned",
    "DEFAULT_MODELS",
    "FORMAT_VERSION",
    "VARIANTS",
    "EMBEDDING_STATE_FEATURES",
    "TEXT_STATE_FEATURES",
    "SPEC",
]


def _run(
    prep: PreparedInputs, *, model: Any = None, variant: str = "auto", question: str | None = None,
    texts: Any = None, sources: Any = None, names: Any = None, diversity: float | None = None, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64], dict[str, Any]]:
    choice = load_learned(model).choose_prepared(prep, question=question, texts=texts, variant=variant,
                                                 sources=sources, names=names, diversity=diversity)
    return choice.indices, choice.scores, {"variant": choice.variant}


def _sweep(prep: PreparedInputs, values: NDArray[np.float64], *, model: Any = None, variant: str = "auto",
           question: str | None = None, texts: Any = None, sources: Any = None, names: Any = None,
           **_: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    choices = load_learned(model).sweep_prepared(prep, [float(v) for v in values], question=question, texts=texts,
                                                 variant=variant, sources=sources, names=names)
    return np.stack([c.indices for c in choices]), np.stack([c.scores for c in choices])


def _check(params: dict[str, Any]) -> dict[str, Any]:
    model = params["model"]
    if model is not None and not isinstance(model, (str, Path, LearnedSelector)):
        raise InvalidParameterError(
            "model must be None (the shipped chunks model), 'chunks', 'paragraphs', a path to a saved model or a "
            f"LearnedSelector; got model={model!r}"
        )
    if isinstance(model, (str, Path)) and str(model) not in DEFAULT_MODELS and not Path(model).is_file():
        raise InvalidParameterError(f"model file not found: model={str(model)!r}")
    if params["variant"] not in ("auto", *VARIANTS):
        raise InvalidParameterError(f"variant must be 'auto', 'text' or 'embedding'; got variant={params['variant']!r}")
    return check_optional_diversity(params)


#: The ``learned`` selection method (registered by ``import diverse_core``).
SPEC = MethodSpec(
    name="learned", run=_run,
    defaults={"model": None, "variant": "auto", "question": None, "texts": None, "sources": None, "names": None,
              "diversity": None},
    check=_check, param="diversity", run_sweep=_sweep, reads_text=True, reads_sources=True,
    diversity=DiversityMap(
        "diversity", float,
        "its own parameter: None or 0.5 = the trained model; each pick's standardised step logit blended with "
        "relevance (d < 0.5) or novelty, −max cosine to the picks (d > 0.5), weight abs(2d − 1): "
        "0 = top-k, 1 = farthest-first",
    ),
)
