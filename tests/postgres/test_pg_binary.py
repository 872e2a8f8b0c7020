"""pgvector's binary form (``vector_send``), decoded in one numpy call, equals its text form
decoded value by value, on random vectors of 1 to 2000 dimensions (negative, tiny, large)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from diverse_core.pgvector_sql import decode_vector_send

pytestmark = pytest.mark.postgres

DIMS = (1, 2, 3, 7, 16, 100, 384, 768, 1024, 1536, 1999, 2000)


def _vectors(rng: np.random.Generator, d: int) -> np.ndarray:
    scales = np.array([1.0, 1e-30, 1e30, 1e-3, 3e37])[:, None]
    v = (rng.normal(size=(5, d)) * scales).astype(np.float32)
    v[0, 0] = -v[0, 0] if v[0, 0] > 0 else v[0, 0]  # a negative one for sure
    return v


def _text_decode(text: str) -> np.ndarray:
    return np.array([float(x) for x in text[1:-1].split(",")], dtype=np.float32)


def test_binary_decode_equals_text_decode(pg_socket_dir: str) -> None:
    import psycopg

    rng = np.random.default_rng(35)
    with psycopg.connect(host=pg_socket_dir, user="postgres", dbname="postgres") as conn:
        conn.execute("CREATE TEMP TABLE binvec (id serial, d int, v vector)")
        sent: dict[int, np.ndarray] = {}
        for d in DIMS:
            vecs = _vectors(rng, d)
            sent[d] = vecs
            for v in vecs:
                literal = "[" + ",".join(repr(float(x)) for x in v) + "]"
                conn.execute("INSERT INTO binvec (d, v) VALUES (%s, %s::vector)", (d, literal))
        for d in DIMS:
            rows: list[Any] = conn.execute(
                "SELECT v::text, vector_send(v) FROM binvec WHERE d = %s ORDER BY id", (d,)
            ).fetchall()
            text = np.stack([_text_decode(r[0]) for r in rows])
            binary = decode_vector_send([bytes(r[1]) for r in rows])
            assert binary.shape == (5, d)
            assert np.array_equal(binary.view(np.uint32), text.view(np.uint32)), d
            assert np.array_equal(binary, sent[d]), d
