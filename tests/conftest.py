"""Shared pytest fixtures for the privgate test suite.

* ``shared_data``: the real public datasets in ``../shared/data`` (never copied here);
* ``adult_policy`` / ``adult``: ARX's Adult with its policy, read and validated once a session;
* ``prefect_harness``: the one Prefect test server of the session (folders whose tests run
  flows or tasks request it from their own ``conftest.py``);
* ``_private_data_dir`` (autouse): every test its own privgate data directory;
* ``postgres_url``: a throwaway PostgreSQL server for the shared-ledger tests;
* ``make_case``: a small table and policy of the bad-input corpus (``bad_input_corpus.py``)
  written to ``tmp_path``, for ``tests/bad_inputs`` and the expectation-task tests.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import file_order
import prefect_db
import pytest
from adult_reference import ADULT_POLICY, arx_t_closeness_spec
from bad_input_corpus import GOOD_ROWS, POLICY_YAML, Case, csv_text
from threadpoolctl import threadpool_limits

if TYPE_CHECKING:
    import pandas as pd

    from privgate.core.policy import ReleasePolicy

REPO = Path(__file__).resolve().parents[1]
#: Real public datasets live next to the repository, in ``../shared/data``; they are never
#: copied into the project.
SHARED_DATA_DIR = REPO / ".." / "shared" / "data"
T = TypeVar("T")

# Quiet, offline Prefect and Great Expectations wherever a test starts them, and persisted stage
# results and Prefect's home in throwaway folders, never the user's home.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", tempfile.mkdtemp(prefix="privgate-results-"))
# Prefect's home (its profiles and the temporary server's database) too: a test that runs
# `privgate run` in a child process without the test server's URL starts a temporary server,
# which created and migrated ~/.prefect/prefect.db, the user's real one. Set before anything
# imports Prefect; an explicit PREFECT_HOME is kept. The temporary server's database there starts
# as a copy of an already migrated one (:mod:`prefect_db`), so the first such child does not
# spend its start-up migrating an empty file.
if "PREFECT_HOME" not in os.environ:
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="privgate-prefect-home-")
    prefect_db.seed(Path(os.environ["PREFECT_HOME"]) / "prefect.db")

# One BLAS/OpenMP thread per test process. `make test` runs two pytest-xdist workers on this
# 2-core machine: OpenBLAS's default of one thread per core gives four threads on two cores, and
# its waiting threads spin. The tests' matrices are small, so extra threads buy nothing and cost a
# lot: one FELP fit took 72 ms with OpenBLAS's two threads and 5 ms with one at a load average of
# 14 (`tests/core/dp/test_felp.py`). The variables reach child processes and libraries loaded
# later; threadpoolctl limits the ones already loaded. Results do not depend on it.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
threadpool_limits(limits=1)

# MST and AIM (OpenDP's mbi on JAX) compile a few hundred small XLA programs per release, the
# same ones in every test file and process: about 17 s of CPU per process. JAX's persistent
# compilation cache (keyed by the program, the JAX version and the backend) keeps them under the
# pytest cache, shared by both workers and later runs. The compiled code is the same either way.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO / ".pytest_cache" / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# The MST/AIM budget searches (public settings only, each checked by OpenDP's privacy map before
# use) are kept there too, for both workers and every `privgate run` child process.
os.environ.setdefault(
    "PRIVGATE_CALIBRATION_DIR", str(REPO / ".pytest_cache" / "privgate-calibration")
)


def _merge_forkserver_preloads() -> None:
    """Make every test module's ``set_forkserver_preload(...)`` add to the one list.

    A process has one fork server, started by the first child and preloading the list set
    last. Every module sets its list when it is collected, so the last collected one
    (``tests/fault_runs.py``: the flow and Great Expectations) replaced the others, and
    each child of the ledger and journal tests imported the ledger, OpenDP and scikit-learn
    itself (about 3 s per child, 70 children in ``make test``). Merged, the server imports
    every module once and each child starts with all of them.
    """
    import multiprocessing.forkserver as forkserver

    merged: list[str] = []
    replace = forkserver.set_forkserver_preload

    def add(modules_names: list[str]) -> None:
        merged.extend(name for name in modules_names if name not in merged)
        replace(list(merged))

    # BaseContext.set_forkserver_preload looks this function up in its module on every call.
    forkserver.set_forkserver_preload = add


_merge_forkserver_preloads()


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


@pytest.fixture(scope="session")
def adult_policy(shared_data) -> ReleasePolicy:
    """``policies/adult.yaml``: ARX's Adult, its 8 quasi-identifiers and hierarchies, k=5."""
    from privgate.core.policy import load_policy

    shared_data("arx/adult.csv")
    return load_policy(ADULT_POLICY)


