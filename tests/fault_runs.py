"""Release runs that die, for the fault files (``tests/flows/test_faults*.py``).

A killed run is a real process forked from a fork server that has the flow imported (a fork,
not an import, per run), running against the session's Prefect server; it dies by SIGKILL, so
nothing of its own gets to clean up. The input is the demo generator's census table at 3,000
rows: the fault, not the data, is the point of these tests, and the table has the identifier
column the release history needs.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from datetime import date
from pathlib import Path

from privgate.core.demo_data import write_census_csv
from privgate.flows.parameters import ReleaseParameters
from privgate.flows.release import release_flow

DEMO_POLICY = Path(__file__).resolve().parents[1] / "policies" / "demo.yaml"
DATASET = "census-demo"
PROCESSES = multiprocessing.get_context("forkserver")
PROCESSES.set_forkserver_preload(["privgate.flows.release", "great_expectations"])


def write_demo_csv(folder: Path) -> Path:
    """The demo's seeded census table, 3,000 rows."""
    path = folder / "census.csv"
    write_census_csv(path, n_rows=3000)
    return path


def parameters_for(data: Path, output: Path, day: int) -> ReleaseParameters:
    """The demo policy on ``data``, released into ``output`` on 2026-01-``day``."""
    return ReleaseParameters(
        policy_path=str(DEMO_POLICY),
        release_date=date(2026, 1, day),
        overrides={"input.path": str(data), "output.directory": str(output)},
    )


def dataset_dir(output: Path) -> Path:
    return output / DATASET


def releases(output: Path) -> list[Path]:
    """The published release folders."""
    found = dataset_dir(output).glob("*/manifest.json")
    return sorted(p.parent for p in found if not p.parent.name.startswith("."))


def working_folders(output: Path) -> list[str]:
    """What a run leaves while it works (``.staging-*`` and the like)."""
    folder = dataset_dir(output)
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


class _KillAfterTask(logging.Handler):
    """SIGKILL this process as soon as the task named ``task`` has reported its final state:
    the boundary between that stage and the next."""

    def __init__(self, task: str) -> None:
        super().__init__()
        self.task = task

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "task_name", None) == self.task and str(record.msg).startswith(
            "Finished in state"
        ):
            os.kill(os.getpid(), signal.SIGKILL)


def _killed_run(boundary: str, api_url: str, parameters: dict) -> None:
    """Run the release flow in this (forked) process and die by SIGKILL at ``boundary``."""
    from prefect.events.clients import NullEventsClient
    from prefect.events.worker import EventsWorker
    from prefect.settings import PREFECT_API_URL, PREFECT_TASKS_REFRESH_CACHE, temporary_settings

    if boundary.startswith("publish"):
        rename = os.rename

        def dying_rename(source, target, *args, **kwargs):
            staging = Path(source).name.startswith(".staging-")
            if staging and boundary == "publish:before-rename":
                os.kill(os.getpid(), signal.SIGKILL)
            rename(source, target, *args, **kwargs)
            if staging and boundary == "publish:after-rename":
                os.kill(os.getpid(), signal.SIGKILL)

        os.rename = dying_rename
    else:
        logging.getLogger("prefect").addHandler(_KillAfterTask(boundary))
    # No test reads this run's task runs: like the test process's own runs
    # (conftest.no_task_run_events), it sends the test server no events.
    EventsWorker.set_client_override(NullEventsClient)
    settings = {PREFECT_API_URL: api_url, PREFECT_TASKS_REFRESH_CACHE: True}
    with temporary_settings(settings):
        release_flow(ReleaseParameters(**parameters))
    os._exit(0)  # reached only if the boundary was never crossed: the parent sees exit 0


def _killed_run_here(boundary: str, api_url: str, parameters: dict, env: dict) -> None:
    """:func:`_killed_run` with the calling test's private data directory and history (the
    fork server's environment is the one of the first test that started it, not this one's:
    without it the child would write its cached stages into another test's folder)."""
    os.environ.update(env)
    _killed_run(boundary, api_url, parameters)


def run_killed_at(boundary: str, parameters: ReleaseParameters) -> int:
    """Run the release in a child process that SIGKILLs itself at ``boundary`` (a task name,
    ``publish:before-rename``, ``publish:after-rename``); return the child's exit code."""
    from prefect.settings import PREFECT_API_URL

    from privgate.core.history import configured_history_url
    from privgate.core.locations import data_dir

    env = {"PRIVGATE_HISTORY_URL": configured_history_url(), "PRIVGATE_DATA_DIR": str(data_dir())}
    child = PROCESSES.Process(
        target=_killed_run_here,
        args=(boundary, PREFECT_API_URL.value(), parameters.model_dump(), env),
    )
    child.start()
    child.join(timeout=600)
    return child.exitcode
