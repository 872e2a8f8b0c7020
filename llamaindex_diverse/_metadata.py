"""Selection metadata written onto the nodes a diversity postprocessor returns."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import BaseModel
from llama_index.core.schema import BaseNode, NodeWithScore

_M = TypeVar("_M", bound=BaseModel)

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


_new = object.__new__
_set = object.__setattr__
_MISSING = object()


def _shallow_copy(model: _M, update: dict[str, Any]) -> _M:
    """``model.model_copy(update=update)`` without pydantic's generic copy machinery.

    Same result (a new instance of the same class, ``__dict__`` copied and updated,
    fields set extended, nothing validated) in about half the time; models with
    extra or private attributes go through ``model_copy`` itself.
    """
    if (
        getattr(model, "__pydantic_extra__", _MISSING) is not None
        or getattr(model, "__pydantic_private__", _MISSING) is not None
    ):
        return model.model_copy(update=update)
    new = _new(type(model))
    fields = model.__dict__.copy()
    fields.update(update)
    _set(new, "__dict__", fields)
    _set(new, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_private__", None)
    return new


def _node_with_score(node: BaseNode, score: float | None) -> NodeWithScore:
    """``NodeWithScore(node=node, score=score)`` for already validated values, not re-validated."""
    new = _new(NodeWithScore)
    _set(new, "__dict__", {"node": node, "score": score})
    _set(new, "__pydantic_fields_set__", {"node", "score"})
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_private__", None)
    return new


def _plus_selection_keys(excluded: list[str]) -> list[str]:
    """A new list: ``excluded`` followed by the selection keys it lacks."""
    if not excluded:
        return list(SELECTION_METADATA_KEYS)
    return [*excluded, *(k for k in SELECTION_METADATA_KEYS if k not in excluded)]


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
    metadata[SELECTION_PARAMS] = params.copy()  # one per node: safe to edit
    metadata[SELECTION_RANK] = rank
    metadata[SELECTION_SCORE] = score
    metadata[SELECTION_RELEVANCE] = relevance
    update: dict[str, Any] = {"metadata": metadata}
    if hide_from_models:
        update["excluded_embed_metadata_keys"] = _plus_selection_keys(node.excluded_embed_metadata_keys)
        update["excluded_llm_metadata_keys"] = _plus_selection_keys(node.excluded_llm_metadata_keys)
    return _node_with_score(_shallow_copy(node, update), item.score)