@dataclass(frozen=True)
class AdultTable:
    """Adult as the flow sees it after validation: the policy, its hierarchies, the table."""

    policy: ReleasePolicy
    hierarchies: dict
    frame: pd.DataFrame

    @property
    def quasi_identifiers(self) -> list[str]:
        return self.policy.quasi_identifiers

    def policy_for(self, algorithm: str = "optimal", **overrides) -> ReleasePolicy:
        """The Adult policy with another algorithm and dotted-key overrides."""
        changes = dict(overrides)
        if algorithm != "optimal":
            changes["algorithm"] = {"name": algorithm}
        return self.policy.with_overrides(**changes) if changes else self.policy

    def release(self, algorithm: str = "optimal", **overrides):
        """``(AnonymizedTable, its release frame)`` as the flow's anonymize stage makes it;
        the release's rows carry their original records' index."""
        from privgate.core import stages
        from privgate.core.anonymize import SearchSetup

        setup = SearchSetup.from_policy(self.policy_for(algorithm, **overrides), self.hierarchies)
        table = stages.anonymize(self.frame, setup)[-1]
        return table, table.frame


@pytest.fixture(scope="session")
def adult(adult_policy) -> AdultTable:
    """Adult read and validated once per session (never modify ``frame``: it is shared)."""
    from privgate.core import stages
    from privgate.validations.schema import validate_input

    hierarchies = stages.load_hierarchies(adult_policy)
    frame = validate_input(stages.ingest(adult_policy).frame, adult_policy, hierarchies)
    return AdultTable(adult_policy, hierarchies, frame)


@pytest.fixture(scope="session")
def adult_k5(adult):
    """The optimal release at k=5 with 2 % suppression: (AnonymizedTable, release frame)."""
    return adult.release("optimal")


@pytest.fixture(scope="session")
def adult_mondrian(adult):
    """Strict Mondrian at k=5: (AnonymizedTable, release frame)."""
    return adult.release("mondrian")


#: The utility section of the report fixtures' Adult release.
REPORT_UTILITY = {
    "target": "salary-class",
    "models": ["svm", "random_forest"],
    "sample_size": 1500,
    "cv_folds": 3,
    "clusters": [3, 5],
    "clustering": ["kmeans"],
    "thresholds": {"min_auc_ratio": 0.5, "max_loss": 0.8},
}


def _report_inputs(
    adult: AdultTable, policy: ReleasePolicy, tmp_path_factory: pytest.TempPathFactory | None = None
) -> dict:
    """Everything :func:`privgate.core.report.build_report` takes, for one Adult release.

    With ``tmp_path_factory``, the release and its scores are made once per test run and shared
    by the xdist workers (:func:`_once_per_run`)."""
    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup
    from privgate.core.utility import check_utility, measure_utility

    setup = SearchSetup.from_policy(policy, adult.hierarchies)

    def made() -> dict:
        [table] = stages.anonymize(adult.frame, setup)
        utility = measure_utility(
            adult.frame, table.frame, policy, adult.hierarchies, levels=table.result.levels
        )
        return {
            "table": table,
            "privacy_decision": stages.verify(table.frame, setup, len(adult.frame)),
            "utility": utility,
            "utility_decision": check_utility(utility, policy.utility.thresholds),
        }

    key = f"report-inputs-{policy.fingerprint()}"
    return {
        "policy": policy,
        "original": adult.frame,
        **(made() if tmp_path_factory is None else _once_per_run(tmp_path_factory, key, made)),
        "hierarchies": adult.hierarchies,
        "release_id": "2026-11-22-0123456789ab",
        "run": {"run_id": "test", "policy_sha256": policy.fingerprint()},
    }


