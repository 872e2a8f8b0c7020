"""The model card of a learned selector: what it reads, what it was trained on, how well it did.

A card is written next to every model that ``diverse-rag train learned`` produces
(``<model>.card.json``, and a readable ``<model>.card.md``). It records the features and
their weights (per variant, standardised coefficients), the training data and its size,
the ``k`` and ``fetch_k`` the model was trained for, the training configuration, and the
out-of-fold recall@k of the model beside cosine top-k and fixed gMMR on the same questions
(every fold's model fitted without that fold).

Example:
    >>> from diverse_core.learned import LearnedSelector
    >>> card = ModelCard.from_selector(LearnedSelector.default())
    >>> card.k, card.fetch_k, "same_source" in card.features["text"]
    (5, 50, True)
    >>> ModelCard.from_dict(card.to_dict()) == card
    True
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import InvalidParameterError

if TYPE_CHECKING:
    from .selector import LearnedSelector

__all__ = ["ModelCard", "card_path"]

#: Layout version of card files.
CARD_FORMAT = 1


def card_path(model_path: str | Path) -> Path:
    """Where the card of the model at ``model_path`` lives (``x.npz`` -> ``x.card.json``)."""
    p = Path(model_path)
    return p.with_name(p.name[: -len(p.suffix)] + ".card.json" if p.suffix else p.name + ".card.json")


@dataclass(frozen=True)
class ModelCard:
    """What a learned-selector model is (see the module docstring).

    Attributes:
        features: per variant, the model's input columns in order.
        weights: per variant, feature -> standardised coefficient of the step model.
        k, fetch_k: the set size and candidate count it was trained for.
        config: the training configuration (rounds, l2, split_first, text).
        train_data: what it was trained on (source, questions, corpus units, ...).
        oof_recall: out-of-fold recall@k on the training questions by method
            (``learned``, ``cosine``, ``gmmr``), when it was measured.
        embedder: the embedding model the candidates were embedded with.
        version: the diverse-rag version that wrote it.
    """

    features: dict[str, list[str]]
    weights: dict[str, dict[str, float]]
    k: int
    fetch_k: int
    config: dict[str, Any]
    train_data: dict[str, Any] = field(default_factory=dict)
    oof_recall: dict[str, float] = field(default_factory=dict)
    embedder: str = "all-MiniLM-L6-v2"
    version: str = __version__

    @classmethod
    def from_selector(cls, selector: LearnedSelector, *, oof_recall: dict[str, float] | None = None,
                      train_data: dict[str, Any] | None = None) -> ModelCard:
        """The card of ``selector`` (its ``info`` gives k, fetch_k, embedder and training data)."""
        info = selector.info
        features = {name: list(m.step.feature_names) for name, m in selector.variants.items()}
        weights = {name: {f: round(float(w), 6) for f, w in zip(m.step.feature_names, m.step.weights.tolist(),
                                                               strict=True)}
                   for name, m in selector.variants.items()}
        data = dict(train_data) if train_data is not None else {
            k: v for k, v in info.items() if k in ("train_sets", "n_questions", "protocol", "titles", "source_ids",
                                           "source_id_sets")}
        return cls(features, weights, int(info.get("k", 5)), int(info.get("fetch_k", 50)), asdict(selector.config),
                   data, dict(oof_recall or info.get("oof_recall", {})), str(info.get("embedder", "all-MiniLM-L6-v2")))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (``{"format": 1, ...}``)."""
        return {"format": CARD_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCard:
        """Read what :meth:`to_dict` wrote.

        Raises:
            InvalidParameterError: not a card of this format.
        """
        if not isinstance(data, dict) or data.get("format") != CARD_FORMAT:
            got = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise InvalidParameterError(f"not a learned-selector model card of format {CARD_FORMAT}; got format={got!r}")
        fields = {k: v for k, v in data.items() if k != "format"}
        try:
            return cls(**fields)
        except TypeError as exc:
            raise InvalidParameterError(f"malformed model card: {exc}") from exc

    def save(self, path: str | Path) -> Path:
        """Write the card as JSON to ``path`` and its Markdown beside it (``.md``); returns the JSON path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        p.with_suffix(".md").write_text(self.markdown() + "\n", encoding="utf-8")
        return p

    @classmethod
    def load(cls, path: str | Path) -> ModelCard:
        """Read a card written by :meth:`save`.

        Raises:
            FileNotFoundError: no such file. InvalidParameterError: not a card.
        """
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InvalidParameterError(f"{p}: not a JSON model card ({exc.msg})") from exc
        return cls.from_dict(data)

    def markdown(self) -> str:
        """The card as a Markdown page."""
        lines = ["# Learned selector model card", "",
                 f"- trained for k={self.k}, fetch_k={self.fetch_k}; embedder {self.embedder}; diverse-rag "
                 f"{self.version}",
                 f"- configuration: {', '.join(f'{k}={v}' for k, v in self.config.items())}",
                 f"- training data: {json.dumps(self.train_data, sort_keys=True)}", ""]
        if self.oof_recall:
            lines += ["Out-of-fold recall@k on the training questions (each fold's model fitted without it):", "",
                      "| " + " | ".join(self.oof_recall) + " |", "|" + "---|" * len(self.oof_recall),
                      "| " + " | ".join(f"{100 * v:.1f}" for v in self.oof_recall.values()) + " |", ""]
        for name, w in self.weights.items():
            lines += [f"Step model weights, `{name}` variant (standardised features):", "", "| feature | weight |",
                      "|---|---|", *(f"| {f} | {v:+.3f} |" for f, v in w.items()), ""]
        return "\n".join(lines).rstrip()
