"""Vectors a vector store already holds, read by id in one batch (what ``known`` hands the cache).

Both faces read the same stores' clients; only how a framework names a candidate's id differs.
Nothing here imports a store's package: the clients are recognised by what they offer. Each
reader returns one vector or ``None`` per id, in order (``None`` for an id the store lacks).

Example:
    >>> class Index:  # a FAISS index's reconstruct_batch
    ...     def reconstruct_batch(self, positions):
    ...         return [[float(p), 1.0] for p in positions]
    >>> faiss_vectors(Index(), {0: "a", 1: "b"}, ["b", "x", None])
    [[1.0, 1.0], None, None]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["faiss_vectors", "qdrant_vectors"]

logger = logging.getLogger("diverse_core.embedding_cache")

#: id(a FAISS position -> id mapping) -> its reverse, checked on every read (a few kept).
_REVERSED: dict[int, dict[Any, Any]] = {}


def faiss_vectors(index: Any, positions: Mapping[Any, Any], ids: Sequence[Any]) -> list[Any]:
    """The vectors of ``ids`` in a FAISS ``index`` whose rows ``positions`` names (row -> id).

    An index that cannot reconstruct its rows (e.g. IVF without a direct map) gives ``None``
    for every id, with a warning.
    """
    reverse = _REVERSED.get(id(positions))
    if reverse is None or any(
        i is not None and ((p := reverse.get(i)) is None or positions.get(p) != i) for i in ids
    ):
        reverse = {v: k for k, v in positions.items()}
        if len(_REVERSED) >= 8:
            _REVERSED.clear()
        _REVERSED[id(positions)] = reverse
    rows = [reverse.get(i) if i is not None else None for i in ids]
    found = sorted({int(r) for r in rows if r is not None})
    if not found:
        return [None] * len(ids)
    try:
        vectors = index.reconstruct_batch(np.asarray(found, dtype=np.int64))
    except RuntimeError as exc:
        logger.warning(
            "FAISS index %s cannot reconstruct stored vectors (%s); candidates are embedded "
            "instead (call index.make_direct_map() to avoid it)", type(index).__name__, exc
        )
        return [None] * len(ids)
    by_row = dict(zip(found, vectors, strict=True))
    return [by_row[int(r)] if r is not None else None for r in rows]


def qdrant_vectors(client: Any, collection: str, ids: Sequence[Any], name: str = "") -> list[Any]:
    """The vectors of points ``ids`` of a Qdrant ``collection`` (the vector ``name`` of a point
    with named vectors, else its unnamed one)."""
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return [None] * len(ids)
    points = client.retrieve(collection_name=collection, ids=wanted, with_payload=False, with_vectors=True)
    by_id = {
        str(p.id): p.vector.get(name, p.vector.get("")) if isinstance(p.vector, dict) else p.vector
        for p in points
    }
    return [by_id.get(str(i)) if i is not None else None for i in ids]
