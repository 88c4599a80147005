"""The optimal-vs-ARX benchmark's section of BENCHMARKS.md: tables, the reading of the figures,
the machine and the code state.

Part of ``benchmarks/optimal_vs_arx.py`` (run that script).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import _environment as environment
import numpy as np
from _markdown import upsert_section as _upsert
from _optimal_adult import (
    ARX_1M_PEAK_GIB,
    ARX_1M_S,
    ARX_COLD_PROCESS_S,
    ARX_GRANULARITY_K5_2PCT,
    ARX_MS,
    CELL_FACTOR,
    ISSUE_FIRST_RUN_MS,
    MONDRIAN_K,
    PHASES,
    QIS,
    REPO_ROOT,
    SCRIPT,
    SUM_FACTOR,
    TARGET_1M_GIB,
    TARGET_1M_S,
    Adult,
    pct,
)
from _optimal_arx import ArxRuns
from _optimal_processes import ChildSeries
from _optimal_search import Cell, MondrianComparison, Scan

BENCHMARKS_MD = environment.BENCHMARKS_MD
SECTION_HEADING = "## Optimal full-domain search vs ARX (issue 3)"
INTRO = """# Benchmarks

How benchmarks are run: every result is reported as a ratio against a baseline measured in the
same process, on the same machine and data, in the same run, so that machine speed cancels out.
Each section lists the exact command that produced it (run from the repository root), the date
and the machine. Timings are medians of repeated runs and are never asserted in tests: tests
check behaviour, benchmarks report speed and utility.
"""


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------


def _levels(levels: Sequence[int]) -> str:
    return "/".join(str(v) for v in levels)


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def session_ms(adult: Adult, cells: Sequence[Cell]) -> float:
    """The ten cells on one table: encoding once plus every cell's search (medians)."""
    return 1000.0 * statistics.median(adult.session_encode_s) + sum(c.session_ms for c in cells)


def search_table(adult: Adult, cells: Sequence[Cell]) -> str:
    lines = [
        "| k | suppr. | ARX (ms) | first run: encode + bounds + search (ms) | ARX / first run "
        f"| >= {CELL_FACTOR:g}x | ten cells on one table: this cell (ms) | ARX / that "
        f"| >= {CELL_FACTOR:g}x | warm search (ms) | ARX / warm search | run spread "
        "| candidates after bounds | evaluated |",
        "|---:|---:|---:|---:|---:|:---:|---:|---:|:---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.k} | {pct(c.limit)} | {c.arx_ms:.0f} | {c.first_run_ms:.1f} "
            f"| {c.first_run_speedup:.2f}x | {_yes(c.holds_first_run)} | {c.session_ms:.1f} "
            f"| {c.arx_ms / c.session_ms:.2f}x | {_yes(c.arx_ms / c.session_ms >= CELL_FACTOR)} "
            f"| {c.median_ms:.1f} | {c.speedup:.1f}x | {c.spread:.2f} "
            f"| {c.result.details['candidates_after_bounds']} | {c.result.details['evaluated']} |"
        )
    arx_sum = sum(c.arx_ms for c in cells)
    first_sum = sum(c.first_run_ms for c in cells)
    session = session_ms(adult, cells)
    warm_sum = sum(c.median_ms for c in cells)
    lines.append(
        f"| **sum** | | {arx_sum:.0f} | {first_sum:.0f} | {arx_sum / first_sum:.2f}x "
        f"| >= {SUM_FACTOR:g}x: {_yes(arx_sum / first_sum >= SUM_FACTOR)} "
        f"| {session:.0f} (encoding once: "
        f"{1000 * statistics.median(adult.session_encode_s):.0f}) | {arx_sum / session:.2f}x "
        f"| >= {SUM_FACTOR:g}x: {_yes(arx_sum / session >= SUM_FACTOR)} | {warm_sum:.0f} "
        f"| {arx_sum / warm_sum:.1f}x | | | |"
    )
    return "\n".join(lines)


def _encode_ms(adult: Adult) -> float:
    """``encode_table`` + ``frequency_set``, warm medians (ms)."""
    return 1000 * (statistics.median(adult.encode_only_s) + statistics.median(adult.freq_only_s))


def _scan_text(cell: Cell, scan: Scan | None) -> str:
    if scan is None:
        return "not run"
    best = scan.best[(cell.k, cell.limit)]
    if best.node == cell.levels() and abs(best.loss - cell.loss) <= 1e-9:
        return "= optimum"
    if abs(best.loss - cell.loss) <= 1e-9:
        return f"tie at {_levels(best.node)}"
    return f"**scan better: {_levels(best.node)} loss {best.loss:.4f}**"


