"""``refusals_raised``: the one place a server's refusal of a structured-output method becomes
:class:`StructuredOutputUnsupported` (issue 36); any other error passes unchanged."""

from __future__ import annotations

import pytest
from diverse_core.llm.structured import StructuredOutputUnsupported, refusals_raised


class HTTPError(Exception):
    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


def test_a_refusal_becomes_the_typed_error_naming_the_method() -> None:
    cause = HTTPError(400, "response_format json_schema is not supported")
    with pytest.raises(StructuredOutputUnsupported) as info, refusals_raised("json_schema"):
        raise cause
    assert info.value.method == "json_schema" and info.value.__cause__ is cause
    assert "HTTP 400" in str(info.value)


@pytest.mark.parametrize("error", [HTTPError(500, "worker crashed"), HTTPError(429, "tools not supported"),
                                   TimeoutError("slow"), ValueError("bad")])
def test_other_errors_pass_unchanged(error: Exception) -> None:
    with pytest.raises(type(error)) as info, refusals_raised("tool_calling"):
        raise error
    assert info.value is error


async def test_it_wraps_an_awaited_call_too() -> None:
    async def call() -> str:
        raise HTTPError(422, "grammar not supported")

    with pytest.raises(StructuredOutputUnsupported), refusals_raised("json_object"):
        await call()
    with refusals_raised("json_object"):
        assert await _ok() == "fine"


async def _ok() -> str:
    return "fine"
