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

With ``--input FILE`` (a scaled Adult from ``../shared/tools/make_scaled_adult.py``, never in
the repository) each run publishes a release of that file instead (issue 18: `privgate run` at
1M and 10M rows); ``--modes running`` measures against a running server only, and every run's
peak RSS (GNU ``time``'s maximum resident set of the ``privgate run`` process, in which the
flow and every stage run; the server is a separate process started once) and the stages'
durations as the server recorded them are reported too. ``--skip-baseline-above ROWS`` leaves
the baseline out on larger inputs (when it does not fit in the time box).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _markdown import upsert_section  # noqa: E402 (script dir)
from cli_run import (  # noqa: E402
    GOALS,
    POLICY,
    _env,
    _last_run_phases,
    _start_server,
    _stop_server,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## privgate run before and after the run-time cuts, side by side (issue 17)"
SCALED_HEADING = "## `privgate run` at scale: columnar anonymize stage vs row engine (issue 18)"
#: GNU time: the peak RSS of the process it runs.
TIME = "/usr/bin/time"


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


#: Stop a run whose process tree holds more than this (GiB; ``--max-rss-gib``), so that a
#: measurement on a shared machine cannot take the others' memory. ``None``: no limit.
MAX_RSS_GIB: float | None = None


def _tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 for those already gone)."""
    total = 0
    with contextlib.suppress(psutil.Error):
        for p in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
    return total


def _one_run(
    checkout: Path, out: Path, date: str, env: dict[str, str], data: Path | None = None
) -> tuple[float, float, float, float]:
    """(wall seconds, CPU seconds of the whole process tree, peak RSS in GiB of the
    ``privgate run`` process (GNU time), peak RSS in GiB of its whole process tree (sampled
    every 0.2 s)) of one published release. A run stopped above ``MAX_RSS_GIB`` returns a wall
    time of ``nan`` and the tree's RSS when it was stopped."""
    privgate = str(checkout / ".venv" / "bin" / "privgate")
    command = [privgate, "run", POLICY, "--output", str(out), "--release-date", date]
    if data is not None:
        command += ["--input", str(data)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            [TIME, "-f", "peak-kib %M", *command], cwd=checkout, env=env,
            stdout=subprocess.DEVNULL, stderr=err, text=True, start_new_session=True,
        )  # fmt: skip
        watched, tree_peak, stopped = psutil.Process(process.pid), 0, False
        while process.poll() is None:
            tree_peak = max(tree_peak, _tree_rss(watched))
            if MAX_RSS_GIB is not None and tree_peak > MAX_RSS_GIB * 2**30:
                os.killpg(process.pid, signal.SIGKILL)
                stopped = True
            time.sleep(0.2)
        wall = time.perf_counter() - started
        err.seek(0)
        stderr = err.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if stopped:
        return float("nan"), cpu, float("nan"), tree_peak / 2**30
    if process.returncode != 0:
        raise SystemExit(f"{privgate} run failed ({process.returncode}):\n{stderr[-3000:]}")
    peak = int(stderr.rsplit("peak-kib ", 1)[1].split()[0]) / 2**20
    return wall, cpu, peak, tree_peak / 2**30


def _rows(data: Path | None) -> int:
    if data is None:
        return 30162
    with open(data, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b"")) - 1


def measure(
    baseline: Path,
    repeat: int,
    workdir: Path,
    data: Path | None = None,
    modes: tuple[str, ...] = ("temporary server", "running server"),
    skip_baseline_above: int | None = None,
) -> dict:
    checkouts = {"baseline": baseline.resolve(), "candidate": REPO_ROOT}
    env = _env(workdir)
    results: dict = {"load_before": os.getloadavg()[0], "rows": _rows(data)}
    names = ("baseline", "candidate")
    if skip_baseline_above is not None and results["rows"] > skip_baseline_above:
        names = ("candidate",)
    results["names"] = names
    runs: dict = {}
    phases: dict = {}
    loads: list[float] = []
    day = 0

    def alternate(mode: str, environment: dict[str, str], api: str | None = None) -> None:
        nonlocal day
        for i in range(repeat):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                day += 1
                out = workdir / "out" / f"{mode}-{name}-{i}"
                date = f"2026-0{1 + day // 28}-{1 + day % 28:02d}"
                loads.append(os.getloadavg()[0])
                runs.setdefault((mode, name), []).append(
                    _one_run(checkouts[name], out, date, environment, data)
                )
                shutil.rmtree(out, ignore_errors=True)  # a 10M release is ~0.8 GB
                if api is not None:
                    phases[(mode, name)] = _last_run_phases(api)

    # Warm the Prefect home (database created, migrations run) as a second-day user has it.
    _one_run(REPO_ROOT, workdir / "out" / "warm", "2025-12-31", env)
    if "temporary server" in modes:
        alternate("temporary server", env)
    if "running server" in modes:
        server, api = _start_server(workdir)
        try:
            alternate("running server", _env(workdir, api), api)
        finally:
            _stop_server(server)
    results["runs"] = runs
    results["phases"] = phases
    results["loads"] = loads
    results["modes"] = modes
    results["load_after"] = os.getloadavg()[0]
    results["commits"] = {name: _commit(path) for name, path in checkouts.items()}
    return results


