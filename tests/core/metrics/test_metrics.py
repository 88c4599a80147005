"""The search objectives: exact values and lower bounds, computed by hand on a 6-row table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privgate.core.anonymize._lattice import NodeChecker
from privgate.core.encoding import FrequencySet, encode_table
from privgate.core.hierarchy import ARXHierarchy, IntervalHierarchy, taxonomy_hierarchy
from privgate.core.metrics import METRICS, LossMetric, granularity, make_metric, precision
from privgate.core.privacy import KAnonymity

SEX = ARXHierarchy("sex", [["M", "*"], ["F", "*"]])
CITY = taxonomy_hierarchy("city", {"East": ["Boston", "NYC", "DC", "Miami"], "West": ["LA", "SF"]})
NODE = (0, 1)  # sex as is, city as East / West


def six_rows() -> FrequencySet:
    """Classes at NODE: (M, East) rows 0-2, (F, West) rows 3-4, (F, East) row 5.

    city has 5 distinct values in the data (Miami is in the hierarchy only): East covers
    Boston, NYC, DC (3 of them), West covers LA, SF (2); f(East) = 4, f(West) = 2.
    """
    df = pd.DataFrame({
        "sex": ["M", "M", "M", "F", "F", "F"],
        "city": ["Boston", "NYC", "NYC", "LA", "SF", "DC"],
    })  # fmt: skip
    return encode_table(df, {"sex": SEX, "city": CITY}).frequency_set()


def _prepared(name: str, freq: FrequencySet, min_class_size: int) -> LossMetric:
    columns = freq.table.columns
    frequencies = [np.bincount(c.codes, minlength=c.distinct_at(0)) for c in columns]
    return make_metric(name).prepare(columns, frequencies, freq.table.n_rows, min_class_size)


def _measure(name: str, freq: FrequencySet, k: int, limit: float, node=NODE):
    """``(value, lower_bound)`` of a metric at ``node`` under k-anonymity within ``limit``."""
    checker = NodeChecker(freq, [KAnonymity(k=k)], limit)
    outcome = checker.evaluate(node)
    assert outcome.satisfied
    metric = _prepared(name, freq, checker.min_class_size)
    table = outcome.table
    value = metric.value(node, table.codes, table.sizes, outcome.failing)
    return value, float(metric.lower_bound(np.array([node]))[0])


LOG6, LOG3 = math.log2(6), math.log2(3)
#: Entropy of suppressing every cell: sex -log2(3/6) = 1 per record; city -log2(f(v)/6).
ENTROPY_WORST = 6 * 1 + (4 * LOG6 + 2 * LOG3)

#: metric -> (value with nothing suppressed (k=1), value with row 5 suppressed (k=2),
#:            lower bound at k=1, lower bound at k=2)
EXPECTED = {
    # cells: sex 0; city East (3-1)/(5-1) = 1/2 on 4 rows, West (2-1)/4 = 1/4 on 2 rows, over
    # 6 x 2 cells; a suppressed record costs 1 per attribute.
    "loss": ((4 * 0.5 + 2 * 0.25) / 12, (3 * 0.5 + 2 * 0.25 + 2) / 12, 2.5 / 12, 2.5 / 12),
    # level / height: sex 0/1, city 1/2 on every record.
    "precision": (6 * 0.5 / 12, (5 * 0.5 + 2) / 12, 0.25, 0.25),
    # sum |E|^2 (+ n per suppressed record) over n^2; bound n * k / n^2.
    "discernibility": ((9 + 4 + 1) / 36, (9 + 4 + 6) / 36, 1 / 6, 2 / 6),
    # (kept records / kept classes) / k; bound 1.
    "average_class_size": (6 / 3 / 1, 5 / 2 / 2, 1.0, 1.0),
    # -log2(f(v) / f(g)): Boston 2, NYC 1 + 1, LA 1, SF 1, DC 2; suppressed row 5 costs
    # -log2(3/6) + -log2(1/6) instead of 0 + 2.
    "entropy": (
        8 / ENTROPY_WORST,
        (8 - 2 + 1 + LOG6) / ENTROPY_WORST,
        8 / ENTROPY_WORST,
        8 / ENTROPY_WORST,
    ),  # fmt: skip
    # ARX's loss over the hierarchy's domain (city: 6 values, Miami only in the hierarchy; East
    # covers 4, West 2): sex 0; city (3/5 on 4 rows + 1/5 on 2) / 6 = 7/15; geometric mean.
    # Row 5 suppressed: sex (2.5 + 1 - 3) / (6 - 3) = 1/6, city (2 + 4/6 + 1 - 1) / 5 = 8/15.
    "arx_loss": (
        math.sqrt(22 / 15) - 1,
        math.sqrt(7 / 6 * 23 / 15) - 1,
        math.sqrt(22 / 15) - 1,
        math.sqrt(22 / 15) - 1,
    ),  # fmt: skip
    # bits, summed over attributes, suppression ignored (ARX's monotonic variant): city 8.
    "arx_entropy": (8.0, 8.0, 8.0, 8.0),
    # n / (kept classes + 1 if any record is suppressed); bound n / (2 x 2 level values + 1).
    "arx_average_class_size": (6 / 3, 6 / 3, 6 / 5, 6 / 5),
    # sum over all classes |E|^2 / n^2, suppressed ones included; bound n / n^2.
    "discernibility_star": (14 / 36, 14 / 36, 1 / 6, 1 / 6),
}


def test_every_metric_is_tested() -> None:
    assert set(EXPECTED) == set(METRICS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_value_and_bound_without_suppression(name: str) -> None:
    value, bound = _measure(name, six_rows(), k=1, limit=0.0)
    assert value == pytest.approx(EXPECTED[name][0], abs=1e-12)
    assert bound == pytest.approx(EXPECTED[name][2], abs=1e-12)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_value_and_bound_with_the_singleton_class_suppressed(name: str) -> None:
    value, bound = _measure(name, six_rows(), k=2, limit=0.2)  # allowance: 1 record
    assert value == pytest.approx(EXPECTED[name][1], abs=1e-12)
    assert bound == pytest.approx(EXPECTED[name][3], abs=1e-12)


def test_precision_function_agrees_with_the_objective() -> None:
    heights = {"sex": 1, "city": 2}
    levels = dict(zip(heights, NODE, strict=True))
    for k, limit, n_suppressed in ((1, 0.0, 0), (2, 0.2, 1)):
        value, _ = _measure("precision", six_rows(), k=k, limit=limit)
        assert precision(levels, heights, 6, n_suppressed) == pytest.approx(1 - value)


def test_granularity_is_one_minus_loss() -> None:
    value, _ = _measure("loss", six_rows(), k=1, limit=0.0)
    assert granularity(value) == pytest.approx(1 - 2.5 / 12)


def test_fully_suppressed_or_fully_generalized_extremes() -> None:
    freq = six_rows()
    for name, top in (("loss", 1.0), ("precision", 1.0), ("discernibility", 1.0),
                      ("average_class_size", 6.0), ("entropy", 1.0)):  # fmt: skip
        # the top node: one class of 6, every cell "*" (as costly as suppressing it)
        value, _ = _measure(name, freq, k=1, limit=0.0, node=(1, 2))
        assert value == pytest.approx(top, abs=1e-12), name


#: Ages 0-99 in 5- and 10-year bands: a hierarchy that lists its domain (ARX's loss needs one).
AGE_TABLE = ARXHierarchy(
    "age", [[str(a), f"{a // 5 * 5}-{a // 5 * 5 + 4}", f"{a // 10 * 10}s", "*"] for a in range(100)]
)


def _random_table(seed: int, age_listed: bool = False) -> FrequencySet:
    rng = np.random.default_rng(seed)
    n = 40
    df = pd.DataFrame({
        "sex": rng.choice(["M", "F"], size=n, p=[0.8, 0.2]),
        "city": rng.choice(["Boston", "NYC", "DC", "Miami", "LA", "SF"], size=n,
                           p=[0.4, 0.3, 0.1, 0.05, 0.1, 0.05]),
        "age": rng.integers(17, 60, size=n),
    })  # fmt: skip
    age = AGE_TABLE if age_listed else IntervalHierarchy("age", [5, 10])
    hierarchies = {"sex": SEX, "city": CITY, "age": age}
    return encode_table(df, hierarchies).frequency_set()


@pytest.mark.parametrize("name", sorted(METRICS))
@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lower_bound_never_exceeds_the_value(name: str, k: int, seed: int) -> None:
    freq = _random_table(seed, age_listed=name == "arx_loss")
    checker = NodeChecker(freq, [KAnonymity(k=k)], 1.0)  # every node satisfies
    metric = _prepared(name, freq, checker.min_class_size)
    nodes = checker.lattice.nodes
    bounds = metric.lower_bound(nodes)
    for node, bound in zip(nodes, bounds, strict=True):
        outcome = checker.evaluate(node)
        table = outcome.table
        value = metric.value(tuple(node), table.codes, table.sizes, outcome.failing)
        assert bound <= value + 1e-12, tuple(node)


@pytest.mark.parametrize("wide", [False, True], ids=["3-attributes", "30-attributes"])
@pytest.mark.parametrize("name", sorted(METRICS))
def test_a_few_nodes_get_the_bounds_of_the_whole_lattice_to_the_bit(name: str, wide: bool) -> None:
    """A few nodes at a time (a node's generalizations, as the heuristic asks) are bounded by
    one lookup and a running sum, many nodes one attribute at a time: the same values, bit for
    bit, so the searches order and tie nodes the same way on either path (30 attributes: more
    than numpy sums in plain order)."""
    from privgate.core.metrics import _base
    from privgate.core.wide_data import WIDE_TARGET, generate_wide_table, wide_hierarchies

    if wide:
        freq = encode_table(generate_wide_table(200), wide_hierarchies(), [WIDE_TARGET])
        freq = freq.frequency_set()
        heights = np.array([c.height for c in freq.table.columns])
        nodes = np.random.default_rng(0).integers(0, heights + 1, size=(300, len(heights)))
    else:
        freq = _random_table(5, age_listed=name == "arx_loss")
        nodes = NodeChecker(freq, [KAnonymity(k=2)], 0.0).lattice.nodes
    metric = _prepared(name, freq, 2)
    many = np.tile(nodes, (_base._FEW_NODES // len(nodes) + 1, 1))  # more than _FEW_NODES
    whole = metric.lower_bound(many)[: len(nodes)]
    one_by_one = np.concatenate([metric.lower_bound(node) for node in nodes])
    assert np.array_equal(metric.lower_bound(nodes[:30]), whole[:30])
    assert np.array_equal(one_by_one, whole)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_a_metric_prepared_again_bounds_a_few_nodes_by_the_new_tables_costs(name: str) -> None:
    """One metric object is prepared for each table it searches (local recoding: each round's
    remaining records); its bounds of a few nodes are then those of a metric prepared for
    that table alone, not the first table's (the lookup of the costs was kept)."""
    first, second = (_random_table(seed, age_listed=name == "arx_loss") for seed in (0, 1))
    nodes = NodeChecker(second, [KAnonymity(k=2)], 0.0).lattice.nodes[:5]
    metric = _prepared(name, first, 2)
    metric.lower_bound(nodes)
    columns = second.table.columns
    frequencies = [np.bincount(c.codes, minlength=c.distinct_at(0)) for c in columns]
    metric.prepare(columns, frequencies, second.table.n_rows, 2)
    assert np.array_equal(metric.lower_bound(nodes), _prepared(name, second, 2).lower_bound(nodes))


@pytest.mark.parametrize("name", ["ARX", "Loss", "", "granularity"])
def test_make_metric_rejects_unknown_names(name: str) -> None:
    with pytest.raises(ValueError, match="'metric'") as info:
        make_metric(name)
    assert repr(name) in str(info.value)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_make_metric_builds_fresh_instances(name: str) -> None:
    first, second = make_metric(name), make_metric(name)
    assert first.name == name and first is not second
