"""Per-text embedding caches shared by every face, and a process-wide registry of them.

Every cache here is safe to share between threads and event loops: look-ups and stores hold a
lock, and a text that several callers miss at the same moment is embedded once (the first
caller computes it, the others wait for its vector: :class:`InFlight`).

:class:`EmbeddingCache` embeds each distinct text once, batches the misses of a call,
and may fill misses from vectors a store already holds (``known``) before calling the
model. :func:`model_caches` hands out one set of caches per embedding model for the
whole process (keyed by the model object's identity, or by an explicit
``__diverse_cache_key__()`` the model class declares); the registry holds models only
weakly, so a short-lived model and its caches are freed together.

The package, by job: :mod:`.inflight` (keys being computed right now, so concurrent
callers wait instead of computing them twice), :mod:`.vectors` (what a model or a store
hands back, checked), :mod:`.cache` (:class:`EmbeddingCache`) and :mod:`.per_model`
(:func:`model_caches`, the registry). Every name below stays importable from
``diverse_core.embedding_cache``.
"""

from __future__ import annotations

from .cache import EmbeddingCache
from .inflight import InFlight
from .inflight import Waiting as Waiting
from .inflight import await_for as await_for
from .inflight import wait_for as wait_for
from .per_model import STRONG_LIMIT as STRONG_LIMIT
from .per_model import ModelCaches, cache_key, clear_model_caches, model_caches
from .vectors import AsyncEmbedFn as AsyncEmbedFn
from .vectors import EmbedFn as EmbedFn
from .vectors import KnownAt

__all__ = [
    "EmbeddingCache",
    "InFlight",
    "KnownAt",
    "ModelCaches",
    "cache_key",
    "clear_model_caches",
    "model_caches",
]
