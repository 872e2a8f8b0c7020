"""What the faces need from a pgvector search at the SQL level (SQLAlchemy, imported lazily).

Both faces search Postgres through the stores' own SQLAlchemy queries
(``langchain_postgres.PGVector``, LlamaIndex's ``PGVectorStore``). Inside
:func:`pgvector_search`, engine events (installed once, a no-op outside the block) do
three things to the search statement, and nothing to any other statement:

* **HNSW can return ``fetch_k`` rows.** An HNSW scan returns at most
  ``hnsw.ef_search`` rows (pgvector's default is 40). When ``fetch_k`` exceeds the
  connection's setting, the search's transaction first runs ``set_config('hnsw.ef_search',
  greatest(fetch_k, current), true)`` (transaction-local, like ``SET LOCAL``; never lowers
  it). The connection's own value is read once and remembered, so a connection already
  configured for ``fetch_k`` (``options=-c hnsw.ef_search=...``) costs no extra statement.
* **Vectors come back in binary.** A column-only ``SELECT`` that selects one pgvector
  column (LlamaIndex's vector-keeping query; any driver: psycopg2, asyncpg, psycopg 3)
  selects ``vector_send(column)`` instead; the rows' bytes are kept in row order on the
  search state (the store sees ``NULL``, what it reads for a row without a vector) and
  decoded with one numpy call by :func:`decode_vector_send`. A query that loads ORM
  entities whole (LangChain's ``PGVector``) cannot be rewritten: with psycopg 3 it is run
  with binary results and each ``vector`` decoded by ``np.frombuffer``.
* **A dimension mismatch is a** :class:`~diverse_core.errors.DimensionMismatchError`
  naming both sizes, not ``StatementError: expected 16 dimensions, not 8``.
* **A database that goes away is a** :class:`~diverse_core.errors.StoreUnavailableError`
  (the driver's ``OperationalError`` is its cause), and so it is for the faces' reads of
  stored vectors (:func:`store_errors`). SQLAlchemy drops the broken connections from its
  pool, so the next query once the server is back works.

Example:
    >>> import struct
    >>> raw = [struct.pack(">hh3f", 3, 0, 1.0, -2.5, 0.25)]
    >>> decode_vector_send(raw).tolist()
    [[1.0, -2.5, 0.25]]
"""

from __future__ import annotations

import contextvars
import functools
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import DimensionMismatchError, StoreError, StoreUnavailableError

__all__ = [
    "PgSearch", "decode_vector_send", "dimension_mismatch", "pgvector_search", "sql_vectors", "store_errors",
    "store_failure",
]

_EF_KEY = "diverse_rag.hnsw_ef_search"  # the connection's session-level ef_search, once read
_OID_KEY = "diverse_rag.vector_oid"  # the connection's vector type oid (psycopg 3)
_DISTANCE = re.compile(r"<=>|<->|<#>|<\+>")
_LIMIT = re.compile(r"\bLIMIT\b", re.IGNORECASE)
_EXPECTED = re.compile(r"expected (\d+) dimensions, not (\d+)")
_DIFFERENT = re.compile(r"different vector dimensions (\d+) and (\d+)")


@dataclass
class PgSearch:
    """The state of one search inside :func:`pgvector_search`.

    Attributes:
        fetch_k: rows the search asks for (``hnsw.ef_search`` is raised to it).
        binary: read vectors in binary.
        raw: ``vector_send`` bytes of a rewritten ``SELECT``'s rows, in row order.
        rewritten: whether a ``SELECT`` was rewritten to ``vector_send``.
        ef_raised: the ``ef_search`` value the search's transaction was raised to, if any.
        ef_statement: whether a statement was spent reading (and raising) ``ef_search``.
    """

    fetch_k: int | None
    binary: bool
    raw: list[bytes] = field(default_factory=list)
    rewritten: bool = False
    ef_raised: int | None = None
    ef_statement: bool = False

    def vectors(self, n_rows: int) -> NDArray[np.float32] | None:
        """The rewritten search's vectors (``n_rows`` by d), or ``None`` when they are not all there."""
        if not self.rewritten or len(self.raw) != n_rows or n_rows == 0:
            return None
        return decode_vector_send(self.raw)


_STATE: contextvars.ContextVar[PgSearch | None] = contextvars.ContextVar(
    "diverse_core_pgvector_search", default=None
)
_INSTALLED = False
_LOCK = threading.Lock()


