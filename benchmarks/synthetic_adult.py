"""DP synthetic data (MST, AIM) and SafePub on Adult: utility and attack evidence (issue 21).

Every method runs on the same split of ARX's ``adult.csv`` (30,162 records, 9 columns):
``train`` (80 %, seeded) is the release's input, ``test`` (20 %) is held out: the classifier is
tested on it, and it is the attacks' control set (records the release cannot contain).

Per release:

* **k-marginal score** (NIST CRC / SDNist): for every 3-column marginal, ``1000 x (2 - L1)/2``
  between the densities of the release and of ``train``; mean over all 84 triples. Columns as
  they are (age: 74 integer values). Raw-value releases only (MST, AIM, the original).
* **TV 1-way / 2-way**: mean total variation distance over all 1- and 2-column marginals.
* **Classification**: a random forest (``RandomForestClassifier(random_state=0)``) trained on
  the release (features: the 8 other columns one-hot, target ``salary-class``), tested on the
  held-out ``test`` records: accuracy and ROC AUC. SafePub's release is generalized: the test
  records are generalized with the same scheme before prediction.
* **Attacks** (:func:`privgate.core.attacks.run_attacks`, Anonymeter's method, 500 attacks
  each, seed 0): singling out (multivariate, 3 columns), linkability (the columns split in
  two halves), inference (worst secret); risk and 95 % interval; and the CRC unique exact-match
  rate (share of the records unique in ``train`` that appear verbatim in the release).

Run from the repository root::

    .venv/bin/python benchmarks/synthetic_adult.py            # print the section
    .venv/bin/python benchmarks/synthetic_adult.py --write    # also update BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import shlex
import subprocess
import sys
import time
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
from _markdown import upsert_section as _upsert  # noqa: E402 (script dir)

from privgate.core.attacks import AttackSettings, run_attacks  # noqa: E402
from privgate.core.dp import Accountant  # noqa: E402
from privgate.core.dp.safepub import SafePubConfig, safepub_release  # noqa: E402
from privgate.core.dp.synthetic import SyntheticConfig, SyntheticDomains, synthesize  # noqa: E402
from privgate.core.hierarchy import value_key  # noqa: E402

BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## DP synthetic data and SafePub on Adult, with attack evidence (issue 21)"
DATA = environment.ARX_DATA
COLUMNS = [
    "sex", "age", "race", "marital-status", "education", "native-country", "workclass",
    "occupation", "salary-class",
]  # fmt: skip
TARGET = "salary-class"
DELTA = 1e-6


def load() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    frame = pd.read_csv(DATA / "adult.csv", sep=";", dtype=str)[COLUMNS]
    hierarchies = environment.arx_adult_hierarchies([c for c in COLUMNS if c != TARGET], DATA)
    train, test = train_test_split(frame, test_size=0.2, random_state=0, stratify=frame[TARGET])
    return train.reset_index(drop=True), test.reset_index(drop=True), hierarchies


def declared(hierarchies: dict) -> dict[str, list[str]]:
    """The declared domains: the hierarchies' values, and the two classes (never the data)."""
    domains = {c: [value_key(v) for v in h.domain] for c, h in hierarchies.items()}
    domains[TARGET] = ["<=50K", ">50K"]
    return domains


def k_marginal(release: pd.DataFrame, original: pd.DataFrame, k: int = 3) -> float:
    """Mean ``1000 x (2 - L1) / 2`` over every k-column marginal, values compared as text.

    The input is read as text while synthesizers release numbers (age as integers): compared
    as they are, 39 and "39" are different cells and every marginal holding age scored as
    disjoint (the identical table scored 667, MST on Adult 486). Both sides are text here.
    """
    release, original = release[COLUMNS].astype(str), original[COLUMNS].astype(str)
    scores = []
    for cols in itertools.combinations(COLUMNS, k):
        a = release.groupby(list(cols)).size() / len(release)
        b = original.groupby(list(cols)).size() / len(original)
        both = pd.concat([a, b], axis=1).fillna(0.0)
        scores.append(1000 * (2 - (both.iloc[:, 0] - both.iloc[:, 1]).abs().sum()) / 2)
    return float(np.mean(scores))


def tv(release: pd.DataFrame, original: pd.DataFrame, k: int) -> float:
    return 1 - k_marginal(release, original, k) / 1000


def classify(release: pd.DataFrame, test: pd.DataFrame) -> tuple[float, float]:
    features = [c for c in COLUMNS if c != TARGET]
    both = pd.get_dummies(pd.concat([release[features], test[features]]).astype(str))
    x_train, x_test = both.iloc[: len(release)], both.iloc[len(release) :]
    y_train = (release[TARGET] == ">50K").to_numpy()
    y_test = (test[TARGET] == ">50K").to_numpy()
    model = RandomForestClassifier(random_state=0, n_jobs=1).fit(x_train, y_train)
    proba = model.predict_proba(x_test)[:, list(model.classes_).index(True)]
    return accuracy_score(y_test, proba >= 0.5), roc_auc_score(y_test, proba)


N_ATTACKS = 500


def attacks(release, train, test, hierarchies=None) -> dict:
    evidence = run_attacks(
        release.astype(str),
        train.astype(str),
        test.astype(str),
        COLUMNS,
        hierarchies=hierarchies,
        settings=AttackSettings(n_attacks=N_ATTACKS, seed=0),
    )
    risks = evidence.risks()
    out = {}
    for name in ("singling_out", "linkability", "inference", "unique_exact_match"):
        r = risks[name]
        out[name] = "—" if r is None else f"{r.value:.3f} [{r.low:.3f}, {r.high:.3f}]"
    return out


