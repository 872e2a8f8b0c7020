"""Reading a row's node id from its stored JSON: the id written as the encoder writes it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("llama_index.core")
from llamaindex_diverse._pg_rows import _json_string  # noqa: E402


@given(st.text())
def test_json_string_is_json_dumps(text: str) -> None:
    assert _json_string(text) == json.dumps(text)


@pytest.mark.parametrize("text", ["", "p1", "0d4c6e7a-1b2c-4d5e-8f90-123456789abc", 'a"b', "a\\b", "tab\there",
                                  "\x7f", "é", "línea\n", "/slash/"])
def test_json_string_known(text: str) -> None:
    assert _json_string(text) == json.dumps(text)
