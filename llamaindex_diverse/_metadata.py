"""Selection metadata written onto the nodes a diversity postprocessor returns."""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import NodeWithScore

__all__ = ["SELECTION_METADATA_KEYS", "with_selection_metadata"]

#: Every metadata key the postprocessor adds to a returned node.
SELECTION_METADATA_KEYS: tuple[str, ...] = (
    "selection_method",
    "selection_params",
    "selection_rank",
    "selection_score",
    "selection_relevance",
)


def _plus_selection_keys(excluded: list[str]) -> list[str]:
    """A new list: ``excluded`` followed by the selection keys it lacks."""
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
    values = (method, params.copy(), rank, score, relevance)  # params: one copy per node, safe to edit
    metadata = {**node.metadata, **dict(zip(SELECTION_METADATA_KEYS, values, strict=True))}
    update: dict[str, Any] = {"metadata": metadata}
    if hide_from_models:
        update["excluded_embed_metadata_keys"] = _plus_selection_keys(node.excluded_embed_metadata_keys)
        update["excluded_llm_metadata_keys"] = _plus_selection_keys(node.excluded_llm_metadata_keys)
    return NodeWithScore(node=node.model_copy(update=update), score=item.score)