def _bands_text(cell: Cell, scan: Scan | None) -> str:
    if scan is None:
        return "-"
    if cell.levels()[QIS.index("age")] <= 3:
        return "(optimum keeps them)"
    cand = scan.best_age_bands.get((cell.k, cell.limit))
    if cand is None:
        return "none satisfies"
    return f"{_levels(cand.node)}: {1 - cand.loss:.4f}"


def _arx_text(cell: Cell, scan: Scan | None) -> str:
    if cell.arx_levels is None:
        return "not run"
    if cell.arx_levels == cell.levels():
        return f"same node, {cell.arx_suppressed} suppressed"
    ours = None if scan is None else scan.losses.get((cell.k, cell.limit), {}).get(cell.arx_levels)
    there = "" if ours is None else f"; our loss there {ours:.4f}"
    return f"{_levels(cell.arx_levels)}, {cell.arx_suppressed} suppressed{there}"


def result_table(cells: Sequence[Cell], scan: Scan | None) -> str:
    lines = [
        "| k | suppr. | levels | suppressed | classes | smallest class | loss | granularity "
        "| exhaustive scan | best node keeping 20-year age bands: granularity "
        "| ARX's node (its own loss metric) |",
        "|---:|---:|:---|---:|---:|---:|---:|---:|:---|:---|:---|",
    ]
    for c in cells:
        lines.append(
            f"| {c.k} | {pct(c.limit)} | {_levels(c.levels())} | {c.result.n_suppressed} "
            f"| {c.classes} | {c.min_class} | {c.loss:.4f} | {c.granularity:.4f} "
            f"| {_scan_text(c, scan)} | {_bands_text(c, scan)} | {_arx_text(c, scan)} |"
        )
    return "\n".join(lines)


def mondrian_table(cmp: MondrianComparison) -> str:
    head = " | ".join(QIS)
    lines = [
        f"| release | granularity (`table_loss`) | suppressed | classes | time (ms) | {head} |",
        "|:---|---:|---:|---:|---:|" + "---:|" * len(QIS),
    ]
    for u in (cmp.mondrian, cmp.optimal):
        per = " | ".join(f"{u.per_attribute[q]:.3f}" for q in QIS)
        lines.append(
            f"| {u.name} | {u.granularity:.4f} | {u.suppressed} | {u.classes} "
            f"| {u.median_ms:.0f} | {per} |"
        )
    return "\n".join(lines)


def cli_cold_runs(limit: float, repeats: int) -> list[float]:
    """Wall times of whole `privgate anonymize` processes on Adult at k=5 (start to exit).

    The command reads the CSV, encodes, prepares bounds, searches, writes the release and
    verifies the written file: ARX's cold process does less (no write, no verification).
    """
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            cmd = [
                sys.executable, "-m", "privgate.flows.cli", "anonymize",
                str(REPO_ROOT / "policies" / "adult.yaml"),
                "--k", str(MONDRIAN_K), "--suppression-limit", str(limit),
                "--output", str(Path(tmp) / "release.csv"),
            ]  # fmt: skip
            started = time.perf_counter()
            subprocess.run(cmd, cwd=REPO_ROOT, check=True, capture_output=True)
            walls.append(time.perf_counter() - started)
    return walls


def cli_cold_reading(runs: dict[float, list[float]]) -> str:
    """The whole-cold-process target, read off the `privgate anonymize` runs."""
    medians = {limit: statistics.median(walls) for limit, walls in runs.items()}
    holds = all(m <= 1.0 for m in medians.values())
    parts = ", ".join(f"{m:.2f} s at {pct(limit)}" for limit, m in medians.items())
    verdict = "holds" if holds else "does not hold"
    return (
        f"Target, a whole cold process on Adult (start, load, search, write) <= 1 s: {verdict} "
        f"with `privgate anonymize` ({parts}; it also verifies the written file). The "
        "in-process measurements above import pandas and pyarrow, which alone take longer "
        "than the target."
    )


def cli_cold_table(runs: dict[float, list[float]]) -> str:
    lo, hi = ARX_COLD_PROCESS_S
    lines = [
        "| command | suppr. | wall, median (s) | min (s) | max (s) | <= 1 s "
        "| ARX cold process (s) |",
        "|:---|---:|---:|---:|---:|:---:|---:|",
    ]
    for limit, walls in runs.items():
        med = statistics.median(walls)
        lines.append(
            f"| `privgate anonymize` | {pct(limit)} | {med:.2f} | {min(walls):.2f} "
            f"| {max(walls):.2f} | {'yes' if med <= 1.0 else 'no'} | {lo}-{hi} |"
        )
    return "\n".join(lines)


