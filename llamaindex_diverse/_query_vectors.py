"""Query embeddings without LlamaIndex's per-call instrumentation when nobody observes it.

``BaseEmbedding.get_query_embedding`` wraps the model's own ``_get_query_embedding`` in a span,
two instrumentation events and a callback event (pydantic models, the model's payload, random
ids: ~45 us and a few GIL releases per query). When no span or event handler listens to the
embedding dispatcher, the model's callback manager has no handler, and the model has neither an
embeddings cache nor a rate limiter (what the public method adds besides its events), the model's
own method gives the same vector, so it is called directly; otherwise the public method is.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.instrumentation import get_dispatcher

from ._observers import observed

__all__ = ["aembed_query", "embed_query"]

#: The dispatcher of ``BaseEmbedding``'s spans and events.
_EMBEDDINGS = (get_dispatcher("llama_index.core.base.embeddings.base"),)


def _defined_by(cls: type, name: str) -> type | None:
    """The class of ``cls``'s MRO that defines ``name`` (the span decorator's wrappers are new
    objects on every class attribute access, so the methods cannot be compared by identity)."""
    return next((c for c in cls.__mro__ if name in c.__dict__), None)


def _plain(model: BaseEmbedding) -> bool:
    """Whether ``model``'s public query method only adds what nobody observes (see the module)."""
    cls = type(model)
    return (
        _defined_by(cls, "get_query_embedding") is BaseEmbedding
        and _defined_by(cls, "aget_query_embedding") is BaseEmbedding
        and not getattr(model, "embeddings_cache", None)
        and getattr(model, "rate_limiter", None) is None
        and not observed(_EMBEDDINGS, model.callback_manager)
    )


def embed_query(model: BaseEmbedding, query: str) -> Any:
    """``model.get_query_embedding(query)``, without its events when nobody observes them.

    Example:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> len(embed_query(MockEmbedding(embed_dim=4), "q"))
        4
    """
    if _plain(model):
        return model._get_query_embedding(query)
    return model.get_query_embedding(query)


async def aembed_query(model: BaseEmbedding, query: str) -> Any:
    """Asynchronous :func:`embed_query` (``aget_query_embedding``)."""
    if _plain(model):
        return await model._aget_query_embedding(query)
    return await model.aget_query_embedding(query)
