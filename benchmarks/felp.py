"""FELP: accuracy of DP feature selection vs the non-private ensemble (issues 6 and 13).

On three data sets (UCI Breast Cancer Wisconsin, scikit-learn's bundled WDBC, UCI Soybean
(Large)), FELP (:func:`core.dp.felp.felp_select`, k = 20 subsets, beta = 0.9, lam = 1) keeps
10 % of the features (``max(1, ceil(0.1 d))``), and an SVM (``SVC(C=1)``, RBF) and a 3-NN
classifier are scored by 10-fold stratified cross-validation on the kept features only. FELP is
run only with its proven calibration (L1 sensitivity ``2 sqrt(d) / lam``, OpenDP Laplace noise)
and each data set's *declared* public feature bounds. Rows:

* **all features**: no selection;
* **non-private FELP**: ``epsilon=None``, the same subsets as the private runs;
* **FELP epsilon = ...**: the private selection, for every epsilon of the grid;
* **random features**: ``n_keep`` features drawn uniformly (what pure noise would select).

Every FELP row is the mean over ``--reps`` repetitions; repetition ``r`` uses
``random_state = seed + r`` for the subsets (shared by the private and non-private rows) and
fresh operating-system noise. The folds are fixed (``random_state = seed``), and an accuracy is
computed once per distinct feature set.

Run from the repository root::

    .venv/bin/python benchmarks/felp.py            # print the section
    .venv/bin/python benchmarks/felp.py --write    # also update BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import shlex
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import _environment as environment  # noqa: E402 (script dir)
from _markdown import upsert_section as _upsert  # noqa: E402 (script dir)

from privgate.core.datasets import load_breast_cancer_wisconsin, load_soybean_large  # noqa: E402
from privgate.core.dp.felp import felp_select, felp_sensitivity  # noqa: E402

BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
DATA_DIR = environment.SHARED_DATA
SECTION_HEADING = "## FELP: DP ensemble feature selection vs the non-private ensemble (issue 6)"
EPSILONS = (0.1, 1.0, 10.0, 100.0)
N_SUBSETS, BETA, LAM = 20, 0.9, 1.0
KEEP_FRACTION = 0.1


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    y: np.ndarray
    source: str
    note: str
    #: Declared public per-feature bounds (lower, upper), with where they come from.
    bounds: tuple
    bounds_source: str


def _wdbc_bounds(description: str, features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The published min and max of every WDBC feature, from the dataset's own documentation
    (scikit-learn's DESCR summary table), rounded outward: public, never read from the rows."""
    found = {}
    for line in description.splitlines():
        if ":" in line:
            name, _, rest = line.partition(":")
            numbers = rest.split()
            if len(numbers) == 2:
                try:
                    found[name.strip()] = (float(numbers[0]), float(numbers[1]))
                except ValueError:
                    continue
    keys = []
    for feature in features:
        kind, _, base = feature.partition(" ")
        if kind in ("mean", "worst"):
            keys.append(f"{base} ({kind})")
        else:  # "radius error" -> "radius (standard error)"
            keys.append(f"{feature.removesuffix(' error')} (standard error)")
    lower = np.array([math.floor(found[k][0] * 0.9 * 1000) / 1000 for k in keys])
    upper = np.array([math.ceil(found[k][1] * 1.1 * 1000) / 1000 for k in keys])
    return lower, upper


