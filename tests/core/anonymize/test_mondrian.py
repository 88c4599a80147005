"""Mondrian on the real ARX Adult table and on hand-built examples.

Every release is checked by pycanon (an independent implementation of the privacy models) or by
the gate, never by the algorithm's own bookkeeping; label coverage is checked against the
original values and their hierarchies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_QI
from local_recoding_labels import assert_labels_cover_originals
from pycanon import anonymity

from privgate.core.anonymize._mondrian import Mondrian, MondrianResult
from privgate.core.exceptions import AnonymizationError, HierarchyError
from privgate.core.gate import verify_table
from privgate.core.hierarchy import ARXHierarchy, Hierarchy, taxonomy_hierarchy
from privgate.core.metrics._table_loss import table_loss
from privgate.core.privacy import (
    AverageRisk,
    DeltaDisclosure,
    DistinctLDiversity,
    EstimatedKMap,
    KAnonymity,
    TCloseness,
)

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

SENSITIVE = "salary-class"


@dataclass(frozen=True)
class Adult:
    df: pd.DataFrame
    hierarchies: dict[str, Hierarchy]


@pytest.fixture(scope="module")
def adult(shared_data) -> Adult:
    df = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    df["age"] = df["age"].astype(int)
    hierarchies = {
        qi: ARXHierarchy.from_csv(qi, shared_data(f"arx/adult_hierarchy_{qi}.csv"))
        for qi in ADULT_QI
    }
    return Adult(df, hierarchies)


@pytest.fixture(scope="module")
def adult_k5(adult: Adult) -> dict[bool, MondrianResult]:
    """k = 5 releases, strict and relaxed, computed once for the module."""
    return {
        strict: Mondrian([KAnonymity(k=5)], strict=strict).anonymize_table(
            adult.df, adult.hierarchies
        )
        for strict in (True, False)
    }


def _assert_faithful(original: pd.DataFrame, release: pd.DataFrame, hierarchies) -> None:
    """No row lost or moved, other columns untouched, every label covers its original value."""
    assert len(release) == len(original)
    assert release.index.equals(original.index)
    assert list(release.columns) == list(original.columns)
    for column in original.columns:
        if column not in hierarchies:
            pd.testing.assert_series_equal(release[column], original[column])
    assert_labels_cover_originals(original, release, hierarchies, strict_ranges=True)


# --------------------------------------------------------------------------------------------
# The real Adult table


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "relaxed"])
def test_adult_k5_is_k_anonymous_and_faithful(adult: Adult, adult_k5, strict: bool) -> None:
    result = adult_k5[strict]
    release = result.release

    assert anonymity.k_anonymity(release, ADULT_QI) >= 5
    _assert_faithful(adult.df, release, adult.hierarchies)
    assert result.class_sizes.sum() == len(adult.df)
    assert result.class_sizes.min() >= 5
    gate_classes = release.groupby(ADULT_QI, sort=False).size()
    assert sorted(gate_classes.tolist()) == sorted(result.class_sizes.tolist())
    if strict:  # strict regions never share labels: one class per region
        assert len(result.class_sizes) == result.partitions
    else:  # relaxed regions may overlap on a median value, and equal labels merge
        assert len(result.class_sizes) <= result.partitions
    # a local recoding is much finer than one level per column: Mondrian kept real detail
    assert result.partitions > 1000
    assert (release["age"] != "*").all()


def test_adult_relaxed_is_finer_than_strict(adult_k5) -> None:
    # LeFevre et al.: relaxed partitioning can cut where strict partitioning cannot (a repeated
    # median leaves one strict side too small), so it yields more, smaller regions. On Adult
    # with k = 5 it does (4480 relaxed vs 3498 strict regions at the time of writing).
    strict, relaxed = adult_k5[True], adult_k5[False]
    assert relaxed.partitions >= strict.partitions
    assert len(relaxed.class_sizes) >= len(strict.class_sizes)
    assert relaxed.class_sizes.mean() <= strict.class_sizes.mean()


def test_adult_k5_loss_is_low(adult: Adult, adult_k5) -> None:
    # Relaxed regions are finer, so they lose less; both keep most of the information.
    losses = {
        strict: table_loss(adult.df, r.release, adult.hierarchies, {"age"})
        for strict, r in adult_k5.items()
    }
    assert 0.8 < losses[True]["granularity"] <= losses[False]["granularity"] < 1.0
    assert losses[True]["n_suppressed"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "relaxed"])
def test_adult_distinct_2_diversity(adult: Adult, strict: bool) -> None:
    models = [DistinctLDiversity(column=SENSITIVE, l=2)]
    release = Mondrian(models, strict=strict).anonymize_table(adult.df, adult.hierarchies).release

    assert anonymity.l_diversity(release, ADULT_QI, [SENSITIVE]) >= 2
    _assert_faithful(adult.df, release, adult.hierarchies)
    decision = verify_table(release, ADULT_QI, models, input_rows=len(adult.df))
    assert decision.passed, decision.reasons


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "relaxed"])
def test_adult_t_closeness_passes_the_gate(adult: Adult, strict: bool) -> None:
    models = [KAnonymity(k=2), TCloseness(column=SENSITIVE, t=0.2)]
    result = Mondrian(models, strict=strict).anonymize_table(adult.df, adult.hierarchies)

    # the gate reads the release as text, as a recipient would
    decision = verify_table(
        result.release.astype("string"), ADULT_QI, models,
        input_rows=len(adult.df), expected_columns=[*ADULT_QI, SENSITIVE],
    )  # fmt: skip
    assert decision.passed, decision.reasons
    assert decision.measurements["achieved"][str(models[1])] <= 0.2
    _assert_faithful(adult.df, result.release, adult.hierarchies)


def test_adult_k_larger_than_the_table_raises(adult: Adult) -> None:
    with pytest.raises(AnonymizationError, match="cannot be reached"):
        Mondrian([KAnonymity(k=len(adult.df) + 1)]).anonymize_table(adult.df, adult.hierarchies)


def test_adult_k_equal_to_the_table_is_one_class(adult: Adult) -> None:
    result = Mondrian([KAnonymity(k=len(adult.df))]).anonymize_table(adult.df, adult.hierarchies)
    assert result.partitions == 1
    assert result.class_sizes.tolist() == [len(adult.df)]
    assert result.release["age"].unique().tolist() == ["17-90"]  # actual range, not '*'
    assert (result.release[["race", "education", "native-country"]] == "*").all().all()


# --------------------------------------------------------------------------------------------
# Hand-built examples

CITY = taxonomy_hierarchy("city", {"East": ["Boston", "NYC"], "West": ["LA", "SF"]})


def _eight_rows() -> pd.DataFrame:
    return pd.DataFrame({
        "age": [20, 22, 24, 26, 40, 45, 50, 55],
        "city": ["Boston", "NYC", "Boston", "NYC", "LA", "SF", "LA", "SF"],
        "disease": ["flu", "cold", "flu", "cold", "flu", "cold", "cold", "flu"],
    })  # fmt: skip


def _labels(result: MondrianResult) -> list[tuple[str, str]]:
    return list(zip(result.release["age"], result.release["city"], strict=True))


def test_eight_rows_k2_exact_partitioning() -> None:
    # Root: both widths are 1, age comes first: lower median 26 -> {20..26} East | {40..55}
    # West (the city node descends to the only region present). Each half: city (2 of 4 cities,
    # width 0.5) is wider than age (6/35 and 15/35), so the halves are cut by city.
    df = _eight_rows()
    result = Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"age": None, "city": CITY})
    assert _labels(result) == [
        ("20-24", "Boston"), ("22-26", "NYC"), ("20-24", "Boston"), ("22-26", "NYC"),
        ("40-50", "LA"), ("45-55", "SF"), ("40-50", "LA"), ("45-55", "SF"),
    ]  # fmt: skip
    assert result.partitions == 4
    assert sorted(result.class_sizes.tolist()) == [2, 2, 2, 2]
    assert result.release["disease"].tolist() == df["disease"].tolist()
    assert str(result.release["age"].dtype) == "string"


def test_eight_rows_next_dimension_when_the_widest_cut_fails_l_diversity() -> None:
    # In the East half, the city cut would give Boston = {flu, flu}: not 2-diverse. Age is tried
    # next and its median cut {20, 22} | {24, 26} is. The West half is cut by city as before.
    df = _eight_rows()
    models = [KAnonymity(k=2), DistinctLDiversity(column="disease", l=2)]
    result = Mondrian(models).anonymize_table(df, {"age": None, "city": CITY})
    assert _labels(result) == [
        ("20-22", "East"), ("20-22", "East"), ("24-26", "East"), ("24-26", "East"),
        ("40-50", "LA"), ("45-55", "SF"), ("40-50", "LA"), ("45-55", "SF"),
    ]  # fmt: skip
    assert anonymity.l_diversity(result.release, ["age", "city"], ["disease"]) == 2


def test_eight_rows_k3_labels_the_region_with_its_node() -> None:
    # The halves (4 records) cannot be cut for k = 3; their city label is the node they hold,
    # "East" or "West", not the root.
    result = Mondrian([KAnonymity(k=3)]).anonymize_table(_eight_rows(), {"age": None, "city": CITY})
    assert _labels(result) == [("20-26", "East")] * 4 + [("40-55", "West")] * 4
    assert result.partitions == 2


def test_relaxed_splits_a_repeated_median() -> None:
    # Strict: the lower median is 20 and {30, 40} (2 records) is too small for k = 3, so the
    # table stays one region. Relaxed: records equal to the median are shared out to balance
    # the halves (row order breaks ties): {10, 20, 20, 20} | {20, 20, 30, 40}.
    df = pd.DataFrame({"age": [10, 20, 20, 20, 20, 20, 30, 40]})
    strict = Mondrian([KAnonymity(k=3)], strict=True).anonymize_table(df, {"age": None})
    relaxed = Mondrian([KAnonymity(k=3)], strict=False).anonymize_table(df, {"age": None})
    assert strict.release["age"].tolist() == ["10-40"] * 8
    assert strict.partitions == 1
    assert relaxed.release["age"].tolist() == ["10-20"] * 4 + ["20-40"] * 4
    assert relaxed.partitions == 2
    assert relaxed.class_sizes.tolist() == [4, 4]


def test_single_value_region_gets_the_plain_value() -> None:
    df = pd.DataFrame({"age": [30, 30, 30, 50, 50, 50]})
    result = Mondrian([KAnonymity(k=3)]).anonymize_table(df, {"age": None})
    assert result.release["age"].tolist() == ["30"] * 3 + ["50"] * 3


def test_t_closeness_compares_with_the_whole_table() -> None:
    # Whole table: half flu. Each age half is 3/4 one disease (distance 0.25 from the table's
    # distribution), so t = 0.2 forbids the cut even though each half alone is "close" to
    # itself; t = 0.25 allows it.
    df = pd.DataFrame({
        "age": [1, 2, 3, 4, 5, 6, 7, 8],
        "d": ["flu", "flu", "flu", "cold", "cold", "cold", "cold", "flu"],
    })  # fmt: skip
    tight = Mondrian([TCloseness(column="d", t=0.2)]).anonymize_table(df, {"age": None})
    loose = Mondrian([KAnonymity(k=4), TCloseness(column="d", t=0.25)]).anonymize_table(
        df, {"age": None}
    )
    assert tight.partitions == 1
    assert loose.release["age"].tolist() == ["1-4"] * 4 + ["5-8"] * 4


class _NoRoot(Hierarchy):
    """One level whose top holds two labels: the data has no single root node."""

    height = 1

    def _generalize(self, values):
        return np.array([[str(v), "low" if str(v) < "c" else "high"] for v in values], object)


def test_hierarchy_without_a_single_root_gets_star() -> None:
    df = pd.DataFrame({"x": ["a", "b", "c", "d"]})
    result = Mondrian([KAnonymity(k=4)]).anonymize_table(df, {"x": _NoRoot("x")})
    assert result.release["x"].tolist() == ["*"] * 4
    result = Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"x": _NoRoot("x")})
    assert result.release["x"].tolist() == ["low", "low", "high", "high"]


def test_numeric_default_and_float_labels() -> None:
    df = pd.DataFrame({"w": [1.5, 2.5, 3.0, 4.25], "n": [1, 2, 3, 4], "s": ["x", "y", "x", "y"]})
    flat = taxonomy_hierarchy("s", {"any": ["x", "y"]})
    result = Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"w": None, "n": None, "s": flat})
    # w and n are numeric by dtype; w is cut first (QI order); halves of 2 are too small to cut
    assert result.release["w"].tolist() == ["1.5-2.5"] * 2 + ["3-4.25"] * 2
    assert result.release["n"].tolist() == ["1-2"] * 2 + ["3-4"] * 2
    # the taxonomy puts '*' above its single group 'any': the region descends to that group
    assert result.release["s"].tolist() == ["any"] * 4


def test_index_and_row_order_are_kept() -> None:
    df = _eight_rows().iloc[::-1].set_index(pd.Index(list("abcdefgh")))
    result = Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"age": None, "city": CITY})
    assert result.release.index.tolist() == list("abcdefgh")
    assert (result.release["disease"] == df["disease"]).all()


# --------------------------------------------------------------------------------------------
# Refusals


def test_k_larger_than_the_table_raises() -> None:
    with pytest.raises(AnonymizationError, match=r"9-anonymity \(reaches 8\) cannot be reached"):
        Mondrian([KAnonymity(k=9)]).anonymize_table(_eight_rows(), {"age": None, "city": CITY})


def test_whole_table_failing_l_diversity_raises() -> None:
    df = _eight_rows().assign(disease="flu")
    with pytest.raises(AnonymizationError, match="does not suppress"):
        Mondrian([DistinctLDiversity(column="disease", l=2)]).anonymize_table(
            df, {"age": None, "city": CITY}
        )


def test_bad_inputs_raise() -> None:
    df = _eight_rows()
    with pytest.raises(ValueError, match="at least one privacy model"):
        Mondrian([])
    with pytest.raises(AnonymizationError, match="not in the table"):
        Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"zip": None})
    with pytest.raises(ValueError, match="'numeric' parameter"):
        Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"age": None}, numeric={"city"})
    with pytest.raises(ValueError, match="need a hierarchy"):
        Mondrian([KAnonymity(k=2)]).anonymize_table(df, {"city": None})
    with pytest.raises(HierarchyError, match="not covered"):
        Mondrian([KAnonymity(k=2)]).anonymize_table(df.assign(city="Paris"), {"city": CITY})
    with pytest.raises(AnonymizationError, match="missing"):
        Mondrian([KAnonymity(k=2)]).anonymize_table(df.assign(age=np.nan), {"age": None})
    with pytest.raises(AnonymizationError, match="no records"):
        Mondrian([KAnonymity(k=2)]).anonymize_table(df.iloc[:0], {"age": None})


@pytest.mark.slow
def test_a_million_rows_without_recursion() -> None:
    rng = np.random.default_rng(0)
    n = 1_000_000
    df = pd.DataFrame({
        "x": rng.permutation(n),
        "city": rng.choice(["Boston", "NYC", "LA", "SF"], size=n),
    })  # fmt: skip
    result = Mondrian([KAnonymity(k=200)]).anonymize_table(df, {"x": None, "city": CITY})
    assert result.class_sizes.sum() == n
    assert result.class_sizes.min() >= 200
    assert result.partitions > 1000


def test_a_release_failing_the_average_risk_is_refused_and_one_meeting_it_kept() -> None:
    """The average risk (classes / records) is a whole-table condition no region's check sees:
    a partition missing it is refused by the search, not returned for the gate to block."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 200), "v": rng.choice(list("abcd"), 200)})
    hierarchies = {"age": None, "v": taxonomy_hierarchy("v", {"any": list("abcd")})}
    failing = [KAnonymity(k=2), AverageRisk(limit=0.1)]
    with pytest.raises(AnonymizationError, match=r"average prosecutor risk <= 0.1 \(reaches"):
        Mondrian(failing).anonymize_table(frame, hierarchies)
    met = [KAnonymity(k=10), AverageRisk(limit=0.1)]  # classes of >= 10: risk <= 0.1
    result = Mondrian(met).anonymize_table(frame, hierarchies)
    assert result.class_sizes.min() >= 10 and len(result.class_sizes) / len(frame) <= 0.1


