"""Errors raised by the LLM layer, the rule that decides which failures are retried, and the
server's ``Retry-After`` hint; HTTP clients' errors are recognised by their attributes and class
names, without importing any client."""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import math
import time
from typing import Any

__all__ = ["LLMError", "LLMTimeoutError", "TransientLLMError", "MalformedReplyError", "is_transient",
           "retry_after", "unreadable_reply"]


class LLMError(RuntimeError):
    """An LLM call failed (after any retries). ``__cause__`` holds the last backend error.

    Args:
        message: what happened.
        attempts: attempts made for the call (``None`` when raised outside ManagedLLM).
        timeout: the per-attempt timeout in force, in seconds (``None``: no limit).
        received: how many of those attempts reached the backend (the others timed out
            while queued behind hung calls); ``None`` outside ManagedLLM.

    Example:
        >>> err = LLMError("LLM call failed after 2 attempts", attempts=2, timeout=5.0)
        >>> err.attempts, err.timeout
        (2, 5.0)
    """

    def __init__(
        self,
        message: str = "",
        *,
        attempts: int | None = None,
        timeout: float | None = None,
        received: int | None = None,
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.timeout = timeout
        self.received = attempts if received is None else received


class LLMTimeoutError(LLMError, TimeoutError):
    """An LLM call did not finish within its timeout (after any retries)."""


class TransientLLMError(LLMError):
    """A failure worth retrying; backends may raise it to opt into retries explicitly."""


class MalformedReplyError(TransientLLMError):
    """The server answered (often HTTP 200) with a body that is no completion: cut short, not
    JSON, or JSON of another shape. Retried like a 5xx: a proxy or an overloaded server sends
    such replies now and then.

    Example:
        >>> is_transient(MalformedReplyError("the reply body is not JSON"))
        True
    """


_TRANSIENT_STATUS = {408, 409, 425, 429}
# Class names (anywhere in the MRO) of retryable errors of common clients.
_TRANSIENT_NAMES = {
    # openai / anthropic style
    "RateLimitError", "APITimeoutError", "APIConnectionError", "InternalServerError",
    "ServiceUnavailableError",
    # requests
    "ConnectionError", "Timeout", "ConnectTimeout", "ReadTimeout", "ChunkedEncodingError",
    # httpx
    "TimeoutException", "ConnectError", "ReadError", "WriteError", "WriteTimeout", "PoolTimeout",
    "NetworkError", "RemoteProtocolError",
    # aiohttp
    "ClientConnectionError", "ClientConnectorError", "ClientOSError", "ServerDisconnectedError",
    "ServerTimeoutError", "ServerConnectionError", "ClientPayloadError",
}
# A 200 whose body the client could not read (a JSON decoder's error, openai's strict check).
_UNREADABLE_NAMES = {"JSONDecodeError", "APIResponseValidationError"}
#: Packages that read HTTP replies: a decoder error raised inside one is about the reply's body.
_HTTP_CLIENTS = ("openai", "httpx", "httpcore", "requests", "aiohttp", "anthropic")
# Subclasses of the above that retrying cannot fix (TLS/certificate, malformed URL).
_PERMANENT_NAMES = {
    "SSLError", "ClientSSLError", "ClientConnectorSSLError", "ClientConnectorCertificateError",
    "InvalidURL", "InvalidSchema", "MissingSchema", "InvalidURLClientError",
    "UnsupportedProtocol", "LocalProtocolError",
}


def _as_status(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _status_code(exc: BaseException) -> int | None:
    """An HTTP status read from the error or its ``response`` (int or numeric string)."""
    for owner in (exc, getattr(exc, "response", None)):
        if owner is None:
            continue
        for attr in ("status_code", "status", "http_status", "code"):
            status = _as_status(getattr(owner, attr, None))
            if status is not None and 100 <= status < 600:
                return status
    return None


def _mro_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` looks like a retryable failure.

    Retryable: timeouts and connection errors (builtin, or of ``requests``, ``httpx``,
    ``aiohttp``, ``openai``, matched by class name along the MRO), HTTP 408/409/425/429 or any
    5xx (``status_code`` / ``status`` / ``http_status`` / ``code`` of the error or its
    ``response``), and a reply body that could not be read, whatever its status. TLS/certificate
    and malformed-URL errors are never retried.

    Example:
        >>> class RateLimited(Exception):
        ...     code = "429"
        >>> is_transient(RateLimited()), is_transient(TimeoutError()), is_transient(ValueError())
        (True, True, False)
    """
    names = _mro_names(exc)
    if names & _PERMANENT_NAMES:
        return False
    if isinstance(exc, (TransientLLMError, TimeoutError, asyncio.TimeoutError,
                        concurrent.futures.TimeoutError, ConnectionError)):
        return True
    if names & _UNREADABLE_NAMES:  # a body that could not be read, whatever its status said
        return True
    status = _status_code(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or 500 <= status < 600
    return bool(names & _TRANSIENT_NAMES)


def unreadable_reply(exc: BaseException) -> MalformedReplyError | None:
    """``exc`` as a :class:`MalformedReplyError` when an HTTP client package (``openai``,
    ``httpx``, ...) raised it decoding a reply body, else ``None`` (a framework failing to parse
    the *model's* text raises the same types, from its own code).

    Example:
        >>> unreadable_reply(ValueError("not a reply")) is None
        True
    """
    if isinstance(exc, MalformedReplyError):
        return exc
    if not _mro_names(exc) & _UNREADABLE_NAMES:
        return None
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module.split(".", 1)[0] in _HTTP_CLIENTS:
            err = MalformedReplyError(f"the server's reply is not a JSON completion: {type(exc).__name__}: {exc}")
            err.__cause__ = exc
            return err
        tb = tb.tb_next
    return None


def _header(headers: Any, name: str) -> object:
    """Header ``name`` (lower case) of any mapping-like headers, matched case-insensitively."""
    items = getattr(headers, "items", None)
    pairs = items() if callable(items) else ()
    return next((value for key, value in pairs if isinstance(key, str) and key.lower() == name), None)


def _seconds(value: object, now: float) -> float | None:
    """Seconds (>= 0) from a number, a numeric string, or an HTTP date; ``None`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(str(value).strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after(exc: BaseException, *, now: float | None = None) -> float | None:
    """The wait, in seconds, that the server asked for with ``exc``, or ``None``.

    Read from an attribute ``retry_after`` (seconds), else from the headers of its ``response``:
    ``retry-after-ms`` (OpenAI's) or ``retry-after`` (seconds or an HTTP date), in any case.

    Args:
        exc: the backend's error.
        now: the current POSIX time (for HTTP dates; defaults to ``time.time()``).

    Example:
        >>> class Busy(Exception):
        ...     retry_after = 3
        >>> retry_after(Busy()), retry_after(ValueError())
        (3.0, None)
    """
    now = time.time() if now is None else now
    direct = _seconds(getattr(exc, "retry_after", None), now)
    if direct is not None:
        return direct
    headers = getattr(getattr(exc, "response", None), "headers", None)
    millis = _seconds(_header(headers, "retry-after-ms"), now)
    if millis is not None:
        return millis / 1000.0
    return _seconds(_header(headers, "retry-after"), now)
