"""The release report's cost on Adult, this checkout against a baseline checkout (issues 15, 17).

Every release run writes ``report.html`` (the report stage of ``privgate run``), and so do the
report tests and every Adult flow run in the suite. This measures what a fresh process pays for
it: import :mod:`privgate.core.report`, render the Adult report and write it, then render and
write it again (what each later flow run of a test process pays), in alternation (baseline,
candidate, candidate, baseline, ...), each in its own fresh process so that imports count, and
reports per checkout the median wall time of the whole process and of its parts.

The report is built once (ARX Adult, k = 5 with 2 % suppression, distinct 2-diversity and
0.3-closeness on ``salary-class``, two classifiers and two clusterings: the report tests'
release) with this checkout and pickled; both checkouts render the same object, so only the
rendering differs. With ``--pytest`` it also runs the report test files in each checkout
(niced, alternating) and reports their durations; with ``--run`` it runs ``privgate run
policies/adult.yaml`` from each checkout against one running Prefect server (alternating, as
``cli_run_compare.py`` does) and reports the report stage as the server recorded it.

Run from the repository root, with a baseline checkout that has its own ``.venv``
(``git worktree add --detach ../base <commit> && make -C ../base install``)::

    .venv/bin/python benchmarks/report_render.py --baseline ../base --repeat 5 [--pytest 1] \\
        [--write]
"""

from __future__ import annotations

import argparse
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _environment import BENCHMARKS_MD, REPO_ROOT, load_average, machine  # noqa: E402
from _markdown import upsert_section  # noqa: E402 (script dir)

SECTION_HEADING = (
    "## The HTML report's cost: inline SVG vs matplotlib, side by side (issues 15, 17)"
)
#: The report tests, whose first render paid matplotlib's import and eight figures.
TEST_FILES = ("tests/core/report/test_release_report.py", "tests/tasks/test_report.py")
#: What one timed process runs: import, then render and write the pickled report.
RENDER = """
import pickle, sys, time
start = time.perf_counter()
from privgate.core.report import write_report
imported = time.perf_counter()
with open(sys.argv[1], "rb") as handle:
    report = pickle.load(handle)
loaded = time.perf_counter()
path = write_report(report, sys.argv[2])
done = time.perf_counter()
write_report(report, sys.argv[2])
again = time.perf_counter()
print(imported - start, done - loaded, again - done, path.stat().st_size)
"""


def adult_report():
    """The report tests' Adult release as :func:`privgate.core.report.build_report` makes it."""
    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup
    from privgate.core.policy import load_policy
    from privgate.core.report import build_report
    from privgate.core.utility import check_utility, measure_utility
    from privgate.validations.schema import validate_input

    policy = load_policy(REPO_ROOT / "policies" / "adult.yaml").with_overrides(
        **{
            "utility": {
                "target": "salary-class",
                "models": ["svm", "random_forest"],
                "sample_size": 1500,
                "cv_folds": 3,
                "clusters": [3, 5],
                "clustering": ["kmeans"],
                "thresholds": {"min_auc_ratio": 0.5, "max_loss": 0.8},
            },
            "privacy.l_diversity": [{"column": "salary-class", "l": 2}],
            "privacy.t_closeness": [{"column": "salary-class", "t": 0.3}],
        }
    )
    hierarchies = stages.load_hierarchies(policy)
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    setup = SearchSetup.from_policy(policy, hierarchies)
    [table] = stages.anonymize(frame, setup)
    utility = measure_utility(frame, table.frame, policy, hierarchies, levels=table.result.levels)
    return build_report(
        status="published",
        policy=policy,
        release_id="2026-11-22-0123456789ab",
        original=frame,
        table=table,
        privacy_decision=stages.verify(table.frame, setup, len(frame)),
        utility=utility,
        utility_decision=check_utility(utility, policy.utility.thresholds),
        hierarchies=hierarchies,
        run={"run_id": "benchmark"},
    )


def _commit(checkout: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h"], capture_output=True, text=True
    )
    return out.stdout.strip()


