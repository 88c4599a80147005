"""Every Adult release of issue 21 on one split: utility and attack evidence in one table.

Every method runs on the same split of ARX's ``adult.csv`` (30,162 records, 9 columns):
``train`` (80 %, seeded, stratified on ``salary-class``) is the release's input, ``test`` (20 %)
is held out: the classifier is tested on it, and it is the attacks' control set (records the
release cannot contain). The releases: the original itself, the optimal full-domain
k-anonymous release and strict Mondrian (k = 5, 10; the ``policies/adult.yaml`` policy, as in
``utility_adult.py``), and at every epsilon SafePub, DPHeter, MST and AIM.

**One rule for generalized and raw releases alike.** Every released record is read as a
distribution over the declared leaf values (the ARX hierarchies' values, age 1-100, the two
classes): a raw value is its own leaf, a generalized value (a hierarchy label, ``*``, an age
range ``lo-hi`` or ``[lo, hi)``) is spread uniformly over the leaves it covers, independently
per column (:class:`Spread`). Marginals and the classifier's features are computed from these
distributions, so a k-anonymous, Mondrian, SafePub or DPHeter release is scored on the same
scale as a synthetic one (a raw release reduces to the usual definitions):

* **k-marginal score** (NIST CRC / SDNist): for every 3-column marginal, ``1000 x (2 - L1)/2``
  between the release's and ``train``'s densities on the leaves; mean over all 84 triples.
* **TV 1-way / 2-way**: mean total variation distance over all 1- and 2-column marginals.
* **Classification**: a random forest (``RandomForestClassifier(random_state=0)``) trained on
  the release (features: each of the 8 other columns as its leaf distribution, i.e. one-hot
  for a raw value; target ``salary-class``; DPHeter's partitions weighted by their noisy
  counts), tested on the held-out ``test`` records (raw, one-hot): accuracy and ROC AUC.
* **Attacks** (:func:`privgate.core.attacks.run_attacks`, Anonymeter's method, 500 attacks
  each, seed 0; age read as a number, generalized cells as the regions they stand for):
  singling out (multivariate, 3 columns), linkability (the columns split in two halves),
  inference (worst secret); risk and 95 % interval; and the CRC unique exact-match rate.

Rows are appended to ``--rows-file`` (JSON lines) as they are measured, so a stopped run still
yields its rows (``--render FILE`` writes the section from such a file).

Run from the repository root::

    .venv/bin/python benchmarks/synthetic_adult.py            # print the section
    .venv/bin/python benchmarks/synthetic_adult.py --write    # also update BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import _environment as environment  # noqa: E402 (script dir)
import utility_adult  # noqa: E402 (script dir: the k-anonymous releases' policy)
from _markdown import upsert_section as _upsert  # noqa: E402 (script dir)

from privgate.core import stages  # noqa: E402
from privgate.core.anonymize import SearchSetup  # noqa: E402
from privgate.core.attacks import AttackSettings, run_attacks  # noqa: E402
from privgate.core.dp import Accountant  # noqa: E402
from privgate.core.dp.dpheter import DPHeterConfig, dpheter_release  # noqa: E402
from privgate.core.dp.safepub import SafePubConfig, safepub_release  # noqa: E402
from privgate.core.dp.synthetic import SyntheticConfig, SyntheticDomains, synthesize  # noqa: E402
from privgate.core.hierarchy import ARXHierarchy, value_key  # noqa: E402
from privgate.core.policy import load_policy  # noqa: E402
from privgate.validations.schema import validate_input  # noqa: E402

BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## DP synthetic data and SafePub on Adult, with attack evidence (issue 21)"
COLUMNS = [
    "sex", "age", "race", "marital-status", "education", "native-country", "workclass",
    "occupation", "salary-class",
]  # fmt: skip
TARGET = "salary-class"
CLASSES = ["<=50K", ">50K"]
FEATURES = [c for c in COLUMNS if c != TARGET]
DELTA = 1e-6
#: age as the policy declares it (``policies/adult.yaml``: integer 1-100; ARX's hierarchy
#: covers the same 100 values). Never the data's minimum and maximum.
AGE_RANGE = (1, 100)
N_ATTACKS = 500


# ------------------------------------------------------------------------------------------
# Data


def load() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The policy's validated Adult table split 80/20; ``train`` and ``test`` keep their types.

    Read through the release flow's own ingest and schema stages (``policies/adult.yaml``), so
    the k-anonymous releases get the input the flow would give them.
    """
    policy = load_policy(utility_adult.POLICY)
    hierarchies = stages.load_hierarchies(policy)
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)[COLUMNS]
    train, test = train_test_split(frame, test_size=0.2, random_state=0, stratify=frame[TARGET])
    return train.reset_index(drop=True), test.reset_index(drop=True), dict(hierarchies)


