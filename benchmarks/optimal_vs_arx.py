"""Optimal full-domain search against ARX's Flash on ARX's Adult table (issue 3).

Four measurements, all on ARX's own ``adult.csv`` (30,162 records) with ARX's hierarchies for the
eight quasi-identifiers in ARX's order (sex, age, race, marital-status, education,
native-country, workclass, occupation; a lattice of 6,480 nodes) and the ``loss`` metric:

1. **Search time and optimum per cell** (``k`` in 2, 5, 10, 50, 100; suppression 0 % and 2 %).
   The table is read and encoded once; the projection bounds are prepared once (timed on their
   own, cold). ``OptimalLattice.anonymize`` then runs once untimed and ``--repeats`` times timed
   on the same prepared frequency set; the median is set against ARX's warm ``anonymize()``
   figure from the issue. Because ARX's ``anonymize()`` re-encodes the data every time, a
   "first run" column also times encode + frequency set + bounds + search on a freshly encoded
   table. Every optimum is checked against an exhaustive scan of all 6,480 nodes (unless
   ``--no-exhaustive``), and every release is checked to be k-anonymous within the limit.
2. **Mondrian against the optimum**: strict Mondrian at k=5 without suppression and the optimal
   release at k=5 with 2 % suppression, both scored with :func:`core.metrics.table_loss` (age as
   a number) against the original rows.
3. **A cold process** on Adult (interpreter start, imports, read, encode, search at k=5), timed
   from outside, to set against ARX's cold JVM process.
4. **1,000,000 records** made by ``shared/tools/make_scaled_adult.py`` (defaults) into a
   temporary folder, never the repository. Each measurement runs in its own subprocess so that
   its peak RSS (``getrusage``) is its own; the child reports its RSS after imports, each phase's
   time and the peak after each phase.

The ARX figures are quoted from the issue (same machine kind, not measured in this run).

Run from the repository root::

    .venv/bin/python benchmarks/optimal_vs_arx.py            # print the section
    .venv/bin/python benchmarks/optimal_vs_arx.py --write    # also update BENCHMARKS.md

Data are read in place from the sibling ``shared`` checkout (``--shared`` overrides it).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import itertools
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _markdown import upsert_section as _upsert  # noqa: E402 (script dir)

from privgate.core.anonymize import (
    AnonymizationResult,
    Mondrian,
    OptimalLattice,
    ProjectionBounds,
    apply_generalization,
)
from privgate.core.encoding import EncodedTable, FrequencySet, encode_table
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.metrics import table_loss
from privgate.core.privacy import KAnonymity

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SCALED_DIR = Path(tempfile.gettempdir()) / "privgate-bench"

QIS: tuple[str, ...] = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
)
NUMERIC: frozenset[str] = frozenset({"age"})
KS: tuple[int, ...] = (2, 5, 10, 50, 100)
LIMITS: tuple[float, ...] = (0.0, 0.02)
BOUNDS_ARITY = 3
SPEED_FACTOR = 5.0  # target: our warm search takes at most 1/5 of ARX's time
MONDRIAN_K = 5

# ARX 3.9 (Flash, loss metric), warm median of 5 runs of anonymize(), from the issue.
ARX_MS: dict[tuple[int, float], float] = {
    (2, 0.0): 119,
    (2, 0.02): 524,
    (5, 0.0): 55,
    (5, 0.02): 490,
    (10, 0.0): 76,
    (10, 0.02): 322,
    (50, 0.0): 36,
    (50, 0.02): 146,
    (100, 0.0): 41,
    (100, 0.02): 93,
}
ARX_GRANULARITY_K5_2PCT = 0.65
ARX_COLD_PROCESS_S = (1.7, 3.2)
ARX_1M_S: dict[float, float] = {0.02: 15.4, 0.0: 1.25}
ARX_1M_PEAK_GIB = 0.77  # at 2 %
TARGET_1M_S = 3.0
TARGET_1M_GIB = 0.8

SECTION_HEADING = "## Optimal full-domain search vs ARX (issue 3)"
INTRO = """# Benchmarks

