"""`privgate run` on Adult, this checkout against a baseline checkout, side by side (issue 17).

On a shared machine the load changes from minute to minute, so absolute seconds from two
sessions say little. This runs the same command from two checkouts in alternation (baseline,
candidate, baseline, candidate, ...), each in a fresh process with the same warm Prefect home,
and reports per mode the median wall time of each, their ratio, and the CPU seconds each run
used (its whole process tree, the temporary server included), which the load distorts less
than wall time. Modes: Prefect's temporary server (no ``PREFECT_API_URL``) and a running server
(one server, started once, serving both).

Run from the repository root, with a baseline checkout that has its own ``.venv``
(``git worktree add --detach ../base <commit> && make -C ../base install``)::

    .venv/bin/python benchmarks/cli_run_compare.py --baseline ../base --repeat 3 [--write]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _markdown import upsert_section  # noqa: E402 (script dir)
from cli_run import GOALS, POLICY, _env, _start_server, _stop_server  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## privgate run before and after the run-time cuts, side by side (issue 17)"


def _commit(checkout: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def _one_run(checkout: Path, out: Path, date: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process tree) of one published release."""
    privgate = str(checkout / ".venv" / "bin" / "privgate")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [privgate, "run", POLICY, "--output", str(out), "--release-date", date],
        cwd=checkout, env=env, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{privgate} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(baseline: Path, repeat: int, workdir: Path) -> dict:
    checkouts = {"baseline": baseline.resolve(), "candidate": REPO_ROOT}
    env = _env(workdir)
    results: dict = {"load_before": os.getloadavg()[0]}
    runs: dict = {}
    day = 0

    def alternate(mode: str, environment: dict[str, str]) -> None:
        nonlocal day
        for i in range(repeat):
            order = ("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")
            for name in order:
                day += 1
                out = workdir / "out" / f"{mode}-{name}-{i}"
                date = f"2026-0{1 + day // 28}-{1 + day % 28:02d}"
                runs.setdefault((mode, name), []).append(
                    _one_run(checkouts[name], out, date, environment)
                )

    # Warm the Prefect home (database created, migrations run) as a second-day user has it.
    _one_run(REPO_ROOT, workdir / "out" / "warm", "2025-12-31", env)
    alternate("temporary server", env)
    server, api = _start_server(workdir)
    try:
        alternate("running server", _env(workdir, api))
    finally:
        _stop_server(server)
    results["runs"] = runs
    results["load_after"] = os.getloadavg()[0]
    results["commits"] = {name: _commit(path) for name, path in checkouts.items()}
    return results


def render(r: dict, repeat: int) -> str:
    lines = [
        SECTION_HEADING,
        "",
        f"Machine: {os.cpu_count()} cores, load average {r['load_before']:.1f} before and "
        f"{r['load_after']:.1f} after (shared by several engineers: the absolute seconds are "
        f"inflated, the ratios are the measurement). {repeat} runs per checkout and mode, "
        f"alternating; baseline {r['commits']['baseline']}, candidate "
        f"{r['commits']['candidate']}. Each run publishes a fresh release of ARX Adult, k = 5.",
        "",
        "```bash",
        ".venv/bin/python benchmarks/cli_run_compare.py --baseline ../base "
        f"--repeat {repeat} --write",
        "```",
        "",
        "| mode | baseline wall (s) | candidate wall (s) | candidate / baseline | "
        "baseline CPU (s) | candidate CPU (s) | CPU ratio | goal |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for mode in ("temporary server", "running server"):
        base = r["runs"][(mode, "baseline")]
        cand = r["runs"][(mode, "candidate")]
        bw, cw = statistics.median(w for w, _ in base), statistics.median(w for w, _ in cand)
        bc, cc = statistics.median(c for _, c in base), statistics.median(c for _, c in cand)
        lines.append(
            f"| {mode} | {bw:.1f} | {cw:.1f} | {cw / bw:.2f} | {bc:.1f} | {cc:.1f} | "
            f"{cc / bc:.2f} | ≤ {GOALS[mode]:g} s wall |"
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, type=Path, help="baseline checkout")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="privgate-cli-compare-"))
    try:
        results = measure(args.baseline, args.repeat, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    text = render(results, args.repeat)
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, SECTION_HEADING, text)


if __name__ == "__main__":
    main()