@pytest.mark.parametrize("strict", [True, False])
def test_estimated_k_map_checks_each_region_at_the_tables_sampling_fraction(strict: bool) -> None:
    """Estimated k-map's class size ``k'`` grows with the sampling fraction, which is the
    *table's* records over the population (as the gate reads it), not a region's: a region's
    own records gave half the table a fraction of 0.25 and ``k' = 8`` where the table's 0.5
    asks 10, so Mondrian released classes of 2 that the gate blocked."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"age": rng.integers(17, 91, 600), "x": rng.integers(0, 1000, 600)})
    model = EstimatedKMap(k=10, population_size=1200)
    assert model.required_size(600) == 10 and model.required_size(300) < 10
    result = Mondrian([model], strict=strict).anonymize_table(frame, {"age": None, "x": None})
    assert result.class_sizes.min() >= 10 and result.partitions > 1
    decision = verify_table(result.release, ["age", "x"], [model], input_rows=len(frame))
    assert decision.passed, decision.reasons


def test_relaxed_regions_with_equal_labels_failing_a_model_together_are_refused() -> None:
    """Relaxed regions with equal labels are one class of the release. delta-disclosure with
    absent values ignored does not hold for every union of classes that hold it (a value one
    region holds is diluted by the other), so Mondrian checks the joined classes: it returned
    this release (11 regions, 8 classes, the gate measured 1.34 against delta 1)."""
    frame = pd.DataFrame({
        "a": [1, 0, 0, 1, 2, 2, 1, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 1, 2, 1, 0, 2, 1, 2, 1, 1],
        "b": [1, 1, 3, 1, 0, 3, 0, 2, 1, 0, 0, 2, 1, 1, 2, 3, 2, 2, 1, 2, 2, 2, 0, 2, 2, 0],
        "s": list("yyzyzyzyyzxxxzxyyyzxzzxyyz"),
    })  # fmt: skip
    models = [KAnonymity(k=2), DeltaDisclosure(column="s", delta=1.0, absent_values="ignored")]
    with pytest.raises(AnonymizationError, match=r"disclosure.*reaches 1.34.*equal labels"):
        Mondrian(models, strict=False).anonymize_table(frame, {"a": None, "b": None})
    result = Mondrian(models).anonymize_table(frame, {"a": None, "b": None})  # strict: no join
    decision = verify_table(result.release, ["a", "b"], models, input_rows=len(frame))
    assert len(result.class_sizes) == result.partitions and decision.passed, decision.reasons
