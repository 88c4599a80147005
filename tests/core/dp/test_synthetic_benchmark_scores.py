"""The utility scores of benchmarks/synthetic_adult.py measure the data, not its dtypes.

The benchmark reads Adult as text while MST/AIM release age as integers; the k-marginal score
once compared 39 with "39" and scored every marginal holding age as disjoint (identical data:
667/1000; MST on Adult: 486). A release that equals the original must score 1000.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its sibling helper module
    try:
        spec = importlib.util.spec_from_file_location(
            "synthetic_adult_bench", BENCHMARKS / "synthetic_adult.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def _table(bench, rows: int = 40) -> pd.DataFrame:
    values = {c: [f"{c}-{i % (2 + j)}" for i in range(rows)] for j, c in enumerate(bench.COLUMNS)}
    values["age"] = [str(17 + i % 7) for i in range(rows)]
    return pd.DataFrame(values)


def test_an_identical_release_with_integer_ages_scores_1000(bench) -> None:
    original = _table(bench)
    release = original.assign(age=original["age"].astype(int))  # as MST/AIM release it
    assert bench.k_marginal(release, original) == pytest.approx(1000.0)
    assert bench.tv(release, original, 1) == pytest.approx(0.0)
    assert bench.tv(release, original, 2) == pytest.approx(0.0)


def test_a_different_release_scores_below_1000(bench) -> None:
    original = _table(bench)
    release = original.assign(sex="someone-else")
    assert bench.k_marginal(release, original) < 1000.0
    assert bench.tv(release, original, 1) > 0.0


def _spread(bench):
    from privgate.core.hierarchy import ARXHierarchy

    ages = ARXHierarchy("age", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3", "*"]])
    leaves = {c: ["x", "y"] for c in bench.COLUMNS}
    leaves["age"] = ["1", "2", "3"]
    return bench.Spread(leaves, {"age": ages})


def test_a_generalized_value_is_spread_uniformly_over_the_leaves_it_covers(bench) -> None:
    spread = _spread(bench)
    assert spread.cover("age", "1") == [0]
    assert spread.cover("age", "1-2") == [0, 1]  # the hierarchy's label
    assert spread.cover("age", "*") == [0, 1, 2]
    assert spread.cover("age", "[2, 4)") == [1, 2]  # DPHeter's half-open interval
    assert spread.cover("age", "2-3") == [1, 2]  # Mondrian's closed range
    with pytest.raises(ValueError, match="covers no declared leaf"):
        spread.cover("age", "elderly")
    release = pd.DataFrame({"age": ["1-2", "3"], "sex": ["x", "*"]})
    np.testing.assert_allclose(bench.marginal(release, ["age"], spread), [0.25, 0.25, 0.5])
    # Two columns: the outer product of each record's distributions, summed over records.
    joint = bench.marginal(release, ["age", "sex"], spread).reshape(3, 2)
    np.testing.assert_allclose(joint, [[0.25, 0], [0.25, 0], [0.25, 0.25]])


def test_weights_count_a_row_that_many_times(bench) -> None:
    spread = _spread(bench)
    rows = pd.DataFrame({"age": ["1", "3"], "sex": ["x", "y"]})
    repeated = pd.DataFrame({"age": ["1", "1", "1", "3"], "sex": ["x", "x", "x", "y"]})
    np.testing.assert_allclose(
        bench.marginal(rows, ["age", "sex"], spread, np.array([3.0, 1.0])),
        bench.marginal(repeated, ["age", "sex"], spread),
    )


def test_a_fully_generalized_release_is_scored_by_its_spread_not_dropped(bench) -> None:
    original = _table(bench)
    leaves = {c: sorted(set(original[c])) for c in bench.COLUMNS}
    spread = bench.Spread(leaves)
    release = original.assign(sex="*")
    # sex has two leaves, equally frequent in the original: "*" spread over both is exact.
    assert bench.tv(release, original, 1, spread) == pytest.approx(0.0)
    assert bench.k_marginal(release, original, 3, spread) < 1000.0  # the triples lose sex


def test_a_release_whose_class_is_generalized_carries_no_class_signal(bench) -> None:
    original = _table(bench)
    original[bench.TARGET] = ["<=50K" if i % 3 else ">50K" for i in range(len(original))]
    leaves = {c: sorted(set(original[c])) for c in bench.COLUMNS}
    spread = bench.Spread(leaves)
    _, auc = bench.classify(original, original, spread)
    assert auc > 0.9  # the class follows the features: learned from the raw release
    hidden = original.assign(**{bench.TARGET: "*"})
    _, auc = bench.classify(hidden, original, spread)
    # Each record counts half for each class; only the forest's bootstrap tells them apart.
    assert abs(auc - 0.5) < 0.1


def test_draws_of_one_cell_are_shown_as_mean_range_and_worst_upper_bound(bench) -> None:
    draws = [
        {"release": "mst", "epsilon": 1.0, "k-marginal": "880", "accuracy": "0.7800",
         "singling_out": "0.100 [0.020, 0.180]", "linkability": "0.000 [0.000, 0.013]"},
        {"release": "mst", "epsilon": 1.0, "k-marginal": "870", "accuracy": "0.7900",
         "singling_out": "0.000 [0.000, 0.029]", "linkability": "0.000 [0.000, 0.013]"},
        {"release": "mst", "epsilon": 2.0, "k-marginal": "890", "accuracy": "0.7700",
         "singling_out": "0.050 [0.000, 0.100]", "linkability": "0.000 [0.000, 0.013]"},
    ]  # fmt: skip
    first, second = bench.cells(draws)
    assert [len(first), len(second)] == [2, 1]
    row = bench.aggregate(first)
    assert row["draws"] == 2
    assert row["k-marginal"] == "875 (870-880)"
    assert row["accuracy"] == "0.7850 (0.7800-0.7900)"
    assert row["singling_out"] == "0.050 (0.000-0.100) <=0.180"
    single = bench.aggregate(second)
    assert single["draws"] == 1 and single["singling_out"] == "0.050 [0.000, 0.100]"
    refused = bench.aggregate([{"release": "safepub", "epsilon": 10.0, "note": "refused: x"}])
    assert refused["rows"] == "refused" and refused["draws"] == "—"


def test_welch_interval_matches_scipy_and_separates_only_distinct_means(bench) -> None:
    from scipy import stats

    a = [0.70, 0.72, 0.69, 0.71, 0.73]
    b = [0.50, 0.55, 0.52, 0.48, 0.51]
    diff, lo, hi = bench.welch(a, b)
    assert diff == pytest.approx(np.mean(a) - np.mean(b))
    p = stats.ttest_ind(a, b, equal_var=False).pvalue
    assert lo > 0 and p < 0.05
    # The interval's half-width at 1 - p touches 0 exactly (the same t distribution).
    _, edge, _ = bench.welch(a, b, 1 - p)
    assert edge == pytest.approx(0.0, abs=1e-9)
    _, lo, hi = bench.welch([0.4, 0.9, 0.6], [0.5, 0.8, 0.7])
    assert lo < 0 < hi


def test_fmeasure_verdict_needs_the_family_wise_interval_to_exclude_zero(bench) -> None:
    rows = []
    for i, (high, low) in enumerate(
        zip([0.80, 0.82, 0.81, 0.79], [0.50, 0.52, 0.49, 0.51], strict=True)
    ):
        for name, value in (("dpheter", high), ("safepub", low)):
            f = {f"{m} {n}": value for m, n in bench.CLUSTERINGS}
            rows.append({"release": name, "epsilon": 1.0, "repetition": i, **f})
    for i, (x, y) in enumerate(zip([0.3, 0.9, 0.5], [0.6, 0.4, 0.7], strict=True)):
        for name, value in (("dpheter", x), ("safepub", y)):
            f = {f"{m} {n}": value for m, n in bench.CLUSTERINGS}
            rows.append({"release": name, "epsilon": 2.0, "repetition": i, **f})
    table = bench.fmeasure_comparison(rows)
    at_1 = [line for line in table if line.startswith("| 1 |")]
    at_2 = [line for line in table if line.startswith("| 2 |")]
    assert len(at_1) == len(at_2) == len(bench.CLUSTERINGS)
    assert all(line.endswith("| DPHeter higher |") for line in at_1)
    assert all(line.endswith("| inconclusive |") for line in at_2)
