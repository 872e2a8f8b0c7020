"""One trained scorer of the selector: a gold model plus a set scorer, with or without the texts.

A saved selector holds two variants: ``"text"`` (used when the question and the
candidate texts are given; it reads which of the question's words each set
contains) and ``"embedding"`` (embeddings and relevance only). Both score every λ's
set with the same recipe: the set features of
:func:`~diverse_core.adaptive.features.set_features`, the lexical set features (text
variant only, also crossed with λ) and the set features of the candidates' gold
probabilities (:func:`~diverse_core.adaptive.candidates.gold_set_features`).

Example:
    >>> variant_feature_names("text")[-1], len(variant_feature_names("embedding"))
    ('p_any', 34)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..text.view import TextView
from ..trained.candidates import EMBEDDING_CANDIDATE_FEATURES, TEXT_CANDIDATE_FEATURES
from ..trained.gold import GoldModel
from .candidates import GOLD_SET_FEATURES, gold_set_features
from .features import FEATURE_NAMES, LEXICAL_SET_FEATURES, lexical_set_features
from .model import SetScorer

__all__ = ["VARIANTS", "SelectorVariant", "variant_feature_names", "candidate_feature_names", "variant_features"]

FloatArray = NDArray[np.float64]

#: The variants a selector file holds, the text-aware one first.
VARIANTS = ("text", "embedding")


def _check_name(name: str) -> None:
    if name not in VARIANTS:
        raise InvalidParameterError(f"variant must be one of {VARIANTS}; got variant={name!r}")


def candidate_feature_names(name: str) -> tuple[str, ...]:
    """The gold model's features of variant ``name``."""
    _check_name(name)
    return TEXT_CANDIDATE_FEATURES if name == "text" else EMBEDDING_CANDIDATE_FEATURES


def variant_feature_names(name: str) -> tuple[str, ...]:
    """The set scorer's features of variant ``name``."""
    _check_name(name)
    lexical = (*LEXICAL_SET_FEATURES, *(f"{f}*lambda" for f in LEXICAL_SET_FEATURES)) if name == "text" else ()
    return (*FEATURE_NAMES, *lexical, *GOLD_SET_FEATURES)


def variant_features(
    base: FloatArray,
    lambdas: FloatArray,
    sets: NDArray[np.int64],
    relevance: FloatArray,
    sim: FloatArray,
    probabilities: FloatArray,
    view: TextView | None,
) -> FloatArray:
    """The set scorer's rows (L, F): base set features, lexical ones (with ``view``), gold-probability ones."""
    parts = [base]
    if view is not None:
        lex = lexical_set_features(view, sets, relevance)
        parts += [lex, lex * lambdas[:, None]]
    parts.append(gold_set_features(probabilities, sim, sets))
    return np.column_stack(parts)


@dataclass(frozen=True)
class SelectorVariant:
    """A gold model and the set scorer trained on its probabilities.

    Attributes:
        name: ``"text"`` or ``"embedding"``.
        gold: the candidate-level :class:`~diverse_core.trained.gold.GoldModel`.
        scorer: the set-level :class:`~diverse_core.adaptive.model.SetScorer`.
    """

    name: str
    gold: GoldModel
    scorer: SetScorer

    def __post_init__(self) -> None:
        _check_name(self.name)
        if tuple(self.gold.feature_names) != candidate_feature_names(self.name) or tuple(
            self.scorer.feature_names
        ) != variant_feature_names(self.name):
            raise InvalidParameterError(
                f"the {self.name!r} model was trained on other features than this version computes; retrain it "
                "(diverse-rag train adaptive, or AdaptiveSelector.fit)"
            )

    @property
    def uses_text(self) -> bool:
        """Whether this variant needs the question and the candidate texts."""
        return self.name == "text"

    def to_arrays(self) -> dict[str, Any]:
        """Arrays to store in a selector file (keys prefixed with the variant name)."""
        meta = {"alpha": self.scorer.alpha, "info": self.scorer.info}
        return {
            **self.gold.to_arrays(f"{self.name}__gold_"),
            f"{self.name}__set_weights": self.scorer.weights,
            f"{self.name}__set_scale": self.scorer.scale,
            f"{self.name}__set_meta": np.array(json.dumps(meta)),
        }

    @classmethod
    def from_arrays(cls, data: Any, name: str) -> SelectorVariant:
        """Read what :meth:`to_arrays` stored."""
        meta = json.loads(str(data[f"{name}__set_meta"]))
        scorer = SetScorer(np.asarray(data[f"{name}__set_weights"], dtype=np.float64),
                           np.asarray(data[f"{name}__set_scale"], dtype=np.float64), float(meta["alpha"]),
                           variant_feature_names(name), dict(meta["info"]))
        return cls(name, GoldModel.from_arrays(data, f"{name}__gold_"), scorer)
