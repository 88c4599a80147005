"""`privgate anonymize` on large CSVs, this checkout vs another, alternated (issue 18).

Why: the machine is shared, so a change to the command is told apart only side by side: the
same file, runs alternated (baseline, candidate, baseline, ...), each a fresh process measured
by :func:`scale_dask.measure` (wall seconds, CPU seconds of the process tree, peak resident
memory of the tree sampled every 50 ms, the command's own ``seconds:`` phases, its levels and
suppressed records). The load average is read before and after every run; CPU seconds are
the measure the load does not inflate. Each input's figures are held against issue 18's
targets for its size: at most 1/5 of ARX's wall time and 1/3 of its peak memory.

    .venv/bin/python benchmarks/anonymize_ab.py --input /tmp/c18/adult_1000000.csv \\
        /tmp/c18/adult_5000000.csv /tmp/c18/adult_10000000.csv --baseline ../wt-before \\
        --repeat 2 --write

``--baseline`` is another checkout (a worktree of the commit before a change); without it
only this checkout runs. ``--write`` replaces this script's section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _markdown import upsert_section  # noqa: E402 (script dir)
from scale_dask import measure  # noqa: E402 (script dir)

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "benchmarks" / "BENCHMARKS.md"
HEADING = (
    "## `privgate anonymize` at 1M, 5M and 10M rows against 1/5 of ARX's time and 1/3 of its "
    "memory (issue 18)"
)
#: ARX's wall seconds and peak GiB on scaled Adult (issue 18, this machine kind, at idle), as
#: (low, high) ranges; the targets are 1/5 of the time and 1/3 of the memory.
ARX = {
    1_000_000: ((15.0, 19.0), (0.7, 1.0)),
    5_000_000: ((40.0, 40.0), (2.4, 2.4)),
    10_000_000: ((60.0, 60.0), (4.1, 4.1)),
}
PHASES = ("start-up (imports, policy)", "read", "encode", "search", "write", "verify")


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    return done.stdout.strip() or "?"


def _row(label: str, run: int, r: dict, load: tuple[float, float]) -> str:
    phases = " | ".join(f"{r['phases'].get(p, {}).get('seconds', 0):.2f}" for p in PHASES)
    return (
        f"| {label} | {run} | {r['wall_seconds']:.1f} | {r['cpu_seconds']:.1f} | "
        f"{r['peak_gib']:.2f} | {phases} | {load[0]:.1f}-{load[1]:.1f} | "
        f"{'PASSED' if r['passed'] else 'BLOCKED'} |"
    )


def _span(bounds: tuple[float, float]) -> str:
    return f"{bounds[0]:g}" if bounds[0] == bounds[1] else f"{bounds[0]:g}-{bounds[1]:g}"


def _verdict(value: float, bounds: tuple[float, float], unit: str) -> str:
    low, high = bounds
    target = f"<= {_span(bounds)} {unit}"
    if value <= low:
        return f"{value:.2f} {unit}: holds ({target})"
    if value <= high:
        return f"{value:.2f} {unit}: holds against ARX's slower/larger figure only ({target})"
    return f"{value:.2f} {unit}: does NOT hold ({target})"


def _table(results: list, data: Path) -> list[str]:
    """One input's runs, their medians and its verdict against ARX."""
    head = "| checkout | run | wall (s) | CPU (s) | peak tree RSS (GiB) | " + " | ".join(
        f"{p} (s)" for p in PHASES
    )
    lines = [
        f"### `{data.name}`",
        "",
        head + " | load | gate |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(PHASES) + "---|---|",
    ]
    for label, run, r, load in results:
        lines.append(_row(label, run, r, load))
    lines.append("")
    labels = sorted({label for label, *_ in results}, key=lambda x: x != "baseline")
    for label in labels:
        rs = [r for lab, _, r, _ in results if lab == label]
        lines.append(
            f"- {label}: median wall {statistics.median(r['wall_seconds'] for r in rs):.1f} s, "
            f"CPU {statistics.median(r['cpu_seconds'] for r in rs):.1f} s, peak "
            f"{max(r['peak_gib'] for r in rs):.2f} GiB (largest); levels "
            f"{sorted({str(r['levels']) for r in rs})}, suppressed "
            f"{sorted({r['suppressed'] for r in rs})}."
        )
    ours = [r for lab, _, r, _ in results if lab == "candidate"]
    rows = ours[0].get("input_rows")
    loads = [x for *_, load in results for x in load]
    if rows in ARX:
        seconds, gib = ARX[rows]
        wall = statistics.median(r["wall_seconds"] for r in ours)
        peak = max(r["peak_gib"] for r in ours)
        lines.append(
            f"- Issue 18's targets at {rows:,} rows (ARX {_span(seconds)} s, {_span(gib)} "
            "GiB): time "
            + _verdict(wall, (seconds[0] / 5, seconds[1] / 5), "s")
            + "; memory "
            + _verdict(peak, (round(gib[0] / 3, 2), round(gib[1] / 3, 2)), "GiB")
            + f"; load average {min(loads):.1f}-{max(loads):.1f}"
            + (
                " (not idle: wall time is the load's as much as the command's)"
                if max(loads) > 1.5
                else ""
            )
            + "."
        )
    lines.append("")
    return lines


def section(results: dict, argv_text: str, baseline: Path | None) -> str:
    """The BENCHMARKS.md section of one invocation (``results``: per input, its runs)."""
    lines = [
        HEADING,
        "",
        f"Command (from the repository root): `{argv_text}`",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: nproc {os.cpu_count()}, "
        f"{platform.platform()}, Python {platform.python_version()}; load average (1 min) "
        "before-after each run in the tables (the machine is shared).",
        "- Policy `policies/adult.yaml` (8 QIs, k = 5, 2 %, optimal search). candidate: this "
        f"checkout ({_git('rev-parse', '--short', 'HEAD')}); baseline: "
        + (
            f"`{baseline}` ({_git('rev-parse', '--short', 'HEAD', cwd=baseline)})"
            if baseline
            else "none"
        )
        + "; runs alternated, baseline first; each a fresh process.",
        "- wall: the process; CPU: user + system of its process tree (the measure the load "
        "does not inflate); phases from its `seconds:` line (start-up = the rest of the wall).",
        "",
    ]
    for data, runs in results.items():
        lines.extend(_table(runs, data))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, nargs="+", required=True, help="one or more CSVs")
    ap.add_argument("--baseline", type=Path, help="another checkout, run alternated with this")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--write", action="store_true", help=f"update {BENCHMARKS_MD.name}")
    a = ap.parse_args(argv)
    kinds = [("baseline", "cli-anonymize-baseline")] if a.baseline else []
    kinds.append(("candidate", "cli-anonymize"))
    results: dict[Path, list] = {}
    for data in a.input:
        runs = results.setdefault(data, [])
        for run in range(1, a.repeat + 1):
            for label, kind in kinds:
                before = os.getloadavg()[0]
                r = measure(kind, data, "64MB", a.baseline)
                load = (before, os.getloadavg()[0])
                runs.append((label, run, r, load))
                print(f"{data.name}: " + _row(label, run, r, load), flush=True)
    argv_text = ".venv/bin/python benchmarks/anonymize_ab.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = section(results, argv_text, a.baseline)
    print(text)
    if a.write:
        upsert_section(BENCHMARKS_MD, HEADING, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
