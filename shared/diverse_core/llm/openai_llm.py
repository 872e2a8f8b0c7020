"""Adapter for the ``openai`` client: OpenAI or any OpenAI-compatible endpoint
(vLLM, llama.cpp server, Ollama, TGI, ...). Requires the ``llm`` extra."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from .base import Completion
from .errors import MalformedReplyError
from .loops import on_private_loop, running_loop
from .structured import (
    STRUCTURED_METHODS,
    Message,
    OutputSchema,
    StructuredOutputUnsupported,
    refusals_raised,
    schema_hint,
)

__all__ = ["OpenAILLM"]

_HINT = 'the openai client is missing; install the llm extra: pip install "diverse-rag[llm]"'


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError(_HINT) from exc
    return openai


class OpenAILLM:
    """Chat-completions (or legacy completions) through the ``openai`` client.

    Args:
        model: model name served by the endpoint; defaults to env ``DIVERSE_RAG_LLM_MODEL``.
        base_url: endpoint URL; defaults to env ``OPENAI_BASE_URL`` (the client's default).
        api_key: key; defaults to env ``OPENAI_API_KEY`` (``"EMPTY"`` for keyless local servers).
        chat: use ``chat.completions`` (default) or the legacy ``completions`` API.
        temperature: sampling temperature (0 = greedy, as in DF-RAG).
        max_tokens: cap on generated tokens per call.
        client / async_client: ready ``openai.OpenAI`` / ``openai.AsyncOpenAI`` instances
            (then ``base_url``/``api_key`` are ignored).
        structured_methods: the structured methods to try, strongest first (default: all
            three for chat, none for legacy completions). ``("json_object",)`` skips the one
            refused request a llama.cpp server costs; ``()`` keeps every role on the text path.
        strict: send ``json_schema`` and tool schemas in OpenAI's *strict* form, which rejects
            ``minLength``/``maxLength`` (they are removed; the core still validates them).
            ``None`` (default): strict for OpenAI's own API (no ``base_url``, or an
            ``api.openai.com`` one), not strict for other servers (vLLM, llama.cpp, Ollama), whose
            grammar engines enforce the whole schema, length bounds included.
        **request_kwargs: extra fields sent with every request.

    Structured role calls (:meth:`complete_structured`) send each method in its OpenAI form
    (``docs/guides/structured-output.md``); a refusal by the server raises
    :class:`~diverse_core.llm.structured.StructuredOutputUnsupported`: the negotiation steps down.

    The clients built here do not retry (``max_retries=0``): :class:`~diverse_core.llm.ManagedLLM`
    owns the retry policy. A given client that retries is used ``with_options(max_retries=0)``
    until a structured method has worked once, so a refused probe costs one request.

    **Connections.** The clients built here are closed here: the synchronous one on
    :meth:`close`; the asynchronous ones (one per event loop: pooled connections belong to their
    loop) when their loop finishes (as ``asyncio.run``, hence every synchronous
    ``pipeline.run()``, does) or on :meth:`close` / :meth:`aclose`, whichever comes first. ``with``
    / ``async with`` close it at the end of the block. Given clients are the caller's to close.

    Example:
        >>> with OpenAILLM(model="qwen2.5-7b", base_url="http://localhost:8000/v1",
        ...                api_key="EMPTY") as llm:  # doctest: +SKIP
        ...     llm.complete("Say hi").text
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        chat: bool = True,
        temperature: float = 0.0,
        max_tokens: int | None = 512,
        client: Any = None,
        async_client: Any = None,
        structured_methods: Sequence[str] | None = None,
        strict: bool | None = None,
        **request_kwargs: Any,
    ) -> None:
        model = model or os.environ.get("DIVERSE_RAG_LLM_MODEL")
        if not model:
            raise ValueError(
                "model is required: pass model=... or set DIVERSE_RAG_LLM_MODEL"
            )
        self.model = model
        self.chat = chat
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.request_kwargs = request_kwargs
        self._base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self._client = client
        self._async_client = async_client
        # each loop's async client, with the generator that closes it when the loop ends
        self._loop_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]] = (
            weakref.WeakKeyDictionary())
        self._clients_lock = threading.Lock()
        self._closed = False
        self._own_client = False  # whether self._client was built here (then close() closes it)
        self._proven: set[str] = set()  # structured methods that returned a reply once
        if structured_methods is None:
            structured_methods = STRUCTURED_METHODS if chat else ()
        if isinstance(structured_methods, str) or any(m not in STRUCTURED_METHODS for m in structured_methods):
            raise ValueError(f"structured_methods must be a sequence of {STRUCTURED_METHODS}; "
                             f"got structured_methods={structured_methods!r}")
        if structured_methods and not chat:
            raise ValueError("structured_methods need the chat API (chat=True)")
        self.structured_methods: tuple[str, ...] = tuple(structured_methods)
        if strict is not None and not isinstance(strict, bool):
            raise ValueError(f"strict must be True, False or None; got strict={strict!r}")
        self.strict: bool = _is_openai(self._base_url) if strict is None else strict

    @property
    def structured_key(self) -> tuple[str, str, str]:
        """Names the served model, so every wrapper of it shares what it refused."""
        return ("openai", self._base_url or "default", self.model)

    @property
    def client(self) -> Any:
        """The synchronous ``openai.OpenAI`` client (created on first use, closed by :meth:`close`)."""
        with self._clients_lock:
            if self._client is None:
                self._check_open()
                openai = _import_openai()
                self._client = openai.OpenAI(base_url=self._base_url, api_key=self._api_key, max_retries=0)
                self._own_client = True
            return self._client

    @property
    def async_client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client for the running event loop (one per loop, closed when
        it finishes: a kept-alive connection fails on another loop). Outside a running loop, a
        fresh client the caller closes; a client passed as ``async_client=`` as given."""
        if self._async_client is not None:
            return self._async_client
        loop = running_loop()
        if loop is None:
            self._check_open()
            return self._new_async_client()  # nothing here keeps it: the caller closes it
        found = self._loop_client(loop)
        return found if found is not None else self._register(loop, self._new_async_client())

    async def _aclient(self) -> Any:
        """:attr:`async_client`; a loop's first one (importing ``openai``: seconds on a cold start)
        is built in a worker thread, so the loop's other tasks and timeouts keep running, except
        on a synchronous run's own loop, where nobody else waits."""
        if self._async_client is not None:
            return self._async_client
        loop = asyncio.get_running_loop()
        found = self._loop_client(loop)
        if found is None:
            build = self._new_async_client
            found = self._register(loop, build() if on_private_loop() else await asyncio.to_thread(build))
        return found

    def _new_async_client(self) -> Any:
        openai = _import_openai()
        return openai.AsyncOpenAI(base_url=self._base_url, api_key=self._api_key, max_retries=0)

    def _loop_client(self, loop: asyncio.AbstractEventLoop) -> Any:
        """The client already registered for ``loop`` (``None``: none yet)."""
        with self._clients_lock:
            self._check_open()
            entry = self._loop_clients.get(loop)
            return None if entry is None else entry[0]

    def _register(self, loop: asyncio.AbstractEventLoop, client: Any) -> Any:
        """Keep ``client`` as ``loop``'s (closed when the loop ends) and return it; when another
        task of the loop registered one first, that one is returned and ``client`` dropped."""
        with self._clients_lock:
            self._check_open()
            entry = self._loop_clients.get(loop)
            if entry is not None:
                return entry[0]  # ``client`` opened no connection: nothing to close
            # a client holds its loop, so entries go when their loop ends, not by weak reference;
            # loops closed without shutting their generators down are dropped here
            for done in [lp for lp in self._loop_clients if lp.is_closed()]:
                del self._loop_clients[done]
            closer = _close_when_loop_ends(client, self._loop_clients, self._clients_lock)
            self._loop_clients[loop] = (client, closer)
        _start(closer)  # the loop now closes the client when it shuts down (shutdown_asyncgens)
        return client

    # ------------------------------------------------------------------ lifecycle
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    def close(self) -> None:
        """Close the clients this object built (idempotent; it cannot be used afterwards).

        An async client whose loop runs in another thread is closed on that loop (waiting up
        to 5 s); one whose loop is idle is closed by running that loop; one whose loop is
        already closed has nothing left to close. Inside a loop, its own client is closed in a
        task of that loop (:meth:`aclose` waits for it).
        """
        with self._clients_lock:
            self._closed = True
            sync = self._client if self._own_client else None
            if self._own_client:
                self._client, self._own_client = None, False
            loops = [(loop, entry[0]) for loop, entry in self._loop_clients.items()]
            self._loop_clients.clear()
        if sync is not None:
            sync.close()
        current = running_loop()
        for loop, client in loops:
            if loop.is_closed():
                continue
            if loop is current:  # cannot block here: close it in the background of this loop
                task = loop.create_task(_quiet_close(client))
                _CLOSING.add(task)  # the loop holds tasks weakly
                task.add_done_callback(_CLOSING.discard)
            elif loop.is_running():
                fut = asyncio.run_coroutine_threadsafe(_quiet_close(client), loop)
                try:
                    fut.result(timeout=5.0)
                except (concurrent.futures.TimeoutError, RuntimeError):
                    fut.cancel()
            else:
                loop.run_until_complete(_quiet_close(client))

    async def aclose(self) -> None:
        """:meth:`close` from inside an event loop: run in a worker thread, so this loop stays free
        to close its own client meanwhile."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> OpenAILLM:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> OpenAILLM:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def _request(self, prompt: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.request_kwargs)
        body.update(kwargs)
        if self.chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body

    # ------------------------------------------------------------------ structured calls
    def _structured_request(self, messages: Sequence[Message], schema: OutputSchema, method: str,
                            kwargs: dict[str, Any]) -> dict[str, Any]:
        if method not in self.structured_methods:
            raise StructuredOutputUnsupported(method, f"not in this OpenAILLM's structured_methods {self.structured_methods}")
        body = self._request("", kwargs)
        body.pop("prompt", None)
        body["messages"] = [m.as_dict() for m in messages]
        wire = _strict_schema(schema.as_dict()) if self.strict else schema.as_dict()
        if method == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": wire, "strict": self.strict}}
        elif method == "tool_calling":
            function: dict[str, Any] = {"name": schema.name, "parameters": wire, "strict": self.strict}
            if schema.description:
                function["description"] = schema.description
            body["tools"] = [{"type": "function", "function": function}]
            body["tool_choice"] = {"type": "function", "function": {"name": schema.name}}
        else:
            body["messages"] = [m.as_dict() for m in schema_hint(messages, schema)]
            body["response_format"] = {"type": "json_object", "schema": schema.as_dict()}
        return body

    def _structured_parse(self, resp: Any, method: str, start: float) -> Completion:
        message = _first_choice(resp).message
        text = message.content or ""
        if method == "tool_calling":
            calls = getattr(message, "tool_calls", None) or []
            if calls:
                text = calls[0].function.arguments or ""
            elif not text.strip().startswith("{"):
                raise StructuredOutputUnsupported(method, "the reply held no tool call")
        self._proven.add(method)
        return _completion(resp, text, start)

    def complete_structured(self, messages: Sequence[Message], schema: OutputSchema, *, method: str,
                            **kwargs: Any) -> Completion:
        """One chat request asking for ``schema`` with ``method`` (see the class docstring).

        Raises:
            StructuredOutputUnsupported: the server refused the method.
        """
        start = time.perf_counter()
        body = self._structured_request(messages, schema, method, kwargs)
        with refusals_raised(method), _readable():
            resp = self._probe(self.client, method).chat.completions.create(**body)
        return self._structured_parse(resp, method, start)

    async def acomplete_structured(self, messages: Sequence[Message], schema: OutputSchema, *, method: str,
                                   **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete_structured` with ``AsyncOpenAI``."""
        start = time.perf_counter()
        body = self._structured_request(messages, schema, method, kwargs)
        client = await self._aclient()
        with refusals_raised(method), _readable():
            resp = await self._probe(client, method).chat.completions.create(**body)
        return self._structured_parse(resp, method, start)

    def _probe(self, client: Any, method: str) -> Any:
        """``client`` without its own retries while ``method`` has not worked yet (a caller's
        client may retry; a refusal then costs one request, not one per client retry)."""
        retries = getattr(client, "max_retries", 0)
        if method in self._proven or not isinstance(retries, int) or retries <= 0:
            return client
        with_options = getattr(client, "with_options", None)
        return with_options(max_retries=0) if callable(with_options) else client

    def _parse(self, resp: Any, start: float) -> Completion:
        choice = _first_choice(resp)
        return _completion(resp, (choice.message.content if self.chat else choice.text) or "", start)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """One request; ``kwargs`` override request fields (e.g. ``max_tokens``)."""
        start = time.perf_counter()
        api = self.client.chat.completions if self.chat else self.client.completions
        with _readable():
            return self._parse(api.create(**self._request(prompt, kwargs)), start)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Asynchronous :meth:`complete` with ``AsyncOpenAI``."""
        start = time.perf_counter()
        client = await self._aclient()
        api = client.chat.completions if self.chat else client.completions
        with _readable():
            return self._parse(await api.create(**self._request(prompt, kwargs)), start)

    def __repr__(self) -> str:
        return f"OpenAILLM(model={self.model!r}, base_url={self._base_url!r})"


def _completion(resp: Any, text: str, start: float) -> Completion:
    usage = getattr(resp, "usage", None)
    return Completion(text, getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
                      time.perf_counter() - start)


@contextlib.contextmanager
def _readable() -> Iterator[None]:
    """A reply body the client could not decode (a 200 cut short or not JSON: the client raises
    the decoder's error, or hands the raw text on, see :func:`_first_choice`) is raised as
    :class:`MalformedReplyError`, which is retried."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise MalformedReplyError(f"the server's reply is not a JSON completion: {exc}") from exc


def _first_choice(resp: Any) -> Any:
    """The reply's first choice; a body that is no completion (the client hands on the raw text
    of a 200 whose JSON was cut short or broken; JSON without ``choices``, or a choice without
    its message) raises :class:`MalformedReplyError`, which is retried."""
    if isinstance(resp, (str, bytes)):
        shown = resp[:80] if isinstance(resp, str) else resp[:80].decode("utf-8", "replace")
        raise MalformedReplyError(f"the server's reply is not a JSON completion ({len(resp)} "
                                  f"characters, starting {shown!r})")
    choices = getattr(resp, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedReplyError(f"the server's reply has no choices: {type(resp).__name__} "
                                  f"with choices={choices!r:.80}")
    choice = choices[0]
    if getattr(choice, "message", None) is None and getattr(choice, "text", None) is None:
        raise MalformedReplyError("the server's reply has a choice with neither message nor text")
    return choice


_CLOSING: set[asyncio.Task[None]] = set()


async def _quiet_close(client: Any) -> None:
    try:
        await client.close()
    except Exception:  # noqa: BLE001 - closing a client whose connections already broke
        pass


async def _close_when_loop_ends(client: Any, registry: Any, lock: threading.Lock) -> AsyncIterator[None]:
    """Suspended at its ``yield`` until the loop shuts its async generators down
    (``asyncio.run`` does, before closing the loop): then it closes ``client`` and removes the
    loop's entry from ``registry`` (the client refers to its loop, so the entry would otherwise
    keep the finished loop, and the client, alive)."""
    try:
        yield
    finally:
        await _quiet_close(client)
        loop = asyncio.get_running_loop()
        with lock:
            entry = registry.get(loop)
            if entry is not None and entry[0] is client:
                del registry[loop]


def _start(closer: Any) -> None:
    """Run ``closer`` to its ``yield`` now (synchronously), which registers it with the running
    loop's async-generator hooks."""
    try:
        closer.__anext__().send(None)
    except StopIteration:
        pass


# Keywords OpenAI's strict mode does not accept (engines that do still get them in json_object).
_NOT_STRICT = ("maxLength", "minLength")


def _is_openai(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (``None``: the client's default, which is).

    Example:
        >>> _is_openai(None), _is_openai("https://api.openai.com/v1"), _is_openai("http://127.0.0.1:8000/v1")
        (True, True, False)
    """
    if base_url is None:
        return True
    host = urlsplit(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.com")


def _strict_schema(node: Any) -> Any:
    """A copy without the keywords strict structured outputs reject (the core validates them)."""
    if isinstance(node, dict):
        return {key: _strict_schema(value) for key, value in node.items() if key not in _NOT_STRICT}
    if isinstance(node, list):
        return [_strict_schema(value) for value in node]
    return node