def decode_vector_send(raw: Sequence[bytes]) -> NDArray[np.float32]:
    """Decode pgvector's binary form (``vector_send``) of several vectors in one numpy call.

    Each value is a big-endian ``int16`` dimension, an ``int16`` zero, then the
    ``float4`` components, big-endian.

    Raises:
        DimensionMismatchError: the values differ in dimension or are malformed.
    """
    if not raw:
        return np.empty((0, 0), dtype=np.float32)
    dim = int.from_bytes(raw[0][:2], "big")
    width = 4 + 4 * dim
    buf = b"".join(raw)
    if dim == 0 or len(buf) != width * len(raw):
        raise DimensionMismatchError(
            f"stored vectors differ in dimension (the first has {dim}); cannot stack them"
        )
    heads = np.frombuffer(buf, dtype=">u2").reshape(len(raw), 2 * (dim + 1))[:, 0]
    if np.any(heads != dim):
        raise DimensionMismatchError(
            f"stored vectors differ in dimension (the first has {dim}); cannot stack them"
        )
    return np.frombuffer(buf, dtype=">f4").reshape(len(raw), dim + 1)[:, 1:].astype(np.float32)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then its causes (``__cause__``, ``__context__`` or SQLAlchemy's ``orig``), each once."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__ or getattr(cur, "orig", None)


def dimension_mismatch(exc: BaseException) -> DimensionMismatchError | None:
    """A typed error for pgvector's dimension complaints in ``exc`` (or its causes), else ``None``."""
    for cur in _causes(exc):
        # pgvector's client-side check or a fixed-size column: expected <stored>, not <query>;
        # <column> <op> <query>: pgvector names the column's dimension first
        found = _EXPECTED.search(str(cur)) or _DIFFERENT.search(str(cur))
        if found:
            return DimensionMismatchError(
                f"the query vector has {found.group(2)} dimensions but the store's vectors have "
                f"{found.group(1)}; embed queries with the model that embedded the stored rows"
            )
    return None


@contextmanager
def pgvector_search(fetch_k: int | None, *, binary: bool = False) -> Iterator[PgSearch]:
    """Run a pgvector search inside the block (see the module docstring).

    Args:
        fetch_k: rows the search asks for; ``hnsw.ef_search`` is raised to it for the
            search's transaction when the connection's setting is lower (``None``: left alone).
        binary: read the search's vectors in binary (:attr:`PgSearch.raw` or, with
            psycopg 3, numpy arrays in the rows).

    Raises:
        DimensionMismatchError: the query vector's dimension is not the stored vectors'.
    """
    _install()
    state = PgSearch(fetch_k=fetch_k, binary=binary)
    token = _STATE.set(state)
    try:
        with store_errors(dimensions=True):
            yield state
    finally:
        _STATE.reset(token)


#: Exception classes (by module prefix and name) that mean the connection to the database failed
#: or was lost: SQLAlchemy's wrappers and the drivers' own (psycopg 2 and 3, asyncpg).
_UNAVAILABLE = {
    "sqlalchemy": {"OperationalError", "InterfaceError", "DisconnectionError", "TimeoutError"},
    "psycopg": {"OperationalError", "InterfaceError"},
    "psycopg2": {"OperationalError", "InterfaceError"},
    "asyncpg": {"ConnectionDoesNotExistError", "ConnectionFailureError", "PostgresConnectionError",
                "InterfaceError", "AdminShutdownError", "CannotConnectNowError", "CrashShutdownError",
                "ClientCannotConnectError"},
}


def _unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` is a lost or refused database connection (judged by its class, so that no
    driver needs importing)."""
    if isinstance(exc, (ConnectionError, EOFError)):
        return True
    if getattr(exc, "connection_invalidated", False):  # SQLAlchemy saw a disconnect
        return True
    for cls in type(exc).__mro__:
        names = _UNAVAILABLE.get(cls.__module__.split(".")[0])
        if names is not None and cls.__name__ in names:
            return True
    return False


def store_failure(exc: BaseException) -> StoreUnavailableError | None:
    """A :class:`StoreUnavailableError` for a lost or refused database connection in ``exc`` (or its
    causes), else ``None``."""
    for cur in _causes(exc):
        if _unavailable(cur):
            detail = " ".join(str(cur).split())[:200]
            return StoreUnavailableError(
                f"the vector store's database is unreachable or dropped the connection "
                f"({type(cur).__name__}: {detail}); retry once it is back"
            )
    return None


@contextmanager
def store_errors(*, dimensions: bool = False) -> Iterator[None]:
    """Around a read from a database-backed store: a lost or refused connection becomes a
    :class:`StoreUnavailableError` (the driver's error its cause), and with ``dimensions`` a
    dimension complaint a :class:`DimensionMismatchError`; anything else propagates."""
    try:
        yield
    except (DimensionMismatchError, StoreError):
        raise
    except Exception as exc:
        typed = (dimension_mismatch(exc) if dimensions else None) or store_failure(exc)
        if typed is not None:
            raise typed from exc
        raise


def sql_vectors(session: Any, id_column: Any, vector_column: Any, ids: Sequence[Any]) -> list[Any]:
    """The stored vectors of ``ids`` (``None`` for an id without one), read in one ``SELECT``
    through the SQLAlchemy session factory ``session``; a lost connection is typed."""
    from sqlalchemy import select

    wanted = sorted({str(i) for i in ids if i is not None})
    with store_errors(), session() as s:
        by_id = {str(r[0]): r[1] for r in s.execute(select(id_column, vector_column).where(id_column.in_(wanted)))}
    return [by_id.get(str(i)) if i is not None else None for i in ids]


# ----------------------------------------------------------------------------- events
def _install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    with _LOCK:
        if _INSTALLED:
            return
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "before_execute", _before_execute, retval=True)
        event.listen(Engine, "before_cursor_execute", _before_cursor_execute)
        event.listen(Engine, "do_execute", _do_execute)
        _INSTALLED = True


def _before_execute(conn: Any, clause: Any, multiparams: Any, params: Any,
                    execution_options: Any) -> tuple[Any, Any, Any]:
    """Select ``vector_send(v)`` for the pgvector column ``v`` of a column-only search ``SELECT``."""
    state = _STATE.get()
    if state is None or not state.binary or state.rewritten:
        return clause, multiparams, params
    rewritten = _rewrite(clause)  # (an ORM entity query, e.g. PGVector's, is left to _do_execute)
    if rewritten is not None:
        state.rewritten = True
        state.raw = []
        return rewritten, multiparams, params
    return clause, multiparams, params


def _rewrite(clause: Any) -> Any:
    from sqlalchemy.sql import Select
    from sqlalchemy.sql.elements import ColumnClause, ColumnElement

    if not isinstance(clause, Select):
        return None
    # The statement's own column list: plain columns here; an ORM entity (loaded whole, e.g.
    # PGVector's) is a table, so its vector column is not found and nothing is rewritten.
    raw = getattr(clause, "_raw_columns", None)
    if not isinstance(raw, list) or not all(isinstance(c, ColumnElement) for c in raw):
        return None
    hits = [i for i, c in enumerate(raw) if isinstance(c, ColumnClause) and type(c.type).__name__ == "VECTOR"]
    if len(hits) != 1:
        return None
    columns = list(raw)
    columns[hits[0]] = _sent_column(raw[hits[0]])
    return clause.with_only_columns(*columns)


@functools.lru_cache(maxsize=64)
def _sent_column(col: Any) -> Any:
    """``vector_send(col)`` labelled as ``col``, read by :func:`_sent_vector`'s type: an immutable
    expression, built once per column (a store's column is the same object in each search)."""
    from sqlalchemy import func, type_coerce

    return type_coerce(func.vector_send(col), _sent_vector()()).label(col.key)


@functools.cache
def _sent_vector() -> Any:
    """A ``TypeDecorator`` for ``vector_send`` bytes: kept on the search state in row order;
    the row gets ``None`` (built on first use: SQLAlchemy is an optional dependency)."""
    from sqlalchemy.types import LargeBinary, TypeDecorator

    class SentVector(TypeDecorator[Any]):
        impl = LargeBinary
        cache_ok = True

        def process_result_value(self, value: Any, dialect: Any) -> Any:
            state = _STATE.get()
            if value is not None and state is not None:
                state.raw.append(bytes(value))
            return None

    return SentVector


def _search_statement(statement: str) -> bool:
    return bool(_DISTANCE.search(statement)) and bool(_LIMIT.search(statement))


def _before_cursor_execute(conn: Any, cursor: Any, statement: str, parameters: Any,
                           context: Any, executemany: bool) -> None:
    """Raise ``hnsw.ef_search`` for the search's transaction when it is below ``fetch_k``."""
    state = _STATE.get()
    if state is None or state.fetch_k is None or state.ef_statement:
        return
    if not _search_statement(statement):
        return
    info = conn.info
    known = info.get(_EF_KEY)
    want = int(state.fetch_k)
    if known is not None and known >= want:
        return
    # '[1]'::vector loads pgvector into the backend first, so the setting (from the server's
    # configuration or the connection's options) is defined when it is read.
    cursor.execute(
        "SELECT current_setting('hnsw.ef_search', true), "
        f"set_config('hnsw.ef_search', greatest({want}, coalesce(nullif("
        "current_setting('hnsw.ef_search', true), '')::int, 40))::text, true) "
        "FROM (SELECT '[1]'::vector) AS loaded"
    )
    state.ef_statement = True
    row = cursor.fetchone()
    if row is not None:
        before = int(row[0]) if row[0] else None
        if before is not None:
            info[_EF_KEY] = before
        if before is None or int(row[1]) > before:
            state.ef_raised = int(row[1])


def _vector_oid(conn: Any, cursor: Any) -> int | None:
    info = conn.info
    if _OID_KEY not in info:
        cursor.execute("SELECT to_regtype('vector')::oid")
        row = cursor.fetchone()
        info[_OID_KEY] = int(row[0]) if row and row[0] else None
    oid: int | None = info[_OID_KEY]
    return oid


def _do_execute(cursor: Any, statement: str, parameters: Any, context: Any) -> bool:
    """psycopg 3: run the search with binary results, the vector column decoded by numpy."""
    state = _STATE.get()
    if state is None or not state.binary or context is None:
        return False
    if context.dialect.driver != "psycopg" or not _search_statement(statement):
        return False
    oid = _vector_oid(context.root_connection, cursor)
    if oid is None:
        return False
    cursor.adapters.register_loader(oid, _binary_loader())
    cursor.execute(statement, parameters, binary=True)
    return True


@functools.cache
def _binary_loader() -> Any:
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class BinaryVectorLoader(Loader):
        """pgvector's binary ``vector``: a float32 array (big-endian floats after a 4-byte head)."""

        format = Format.BINARY

        def load(self, data: Any) -> Any:
            return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)

    return BinaryVectorLoader