def _once_per_run(tmp_path_factory: pytest.TempPathFactory, key: str, make: Callable[[], T]) -> T:
    """``make()``, made once per test run: under pytest-xdist the first worker to ask makes it
    and pickles it into the run's shared temporary folder (a fresh folder every run, so
    nothing outlives the run's code), and the other workers wait on a file lock and read it.

    For a session value that two files needing it on different workers would otherwise both
    make (``adult_run``: a whole-Adult search and the utility models, about 7 CPU s)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make()
    import fcntl
    import pickle

    root = tmp_path_factory.getbasetemp().parent  # every worker's basetemp is inside it
    path = root / f"{key}.pickle"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if path.is_file():
            return pickle.loads(path.read_bytes())
        value = make()
        path.with_suffix(".part").write_bytes(pickle.dumps(value))
        path.with_suffix(".part").replace(path)
        return value


@pytest.fixture(scope="session")
def adult_run(adult, tmp_path_factory) -> dict:
    """A published Adult release (k=5, 2 % suppression, l-diversity and t-closeness) with its
    utility: the inputs of :func:`privgate.core.report.build_report`. Made once per run (the
    report's core tests and its task's test run on different workers)."""
    policy = adult.policy.with_overrides(
        **{
            "utility": REPORT_UTILITY,
            "privacy.l_diversity": [{"column": "salary-class", "l": 2}],
            "privacy.t_closeness": [{"column": "salary-class", "t": 0.3}],
        }
    )
    return _report_inputs(adult, policy, tmp_path_factory)


@pytest.fixture(scope="session")
def adult_mondrian_run(adult_run, adult) -> dict:
    """:func:`adult_run` with strict Mondrian and k-anonymity only."""
    policy = adult_run["policy"].with_overrides(
        **{"algorithm": {"name": "mondrian"}, "privacy.l_diversity": [], "privacy.t_closeness": []}
    )
    return _report_inputs(adult, policy)


@pytest.fixture(scope="session")
def arx_t_closeness(adult_policy, tmp_path_factory) -> tuple:
    """ARX's t-closeness case (:func:`adult_reference.arx_t_closeness_spec`) released through
    :func:`privgate.anonymize` (the stages the flow runs: the schema, the search, then the gate
    with the input's distribution as the reference): ``(policy, ingested frame, Release)``.

    A whole-Adult search under hierarchical t-closeness that prunes nothing (5-6 CPU s), made
    once per test run (:func:`_once_per_run`): the t-closeness tests read the release and its
    gate, the Dask tests compare their own release with it."""
    import privgate
    from privgate.core import stages

    spec = arx_t_closeness_spec(adult_policy.model_dump(mode="json", exclude_none=True))
    policy = type(adult_policy).model_validate(spec)
    frame = stages.ingest(policy).frame
    key = f"arx-t-closeness-{policy.fingerprint()}"
    release = _once_per_run(tmp_path_factory, key, lambda: privgate.anonymize(frame, policy))
    return policy, frame, release


#: A test requesting one of these fixtures is ``slow``: the session's Prefect test server
#: (10-30 s to start per worker, seconds per flow run), the whole Adult table (30,162 rows
#: read and validated once per worker, then searched, released or scored by the test: 1-15 s
#: each, 225 tests) and the PostgreSQL server (a child process per worker).
SLOW_FIXTURES = frozenset({"prefect_harness", "adult", "postgres_url"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that runs on the Prefect test server, the whole Adult table or PostgreSQL
    (:data:`SLOW_FIXTURES`, also through fixtures built on them such as ``adult_k5``) is
    ``slow``. ``make test-fast`` (``-m "not slow"``) leaves them out: the inner loop is the unit
    tests, on small tables. ``make test`` and CI run every test. Other tests are marked ``slow``
    by hand, with the reason beside the mark, when they need child processes, a browser, JAX,
    a large sample of OpenDP noise, an exhaustive reference over many nodes or subsets, or a
    search over a real dataset outside the ``adult`` fixture (more than ~2 s on their own).

    On pytest-xdist workers (``make test``: ``--dist loadfile --no-loadscope-reorder``) the
    files are handed out longest first from a recorded run (:mod:`file_order`), so that a long
    file never starts last while the other workers idle; within a file the collection order
    holds. A serial run keeps the collection order.
    """
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):  # an xdist worker: its order is what gets scheduled
        file_order.longest_first(items, file_order.load_record())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-file-durations",
        metavar="PATH",
        help="write the seconds each test file took (setup + call + teardown) to PATH as JSON; "
        "make test hands files to its workers longest first from tests/file_durations.json",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--record-file-durations")
    if path and not hasattr(config, "workerinput"):  # the controlling process sees every report
        config.pluginmanager.register(file_order.DurationRecorder(Path(path)), "file-durations")


