"""A real OpenAI-compatible server for the ``real_server`` tests: llama-cpp-python's, serving the
packaged SmolLM2-135M GGUF on 127.0.0.1 (started once per session, stopped afterwards).

Without llama-cpp-python's server (``CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install ".[realserver]"``,
a portable build; ``make test`` does it) or the packaged model the
tests skip with the reason; ``DIVERSE_RAG_REQUIRE_REAL_SERVER=1`` (set by ``.ci/run``) turns that
skip into a failure, so CI cannot pass without running them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_server import LlamaCppServer
from realserver_checks import require_server


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaCppServer]:
    """The session's server (model alias ``smollm2-135m``)."""
    require_server()
    server = LlamaCppServer(n_ctx=2048, n_threads=2, startup_timeout=600.0)
    server.start()
    try:
        yield server
    finally:
        server.stop()