def cold_table(series: Sequence[ChildSeries]) -> str:
    lines = [
        "| process | suppr. | wall time, start to exit (s) | interpreter start + imports (s) "
        "| hierarchies + read + encode + bounds + search (s) | exit (s) | ARX cold process (s) |",
        "|:---|---:|---:|---:|---:|---:|---:|",
    ]
    lo, hi = ARX_COLD_PROCESS_S
    for s in series:
        lines.append(
            f"| {s.label} | {pct(s.limit)} | {s.wall_s:.2f} | {s.median_of('startup_s'):.2f} "
            f"| {s.work_s:.2f} | {s.median_of('exit_s'):.2f} | {lo}-{hi} |"
        )
    return "\n".join(lines)


def scaled_table(series: Sequence[ChildSeries]) -> str:
    lines = [
        "| suppr. | reader | read (s) | encode (s) | frequency set (s) | bounds (s) | search (s) "
        "| total (s) | total without read (s) | ARX (s) | ARX / ours (without read) "
        f"| <= {TARGET_1M_S:g} s | RSS after imports (MiB) | peak (GiB) "
        f"| <= {TARGET_1M_GIB:g} GiB |",
        "|---:|:---|" + "---:|" * 9 + ":---:|---:|---:|:---:|",
    ]
    for s in series:
        arx = ARX_1M_S[s.limit]
        lines.append(
            f"| {pct(s.limit)} | {s.reader} | {s.phase_s('read'):.2f} | {s.phase_s('encode'):.2f} "
            f"| {s.phase_s('frequency_set'):.2f} | {s.phase_s('bounds'):.2f} "
            f"| {s.phase_s('search'):.2f} | {s.total_s:.2f} | {s.without_read_s:.2f} | {arx:g} "
            f"| {arx / s.without_read_s:.1f}x | {_yes(s.total_s <= TARGET_1M_S)} "
            f"| {s.baseline_mib:.0f} | {s.peak_gib:.2f} | {_yes(s.peak_gib <= TARGET_1M_GIB)} |"
        )
    return "\n".join(lines)


def memory_table(series: Sequence[ChildSeries]) -> str:
    lines = [
        "| suppr. | reader | after imports | after read | after encode | after frequency set "
        "| after bounds | after search |",
        "|---:|:---|" + "---:|" * 6,
    ]
    for s in series:
        cells = " | ".join(f"{s.peak_after_mib(p):.0f}" for p in PHASES)
        lines.append(f"| {pct(s.limit)} | {s.reader} | {s.baseline_mib:.0f} | {cells} |")
    return "\n".join(lines)


def _ks(cells: Sequence[Cell]) -> str:
    return ", ".join(f"k={c.k} at {pct(c.limit)}" for c in cells) or "none"


