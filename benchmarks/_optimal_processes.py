"""Measurements 3 and 4 of the optimal-vs-ARX benchmark: whole processes (a cold process on
Adult, 1,000,000 records), each in its own subprocess so that its peak memory is its own.

Part of ``benchmarks/optimal_vs_arx.py`` (run that script; it is also the child's entry point).
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _optimal_adult import (
    QIS,
    REPO_ROOT,
    SCALED_DIR,
    SCRIPT,
    bounds_arity_for,
    load_hierarchies,
    read_table,
    timed,
)

from privgate.core.anonymize import OptimalLattice, ProjectionBounds
from privgate.core.encoding import encode_table
from privgate.core.privacy import KAnonymity

# ------------------------------------------------------------------------------------------
# 3 and 4. Subprocess measurements (cold process, 1M records)
# ------------------------------------------------------------------------------------------


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def child_main(args: argparse.Namespace) -> int:
    """One measurement in a fresh process; prints one JSON line."""
    if args.child_reader == "pyarrow":
        importlib.import_module("pyarrow")  # count the reader's import in the baseline
    baseline = _peak_mib()
    out: dict[str, Any] = {"baseline_mib": baseline, "phases": {}, "peak_after": {}}
    if args.child_started is not None:  # interpreter start + imports, as seen by the parent
        out["startup_s"] = time.time() - args.child_started
    arx_dir = Path(args.child_hierarchies)

    def phase(name: str, fn: Callable[[], Any]) -> Any:
        value, seconds = timed(fn)
        out["phases"][name] = seconds
        out["peak_after"][name] = _peak_mib()
        return value

    hierarchies = phase("hierarchies", lambda: load_hierarchies(arx_dir))
    df = phase("read", lambda: read_table(Path(args.child_data), args.child_reader))
    encoded = phase("encode", lambda: encode_table(df, hierarchies))
    freq = phase("frequency_set", encoded.frequency_set)
    arity = bounds_arity_for(args.child_limit)
    bounds = phase("bounds", lambda: ProjectionBounds(freq, arity))
    freq.cache[("projection_bounds", arity)] = bounds
    algo = OptimalLattice([KAnonymity(k=args.child_k)], args.child_limit, metric="loss")
    result = phase("search", lambda: algo.search(freq))
    reused = [v for v in freq.cache.values() if isinstance(v, ProjectionBounds)]
    if len(reused) != 1 or reused[0] is not bounds:
        raise AssertionError("the search did not reuse the prepared projection bounds")
    out["peak_mib"] = _peak_mib()
    out["phases_end"] = time.time()
    if args.child_warm:
        out["warm_search_s"] = timed(lambda: algo.search(freq))[1]
    out.update(
        rows=len(df),
        tuples=len(freq.counts),
        levels=[result.levels[q] for q in QIS],
        suppressed=result.n_suppressed,
        loss=result.details["loss"],
        evaluated=result.details["evaluated"],
        candidates=result.details["candidates_after_bounds"],
    )
    if args.child_diagnose:
        # Where frequency_set spends its time: stacking the codes, then np.unique(axis=0).
        # For comparison only: the same grouping on one mixed-radix int64 key per row.
        parts = [c.codes.astype(np.int64) for c in encoded.columns]
        matrix, stack_s = timed(lambda: np.column_stack(parts))
        _, unique_s = timed(
            lambda: np.unique(matrix, axis=0, return_inverse=True, return_counts=True)
        )

        def mixed_radix_key() -> np.ndarray:
            key = np.zeros(len(df), dtype=np.int64)
            for c in encoded.columns:
                key = key * c.distinct_at(0) + c.codes
            return key

        key, key_build_s = timed(mixed_radix_key)
        uniques, key_s = timed(lambda: np.unique(key, return_inverse=True, return_counts=True))
        _, key_index_s = timed(
            lambda: np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        )
        if len(uniques[0]) != len(freq.counts):
            raise AssertionError("the mixed-radix key does not group like frequency_set")
        out["diagnosis"] = {
            "stack_s": stack_s,
            "unique_axis0_s": unique_s,
            "key_build_s": key_build_s,
            "key_unique_s": key_s,
            "key_unique_index_s": key_index_s,
        }
    print(json.dumps(out))
    return 0


@dataclass
class ChildRun:
    limit: float
    reader: str
    wall_s: float
    data: dict[str, Any]

    @property
    def total_s(self) -> float:
        """Every timed phase, loading the hierarchies included."""
        return sum(self.data["phases"].values())

    @property
    def without_read_s(self) -> float:
        return self.total_s - self.data["phases"]["read"]


def run_child(
    data: Path, arx_dir: Path, k: int, limit: float, reader: str, extras: bool
) -> ChildRun:
    """One measurement in a fresh interpreter; ``extras`` adds a warm re-run and the
    frequency-set diagnosis after the measured phases (not counted in them)."""
    cmd = [
        sys.executable,
        str(SCRIPT.resolve()),
        "--child-data",
        str(data),
        "--child-hierarchies",
        str(arx_dir),
        "--child-k",
        str(k),
        "--child-limit",
        str(limit),
        "--child-reader",
        reader,
    ]
    if extras:
        cmd += ["--child-diagnose", "--child-warm"]
    started = time.time()
    cmd += ["--child-started", repr(started)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    ended = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({shlex.join(cmd)}):\n{proc.stderr}")
    data_out = json.loads(proc.stdout.strip().splitlines()[-1])
    data_out["exit_s"] = ended - data_out.pop("phases_end")
    return ChildRun(limit, reader, wall, data_out)


@dataclass
class ChildSeries:
    """Repeated subprocess runs of one configuration."""

    label: str
    limit: float
    reader: str
    runs: list[ChildRun]

    def phase_s(self, name: str) -> float:
        return statistics.median(r.data["phases"][name] for r in self.runs)

    @property
    def total_s(self) -> float:
        return statistics.median(r.total_s for r in self.runs)

    @property
    def without_read_s(self) -> float:
        return statistics.median(r.without_read_s for r in self.runs)

    @property
    def wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def peak_gib(self) -> float:
        return max(r.data["peak_mib"] for r in self.runs) / 1024.0

    @property
    def baseline_mib(self) -> float:
        return statistics.median(r.data["baseline_mib"] for r in self.runs)

    def peak_after_mib(self, name: str) -> float:
        return max(r.data["peak_after"][name] for r in self.runs)

    @property
    def first(self) -> dict[str, Any]:
        return self.runs[0].data

    def median_of(self, key: str) -> float | None:
        """Median of a top-level figure over the runs that report it."""
        found = [r.data[key] for r in self.runs if key in r.data]
        return statistics.median(found) if found else None

    @property
    def work_s(self) -> float:
        """Everything the child timed: hierarchies, read, encode, ..., search."""
        return statistics.median(sum(r.data["phases"].values()) for r in self.runs)

    def diagnosis(self) -> dict[str, float] | None:
        found = [r.data["diagnosis"] for r in self.runs if "diagnosis" in r.data]
        if not found:
            return None
        return {key: statistics.median(d[key] for d in found) for key in found[0]}


def ensure_scaled(shared: Path, rows: int) -> tuple[Path, bool]:
    """The scaled table in a temporary folder; regenerated unless it has ``rows`` records."""
    SCALED_DIR.mkdir(parents=True, exist_ok=True)
    path = SCALED_DIR / f"adult_scaled_{rows}.csv"
    if path.exists():
        with path.open("rb") as handle:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
        if lines == rows + 1:
            return path, True
    tool = shared / "tools" / "make_scaled_adult.py"
    subprocess.run([sys.executable, str(tool), str(rows), str(path)], check=True)
    return path, False
