"""Private results storage over 30 nightly runs (issue 14).

Runs the release flow on the built-in census demo data once per night for ``--nights`` nights
(a new release date each night, the input unchanged, as a nightly deployment does) and measures,
after each night, what is left on disk: the cached private stage results under the privgate data
directory, and Prefect's own result storage. Two configurations side by side, in one run:

* **default**: results removed after each successful publish (and swept after the retention
  period);
* **kept**: ``output.keep_stage_results: true`` — what a policy that keeps them accumulates
  (still bounded by the retention sweep: results older than ``PRIVGATE_RESULTS_RETENTION_DAYS``
  are removed at the start of each run; the benchmark's nights are minutes apart, so this column
  shows the growth a retention period lets through).

Run from the repository root::

    .venv/bin/python benchmarks/storage_nightly.py            # print the section
    .venv/bin/python benchmarks/storage_nightly.py --write    # also update BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from _markdown import upsert_section  # noqa: E402 (script dir)

BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## Private results storage over 30 nightly runs (issue 14)"


def _size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


def run(nights: int, rows: int, workdir: Path) -> dict[str, list[tuple[int, int, int, int]]]:
    from prefect.testing.utilities import prefect_test_harness

    from privgate.core.demo_data import write_census_csv
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    policy = REPO_ROOT / "policies" / "demo.yaml"
    data = workdir / "census.csv"
    write_census_csv(data, rows, seed=0)
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    with prefect_test_harness(server_startup_timeout=180):
        for mode, keep in (("default", False), ("kept", True)):
            data_dir = workdir / f"data-{mode}"
            storage = workdir / f"prefect-storage-{mode}"
            os.environ["PRIVGATE_DATA_DIR"] = str(data_dir)
            os.environ["PREFECT_LOCAL_STORAGE_PATH"] = str(storage)
            rows_out = []
            for night in range(nights):
                release_flow(
                    ReleaseParameters(
                        policy_path=str(policy),
                        release_date=date(2027, 1, 1) + timedelta(days=night),
                        overrides={
                            "input.path": str(data),
                            "output.directory": str(workdir / f"releases-{mode}"),
                            "output.keep_stage_results": keep,
                        },
                    )
                )
                cached = _size(data_dir / "results")
                prefect = _size(storage)
                rows_out.append((*cached, *prefect))
                print(f"{mode} night {night + 1}: cached {cached}, prefect {prefect}", flush=True)
            out[mode] = rows_out
    return out


def section(result, nights: int, rows: int, started: datetime, seconds: float, load) -> str:
    script = os.path.relpath(Path(__file__).resolve(), REPO_ROOT)
    python = os.path.relpath(sys.executable, REPO_ROOT)
    lines = [
        SECTION_HEADING,
        "",
        f"Command (from the repository root): `{shlex.join([python, script, *sys.argv[1:]])}`",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC; {seconds / 60:.1f} min; machine: nproc "
        f"{os.cpu_count()}, load average {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} before",
        f"- Data: the built-in census demo generator, {rows:,} rows, seed 0, the same input "
        f"every night; `policies/demo.yaml`; {nights} nights (release dates 2027-01-01 on).",
        "- Measured after each night: files and bytes of cached stage results under the "
        "privgate data directory (`results/`), and of Prefect's local result storage.",
        "",
        "| night | default: cached files | default: bytes | kept: cached files | kept: bytes "
        "| Prefect storage (both) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for night, (default, kept) in enumerate(zip(result["default"], result["kept"], strict=True)):
        if night in (0, 1, 2, 9, 19, nights - 1):
            lines.append(
                f"| {night + 1} | {default[0]} | {default[1]:,} | {kept[0]} | {kept[1]:,} | "
                f"{default[2] + kept[2]} files |"
            )
    most_default = max(r[1] for r in result["default"])
    most_kept = max(r[1] for r in result["kept"])
    lines += [
        "",
        f"Reading: with the default, nothing private is left after any night (largest: "
        f"{most_default:,} bytes); Prefect's own result storage stays empty (privgate's stages "
        "persist only to the data directory). A policy that keeps its results holds one set "
        f"per distinct stage input (largest: {most_kept:,} bytes): the input does not change "
        "between nights, so the cached stages are reused rather than multiplied, and the "
        "retention sweep bounds it by age. Before issue 14 every run left a pickled copy of the "
        "input in Prefect's storage, never removed (152 MB in one day of Adult runs).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    started, load, clock = datetime.now(UTC), os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="privgate-storage-bench-") as folder:
        result = run(args.nights, args.rows, Path(folder))
    text = section(result, args.nights, args.rows, started, time.perf_counter() - clock, load)
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, SECTION_HEADING, text)


if __name__ == "__main__":
    main()
