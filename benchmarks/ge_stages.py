"""Great Expectations' stages on Adult: this checkout against a baseline checkout, side by side.

What a release run pays for its two expectation suites and their Data Docs (issues 15 and 17),
measured without Prefect on the functions the tasks call: ``validate_input_expectations`` on
the validated Adult table, ``validate_release_expectations`` on its k = 5 release written to a
CSV file, and ``write_data_docs`` + the JSON report of both into a folder (as
``release-expectations`` writes them into the staging folder).

Each repeat is a fresh process per checkout, alternating (baseline, candidate, baseline, ...):

* **cold**: ``import great_expectations``, then each stage once, as ``privgate run`` pays them
  (one release per process);
* **warm**: the same stages again in that process, as every later flow run in a test process
  pays them (``make test`` runs about 60 Adult flow runs in two processes).

Wall and CPU seconds (this process's user + system time; the load distorts CPU less) per phase,
the median over repeats, and the candidate / baseline ratio. Run from the repository root with a
baseline checkout that has its own ``.venv``
(``git worktree add --detach ../base <commit> && make -C ../base install``)::

    .venv/bin/python benchmarks/ge_stages.py --baseline ../base --repeat 5 [--write]

With ``--flow-runs N`` each process instead runs the Adult release flow N times under Prefect's
test harness (as the test suite runs flows) and reports the two expectation tasks' run times as
the server recorded them, and the whole flow run's wall and CPU seconds (printed, not written).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _environment import load_average, machine  # noqa: E402 (script dir)
from _markdown import upsert_section  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## Great Expectations' stages on Adult, before and after (issues 15 and 17)"
PHASES = ["import", "input", "release", "docs"]


def _timed(phases: dict, name: str, call, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    result = call(*args, **kwargs)
    phases[name] = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    return result


def child(policy_path: str) -> dict:
    """One process: the stages cold (after importing GE), then warm; seconds per phase."""
    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup
    from privgate.core.policy import load_policy
    from privgate.validations.expectations import (
        report,
        validate_input_expectations,
        validate_release_expectations,
        write_data_docs,
    )
    from privgate.validations.schema import validate_input

    policy = load_policy(policy_path)
    setup = SearchSetup.from_policy(policy)
    hierarchies = setup.hierarchies
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    table = stages.anonymize(frame, setup)[-1]
    out: dict[str, dict] = {"cold": {}, "warm": {}}
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "release.csv"
        table.frame.to_csv(release, index=False)
        manifest = {
            "release_id": "bench",
            "input": {"rows": len(frame)},
            "output": {"rows": len(table.frame)},
            "transformation": table.result.levels or {},
        }
        _timed(out["cold"], "import", __import__, "great_expectations")
        for mode in ("cold", "warm"):
            phases = out[mode]
            summaries = [
                _timed(phases, "input", validate_input_expectations, frame, policy, hierarchies),
                _timed(
                    phases,
                    "release",
                    validate_release_expectations,
                    release,
                    policy,
                    hierarchies,
                    manifest,
                ),
            ]
            assert all(s["success"] for s in summaries)

            def docs(target: Path, summaries: list = summaries) -> None:
                write_data_docs(summaries, target / "data_docs")
                (target / "expectations.json").write_text(
                    json.dumps(report(summaries), indent=2, default=str), encoding="utf-8"
                )

            _timed(phases, "docs", docs, Path(tmp) / mode)
    return out


def flow_child(runs: int) -> list[dict]:
    """One process: the Adult release flow ``runs`` times; the expectation tasks' run times."""
    import datetime

    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.testing.utilities import prefect_test_harness
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def task_times(flow_run_id: str) -> dict[str, float]:
        async with get_client() as client:
            found = await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
            )
        return {
            t.name.rsplit("-", 1)[0]: t.total_run_time.total_seconds()
            for t in found
            if "expectations" in t.name
        }

    out = []
    with prefect_test_harness(server_startup_timeout=600), tempfile.TemporaryDirectory() as tmp:
        from privgate.flows.parameters import ReleaseParameters
        from privgate.flows.release import release_flow

        for i in range(runs):
            wall, cpu = time.perf_counter(), time.process_time()
            state = release_flow(
                ReleaseParameters(
                    policy_path=str(Path.cwd() / "policies" / "adult.yaml"),
                    release_date=datetime.date(2026, 1, 1 + i),
                    overrides={"output.directory": f"{tmp}/{i}"},
                ),
                return_state=True,
            )
            assert state.is_completed(), state
            out.append(
                {
                    "flow": {
                        "wall": time.perf_counter() - wall,
                        "cpu": time.process_time() - cpu,
                    },
                    "tasks": run_coro_as_sync(task_times(state.state_details.flow_run_id)),
                }
            )
    return out


