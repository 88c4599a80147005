"""A Prefect server database that is already migrated, for servers the tests start.

A server's first start on an empty SQLite file runs every Alembic migration and registers
Prefect's block types before it answers: about 6 s of CPU and, on this shared 2-core machine
under load, 15-20 s of wall time (10.1 s of CPU and 26.5 s to healthy with an empty file, 5.3 s
and 9.3 s with a kept one, measured side by side at a load of 6-8). Every later start of the
same server only checks that the database is at the head of the migrations, which is what a
user's server does on every restart.

:func:`seed` copies the kept database into a server's home before it starts;
:func:`keep` saves one from a server that has just become healthy (migrations and block types
done, nothing else written yet). It is kept under the pytest cache per Prefect version, and kept
only if every table other than the migration stamp and the block types is empty, so a seeded
server starts from exactly what its own first start would have written. The server still runs
its migration check at start-up (a database behind the installed Prefect is upgraded), and
nothing the tests assert depends on which start it was.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".pytest_cache" / "prefect-db"
#: The only tables a server's first start fills (the rest stay empty until it is used).
STARTUP_TABLES = frozenset(
    {"alembic_version", "block_type", "block_schema", "block_schema_reference"}
)


def kept_database() -> Path:
    """Where the kept database of the installed Prefect version is."""
    return CACHE / f"prefect-{version('prefect')}.db"


def seed(database: Path) -> bool:
    """Copy the kept database to ``database`` (a server's, before it starts: ``prefect.db`` in
    its ``PREFECT_HOME``); ``False`` if none is kept yet."""
    kept = kept_database()
    if not kept.is_file():
        return False
    shutil.copyfile(kept, database)
    return True


def keep(database: Path) -> bool:
    """Save ``database`` of a server that has just become healthy, if it holds only what a
    first start writes; ``True`` if it was kept."""
    if not database.is_file():
        return False
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = CACHE / f".{kept_database().name}.{os.getpid()}"
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(partial)
        try:
            source.backup(target)  # a consistent copy while the server has the file open
            query = "SELECT name FROM sqlite_master WHERE type = 'table'"
            tables = [row[0] for row in target.execute(query)]
            filled = {t for t in tables if target.execute(f'SELECT 1 FROM "{t}"').fetchone()}
        finally:
            target.close()
    finally:
        source.close()
    if not filled <= STARTUP_TABLES or "alembic_version" not in filled:
        partial.unlink()
        return False
    os.replace(partial, kept_database())  # two workers may race: each writes a whole file
    return True