def measure(name, eps, release, train, test, seconds, generalized=None, hierarchies=None):
    row = {"release": name, "epsilon": eps, "rows": len(release), "seconds": seconds}
    if generalized is None:
        row["k-marginal"] = f"{k_marginal(release, train):.0f}"
        row["TV 1-way"] = f"{tv(release, train, 1):.4f}"
        row["TV 2-way"] = f"{tv(release, train, 2):.4f}"
        acc, auc = classify(release, test)
    else:
        row["k-marginal"] = row["TV 1-way"] = row["TV 2-way"] = "— (generalized)"
        acc, auc = classify(release, generalized(test))
    row["accuracy"], row["AUC"] = f"{acc:.4f}", f"{auc:.4f}"
    started = time.perf_counter()
    row.update(attacks(release, train, test, hierarchies))
    row["attack seconds"] = round(time.perf_counter() - started, 1)
    print(row, flush=True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--epsilons", default="0.5,1,2,10")
    parser.add_argument("--aim-rounds", type=int, default=30)
    parser.add_argument("--methods", default="mst,aim,safepub")
    parser.add_argument("--attacks", type=int, default=500, help="attacks per kind")
    args = parser.parse_args(argv)
    global N_ATTACKS
    N_ATTACKS = args.attacks
    methods = args.methods.split(",")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    load_before = os.getloadavg()
    started_all = time.perf_counter()
    train, test, hierarchies = load()
    domains = declared(hierarchies)
    rows = [measure("original (train itself)", "—", train, train, test, 0.0)]
    synth_domains = SyntheticDomains(
        COLUMNS,
        {c: v for c, v in domains.items() if c != "age"},
        {"age": (17.0, 90.0)},
        frozenset({"age"}),
    )
    for eps in epsilons:
        for method in [m for m in ("mst", "aim") if m in methods]:
            config = SyntheticConfig(method, eps, DELTA, aim_degree=3, aim_rounds=args.aim_rounds)
            t = time.perf_counter()
            result = synthesize(train, synth_domains, config, Accountant((eps, DELTA)))
            seconds = round(time.perf_counter() - t, 1)
            rows.append(measure(method, eps, result.frame, train, test, seconds))
        if "safepub" not in methods:
            continue
        t = time.perf_counter()
        try:
            sp = safepub_release(
                train, domains, hierarchies, SafePubConfig(eps, DELTA), Accountant((eps, DELTA))
            )
        except ValueError as error:
            print(f"safepub eps={eps}: {error}", flush=True)
            rows.append({"release": "safepub", "epsilon": eps, "rows": f"refused: {error}"})
            continue
        seconds = round(time.perf_counter() - t, 1)

        def generalize(frame, scheme=sp.scheme):
            out = frame.copy()
            for c, level in scheme.items():
                if c in hierarchies:
                    out[c] = hierarchies[c].generalize(frame[c].tolist())[:, level].astype(str)
            return out

        rows.append(
            measure(
                f"safepub (k={sp.k}, beta={sp.beta:.3f})",
                eps,
                sp.frame,
                train,
                test,
                seconds,
                generalized=generalize,
                hierarchies=hierarchies,
            )
        )
    total = time.perf_counter() - started_all
    text = render(rows, args, load_before, os.getloadavg(), total)
    print(text)
    if args.write:
        _upsert(BENCHMARKS_MD, SECTION_HEADING, text)
    return 0


def render(rows, args, load_before, load_after, total) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT
    ).stdout.strip()
    headers = [
        "release", "epsilon", "rows", "seconds", "k-marginal", "TV 1-way", "TV 2-way",
        "accuracy", "AUC", "singling_out", "linkability", "inference", "unique_exact_match",
    ]  # fmt: skip
    lines = [
        SECTION_HEADING,
        "",
        f"Command (from the repository root): `.venv/bin/python benchmarks/synthetic_adult.py "
        f"{shlex.join(sys.argv[1:])}`",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; total run time {total / 60:.1f} min",
        f"- Machine: nproc {os.cpu_count()}, {platform.processor() or platform.machine()}, "
        f"Linux {platform.release()}; load average before {load_before[0]:.2f}/"
        f"{load_before[1]:.2f}/{load_before[2]:.2f}, after {load_after[0]:.2f}/"
        f"{load_after[1]:.2f}/{load_after[2]:.2f} (shared machine); Python "
        f"{platform.python_version()}",
        f"- Code: git {commit}",
        "- Data: ARX `adult.csv` (30,162 records, 9 columns), split 80/20 "
        "(`train_test_split(random_state=0, stratify=salary-class)`): 24,129 train (the "
        "release's input), 6,033 test (held out: classifier test set and attack control set).",
        f"- MST and AIM: `privgate.core.dp.synthetic` (OpenDP 0.16 `opendp[mbi]`), delta = "
        f"{DELTA:g}, declared domains (ARX hierarchies' values, age 17-90); AIM with 3-way "
        f"workload, at most {args.aim_rounds} rounds (the published default is 16 x 9 = 144; "
        "fewer rounds to fit the run time). SafePub: `privgate.core.dp.safepub`, "
        "delta = 1e-6, 10 % of epsilon for the search, steps = lattice height.",
        f"- Attacks: `privgate.core.attacks.run_attacks`, {args.attacks} attacks each, seed 0; "
        "risk [95 % interval]; inference = the worst of the 9 secrets.",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
    ]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(h, "")) for h in headers) + " |")
    lines.append("")
    lines.append("Attack seconds per release: " + ", ".join(
        f"{r['release']} eps={r['epsilon']}: {r.get('attack seconds', '—')}" for r in rows
    ))  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