def reading(
    adult: Adult,
    cells: Sequence[Cell],
    scan: Scan | None,
    cmp: MondrianComparison,
    cold: Sequence[ChildSeries],
    scaled: Sequence[ChildSeries],
) -> str:
    parts: list[str] = []
    by = {(c.k, c.limit): c for c in cells}
    age = QIS.index("age")

    # Optimum against ARX's node.
    if scan is not None:
        agree = [c for c in cells if _scan_text(c, scan) == "= optimum"]
        worse = [c for c in cells if _scan_text(c, scan) != "= optimum"]
        text = (
            f"- **Optimum vs ARX's node: holds.** The exhaustive scan evaluated all {scan.nodes} "
            f"nodes for every cell (own grouping and loss code, {scan.seconds:.1f} s) and found "
            f"the search's node to be the unique minimum (same loss, same tie-break) in "
            f"{len(agree)} of {len(cells)} cells."
        )
        if worse:
            text = (
                f"- **Optimum vs ARX's node: does not hold everywhere.** The exhaustive scan "
                f"disagrees with the search at {_ks(worse)} (see the table)."
            )
        else:
            text += (
                " ARX's node is one of those nodes, so under this metric it cannot have a lower "
                "loss than ours (both count a suppressed record as fully generalized)."
            )
        parts.append(text)
    measured = [c for c in cells if c.arx_levels is not None]
    if measured:
        same = [c for c in measured if c.arx_levels == c.levels()]
        other = [c for c in measured if c.arx_levels != c.levels()]
        text = (
            f"- ARX's own optimum (its loss metric: hierarchy domains, gs-factor 0.5) is our node "
            f"in {len(same)} of {len(measured)} cells"
        )
        if other:
            text += f"; elsewhere ({_ks(other)}) it differs"
            scored = (
                []
                if scan is None
                else [(c, scan.losses.get((c.k, c.limit), {}).get(c.arx_levels)) for c in other]
            )
            if scored and all(v is not None and v >= c.loss - 1e-12 for c, v in scored):
                text += (
                    ", and under privgate's `loss` ARX's node scores worse than ours there "
                    "(last column; the scan's loss of ARX's node): the two metrics weigh a "
                    "generalization step differently, and each tool is optimal for its own."
                )
            elif scored:
                text += ", and **under privgate's `loss` ARX's node scores better** (see table)."
            else:
                text += " (not scored on privgate's `loss`: no exhaustive scan in this run)."
        else:
            text += "."
        parts.append(text)
    else:
        k5 = by.get((5, 0.02))
        if k5 is not None:
            parts.append(
                f"- The one ARX utility figure we have, granularity {ARX_GRANULARITY_K5_2PCT} "
                f"at k=5 with 2 %, matches ours ({k5.granularity:.4f}, levels "
                f"{_levels(k5.levels())}, age at level {k5.levels()[age]} = 20-year bands). "
                "The loss here takes each column's domain as the data's distinct values (72 "
                "ages, not the hierarchy's 100); ARX's figure is given to two decimals only, so "
                "a difference in the third decimal is not resolvable."
            )
    zero = [c for c in cells if c.limit == 0.0]
    if zero:
        removed = all(c.levels()[age] == 4 for c in zero)
        parts.append(
            "- At 0 % the optimum removes age (level 4) for "
            + ("every k, as ARX does." if removed else "only some k, unlike ARX.")
        )
    two = [c for c in cells if c.limit == 0.02]
    no_bands = [c for c in two if c.levels()[age] > 3]
    if two:
        text = (
            f"- At 2 % the optimum keeps 20-year age bands at k = "
            f"{', '.join(str(c.k) for c in two if c.levels()[age] <= 3) or 'none'}"
        )
        if no_bands:
            text += (
                f" and removes age at k = {', '.join(str(c.k) for c in no_bands)}. If ARX kept "
                "20-year bands there too (the issue states it for 2 % without listing every k), "
                "its node is no better than the best node that keeps them, whose granularity the "
                "last column shows: below ours"
            )
            if scan is not None:
                gaps = []
                for c in no_bands:
                    cand = scan.best_age_bands.get((c.k, c.limit))
                    if cand is not None:
                        gaps.append(f"k={c.k}: {1 - cand.loss:.4f} vs {c.granularity:.4f}")
                text += f" ({'; '.join(gaps)})"
            text += ". Removing age and keeping other attributes finer is simply cheaper there."
        else:
            text += "."
        parts.append(text)

    # Speed (issue 18's targets: including preparation, >= 2x per cell, >= 4x on the sum).
    arx_sum = sum(c.arx_ms for c in cells)
    first_sum = sum(c.first_run_ms for c in cells)
    session = session_ms(adult, cells)
    first_fail = [c for c in cells if not c.holds_first_run]
    zero_first_ms = statistics.median(c.first_run_ms for c in cells if c.limit == 0)
    session_fail = [c for c in cells if c.arx_ms / c.session_ms < CELL_FACTOR]
    parts.append(
        f"- **First run (one command, fresh table), >= {CELL_FACTOR:g}x ARX in every cell: "
        + ("holds" if not first_fail else f"does not hold at {_ks(first_fail)}")
        + f"; >= {SUM_FACTOR:g}x on the sum: "
        + ("holds" if arx_sum / first_sum >= SUM_FACTOR else "does not hold")
        + f".** ARX / first run ranges from {min(c.first_run_speedup for c in cells):.2f}x to "
        f"{max(c.first_run_speedup for c in cells):.2f}x, {arx_sum / first_sum:.2f}x on the sum "
        f"({arx_sum:.0f} ms vs {first_sum:.0f} ms). The fixed part of a first run is encode + "
        f"frequency set (warm medians: `encode_table` "
        f"{1000 * statistics.median(adult.encode_only_s):.1f} ms, `frequency_set` "
        f"{1000 * statistics.median(adult.freq_only_s):.1f} ms; the first call in the process "
        f"took {1000 * adult.encode_s:.0f} ms for both, lazy imports included) and the bounds "
        "(cold: pairs "
        f"{1000 * statistics.median(adult.pair_bounds_s):.0f} ms at 0 %, triples "
        f"{1000 * statistics.median(adult.bounds_s):.0f} ms at 2 %). ARX takes "
        f"{min(c.arx_ms for c in cells if c.limit == 0):.0f}-"
        f"{max(c.arx_ms for c in cells if c.limit == 0):.0f} ms at 0 %, so a fresh-table run "
        f"is 2x faster there only if encoding + frequency set + bounds + search fit in "
        f"{min(c.arx_ms for c in cells if c.limit == 0) / CELL_FACTOR:.0f}-"
        f"{max(c.arx_ms for c in cells if c.limit == 0) / CELL_FACTOR:.0f} ms. Encode + "
        f"frequency set alone (warm) is {100 * _encode_ms(adult) / zero_first_ms:.0f} % of the "
        f"median 0 % first run ({zero_first_ms:.0f} ms)."
    )
    parts.append(
        f"- **Ten cells on one table (encoded once, bounds built by the first cell that needs "
        f"them), >= {CELL_FACTOR:g}x ARX per cell: "
        + ("holds" if not session_fail else f"does not hold at {_ks(session_fail)}")
        + f"; >= {SUM_FACTOR:g}x on the sum: "
        + ("holds" if arx_sum / session >= SUM_FACTOR else "does not hold")
        + f".** The sum, encoding included once, is {session:.0f} ms against ARX's "
        f"{arx_sum:.0f} ms ({arx_sum / session:.2f}x). Per cell the encoding is not counted "
        "(it is in the sum), but the cell that first needs the pair or triple bounds pays "
        "for building them (k=2 at 0 % and at 2 % in grid order). This is what a user pays "
        "who searches several k on one table in one process; ARX's `anonymize()` encodes "
        "again on every call."
    )
    issue_arx, issue_ours = sum(ARX_MS.values()), sum(ISSUE_FIRST_RUN_MS.values())
    parts.append(
        f"- Load: ARX's ten cells sum to {arx_sum:.0f} ms here against {issue_arx:.0f} ms in "
        f"issue 18 (load 1.1-1.8), {arx_sum / issue_arx:.1f}x; privgate's first runs to "
        f"{first_sum:.0f} ms against the issue's {issue_ours:.0f} ms (before this change), "
        f"{first_sum / issue_ours:.1f}x. The load of this shared machine slows the JVM more "
        "than privgate"
        + (
            ", so these ratios flatter privgate: at issue 18's load, scale them by about "
            f"{(first_sum / issue_ours) / (arx_sum / issue_arx):.2f} (if privgate's code were "
            "unchanged; it is faster now, so that is a lower estimate)."
            if arx_sum / issue_arx > first_sum / issue_ours
            else "."
        )
    )
    parts.append(
        f"- Warm search alone (table, bounds and lattice prepared beforehand): "
        f"{min(c.speedup for c in cells):.1f}x to {max(c.speedup for c in cells):.1f}x ARX, "
        f"largest run spread {max(c.spread for c in cells):.2f}x."
    )
    if cold:
        lo, hi = ARX_COLD_PROCESS_S
        walls = ", ".join(f"{s.wall_s:.2f} s at {pct(s.limit)}" for s in cold)
        startup = ", ".join(f"{s.median_of('startup_s'):.2f} s" for s in cold)
        work = ", ".join(f"{s.work_s:.2f} s" for s in cold)
        inside = all(s.wall_s <= hi for s in cold)
        parts.append(
            f"- A whole cold process (interpreter start, imports, read, encode, bounds, search "
            f"at k=5) takes {walls}, against {lo}-{hi} s for ARX's cold JVM process "
            + ("(within or below ARX's range)" if inside else "(above ARX's range in part)")
            + f". Interpreter start and imports (numpy, pandas, pyarrow, pydantic via "
            f"`privgate.core.policy`) take {startup} of it; the work itself {work}."
        )

    # Mondrian.
    m, o = cmp.mondrian, cmp.optimal
    finer = [q for q in QIS if m.per_attribute[q] < o.per_attribute[q] - 1e-12]
    coarser = [q for q in QIS if m.per_attribute[q] > o.per_attribute[q] + 1e-12]
    gap = m.granularity - o.granularity
    scoring = cmp.optimal_categorical_age - o.granularity
    text = (
        f"- **Mondrian (k=5, 0 %) more granular than the best full-domain node (k=5, 2 %): "
        f"{'holds' if cmp.holds else 'does not hold'}.** `table_loss` granularity "
        f"{m.granularity:.4f} vs {o.granularity:.4f} ({gap:+.4f}), same data, same run. "
        f"Mondrian has the lower loss on {', '.join(finer) or 'no QI'}"
        + (f" and a higher one on {', '.join(coarser)}" if coarser else "")
        + f"; it suppresses {m.suppressed} records where the optimum suppresses {o.suppressed} "
        "(each costs 1 on every QI). Scored with age as a number, ARX's edge bands cost their "
        "nominal width (`0-19` as 19 years although the data start at 17), which charges the "
        "full-domain release a little more than its search loss: with age scored along its "
        f"hierarchy the same release has granularity {cmp.optimal_categorical_age:.4f} "
        f"(the search reports {cmp.optimal_search_granularity:.4f})."
    )
    if abs(gap) > abs(scoring):
        text += f" The scoring choice ({scoring:+.4f}) is far smaller than the gap."
    else:
        text += " The scoring choice matters as much as the gap: read the comparison with care."
    text += f" Time: Mondrian {m.median_ms:.0f} ms, optimal {o.median_ms:.0f} ms end to end."
    parts.append(text)

    # 1M rows.
    if scaled:
        main = [s for s in scaled if s.reader == "pyarrow"] or list(scaled)
        for s in main:
            ok_t = s.total_s <= TARGET_1M_S
            ok_m = s.peak_gib <= TARGET_1M_GIB
            phases = {p: s.phase_s(p) for p in PHASES}
            worst = max(phases, key=phases.get)
            text = (
                f"- **1,000,000 records at {pct(s.limit)} ({s.reader} reader): time "
                f"{'holds' if ok_t else 'does not hold'} ({s.total_s:.2f} s against "
                f"{TARGET_1M_S:g} s; {s.without_read_s:.2f} s without reading the file), memory "
                f"{'holds' if ok_m else 'does not hold'} (peak {s.peak_gib:.2f} GiB against "
                f"{TARGET_1M_GIB:g} GiB, of which {s.baseline_mib:.0f} MiB after imports).** "
                f"The largest phase is {worst.replace('_', ' ')}: {phases[worst]:.2f} s, "
                f"{100 * phases[worst] / s.total_s:.0f} % of the total. "
                f"ARX: {ARX_1M_S[s.limit]:g} s"
            )
            if s.limit == 0.02:
                text += f", {ARX_1M_PEAK_GIB} GiB peak"
            text += "."
            parts.append(text)
        diag = next((s.diagnosis() for s in main if s.diagnosis()), None)
        if diag is not None:
            fs = ", ".join(f"{s.phase_s('frequency_set'):.2f} s at {pct(s.limit)}" for s in main)
            parts.append(
                f"- Frequency set, for reference (diagnostic in the same child after the measured "
                f"phases, not counted above): `frequency_set` took {fs}. On the same rows, a "
                f"row-wise `np.unique(axis=0, return_inverse=True, return_counts=True)` over the "
                f"stacked codes takes {diag['unique_axis0_s']:.2f} s (+ {diag['stack_s']:.2f} s "
                f"to stack them); one mixed-radix int64 key per row takes "
                f"{diag['key_build_s']:.2f} s to build and a 1-D `np.unique` on it "
                f"{diag['key_unique_s']:.2f} s ({diag['key_unique_index_s']:.2f} s with "
                f"`return_index=True`, which needs a stable sort), same "
                f"{main[0].first['tuples']} tuples. The first pass over fresh memory in a new "
                "process also pays for page faults."
            )
        s = main[0]
        steps = {}
        previous = s.baseline_mib
        for p in PHASES:
            steps[p] = s.peak_after_mib(p) - previous
            previous = s.peak_after_mib(p)
        biggest = sorted(steps, key=steps.get, reverse=True)[:2]
        parts.append(
            f"- Memory by phase ({s.reader}, {pct(s.limit)}, peak RSS after each phase): "
            f"imports {s.baseline_mib:.0f} MiB, then "
            + ", ".join(f"{p.replace('_', ' ')} +{steps[p]:.0f}" for p in PHASES)
            + " MiB. The peak grows most in "
            + " and ".join(p.replace("_", " ") for p in biggest)
            + "."
        )
    return "\n".join(parts)


