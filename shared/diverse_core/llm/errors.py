"""Errors raised by the LLM layer, and the rule that decides which failures are retried."""

from __future__ import annotations

import asyncio
import concurrent.futures

__all__ = ["LLMError", "LLMTimeoutError", "TransientLLMError", "is_transient"]


class LLMError(RuntimeError):
    """An LLM call failed (after any retries). ``__cause__`` holds the last backend error."""


class LLMTimeoutError(LLMError, TimeoutError):
    """An LLM call did not finish within its per-call timeout (after any retries)."""


class TransientLLMError(LLMError):
    """A failure worth retrying; backends may raise it to opt into retries explicitly."""


_TRANSIENT_STATUS = {408, 409, 425, 429}
_TRANSIENT_NAMES = {
    "RateLimitError",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "Timeout",
    "ReadTimeout",
    "ConnectTimeout",
    "ConnectError",
    "RemoteProtocolError",
}


def _status_code(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "http_status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` looks like a retryable failure: timeouts, connection errors,
    HTTP 408/409/425/429 and any 5xx (read from ``status_code``/``status``/``response``).

    Example:
        >>> is_transient(TimeoutError()), is_transient(ValueError("bad prompt"))
        (True, False)
    """
    if isinstance(exc, (TransientLLMError, TimeoutError, asyncio.TimeoutError,
                        concurrent.futures.TimeoutError, ConnectionError)):
        return True
    status = _status_code(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or 500 <= status < 600
    return type(exc).__name__ in _TRANSIENT_NAMES
