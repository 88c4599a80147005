"""`privgate anonymize` on one large CSV, this checkout vs another, alternated (issue 18).

Why: the machine is shared, so a change to the command is told apart only side by side: the
same file, runs alternated (baseline, candidate, baseline, ...), each a fresh process measured
by :func:`scale_dask.measure` (wall seconds, CPU seconds of the process tree, peak resident
memory of the tree sampled every 50 ms, the command's own ``seconds:`` phases, its levels and
suppressed records). The load average is read before and after every run; CPU seconds are
the measure the load does not inflate.

    .venv/bin/python benchmarks/anonymize_ab.py --input /tmp/c18/adult_10000000.csv \
        --baseline ../wt-before --repeat 2 --write

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
HEADING = "## `privgate anonymize` on 10M rows, side by side with the commit before (issue 18)"
#: Issue 18's target for `privgate anonymize` on 10M rows at idle.
TARGET_SECONDS, TARGET_GIB = 12.0, 1.4
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


def section(results: list, argv_text: str, data: Path, baseline: Path | None) -> str:
    """The BENCHMARKS.md section of one invocation."""
    labels = sorted({label for label, *_ in results}, key=lambda x: x != "baseline")
    head = "| checkout | run | wall (s) | CPU (s) | peak tree RSS (GiB) | " + " | ".join(
        f"{p} (s)" for p in PHASES
    )
    lines = [
        HEADING,
        "",
        f"Command (from the repository root): `{argv_text}`",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: nproc {os.cpu_count()}, "
        f"{platform.platform()}, Python {platform.python_version()}; load average (1 min) "
        "before-after each run in the table (the machine is shared).",
        f"- Input `{data}`; policy `policies/adult.yaml` (8 QIs, k = 5, 2 %, optimal search). "
        f"candidate: this checkout ({_git('rev-parse', '--short', 'HEAD')}); baseline: "
        + (
            f"`{baseline}` ({_git('rev-parse', '--short', 'HEAD', cwd=baseline)})"
            if baseline
            else "none"
        )
        + "; runs alternated, baseline first; each a fresh process.",
        "- wall: the process; CPU: user + system of its process tree (the measure the load "
        "does not inflate); phases from its `seconds:` line (start-up = the rest of the wall).",
        "",
        head + " | load | gate |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(PHASES) + "---|---|",
    ]
    for label, run, r, load in results:
        lines.append(_row(label, run, r, load))
    lines.append("")
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
    wall = statistics.median(r["wall_seconds"] for r in ours)
    peak = max(r["peak_gib"] for r in ours)
    loads = [x for *_, load in results for x in load]
    lines.append(
        f"- Issue 18's target for this command on 10M rows (<= {TARGET_SECONDS:g} s wall and "
        f"<= {TARGET_GIB:g} GiB at idle): {'holds' if wall <= TARGET_SECONDS else 'does NOT hold'}"
        f" for time ({wall:.1f} s), {'holds' if peak <= TARGET_GIB else 'does NOT hold'} for "
        f"memory ({peak:.2f} GiB), at a load average of {min(loads):.1f}-{max(loads):.1f}"
        + (
            " (not idle: wall time is the load's as much as the command's)"
            if max(loads) > 1.5
            else ""
        )
        + "."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, required=True)
    ap.add_argument("--baseline", type=Path, help="another checkout, run alternated with this")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--write", action="store_true", help=f"update {BENCHMARKS_MD.name}")
    a = ap.parse_args(argv)
    kinds = [("baseline", "cli-anonymize-baseline")] if a.baseline else []
    kinds.append(("candidate", "cli-anonymize"))
    results = []
    for run in range(1, a.repeat + 1):
        for label, kind in kinds:
            before = os.getloadavg()[0]
            r = measure(kind, a.input, "64MB", a.baseline)
            load = (before, os.getloadavg()[0])
            results.append((label, run, r, load))
            print(_row(label, run, r, load), flush=True)
    argv_text = ".venv/bin/python benchmarks/anonymize_ab.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = section(results, argv_text, a.input, a.baseline)
    print(text)
    if a.write:
        upsert_section(BENCHMARKS_MD, HEADING, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