def machine(load_before: tuple[float, float, float], load_after: tuple[float, float, float]) -> str:
    """Cores, CPU, load before/after, Python and library versions (``_environment``)."""
    return environment.machine(load_before, load_after, ("numpy", "pandas", "pyarrow"))


def display_path(path: Path) -> str:
    return os.path.relpath(path.resolve(), REPO_ROOT)


def command() -> str:
    python = os.path.relpath(sys.executable, REPO_ROOT)
    script = os.path.relpath(SCRIPT.resolve(), REPO_ROOT)
    return shlex.join([python, script, *sys.argv[1:]])


@dataclass
class Report:
    args: argparse.Namespace
    adult: Adult
    arx: ArxRuns | None
    cells: list[Cell]
    scan: Scan | None
    cmp: MondrianComparison
    cold: list[ChildSeries]
    scaled: list[ChildSeries]
    scaled_path: Path | None
    scaled_reused: bool
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    code_before: tuple[str, dict[str, str]]
    code_after: tuple[str, dict[str, str]]


def code_state() -> tuple[str, dict[str, str]]:
    """The git commit plus a content hash of ``core/`` (the working tree may be uncommitted),
    and the hash of every file, to name what changed if the code moves during the run."""

    def git(*cmd: str) -> str:
        proc = subprocess.run(
            ["git", *cmd], cwd=REPO_ROOT, capture_output=True, text=True, check=False
        )
        return proc.stdout.rstrip() if proc.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown commit"
    dirty = [ln[3:] for ln in git("status", "--porcelain", "--", "core").splitlines()]
    files = {
        path.relative_to(REPO_ROOT).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((REPO_ROOT / "core").rglob("*.py"))
    }
    digest = hashlib.sha256("".join(f"{k}{v}" for k, v in files.items()).encode()).hexdigest()
    state = f"git {head}"
    if dirty:
        state += f" with uncommitted changes in {', '.join(sorted(dirty))}"
    return f"{state}; content hash of core/*.py `{digest[:12]}`", files


