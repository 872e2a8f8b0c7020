"""pgvector's binary vector form decoded in one numpy call, and pgvector's dimension
complaints turned into typed errors (``diverse_core.pgvector_sql``; no server needed)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError
from diverse_core.pgvector_sql import decode_vector_send, dimension_mismatch
from hypothesis import given, settings
from hypothesis import strategies as st


def _send(v: np.ndarray) -> bytes:
    """pgvector's ``vector_send``: int16 dim, int16 0, big-endian float4s."""
    return struct.pack(f">hh{len(v)}f", len(v), 0, *v.tolist())


@given(d=st.integers(1, 2000), n=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       exponent=st.integers(-45, 38), head=st.lists(st.floats(width=32, allow_nan=False,
                                                             allow_infinity=False), max_size=8))
@settings(max_examples=80, deadline=None)
def test_decode_is_exact(d: int, n: int, seed: int, exponent: int, head: list[float]) -> None:
    """Random vectors of 1..2000 dimensions at any float32 scale, plus arbitrary float32s."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", under="ignore"):
        vectors = (rng.normal(size=(n, d)) * 10.0 ** exponent).astype(np.float32)
    vectors[~np.isfinite(vectors)] = np.float32(-3.4e38)
    k = min(len(head), d)
    vectors[0, :k] = np.asarray(head[:k], dtype=np.float32)
    got = decode_vector_send([_send(v) for v in vectors])
    assert got.dtype == np.float32 and got.shape == vectors.shape
    assert np.array_equal(got.view(np.uint32), vectors.view(np.uint32))  # bit for bit (-0.0 too)


def test_decode_known_answer_and_extremes() -> None:
    v = np.array([1.0, -2.5, 1e-38, -3.4e38, 1.4e-45, -0.0], dtype=np.float32)
    raw = _send(v)
    assert raw[:4] == b"\x00\x06\x00\x00"
    assert np.array_equal(decode_vector_send([raw, raw]).view(np.uint32),
                          np.stack([v, v]).view(np.uint32))
    assert decode_vector_send([]).shape == (0, 0)


def test_decode_rejects_mixed_dimensions() -> None:
    a, b = _send(np.ones(3, np.float32)), _send(np.ones(4, np.float32))
    with pytest.raises(DimensionMismatchError, match="differ in dimension"):
        decode_vector_send([a, b])
    # same total length, different heads: 2 x (4 + 4*3) bytes, second head says 2
    c = struct.pack(">hh3f", 2, 0, 1.0, 2.0, 3.0)
    with pytest.raises(DimensionMismatchError, match="differ in dimension"):
        decode_vector_send([a, c])


def test_dimension_mismatch_messages() -> None:
    sqlalchemy_exc = pytest.importorskip("sqlalchemy.exc")
    StatementError = sqlalchemy_exc.StatementError  # noqa: N806

    client = StatementError("(builtins.ValueError) expected 16 dimensions, not 8", "SELECT", {},
                            ValueError("expected 16 dimensions, not 8"))
    typed = dimension_mismatch(client)
    assert isinstance(typed, DimensionMismatchError)
    assert "query vector has 8 dimensions" in str(typed) and "have 16" in str(typed)
    server = RuntimeError("wrapped")
    server.__cause__ = ValueError("different vector dimensions 384 and 768")
    typed = dimension_mismatch(server)
    assert typed is not None and "has 768 dimensions" in str(typed) and "have 384" in str(typed)
    assert dimension_mismatch(ValueError("something else")) is None
