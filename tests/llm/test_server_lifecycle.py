"""LlamaCppServer's lifecycle (issue 33 item 5), with a stdlib stand-in for llama-cpp-python's
server (``fake_llama_server.py``, same arguments): it refuses a port another server holds,
counts only its own process as started, ends with its parent, and cleans up its log file.
The same checks against the real server: ``tests/realserver/test_real_server_lifecycle.py``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import llama_server as server_module
import pytest
from llama_server import LlamaCppServer, PortInUseError, ServerStartError, port_in_use
from server_checks import FAKE, assert_server_follows, gone, run_parent_and_kill_it


class FakeLlamaServer(LlamaCppServer):
    """LlamaCppServer running the stand-in script instead of ``llama_cpp.server``."""

    server_module = FAKE
    required_modules = ()


@pytest.fixture()
def model_file(tmp_path: Path) -> str:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return str(path)


@pytest.fixture()
def squatter() -> Iterator[ThreadingHTTPServer]:
    """Another HTTP server on 127.0.0.1 that lists the same model alias as ours."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            body = json.dumps({"data": [{"id": "smollm2-135m"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET  # noqa: N815 - stdlib name

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_start_refuses_a_port_another_server_answers_on(model_file: str, squatter: ThreadingHTTPServer) -> None:
    port = squatter.server_address[1]
    assert port_in_use("127.0.0.1", port)
    server = FakeLlamaServer(model_file, port=port, startup_timeout=30)
    with pytest.raises(PortInUseError) as info:
        server.start()
    assert info.value.port == port and f"port={port}" in str(info.value)
    assert server.process is None and not server.healthy()  # nothing started; the squatter is not ours
    server.stop()


def test_another_server_answering_does_not_count_as_started(
    model_file: str, squatter: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port was free at the check, then taken (a race): our process exits, the squatter
    answers with our alias; start() must report the exit, not success."""
    monkeypatch.setattr(server_module, "port_in_use", lambda host, port: False)
    monkeypatch.setenv("FAKE_LLAMA_SERVER", "exit")
    server = FakeLlamaServer(model_file, port=squatter.server_address[1], startup_timeout=30)
    with pytest.raises(ServerStartError, match="exited with code 1"):
        server.start()
    assert server.process is None


def test_a_started_server_is_healthy_owns_its_port_and_stops(model_file: str) -> None:
    with FakeLlamaServer(model_file, startup_timeout=30) as server:
        assert server.healthy() and server.owns_port()
        assert server.served_models() == ["smollm2-135m"]
        assert server.process is not None
        pid = server.process.pid
    assert gone(pid) and not port_in_use("127.0.0.1", server.port)
    assert not server.healthy()


def test_stop_removes_the_temporary_log_file(model_file: str) -> None:
    server = FakeLlamaServer(model_file, startup_timeout=30).start()
    log = Path(server.log_path)
    assert log.is_file() and "fake llama server" in log.read_text()
    server.stop()
    assert not log.exists()


def test_keep_log_keeps_it_and_a_named_log_is_kept_by_default(model_file: str, tmp_path: Path) -> None:
    kept = FakeLlamaServer(model_file, startup_timeout=30, keep_log=True).start()
    kept.stop()
    assert Path(kept.log_path).is_file()
    Path(kept.log_path).unlink()
    named = tmp_path / "server.log"
    FakeLlamaServer(model_file, startup_timeout=30, log_path=str(named)).start().stop()
    assert named.is_file()
    FakeLlamaServer(model_file, startup_timeout=30, log_path=str(named), keep_log=False).start().stop()
    assert not named.exists()


@pytest.mark.parametrize("bad", [{"port": 0}, {"port": 70000}, {"port": "8080"}, {"keep_log": "yes"}])
def test_bad_arguments_raise_a_typed_error_naming_them(model_file: str, bad: dict[str, Any]) -> None:
    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"{name}="):
        FakeLlamaServer(model_file, **bad)


PARENT = """
import json, sys, time
from llama_server import LlamaCppServer

class FakeLlamaServer(LlamaCppServer):
    server_module = sys.argv[1]
    required_modules = ()

server = FakeLlamaServer(sys.argv[2], startup_timeout=60, n_ctx=int(sys.argv[3])).start()
print(json.dumps({"pid": server.process.pid, "port": server.port, "log": server.log_path}), flush=True)
time.sleep(600)
"""


def test_the_server_dies_with_its_sigkilled_parent(model_file: str) -> None:
    info = run_parent_and_kill_it(PARENT, FAKE, model_file, "512")
    assert_server_follows(info)
