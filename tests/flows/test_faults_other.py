"""No partial file survives a fault: a run killed around its history record, the Prefect server
stopping mid-run, a full disk.

After each fault the release folder holds no partial release, and the next run leaves no
``.staging-*`` behind and publishes exactly once. The killed runs, and the demo input (where the
fault, not the data, is the point), are in ``tests/fault_runs.py``; the kills at every stage
boundary are in ``test_faults.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fault_runs import (
    DATASET,
    PROCESSES,
    parameters_for,
    releases,
    run_killed_at,
    working_folders,
)

from privgate.core.exceptions import PublishError
from privgate.flows.parameters import ReleaseParameters
from privgate.flows.release import release_flow

# --- SIGKILL around the release history's record -------------------------------------------


@pytest.mark.parametrize("boundary", ["publish:after-rename", "history-record"])
def test_a_run_killed_around_the_history_record_is_recorded_exactly_once(
    demo_csv, tmp_path, boundary
):
    """Publication and the history record are one step for an observer who retries: killed
    after the rename (published, not recorded) or after the record, the next run publishes
    nothing new and leaves exactly one history record whose people are the release's."""
    from privgate.core.history import ReleaseHistory, row_keys_dir

    output = tmp_path / "releases"
    history = {"history.check": True, "history.margin": 0.0}
    parameters = parameters_for(demo_csv, output, 20)
    parameters = parameters.model_copy(update={"overrides": {**parameters.overrides, **history}})
    exitcode = run_killed_at(boundary, parameters)
    assert exitcode == -signal.SIGKILL, f"the run was not killed at {boundary}"
    (release,) = releases(output)  # the rename happened before either kill
    with ReleaseHistory() as store:
        before = store.releases(DATASET)
    assert len(before) == (1 if boundary == "history-record" else 0)
    # Published and not recorded: the row keys of exactly the published file are kept
    # (``privgate history --record-published`` could record it); recorded: removed.
    kept = list(row_keys_dir(DATASET).glob(f"{release.name}.*.json"))
    assert len(kept) == (0 if boundary == "history-record" else 1)

    outcome = release_flow(ReleaseParameters(**parameters.model_dump()))
    assert outcome["published"] and outcome["already_published_by"]
    assert releases(output) == [release] and working_folders(output) == []
    with ReleaseHistory() as store:
        (recorded,) = store.releases(DATASET)
    rows = (release / "release.csv").read_text().count("\n") - 1
    assert recorded.release_id == release.name and recorded.people == rows
    assert not list(row_keys_dir(DATASET).glob("*.json"))  # recorded: nothing kept


# --- the Prefect server stops mid-run ----------------------------------------------------------


class _Proxy:
    """A TCP relay in front of the session's Prefect server: the run talks to the server
    through it, and :meth:`stop` makes the server vanish for the run (no new connection is
    accepted, open ones are cut) while the test keeps using the server directly."""

    def __init__(self, target: tuple[str, int]) -> None:
        import socket
        import threading

        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.close()

    def stop(self) -> None:
        import socket

        self.stopped.set()
        self.listener.close()
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
                connection.close()


def _run_until_the_server_stops(api_url: str, parameters: dict) -> None:
    """Run the release flow against ``api_url``; exit 3 if it raised, 0 if it returned."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_CLIENT_MAX_RETRIES,
        PREFECT_TASKS_REFRESH_CACHE,
        temporary_settings,
    )

    settings = {
        PREFECT_API_URL: api_url,
        PREFECT_TASKS_REFRESH_CACHE: True,
        PREFECT_CLIENT_MAX_RETRIES: 0,
    }
    try:
        with temporary_settings(settings):
            release_flow(ReleaseParameters(**parameters))
    except BaseException:
        os._exit(3)
    os._exit(0)


def test_a_server_that_stops_mid_run_leaves_no_partial_release(demo_csv, tmp_path):
    """The Prefect server disappears while the run is in its gate stage (the release is being
    written to staging): the run fails without publishing and without leaving its staging
    folder; once the server is back, the next run publishes exactly once."""
    from urllib.parse import urlsplit

    from prefect.settings import PREFECT_API_URL

    harness = urlsplit(PREFECT_API_URL.value())
    proxy = _Proxy((harness.hostname, harness.port))
    output = tmp_path / "releases"
    parameters = parameters_for(demo_csv, output, 25)
    child = PROCESSES.Process(
        target=_run_until_the_server_stops,
        args=(f"http://127.0.0.1:{proxy.port}{harness.path}", parameters.model_dump()),
    )
    child.start()
    deadline = time.monotonic() + 300
    while not any(n.startswith(".staging-") for n in working_folders(output)):
        assert child.is_alive() and time.monotonic() < deadline, "the run never staged"
        time.sleep(0.01)
    proxy.stop()
    child.join(timeout=300)
    assert child.exitcode == 3, f"the run did not fail when the server stopped ({child.exitcode})"
    assert releases(output) == [] and working_folders(output) == []

    outcome = release_flow(parameters)
    assert outcome["published"]
    assert len(releases(output)) == 1 and working_folders(output) == []


# --- a full disk ------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of a given size (root in CI; elsewhere skipped unless CI=true)."""
    mounts: list[Path] = []

    def mount(size_kib: int) -> Path:
        folder = tmp_path / f"disk-{len(mounts)}"
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(folder)],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            message = f"cannot mount a tmpfs for the full-disk test: {done.stderr.strip()}"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
        mounts.append(folder)
        return folder

    yield mount
    for folder in mounts:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _used_kib(folder: Path) -> int:
    stats = os.statvfs(folder)
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize // 1024


def _release_sizes(demo_csv: Path, tmp_path: Path) -> dict[str, int]:
    """Bytes of each file of the release as published on an ordinary disk."""
    output = tmp_path / "measure"
    outcome = release_flow(parameters_for(demo_csv, output, 20))
    release = Path(outcome["path"])
    sizes = {}
    for path in release.rglob("*"):
        if path.is_file():
            top = path.relative_to(release).parts[0]
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    shutil.rmtree(output)
    return sizes


def test_a_full_disk_leaves_no_partial_file_and_frees_the_space(demo_csv, tmp_path, small_disk):
    """The disk fills up while the release is written (too small for release.csv), then while
    the files after it are written (release.csv fits, the rest does not): each run fails naming
    the disk, leaves nothing in the release folder and frees what it wrote. On a disk with room
    the next run publishes once."""
    sizes = _release_sizes(demo_csv, tmp_path)
    release_kib = sizes["release.csv"] // 1024
    for size_kib in (max(release_kib // 2, 8), release_kib + 16):
        disk = small_disk(size_kib)
        parameters = parameters_for(demo_csv, disk, 21)
        with pytest.raises(PublishError, match="No space left on device"):
            release_flow(parameters)
        assert releases(disk) == [] and working_folders(disk) == [], size_kib
        assert _used_kib(disk) <= 8, f"{_used_kib(disk)} KiB left behind on a {size_kib} KiB disk"
    subprocess.run(["mount", "-o", f"remount,size={4 * sum(sizes.values()) // 1024}k", str(disk)])
    outcome = release_flow(parameters)
    assert outcome["published"] and len(releases(disk)) == 1
    assert working_folders(disk) == []
