"""The process-wide registry of embedding caches: one :class:`ModelCaches` per embedding model,
held weakly (a model that is garbage-collected takes its caches with it)."""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from .cache import EmbeddingCache

__all__ = ["STRONG_LIMIT", "ModelCaches", "cache_key", "clear_model_caches", "model_caches", "model_label"]


class ModelCaches:
    """The caches of one embedding model, one per kind of text (e.g. documents, queries).

    Args:
        label: names the model in cache namespaces and messages.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self._caches: dict[str, EmbeddingCache] = {}
        self._lock = threading.Lock()

    def cache(self, kind: str, maxsize: int) -> EmbeddingCache:
        """The cache of ``kind`` texts, created on first use; its bound grows to ``maxsize``."""
        with self._lock:
            found = self._caches.get(kind)
            if found is None:
                found = self._caches[kind] = EmbeddingCache(None, maxsize, f"{kind}|{self.label}")
        found.grow_to(maxsize)
        return found


#: Most entries of the LRU of declared keys and of models that cannot be weakly referenced.
STRONG_LIMIT = 32

_LOCK = threading.RLock()  # re-entrant: a weakref callback may fire while it is held
_BY_ID: dict[int, tuple[weakref.ref[Any], ModelCaches]] = {}
#: declared keys (and models held strongly) -> (the held model or None, its caches), in LRU order
_BY_KEY: OrderedDict[Hashable, tuple[object, ModelCaches]] = OrderedDict()


def cache_key(model: object) -> Hashable | None:
    """The value that lets equal models share caches, or ``None`` (identity only).

    A model class opts in by defining ``__diverse_cache_key__(self)``, returning a
    hashable value that determines every vector the model computes (e.g. the
    packaged MiniLM's model path). Equal ``repr`` or equal pydantic fields are never
    enough: weights, clients and private state do not show in them.
    """
    method = getattr(type(model), "__diverse_cache_key__", None)
    if method is None:
        return None
    key = method(model)
    return (type(model).__module__, type(model).__qualname__, key)


def model_label(model: object) -> str:
    """A label naming ``model`` in cache namespaces and messages: its class and its identity."""
    cls = type(model)
    return f"{cls.__module__}.{cls.__qualname__}@{id(model):x}"


def _forget(ident: int, ref: weakref.ref[Any]) -> None:
    with _LOCK:
        entry = _BY_ID.get(ident)
        if entry is not None and entry[0] is ref:
            del _BY_ID[ident]


def model_caches(model: object) -> ModelCaches:
    """The process-wide caches of ``model``.

    Keyed by :func:`cache_key` when the model declares one, otherwise by the model
    object itself: two model objects never share vectors unless their class says
    they compute the same ones. The registry holds models weakly (a model that is
    garbage-collected takes its caches with it); models that cannot be weakly
    referenced are kept in a small LRU (:data:`STRONG_LIMIT`).

    Example:
        >>> class Model:
        ...     pass
        >>> a, b = Model(), Model()
        >>> model_caches(a) is model_caches(a), model_caches(a) is model_caches(b)
        (True, False)
    """
    key = cache_key(model)
    held = False
    with _LOCK:
        if key is None:
            entry = _BY_ID.get(id(model))
            if entry is not None and entry[0]() is model:
                return entry[1]
            try:
                ref = weakref.ref(model, functools.partial(_forget, id(model)))
            except TypeError:  # not weakly referenceable: held (with its caches) in the LRU below
                key, held = ("held", id(model)), True
            else:
                caches = ModelCaches(model_label(model))
                _BY_ID[id(model)] = (ref, caches)
                return caches
        found = _BY_KEY.get(key)
        if found is None:
            found = _BY_KEY[key] = (model if held else None, ModelCaches(model_label(model) if held else repr(key)))
            while len(_BY_KEY) > STRONG_LIMIT:
                _BY_KEY.popitem(last=False)
        _BY_KEY.move_to_end(key)
        return found[1]


def clear_model_caches() -> None:
    """Forget every model's caches (objects already holding a cache keep it)."""
    with _LOCK:
        _BY_ID.clear()
        _BY_KEY.clear()