def declared(hierarchies: Mapping) -> dict[str, list[str]]:
    """The declared domains: the hierarchies' values, and the two classes (never the data)."""
    domains = {c: [value_key(v) for v in h.domain] for c, h in hierarchies.items()}
    domains[TARGET] = list(CLASSES)
    return domains


# ------------------------------------------------------------------------------------------
# Reading a release as distributions over the declared leaves

_NUMBER = r"[-+]?\d+(?:\.\d*)?"
_RANGES = (
    (re.compile(rf"^\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$"), False),  # lo-hi, both included
    (re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*$"), True),  # [lo, hi)
    (re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]\s*$"), False),  # [lo, hi]
)


class Spread:
    """Each released value as the set of declared leaves it covers (spread uniformly).

    ``leaves`` maps every column to its declared leaf values (text). A value that is a leaf
    covers itself; ``*`` covers every leaf; a hierarchy label covers the leaves under it (ARX's
    Adult hierarchies use no label at two levels for different leaves); a numeric range
    (``lo-hi``, ``[lo, hi)``, ``[lo, hi]``) covers the numeric leaves inside it. Any other value
    is an error: a value that covers nothing would silently drop mass from a marginal.
    """

    def __init__(self, leaves: Mapping[str, Sequence[str]], hierarchies: Mapping = ()) -> None:
        self.leaves = {c: [str(v) for v in values] for c, values in leaves.items()}
        self._index = {c: {v: i for i, v in enumerate(vs)} for c, vs in self.leaves.items()}
        self._labels: dict[str, dict[str, frozenset[int]]] = {c: {} for c in self.leaves}
        for column, hierarchy in dict(hierarchies).items():
            keys = [value_key(v) for v in hierarchy.domain]
            table = hierarchy.generalize(hierarchy.domain)
            labels: dict[str, set[int]] = {}
            for level in range(1, table.shape[1]):
                for leaf, label in zip(keys, table[:, level], strict=True):
                    labels.setdefault(str(label), set()).add(self._index[column][leaf])
            self._labels[column] = {k: frozenset(v) for k, v in labels.items()}

    def cover(self, column: str, value: str) -> list[int]:
        """The leaves (indices) ``value`` stands for in ``column``."""
        index = self._index[column]
        if value in index:
            return [index[value]]
        if value == "*":
            return list(range(len(index)))
        if value in self._labels[column]:
            return sorted(self._labels[column][value])
        for pattern, open_high in _RANGES:
            match = pattern.match(value)
            if match:
                lo, hi = float(match.group(1)), float(match.group(2))
                inside = [
                    i
                    for leaf, i in index.items()
                    if lo <= float(leaf) and (float(leaf) < hi if open_high else float(leaf) <= hi)
                ]
                if inside:
                    return inside
        raise ValueError(f"{column}: released value {value!r} covers no declared leaf")

    def matrix(self, column: str, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """Codes of ``values`` and one row per distinct value: its uniform leaf distribution."""
        codes, uniques = pd.factorize(values.astype(str).to_numpy(), use_na_sentinel=False)
        rows = np.zeros((len(uniques), len(self.leaves[column])), dtype=np.float64)
        for row, value in enumerate(uniques):
            covered = self.cover(column, str(value))
            rows[row, covered] = 1.0 / len(covered)
        return codes, rows


def raw_spread(*frames: pd.DataFrame) -> Spread:
    """A spread whose leaves are the values the frames hold (for raw tables only)."""
    columns = frames[0].columns
    leaves = {
        c: sorted(set().union(*(set(f[c].astype(str)) for f in frames)), key=str) for c in columns
    }
    return Spread(leaves)


def marginal(
    frame: pd.DataFrame,
    columns: Sequence[str],
    spread: Spread,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """The normalized marginal of ``columns`` on the leaves, flattened (uniform spread).

    Records with the same values are grouped first; each group adds its weight times the outer
    product of its columns' leaf distributions.
    """
    weights = np.ones(len(frame)) if weights is None else np.asarray(weights, dtype=float)
    coded = [spread.matrix(c, frame[c]) for c in columns]
    stacked = np.stack([codes for codes, _ in coded], axis=1)
    groups, inverse = np.unique(stacked, axis=0, return_inverse=True)
    mass = np.bincount(inverse.ravel(), weights=weights, minlength=len(groups))
    first = coded[0][1][groups[:, 0]] * mass[:, None]
    rest = np.ones((len(groups), 1))
    for position, (_, rows) in enumerate(coded[1:], start=1):
        part = rows[groups[:, position]]
        rest = (rest[:, :, None] * part[:, None, :]).reshape(len(groups), -1)
    table = (first.T @ rest).ravel()
    return table / table.sum()


def _ordered(columns: Sequence[str], spread: Spread) -> list[str]:
    # The widest column goes first (the matrix side), the outer product covers the others.
    return sorted(columns, key=lambda c: -len(spread.leaves[c]))


class Scorer:
    """Marginal scores against ``original`` (its marginals computed once)."""

    def __init__(self, original: pd.DataFrame, spread: Spread) -> None:
        self.original, self.spread = original, spread
        self._cache: dict[tuple[str, ...], np.ndarray] = {}

    def _reference(self, columns: tuple[str, ...]) -> np.ndarray:
        if columns not in self._cache:
            self._cache[columns] = marginal(self.original, columns, self.spread)
        return self._cache[columns]

    def mean_tv(self, release: pd.DataFrame, k: int, weights=None) -> float:
        """Mean total variation distance over every ``k``-column marginal."""
        distances = []
        for combo in itertools.combinations(COLUMNS, k):
            columns = tuple(_ordered(combo, self.spread))
            ours = marginal(release, columns, self.spread, weights)
            distances.append(0.5 * float(np.abs(ours - self._reference(columns)).sum()))
        return float(np.mean(distances))


def k_marginal(
    release: pd.DataFrame,
    original: pd.DataFrame,
    k: int = 3,
    spread: Spread | None = None,
    weights: np.ndarray | None = None,
) -> float:
    """NIST CRC's k-marginal score: mean ``1000 x (2 - L1) / 2`` over every k-column marginal.

    Values are compared as text (39 and "39" are the same age: compared as they are, every
    marginal holding age once scored as disjoint, the identical table 667). Without a
    ``spread`` both tables are read as raw values.
    """
    spread = spread or raw_spread(release[COLUMNS], original[COLUMNS])
    return 1000 * (1 - Scorer(original, spread).mean_tv(release, k, weights))


def tv(release: pd.DataFrame, original: pd.DataFrame, k: int, spread=None, weights=None) -> float:
    return 1 - k_marginal(release, original, k, spread, weights) / 1000


# ------------------------------------------------------------------------------------------
# Classification and attacks


def features(frame: pd.DataFrame, spread: Spread) -> np.ndarray:
    """Each feature column as its leaf distribution, side by side."""
    parts = []
    for column in FEATURES:
        codes, rows = spread.matrix(column, frame[column])
        parts.append(rows[codes])
    return np.concatenate(parts, axis=1).astype(np.float32)


def classify(release, test, spread, weights=None) -> tuple[float, float]:
    """Accuracy and ROC AUC on ``test`` of a random forest trained on the release.

    The class is read by the same rule as every other column: a release row whose class is
    generalized (DPHeter's ``*`` where it did not specialize ``salary-class``) counts once per
    class it covers, with its weight split evenly (a release whose every class is ``*`` says
    nothing about it: AUC near 0.5, up to the forest's bootstrap). Accuracy predicts ``>50K``
    at a probability of at least 0.5.
    """
    weights = np.ones(len(release)) if weights is None else np.asarray(weights, dtype=float)
    codes, rows = spread.matrix(TARGET, release[TARGET])
    high = rows[codes][:, spread.leaves[TARGET].index(">50K")]
    x_train = features(release, spread)
    if np.all((high == 0) | (high == 1)):  # every class released as it is
        y_train, sample_weight = high == 1, weights
    else:
        x_train = np.concatenate([x_train, x_train])
        y_train = np.concatenate([np.ones(len(high), bool), np.zeros(len(high), bool)])
        sample_weight = np.concatenate([weights * high, weights * (1 - high)])
        keep = sample_weight > 0
        x_train, y_train, sample_weight = x_train[keep], y_train[keep], sample_weight[keep]
    y_test = (test[TARGET].astype(str) == ">50K").to_numpy()
    model = RandomForestClassifier(random_state=0, n_jobs=1)
    model.fit(x_train, y_train, sample_weight=sample_weight)
    proba = model.predict_proba(features(test, spread))
    if True not in model.classes_:  # a release with one class predicts it everywhere
        proba = np.zeros(len(test))
    else:
        proba = proba[:, list(model.classes_).index(True)]
    return accuracy_score(y_test, proba >= 0.5), roc_auc_score(y_test, proba)


def attacks(release, train, test, hierarchies) -> dict:
    evidence = run_attacks(
        release[COLUMNS].astype(str),
        train.astype(str),
        test.astype(str),
        COLUMNS,
        numeric=("age",),
        hierarchies=hierarchies,
        settings=AttackSettings(n_attacks=N_ATTACKS, seed=0),
    )
    risks = evidence.risks()
    out = {}
    for name in ("singling_out", "linkability", "inference", "unique_exact_match"):
        r = risks[name]
        out[name] = "—" if r is None else f"{r.value:.3f} [{r.low:.3f}, {r.high:.3f}]"
    return out


def _deadline(hhmm: str) -> datetime:
    """Today's (UTC) ``HH:MM`` as an aware datetime."""
    hours, minutes = (int(x) for x in hhmm.split(":"))
    return datetime.now(UTC).replace(hour=hours, minute=minutes, second=0, microsecond=0)


class Bench:
    """The split, the spread, the reference marginals and where rows go."""

    def __init__(self, args) -> None:
        self.train, self.test, self.hierarchies = load()
        self.domains = declared(self.hierarchies)
        self.spread = Spread(self.domains, self.hierarchies)
        self.scorer = Scorer(self.train, self.spread)
        self.rows: list[dict] = []
        self.rows_file = Path(args.rows_file) if args.rows_file else None
        self.skip_attacks = args.attacks == 0
        self.commit = git_commit()
        self.deadline = _deadline(args.deadline) if getattr(args, "deadline", None) else None
        self.skipped: list[str] = []

    def in_time(self, what: str = "a release") -> bool:
        """False once ``--deadline`` has passed (what was skipped is stated in the section)."""
        if self.deadline is None or datetime.now(UTC) < self.deadline:
            return True
        self.skipped.append(what)
        return False

    def append(self, row: dict) -> None:
        """Keep ``row`` and append it to the rows file (a stopped run keeps what it measured)."""
        row["git"] = self.commit
        row["command"] = shlex.join(sys.argv[1:])
        self.rows.append(row)
        if self.rows_file is not None:
            with self.rows_file.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")

    def measure(
        self, name, eps, release, seconds, weights=None, records=None, note="", draw=0
    ) -> dict:
        """Score one release and append its row (also to the rows file)."""
        row = {"release": name, "epsilon": eps, "draw": draw, "seconds": seconds, "note": note}
        row["rows"] = int(round(weights.sum())) if weights is not None else len(release)
        started = time.perf_counter()
        row["k-marginal"] = f"{1000 * (1 - self.scorer.mean_tv(release, 3, weights)):.0f}"
        row["TV 1-way"] = f"{self.scorer.mean_tv(release, 1, weights):.4f}"
        row["TV 2-way"] = f"{self.scorer.mean_tv(release, 2, weights):.4f}"
        acc, auc = classify(release, self.test, self.spread, weights)
        row["accuracy"], row["AUC"] = f"{acc:.4f}", f"{auc:.4f}"
        row["utility seconds"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        if not self.skip_attacks:
            attacked = release if records is None else records
            row.update(attacks(attacked, self.train, self.test, self.hierarchies))
        row["attack seconds"] = round(time.perf_counter() - started, 1)
        print(row, flush=True)
        self.append(row)
        return row


# ------------------------------------------------------------------------------------------
# The releases


def k_anonymous(bench: Bench, algorithm: str, k: int) -> None:
    """The policy's optimal search or strict Mondrian at ``k``, as the release flow runs it."""
    policy = load_policy(utility_adult.POLICY)
    changes: dict = {"privacy.k": k}
    if algorithm == "mondrian":
        changes["algorithm"] = {"name": "mondrian"}
    policy = policy.with_overrides(**changes)
    started = time.perf_counter()
    [table] = stages.anonymize(bench.train, SearchSetup.from_policy(policy, bench.hierarchies))
    seconds = round(time.perf_counter() - started, 1)
    note = ""
    if algorithm == "optimal":
        note = "levels " + ",".join(str(v) for v in table.result.levels.values())
    bench.measure(f"{algorithm} k={k}", "—", table.frame[COLUMNS], seconds, note=note)


def safepub(bench: Bench, eps: float, draw: int = 0) -> None:
    started = time.perf_counter()
    try:
        result = safepub_release(
            bench.train.astype(str),
            bench.domains,
            bench.hierarchies,
            SafePubConfig(eps, DELTA),
            Accountant((eps, DELTA)),
        )
    except ValueError as error:  # refused: stated in the table
        print(f"safepub eps={eps}: {error}", flush=True)
        row = {"release": "safepub", "epsilon": eps, "draw": draw, "note": f"refused: {error}"}
        bench.append(row)
        return
    seconds = round(time.perf_counter() - started, 1)
    name = f"safepub (k={result.k}, beta={result.beta:.3f})"
    bench.measure(name, eps, result.frame[COLUMNS], seconds, draw=draw)


def dpheter(bench: Bench, eps: float, rounds: int, draw: int = 0) -> None:
    """DPHeter on the same 9 columns; the class released as a flat attribute.

    DPHeter scores its specializations against a class that it does not release; for a
    classifier the release needs the class, so ``salary-class`` is also released as a
    categorical attribute with the flat taxonomy ``{<=50K, >50K} -> *`` (a specialization
    candidate like any other; the score's class is a copy of it).
    """
    started = time.perf_counter()
    result = _dpheter_result(bench, eps, rounds)
    seconds = round(time.perf_counter() - started, 1)
    table = result.table[result.table["count"] > 0].reset_index(drop=True)
    weights = table["count"].to_numpy(dtype=float)
    specialized = sorted({s["attribute"] for s in result.specializations})
    note = f"{len(result.table)} partitions; specialized: {', '.join(specialized) or 'none'}"
    bench.measure(
        f"dpheter (h={rounds})",
        eps,
        table[COLUMNS],
        seconds,
        weights=weights,
        records=result.expand()[COLUMNS],
        note=note,
        draw=draw,
    )


def _dpheter_result(bench: Bench, eps: float, rounds: int):
    frame = bench.train.assign(**{"class (scored)": bench.train[TARGET]})
    categorical = {c: h for c, h in bench.hierarchies.items() if c != "age"}
    categorical[TARGET] = ARXHierarchy(
        TARGET, [[v, "*"] for v in CLASSES], source="declared classes (flat)"
    )
    return dpheter_release(
        frame,
        class_column="class (scored)",
        class_domain=CLASSES,
        categorical=categorical,
        numeric=["age"],
        numeric_bounds={"age": AGE_RANGE},
        config=DPHeterConfig(epsilon=eps, rounds=rounds),
        accountant=Accountant((eps, 0.0)),
    )


def synthetic(bench: Bench, method: str, eps: float, aim_rounds: int, draw: int = 0) -> None:
    domains = SyntheticDomains(
        COLUMNS,
        {c: v for c, v in bench.domains.items() if c != "age"},
        {"age": (float(AGE_RANGE[0]), float(AGE_RANGE[1]))},
        frozenset({"age"}),
    )
    config = SyntheticConfig(method, eps, DELTA, aim_degree=3, aim_rounds=aim_rounds)
    started = time.perf_counter()
    result = synthesize(bench.train.astype(str), domains, config, Accountant((eps, DELTA)))
    seconds = round(time.perf_counter() - started, 1)
    note = f"{len(result.marginals)} marginals measured"
    bench.measure(method, eps, result.frame, seconds, note=note, draw=draw)


# ------------------------------------------------------------------------------------------
# The DPHeter paper's comparison: clustering F-measure of DPHeter and SafePub

CLUSTERINGS = (("kmeans", 3), ("kmeans", 5), ("bisecting_kmeans", 3), ("bisecting_kmeans", 5))


def _clusterer(method: str, n: int):
    from sklearn.cluster import BisectingKMeans, KMeans

    if method == "kmeans":  # as privgate.core.utility.cluster_labels
        return KMeans(n_clusters=n, n_init=10, random_state=0)
    return BisectingKMeans(n_clusters=n, random_state=0)


def release_clusters(release, weights, generalized, spread, method, n) -> np.ndarray:
    """Each original record's cluster under the release's clustering (the paper's protocol).

    The release is clustered (records weighted by their count) in the leaf-distribution space of
    :func:`features`; every original record is generalized as the release generalizes it
    (``generalized``: SafePub's scheme, DPHeter's leaf partition) and takes the cluster the
    release's clustering gives that generalized record.
    """
    model = _clusterer(method, n).fit(features(release, spread), sample_weight=weights)
    return model.predict(features(generalized, spread))


def fmeasure_rows(bench: Bench, epsilons, repetitions: int, rounds: int) -> list[dict]:
    """F-measure of DPHeter and SafePub releases against the original's clustering."""
    from privgate.core.utility import cluster_labels, f_measure

    original = features(bench.train, bench.spread)
    truth = {(m, n): cluster_labels(original, n, m, seed=0) for m, n in CLUSTERINGS}
    rows = []
    for repetition in range(repetitions):  # every epsilon once before any twice
        for eps in epsilons:
            if not bench.in_time(f"F-measure eps={eps:g} draw {repetition + 1}"):
                continue
            for name, (release, weights, generalized) in _generalizing(bench, eps, rounds).items():
                row = {
                    "kind": "fmeasure",
                    "release": name,
                    "epsilon": eps,
                    "repetition": repetition,
                }
                for method, n in CLUSTERINGS:
                    predicted = release_clusters(
                        release, weights, generalized, bench.spread, method, n
                    )
                    row[f"{method} {n}"] = round(f_measure(truth[(method, n)], predicted), 4)
                print(row, flush=True)
                bench.append(row)
                rows.append(row)
    return rows


def _generalizing(bench: Bench, eps: float, rounds: int) -> dict:
    """A SafePub and a DPHeter release: (release, weights, the train records generalized).

    SafePub refuses some epsilons (its sampling epsilon is at most 5): then DPHeter only.
    """
    out = {}
    try:
        sp = safepub_release(
            bench.train.astype(str),
            bench.domains,
            bench.hierarchies,
            SafePubConfig(eps, DELTA),
            Accountant((eps, DELTA)),
        )
    except ValueError as error:
        print(f"safepub eps={eps}: {error}", flush=True)
        sp = None
    if sp is not None:
        generalized = bench.train.astype(str).copy()
        for column, level in sp.scheme.items():
            if column in bench.hierarchies:
                labels = bench.hierarchies[column].generalize(generalized[column].tolist())
                generalized[column] = np.asarray(labels)[:, level].astype(str)
        out["safepub"] = (sp.frame[COLUMNS], None, generalized)
    dh = _dpheter_result(bench, eps, rounds)
    table = dh.table.drop(columns="count")
    partition = dh.partition_index(bench.train.assign(**{"class (scored)": bench.train[TARGET]}))
    out["dpheter"] = (table, dh.table["count"].to_numpy(dtype=float), table.iloc[partition])
    return out


# ------------------------------------------------------------------------------------------
# Command line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--epsilons", default="0.5,1,2,10")
    parser.add_argument("--k", default="5,10")
    parser.add_argument("--aim-rounds", type=int, default=30)
    parser.add_argument("--dpheter-rounds", type=int, default=8)
    parser.add_argument("--methods", default="original,optimal,mondrian,safepub,dpheter,mst,aim")
    parser.add_argument("--attacks", type=int, default=500, help="attacks per kind (0: none)")
    parser.add_argument("--rows-file", help="append every row to this JSON-lines file")
    parser.add_argument(
        "--fmeasure-reps", type=int, default=0, help="DPHeter vs SafePub F-measure repetitions"
    )
    parser.add_argument("--render", help="only render the section from these rows files (a,b)")
    parser.add_argument("--notes", help="markdown placed under the heading (how the rows ran)")
    parser.add_argument("--draws", type=int, default=3, help="fresh draws per DP (method, eps)")
    parser.add_argument(
        "--deadline", help="UTC HH:MM after which no further release starts (rows stay partial)"
    )
    args = parser.parse_args(argv)
    global N_ATTACKS
    N_ATTACKS = args.attacks
    if args.render:
        rows = [
            json.loads(line)
            for name in args.render.split(",")
            for line in Path(name).read_text().splitlines()
            if line.strip()
        ]
        text = render(rows, args, None, None, None)
        print(text)
        if args.write:
            _upsert(BENCHMARKS_MD, SECTION_HEADING, text)
        return 0
    methods = args.methods.split(",")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    load_before = environment.load_average()
    started_all = time.perf_counter()
    bench = Bench(args)
    if "original" in methods:
        bench.measure("original (train itself)", "—", bench.train, 0.0)
    for algorithm in ("optimal", "mondrian"):
        if algorithm in methods:
            for k in (int(x) for x in args.k.split(",")):
                k_anonymous(bench, algorithm, k)

    # Every cell once before any cell twice: SafePub and DPHeter (fast), the synthesizers
    # (slow), then the fast cells' further draws, the F-measure comparison and the
    # synthesizers' further draws. A run stopped by --deadline keeps what it measured.
    def fast(draw: int) -> None:
        for eps in epsilons:
            if "safepub" in methods and bench.in_time(f"safepub eps={eps:g} draw {draw + 1}"):
                safepub(bench, eps, draw)
            if "dpheter" in methods and bench.in_time(f"dpheter eps={eps:g} draw {draw + 1}"):
                dpheter(bench, eps, args.dpheter_rounds, draw)

    def slow(draw: int) -> None:
        for method in ("mst", "aim"):
            if method in methods:
                for eps in epsilons:
                    if bench.in_time(f"{method} eps={eps:g} draw {draw + 1}"):
                        synthetic(bench, method, eps, args.aim_rounds, draw)

    if args.draws:
        fast(0)
        slow(0)
    for draw in range(1, args.draws):
        fast(draw)
    if args.fmeasure_reps:
        fmeasure_rows(bench, epsilons, args.fmeasure_reps, args.dpheter_rounds)
    for draw in range(1, args.draws):
        slow(draw)
    total = time.perf_counter() - started_all
    text = render(bench.rows, args, load_before, environment.load_average(), total, bench.skipped)
    print(text)
    if args.write:
        _upsert(BENCHMARKS_MD, SECTION_HEADING, text)
    return 0


HEADERS = [
    "release", "epsilon", "draws", "rows", "seconds", "k-marginal", "TV 1-way", "TV 2-way",
    "accuracy", "AUC", "singling_out", "linkability", "inference", "unique_exact_match",
]  # fmt: skip


def git_commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT
    ).stdout.strip()


_RISK = re.compile(rf"^({_NUMBER}) \[({_NUMBER}), ({_NUMBER})\]$")
_NUMERIC = ("rows", "seconds", "k-marginal", "TV 1-way", "TV 2-way", "accuracy", "AUC")
_RISKS = ("singling_out", "linkability", "inference", "unique_exact_match")


def _digits(values: Sequence[str]) -> int:
    text = str(values[0])
    return len(text.split(".")[1]) if "." in text else 0


def aggregate(rows: list[dict]) -> dict:
    """One table row from the draws of one (release, epsilon) cell.

    A single draw is shown as measured. Over several draws a number is ``mean (min-max)``
    and an attack risk ``mean (min-max) <=high``: the mean and range of the measured risk
    over the draws and the highest upper 95 % bound any draw had (what a gate on the
    upper bound would have seen at worst).
    """
    first = rows[0]
    out = {"release": first["release"], "epsilon": first["epsilon"], "draws": len(rows)}
    if "note" in first and str(first.get("note", "")).startswith("refused"):
        out["draws"], out["rows"] = "—", "refused"  # nothing was released, nothing drawn
        return out
    for header in _NUMERIC + _RISKS:
        values = [r[header] for r in rows if r.get(header) not in (None, "", "—")]
        if not values:
            out[header] = "—"
        elif len(rows) == 1:
            out[header] = values[0]
        elif header in _RISKS:
            parsed = [_RISK.match(str(v)) for v in values]
            risk = np.array([float(m.group(1)) for m in parsed])
            high = max(float(m.group(3)) for m in parsed)
            out[header] = f"{risk.mean():.3f} ({risk.min():.3f}-{risk.max():.3f}) <={high:.3f}"
        else:
            numbers = np.array([float(v) for v in values])
            places = _digits(values)
            out[header] = (
                f"{numbers.mean():.{places}f} "
                f"({numbers.min():.{places}f}-{numbers.max():.{places}f})"
            )
    return out


def cells(rows: list[dict]) -> list[list[dict]]:
    """The rows grouped by (release, epsilon), in the order they were first measured."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((str(row["release"]), str(row["epsilon"])), []).append(row)
    return list(groups.values())


def welch(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` and its Welch t interval at ``level`` (unequal variances).

    Needs at least two values on each side; a side with no spread at all (every draw gave
    the same F) leaves the other side's variance alone in the interval.
    """
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = float(np.sqrt(va + vb))
    if se == 0.0:
        return diff, diff, diff
    dof = (va + vb) ** 2 / (
        (va**2 / (len(a) - 1) if va else 0.0) + (vb**2 / (len(b) - 1) if vb else 0.0)
    )
    half = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    return diff, diff - half, diff + half


def fmeasure_comparison(rows: list[dict]) -> list[str]:
    """DPHeter minus SafePub per epsilon and clustering, with Welch intervals and a verdict.

    The verdict holds family-wise: each interval is widened by Bonferroni over every
    comparison in the table (a direction is claimed only where that interval excludes 0).
    """
    names = [f"{m} {n}" for m, n in CLUSTERINGS]
    epsilons = sorted({float(r["epsilon"]) for r in rows})
    pairs = []
    for eps in epsilons:
        sides = {
            name: [r for r in rows if r["release"] == name and float(r["epsilon"]) == eps]
            for name in ("dpheter", "safepub")
        }
        if min(len(v) for v in sides.values()) >= 2:
            pairs.append((eps, sides))
    if not pairs:
        return []
    family = len(pairs) * len(names)
    strict = 1 - 0.05 / family
    lines = [
        "| epsilon | draws (DPHeter / SafePub) | clustering | DPHeter - SafePub [95 %] | "
        f"family-wise [{100 * strict:.2f} %] | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for eps, sides in pairs:
        for name in names:
            a = [r[name] for r in sides["dpheter"]]
            b = [r[name] for r in sides["safepub"]]
            diff, lo, hi = welch(a, b)
            _, flo, fhi = welch(a, b, strict)
            verdict = (
                "DPHeter higher" if flo > 0 else "SafePub higher" if fhi < 0 else "inconclusive"
            )
            lines.append(
                f"| {eps:g} | {len(a)} / {len(b)} | {name} | {diff:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                f"| [{flo:+.3f}, {fhi:+.3f}] | {verdict} |"
            )
    return lines


def fmeasure_table(rows: list[dict]) -> list[str]:
    """Mean (min-max) F-measure per release and epsilon over the repetitions."""
    if not rows:
        return []
    names = [f"{m} {n}" for m, n in CLUSTERINGS]
    lines = [
        "| release | epsilon | draws | " + " | ".join(names) + " |",
        "|" + "---|" * (3 + len(names)),
    ]
    keys = sorted({(r["release"], float(r["epsilon"])) for r in rows}, key=lambda k: (k[1], k[0]))
    for release, eps in keys:
        sel = [r for r in rows if r["release"] == release and float(r["epsilon"]) == eps]
        cells = []
        for name in names:
            values = [r[name] for r in sel]
            cells.append(f"{np.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})")
        lines.append(f"| {release} | {eps:g} | {len(sel)} | " + " | ".join(cells) + " |")
    return lines


def render(rows, args, load_before, load_after, total, skipped=()) -> str:
    fmeasure = [r for r in rows if r.get("kind") == "fmeasure"]
    rows = [r for r in rows if r.get("kind") != "fmeasure"]
    commit = ", ".join(sorted({r["git"] for r in rows + fmeasure if r.get("git")})) or git_commit()
    if load_before is None:
        when = "rendered from the rows file " + f"`{args.render}`"
        machine = "as stated above for the invocations the rows came from"
    else:
        when = f"total run time {total / 60:.1f} min"
        machine = environment.machine(load_before, load_after, ("numpy", "opendp", "jax"))
    notes = Path(args.notes).read_text().rstrip("\n") + "\n" if args.notes else ""
    lines = [
        SECTION_HEADING,
        "",
        *([notes] if notes else []),
        f"Command (from the repository root): `.venv/bin/python benchmarks/synthetic_adult.py "
        f"{shlex.join(sys.argv[1:])}`",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {when}",
        f"- Machine: {machine}",
        f"- Code: git {commit}",
        "- Data: ARX `adult.csv` through `policies/adult.yaml`'s ingest and schema stages "
        "(30,162 records, 9 columns), split 80/20 (`train_test_split(random_state=0, "
        "stratify=salary-class)`): 24,129 train (every release's input), 6,033 test (held out: "
        "classifier test set and attack control set).",
        "- Marginals and classifier features, one rule for every release: each released value "
        "is spread uniformly over the declared leaves it covers (a raw value is its own leaf; "
        "`*`, a hierarchy label or an age range covers the leaves under it; age leaves 1-100 "
        "as declared), columns independently; DPHeter's partitions weighted by their noisy "
        "counts. k-marginal = mean over the 84 three-way marginals of 1000 x (1 - TV); TV "
        "1-way/2-way = mean total variation over the 9 / 36 marginals. Classifier: random "
        "forest (scikit-learn defaults, random_state 0) trained on the release, tested on the "
        "6,033 held-out raw records.",
        "- optimal / mondrian: `stages.anonymize` with `policies/adult.yaml` (2 % suppression "
        "for optimal; suppressed records are not released) at k = 5, 10. SafePub: "
        "`privgate.core.dp.safepub`, delta = 1e-6. DPHeter: `privgate.core.dp.dpheter` "
        f"(h = {args.dpheter_rounds} rounds, information gain against salary-class, which is "
        "also released as a flat attribute; age bounds 1-100 declared). MST and AIM: "
        "`privgate.core.dp.synthetic` (OpenDP 0.16 `opendp[mbi]`), delta = 1e-6, declared "
        f"domains (age 1-100); AIM with the 3-way workload and at most {args.aim_rounds} rounds.",
        f"- Attacks: `privgate.core.attacks.run_attacks`, {args.attacks} attacks each, seed 0, "
        "age numeric, generalized cells read as regions; risk [95 % interval]; inference = the "
        "worst of the 9 secrets. DPHeter is attacked on its records (each partition repeated "
        "by its noisy count).",
        f"- Draws: every DP cell is released {getattr(args, 'draws', 1)} times with fresh noise "
        "(column `draws` says how many it got); each draw is scored and attacked on its own. "
        "Over several draws a number is `mean (min-max)` over the draws and an attack risk "
        "`mean (min-max) <=high`, high being the largest upper 95 % bound of any draw. The "
        "original, optimal and Mondrian releases are deterministic (one draw).",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    for cell in cells(rows):
        row = aggregate(cell)
        lines.append("| " + " | ".join(str(row.get(h, "")) for h in HEADERS) + " |")
    if skipped:
        lines += ["", "Not started before the run's deadline: " + "; ".join(skipped) + "."]
    lines.append("")
    lines.append("Per release (seconds of utility scoring / of attacks; notes):")
    lines.append("")
    for cell in cells(rows):  # draws numbered within their cell, over every rows file
        for number, r in enumerate(cell, start=1):
            lines.append(
                f"- {r['release']} ε={r['epsilon']} draw {number}: "
                f"{r.get('utility seconds', '—')} s / "
                f"{r.get('attack seconds', '—')} s" + (f"; {r['note']}" if r.get("note") else "")
            )
    if fmeasure:
        lines += [
            "",
            "DPHeter vs SafePub, the DPHeter paper's measure: F-measure of the original records' "
            "clustering under the release against their clustering on the original (k-means, "
            "bisecting k-means; 3 and 5 clusters; seed 0; features = the 8 quasi-identifiers' "
            "leaf distributions). Each original record is generalized as the release generalizes "
            "it (SafePub: its scheme; DPHeter: its leaf partition) and takes the cluster the "
            "release's clustering (weighted by counts) gives it. Mean (min-max) over fresh draws:",
            "",
            *fmeasure_table(fmeasure),
        ]
        comparison = fmeasure_comparison(fmeasure)
        if comparison:
            lines += [
                "",
                "DPHeter minus SafePub, mean F over the draws: Welch's t interval (unequal "
                "variances) at 95 % and, family-wise over every comparison below, "
                "Bonferroni-widened; a direction is claimed only where the widened interval "
                "excludes 0:",
                "",
                *comparison,
            ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