def _flow_table(base: list[list[dict]], cand: list[list[dict]]) -> list[str]:
    """Run 1 of each process (Great Expectations imported in it) apart from the later runs."""
    lines = [
        "| run in the process | measure | baseline (s) | candidate (s) | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for label, pick in (("first", slice(0, 1)), ("later", slice(1, None))):
        for measure in ("input-expectations", "release-expectations", "flow wall", "flow CPU"):

            def values(processes: list[list[dict]], measure: str = measure, pick=pick) -> list:
                runs = [r for p in processes for r in p[pick]]
                if measure.startswith("flow"):
                    return [r["flow"]["wall" if measure == "flow wall" else "cpu"] for r in runs]
                return [r["tasks"][measure] for r in runs]

            b, c = statistics.median(values(base)), statistics.median(values(cand))
            lines.append(f"| {label} | {measure} | {b:.2f} | {c:.2f} | {c / b:.2f} |")
    return lines


def _run_child(checkout: Path, flow_runs: int = 0) -> dict | list:
    with tempfile.TemporaryDirectory(prefix="ge_stages_prefect_") as home:
        return _run_child_in(checkout, flow_runs, home)


def _run_child_in(checkout: Path, flow_runs: int, prefect_home: str) -> dict | list:
    env = {
        **os.environ,
        "PREFECT_HOME": prefect_home,  # a fresh one per process, never the user's
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "GX_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [
            str(checkout / ".venv" / "bin" / "python"),
            str(Path(__file__).resolve()),
            *(
                ["--flow-child", str(flow_runs)]
                if flow_runs
                else ["--child", str(checkout / "policies" / "adult.yaml")]
            ),
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict], mode: str, phase: str, kind: str) -> float:
    return statistics.median(r[mode][phase][kind] for r in runs if phase in r[mode])


def _table(base: list[dict], cand: list[dict]) -> list[str]:
    lines = [
        "| phase | baseline wall (s) | candidate wall (s) | wall ratio "
        "| baseline CPU (s) | candidate CPU (s) | CPU ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in ("cold", "warm"):
        rows = [p for p in PHASES if p in base[0][mode]]
        totals = {(c, k): 0.0 for c in ("b", "c") for k in ("wall", "cpu")}
        for phase in [*rows, "total"]:
            if phase == "total":
                b_wall, c_wall = totals["b", "wall"], totals["c", "wall"]
                b_cpu, c_cpu = totals["b", "cpu"], totals["c", "cpu"]
                label = f"**{mode}: all of the above**"
            else:
                b_wall, c_wall = (_median(r, mode, phase, "wall") for r in (base, cand))
                b_cpu, c_cpu = (_median(r, mode, phase, "cpu") for r in (base, cand))
                for key, value in (("b", b_wall), ("c", c_wall)):
                    totals[key, "wall"] += value
                for key, value in (("b", b_cpu), ("c", c_cpu)):
                    totals[key, "cpu"] += value
                label = f"{mode}: {phase}"
            lines.append(
                f"| {label} | {b_wall:.2f} | {c_wall:.2f} | {c_wall / b_wall:.2f} "
                f"| {b_cpu:.2f} | {c_cpu:.2f} | {c_cpu / b_cpu:.2f} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", metavar="POLICY", help=argparse.SUPPRESS)
    parser.add_argument("--flow-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--flow-runs", type=int, default=0, help="release flow runs per process")
    parser.add_argument("--baseline", type=Path, help="a checkout of the baseline commit")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    if args.flow_child:
        print(json.dumps(flow_child(args.flow_child)))
        return
    if args.baseline is None:
        parser.error("--baseline is required")
    baseline = args.baseline.resolve()
    before = load_average()
    base: list[dict] = []
    cand: list[dict] = []
    for i in range(args.repeat):
        base.append(_run_child(baseline, args.flow_runs))
        cand.append(_run_child(REPO_ROOT, args.flow_runs))
        print(f"repeat {i + 1}/{args.repeat} done", file=sys.stderr)
    after = load_average()
    if args.flow_runs:
        loads = ["/".join(f"{x:.2f}" for x in load) for load in (before, after)]
        print(f"load average {loads[0]} before, {loads[1]} after")
        print("\n".join(_flow_table(base, cand)))
        return

    def head(path: Path) -> str:
        return subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()

    text = "\n".join(
        [
            f"Machine: {machine(before, after, ('great-expectations', 'jinja2', 'pandas'))}. "
            f"Baseline `{head(baseline)}`, candidate `{head(REPO_ROOT)}`; "
            f"{args.repeat} fresh processes each, alternating; medians.",
            "",
            "```bash",
            f".venv/bin/python benchmarks/ge_stages.py --baseline {args.baseline} "
            f"--repeat {args.repeat} --write",
            "```",
            "",
            *_table(base, cand),
        ]
    )
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, SECTION_HEADING, text)


if __name__ == "__main__":
    main()
