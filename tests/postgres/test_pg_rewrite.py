"""The search statement's rewrite to ``vector_send`` (``diverse_core.pgvector_sql._rewrite``): the
same SQL as selecting ``vector_send(column)`` by hand, with the replacement column built once per
vector column and kept in a bounded cache (statement objects only: no server)."""

from __future__ import annotations

from typing import Any

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
pytest.importorskip("pgvector")
from diverse_core import pgvector_sql  # noqa: E402
from pgvector.sqlalchemy import Vector  # noqa: E402
from sqlalchemy import Column, Integer, MetaData, String, Table, func, select, text, type_coerce  # noqa: E402
from sqlalchemy.dialects import postgresql  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, mapped_column  # noqa: E402


class _Base(DeclarativeBase):
    pass


class _Row(_Base):
    """What PGVectorStore's table class looks like (an ORM class with a vector column)."""

    __tablename__ = "data_rows"
    id = mapped_column(Integer, primary_key=True)
    text = mapped_column(String)
    embedding = mapped_column(Vector(3))


def _search(query: list[float], limit: int) -> Any:
    """A column-only search, built the way the store builds its vector-keeping query."""
    return select(
        _Row.id, _Row.text, _Row.embedding, _Row.embedding.cosine_distance(query).label("distance")
    ).order_by(text("distance asc")).limit(limit)


def _sql(stmt: Any) -> str:
    return str(stmt.compile(dialect=postgresql.psycopg2.dialect()))


def test_rewrite_selects_vector_send_and_keeps_the_rest() -> None:
    by_hand = select(
        _Row.id, _Row.text,
        type_coerce(func.vector_send(_Row.embedding), pgvector_sql._sent_vector()).label("embedding"),
        _Row.embedding.cosine_distance([1.0, 0.0, 0.0]).label("distance"),
    ).order_by(text("distance asc")).limit(5)
    got = pgvector_sql._rewrite(_search([1.0, 0.0, 0.0], 5))
    assert _sql(got) == _sql(by_hand)
    assert "vector_send(data_rows.embedding) AS embedding" in _sql(got)
    assert got._generate_cache_key() == by_hand._generate_cache_key()


def test_replacement_is_built_once_per_column() -> None:
    first = pgvector_sql._rewrite(_search([1.0, 0.0, 0.0], 5))
    second = pgvector_sql._rewrite(_search([0.0, 1.0, 0.0], 7))
    assert first._raw_columns[2] is second._raw_columns[2]  # one expression, shared
    assert first._raw_columns[3] is not second._raw_columns[3]  # each query's own distance
    params = [s.compile(dialect=postgresql.psycopg2.dialect()).params for s in (first, second)]
    assert [sorted(p.values(), key=str) for p in params] == [[5, [1.0, 0.0, 0.0]], [7, [0.0, 1.0, 0.0]]]


def test_cache_is_bounded() -> None:
    bound = pgvector_sql._sent_column.cache_info().maxsize
    for i in range(bound + 10):
        table = Table(f"t{i}", MetaData(), Column("id", Integer), Column("v", Vector(2)))
        assert pgvector_sql._rewrite(select(table.c.id, table.c.v)) is not None
        assert pgvector_sql._sent_column.cache_info().currsize <= bound


def test_statements_it_leaves_alone() -> None:
    assert pgvector_sql._rewrite(select(_Row)) is None  # an ORM entity, loaded whole
    assert pgvector_sql._rewrite(select(_Row.id, _Row.text)) is None  # no vector column
    assert pgvector_sql._rewrite(text("SELECT 1")) is None
    two = Table("two", MetaData(), Column("a", Vector(2)), Column("b", Vector(2)))
    assert pgvector_sql._rewrite(select(two.c.a, two.c.b)) is None  # which one? leave it
