"""LLM-free learned set selection: pick the k documents one at a time with a trained step model.

Importing this package registers the core method ``"learned"``:
``diverse_core.select("learned", query, candidates, k, question=q, texts=texts)`` builds
the set greedily, each pick the candidate a trained model finds most likely to be gold
evidence that the picks do not cover yet (see :mod:`~diverse_core.learned.selector`).
``sources=[...]`` (one id per candidate: page, file or parent document) tells it which
candidates come from the same source, ``names=[...]`` their display names; without them the
``"title: "`` prefix of each text is read as both. Without ``model=`` the shipped model that fits
what the call gives runs (:data:`DEFAULT_BY_FORM`: titles, source ids, both or neither; named in
``details["model"]``); ``model="paragraphs"`` uses the model trained on whole passages, ``model="path.npz"``
one you trained with :meth:`LearnedSelector.fit`; without texts the embedding-only variant runs.

Example:
    >>> import numpy as np
    >>> import diverse_core as dc
    >>> rng = np.random.default_rng(0)
    >>> texts = [f"Page {i % 4}: passage {i}" for i in range(30)]
    >>> sel = dc.select("learned", rng.normal(size=8), rng.normal(size=(30, 8)), k=3, question="Which page?",
    ...                 texts=texts, sources=[f"p{i % 4}" for i in range(30)])
    >>> len(sel.indices), sel.details
    (3, {'variant': 'text', 'model': 'chunks'})
"""

from __future__ import annotations

from ..registry import DiversityMap, MethodSpec
from ..trained.inputs import TrainedMethod
from .card import ModelCard, card_path
from .greedy import greedy_picks
from .pairview import PairView, pair_view
from .selector import (
    DEFAULT_BY_FORM,
    DEFAULT_MODELS,
    FORMAT_VERSION,
    VARIANTS,
    LearnedChoice,
    LearnedSelector,
    default_model,
    load_learned,
)
from .state import (
    EMBEDDING_STATE_FEATURES,
    TEXT_STATE,
    TEXT_STATE_FEATURES,
    PickedSet,
    QueryState,
    StateFeature,
    feature_names,
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
    "PickedSet",
    "StateFeature",
    "TEXT_STATE",
    "PairView",
    "pair_view",
    "feature_names",
    "greedy_picks",
    "fit_step_models",
    "cross_validate",
    "step_rows",
    "load_learned",
    "DEFAULT_BY_FORM",
    "DEFAULT_MODELS",
    "FORMAT_VERSION",
    "VARIANTS",
    "EMBEDDING_STATE_FEATURES",
    "TEXT_STATE_FEATURES",
    "SPEC",
]


_METHOD = TrainedMethod(
    load_learned, LearnedSelector, DEFAULT_MODELS,
    "None (the shipped model that fits the inputs), a shipped name, a path to a saved model or a LearnedSelector",
    lambda choice, _: {"variant": choice.variant}, default_model,
)

#: The ``learned`` selection method (registered by ``import diverse_core``).
SPEC = MethodSpec(
    name="learned", run=_METHOD.run,
    defaults={"model": None, "variant": "auto", "question": None, "texts": None, "sources": None, "names": None,
              "diversity": None},
    check=_METHOD.check, param="diversity", run_sweep=_METHOD.sweep, reads_text=True, reads_sources=True,
    diversity=DiversityMap(
        "diversity", float,
        "its own parameter: None or 0.5 = the trained model; each pick's standardised step logit blended with "
        "relevance (d < 0.5) or novelty, −max cosine to the picks (d > 0.5), weight abs(2d − 1): "
        "0 = top-k, 1 = farthest-first",
    ),
)
