"""A real server that dies mid-call gives a typed error within the timeout (no hang)."""

from __future__ import annotations

import threading
import time

import pytest
from diverse_core.llm import LLMError, ManagedLLM, OpenAILLM
from llama_server import LlamaCppServer
from realserver_checks import require_server

pytestmark = pytest.mark.real_server


def test_server_killed_mid_call_raises_a_typed_error_within_the_timeout() -> None:
    require_server()
    timeout = 30.0
    with LlamaCppServer(n_ctx=512, n_threads=1, startup_timeout=600.0) as server:
        backend = OpenAILLM(model=server.alias, base_url=server.base_url, max_tokens=400)
        assert backend.client is not None  # created (imported) outside the attempts' timeout
        llm = ManagedLLM(backend, timeout=timeout, max_retries=1, backoff_base=0.1)
        assert llm.complete("Say hi.", max_tokens=4).text is not None  # it was serving
        threading.Timer(0.5, server.kill).start()
        start = time.monotonic()
        with pytest.raises(LLMError) as info:
            llm.complete("Write a very long story about rivers, with many chapters.")
        elapsed = time.monotonic() - start
    assert elapsed < timeout, f"the call hung for {elapsed:.1f}s past the server's death"
    assert info.value.attempts == 2  # the retry found the server gone too
    assert "Connection" in str(info.value) or "connect" in str(info.value).lower()
