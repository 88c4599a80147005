"""Tiered releases (RFK-anonymity) vs plain k-anonymity on Adult and Bank Marketing (issue 5).

For each dataset the quasi-identifiers are ranked by out-of-bag permutation importance for the
target (``core.ranking.rank_attributes``, a random forest of ``--n-estimators`` trees) and cut
into 5 tiers by k-means. For every k, release E = 1..5 applies k-anonymity (optimal full-domain
generalization plus suppression, ``core.anonymize._tiered.tiered_releases``) to the QIs of tiers
1..E only; the baseline is plain k-anonymity of all QIs by the same engine, computed separately.
Every release is scored by:

* random-forest accuracy: 5-fold stratified cross-validation over the *original* records
  (``StratifiedKFold(shuffle=True, random_state=0)``), the same folds for every release;
  suppressed records drop out of their fold. ``RandomForestClassifier(n_estimators=100,
  random_state=0, n_jobs=1)``; features = the released QIs, each label replaced by its rank
  among the column's labels (numbers and ranges ordered by their lower bound, ``*`` first);
* total information loss: ``core.metrics.table_loss`` over all QIs (a QI released as it is costs
  0 except for suppressed records, which cost 1).

Published claim checked: accuracy above plain k-anonymity at E = 3 and 4, equal at E = 5.

Run from the repository root::

    .venv/bin/python benchmarks/tiered_release.py            # print the section
    .venv/bin/python benchmarks/tiered_release.py --write    # also update BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import _environment as environment  # noqa: E402 (script dir)
from _markdown import upsert_section as _upsert  # noqa: E402 (script dir)
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402

from privgate.core.anonymize import (  # noqa: E402
    OptimalLattice,
    apply_generalization,
    tiered_releases,
)
from privgate.core.datasets import load_adult, load_bank_marketing  # noqa: E402
from privgate.core.encoding import encode_table  # noqa: E402
from privgate.core.hierarchy import (  # noqa: E402
    SUPPRESSED,
    ARXHierarchy,
    Hierarchy,
    IntervalHierarchy,
    taxonomy_hierarchy,  # noqa: E402
)
from privgate.core.metrics import table_loss  # noqa: E402
from privgate.core.privacy import KAnonymity  # noqa: E402
from privgate.core.ranking import Ranking, rank_attributes  # noqa: E402

BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
DATA = environment.SHARED_DATA.resolve()
SECTION_HEADING = "## Tiered releases (RFK-anonymity) vs plain k-anonymity (issue 5)"
INTRO = "# Benchmarks\n"
SUPPRESSION_LIMIT = 0.02
N_TIERS = 5
FOLDS = 5
RF_TREES = 100


# ------------------------------------------------------------------------------------------
# Datasets


@dataclass
class Dataset:
    name: str
    path: Path
    frame: pd.DataFrame
    target: str
    hierarchies: dict[str, Hierarchy]
    numeric: set[str]
    note: str

    @property
    def qis(self) -> list[str]:
        return list(self.hierarchies)


ADULT_QIS = [
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "race",
    "sex",
    "native-country",
]


def adult() -> Dataset:
    path = DATA / "adult" / "adult.data"
    raw = load_adult(path)
    frame = raw.dropna(subset=ADULT_QIS)[[*ADULT_QIS, "income"]]
    hierarchies = environment.arx_adult_hierarchies(ADULT_QIS, DATA / "arx")
    note = (
        f"{len(raw)} records, {len(raw) - len(frame)} dropped for a missing QI (`?`), "
        f"{len(frame)} kept (the records of ARX's `adult.csv`); QIs = the 8 attributes ARX ships "
        "hierarchies for (`arx/adult_hierarchy_<qi>.csv`), age scored as numeric. Not added: "
        "`education-num` (a recoding of `education`), `relationship` (derived from marital "
        "status and sex), `fnlwgt` (a survey weight), capital gain/loss and hours (no published "
        "hierarchy; keeping the 8 makes the releases comparable with the other Adult sections)."
    )
    return Dataset(
        "Adult", path, frame.reset_index(drop=True), "income", hierarchies, {"age"}, note
    )


BANK_QIS = ["age", "job", "marital", "education", "default", "balance", "housing", "loan"]


def _suppression_only(column: str, values: Sequence[str]) -> ARXHierarchy:
    return ARXHierarchy(column, [[v, SUPPRESSED] for v in values], source="benchmark")


def bank_hierarchies() -> dict[str, Hierarchy]:
    """Hierarchies for the client attributes of Bank Marketing (built here; none is published)."""
    return {
        "age": IntervalHierarchy("age", [5, 10, 20]),  # as ARX's Adult age: 5, 10, 20 years, *
        "job": taxonomy_hierarchy(
            "job",
            {
                # A group must not share a name with a value: a label that appears at two
                # levels covers the union for table_loss (and for a reader of the release).
                "office work": ["admin.", "management", "entrepreneur", "self-employed"],
                "manual work": ["blue-collar", "technician", "services", "housemaid"],
                "not working": ["retired", "student", "unemployed"],
                "job unknown": ["unknown"],
            },
        ),
        "marital": taxonomy_hierarchy(
            "marital", {"married": ["married"], "not married": ["single", "divorced"]}
        ),
        "education": taxonomy_hierarchy(
            "education",
            {
                "up to secondary": ["primary", "secondary"],
                "tertiary": ["tertiary"],
                "education unknown": ["unknown"],
            },
        ),
        "default": _suppression_only("default", ["yes", "no"]),
        "balance": IntervalHierarchy("balance", [100, 1000, 10000, 100000]),
        "housing": _suppression_only("housing", ["yes", "no"]),
        "loan": _suppression_only("loan", ["yes", "no"]),
    }


def bank() -> Dataset:
    path = DATA / "bank_marketing" / "kaggle-11162" / "bank.csv"
    raw = load_bank_marketing(path)
    frame = raw[[*BANK_QIS, "deposit"]].copy()
    # The loader reads UCI's literal 'unknown' as missing; here it is a category of its own.
    for column in ("job", "education"):
        frame[column] = frame[column].fillna("unknown")
    note = (
        f"{len(raw)} records, all kept (the loader's `<NA>` for `unknown` job/education put back "
        "as the category `unknown`); QIs = the 8 *bank client* attributes of UCI's description "
        "(age, job, marital, education, default, balance, housing, loan): what an outsider can "
        "know about a person. The campaign attributes (contact, day, month, duration, campaign, "
        "pdays, previous, poutcome) are not released, so accuracy measures only what the QIs "
        "keep. Hierarchies built for this benchmark: age in 5/10/20-year bands then `*`; "
        "balance in bands of 100/1,000/10,000/100,000 then `*`; job -> office work "
        "(admin., management, entrepreneur, self-employed) / manual work (blue-collar, "
        "technician, services, housemaid) / not working / job unknown -> `*`; marital -> "
        "married / not married -> `*`; education -> up to secondary / tertiary / unknown -> "
        "`*`; default, housing, loan -> `*`."
    )
    return Dataset(
        "Bank Marketing",
        path,
        frame,
        "deposit",
        bank_hierarchies(),
        {"age", "balance"},
        note,
    )


# ------------------------------------------------------------------------------------------
# Measures

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LOWER = re.compile(rf"^\s*\[?\s*({_NUMBER})")


def _label_key(label: str) -> tuple:
    """Order of a released label: ``*`` first, then numbers and ranges by lower bound, then text."""
    if label == SUPPRESSED:
        return (0, 0.0, "")
    match = _LOWER.match(label)
    if match:
        return (1, float(match.group(1)), label)
    return (2, 0.0, label)


def release_features(release: pd.DataFrame, qis: Sequence[str]) -> np.ndarray:
    """The released QIs as ranks of their labels (see the module notes)."""
    columns = []
    for q in qis:
        text = release[q].astype(str)
        labels = sorted(set(text), key=_label_key)
        rank = {label: i for i, label in enumerate(labels)}
        columns.append(text.map(rank).to_numpy(dtype=np.float64))
    return np.column_stack(columns)


def cv_accuracy(
    release: pd.DataFrame, qis: Sequence[str], target: str, folds: list[tuple[np.ndarray, ...]]
) -> float:
    """Accuracy over the folds' kept test records (folds are positions in the original)."""
    X = release_features(release, qis)
    y = release[target].astype(str).to_numpy()
    position = pd.Series(np.arange(len(release)), index=release.index)
    correct = tested = 0
    for train, test in folds:
        tr = position.reindex(train).dropna().to_numpy(dtype=np.int64)
        te = position.reindex(test).dropna().to_numpy(dtype=np.int64)
        model = RandomForestClassifier(n_estimators=RF_TREES, random_state=0, n_jobs=1)
        model.fit(X[tr], y[tr])
        correct += int((model.predict(X[te]) == y[te]).sum())
        tested += len(te)
    return correct / tested


