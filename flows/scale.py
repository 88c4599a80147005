"""The release on dask: frequency set -> search -> generalize + write -> verify -> publish.

For tables larger than one machine's memory. Every task runs on a dask cluster through
prefect-dask's :class:`DaskTaskRunner` (a local cluster of ``n_workers`` processes by default,
or an existing scheduler given by ``scheduler_address``); the tasks that touch rows
(frequency set, generalize + write, verify) fan their partitions out over the same cluster
with :func:`prefect_dask.get_dask_client`, and only the lattice search runs on one worker, on
the merged frequency set. The release is a folder of Parquet parts, published (renamed into
place) only once the gate passed on the parts as written. See :mod:`privgate.core.scale`.

Run it as a script (the ``__main__`` guard matters: the local cluster's worker processes
re-import this module)::

    .venv/bin/python -m privgate.flows.scale policies/adult.yaml /tmp/adult_release --k 5
    .venv/bin/python -m privgate.flows.scale POLICY OUT --scheduler-address tcp://10.0.0.5:8786
    .venv/bin/python -m privgate.flows.scale policies/adult.yaml OUT --input /tmp/s100/parts

A folder of Parquet part files (or a glob of them) as ``--input`` is read as Parquet, one
partition per part (:func:`privgate.core.scale.input_overrides`): the form a table of 100M
rows comes in (``python -m privgate.core.scaled_adult ROWS FOLDER`` writes scaled Adult so).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from prefect import flow
from prefect_dask import DaskTaskRunner

from privgate.core.exceptions import PrivgateError
from privgate.core.publish import staging_owner, sweep_stale_files
from privgate.core.scale import input_overrides, publish_stage, scale_setup
from privgate.flows.policy_overrides import resolve_policy
from privgate.tasks.results import ensure_result_storage
from privgate.tasks.scale import dask_frequency_task, dask_search_task, verify_task, write_task

__all__ = ["make_task_runner", "run_scale_release", "scale_release_flow"]


def make_task_runner(
    scheduler_address: str | None = None, n_workers: int = 2, memory_limit: str = "auto"
) -> DaskTaskRunner:
    """A runner on an existing scheduler, or on a new local cluster of ``n_workers``
    single-threaded worker processes (the pandas/numpy work in a partition holds the GIL)."""
    if scheduler_address:
        return DaskTaskRunner(address=scheduler_address)
    return DaskTaskRunner(
        cluster_kwargs={
            "n_workers": n_workers,
            "threads_per_worker": 1,
            "processes": True,
            "memory_limit": memory_limit,
            "dashboard_address": None,
        }
    )


@flow(name="privgate-scale-release", task_runner=make_task_runner())
def scale_release_flow(
    policy_path: str,
    output: str,
    k: int | None = None,
    suppression_limit: float | None = None,
    input_path: str | None = None,
    blocksize: str = "64MB",
    shuffle_seed: int | None = None,
) -> dict:
    """Anonymize the policy's input on the flow's dask cluster into the Parquet folder
    ``output`` (which must not exist). Returns the gate's decision, levels and search facts.

    Raises ``GateBlockedError`` when the gate blocks the written release: the verify-and-gate
    task fails, so does the flow run, and nothing is published (the CLI exits 3).
    """
    overrides = input_overrides(input_path) if input_path is not None else None
    policy = resolve_policy(policy_path, k, suppression_limit, overrides)
    out = Path(output)
    if out.exists():
        raise FileExistsError(f"release folder already exists: {out}")
    # The tasks persist nothing here, but Prefect resolves every task's result storage block
    # when the task starts: on a server where no release flow ran yet it was missing, and
    # every task of this flow failed with "Unable to find block document".
    ensure_result_storage()
    out.parent.mkdir(parents=True, exist_ok=True)
    # named after its owner: one a killed run left is removed by the next (sweep_stale_files)
    staging = out.with_name(f".{out.name}.{staging_owner()}.tmp")
    sweep_stale_files(out.parent, f".{out.name}.", ".tmp")

    setup = scale_setup(policy)  # every task on the cluster (submitted), none cached
    on_cluster = {"cluster": True}  # the tasks' dask work on the flow's cluster
    freq, reference = dask_frequency_task.submit(policy, setup, blocksize, **on_cluster).result()
    plan, facts, _ = dask_search_task.submit(freq, policy, setup).result()
    n_rows = freq.table.n_rows
    try:
        write_task.submit(
            plan, policy, setup, staging, blocksize, shuffle_seed, **on_cluster
        ).result()
        decision = verify_task.submit(
            staging, setup, n_rows, reference, expected_rows=n_rows - plan.suppressed, **on_cluster
        ).result()
    except BaseException:  # a blocked gate (its task failed), or a failed write
        shutil.rmtree(staging, ignore_errors=True)
        raise
    publish_stage(staging, out, decision)
    return {
        "output": str(out),
        "passed": decision.passed,
        "gate": decision.to_dict(),
        "levels": plan.levels,
        "input_rows": freq.table.n_rows,
        "suppressed": plan.suppressed,
        "search": {key: value for key, value in facts.items() if key != "algorithm"},
    }


def run_scale_release(
    policy_path: str,
    output: str,
    *,
    scheduler_address: str | None = None,
    n_workers: int = 2,
    **parameters,
) -> dict:
    """Run :func:`scale_release_flow` on an existing scheduler or on a new local cluster."""
    runner = make_task_runner(scheduler_address, n_workers)
    return scale_release_flow.with_options(task_runner=runner)(policy_path, output, **parameters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy")
    parser.add_argument("output", help="release folder (Parquet parts); must not exist")
    parser.add_argument("--k", type=int)
    parser.add_argument("--suppression-limit", type=float)
    parser.add_argument(
        "--input",
        dest="input_path",
        help="another input: a CSV file, or Parquet (a folder of part files, a .parquet "
        "file or a glob such as 'parts/*.parquet')",
    )
    parser.add_argument("--blocksize", default="64MB")
    parser.add_argument("--scheduler-address", help="an existing dask scheduler (tcp://...)")
    parser.add_argument("--workers", type=int, default=2, help="local cluster size")
    a = parser.parse_args(argv)
    try:
        result = run_scale_release(
            a.policy,
            a.output,
            scheduler_address=a.scheduler_address,
            n_workers=a.workers,
            k=a.k,
            suppression_limit=a.suppression_limit,
            input_path=a.input_path,
            blocksize=a.blocksize,
        )
    except PrivgateError as exc:  # a refusal: one line and its exit code (3: blocked)
        print(f"privgate: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"gate: {'PASSED' if result['passed'] else 'BLOCKED'}; release: {result['output']}")
    return 0 if result["passed"] else 3


if __name__ == "__main__":
    sys.exit(main())