def _code_line(rep: Report) -> str:
    before, files_before = rep.code_before
    after, files_after = rep.code_after
    text = f"Code measured: {before}"
    if files_after == files_before:
        return text + "; unchanged during the run."
    changed = sorted(
        f for f in set(files_before) | set(files_after) if files_before.get(f) != files_after.get(f)
    )
    return (
        text + f". **core/ changed during the run** (at the end: {after}; changed: "
        f"{', '.join(changed)}), so later measurements may have run other code than earlier ones."
    )


def arx_bullet(rep: Report) -> str:
    """Where the ARX figures come from: this run, or issue 18 when ARX could not run."""
    if rep.arx is None:
        return (
            "ARX figures: issue 18's (ARX 3.9.2 built from source, Flash, loss metric, warm "
            "median of 5 runs of `anonymize()`, measured side by side with privgate on this "
            "machine kind). ARX did not run in this run (no `--arx-classpath`), so these ratios "
            "are not same-run."
        )
    arx = rep.arx
    return (
        f"ARX figures: measured in this run by `benchmarks/ArxFlashAdult.java` (ARX 3.9.2 built "
        f"from source outside the repository, its classpath given by `--arx-classpath` or "
        f"`$PRIVGATE_ARX_CLASSPATH`, see `benchmarks/_optimal_arx.py`; {arx.java}): "
        "`ARXAnonymizer.anonymize` with `KAnonymity(k)`, the suppression limit and "
        "`Metric.createLossMetric()` (Flash), on the same `adult.csv` and hierarchies read once "
        f"by the JVM; one untimed warm-up per cell, then {rep.args.repeats} timed rounds, in "
        f"{arx.runs} JVM runs (one before privgate's cells, one after); each cell's figure is "
        f"the median of its {rep.args.repeats * arx.runs} timed runs."
    )