@dataclass
class Row:
    k: int
    release: str  # "E=1".."E=5", "plain", "original"
    covered: list[str]
    levels: dict[str, int]
    suppressed: int
    accuracy: float
    loss: float
    identical_to_plain: bool = False


def plain_release(ds: Dataset, k: int) -> tuple[pd.DataFrame, dict[str, int], int]:
    encoded = encode_table(ds.frame, ds.hierarchies)
    result = OptimalLattice([KAnonymity(k=k)], SUPPRESSION_LIMIT).search(encoded.frequency_set())
    release = apply_generalization(ds.frame, encoded, result, [*ds.qis, ds.target])
    return release, result.levels, result.n_suppressed


def measure_dataset(ds: Dataset, args) -> dict:
    started = time.perf_counter()
    ranking = rank_attributes(
        ds.frame, ds.qis, ds.target, n_estimators=args.n_estimators, n_tiers=N_TIERS
    )
    print(f"{ds.name}: ranked in {ranking.seconds:.1f}s: {ranking.tiers}", file=sys.stderr)
    reruns = [
        rank_attributes(
            ds.frame,
            ds.qis,
            ds.target,
            n_estimators=args.n_estimators,
            n_tiers=N_TIERS,
            random_state=seed,
        )
        for seed in range(1, args.stability_seeds)
    ]
    positions = np.arange(len(ds.frame))
    labels = ds.frame[ds.target].astype(str).to_numpy()
    splitter = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=0)
    folds = list(splitter.split(positions, labels))
    original = ds.frame[[*ds.qis, ds.target]]
    rows = [
        Row(
            0,
            "original",
            [],
            {},
            0,
            cv_accuracy(original, ds.qis, ds.target, folds),
            table_loss(original[ds.qis], original[ds.qis], ds.hierarchies, ds.numeric)["total"],
        )
    ]
    for k in args.k:
        plain, levels, suppressed = plain_release(ds, k)
        plain_accuracy = cv_accuracy(plain, ds.qis, ds.target, folds)
        loss = table_loss(ds.frame[ds.qis], plain[ds.qis], ds.hierarchies, ds.numeric)["total"]
        plain_row = Row(k, "plain", ds.qis, levels, suppressed, plain_accuracy, loss)
        releases = tiered_releases(
            ds.frame,
            ds.hierarchies,
            ranking.tiers,
            [KAnonymity(k=k)],
            SUPPRESSION_LIMIT,
            [*ds.qis, ds.target],
        )
        for release in releases:
            identical = release.frame.equals(plain)
            accuracy = (
                plain_accuracy
                if identical  # the same table: its folds and forest give the same score
                else cv_accuracy(release.frame, ds.qis, ds.target, folds)
            )
            loss = table_loss(ds.frame[ds.qis], release.frame[ds.qis], ds.hierarchies, ds.numeric)[
                "total"
            ]
            rows.append(
                Row(
                    k,
                    f"E={release.tier}",
                    release.covered,
                    release.result.levels,
                    release.result.n_suppressed,
                    accuracy,
                    loss,
                    identical,
                )
            )
        rows.append(plain_row)
        print(
            f"{ds.name} k={k}: plain {plain_accuracy:.4f}, "
            + ", ".join(f"{r.release} {r.accuracy:.4f}" for r in rows if r.k == k),
            file=sys.stderr,
            flush=True,
        )
    return {
        "dataset": ds,
        "ranking": ranking,
        "reruns": reruns,
        "rows": rows,
        "seconds": time.perf_counter() - started,
        "sha256": hashlib.sha256(ds.path.read_bytes()).hexdigest(),
    }


