"""A small transactional store on any SQLAlchemy URL: the base of the ε ledger and the history.

Both keep private state of the data owner that several processes (nightly runs, workers on
several machines) update concurrently, so both need the same things: one database chosen by
configuration (SQLite by default, PostgreSQL for a team), writers that serialize (SQLite:
``BEGIN IMMEDIATE`` takes the write lock before the first read; other backends lock a row with
``SELECT ... FOR UPDATE``), consistent reads, errors that name the database, a SQLite file that
is owner-only (0600, in a 0700 folder the store creates), and tables created on first use.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from privgate.core.exceptions import PrivgateError

__all__ = ["SQLStore", "sqlite_file_exists", "sqlite_url_in"]

#: Seconds a SQLite writer waits for another writer's lock before giving up.
_SQLITE_BUSY_TIMEOUT = 60.0

#: Execution option that makes a SQLite transaction start with ``BEGIN IMMEDIATE``.
_WRITE_OPTION = "privgate_store_write"


def sqlite_url_in(directory: str | Path, filename: str) -> str:
    """``sqlite:///<absolute directory>/<filename>`` (absolute: any working directory)."""
    return f"sqlite:///{Path(directory).expanduser().resolve() / filename}"


def sqlite_file_exists(url: str) -> bool:
    """Whether the database at ``url`` exists (a server URL is assumed to)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or _sqlite_in_memory(parsed):
        return True
    database = parsed.database or ""
    return database.startswith("file:") or Path(database).expanduser().exists()


class SQLStore:
    """Connections, transactions and table creation for a store on a SQLAlchemy URL.

    Parameters
    ----------
    url : str or URL
        Any SQLAlchemy URL; ``sqlite://`` is an in-memory store private to this object.
    metadata : MetaData
        The store's tables (created if missing).
    what : str
        How errors name the store ("privacy ledger", "release history").
    error : type
        The exception class database failures become.
    create : bool, default=True
        Create the file and tables if missing.
    """

    def __init__(
        self,
        url: str | URL,
        metadata: MetaData,
        *,
        what: str,
        error: type[PrivgateError],
        create: bool = True,
    ) -> None:
        self._what = what
        self._error = error
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError, TypeError) as exc:
            raise error(
                f"{what} URL {str(url)!r} is not a valid SQLAlchemy database URL "
                f"(e.g. sqlite:///path/to/file.sqlite): {exc}"
            ) from exc
        self._url = parsed
        self._shown = parsed.render_as_string(hide_password=True)
        self._is_sqlite = parsed.get_backend_name() == "sqlite"
        in_memory = self._is_sqlite and _sqlite_in_memory(parsed)
        # One in-memory database lives in one connection, shared by every thread (StaticPool);
        # this lock keeps their transactions from interleaving on it.
        self._serialize: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if in_memory else contextlib.nullcontext()
        )
        if self._is_sqlite and not in_memory and create:
            self._make_parent_folder(parsed)
        self._engine = self._create_engine(parsed, in_memory)
        if create:
            self._create_tables(metadata)
            if self._is_sqlite and not in_memory:
                _restrict_sqlite_file(parsed)

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self._shown

    def _create_engine(self, url: URL, in_memory: bool) -> Engine:
        kwargs: dict[str, Any] = {}
        if self._is_sqlite:
            kwargs["connect_args"] = {"timeout": _SQLITE_BUSY_TIMEOUT, "check_same_thread": False}
            if in_memory:
                kwargs["poolclass"] = StaticPool
        try:
            engine = create_engine(url, **kwargs)
        except (NoSuchModuleError, ImportError) as exc:
            raise self._error(
                f"cannot open the {self._what} at {self._shown}: its database driver is not "
                f"installed ({exc})"
            ) from exc
        except (ArgumentError, TypeError, ValueError) as exc:
            raise self._error(f"cannot open the {self._what} at {self._shown}: {exc}") from exc
        if self._is_sqlite:
            _take_over_sqlite_transactions(engine)
        return engine

    @contextlib.contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        """One transaction; a write takes the database lock (SQLite) up front.

        Reads on other backends run at REPEATABLE READ so a snapshot is consistent across its
        queries. Database failures become the store's error class, naming the URL.
        """
        with self._serialize:
            try:
                with self._engine.connect() as connection:
                    if self._is_sqlite:
                        connection.execution_options(**{_WRITE_OPTION: write})
                    elif not write:
                        connection.execution_options(isolation_level="REPEATABLE READ")
                    with connection.begin():
                        yield connection
            except (SQLAlchemyError, OSError) as exc:
                # OSError: some drivers (asyncpg) let a refused connection through unwrapped.
                detail = getattr(exc, "orig", None) or exc
                raise self._error(f"{self._what} at {self._shown}: {detail}") from exc

    def _create_tables(self, metadata: MetaData) -> None:
        """Create the missing tables, tolerating another process creating them concurrently."""
        try:
            with self._transaction(write=True) as connection:
                metadata.create_all(connection, checkfirst=True)
        except self._error as exc:
            # Another process may have created the tables between the check and the CREATE
            # (backends without a database-wide write lock): re-check once before giving up.
            try:
                with self._transaction(write=True) as connection:
                    metadata.create_all(connection, checkfirst=True)
            except self._error:
                raise self._error(
                    f"cannot open the {self._what} at {self._shown}: {exc.__cause__ or exc}"
                ) from exc

    def _make_parent_folder(self, url: URL) -> None:
        """Create the folder of a SQLite file (0700 if the store creates it)."""
        from privgate.core.locations import ensure_private_dir

        database = url.database or ""
        if database.startswith("file:"):
            return
        folder = Path(database).expanduser().parent
        try:
            if not folder.exists():
                ensure_private_dir(folder)
        except OSError as exc:
            raise self._error(
                f"cannot open the {self._what} at {self._shown}: cannot create its folder ({exc})"
            ) from exc

    def close(self) -> None:
        """Release the store's database connections (an in-memory store is then gone)."""
        self._engine.dispose()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._shown!r})"


def _take_over_sqlite_transactions(engine: Engine) -> None:
    """Make SQLAlchemy, not pysqlite, issue ``BEGIN``, so writes can use ``BEGIN IMMEDIATE``.

    pysqlite begins transactions lazily and only before data changes, so a read-then-write
    transaction would take the write lock late, after it had read a value another writer could
    change. ``BEGIN IMMEDIATE`` takes the lock before the first read (SQLAlchemy's documented
    recipe for pysqlite transactions).
    """

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _sqlite_in_memory(url: URL) -> bool:
    database = url.database or ""
    return database in ("", ":memory:") or url.query.get("mode") == "memory"


def _restrict_sqlite_file(url: URL) -> None:
    """Make a SQLite store file owner-only (0600); SQLite gives its journals the same mode."""
    from privgate.core.locations import restrict_file

    database = url.database or ""
    path = Path(database).expanduser()
    if not database.startswith("file:") and path.exists():
        with contextlib.suppress(PermissionError):  # a file owned by another account
            restrict_file(path)