How benchmarks are run: every result is reported as a ratio against a baseline measured in the
same process, on the same machine and data, in the same run, so that machine speed cancels out.
Each section lists the exact command that produced it (run from the repository root), the date
and the machine. Timings are medians of repeated runs and are never asserted in tests: tests
check behaviour, benchmarks report speed and utility.
"""

PHASES: tuple[str, ...] = ("read", "encode", "frequency_set", "bounds", "search")


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------


def load_hierarchies(arx_dir: Path) -> dict[str, ARXHierarchy]:
    """ARX's hierarchies for the QIs, in ARX's order."""
    return {q: ARXHierarchy.from_csv(q, arx_dir / f"adult_hierarchy_{q}.csv") for q in QIS}


def read_table(path: Path, reader: str = "c") -> pd.DataFrame:
    """Read an ARX-layout CSV (``;``-separated, header) with every column as text."""
    return pd.read_csv(path, sep=";", dtype=str, engine=reader)


def encode(
    df: pd.DataFrame, hierarchies: dict[str, ARXHierarchy]
) -> tuple[EncodedTable, FrequencySet]:
    """``encode_table`` then ``frequency_set``: what every search needs from a table."""
    encoded = encode_table(df, hierarchies)
    return encoded, encoded.frequency_set()


@dataclass
class Adult:
    """ARX's Adult table, encoded once, with the one-off costs of getting there."""

    path: Path
    df: pd.DataFrame
    numeric_df: pd.DataFrame  # age as int, for Mondrian and table_loss
    hierarchies: dict[str, ARXHierarchy]
    encoded: EncodedTable
    freq: FrequencySet
    read_s: float
    encode_s: float  # encode_table + frequency_set
    bounds_s: list[float] = field(default_factory=list)  # ProjectionBounds, cold, per repeat

    @property
    def n_rows(self) -> int:
        return len(self.df)

    @property
    def heights(self) -> list[int]:
        return list(self.encoded.heights)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``fn`` once with the garbage collector paused (as :mod:`timeit` does)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - t0
    finally:
        gc.enable()
    return value, elapsed


def prepare_adult(shared: Path, repeats: int) -> Adult:
    """Read and encode Adult once; time the projection bounds cold on fresh frequency sets."""
    arx_dir = shared / "data" / "arx"
    path = arx_dir / "adult.csv"
    hierarchies = load_hierarchies(arx_dir)
    df, read_s = _timed(lambda: read_table(path))
    (encoded, freq), encode_s = _timed(lambda: encode(df, hierarchies))
    numeric_df = df.copy()
    numeric_df["age"] = numeric_df["age"].astype(int)
    adult = Adult(path, df, numeric_df, hierarchies, encoded, freq, read_s, encode_s)
    for _ in range(repeats):
        fresh = encoded.frequency_set()  # a frequency set whose cache is empty
        _, seconds = _timed(lambda f=fresh: ProjectionBounds(f, BOUNDS_ARITY))
        adult.bounds_s.append(seconds)
    return adult


# ------------------------------------------------------------------------------------------
# Exhaustive scan: the reference optimum of every cell
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    loss: float
    node: tuple[int, ...]

    def key(self) -> tuple[float, int, tuple[int, ...]]:
        # Same tie-break as the search: loss, then level sum, then lexicographic levels.
        return (round(self.loss, 12), sum(self.node), self.node)


@dataclass
class Scan:
    """Per cell: the best node overall, the best keeping 20-year age bands, satisfying nodes."""

    best: dict[tuple[int, float], Candidate] = field(default_factory=dict)
    best_age_bands: dict[tuple[int, float], Candidate] = field(default_factory=dict)
    satisfying: dict[tuple[int, float], int] = field(default_factory=dict)
    seconds: float = 0.0
    nodes: int = 0