# ------------------------------------------------------------------------------------------
# Formatting


def tiers_table(results: Sequence[dict]) -> str:
    """The tiers found for both datasets, side by side."""
    head = "| tier | " + " | ".join(r["dataset"].name for r in results) + " |\n"
    head += "|---:|" + ":---|" * len(results) + "\n"
    lines = []
    for tier in range(1, N_TIERS + 1):
        cells = []
        for r in results:
            ranking: Ranking = r["ranking"]
            names = [n for n in ranking.order if ranking.tiers[n] == tier]
            cells.append(
                ", ".join(
                    f"{n} ({ranking.importance[n]:.4f}; AD {ranking.approximation_degree[n]:.0f})"
                    for n in names
                )
                or "—"
            )
        lines.append(f"| {tier} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def stability_line(result: dict) -> str:
    ranking: Ranking = result["ranking"]
    reruns: list[Ranking] = result["reruns"]
    if not reruns:
        return f"- {result['dataset'].name}: no rerun (`--stability-seeds 1`)."
    same = sum(r.tiers == ranking.tiers for r in reruns)
    moved = sorted({n for r in reruns for n in ranking.tiers if r.tiers[n] != ranking.tiers[n]})
    return (
        f"- {result['dataset'].name}: the forest reseeded with random_state 1..{len(reruns)} "
        f"gives the same 5 tiers {same} of {len(reruns)} times"
        + (f"; attributes that changed tier at least once: {', '.join(moved)}." if moved else ".")
    )


def results_table(result: dict) -> str:
    ds: Dataset = result["dataset"]
    rows: list[Row] = result["rows"]
    order = {q: i for i, q in enumerate(ds.qis)}
    head = (
        "| k | release | covered QIs | levels (covered) | suppressed | RF accuracy | "
        "accuracy - plain | total loss |\n"
        "|---:|:---|:---|:---|---:|---:|---:|---:|\n"
    )
    lines = []
    plain = {r.k: r for r in rows if r.release == "plain"}
    for r in rows:
        covered = ", ".join(sorted(r.covered, key=order.get)) if r.covered else "—"
        if r.release == "plain":
            covered = "all"
        levels = "/".join(str(r.levels[q]) for q in ds.qis if q in r.levels) or "—"
        delta = (
            "—"
            if r.release in ("plain", "original")
            else f"{r.accuracy - plain[r.k].accuracy:+.4f}"
        )
        name = r.release + (" (= plain)" if r.identical_to_plain else "")
        k = "—" if r.release == "original" else str(r.k)
        lines.append(
            f"| {k} | {name} | {covered} | {levels} | {r.suppressed} | {r.accuracy:.4f} | "
            f"{delta} | {r.loss:.4f} |"
        )
    return head + "\n".join(lines) + "\n"


def verdict(results: Sequence[dict], ks: Sequence[int]) -> list[str]:
    out = []
    overall = True
    for result in results:
        rows: list[Row] = result["rows"]
        by = {(r.k, r.release): r for r in rows}
        for k in ks:
            plain = by[(k, "plain")].accuracy
            e3, e4, e5 = (by[(k, f"E={e}")].accuracy for e in (3, 4, 5))
            holds = e3 > plain and e4 > plain and math.isclose(e5, plain, abs_tol=1e-12)
            overall &= holds
            out.append(
                f"- {result['dataset'].name}, k = {k}: E=3 {e3:.4f}, E=4 {e4:.4f}, E=5 {e5:.4f} "
                f"vs plain {plain:.4f}: **{'holds' if holds else 'does not hold'}**"
                + ("" if holds else _why_not(e3, e4, e5, plain))
                + "."
            )
    out.insert(
        0,
        "**Published claim (accuracy above plain k-anonymity at E = 3 and 4, equal at E = 5): "
        + ("reproduced in every cell.**" if overall else "not reproduced in every cell.**"),
    )
    return out


def _why_not(e3: float, e4: float, e5: float, plain: float) -> str:
    parts = []
    if e3 <= plain:
        parts.append(f"E=3 is {e3 - plain:+.4f}")
    if e4 <= plain:
        parts.append(f"E=4 is {e4 - plain:+.4f}")
    if not math.isclose(e5, plain, abs_tol=1e-12):
        parts.append(f"E=5 differs by {e5 - plain:+.4f}")
    return " (" + "; ".join(parts) + ")"


def machine(load_before, load_after) -> str:
    import sklearn

    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def fmt(load) -> str:
        return "/".join(f"{v:.2f}" for v in load)

    return (
        f"nproc {nproc}, {cpu}, {platform.system()} {platform.release()}; load average "
        f"(1/5/15 min) {fmt(load_before)} before and {fmt(load_after)} after (shared machine); "
        f"Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
        f"scikit-learn {sklearn.__version__}"
    )


def code_state() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    head = proc.stdout.strip() if proc.returncode == 0 else "unknown commit"
    files = sorted((REPO_ROOT / "core").rglob("*.py"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
    return f"git {head} plus the working tree; content hash of core/**/*.py `{digest[:12]}`"


def section(results, args, started, seconds, load_before, load_after) -> str:
    script = os.path.relpath(Path(__file__).resolve(), REPO_ROOT)
    python = os.path.relpath(sys.executable, REPO_ROOT)
    data_lines = [
        f"- {r['dataset'].name}: `{os.path.relpath(r['dataset'].path, REPO_ROOT)}` (sha256 "
        f"`{r['sha256'][:16]}...`), target `{r['dataset'].target}`; {r['dataset'].note}"
        for r in results
    ]
    parts = [
        SECTION_HEADING,
        "",
        f"Command (from the repository root): `{shlex.join([python, script, *sys.argv[1:]])}`",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC; total run time {seconds / 60:.1f} min",
        f"- Machine: {machine(load_before, load_after)}",
        f"- Code measured: {code_state()}",
        *data_lines,
        f"- Ranking: `privgate.core.ranking.rank_attributes(method='permutation', n_estimators="
        f"{args.n_estimators}, n_tiers=5, random_state=0)` on the original records: Breiman's "
        "permutation importance on each tree's out-of-bag rows, QIs ordinal-encoded; tiers = "
        "exact 1-d k-means (k = 5) over the scores, tier 1 = highest centre. AD = approximation "
        "degree (standard deviation of the value frequencies).",
        f"- Releases: for k in {{{', '.join(map(str, args.k))}}}, `tiered_releases` E = 1..5 "
        f"and plain k-anonymity of all QIs, both `OptimalLattice([KAnonymity(k)], "
        f"{SUPPRESSION_LIMIT}, metric='loss')` (at most 2 % suppressed); released columns = the "
        "QIs and the target. 'levels' lists the covered QIs' generalization levels in the QI "
        "order of the data line above. '(= plain)' marks a release checked identical to the "
        "plain one (its accuracy is then the plain one's, not refitted).",
        f"- Accuracy: {FOLDS}-fold `StratifiedKFold(shuffle=True, random_state=0)` over the "
        f"original records, same folds for every release, suppressed records out of their fold; "
        f"`RandomForestClassifier(n_estimators={RF_TREES}, random_state=0, n_jobs=1)`; features "
        "= the released QIs, each label replaced by its rank among the column's labels "
        "(numbers and ranges by lower bound, `*` first, text alphabetically). 'original' = the "
        "unanonymized QIs.",
        "- Total loss: `core.metrics.table_loss` over all QIs (numeric: released range / column "
        "range; categorical: (leaves under the label - 1) / (leaves - 1); `*` and suppressed "
        "records 1), mean over the QIs. An uncovered QI costs 0 except on suppressed records.",
        "",
        "### Tiers found (importance; approximation degree)",
        "",
        tiers_table(results),
        "Stability of the tiers across forest seeds:",
        "",
        *[stability_line(r) for r in results],
        "",
    ]
    for r in results:
        parts += [
            f"### {r['dataset'].name}: accuracy and loss per release",
            "",
            f"QI order for levels: {'/'.join(r['dataset'].qis)}. Ranking took "
            f"{r['ranking'].seconds:.1f} s; the dataset's whole run {r['seconds']:.0f} s.",
            "",
            results_table(r),
        ]
    parts += ["### Reading", "", *verdict(results, args.k), *reading(results, args.k)]
    return "\n".join(parts) + "\n"


def reading(results: Sequence[dict], ks: Sequence[int]) -> list[str]:
    below = [
        f"{r['dataset'].name} k={row.k} {row.release}"
        for r in results
        for row in r["rows"]
        if row.release.startswith("E=")
        and row.accuracy
        < next(p.accuracy for p in r["rows"] if p.k == row.k and p.release == "plain")
    ]
    out = [
        "- The search behind every release minimizes information loss over its covered QIs, "
        "not the classifier's error: covering fewer QIs frees the search to keep them finer, "
        "but the node of least loss need not be the most accurate one. Releases below plain "
        f"accuracy: {', '.join(below) or 'none'} (compare their levels with plain's).",
        "- E = 5 equals plain k-anonymity by construction: with every ranked QI in tiers 1..5, "
        "release 5 covers the same columns with the same engine, and the script checks the two "
        "tables are identical (marked '(= plain)').",
    ]
    for result in results:
        rows: list[Row] = result["rows"]
        by = {(r.k, r.release): r for r in rows}
        original = by[(0, "original")].accuracy
        gaps = "; ".join(
            f"k={k}: E=1 {by[(k, 'E=1')].accuracy - original:+.4f}, plain "
            f"{by[(k, 'plain')].accuracy - original:+.4f}"
            for k in ks
        )
        n = len(result["dataset"].frame)
        plain_mean = float(np.mean([by[(k, "plain")].accuracy for k in ks]))
        se = math.sqrt(plain_mean * (1 - plain_mean) / n)
        small = [
            f"k={k} E={e} ({by[(k, f'E={e}')].accuracy - by[(k, 'plain')].accuracy:+.4f})"
            for k in ks
            for e in (3, 4)
            if abs(by[(k, f"E={e}")].accuracy - by[(k, "plain")].accuracy) < 2 * se
        ]
        out.append(
            f"- {result['dataset'].name}, noise yardstick: the binomial standard error of an "
            f"accuracy near {plain_mean:.3f} over {n} records is {se:.4f}, so a difference "
            f"from plain below 2 SE = {2 * se:.4f} is within what another fold split could "
            f"change. Claim cells (E = 3, 4) within it: {', '.join(small) or 'none'}."
        )
        out.append(
            f"- {result['dataset'].name}: the original QIs reach {original:.4f}; accuracy "
            f"relative to it ({gaps}). Releases E < 5 leave the QIs of tiers E+1..5 as they are, "
            "so they are k-anonymous only on their covered columns (see 'covered QIs'); a "
            "record can still be singled out by the uncovered ones."
        )
    return out


def upsert_section(path: Path, text: str) -> None:
    """Replace this benchmark's section of ``path`` (or append it); keep every other one."""
    _upsert(path, SECTION_HEADING, text, INTRO)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10, 50])
    parser.add_argument(
        "--n-estimators", type=int, default=1000, help="trees of the ranking forest"
    )
    parser.add_argument(
        "--stability-seeds",
        type=int,
        default=3,
        help="rank with random_state 0..N-1 and report whether the tiers change",
    )
    parser.add_argument(
        "--write", action="store_true", help=f"update {os.path.relpath(BENCHMARKS_MD, REPO_ROOT)}"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    clock = time.perf_counter()
    results = [measure_dataset(adult(), args), measure_dataset(bank(), args)]
    seconds = time.perf_counter() - clock
    load_after = os.getloadavg()
    text = section(results, args, started, seconds, load_before, load_after)
    print(text)
    if args.write:
        upsert_section(BENCHMARKS_MD, text)
        print(f"wrote section {SECTION_HEADING!r} to {os.path.relpath(BENCHMARKS_MD, REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
