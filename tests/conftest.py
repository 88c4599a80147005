"""Shared pytest fixtures for the privgate test suite."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

#: Real public datasets live next to the repository, in ``../shared/data``; they are never
#: copied into the project.
SHARED_DATA_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Callable[[str], Path]:
    """Return a function mapping a path relative to ``../shared/data`` to an existing file.

    If the file is missing, the calling test is skipped, except in CI (``CI=true``), where a
    missing dataset is a broken setup and the test fails instead of silently passing.
    """

    def resolve(relative: str) -> Path:
        path = (SHARED_DATA_DIR / relative).resolve()
        if not path.is_file():
            message = f"shared dataset not found: {path}"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
        return path

    return resolve


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own privgate data directory (ε ledger, caches, mappings).

    The ledger's location is configuration, never a policy or ``--output`` setting; a test that
    needs a fresh budget gets it here, and no test touches the user's real data directory.
    """
    folder = tmp_path_factory.mktemp("privgate-data")
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(folder))
    monkeypatch.delenv("PRIVGATE_LEDGER_URL", raising=False)
    return folder


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A throwaway PostgreSQL server on a loopback port, for the shared-ledger tests.

    Debian's ``postgresql`` package provides the binaries (``.ci/run`` installs it). The server
    refuses to run as root, so as root it runs as the ``postgres`` system user. Without the
    binaries the tests skip locally and fail in CI (``CI=true``): a team ledger is a feature,
    not an option of the test run.
    """
    import glob
    import shutil
    import socket
    import subprocess
    import tempfile

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    bin_dir = Path(found[-1]).parent
    # Not under pytest's tmp folders: those are 0700 root, which the postgres user cannot enter.
    base = Path(tempfile.mkdtemp(prefix="privgate-postgres-"))
    data, sockets = base / "data", base / "sockets"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def run(*command: str) -> None:
        done = subprocess.run([*as_user, *command], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{command[0]} failed: {done.stderr or done.stdout}")

    run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "privgate", "--no-sync")
    options = f"-p {port} -h 127.0.0.1 -k {sockets} -c fsync=off -c max_connections=60"
    log = base / "server.log"
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "privgate",
            "ledger")  # fmt: skip
        yield f"postgresql+psycopg://privgate@127.0.0.1:{port}/ledger"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
