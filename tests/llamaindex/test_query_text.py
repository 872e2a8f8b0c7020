"""The query vector's text form for PGVectorStore (``llamaindex_diverse._query_text``): every
float32 component reads back as itself through C's ``strtof`` (what pgvector's parser uses)."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pgvector")
from pgvector.utils import Vector  # noqa: E402

from llamaindex_diverse._query_text import query_vector  # noqa: E402

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
_LIBC.strtof.restype = ctypes.c_float
_LIBC.strtof.argtypes = [ctypes.c_char_p, ctypes.c_void_p]


def _strtof(text: str) -> np.ndarray:
    """The components of a vector's text as the server parses them."""
    return np.array([_LIBC.strtof(p.encode(), None) for p in text[1:-1].split(",")], dtype=np.float32)


def _bits(values: np.ndarray) -> list[int]:
    return np.asarray(values, dtype=np.float32).view(np.uint32).tolist()


@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=64))
def test_every_float32_reads_back_as_itself(values: list[float]) -> None:
    text = query_vector(values).to_text()
    assert _bits(_strtof(text)) == _bits(np.asarray(values, dtype=np.float32))
    assert _bits(_strtof(Vector(values).to_text())) == _bits(_strtof(text))  # what pgvector's text gives


def test_known_text_and_extremes() -> None:
    assert query_vector([0.1, -2.5, 0.0]).to_text() == "[0.100000001,-2.5,0]"
    extremes = np.array([np.finfo(np.float32).max, np.finfo(np.float32).tiny, 1e-45, -0.0, 1 / 3],
                        dtype=np.float32)
    assert _bits(_strtof(query_vector(extremes.tolist()).to_text())) == _bits(extremes)
    assert len(query_vector([1 / 3] * 384).to_text()) < len(Vector([1 / 3] * 384).to_text())


def test_dimension_check_and_odd_input_stay_pgvectors() -> None:
    with pytest.raises(ValueError, match="expected 4 dimensions, not 3"):
        Vector._to_db(query_vector([1.0, 2.0, 3.0]), 4)
    assert query_vector(None) is None
    odd = [[1.0, 2.0]]  # not one-dimensional: handed over as given (the store reports it)
    assert query_vector(odd) is odd
