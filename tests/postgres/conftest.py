"""A real Postgres server with pgvector for the tests in this folder (marker ``postgres``).

``pgserver`` (the ``postgres`` extra) ships the server binaries and the pgvector
extension as a wheel: the session fixture starts a server in a temporary folder, which
also holds its unix socket, creates the extension and yields the folder; at the end the
server is stopped and the folder removed. Without ``pgserver`` the tests are skipped,
except in CI (``CI`` set), where a missing server fails the run instead.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
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
