"""The kept Prefect database (``tests/prefect_db.py``) is only ever a fresh server's.

Servers in the tests start from a copy of it, so a kept database holding a flow run, a
deployment or a block document would leak one test run's state into every later server. These
tests build small SQLite files with the shape ``keep`` inspects (tables, some filled) instead of
starting a server: what is under test is ``keep``'s refusal, not Prefect's migrations.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import prefect_db
import pytest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setattr(prefect_db, "CACHE", folder)
    return folder


def _database(path: Path, filled: dict[str, int], empty: tuple[str, ...] = ()) -> Path:
    """A SQLite file with one table per name, ``filled[name]`` rows in each."""
    with sqlite3.connect(path) as db:
        for name, rows in filled.items():
            db.execute(f'CREATE TABLE "{name}" (value TEXT)')
            db.executemany(f'INSERT INTO "{name}" VALUES (?)', [(str(i),) for i in range(rows)])
        for name in empty:
            db.execute(f'CREATE TABLE "{name}" (value TEXT)')
    db.close()
    return path


def _contents(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows (a backup copy differs from its source in SQLite's header only)."""
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {name: sorted(db.execute(f'SELECT * FROM "{name}"')) for name in names}
    db.close()
    return rows


FIRST_START = {
    "alembic_version": 1,
    "block_type": 3,
    "block_schema": 3,
    "block_schema_reference": 1,
}


def test_a_fresh_servers_database_is_kept_and_seeds_the_next_server(cache: Path, tmp_path: Path):
    fresh = _database(tmp_path / "fresh.db", FIRST_START, empty=("flow_run", "deployment"))
    assert prefect_db.keep(fresh)
    assert _contents(prefect_db.kept_database()) == _contents(fresh)
    seeded = tmp_path / "home" / "prefect.db"
    seeded.parent.mkdir()
    assert prefect_db.seed(seeded)
    with sqlite3.connect(seeded) as db:
        assert db.execute("SELECT COUNT(*) FROM block_type").fetchone() == (3,)
    db.close()
    assert sorted(p.name for p in cache.iterdir()) == [prefect_db.kept_database().name]


@pytest.mark.parametrize(
    "used",
    [
        {**FIRST_START, "flow_run": 1},  # a server that already ran a flow
        {**FIRST_START, "deployment": 2},
        {"block_type": 3, "block_schema": 3},  # no migration stamp: not a migrated database
    ],
    ids=["flow-run", "deployment", "no-migration-stamp"],
)
def test_a_used_or_unmigrated_database_is_refused_and_the_kept_one_stays(
    cache: Path, tmp_path: Path, used: dict[str, int]
):
    fresh = _database(tmp_path / "fresh.db", FIRST_START)
    assert prefect_db.keep(fresh)
    before = prefect_db.kept_database().read_bytes()
    assert not prefect_db.keep(_database(tmp_path / "used.db", used))
    assert prefect_db.kept_database().read_bytes() == before  # not even rewritten
    assert sorted(p.name for p in cache.iterdir()) == [prefect_db.kept_database().name]


def test_nothing_to_keep_or_seed_is_no_error(cache: Path, tmp_path: Path):
    assert not prefect_db.keep(tmp_path / "missing.db")
    assert not prefect_db.seed(tmp_path / "prefect.db")
    assert not (tmp_path / "prefect.db").exists()
