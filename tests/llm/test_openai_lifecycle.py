"""One client lifecycle for OpenAILLM (issue 33, item 1): the clients it builds are closed when
their event loop ends or when it is closed, so a service calling ``pipeline.run()`` per request
keeps a flat number of descriptors and threads (it used to leak one connection per run:
``OSError: [Errno 24] Too many open files`` after ~120 runs under ``ulimit -n 128``), and asyncio
logs no "Task exception was never retrieved" for the library's own clients."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from diverse_core.llm import ManagedLLM, OpenAILLM
from diverse_core.pipelines.drrag.pipeline import DRRAG
from http_fakes import REPLY, send_json
from structured_fakes import source

HERE = Path(__file__).parent
#: Runs of the descriptor test; the issue's 2,000 with DIVERSE_RAG_LIFECYCLE_RUNS=2000.
RUNS = int(os.environ.get("DIVERSE_RAG_LIFECYCLE_RUNS", "400"))


class _KeepAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections stay open between requests

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        send_json(self, 200, REPLY)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def base_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_sync_runs_keep_descriptors_and_threads_flat_under_a_low_fd_limit(base_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-X", "dev", str(HERE / "lifecycle_probe.py"), base_url, str(RUNS)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"lifecycle probe, {RUNS} runs: {json.dumps(report)}")  # shown with pytest -s
    assert report["errors"] == {}, report
    samples = report["samples"]
    (_, fd0, th0, _), *rest = samples
    assert RUNS >= 100 and len(rest) >= 10
    # flat: never more than a few above the first run (a run's own connection may still be closing)
    assert max(fd for _, fd, _, _ in rest) <= fd0 + 4, samples
    assert max(th for _, _, th, _ in rest) <= th0 + 2, samples
    # finished loops and their clients are let go (each kept one held ~0.8 MiB)
    assert report["live_loop_clients"] == 0, report
    tenth = samples[1][3]  # after a tenth of the runs (allocator warm)
    assert samples[-2][3] <= tenth + 0.05 * RUNS, samples
    assert "never retrieved" not in proc.stderr and "Event loop is closed" not in proc.stderr, proc.stderr[-3000:]
    assert "ResourceWarning" not in proc.stderr, proc.stderr[-3000:]


def test_asyncio_run_closes_the_loops_client(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)
    seen: list[Any] = []

    async def call() -> str:
        seen.append(llm.async_client)
        return (await llm.acomplete("hi")).text

    assert asyncio.run(call()) == "ok"
    assert asyncio.run(call()) == "ok"
    assert seen[0] is not seen[1]
    assert all(c.is_closed() for c in seen)  # closed when their loops ended


def test_connections_are_reused_within_a_run(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)

    async def many() -> set[int]:
        clients = set()
        for _ in range(5):
            clients.add(id(llm.async_client))
            assert (await llm.acomplete("hi")).text == "ok"
        return clients

    assert len(asyncio.run(many())) == 1


def test_close_and_context_managers(base_url: str) -> None:
    with OpenAILLM(model="m", base_url=base_url) as llm:
        assert llm.complete("hi").text == "ok"
        sync = llm.client
    assert sync.is_closed()
    with pytest.raises(RuntimeError, match="is closed"):
        llm.complete("again")
    llm.close()  # idempotent

    async def inside() -> Any:
        async with OpenAILLM(model="m", base_url=base_url) as allm:
            assert (await allm.acomplete("hi")).text == "ok"
            client = allm.async_client
        assert client.is_closed()
        return allm

    closed = asyncio.run(inside())
    with pytest.raises(RuntimeError, match="is closed"):
        asyncio.run(closed.acomplete("x"))


def test_close_reaches_a_loop_running_in_another_thread(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        fut = asyncio.run_coroutine_threadsafe(llm.acomplete("hi"), loop)
        assert fut.result(timeout=10).text == "ok"
        client = asyncio.run_coroutine_threadsafe(_client(llm), loop).result(timeout=10)
        llm.close()
        assert client.is_closed()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def _client(llm: OpenAILLM) -> Any:
    return llm.async_client


def test_given_clients_are_the_callers_and_stay_open(base_url: str) -> None:
    openai = pytest.importorskip("openai")
    mine = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    llm = OpenAILLM(model="m", client=mine)
    assert llm.complete("hi").text == "ok"
    llm.close()
    assert not mine.is_closed()
    mine.close()


def test_no_never_retrieved_noise_from_managed_runs(base_url: str, caplog: pytest.LogCaptureFixture) -> None:
    llm = OpenAILLM(model="m", base_url=base_url, structured_methods=())
    pipe = DRRAG(ManagedLLM(llm, max_retries=0), k=2)
    with caplog.at_level(logging.DEBUG, logger="asyncio"):
        for _ in range(20):
            assert pipe.run("Where was the author of Dracula born?", source()).answer == "ok"
        gc.collect()
        asyncio.run(asyncio.sleep(0))  # a loop in which an unclosed client's __del__ would schedule aclose()
        gc.collect()
    assert "never retrieved" not in caplog.text and "Event loop is closed" not in caplog.text
    llm.close()


def test_sync_close_inside_a_running_loop_closes_that_loops_client(base_url: str) -> None:
    llm = OpenAILLM(model="m", base_url=base_url)

    async def go() -> Any:
        assert (await llm.acomplete("hi")).text == "ok"
        client = llm.async_client
        llm.close()  # cannot block the loop: the client closes in a task of this loop
        await asyncio.sleep(0.05)
        return client

    assert asyncio.run(go()).is_closed()
