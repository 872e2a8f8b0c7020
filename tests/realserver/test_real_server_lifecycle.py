"""The real llama-cpp-python server under LlamaCppServer's lifecycle rules (issue 33 item 5):
a taken port is refused before anything starts, and a server whose parent is SIGKILLed ends
within seconds, its temporary log with it. The same rules on a stand-in server, without
llama-cpp-python: ``tests/llm/test_server_lifecycle.py``."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest
from llama_server import LlamaCppServer, PortInUseError
from realserver_checks import require_server

_spec = importlib.util.spec_from_file_location(
    "llm_server_checks", Path(__file__).resolve().parents[1] / "llm" / "server_checks.py")
assert _spec is not None and _spec.loader is not None
llm_server_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llm_server_checks)

pytestmark = pytest.mark.real_server

PARENT = """
import json, time
from llama_server import LlamaCppServer

server = LlamaCppServer(n_ctx=256, n_threads=1, startup_timeout=600.0).start()
print(json.dumps({"pid": server.process.pid, "port": server.port, "log": server.log_path}), flush=True)
time.sleep(900)
"""


def test_a_taken_port_is_refused_before_starting() -> None:
    require_server()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        server = LlamaCppServer(port=port, n_ctx=256)
        with pytest.raises(PortInUseError, match=f"port={port}"):
            server.start()
        assert server.process is None
        server.stop()


def test_the_real_server_dies_with_its_sigkilled_parent() -> None:
    require_server()
    llm_server_checks.assert_server_follows(llm_server_checks.run_parent_and_kill_it(PARENT))
