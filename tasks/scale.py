"""The partitioned path's and the Dask flow's tasks: thin wrappers over :mod:`privgate.core.scale`.

frequency set -> validate a sample -> search -> generalize + write -> verify + gate -> report.

What is cached, and why that is true (:mod:`privgate.tasks._caching`):

* ``frequency-set``, ``validate-sample`` and ``search`` are persisted and keyed by their
  ``cache_token`` (:func:`privgate.core.cache_keys.partitioned_tokens`: the input's sha256, the
  policy sections each reads, the hierarchy files, and for the sample which rows it is) and
  the task's source. Their results are values (a frequency set, a validated sample, a plan),
  nothing on disk that a crash could have removed, so a result found by its key is still the
  result: a retried run takes them ``Cached``.
* ``generalize-write`` is never cached: it writes into the run's own staging folder, which a
  failed run discards (and a crash leaves to the next run's sweep), so a remembered "written"
  would point at parts that are gone.
* ``verify-and-gate`` is never cached: the gate must read the parts *this* run wrote, every
  time.

The Dask flow (:mod:`privgate.flows.scale`) takes the same tasks uncached
(``dask_frequency_task``, ``dask_search_task``): its tasks run on cluster workers, possibly on
other machines, where a persisted result (private data) would outlive the run on a disk the
data owner's purge and retention rules (:mod:`privgate.core.retention`) do not reach.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from privgate.core.anonymize import SearchSetup
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import GateBlockedError
from privgate.core.gate import GateDecision
from privgate.core.policy import ReleasePolicy
from privgate.core.scale import (
    GeneralizationPlan,
    frequency_stage,
    partitioned_report,
    read_rows,
    reference_stage,
    search_with_loss,
    verify_stage,
    write_stage,
    write_text_synced,
)
from privgate.tasks._caching import stage_task
from privgate.tasks._progress import forward_progress
from privgate.validations.expectations import ExpectationSample
from privgate.validations.schema import validate_distinct_values, validate_input

__all__ = [
    "dask_frequency_task",
    "dask_search_task",
    "frequency_task",
    "partitioned_report_task",
    "search_task",
    "validate_sample_task",
    "verify_task",
    "write_task",
]


@contextlib.contextmanager
def _scheduler(cluster: bool) -> Iterator[None]:
    """The flow's dask cluster (``cluster``: a task of the Dask flow, on a worker), else
    dask's threads in this process (the partitioned path)."""
    if cluster:
        from prefect_dask import get_dask_client

        with get_dask_client():
            yield
    else:
        import dask

        with dask.config.set(scheduler="threads"):
            yield


@stage_task(name="frequency-set", timeout_seconds=7200)
def frequency_task(
    policy: ReleasePolicy,
    setup: SearchSetup,
    blocksize: str,
    cache_token: str | None = None,
    cluster: bool = False,
) -> tuple[FrequencySet, dict | None]:
    """The input's frequency set and the models' reference distribution, partition by
    partition (every row read, none held)."""
    with _scheduler(cluster):
        freq = frequency_stage(policy, setup, blocksize)
        reference = reference_stage(policy, setup, blocksize)
    get_run_logger().info(
        "frequency set: %d rows, %d distinct tuples", freq.table.n_rows, len(freq.counts)
    )
    return freq, reference


@stage_task(name="validate-sample", timeout_seconds=3600)
def validate_sample_task(
    policy: ReleasePolicy,
    setup: SearchSetup,
    freq: FrequencySet,
    sample: ExpectationSample | None,
    cache_token: str,
) -> pd.DataFrame:
    """The schema (pandera) on the rows the input suite runs on, read in one streamed pass:
    the seeded ``sample`` (``None``: every row); then the sensitive columns' values of every
    row, from the frequency set (a bad one outside the sample would be released as it is).
    Returns the validated rows; raises on an invalid input. ``freq`` and ``sample`` are left
    out of the key: ``cache_token`` stands for both."""
    n_rows = freq.table.n_rows
    positions = np.arange(n_rows) if sample is None else sample.rows
    frame = read_rows(policy.input, list(policy.columns), positions)
    validated = validate_input(frame, policy, setup.hierarchies)
    validate_distinct_values(
        {name: freq.table.sensitive_values[name] for name in setup.sensitive},
        policy,
        where=", among the sensitive values of every row",
    )
    get_run_logger().info(
        "validate: %d of %d rows match the policy schema%s",
        len(validated),
        n_rows,
        "" if sample is None else f" ({sample.describe('input')})",
    )
    return validated


@stage_task(name="search", timeout_seconds=3600)
def search_task(
    freq: FrequencySet, policy: ReleasePolicy, setup: SearchSetup, cache_token: str | None = None
) -> tuple[GeneralizationPlan, dict, dict]:
    """The lattice search on the frequency set, the plan, and the loss it implies
    (``freq`` is left out of the key: it is the frequency stage's result for the same
    token's input and sections)."""
    with forward_progress():
        plan, facts, loss = search_with_loss(freq, setup)
    get_run_logger().info(
        "search: %s chose %s; %d records suppressed, loss %.4f",
        facts["algorithm"],
        plan.levels,
        plan.suppressed,
        loss["total"],
    )
    return plan, facts, loss


@task(name="generalize-write", timeout_seconds=7200, cache_policy=NO_CACHE)
def write_task(
    plan: GeneralizationPlan,
    policy: ReleasePolicy,
    setup: SearchSetup,
    parts: Path,
    blocksize: str,
    shuffle_seed: int | None = None,
    cluster: bool = False,
) -> Path:
    """Generalize every partition and write the Parquet parts into ``parts`` (not cached:
    the folder belongs to this run's staging)."""
    with _scheduler(cluster):
        return write_stage(plan, policy, setup, parts, blocksize, shuffle_seed)


@task(name="verify-and-gate", timeout_seconds=7200, cache_policy=NO_CACHE)
def verify_task(
    parts: Path,
    setup: SearchSetup,
    input_rows: int,
    reference: dict | None = None,
    cluster: bool = False,
    expected_rows: int | None = None,
) -> GateDecision:
    """The gate on the written parts, every row read back (not the search's result; never
    cached). A blocked release fails this task itself (red in the UI, the reasons as its
    message) with :class:`GateBlockedError` carrying the decision; the flow writes the blocked
    report and discards the staging folder."""
    with _scheduler(cluster):
        decision = verify_stage(parts, setup, input_rows, reference, expected_rows)
    log = get_run_logger()
    (log.info if decision.passed else log.error)("gate: %s", decision.summary)
    if not decision.passed:
        raise GateBlockedError(f"gate blocked release {parts}: {decision.summary}", decision)
    return decision


@task(name="report", timeout_seconds=900, cache_policy=NO_CACHE)
def partitioned_report_task(manifest: dict, status: str, path: Path) -> Path:
    """Write the partitioned release's HTML report (from its manifest) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = write_text_synced(path, partitioned_report(manifest, status))
    get_run_logger().info("report: %s", written)
    return written


_UNCACHED = {"cache_policy": NO_CACHE, "persist_result": False}
#: The Dask flow's frequency and search stages: the same tasks, never persisted (see above).
dask_frequency_task = frequency_task.with_options(**_UNCACHED)
dask_search_task = search_task.with_options(**_UNCACHED)
