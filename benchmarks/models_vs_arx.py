"""k-map, δ-presence and β-likeness against ARX's own test expectations on Adult (issue 19).

The cases are ARX's JUnit expectations (``TestAnonymizationKMap``, ``TestAnonymizationDPresence``,
``TestAnonymizationBLikeness`` at commit aacd487f of github.com/arx-deidentifier/arx) whose data
is Adult: ARX's ``adult.csv`` (the population, 30,162 records) and ``adult_subset.csv`` (the
research subset, 3,016 records). As in ARX's test harness, every column with a hierarchy except
the test's sensitive attribute (occupation) is a quasi-identifier, in the file's column order:
sex, age, race, marital-status, education, native-country, workclass, salary-class.

For each case privgate's optimal search runs with the same model and suppression limit and the
metric closest to ARX's (``average_class_size`` for ARX's AECS, ``entropy`` for ARX's
precomputed non-uniform entropy, ``loss`` for ARX's loss). The verdict compares nodes; when they
differ, ARX's node is evaluated under privgate's model and metric and both nodes under ARX's
AECS definition (``records / (kept classes + 1 if any record is suppressed)``), so each
disagreement is explained by a stated definition, never left open.

Run from the repository root::

    .venv/bin/python benchmarks/models_vs_arx.py            # print the section
    .venv/bin/python benchmarks/models_vs_arx.py --write    # also update BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
from _markdown import upsert_section

from privgate.core.anonymize import NodeChecker, OptimalLattice
from privgate.core.encoding import encode_table
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.privacy import (
    BetaLikeness,
    EstimatedKMap,
    KMap,
    Population,
    PresenceLowerBound,
    PresenceUpperBound,
)
from privgate.core.textcsv import read_text_columns

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared" / "data" / "arx"
QIS = (
    *("sex", "age", "race", "marital-status"),
    *("education", "native-country", "workclass", "salary-class"),
)
#: ARX's ``ARXPopulationModel.Region.USA``.
USA = 317_238_626

# (ARX test, model, suppression, ARX metric, data, ARX's expected value, ARX's node)
CASES = [
    (
        "KMap #0",
        ("kmap_est", 3),
        0.05,
        "entropy(0.1, false)",
        "full",
        130804.5332,
        [0, 0, 1, 1, 0, 2, 2, 0],
    ),
    (
        "KMap #1",
        ("kmap_est", 1000),
        0.05,
        "entropy(0.1, false)",
        "full",
        151894.1395,
        [0, 0, 1, 1, 1, 2, 1, 0],
    ),
    ("KMap #2", ("kmap", 5), 0.0, "AECS", "subset", 45.014925, [1, 0, 1, 2, 3, 2, 2, 1]),
    (
        "KMap #3",
        ("kmap", 3),
        0.0,
        "entropy(0.1, true)",
        "subset",
        23387.4942,
        [0, 0, 1, 2, 3, 2, 2, 0],
    ),
    (
        "KMap #4",
        ("kmap", 5),
        0.0,
        "entropy(0.1, false)",
        "subset",
        28551.7223,
        [1, 0, 1, 2, 3, 2, 2, 1],
    ),
    ("KMap #5", ("kmap", 20), 0.05, "AECS", "subset", 11.424242, [1, 0, 1, 1, 3, 2, 1, 0]),
    (
        "KMap #6",
        ("kmap", 7),
        0.05,
        "entropy(0.1, true)",
        "subset",
        17075.7182,
        [0, 0, 1, 1, 2, 2, 2, 0],
    ),
    (
        "KMap #7",
        ("kmap", 3),
        0.05,
        "entropy(0.1, false)",
        "subset",
        15121.6333,
        [0, 0, 1, 1, 1, 2, 1, 0],
    ),
    (
        "KMap #9",
        ("kmap", 2),
        0.0,
        "entropy(0.1, true)",
        "subset",
        23108.1673,
        [1, 0, 1, 1, 3, 2, 2, 0],
    ),
    (
        "KMap #10",
        ("kmap", 10),
        0.0,
        "entropy(0.1, false)",
        "subset",
        30238.2081,
        [0, 1, 1, 2, 3, 2, 2, 0],
    ),
    ("KMap #11", ("kmap", 10), 0.05, "AECS", "subset", 7.215311, [0, 0, 1, 1, 3, 2, 1, 0]),
    (
        "KMap #12",
        ("kmap", 5),
        0.05,
        "entropy(0.1, true)",
        "subset",
        17053.8743,
        [0, 0, 1, 0, 2, 2, 2, 1],
    ),
    ("DPresence #0", ("presence", 0.0, 0.2), 0.0, "AECS", "subset", 52.0, [1, 4, 1, 1, 0, 2, 2, 0]),
    (
        "DPresence #1",
        ("presence", 0.0, 0.2),
        0.0,
        "entropy(0.1, true)",
        "subset",
        30238.2081,
        [0, 1, 1, 2, 3, 2, 2, 0],
    ),
    (
        "DPresence #2",
        ("presence", 0.0, 0.2),
        0.0,
        "entropy(0.1, false)",
        "subset",
        30238.2081,
        [0, 1, 1, 2, 3, 2, 2, 0],
    ),
    (
        "DPresence #3",
        ("presence", 0.0, 0.2),
        0.05,
        "AECS",
        "subset",
        8.021277,
        [0, 0, 1, 2, 1, 2, 2, 1],
    ),
    (
        "DPresence #4",
        ("presence", 0.0, 0.2),
        0.05,
        "entropy(0.1, true)",
        "subset",
        19804.2888,
        [1, 0, 1, 1, 2, 2, 2, 0],
    ),
    (
        "DPresence #5",
        ("presence", 0.0, 0.2),
        0.05,
        "entropy(0.1, false)",
        "subset",
        20747.3624,
        [1, 0, 1, 1, 2, 2, 2, 0],
    ),
    (
        "DPresence #6",
        ("presence", 0.05, 0.15),
        0.0,
        "AECS",
        "subset",
        150.8,
        [0, 4, 0, 1, 3, 2, 2, 1],
    ),
    (
        "DPresence #7",
        ("presence", 0.05, 0.15),
        0.0,
        "entropy(0.1, true)",
        "subset",
        37223.2491,
        [1, 4, 1, 1, 1, 2, 2, 1],
    ),
    (
        "DPresence #8",
        ("presence", 0.05, 0.15),
        0.0,
        "entropy(0.1, false)",
        "subset",
        37223.2491,
        [1, 4, 1, 1, 1, 2, 2, 1],
    ),
    (
        "DPresence #9",
        ("presence", 0.05, 0.15),
        0.05,
        "AECS",
        "subset",
        97.290323,
        [1, 4, 1, 1, 0, 2, 2, 1],
    ),
    (
        "DPresence #10",
        ("presence", 0.05, 0.15),
        0.05,
        "entropy(0.1, true)",
        "subset",
        33649.9118,
        [1, 4, 1, 1, 0, 2, 2, 1],
    ),
    (
        "DPresence #11",
        ("presence", 0.05, 0.15),
        0.05,
        "entropy(0.1, false)",
        "subset",
        33660.3063,
        [1, 4, 1, 1, 0, 2, 2, 1],
    ),
    ("BLikeness #0", ("basic", 3.0), 0.5, "loss", "full", 0.348839, [0, 3, 0, 0, 2, 0, 1, 0]),
    ("BLikeness #1", ("enhanced", 2.0), 0.0, "loss", "full", 0.759176, [1, 4, 1, 1, 3, 2, 2, 0]),
    ("BLikeness #2", ("basic", 1.0), 1.0, "loss", "full", 0.608135, [1, 4, 0, 1, 3, 0, 2, 0]),
    ("BLikeness #3", ("enhanced", 10.0), 1.0, "loss", "full", 0.341904, [0, 3, 0, 0, 3, 1, 2, 0]),
    ("BLikeness #4", ("basic", 5.0), 0.4, "loss", "full", 0.233505, [0, 2, 0, 0, 2, 0, 1, 0]),
]


def _models(spec, population, n_records):
    kind = spec[0]
    if kind == "kmap":
        return [KMap(k=spec[1], population=population)]
    if kind == "kmap_est":
        return [EstimatedKMap(k=spec[1], population_size=USA, significance=0.01)]
    if kind == "presence":
        models = [PresenceUpperBound(delta_max=spec[2], population=population)]
        if spec[1] > 0:
            models.append(PresenceLowerBound(delta_min=spec[1], population=population))
        return models
    return [BetaLikeness(column="occupation", beta=spec[1], variant=kind)]


def _arx_aecs(outcome, n_records: int) -> float:
    kept = int((~outcome.failing).sum())
    return n_records / (kept + (1 if outcome.failing.any() else 0))


def run() -> str:
    hierarchies = {
        q: ARXHierarchy.from_csv(q, SHARED / f"adult_hierarchy_{q}.csv", delimiter=";") for q in QIS
    }
    full = read_text_columns(SHARED / "adult.csv", delimiter=";")
    subset = read_text_columns(SHARED / "adult_subset.csv", delimiter=";")
    population = Population.from_columns(full, hierarchies, "adult.csv")
    freqs = {
        "full": encode_table(full, hierarchies, ["occupation"]).frequency_set(),
        "subset": encode_table(subset, hierarchies, ["occupation"]).frequency_set(),
    }
    rows, agree = [], 0
    started = time.perf_counter()
    for name, spec, limit, arx_metric, data, arx_value, arx_node in CASES:
        freq = freqs[data]
        n = freq.table.n_rows
        models = _models(spec, population, n)
        metric = {"AECS": "average_class_size", "loss": "loss"}.get(arx_metric, "entropy")
        search = OptimalLattice(models, limit, metric=metric)
        found = search.search(freq)
        ours = [found.levels[q] for q in QIS]
        checker = NodeChecker(freq, models, limit)
        prepared = search._prepared_metric(freq, checker.min_class_size)
        arx_outcome = checker.evaluate(arx_node)
        our_outcome = checker.evaluate(ours)

        def value(node, outcome, prepared=prepared):
            t = outcome.table
            return prepared.value(np.asarray(node), t.codes, t.sizes, outcome.failing)

        our_value = found.details["loss"]
        if ours == arx_node:
            verdict, agree = "same node", agree + 1
        elif not arx_outcome.satisfied:
            verdict = "ARX's node fails privgate's model (see notes)"
        else:
            arx_ours = value(arx_node, arx_outcome)
            verdict = (
                f"different node; ARX's node scores {arx_ours:.4f} under privgate's {metric}"
                + (" (a tie)" if abs(arx_ours - our_value) < 1e-9 else "")
            )
            if metric == "average_class_size":
                verdict += (
                    f"; under ARX's AECS ours {_arx_aecs(our_outcome, n):.4f}, "
                    f"ARX's {_arx_aecs(arx_outcome, n):.4f}"
                )
        rows.append(
            f"| {name} | {spec[0]} {', '.join(f'{v:g}' for v in spec[1:])} | {limit:.0%} | "
            f"{arx_metric} | {arx_node} | {arx_value:g} | {ours} | {metric} {our_value:.4f} | "
            f"{verdict} |"
        )
    seconds = time.perf_counter() - started
    header = (
        "- Command: `.venv/bin/python benchmarks/models_vs_arx.py --write`; machine: "
        f"{platform.machine()}, {platform.python_version()}; all {len(CASES)} cases in "
        f"{seconds:.1f} s.\n"
        "- Data: ARX's `adult.csv` (population, 30,162 records) and `adult_subset.csv` "
        "(research subset, 3,016); quasi-identifiers sex, age, race, marital-status, education, "
        "native-country, workclass, salary-class (occupation is the test's sensitive attribute), "
        "ARX's hierarchies. Expected nodes and values: ARX's `TestAnonymizationKMap`, "
        "`TestAnonymizationDPresence`, `TestAnonymizationBLikeness` (Adult cases only; "
        "the cup, fars, atus and ihis data sets are not public).\n"
        f"- **{agree} of {len(CASES)} cases reach ARX's node.**\n\n"
        "| ARX case | model | suppr. | ARX metric | ARX node | ARX value | privgate node | "
        "privgate value | verdict |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    notes = (
        "\nEvery disagreement is a stated definition difference, not a search miss (every "
        "privgate node is the exact optimum under privgate's definitions, and ARX's node, where "
        "it satisfies privgate's model, scores no better under them):\n"
        "- **AECS with suppression** (KMap #5): ARX divides all records by the kept classes "
        "plus one class for the suppressed records; privgate's `average_class_size` divides the "
        "kept records by the kept classes. Each tool's node is the better one under its own "
        "definition (the verdict column gives both values under both). Without suppression "
        "the two coincide and so do the nodes (KMap #2, DPresence #0, #6).\n"
        "- **Entropy with suppression** (KMap #12): ARX's precomputed non-uniform entropy "
        "weighs suppression against generalization (factor 0.1 in these tests) and reports "
        "absolute bits; privgate's `entropy` charges a suppressed record the entropy of the "
        "whole domain, normalized to [0, 1]. Entropy values are therefore not comparable "
        "across the two columns, only nodes.\n"
        "- **δ-presence lower bound with suppression** (DPresence #9-#11): ARX counts a "
        "suppressed research record as still present in its population class; privgate "
        "measures the release as written, where the people of a class whose records were all "
        "suppressed appear in no class, a presence of 0 < δmin. ARX's node suppresses such "
        "classes, so under privgate's definition it does not hold; privgate's node is the "
        "best one that does.\n"
        "- **Loss with 100 % suppression allowed** (BLikeness #2, #3): privgate's `loss` "
        "takes a column's domain from the data's values (72 ages), ARX's from the hierarchy "
        "(100 ages), and ARX weighs suppression by a factor; the two metrics rank these nodes "
        "differently. Estimated k-map (KMap #0, #1) uses ARX's zero-truncated Poisson "
        "derivation with ARX's USA population (317,238,626) and reaches ARX's nodes.\n"
    )
    return header + "\n".join(rows) + "\n" + notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    text = run()
    print(text)
    if args.write:
        heading = "## k-map, δ-presence and β-likeness vs ARX's test expectations (issue 19)"
        upsert_section(REPO / "benchmarks" / "BENCHMARKS.md", heading, f"{heading}\n\n{text}")


if __name__ == "__main__":
    main()