def unread_by_tests() -> dict:
    """Prefect settings of the test server (and of this process, its client) that turn off
    work no test run against it reads back. Test settings only: ``privgate run``, ``privgate
    serve`` and the children the tests start keep Prefect's defaults.

    * the API log handler: every log line of every run was also sent to the server and stored
      there; the tests read logs on the console (``capsys``, ``caplog``), never from the API;
    * the event persister: every event (three or more per task run) was also written to the
      events tables; no test reads events. The task-run recorder still turns them into the
      task runs the tests read back (``read_task_runs``: Cached, Failed, ...), for the tests
      whose runs send them (:func:`task_run_records`; the others send none:
      :func:`no_task_run_events`);
    * automations (reactive and proactive triggers and their actions): the tests create the
      crash automation and read it back through the API, and no test waits for one to fire
      here (the crash automation firing is ``test_server_e2e.py``'s own server).

    Measured at a load of 8-14: the test server's CPU per release flow run on Adult went from
    1.09 to 0.83 s (the client's stayed at 2.2 s); test_release_flow.py, tests/tasks,
    test_release_utility.py and test_crash_detection.py run side by side with and without:
    85.8 -> 81.2 CPU s, of which the server 24.7 -> 21.6.
    """
    from prefect.settings import (
        PREFECT_LOGGING_TO_API_ENABLED,
        PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED,
        PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED,
    )

    return {
        PREFECT_LOGGING_TO_API_ENABLED: False,
        PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED: False,
        PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED: False,
    }