def exhaustive_scan(freq: FrequencySet, ks: Sequence[int], limits: Sequence[float]) -> Scan:
    """Evaluate every node of the lattice, independently of the search's code path.

    Per node: group the distinct tuples by their generalized codes, count records per class,
    and compute the loss directly from its definition (a cell generalized to a value covering
    ``m`` of the column's ``M`` distinct values loses ``(m - 1) / (M - 1)``; a suppressed record
    loses 1 per QI), the records of classes smaller than ``k`` being suppressed.
    """
    started = time.perf_counter()
    table = freq.table
    cols = table.columns
    n, q = table.n_rows, len(cols)
    weights = freq.counts.astype(np.float64)
    cell_cost = [
        [
            np.clip((c.domain_leaves[lv] - 1) / max(c.domain_size - 1, 1), 0.0, 1.0)
            for lv in range(c.height + 1)
        ]
        for c in cols
    ]
    allowance = {s: int(np.floor(s * n + 1e-9)) for s in limits}
    age = QIS.index("age")
    scan = Scan()
    for node in itertools.product(*[range(c.height + 1) for c in cols]):
        scan.nodes += 1
        key = np.zeros(len(weights), dtype=np.int64)
        tuple_cost = np.zeros(len(weights))
        for j, (c, lv) in enumerate(zip(cols, node, strict=True)):
            gen = c.level_maps[lv][freq.qi_codes[:, j]]
            key = key * c.distinct_at(lv) + gen
            tuple_cost += cell_cost[j][lv][gen]
        _, class_ids = np.unique(key, return_inverse=True)
        class_ids = class_ids.reshape(-1)
        sizes = np.bincount(class_ids, weights=weights)
        class_cost = np.bincount(class_ids, weights=weights * tuple_cost)
        total_cost = float(class_cost.sum())
        for k in ks:
            small = sizes < k
            suppressed = int(round(float(sizes[small].sum())))
            kept_cost = total_cost - float(class_cost[small].sum())
            loss = (kept_cost + suppressed * q) / (n * q)
            for s in limits:
                if suppressed > allowance[s]:
                    continue
                cell = (k, s)
                cand = Candidate(loss, tuple(int(v) for v in node))
                scan.satisfying[cell] = scan.satisfying.get(cell, 0) + 1
                if cell not in scan.best or cand.key() < scan.best[cell].key():
                    scan.best[cell] = cand
                if node[age] <= 3 and (
                    cell not in scan.best_age_bands or cand.key() < scan.best_age_bands[cell].key()
                ):
                    scan.best_age_bands[cell] = cand
    scan.seconds = time.perf_counter() - started
    return scan


# ------------------------------------------------------------------------------------------
# 1. Search per cell
# ------------------------------------------------------------------------------------------


@dataclass
class Cell:
    """One (k, suppression limit): the optimum, its release and its timings."""

    k: int
    limit: float
    result: AnonymizationResult
    times_s: list[float]
    first_run_s: list[float]  # encode + frequency set + bounds + search, fresh table each time
    classes: int
    min_class: int

    @property
    def arx_ms(self) -> float:
        return ARX_MS[(self.k, self.limit)]

    @property
    def median_ms(self) -> float:
        return 1000.0 * statistics.median(self.times_s)

    @property
    def first_run_ms(self) -> float:
        return 1000.0 * statistics.median(self.first_run_s)

    @property
    def speedup(self) -> float:
        return self.arx_ms / self.median_ms

    @property
    def holds(self) -> bool:
        return self.speedup >= SPEED_FACTOR

    @property
    def fastest_ms(self) -> float:
        return 1000.0 * min(self.times_s)

    @property
    def holds_fastest(self) -> bool:
        return self.arx_ms / self.fastest_ms >= SPEED_FACTOR

    @property
    def spread(self) -> float:
        return max(self.times_s) / min(self.times_s)

    @property
    def loss(self) -> float:
        return float(self.result.details["loss"])

    @property
    def granularity(self) -> float:
        return 1.0 - self.loss

    def levels(self) -> tuple[int, ...]:
        return tuple(self.result.levels[q] for q in QIS)


def _same(a: AnonymizationResult, b: AnonymizationResult) -> bool:
    return a.levels == b.levels and np.array_equal(a.suppressed, b.suppressed)


def release_classes(adult: Adult, result: AnonymizationResult) -> tuple[pd.DataFrame, int, int]:
    """The release (input index kept), its number of classes and its smallest class."""
    release = apply_generalization(adult.df, adult.encoded, result, list(adult.df.columns))
    sizes = release.groupby(list(QIS), observed=True, sort=False).size()
    return release, int(len(sizes)), int(sizes.min()) if len(sizes) else 0


