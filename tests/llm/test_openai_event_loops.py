"""OpenAILLM's async client across event loops: every synchronous ``pipeline.run()`` runs its own
loop, and a kept-alive connection opened in one loop failed in the next ("Event loop is closed",
then ``APIConnectionError``; seen in a SmolLM2 benchmark run against llama-cpp-python's server).
A keep-alive (HTTP/1.1) stdlib server on 127.0.0.1 reproduces it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from diverse_core.llm import OpenAILLM
from http_fakes import REPLY, send_json


class _KeepAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections stay open between requests

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        send_json(self, 200, REPLY)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def base_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_one_backend_serves_one_event_loop_after_another(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)
    for _ in range(4):  # as four synchronous pipeline.run() calls would
        assert asyncio.run(llm.acomplete("hi")).text == "ok"


def test_each_loop_gets_its_own_client_and_a_given_one_is_kept(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)

    async def client() -> Any:
        return llm.async_client

    async def twice() -> bool:
        return llm.async_client is llm.async_client

    assert asyncio.run(twice())  # one client per loop, reused within it
    assert asyncio.run(client()) is not asyncio.run(client())
    given = object()
    assert asyncio.run(_get(OpenAILLM(model="m", async_client=given))) is given


async def _get(llm: OpenAILLM) -> Any:
    return llm.async_client


def test_many_loops_in_threads_at_once(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(3):
                assert asyncio.run(llm.acomplete("hi")).text == "ok"
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