def render_scaled(r: dict, repeat: int, data: Path, skip: int | None) -> str:
    """The scaled-input table: per checkout and mode, median wall, CPU, peak RSS, and the
    stages of the last run as the server recorded them."""
    command = (
        f".venv/bin/python benchmarks/cli_run_compare.py --baseline ../base --repeat {repeat} "
        f"--input {data} --modes running"
        + (f" --skip-baseline-above {skip}" if skip is not None else "")
        + (f" --max-rss-gib {MAX_RSS_GIB:g}" if MAX_RSS_GIB is not None else "")
        + " --write"
    )
    lines = [
        f"{SCALED_HEADING}, {r['rows']:,} rows",
        "",
        f"Machine: {os.cpu_count()} cores, 24 GiB; load average (1 min) {r['load_before']:.1f} "
        f"before, {r['load_after']:.1f} after, {min(r['loads']):.1f}-{max(r['loads']):.1f} at "
        f"the start of each run (shared with other engineers: the ratios are the "
        f"measurement). {repeat} run(s) per checkout, alternating; baseline "
        f"{r['commits']['baseline']} (anonymize stage on the row engine), candidate "
        f"{r['commits']['candidate']}. Policy `policies/adult.yaml` (k = 5, 2 %), input "
        f"`{data}` ({r['rows']:,} rows, `make_scaled_adult.py`).",
        "",
        "```bash",
        command,
        "```",
        "",
        "| mode | checkout | wall (s) | CPU (s) | peak RSS, privgate process (GiB) | "
        "peak RSS, process tree (GiB) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for mode in r["modes"]:
        for name in r["names"]:
            got = r["runs"][(mode, name)]
            wall = statistics.median(g[0] for g in got)
            cpu = statistics.median(g[1] for g in got)
            peak = max(g[2] for g in got)
            tree = max(g[3] for g in got)
            if math.isnan(wall):
                lines.append(
                    f"| {mode} | {name} | stopped | — | — | > {MAX_RSS_GIB:g} "
                    f"(stopped at {tree:.2f}) |"
                )
                continue
            lines.append(f"| {mode} | {name} | {wall:.1f} | {cpu:.1f} | {peak:.2f} | {tree:.2f} |")
    if len(r["names"]) == 2:
        for mode in r["modes"]:
            b = statistics.median(g[0] for g in r["runs"][(mode, "baseline")])
            c = statistics.median(g[0] for g in r["runs"][(mode, "candidate")])
            bp = max(g[2] for g in r["runs"][(mode, "baseline")])
            cp = max(g[2] for g in r["runs"][(mode, "candidate")])
            lines.append("")
            lines.append(f"{mode}: candidate / baseline wall {c / b:.2f}, peak RSS {cp / bp:.2f}.")
    for (mode, name), stages in sorted(r["phases"].items()):
        lines.append("")
        lines.append(f"Stages of the last {name} run ({mode}), seconds as the server recorded:")
        lines.append(
            ", ".join(f"{k.removeprefix('stage ')} {v:.1f}" for k, v in stages.items() if v >= 0.05)
        )
    lines.append("")
    return "\n".join(lines)


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
        bw, cw = statistics.median(g[0] for g in base), statistics.median(g[0] for g in cand)
        bc, cc = statistics.median(g[1] for g in base), statistics.median(g[1] for g in cand)
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
    parser.add_argument("--input", type=Path, help="a scaled input (outside the repository)")
    parser.add_argument("--modes", choices=["both", "running"], default="both")
    parser.add_argument("--skip-baseline-above", type=int, help="rows; candidate only above")
    parser.add_argument("--max-rss-gib", type=float, help="stop a run whose tree holds more")
    args = parser.parse_args()
    global MAX_RSS_GIB
    MAX_RSS_GIB = args.max_rss_gib
    modes = (
        ("running server",) if args.modes == "running" else ("temporary server", "running server")
    )
    workdir = Path(tempfile.mkdtemp(prefix="privgate-cli-compare-"))
    try:
        data = None if args.input is None else args.input.resolve()
        results = measure(args.baseline, args.repeat, workdir, data, modes,
                          args.skip_baseline_above)  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.input is None:
        text = render(results, args.repeat)
        heading = SECTION_HEADING
    else:
        text = render_scaled(results, args.repeat, args.input.resolve(), args.skip_baseline_above)
        heading = text.splitlines()[0]
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, heading, text)


if __name__ == "__main__":
    main()