@dataclass
class Row:
    label: str
    epsilon: float | None
    sensitivity: float | None
    svm: list[float] = field(default_factory=list)
    knn: list[float] = field(default_factory=list)
    overlap: list[float] = field(default_factory=list)
    selections: list[tuple[int, ...]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


# ------------------------------------------------------------------------------------------
# Data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def load_datasets() -> list[Dataset]:
    bcw_path = DATA_DIR / "breast_cancer_wisconsin" / "breast-cancer-wisconsin.data"
    bcw = load_breast_cancer_wisconsin(bcw_path)
    complete = bcw.dropna()
    soy_path = DATA_DIR / "soybean_large" / "soybean-large.csv"
    soy = load_soybean_large(soy_path)
    soy_features = soy.drop(columns=["class"])
    missing = int(soy_features.isna().sum().sum())
    modes = soy_features.mode(dropna=True).iloc[0]
    soy_imputed = soy_features.fillna(modes)
    wdbc = load_breast_cancer()
    return [
        Dataset(
            "BCW",
            complete.drop(columns=["sample_code_number", "class"]).to_numpy(dtype=float),
            complete["class"].to_numpy(dtype=int),
            f"`{os.path.relpath(bcw_path, REPO_ROOT)}` (sha256 `{_sha(bcw_path)}...`)",
            f"{len(bcw)} records; the {len(bcw) - len(complete)} with a missing `bare_nuclei` "
            f"dropped ({len(complete)} left, the usual 683); 9 attributes (the id dropped), "
            "2 classes",
            (1.0, 10.0),
            "1-10 (breast-cancer-wisconsin.names: every attribute is graded 1-10)",
        ),
        Dataset(
            "WDBC",
            wdbc.data,
            wdbc.target,
            "`sklearn.datasets.load_breast_cancer()` (bundled with scikit-learn, no download)",
            f"{wdbc.data.shape[0]} records, {wdbc.data.shape[1]} real-valued features, 2 classes, "
            "no missing values",
            _wdbc_bounds(wdbc.DESCR, wdbc.feature_names),
            "the published per-feature min and max of the dataset's documentation (the DESCR "
            "summary table), widened by 10 %",
        ),
        Dataset(
            "Soybean",
            soy_imputed.to_numpy(dtype=float),
            soy["class"].to_numpy(dtype=str),
            f"`{os.path.relpath(soy_path, REPO_ROOT)}` (sha256 `{_sha(soy_path)}...`)",
            f"{len(soy)} records, 35 coded attributes, {soy['class'].nunique()} classes (one "
            f"with a single record); the {missing} `?` replaced by the attribute's most frequent "
            "code (a non-private preprocessing step, the same for every row of the table; "
            "dropping incomplete records would remove 4 of the 19 classes entirely)",
            (0.0, 6.0),
            "0-6 (UCI's attribute codes; the widest attribute, date, has 7 codes)",
        ),
    ]


# ------------------------------------------------------------------------------------------
# Measuring


class Scorer:
    """10-fold CV accuracy of SVM(C=1) and 3-NN on a feature subset, cached per subset."""

    def __init__(self, data: Dataset, folds: int, seed: int) -> None:
        self.data = data
        self.cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        self.cache: dict[tuple[int, ...], tuple[float, float]] = {}

    def __call__(self, columns: Sequence[int]) -> tuple[float, float]:
        key = tuple(sorted(int(c) for c in columns))
        if key not in self.cache:
            X = self.data.X[:, list(key)]
            scores = []
            for model in (SVC(C=1.0), KNeighborsClassifier(n_neighbors=3, n_jobs=1)):
                with warnings.catch_warnings():
                    # Soybean's single-record class cannot be in every fold; sklearn warns.
                    warnings.filterwarnings("ignore", message="The least populated class")
                    accuracy = cross_val_score(
                        make_pipeline(MinMaxScaler(), model), X, self.data.y, cv=self.cv
                    )
                scores.append(float(accuracy.mean()))
            self.cache[key] = (scores[0], scores[1])
        return self.cache[key]


def n_keep_for(d: int) -> int:
    return max(1, math.ceil(KEEP_FRACTION * d - 1e-9))


def measure(data: Dataset, args) -> dict:
    n, d = data.X.shape
    n_keep = n_keep_for(d)
    score = Scorer(data, args.folds, args.seed)
    all_svm, all_knn = score(range(d))

    def run(row: Row, reference: Row | None, **kwargs) -> None:
        for rep in range(args.reps):
            result = felp_select(
                data.X,
                data.y,
                n_keep=n_keep,
                n_subsets=N_SUBSETS,
                beta=BETA,
                lam=LAM,
                random_state=args.seed + rep,
                bounds=data.bounds,
                **kwargs,
            )
            svm, knn = score(result.selected)
            row.svm.append(svm)
            row.knn.append(knn)
            row.selections.append(tuple(sorted(result.selected)))
            row.seconds.append(result.seconds)
            if reference is not None:
                common = set(reference.selections[rep]) & set(result.selected)
                row.overlap.append(len(common) / n_keep)

    plain = Row("non-private FELP", None, None)
    run(plain, None, epsilon=None)
    weight_norm = float(
        np.linalg.norm(
            felp_select(
                data.X,
                data.y,
                n_keep=n_keep,
                epsilon=None,
                n_subsets=N_SUBSETS,
                beta=BETA,
                lam=LAM,
                random_state=args.seed,
                bounds=data.bounds,
            ).weights
        )
    )
    rows = [plain]
    for epsilon in args.epsilons:
        row = Row(f"FELP ε = {epsilon:g}", epsilon, felp_sensitivity(d, LAM))
        run(row, plain, epsilon=epsilon)
        rows.append(row)
    rng = np.random.default_rng(args.seed)
    random_row = Row("random features", None, None)
    for rep in range(args.reps):
        chosen = rng.choice(d, size=n_keep, replace=False)
        svm, knn = score(chosen)
        random_row.svm.append(svm)
        random_row.knn.append(knn)
        random_row.overlap.append(len(set(plain.selections[rep]) & set(chosen)) / n_keep)
    rows.append(random_row)
    print(
        f"{data.name}: n={n}, d={d}, keep {n_keep}; all features SVM {all_svm:.4f} "
        f"3-NN {all_knn:.4f}; non-private {np.mean(plain.svm):.4f}/{np.mean(plain.knn):.4f}",
        file=sys.stderr,
        flush=True,
    )
    return {
        "data": data,
        "n": n,
        "d": d,
        "n_keep": n_keep,
        "all": (all_svm, all_knn),
        "rows": rows,
        "weight_norm": weight_norm,
        "distinct_sets": len(score.cache),
    }


# ------------------------------------------------------------------------------------------
# Formatting


def _ms(values: Sequence[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{np.mean(values):.4f} ± {np.std(values, ddof=1):.4f}"


def _mean(values: Sequence[float]) -> str:
    return f"{np.mean(values):.2f}" if values else "—"


def _common(selections: Sequence[tuple[int, ...]]) -> str:
    if not selections:
        return "—"
    counts = pd.Series([", ".join(map(str, s)) for s in selections]).value_counts()
    return f"{{{counts.index[0]}}} ({counts.iloc[0]}/{len(selections)})"


def table(result: dict) -> str:
    d, n_keep = result["d"], result["n_keep"]
    head = (
        "| selection | features kept | sensitivity | E‖noise‖ / ‖w̄‖ | SVM accuracy | "
        "3-NN accuracy | overlap with non-private | most frequent set |\n"
        "|:---|---:|---:|---:|---:|---:|---:|:---|\n"
    )
    all_svm, all_knn = result["all"]
    lines = [f"| all features | {d} | — | — | {all_svm:.4f} | {all_knn:.4f} | — | — |"]
    for row in result["rows"]:
        ratio = "—"
        if row.epsilon is not None:
            # Laplace of scale b = s/eps per coordinate: E||noise||_2 ~ sqrt(2 d) b.
            expected_noise = math.sqrt(2 * d) * row.sensitivity / row.epsilon
            ratio = f"{expected_noise / result['weight_norm']:.3g}"
        lines.append(
            f"| {row.label} | {n_keep} | "
            + (f"{row.sensitivity:.3g}" if row.sensitivity else "—")
            + f" | {ratio} | {_ms(row.svm)} | {_ms(row.knn)} | {_mean(row.overlap)} | "
            f"{_common(row.selections)} |"
        )
    return head + "\n".join(lines) + "\n"


def reading(results: Sequence[dict], epsilons: Sequence[float]) -> list[str]:
    out = []
    for result in results:
        rows = result["rows"]
        plain = rows[0]
        private = [r for r in rows if r.epsilon is not None]
        random_row = next(r for r in rows if r.label == "random features")
        plain_svm = float(np.mean(plain.svm))
        close = [r.epsilon for r in private if np.mean(r.svm) >= plain_svm - 0.01]
        all_svm = result["all"][0]
        out.append(
            f"- **{result['data'].name}** (keep {result['n_keep']} of {result['d']}): "
            f"non-private FELP SVM accuracy {plain_svm:.4f} vs {all_svm:.4f} with all features; "
            "private FELP within 1 point of the non-private ensemble at ε = "
            + (", ".join(f"{e:g}" for e in close) if close else "none of the grid")
            + f"; random features {np.mean(random_row.svm):.4f}. Mean SVM accuracy from "
            f"ε = {min(epsilons):g} to {max(epsilons):g}: "
            + ", ".join(f"{np.mean(r.svm):.4f}" for r in private)
            + "."
        )
    return out


def machine(load_before, load_after) -> str:
    """Cores, CPU, load before/after, Python and library versions (``_environment``)."""
    return environment.machine(load_before, load_after, ("numpy", "scikit-learn"))


def code_state() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    head = proc.stdout.strip() if proc.returncode == 0 else "unknown commit"
    files = [REPO_ROOT / "core" / "dp" / "felp.py", REPO_ROOT / "core" / "dp" / "mechanisms.py"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
    return f"git {head}; sha256 of core/dp/felp.py + core/dp/mechanisms.py `{digest[:12]}`"


def section(results, args, started, seconds, load_before, load_after) -> str:
    script = os.path.relpath(Path(__file__).resolve(), REPO_ROOT)
    python = os.path.relpath(sys.executable, REPO_ROOT)
    parts = [
        SECTION_HEADING,
        "",
        f"Command (from the repository root): `{shlex.join([python, script, *sys.argv[1:]])}`",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC; total run time {seconds / 60:.1f} min",
        f"- Machine: {machine(load_before, load_after)}",
        f"- Code measured: {code_state()}",
        "- Data: "
        + "; ".join(f"**{r['data'].name}** {r['data'].source}: {r['data'].note}" for r in results)
        + ".",
        f"- FELP (`core.dp.felp.felp_select`): k = {N_SUBSETS} subsets of round(β n) records "
        f"drawn without replacement, β = {BETA}, λ = {LAM}; features scaled to [0, 1] with "
        "declared bounds ("
        + "; ".join(f"{r['data'].name}: {r['data'].bounds_source}" for r in results)
        + "); nearest hit/miss by L1 distance in the unweighted scaled space; margins clipped "
        "to L2 norm 1; weights w >= 0 minimising the mean logistic loss + (λ/2)‖w‖² "
        "(L-BFGS-B), averaged and projected onto the L2 ball of radius 1/λ; Laplace noise per "
        "coordinate drawn by OpenDP at L1 sensitivity s = 2√d/λ (the proven bound of "
        "`core/dp/felp.py`: it holds for any two tables, because one record can change every "
        "margin of its subsets; the earlier per-record calibrations 2/(nλ) and 2/(mλ) are "
        "withdrawn: an audit refutes them, tests/core/dp/test_felp.py).",
        f"- Kept features: max(1, ceil(10 % of d)). Accuracy: mean {args.folds}-fold stratified "
        f"CV accuracy (`StratifiedKFold(shuffle=True, random_state={args.seed})`, the same folds "
        "in every row) of `SVC(C=1)` (RBF, gamma='scale') and `KNeighborsClassifier(3)`, each "
        "after a `MinMaxScaler` fitted inside the fold, on the kept features. The selection "
        "itself sees all records (it is not repeated inside each fold), so the CV accuracy of "
        "a selected set is optimistic by the usual selection bias for every FELP row alike. "
        "With a single kept feature (BCW) 3-NN is dominated by distance ties (hundreds of "
        "records share one code) that scikit-learn breaks by the training order, so its "
        "accuracy there says more about ties than about the feature.",
        f"- Repetitions: {args.reps} per FELP row (subsets seeded {args.seed}.."
        f"{args.seed + args.reps - 1}, fresh OpenDP noise each time); cells are mean ± sample "
        "standard deviation over the "
        "repetitions. *Overlap* = |selected ∩ non-private selection of the same subsets| / "
        "kept. *E‖noise‖ / ‖w̄‖* = expected noise norm √(2d)·s/ε over the norm of the non-private "
        "averaged weights (subset seed "
        f"{args.seed}): above ~1 the noise, not the data, decides the ranking. *Most frequent "
        "set*: the column indices selected most often (and how often).",
        "- Baseline: the non-private ensemble (same subsets, no noise) and all features, in the "
        "same script and folds. The FELP paper's own accuracy figures were not available "
        "here, so this run checks FELP against those baselines, not against published numbers.",
        "",
    ]
    for result in results:
        parts += [
            f"### {result['data'].name}: n = {result['n']}, d = {result['d']}",
            "",
            table(result),
        ]
    parts += ["### Reading", "", *reading(results, args.epsilons), ""]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=10, help="noise repetitions per FELP row")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--write", action="store_true", help="upsert into BENCHMARKS.md")
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    load_before = environment.load_average()
    clock = time.perf_counter()
    results = [measure(data, args) for data in load_datasets()]
    seconds = time.perf_counter() - clock
    text = section(results, args, started, seconds, load_before, environment.load_average())
    print(text)
    if args.write:
        _upsert(BENCHMARKS_MD, SECTION_HEADING, text)
        print(f"updated {BENCHMARKS_MD}", file=sys.stderr)


if __name__ == "__main__":
    main()
