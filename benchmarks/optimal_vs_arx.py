"""Optimal full-domain search against ARX's Flash on ARX's Adult table (issue 3).

Four measurements, all on ARX's own ``adult.csv`` (30,162 records) with ARX's hierarchies for the
eight quasi-identifiers in ARX's order (sex, age, race, marital-status, education,
native-country, workclass, occupation; a lattice of 6,480 nodes) and the ``loss`` metric:

1. **Search time and optimum per cell** (``k`` in 2, 5, 10, 50, 100; suppression 0 % and 2 %),
   against ARX's warm ``anonymize()`` per cell, measured in the same run by
   ``ArxFlashAdult.java`` (``--arx-classpath``; see ``_optimal_arx.py``), once before and once
   after privgate's cells, else issue 18's figures. ARX's ``anonymize()`` encodes the data on
   every call, so the figures that count include privgate's preparation: a "first run" (encode
   + frequency set + bounds + search on a freshly encoded table, what one command pays) and
   "ten cells on one table" (encoded once, each cell's search building whatever bounds no
   earlier cell built). The warm search on a prepared table is shown too. Every optimum is
   checked against an exhaustive scan of all 6,480 nodes (unless ``--no-exhaustive``), and
   every release is checked to be k-anonymous within the limit.
2. **Mondrian against the optimum**: strict Mondrian at k=5 without suppression and the optimal
   release at k=5 with 2 % suppression, both scored with :func:`core.metrics.table_loss` (age as
   a number) against the original rows.
3. **A cold process** on Adult (interpreter start, imports, read, encode, search at k=5), timed
   from outside, to set against ARX's cold JVM process.
4. **1,000,000 records** made by ``shared/tools/make_scaled_adult.py`` (defaults) into a
   temporary folder, never the repository. Each measurement runs in its own subprocess so that
   its peak RSS (``getrusage``) is its own; the child reports its RSS after imports, each phase's
   time and the peak after each phase.


Run from the repository root::

    .venv/bin/python benchmarks/optimal_vs_arx.py            # print the section
    .venv/bin/python benchmarks/optimal_vs_arx.py --write    # also update BENCHMARKS.md

Data are read in place from the sibling ``shared`` checkout (``--shared`` overrides it).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from _optimal_adult import DEFAULT_SHARED, KS, LIMITS, MONDRIAN_K, prepare_adult
from _optimal_arx import run_arx
from _optimal_processes import ChildSeries, child_main, ensure_scaled, run_child
from _optimal_report import (
    BENCHMARKS_MD,
    SECTION_HEADING,
    Report,
    cli_cold_reading,
    cli_cold_runs,
    cli_cold_table,
    code_state,
    display_path,
    pct,
    section,
    upsert_section,
)
from _optimal_search import compare_mondrian, exhaustive_scan, measure_cells

# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--shared",
        type=Path,
        default=DEFAULT_SHARED,
        help="the sibling shared checkout holding data/arx and tools/make_scaled_adult.py "
        f"(default: {display_path(DEFAULT_SHARED)})",
    )
    parser.add_argument(
        "--repeats", type=_positive, default=5, help="timed runs per measurement (default: 5)"
    )
    parser.add_argument(
        "--rows", type=_positive, default=1_000_000, help="records of the scaled table"
    )
    parser.add_argument(
        "--scaled-repeats",
        type=_positive,
        default=3,
        help="subprocesses per scaled or cold-process configuration (default: 3)",
    )
    parser.add_argument(
        "--readers",
        nargs="+",
        choices=("pyarrow", "c"),
        default=["pyarrow", "c"],
        help="pandas CSV engines measured on the scaled table (default: pyarrow c)",
    )
    parser.add_argument(
        "--arx-classpath",
        default=os.environ.get("PRIVGATE_ARX_CLASSPATH"),
        help="ARX 3.9's classes and jars (see _optimal_arx.py); without it, issue 18's ARX "
        "figures are used (default: $PRIVGATE_ARX_CLASSPATH)",
    )
    parser.add_argument("--skip-scaled", action="store_true", help="skip the 1M-record part")
    parser.add_argument(
        "--no-exhaustive", action="store_true", help="skip the exhaustive lattice scan"
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"replace or insert the section in {display_path(BENCHMARKS_MD)}",
    )
    # One measurement in a fresh process (used by the script itself).
    parser.add_argument("--child-data", help=argparse.SUPPRESS)
    parser.add_argument("--child-hierarchies", help=argparse.SUPPRESS)
    parser.add_argument("--child-k", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--child-limit", type=float, default=0.02, help=argparse.SUPPRESS)
    parser.add_argument("--child-reader", default="pyarrow", help=argparse.SUPPRESS)
    parser.add_argument("--child-diagnose", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-warm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-started", type=float, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_data:
        return child_main(args)
    shared = args.shared
    arx_dir = shared / "data" / "arx"
    load_before = os.getloadavg()
    code_before = code_state()

    print("Adult: encoding and preparing bounds ...", file=sys.stderr)
    adult = prepare_adult(shared, args.repeats)
    arx = None
    if args.arx_classpath:
        print("Adult: ARX's Flash, before privgate's cells ...", file=sys.stderr)
        arx = run_arx(args.arx_classpath, arx_dir, args.repeats)
    cells = measure_cells(adult, args.repeats)
    if arx is not None:
        print("Adult: ARX's Flash, after privgate's cells ...", file=sys.stderr)
        run_arx(args.arx_classpath, arx_dir, args.repeats, into=arx)
        for cell in cells:
            cell.arx_ms = arx.median_ms((cell.k, cell.limit))
            cell.arx_levels, cell.arx_suppressed = arx.optimum[cell.k, cell.limit]
    scan = None
    if not args.no_exhaustive:
        print("Adult: exhaustive scan of the lattice ...", file=sys.stderr)
        scan = exhaustive_scan(adult.freq, KS, LIMITS)
    print("Adult: Mondrian vs optimal ...", file=sys.stderr)
    cmp = compare_mondrian(adult, args.repeats)

    print("Adult: cold processes ...", file=sys.stderr)
    cold = [
        ChildSeries(
            "python, Adult",
            limit,
            "pyarrow",
            [
                run_child(adult.path, arx_dir, MONDRIAN_K, limit, "pyarrow", False)
                for _ in range(args.scaled_repeats)
            ],
        )
        for limit in (0.02, 0.0)
    ]

    print("Adult: cold `privgate anonymize` processes ...", file=sys.stderr)
    cli_cold = {limit: cli_cold_runs(limit, 5) for limit in (0.02, 0.0)}

    scaled: list[ChildSeries] = []
    scaled_path, reused = None, False
    if not args.skip_scaled:
        scaled_path, reused = ensure_scaled(shared, args.rows)
        for limit in (0.02, 0.0):
            for reader in args.readers:
                print(f"{args.rows} rows: {pct(limit)}, {reader} ...", file=sys.stderr)
                runs = [
                    run_child(scaled_path, arx_dir, 5, limit, reader, extras=(i == 0))
                    for i in range(args.scaled_repeats)
                ]
                scaled.append(ChildSeries(f"{reader} {pct(limit)}", limit, reader, runs))

    rep = Report(
        args,
        adult,
        arx,
        cells,
        scan,
        cmp,
        cold,
        scaled,
        scaled_path,
        reused,
        load_before,
        os.getloadavg(),
        code_before,
        code_state(),
    )
    text = section(rep)
    marker = "### 1,000,000 records"
    cli_text = (
        "### Whole cold process: `privgate anonymize` on Adult (k=5)\n\n"
        "`privgate anonymize policies/adult.yaml --k 5 --suppression-limit S --output F`, run "
        "5 times as a subprocess; wall time from start to exit. The process imports only "
        "numpy, pydantic and the engine (no pandas, no Prefect), reads the CSV, encodes, "
        "prepares the bounds, searches, writes the release and verifies the written file.\n\n"
        + cli_cold_table(cli_cold)
        + "\n\n"
        + cli_cold_reading(cli_cold)
        + "\n\n"
    )
    text = text.replace(marker, cli_text + marker, 1) if marker in text else text + "\n" + cli_text
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, text)
        print(f"wrote section {SECTION_HEADING!r} to {display_path(BENCHMARKS_MD)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