def _render(checkout: Path, pickled: Path, out: Path) -> tuple[float, float, float, float, int]:
    """(process wall, import, first render + write, second render + write in the same
    process, file bytes) of one fresh process."""
    start = time.perf_counter()
    done = subprocess.run(
        [str(checkout / ".venv" / "bin" / "python"), "-c", RENDER, str(pickled), str(out)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    imported, first, second, size = done.stdout.split()
    return wall, float(imported), float(first), float(second), int(size)


def _pytest(checkout: Path, test_file: str) -> tuple[float, float]:
    """(wall of the niced pytest process, the file's slowest setup) for one test file."""
    start = time.perf_counter()
    done = subprocess.run(
        ["nice", "-n", "10", str(checkout / ".venv" / "bin" / "python"), "-m", "pytest", "-q",
         "-p", "no:randomly", "--durations=20", test_file],
        cwd=checkout, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{test_file} failed in {checkout}:\n{done.stdout[-2000:]}")
    setups = [float(s) for s in re.findall(r"^([\d.]+)s setup", done.stdout, flags=re.M)]
    return wall, max(setups, default=0.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="baseline checkout")
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per checkout")
    parser.add_argument("--pytest", type=int, default=0, help="runs of each report test file")
    parser.add_argument("--run", type=int, default=0, help="privgate runs per checkout")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args(argv)
    checkouts = {"baseline": args.baseline.resolve(), "candidate": REPO_ROOT}
    load_before = load_average()
    runs: dict[str, list[tuple[float, float, float, float, int]]] = {k: [] for k in checkouts}
    with tempfile.TemporaryDirectory(prefix="privgate-report-bench-") as tmp:
        pickled = Path(tmp) / "adult-report.pickle"
        pickled.write_bytes(pickle.dumps(adult_report()))
        for i in range(args.repeat):
            order = list(checkouts) if i % 2 == 0 else list(checkouts)[::-1]
            for name in order:
                runs[name].append(_render(checkouts[name], pickled, Path(tmp) / f"{name}.html"))
                print(name, *(f"{v:.3f}" for v in runs[name][-1][:4]), flush=True)
    tests: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for i in range(args.pytest):
        for test_file in TEST_FILES:
            order = list(checkouts) if i % 2 == 0 else list(checkouts)[::-1]
            for name in order:
                tests.setdefault((name, test_file), []).append(_pytest(checkouts[name], test_file))
                print(
                    name, test_file, *(f"{v:.1f}" for v in tests[name, test_file][-1]), flush=True
                )
    stages = _run_stages(checkouts, args.run) if args.run else {}
    load_after = load_average()
    text = _section(args, checkouts, runs, tests, load_before, load_after)
    text += _stage_table(stages)
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, SECTION_HEADING, text)


def _run_stages(checkouts: dict[str, Path], repeat: int) -> dict[str, list[tuple]]:
    """Per checkout: (wall, CPU seconds, report stage, flow run) of each ``privgate run``
    against one running server, the stages as the server recorded them."""
    import shutil

    from cli_run import _env, _last_run_phases, _start_server, _stop_server
    from cli_run_compare import _one_run

    out: dict[str, list[tuple]] = {name: [] for name in checkouts}
    work = Path(tempfile.mkdtemp(prefix="privgate-report-run-"))
    try:
        _one_run(REPO_ROOT, work / "out" / "warm", "2025-12-31", _env(work))  # Prefect home
        server, api = _start_server(work)
        try:
            for i in range(repeat):
                order = list(checkouts) if i % 2 == 0 else list(checkouts)[::-1]
                for j, name in enumerate(order):
                    date = f"2026-02-{1 + 2 * i + j:02d}"
                    wall, cpu, *_ = _one_run(checkouts[name], work / "out" / f"{name}-{i}",
                                             date, _env(work, api))  # fmt: skip
                    phases = _last_run_phases(api)
                    out[name].append((wall, cpu, phases["stage report"], phases["flow run"]))
                    print(name, *(f"{v:.2f}" for v in out[name][-1]), flush=True)
        finally:
            _stop_server(server)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _stage_table(stages: dict[str, list[tuple]]) -> str:
    if not stages:
        return ""
    lines = [
        "",
        f"`privgate run policies/adult.yaml` against one running Prefect server, "
        f"{len(stages['baseline'])} runs per checkout, alternating (`--run`); medians:",
        "",
        "| privgate run | baseline (s) | candidate (s) | candidate / baseline |",
        "|---|---:|---:|---:|",
    ]
    for i, label in enumerate(("wall", "CPU (process tree)", "stage report (server)",
                               "flow run (server)")):  # fmt: skip
        b = _median(r[i] for r in stages["baseline"])
        c = _median(r[i] for r in stages["candidate"])
        lines.append(f"| {label} | {b:.2f} | {c:.2f} | {c / b:.2f} |")
    return "\n".join(lines) + "\n"


def _median(values) -> float:
    return statistics.median(values)


def _section(args, checkouts, runs, tests, load_before, load_after) -> str:
    med = {
        name: [_median(r[i] for r in rows) for i in range(4)] + [rows[0][4]]
        for name, rows in runs.items()
    }
    base, cand = med["baseline"], med["candidate"]
    lines = [
        SECTION_HEADING,
        "",
        f"Machine: {machine(load_before, load_after)}. Baseline {_commit(checkouts['baseline'])}"
        f" (matplotlib figures, base64 PNG), candidate {_commit(checkouts['candidate'])} "
        f"(inline SVG); {args.repeat} fresh processes per checkout, alternating.",
        "",
        "```bash",
        f".venv/bin/python benchmarks/report_render.py --baseline {args.baseline} "
        f"--repeat {args.repeat}"
        + (f" --pytest {args.pytest}" if args.pytest else "")
        + (f" --run {args.run}" if args.run else "")
        + " --write",
        "```",
        "",
        "| median of a fresh process | baseline (s) | candidate (s) | candidate / baseline |",
        "|---|---:|---:|---:|",
    ]
    for i, label in enumerate(
        ("whole process (interpreter, import, first render, write, second render, write)",
         "import privgate.core.report", "first render + write report.html",
         "second render + write in the same process (a later flow run in a test process)")
    ):  # fmt: skip
        lines.append(f"| {label} | {base[i]:.3f} | {cand[i]:.3f} | {cand[i] / base[i]:.3f} |")
    lines.append(f"| size of report.html (bytes) | {base[4]:,} | {cand[4]:,} | "
                 f"{cand[4] / base[4]:.2f} |")  # fmt: skip
    if tests:
        lines += [
            "",
            "| report test file (niced, `--durations=20`) | baseline wall (s) | candidate wall "
            "(s) | ratio | baseline slowest setup (s) | candidate slowest setup (s) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for test_file in TEST_FILES:
            b = [_median(v[i] for v in tests["baseline", test_file]) for i in range(2)]
            c = [_median(v[i] for v in tests["candidate", test_file]) for i in range(2)]
            lines.append(
                f"| `{test_file}` | {b[0]:.1f} | {c[0]:.1f} | {c[0] / b[0]:.2f} | {b[1]:.1f} | "
                f"{c[1]:.1f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
