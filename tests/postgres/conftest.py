"""A real Postgres server with pgvector for the tests in this folder (marker ``postgres``).

``pgserver`` (the ``postgres`` extra) ships the server binaries and the pgvector
extension as a wheel: the session fixture starts a server in a temporary folder, which
also holds its unix socket, creates the extension and yields the folder; at the end the
server is stopped and the folder removed. Without ``pgserver`` the tests are skipped,
except in CI (``CI`` set), where a missing server fails the run instead, unless pgserver has no
wheel for the platform (then they skip with that reason everywhere).
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

_NEEDED = ("pgserver", "langchain_postgres", "llama_index.vector_stores.postgres", "psycopg",
           "psycopg2", "asyncpg")


def _missing() -> list[str]:
    out = []
    for name in _NEEDED:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            out.append(name)
    return out


def pgserver_has_a_wheel() -> bool:
    """Whether ``pgserver`` ships a wheel for this interpreter (the marker in pyproject's ``dev`` extra)."""
    return sys.version_info < (3, 13) and (
        sys.platform == "darwin" or (sys.platform == "linux" and platform.machine() == "x86_64"))


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    """Every test starts with empty embedding caches (both faces share the core's)."""
    from diverse_core.embedding_cache import clear_model_caches

    clear_model_caches()
    yield
    clear_model_caches()


@pytest.fixture(scope="session")
def pg_socket_dir() -> Iterator[str]:
    """The folder of a running Postgres server's unix socket (pgvector created)."""
    missing = _missing()
    if missing == ["pgserver"] and not pgserver_has_a_wheel():
        pytest.skip(f"pgserver has no wheel for Python {platform.python_version()} on {sys.platform} "
                    f"{platform.machine()} (CPython 3.10-3.12 on x86-64 Linux and macOS only)")
    if missing:
        message = f"the postgres extra is not installed (missing {missing}): pip install -e '.[postgres]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    import pgserver

    folder = tempfile.mkdtemp(prefix="diverse-pg-")
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        # The socket lives in the data folder unless its path is too long for a socket.
        query = parse_qs(urlsplit(server.get_uri()).query)
        yield query.get("host", [folder])[0]
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    assert not os.path.exists(folder)
