"""Does a trained method run on vectors of an embedder it was not checked on? Say so once per process.

``learned`` and ``adaptive`` read every cosine on the pool's common scale
(:class:`~diverse_core.trained.scale.PoolScale`), so another embedder's scale is no longer misread;
whether a model still helps on another embedder is a measured question. A model's ``info`` records
the embedder it was trained on (``embedder``) and the embedders it was validated on
(``validated_embedders``: the shipped ``learned`` default models, multilingual-e5-small, see
``benchmarks/RESULTS.md``; the shipped ``adaptive`` fell below cosine there, so it records none).
The faces call :func:`check_embedder` once per retriever: when the embeddings name a model that is
none of those, one warning goes to the ``diverse_core`` logger per (method, embedder) and process.
Embeddings that name no model (a test fake, a custom class) are left alone.

Example:
    >>> class Embeddings:
    ...     model_name = "BAAI/bge-small-en-v1.5"
    >>> embedder_name(Embeddings())
    'BAAI/bge-small-en-v1.5'
    >>> same_embedder("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
    True
    >>> same_embedder("intfloat/multilingual-e5-small", "multilingual-e5-small-q4")
    True
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any

from .adaptive import load_selector
from .errors import DiverseRAGError
from .learned import DEFAULT_BY_FORM, load_learned

__all__ = ["check_embedder", "embedder_name", "same_embedder", "trained_embedders"]

logger = logging.getLogger("diverse_core")

#: Attributes that name the model of common embeddings classes (LangChain, LlamaIndex, ours).
NAME_ATTRIBUTES = ("model_name", "model", "model_id")
#: Attributes of wrappers (caches) that hold the embeddings doing the work.
WRAPPED_ATTRIBUTES = ("underlying_embeddings", "embeddings")
#: Names that name nothing (LlamaIndex's ``BaseEmbedding.model_name`` default).
NO_NAMES = frozenset({"", "unknown"})

_WARNED: set[tuple[str, str]] = set()
_LOCK = threading.Lock()


def embedder_name(embeddings: object) -> str | None:
    """The model name ``embeddings`` declares (``model_name``, ``model`` or ``model_id``), or ``None``.

    A cache wrapper (LangChain's ``CacheBackedEmbeddings``, the faces' ``CachedEmbeddings``) is
    looked through once.
    """
    name = _declared(embeddings)
    for attribute in WRAPPED_ATTRIBUTES:
        inner = getattr(embeddings, attribute, None)
        if name is None and inner is not None and inner is not embeddings:
            name = _declared(inner)
    return name


def _declared(embeddings: object) -> str | None:
    for attribute in NAME_ATTRIBUTES:
        value = getattr(embeddings, attribute, None)
        if isinstance(value, str) and value.strip().lower() not in NO_NAMES:
            return value.strip()
    return None


def _key(name: str) -> str:
    base = name.rstrip("/").rsplit("/", 1)[-1].lower()
    return re.sub(r"[-_.](q\d(_\d)?|int8|fp16|gguf)$", "", base)  # a quantised build of the same model


def same_embedder(a: str, b: str) -> bool:
    """Whether two model names name one model (hub organisation, letter case and a quantisation suffix ignored)."""
    return _key(a) == _key(b)


def trained_embedders(method: str, params: Mapping[str, Any]) -> frozenset[str]:
    """The embedders the model(s) a ``method`` call can run were trained or validated on (empty: not a
    trained method).

    ``learned`` without ``model=`` can run any shipped model of :data:`DEFAULT_BY_FORM`; a model
    file that records no embedder, or cannot be read (the call itself will say why), counts as
    trained on nothing known: no warning.
    """
    model = params.get("model")
    try:
        if method == "learned":
            names = [model] if model is not None else sorted(set(DEFAULT_BY_FORM.values()))
            selectors: list[Any] = [load_learned(name) for name in names]
        elif method == "adaptive":
            selectors = [load_selector(model)]
        else:
            return frozenset()
    except (OSError, DiverseRAGError):
        return frozenset()
    return frozenset(str(name) for s in selectors
                     for name in (s.info.get("embedder"), *s.info.get("validated_embedders", ())) if name)


def check_embedder(method: str, params: Mapping[str, Any], embeddings: object) -> str | None:
    """Warn (once per process, method and embedder) when ``embeddings`` is not what ``method`` was trained on.

    Returns:
        The warning's text when this call logged it, else ``None``.
    """
    used = embedder_name(embeddings)
    if used is None:
        return None
    trained = trained_embedders(method, params)
    if not trained or any(same_embedder(used, name) for name in trained):
        return None
    with _LOCK:
        if (method, _key(used)) in _WARNED:
            return None
        _WARNED.add((method, _key(used)))
    message = (
        f"method={method!r} was trained and checked on vectors of {', '.join(sorted(trained))}, but this "
        f"retriever embeds with {used!r}, on which it was never measured: its picks may fall behind cosine "
        "top-k or gmmr's. Compare them on your questions (diverse-rag bench) or train a model on your "
        "embedder's vectors (docs/guides/learned-own-data.md)"
    )
    logger.warning(message)
    return message