def section(rep: Report) -> str:
    adult, args = rep.adult, rep.args
    digest = hashlib.sha256(adult.path.read_bytes()).hexdigest()
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    heights = ", ".join(f"{q} {h}" for q, h in zip(QIS, adult.heights, strict=True))
    n_nodes = int(np.prod([h + 1 for h in adult.heights]))
    bullets = [
        f"Date: {now}",
        f"Machine: {machine(rep.load_before, rep.load_after)}",
        _code_line(rep),
        f"Data: `{display_path(adult.path)}` (sha256 `{digest[:16]}...`), {adult.n_rows} "
        f"records, {len(adult.freq.counts)} distinct QI tuples; ARX's hierarchies "
        f"`{display_path(adult.path.parent)}/adult_hierarchy_<qi>.csv`. QIs and heights in "
        f"ARX's order (the order of every levels column): {heights}; {n_nodes} nodes.",
        "Search: `OptimalLattice([KAnonymity(k)], limit, metric='loss')`, projection bounds "
        "of pairs of quasi-identifiers at 0 %, triples at 2 % (the search's default). Loss = "
        "`details['loss']` (Iyengar's loss over the data's domain, privgate's `loss`, not "
        "ARX's `arx_loss`; suppressed records fully generalized), granularity = 1 - loss. "
        "Classes and the smallest class are counted on the release from "
        "`apply_generalization` (every release checked k-anonymous within the limit).",
        f"One-off costs: read {1000 * adult.read_s:.0f} ms (in no column: ARX's figure "
        f"excludes reading too), `encode_table` + `frequency_set` "
        f"{_encode_ms(adult):.1f} ms (warm medians of {len(adult.encode_only_s)}; "
        f"{1000 * adult.encode_s:.0f} ms the first time in the process), "
        f"`ProjectionBounds` of triples {1000 * statistics.median(adult.bounds_s):.0f} ms "
        f"and of pairs {1000 * statistics.median(adult.pair_bounds_s):.0f} ms (cold, medians "
        f"of {len(adult.bounds_s)} on fresh frequency sets).",
        f"Times are medians of {args.repeats} rounds, the cells interleaved (grid order, then "
        "reversed), the garbage collector paused during each timed call, every result equal to "
        "the warm-up's. First run = encode + frequency set + search on a freshly encoded table "
        "(the search builds its bounds and lattice structures itself): what one `privgate "
        "anonymize` pays after reading, and what ARX's `anonymize()` does (it encodes on every "
        "call). Ten cells on one table = the cells in grid order on one freshly encoded table, "
        "each cell timed alone (the encoding is timed apart and added once to the sum). Warm "
        "search = the search alone on a table prepared beforehand. Run spread = slowest / "
        "fastest warm run.",
        arx_bullet(rep),
    ]
    lines = [
        SECTION_HEADING,
        "",
        f"Command (from the repository root): `{command()}`",
        "",
        *(f"- {b}" for b in bullets),
        "",
        "### Search time per cell",
        "",
        search_table(rep.adult, rep.cells),
        "",
        "### Optimum per cell",
        "",
        result_table(rep.cells, rep.scan),
        "",
    ]
    if rep.scan is not None:
        lines += [
            f"Exhaustive scan: all {rep.scan.nodes} nodes grouped and scored from the loss "
            f"definition with independent code ({rep.scan.seconds:.1f} s for all cells). Last "
            "column: the best node with age at level <= 3, for cells whose optimum removes age.",
            "",
        ]
    lines += [
        "### Mondrian (k=5, no suppression) vs the optimum (k=5, 2 %)",
        "",
        f"Both releases scored by `core.metrics.table_loss` against the original rows (matched "
        f"by index), age as a number, the other QIs along ARX's hierarchies; per-QI columns are "
        f"losses. Times: median of {args.repeats}; Mondrian = "
        f"{rep.cmp.mondrian.time_note}, optimal = {rep.cmp.optimal.time_note}.",
        "",
        mondrian_table(rep.cmp),
        "",
    ]
    if rep.cold:
        lines += [
            "### Cold process on Adult (k=5)",
            "",
            f"`{os.path.relpath(sys.executable, REPO_ROOT)}` started as a subprocess that "
            "imports, loads the hierarchies, reads `adult.csv` (pyarrow), encodes, prepares "
            "bounds and searches once; wall time measured by the parent (start to exit), median "
            f"of {args.scaled_repeats}. Start + imports = until the child's RSS baseline; exit = "
            "after the search until the parent sees the process end.",
            "",
            cold_table(rep.cold),
            "",
        ]
    if rep.scaled:
        first = rep.scaled[0].first
        lines += [
            "### 1,000,000 records",
            "",
            f"Generated with `{display_path(args.shared / 'tools' / 'make_scaled_adult.py')} "
            f"{args.rows} {rep.scaled_path}` (defaults; "
            f"{'reused from an earlier run' if rep.scaled_reused else 'generated in this run'}"
            f", outside the repository): {first['rows']} records, {first['tuples']} distinct QI "
            f"tuples. Each row is a median over {args.scaled_repeats} subprocesses, one per "
            "measurement (k=5), so that the peak RSS (`getrusage(RUSAGE_SELF).ru_maxrss`, max "
            "over the runs) is that measurement's own; it includes the interpreter and imports "
            "(RSS after imports is shown). Phases: `read_csv(sep=';', dtype=str)`, "
            "`encode_table`, `frequency_set`, `ProjectionBounds`, the first (cold) search.",
            "",
            scaled_table(rep.scaled),
            "",
            "Peak RSS (MiB) after each phase:",
            "",
            memory_table(rep.scaled),
            "",
            "Optimum at 1,000,000 records: "
            + "; ".join(
                f"{pct(s.limit)}: levels {_levels(s.first['levels'])}, "
                f"{s.first['suppressed']} suppressed, granularity {1 - s.first['loss']:.4f}, "
                f"{s.first['evaluated']} nodes evaluated, warm re-run "
                f"{1000 * (s.median_of('warm_search_s') or float('nan')):.0f} ms"
                for s in rep.scaled
                if s.reader == "pyarrow"
            )
            + ".",
            "",
        ]
    lines += [
        "### Reading",
        "",
        reading(rep.adult, rep.cells, rep.scan, rep.cmp, rep.cold, rep.scaled),
        "",
    ]
    return "\n".join(lines)


def upsert_section(path: Path, text: str) -> None:
    """Replace this benchmark's section of ``path`` (or append it); keep every other one."""
    _upsert(path, SECTION_HEADING, text, INTRO)