def no_heartbeats() -> dict:
    """No flow-run heartbeats from the flows this process runs against the test server.

    Each flow run has a thread that sends a heartbeat event at its start and then sleeps in 1 s
    steps until the next one (Prefect's default period: 180 s); when the run ends, Prefect
    joins that thread, so every in-process flow run (and subflow) waited out the rest of the
    current second: 0.46 s per Adult release flow run, a core idle (2.31 s over 5 runs, at a
    load of 8). Nothing reads heartbeats on the test server: its event persister and
    automation triggers are off (:func:`unread_by_tests`). Heartbeats and the crash automation
    are tested where they act, on the real server of ``test_server_e2e.py`` with served runs in
    their own processes, which this setting does not reach (nor the fault files' forked runs,
    which read the environment, not this process's settings).
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    return {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}


@pytest.fixture(scope="session")
def prefect_harness():
    """The session's one Prefect test server (a temporary API and database).

    Requested by the ``conftest.py`` of every folder whose tests run flows or tasks, so it
    starts once, and only in a session that needs it. Prefect binds its console log handler
    to the stream it first sees; a session fixture is set up before any test's own capture
    (``capsys``), so that stream is pytest's session-wide one.

    Its database (``prefect-test.db`` in the folder the harness makes with ``mkdtemp``) starts
    as a copy of one already migrated (:mod:`prefect_db`): the migrations of an empty file were
    about 4.5 s of the server's 10 s of CPU to start, in each worker.

    The server and this process skip work no test run against it reads back
    (:func:`unread_by_tests`, and this process's flow runs send no heartbeats:
    :func:`no_heartbeats`); the task runs, flow runs, artifacts, blocks and automations the
    tests read are recorded as before.
    """
    import prefect.testing.utilities as harness
    import prefect_db
    from prefect.settings import temporary_settings

    made: list[tuple[Path, bool]] = []

    def seeded_folder() -> str:
        folder = tempfile.mkdtemp()
        made.append((Path(folder), prefect_db.seed(Path(folder) / "prefect-test.db")))
        return folder

    with ExitStack() as stack:
        # Before the harness starts: it passes the current settings to its server process.
        stack.enter_context(temporary_settings(unread_by_tests()))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(harness, "mkdtemp", seeded_folder)  # raises if Prefect renamed it
            stack.enter_context(harness.prefect_test_harness(server_startup_timeout=300))
        ((folder, seeded),) = made
        if not seeded:  # the first start: keep its database for the next ones
            prefect_db.keep(folder / "prefect-test.db")
        # After the start: client settings, not passed to the server process.
        stack.enter_context(temporary_settings(no_heartbeats()))
        stack.enter_context(no_task_run_events())
        yield


@contextmanager
def no_task_run_events() -> Iterator[None]:
    """This process sends no events to the test server, unless a test asks for them
    (:func:`task_run_records`).

    A flow's task runs reach the server only as events (three or more per task run, sent by
    Prefect's events worker), which the server's task-run recorder turns into task-run rows.
    Only five tests read those rows back (:mod:`task_runs`: Cached, Failed, ...) and one scans
    the server's database for private data; they request :func:`task_run_records`.
    Everything else a test reads of a run goes through the API, not events: the flow run and
    its states, artifacts, blocks, automations. Prefect's own switch for this is an events
    client override (what its test fixtures use); with :class:`NullEventsClient` Prefect
    builds no event at all. Measured on Adult release flow runs in one process at load 4-5:
    the test server's CPU per run 0.48-0.59 -> 0.17-0.19 s, the run's own about 0.2 s less
    (BENCHMARKS.md, "issue 15, flow21"). Runs in other processes (``privgate run`` and served
    runs, the fault files' forked runs, Dask workers) keep sending theirs.
    """
    from prefect.events.clients import NullEventsClient
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all()
    EventsWorker.set_client_override(NullEventsClient)
    try:
        yield
    finally:
        EventsWorker.set_client_override(None)


@pytest.fixture
def task_run_records(prefect_harness) -> Iterator[None]:
    """The flow runs of this test send their events to the test server, so that it records
    their task runs (:mod:`task_runs` reads them; without this fixture it refuses to)."""
    from prefect.events.clients import NullEventsClient
    from prefect.events.worker import EventsWorker

    EventsWorker.set_client_override(None)
    try:
        yield
    finally:
        EventsWorker.drain_all()  # what this test's runs sent reaches the server now
        EventsWorker.set_client_override(NullEventsClient)


@pytest.fixture
def fresh_stages():
    """Run stages afresh (ignoring cached results), e.g. when a test patches a stage."""
    from prefect.settings import PREFECT_TASKS_REFRESH_CACHE, temporary_settings

    with temporary_settings({PREFECT_TASKS_REFRESH_CACHE: True}):
        yield


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


@pytest.fixture
def make_case(tmp_path: Path) -> Callable[..., Case]:
    """Write ``data`` (text or bytes) and a policy for it; ``policy_text`` replaces the policy."""

    def make(
        data: str | bytes | None = None, *, k: int = 2, policy_text: str | None = None
    ) -> Case:
        path = tmp_path / "input.csv"
        content = csv_text(GOOD_ROWS) if data is None else data
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        out = tmp_path / "releases"
        text = policy_text or POLICY_YAML
        policy = tmp_path / "policy.yaml"
        policy.write_text(text.format(data=path, out=out, k=k), encoding="utf-8")
        return Case(policy, path, out)

    return make
