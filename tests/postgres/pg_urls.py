"""SQLAlchemy URLs of the test Postgres server for each face (imported by the tests as ``pg_urls``).

A module of its own, not ``conftest``: several test folders have a ``conftest.py``, and
``from conftest import ...`` picks whichever pytest imported last.
"""

from __future__ import annotations

__all__ = ["langchain_url", "llamaindex_urls"]


def langchain_url(folder: str) -> str:
    """SQLAlchemy URL for langchain_postgres (psycopg 3, sync and async)."""
    return f"postgresql+psycopg://postgres@/postgres?host={folder}"


def llamaindex_urls(folder: str) -> tuple[str, str]:
    """(sync, async) SQLAlchemy URLs for PGVectorStore (psycopg2 and asyncpg)."""
    return (f"postgresql+psycopg2://postgres@/postgres?host={folder}",
            f"postgresql+asyncpg://postgres@/postgres?host={folder}")