def measure_cells(adult: Adult, repeats: int) -> list[Cell]:
    """Every (k, limit) cell; repeats interleaved across cells so that bursts of load from
    other users spread over all cells instead of hitting one cell's runs."""
    grid = list(itertools.product(KS, LIMITS))
    algos = [
        OptimalLattice([KAnonymity(k=k)], limit, metric="loss", bounds_arity=BOUNDS_ARITY)
        for k, limit in grid
    ]
    references = []
    for (k, limit), algo in zip(grid, algos, strict=True):
        print(f"Adult: warm-up k={k}, suppression {_pct(limit)}", file=sys.stderr)
        references.append(algo.search(adult.freq))  # untimed warm-up
    times: list[list[float]] = [[] for _ in grid]
    first_runs: list[list[float]] = [[] for _ in grid]
    for rep in range(repeats):
        print(f"Adult: timed round {rep + 1} of {repeats}", file=sys.stderr)
        order = list(range(len(grid))) if rep % 2 == 0 else list(reversed(range(len(grid))))
        for i in order:
            algo = algos[i]
            result, seconds = _timed(lambda a=algo: a.search(adult.freq))
            if not _same(result, references[i]):
                raise AssertionError(f"{grid[i]}: the search is not deterministic")
            times[i].append(seconds)
        for i in order:

            def end_to_end(a: OptimalLattice = algos[i]) -> AnonymizationResult:
                _, fresh = encode(adult.df, adult.hierarchies)
                return a.search(fresh)

            result, seconds = _timed(end_to_end)
            if not _same(result, references[i]):
                raise AssertionError(f"{grid[i]}: a freshly encoded table gave another result")
            first_runs[i].append(seconds)
    cells = []
    for i, (k, limit) in enumerate(grid):
        reference = references[i]
        _, classes, min_class = release_classes(adult, reference)
        allowance = int(np.floor(limit * adult.n_rows + 1e-9))
        if min_class < k or reference.n_suppressed > allowance:
            raise AssertionError(
                f"k={k}, limit {limit}: smallest class {min_class}, {reference.n_suppressed} "
                f"suppressed (allowance {allowance})"
            )
        cells.append(Cell(k, limit, reference, times[i], first_runs[i], classes, min_class))
    return cells


# ------------------------------------------------------------------------------------------
# 2. Mondrian against the optimum
# ------------------------------------------------------------------------------------------


@dataclass
class Utility:
    name: str
    granularity: float
    per_attribute: dict[str, float]
    suppressed: int
    classes: int
    times_s: list[float]
    time_note: str

    @property
    def median_ms(self) -> float:
        return 1000.0 * statistics.median(self.times_s)


@dataclass
class MondrianComparison:
    mondrian: Utility
    optimal: Utility
    optimal_categorical_age: float  # table_loss with age scored along its hierarchy
    optimal_search_granularity: float  # 1 - details['loss']

    @property
    def holds(self) -> bool:
        return self.mondrian.granularity > self.optimal.granularity


