"""Selection metadata written onto the nodes a diversity postprocessor returns."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import NodeWithScore

__all__ = [
    "SELECTION_METADATA_KEYS",
    "SELECTION_METHOD",
    "SELECTION_PARAMS",
    "SELECTION_RANK",
    "SELECTION_RELEVANCE",
    "SELECTION_SCORE",
    "json_friendly_params",
    "with_selection_metadata",
]

SELECTION_METHOD = "selection_method"
SELECTION_PARAMS = "selection_params"
SELECTION_RANK = "selection_rank"
SELECTION_SCORE = "selection_score"
SELECTION_RELEVANCE = "selection_relevance"

#: Every metadata key the postprocessor adds to a returned node.
SELECTION_METADATA_KEYS: tuple[str, ...] = (
    SELECTION_METHOD,
    SELECTION_PARAMS,
    SELECTION_RANK,
    SELECTION_SCORE,
    SELECTION_RELEVANCE,
)


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value):
        module = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        return f"{module}.{name}" if module else name
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def json_friendly_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of ``params`` that ``json.dumps`` accepts (callables become their qualified name)."""
    return {str(key): _json_value(value) for key, value in params.items()}


def with_selection_metadata(
    item: NodeWithScore,
    *,
    method: str,
    params: dict[str, Any],
    rank: int,
    score: float,
    relevance: float,
    hide_from_models: bool,
) -> NodeWithScore:
    """A copy of ``item`` whose node carries the selection metadata; ``item`` is untouched.

    The node is copied shallowly with fresh ``metadata`` and exclusion lists, so the
    caller's node objects (and the docstore's) never see the new keys. ``score`` of the
    returned :class:`NodeWithScore` stays the retrieval relevance of ``item``.
    """
    node = item.node
    metadata = dict(node.metadata)
    metadata[SELECTION_METHOD] = method
    metadata[SELECTION_PARAMS] = dict(params)
    metadata[SELECTION_RANK] = rank
    metadata[SELECTION_SCORE] = score
    metadata[SELECTION_RELEVANCE] = relevance
    update: dict[str, Any] = {"metadata": metadata}
    if hide_from_models:
        for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
            current = list(getattr(node, attr))
            update[attr] = current + [k for k in SELECTION_METADATA_KEYS if k not in current]
    # model_construct: both fields come from an already validated NodeWithScore.
    return NodeWithScore.model_construct(node=node.model_copy(update=update), score=item.score)
