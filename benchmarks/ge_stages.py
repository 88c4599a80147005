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


def _run_child(checkout: Path) -> dict:
    env = {
        **os.environ,
        "GX_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [
            str(checkout / ".venv" / "bin" / "python"),
            str(Path(__file__).resolve()),
            "--child",
            str(checkout / "policies" / "adult.yaml"),
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
    parser.add_argument("--baseline", type=Path, help="a checkout of the baseline commit")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    if args.baseline is None:
        parser.error("--baseline is required")
    baseline = args.baseline.resolve()
    before = load_average()
    base: list[dict] = []
    cand: list[dict] = []
    for i in range(args.repeat):
        base.append(_run_child(baseline))
        cand.append(_run_child(REPO_ROOT))
        print(f"repeat {i + 1}/{args.repeat} done", file=sys.stderr)
    after = load_average()

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