def compare_mondrian(adult: Adult, repeats: int) -> MondrianComparison:
    hierarchies = dict(adult.hierarchies)
    numeric = set(NUMERIC)
    mondrian = Mondrian([KAnonymity(k=MONDRIAN_K)], strict=True)
    m_result, m_times = None, []
    for _ in range(repeats):
        m_result, seconds = _timed(
            lambda: mondrian.anonymize_table(adult.numeric_df, hierarchies, numeric)
        )
        m_times.append(seconds)
    assert m_result is not None
    m_loss = table_loss(adult.numeric_df, m_result.release, hierarchies, numeric)
    m_sizes = m_result.class_sizes
    if m_sizes.min() < MONDRIAN_K:
        raise AssertionError("Mondrian released a class smaller than k")

    algo = OptimalLattice([KAnonymity(k=MONDRIAN_K)], 0.02, metric="loss")
    o_result, o_times = None, []
    for _ in range(repeats):

        def optimal_release() -> tuple[AnonymizationResult, pd.DataFrame]:
            encoded, freq = encode(adult.df, hierarchies)
            result = algo.search(freq)
            cols = list(adult.df.columns)
            return result, apply_generalization(adult.df, encoded, result, cols)

        (o_result, release), seconds = _timed(optimal_release)
        o_times.append(seconds)
    assert o_result is not None
    o_loss = table_loss(adult.numeric_df, release, hierarchies, numeric)
    o_categorical = table_loss(adult.numeric_df, release, hierarchies, set())
    o_classes = int(release.groupby(list(QIS), observed=True).ngroups)
    return MondrianComparison(
        mondrian=Utility(
            "Mondrian strict, k=5, 0 %",
            m_loss["granularity"],
            m_loss["per_attribute"],
            m_loss["n_suppressed"],
            int(len(m_sizes)),
            m_times,
            "`Mondrian.anonymize_table` (includes its own encoding)",
        ),
        optimal=Utility(
            "optimal full-domain, k=5, 2 %",
            o_loss["granularity"],
            o_loss["per_attribute"],
            o_loss["n_suppressed"],
            o_classes,
            o_times,
            "encode + frequency set + bounds + search + `apply_generalization`",
        ),
        optimal_categorical_age=o_categorical["granularity"],
        optimal_search_granularity=1.0 - float(o_result.details["loss"]),
    )


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
        value, seconds = _timed(fn)
        out["phases"][name] = seconds
        out["peak_after"][name] = _peak_mib()
        return value

    hierarchies = phase("hierarchies", lambda: load_hierarchies(arx_dir))
    df = phase("read", lambda: read_table(Path(args.child_data), args.child_reader))
    encoded = phase("encode", lambda: encode_table(df, hierarchies))
    freq = phase("frequency_set", encoded.frequency_set)
    bounds = phase("bounds", lambda: ProjectionBounds(freq, BOUNDS_ARITY))
    freq.cache[("projection_bounds", BOUNDS_ARITY)] = bounds
    algo = OptimalLattice(
        [KAnonymity(k=args.child_k)], args.child_limit, metric="loss", bounds_arity=BOUNDS_ARITY
    )
    result = phase("search", lambda: algo.search(freq))
    reused = [v for v in freq.cache.values() if isinstance(v, ProjectionBounds)]
    if len(reused) != 1 or reused[0] is not bounds:
        raise AssertionError("the search did not reuse the prepared projection bounds")
    out["peak_mib"] = _peak_mib()
    out["phases_end"] = time.time()
    if args.child_warm:
        out["warm_search_s"] = _timed(lambda: algo.search(freq))[1]
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
        matrix, stack_s = _timed(lambda: np.column_stack(parts))
        _, unique_s = _timed(
            lambda: np.unique(matrix, axis=0, return_inverse=True, return_counts=True)
        )

        def mixed_radix_key() -> np.ndarray:
            key = np.zeros(len(df), dtype=np.int64)
            for c in encoded.columns:
                key = key * c.distinct_at(0) + c.codes
            return key

        key, key_build_s = _timed(mixed_radix_key)
        uniques, key_s = _timed(lambda: np.unique(key, return_inverse=True, return_counts=True))
        _, key_index_s = _timed(
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
        str(Path(__file__).resolve()),
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


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------


def _levels(levels: Sequence[int]) -> str:
    return "/".join(str(v) for v in levels)


def _pct(limit: float) -> str:
    return f"{100 * limit:g} %"


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def search_table(cells: Sequence[Cell]) -> str:
    lines = [
        "| k | suppr. | search, ours, median (ms) | fastest (ms) | ARX (ms) | ARX / ours "
        "| <= 1/5 of ARX | run spread | first run: encode + bounds + search (ms) | ARX / first run "
        "| candidates after bounds | evaluated |",
        "|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.k} | {_pct(c.limit)} | {c.median_ms:.1f} | {c.fastest_ms:.1f} | {c.arx_ms:.0f} "
            f"| {c.speedup:.1f}x | {_yes(c.holds)} | {c.spread:.2f} | {c.first_run_ms:.0f} "
            f"| {c.arx_ms / c.first_run_ms:.2f}x | {c.result.details['candidates_after_bounds']} "
            f"| {c.result.details['evaluated']} |"
        )
    return "\n".join(lines)


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


def result_table(cells: Sequence[Cell], scan: Scan | None) -> str:
    lines = [
        "| k | suppr. | levels | suppressed | classes | smallest class | loss | granularity "
        "| exhaustive scan | best node keeping 20-year age bands: granularity |",
        "|---:|---:|:---|---:|---:|---:|---:|---:|:---|:---|",
    ]
    for c in cells:
        lines.append(
            f"| {c.k} | {_pct(c.limit)} | {_levels(c.levels())} | {c.result.n_suppressed} "
            f"| {c.classes} | {c.min_class} | {c.loss:.4f} | {c.granularity:.4f} "
            f"| {_scan_text(c, scan)} | {_bands_text(c, scan)} |"
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
    parts = ", ".join(f"{m:.2f} s at {_pct(limit)}" for limit, m in medians.items())
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
            f"| `privgate anonymize` | {_pct(limit)} | {med:.2f} | {min(walls):.2f} "
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
            f"| {s.label} | {_pct(s.limit)} | {s.wall_s:.2f} | {s.median_of('startup_s'):.2f} "
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
            f"| {_pct(s.limit)} | {s.reader} | {s.phase_s('read'):.2f} | {s.phase_s('encode'):.2f} "
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
        lines.append(f"| {_pct(s.limit)} | {s.reader} | {s.baseline_mib:.0f} | {cells} |")
    return "\n".join(lines)


def _ks(cells: Sequence[Cell]) -> str:
    return ", ".join(f"k={c.k} at {_pct(c.limit)}" for c in cells) or "none"


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
    k5 = by.get((5, 0.02))
    if k5 is not None:
        parts.append(
            f"- The one ARX utility figure we have, granularity {ARX_GRANULARITY_K5_2PCT} at k=5 "
            f"with 2 %, matches ours ({k5.granularity:.4f}, levels {_levels(k5.levels())}, age at "
            f"level {k5.levels()[age]} = 20-year bands). The loss here takes each column's domain "
            "as the data's distinct values (72 ages, not the hierarchy's 100); ARX's figure is "
            "given to two decimals only, so a difference in the third decimal is not resolvable."
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

    # Speed.
    holds = [c for c in cells if c.holds]
    fails = [c for c in cells if not c.holds]
    text = (
        "- **Warm search <= 1/5 of ARX: "
        + ("holds in every cell" if not fails else f"holds in {len(holds)} of {len(cells)} cells")
        + f".** ARX / ours ranges from {min(c.speedup for c in cells):.1f}x to "
        f"{max(c.speedup for c in cells):.1f}x."
    )
    if fails:
        text += f" It does not hold at {_ks(fails)}."
    flip = [c for c in cells if c.holds != c.holds_fastest]
    if flip:
        text += (
            f" On the fastest timed run instead of the median the verdict changes at "
            f"{_ks(flip)}: those cells sit at the target and the load decides them."
        )
    passing = [c for c in cells if c.holds]
    if passing:
        tight = min(passing, key=lambda c: c.speedup)
        slack = tight.speedup / SPEED_FACTOR - 1.0
        text += (
            f" The smallest margin is k={tight.k} at {_pct(tight.limit)} ({tight.speedup:.1f}x, "
            f"{100 * slack:.0f} % above the target): a run {100 * slack:.0f} % slower would miss "
            f"it. There the slowest timed run was {tight.spread:.2f}x the fastest; the largest "
            f"spread over all cells was {max(c.spread for c in cells):.2f}x. With "
            "other users' load on this 2-core machine, cells close to 5x can flip between runs."
        )
    parts.append(text)
    slow_first = [c for c in cells if c.arx_ms / c.first_run_ms < SPEED_FACTOR]
    parts.append(
        "- ARX's `anonymize()` builds its data manager (dictionary encoding) on every call, "
        "while our search column starts from a prepared frequency set. Counting "
        'encode + frequency set + bounds + search on a freshly encoded table ("first run"), '
        f"we are {min(c.arx_ms / c.first_run_ms for c in cells):.2f}x to "
        f"{max(c.arx_ms / c.first_run_ms for c in cells):.2f}x ARX's time; the 1/5 target does "
        + (
            "not hold on that basis in any cell"
            if len(slow_first) == len(cells)
            else f"not hold on that basis at {_ks(slow_first)}"
            if slow_first
            else "hold on that basis too"
        )
        + f". The fixed part is encode + frequency set {1000 * adult.encode_s:.0f} ms and "
        f"bounds {1000 * statistics.median(adult.bounds_s):.0f} ms (cold), paid once per table."
    )
    if cold:
        lo, hi = ARX_COLD_PROCESS_S
        walls = ", ".join(f"{s.wall_s:.2f} s at {_pct(s.limit)}" for s in cold)
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
                f"- **1,000,000 records at {_pct(s.limit)} ({s.reader} reader): time "
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
            fs = ", ".join(f"{s.phase_s('frequency_set'):.2f} s at {_pct(s.limit)}" for s in main)
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
            f"- Memory by phase ({s.reader}, {_pct(s.limit)}, peak RSS after each phase): "
            f"imports {s.baseline_mib:.0f} MiB, then "
            + ", ".join(f"{p.replace('_', ' ')} +{steps[p]:.0f}" for p in PHASES)
            + " MiB. The peak grows most in "
            + " and ".join(p.replace("_", " ") for p in biggest)
            + "."
        )
    return "\n".join(parts)


def machine(load_before: tuple[float, float, float], load_after: tuple[float, float, float]) -> str:
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pyarrow_version = importlib.import_module("pyarrow").__version__
    except ImportError:
        pyarrow_version = "not installed"

    def fmt(load: tuple[float, float, float]) -> str:
        return "/".join(f"{v:.2f}" for v in load)

    return (
        f"nproc {nproc}, {cpu}, {platform.system()} {platform.release()}; load average "
        f"(1/5/15 min) {fmt(load_before)} before the measurements and {fmt(load_after)} after "
        f"(shared machine, other engineers running tests); Python {platform.python_version()} "
        f"({platform.python_implementation()}), numpy {np.__version__}, pandas "
        f"{pd.__version__}, pyarrow {pyarrow_version}"
    )


def _display_path(path: Path) -> str:
    return os.path.relpath(path.resolve(), REPO_ROOT)


def command() -> str:
    python = os.path.relpath(sys.executable, REPO_ROOT)
    script = os.path.relpath(Path(__file__).resolve(), REPO_ROOT)
    return shlex.join([python, script, *sys.argv[1:]])


@dataclass
class Report:
    args: argparse.Namespace
    adult: Adult
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
        f"Data: `{_display_path(adult.path)}` (sha256 `{digest[:16]}...`), {adult.n_rows} "
        f"records, {len(adult.freq.counts)} distinct QI tuples; ARX's hierarchies "
        f"`{_display_path(adult.path.parent)}/adult_hierarchy_<qi>.csv`. QIs and heights in "
        f"ARX's order (the order of every levels column): {heights}; {n_nodes} nodes.",
        f"Search: `OptimalLattice([KAnonymity(k)], limit, metric='loss')`, projection bounds of "
        f"arity {BOUNDS_ARITY}. Loss = `details['loss']` (Iyengar's loss over the data's "
        "domain, privgate's `loss`, not ARX's `arx_loss`; suppressed records fully "
        "generalized), granularity = 1 - loss. Classes and the smallest class are counted "
        "on the release from `apply_generalization` (every release checked k-anonymous within "
        "the limit).",
        f"One-off costs (not in the search column): read {1000 * adult.read_s:.0f} ms, "
        f"`encode_table` + `frequency_set` {1000 * adult.encode_s:.0f} ms, `ProjectionBounds` "
        f"{1000 * statistics.median(adult.bounds_s):.0f} ms (cold, median of "
        f"{len(adult.bounds_s)} on fresh frequency sets).",
        f"Search time: median of {args.repeats} timed `anonymize(freq)` runs after one untimed "
        "warm-up, same prepared frequency set, garbage collector paused during each run (every "
        "run reproduced the warm-up). Run spread = slowest / fastest timed run. First run = "
        f"median of {args.repeats} runs of encode + frequency set + search on a freshly encoded "
        "table (the search then builds its bounds and lattice structures itself), the closest "
        "match to what ARX's `anonymize()` does.",
        "ARX figures: ARX's Flash with the loss metric, warm median of 5 runs of `anonymize()`, "
        "as reported in the issue (same machine kind); they were not re-measured in this run, "
        "so unlike the other sections these ratios are not same-process.",
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
        search_table(rep.cells),
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
            f"Generated with `{_display_path(args.shared / 'tools' / 'make_scaled_adult.py')} "
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
                f"{_pct(s.limit)}: levels {_levels(s.first['levels'])}, "
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
        f"(default: {_display_path(DEFAULT_SHARED)})",
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
    parser.add_argument("--skip-scaled", action="store_true", help="skip the 1M-record part")
    parser.add_argument(
        "--no-exhaustive", action="store_true", help="skip the exhaustive lattice scan"
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"replace or insert the section in {_display_path(BENCHMARKS_MD)}",
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
    cells = measure_cells(adult, args.repeats)
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
                print(f"{args.rows} rows: {_pct(limit)}, {reader} ...", file=sys.stderr)
                runs = [
                    run_child(scaled_path, arx_dir, 5, limit, reader, extras=(i == 0))
                    for i in range(args.scaled_repeats)
                ]
                scaled.append(ChildSeries(f"{reader} {_pct(limit)}", limit, reader, runs))

    rep = Report(
        args,
        adult,
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
        print(f"wrote section {SECTION_HEADING!r} to {_display_path(BENCHMARKS_MD)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
