"""The greedy partitioning (``greedy_partition``) on the real Adult tables and small examples.

Every release is written to CSV and read back as text, then checked by the gate
(:func:`verify_table`, the policy's own model objects) and by a brute-force count of each class
(records grouped by their label tuple), never by the algorithm's own bookkeeping; labels are
checked against the original values. The loss is :func:`table_loss`, the benchmark's measure.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_QI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from local_recoding_labels import assert_labels_cover_originals
from pycanon import anonymity

from privgate.core.anonymize import (
    GreedyPartition,
    Mondrian,
    SearchInput,
    SearchSetup,
    make_algorithm,
    release_table,
)
from privgate.core.exceptions import AnonymizationError, PolicyError
from privgate.core.gate import read_release, verify_table
from privgate.core.hierarchy import ARXHierarchy, taxonomy_hierarchy
from privgate.core.metrics import table_loss
from privgate.core.policy import Algorithm
from privgate.core.privacy import (
    AverageRisk,
    DistinctLDiversity,
    EstimatedKMap,
    KAnonymity,
    TCloseness,
)
from privgate.core.progress import PROGRESS_LOGGER
from privgate.core.wide_data import (
    WIDE_TARGET,
    generate_wide_table,
    wide_attributes,
    wide_hierarchies,
)

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

SENSITIVE = "salary-class"


@pytest.fixture(scope="module")
def adult8(shared_data) -> tuple[pd.DataFrame, dict]:
    """ARX's Adult (30,162 records) with age as a number and ARX's hierarchies."""
    df = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    df["age"] = df["age"].astype(int)
    hierarchies = {
        qi: ARXHierarchy.from_csv(qi, shared_data(f"arx/adult_hierarchy_{qi}.csv"))
        for qi in ADULT_QI
    }
    return df, hierarchies


def _setup(hierarchies, models, numeric=frozenset(), limit=0.0, released=None) -> SearchSetup:
    qis = tuple(hierarchies)
    return SearchSetup(
        algorithm=Algorithm.GREEDY_PARTITION,
        quasi_identifiers=qis,
        hierarchies=hierarchies,
        models=tuple(models),
        numeric=frozenset(numeric),
        suppression_limit=limit,
        released_columns=released or (*qis, SENSITIVE),
    )


def _written(frame: pd.DataFrame, setup: SearchSetup, tmp_path: Path, algorithm=None):
    """The release through the contract, written to CSV and read back as text cells."""
    data = SearchInput.prepare(frame, setup)
    result = (algorithm or make_algorithm(setup)).anonymize(data)
    release = release_table(frame, result, setup.released_columns)
    path = tmp_path / "release.csv"
    release.to_csv(path, index=False)
    return result, release, read_release(path)


def _brute_force_min_class(text: dict, qis) -> int:
    """The smallest class of the written release, counted directly by label tuple."""
    counts: dict[tuple, int] = {}
    for row in zip(*(text[q] for q in qis), strict=True):
        counts[row] = counts.get(row, 0) + 1
    return min(counts.values())


def _assert_faithful(original: pd.DataFrame, release: pd.DataFrame, hierarchies) -> None:
    """Every numeric label is a range holding the original, every categorical one the
    original value or one of its ancestors."""
    assert_labels_cover_originals(original, release, hierarchies)


# --------------------------------------------------------------------------------------------
# The real Adult table (8 QIs, ARX's hierarchies, age cut as a number)


@pytest.mark.slow  # whole-Adult partitioning with l-diversity and t-closeness (~10 s)
def test_adult_l_diversity_and_t_closeness_pass_the_gate(adult8, tmp_path: Path) -> None:
    frame, hierarchies = adult8
    models = [KAnonymity(k=3), DistinctLDiversity(column=SENSITIVE, l=2),
              TCloseness(column=SENSITIVE, t=0.2)]  # fmt: skip
    setup = _setup(hierarchies, models, numeric={"age"})
    algorithm = GreedyPartition(models, exact_below=0)  # the partition alone
    _, release, text = _written(frame, setup, tmp_path, algorithm)

    decision = verify_table(text, list(ADULT_QI), models, **setup.gate_limits(len(frame)))
    assert decision.passed, decision.reasons
    assert decision.measurements["achieved"][str(models[2])] <= 0.2
    assert _brute_force_min_class(text, ADULT_QI) >= 3
    classes = pd.DataFrame(text).groupby(list(ADULT_QI))[SENSITIVE].nunique()
    assert classes.min() >= 2  # brute-force distinct 2-diversity
    _assert_faithful(frame, release, hierarchies)


# --------------------------------------------------------------------------------------------
# The synthetic 30-QI table (3^30 nodes: the exact search is never tried)


@pytest.mark.slow  # two partitionings of a 3,000 x 30 table (~5 s)
def test_wide_table_k2_passes_and_loses_less_than_mondrian(tmp_path: Path) -> None:
    frame = generate_wide_table(3000)
    hierarchies = wide_hierarchies()
    qis = wide_attributes()
    models = [KAnonymity(k=2)]
    setup = _setup(hierarchies, models, released=(*qis, WIDE_TARGET))
    result, release, text = _written(frame, setup, tmp_path)

    assert result.details["kept"] == "partition" and result.details["clustered_regions"] > 0
    decision = verify_table(text, qis, models, **setup.gate_limits(len(frame)))
    assert decision.passed, decision.reasons
    assert _brute_force_min_class(text, qis) >= 2
    ours = table_loss(frame[qis], release[qis], hierarchies, set())["total"]
    mondrian = Mondrian(models).anonymize_table(frame, hierarchies).release
    assert ours < table_loss(frame[qis], mondrian[qis], hierarchies, set())["total"]


# --------------------------------------------------------------------------------------------
# Small examples


def _six() -> tuple[pd.DataFrame, dict]:
    frame = pd.DataFrame(
        {
            "age": [21, 22, 23, 61, 62, 90],
            "sex": ["M", "M", "F", "F", "M", "F"],
            SENSITIVE: ["a", "b", "a", "b", "a", "b"],
        }
    )
    return frame, {"age": None, "sex": taxonomy_hierarchy("sex", {"any": ["M", "F"]})}


def test_numeric_cut_where_it_saves_the_most_not_at_the_median() -> None:
    frame = pd.DataFrame({"age": [20, 21, 22, 23, 24, 90], "z": list("aaaaaa")})
    hierarchies = {"age": None, "z": taxonomy_hierarchy("z", {"any": ["a"]})}
    release = GreedyPartition([KAnonymity(k=2)]).anonymize_table(frame, hierarchies).release
    # Mondrian's median cut gives 20-22 / 23-90; cutting before 90's neighbour saves more
    assert release["age"].tolist() == ["20-21", "20-21", "22-23", "22-23", "24-90", "24-90"]
    median = Mondrian([KAnonymity(k=2)]).anonymize_table(frame, hierarchies).release
    assert median["age"].tolist()[:3] == ["20-22"] * 3


def test_partial_cut_keeps_rare_children_under_their_parent() -> None:
    frame = pd.DataFrame({"v": ["a", "a", "b", "b", "c", "d"]})
    hierarchies = {"v": taxonomy_hierarchy("v", {"all": ["a", "b", "c", "d"]})}
    release = GreedyPartition([KAnonymity(k=2)]).anonymize_table(frame, hierarchies).release
    # a and b are cut off; c and d (one record each) stay together under their parent
    assert release["v"].tolist() == ["a", "a", "b", "b", "all", "all"]
    median = Mondrian([KAnonymity(k=2)]).anonymize_table(frame, hierarchies).release
    assert median["v"].tolist() == ["all"] * 6  # Mondrian's cut needs every child >= k


def test_exact_search_is_kept_when_it_loses_less() -> None:
    # One record of b: no cut can split it off (k=2); the clustering pairs it with one a, both
    # labelled "any" (loss 2/5); the exact search suppresses it within the 20 % limit (1/5).
    frame = pd.DataFrame({"v": ["a", "a", "a", "a", "b"], SENSITIVE: list("xyxyx")})
    hierarchies = {"v": taxonomy_hierarchy("v", {"any": ["a", "b"]})}
    setup = _setup(hierarchies, [KAnonymity(k=2)], limit=0.2)
    result = make_algorithm(setup).anonymize(SearchInput.prepare(frame, setup))
    assert result.algorithm == "greedy_partition"
    assert result.details["kept"] == "exact"
    assert result.details["exact_loss"] == pytest.approx(0.2)
    assert result.details["partition_loss"] == pytest.approx(0.4)
    assert result.suppressed.tolist() == [False] * 4 + [True]
    assert result.labels["v"].tolist() == ["a"] * 4


def test_time_budget_releases_the_waiting_regions_uncut() -> None:
    frame, hierarchies = _six()
    algorithm = GreedyPartition([KAnonymity(k=2)], max_seconds=1e-9)
    out = algorithm.anonymize_table(frame, hierarchies)
    assert out.partitions == 1  # the whole table, which satisfies the models, uncut
    assert out.release["age"].tolist() == ["21-90"] * 6
    full = GreedyPartition([KAnonymity(k=2)]).anonymize_table(frame, hierarchies)
    assert full.partitions == 3


def test_budget_flag_and_progress_lines(monkeypatch, caplog) -> None:
    monkeypatch.setenv("PRIVGATE_PROGRESS_SECONDS", "0")
    frame = generate_wide_table(300)
    hierarchies = wide_hierarchies()
    setup = _setup(hierarchies, [KAnonymity(k=2)], released=(*hierarchies, WIDE_TARGET))
    algorithm = GreedyPartition(setup.models, exact_below=0, cluster_below=50)
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        result = algorithm.anonymize(SearchInput.prepare(frame, setup))
    assert result.details["budget_exhausted"] is False and result.details["cuts"] > 0
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert any(line.startswith("greedy partition") for line in lines), lines


def test_l_diversity_is_checked_in_every_region() -> None:
    frame, hierarchies = _six()
    frame[SENSITIVE] = ["a", "a", "b", "b", "a", "b"]
    models = [DistinctLDiversity(column=SENSITIVE, l=2)]
    release = GreedyPartition(models).anonymize_table(frame, hierarchies).release
    per_class = release.groupby(["age", "sex"])[SENSITIVE].nunique()
    assert per_class.min() >= 2


def test_whole_table_failing_a_model_raises() -> None:
    frame, hierarchies = _six()
    with pytest.raises(AnonymizationError, match="7-anonymity"):
        GreedyPartition([KAnonymity(k=7)]).anonymize_table(frame, hierarchies)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_seconds": 0}, "'max_seconds' parameter must be > 0"),
        ({"exact_below": -1}, "'exact_below' parameter must be >= 0"),
        ({"suppression_limit": 2.0}, "'suppression_limit' parameter must be in"),
        ({"cluster_below": -1}, "'cluster_below' parameter must be >= 0"),
    ],
)
def test_bad_parameters_are_named(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        GreedyPartition([KAnonymity(k=2)], **kwargs)


def test_registry_and_policy_name_it(adult_policy) -> None:
    policy = adult_policy.with_overrides(algorithm={"name": "greedy_partition", "max_seconds": 30})
    setup = SearchSetup.from_policy(policy)
    algorithm = make_algorithm(setup)
    assert isinstance(algorithm, GreedyPartition) and algorithm.max_seconds == 30
    with pytest.raises(PolicyError, match="'max_seconds' applies to the greedy_partition"):
        adult_policy.with_overrides(algorithm={"name": "mondrian", "max_seconds": 30})
    assert np.isclose(setup.suppression_limit, algorithm.suppression_limit)


def test_the_stage_runs_it_from_the_policy_and_beats_mondrian(adult, tmp_path: Path) -> None:
    """Through ``core.stages.anonymize`` (the registry, no algorithm branch) with the Adult
    policy's own setup (k=5, 2 % suppression, age an integer column cut as a number), gated
    as written, counted directly, and scored against Mondrian by ``table_loss``."""
    from privgate.core.stages import anonymize

    policy = adult.policy.with_overrides(algorithm={"name": "greedy_partition"})
    setup = SearchSetup.from_policy(policy, adult.hierarchies)
    frame = adult.frame
    [table] = anonymize(frame, setup)
    path = tmp_path / "release.csv"
    table.frame.to_csv(path, index=False)
    text = read_release(path)
    qis = list(setup.quasi_identifiers)
    decision = verify_table(text, qis, list(setup.models), **setup.gate_limits(len(frame)))
    assert decision.passed, decision.reasons
    assert _brute_force_min_class(text, qis) >= policy.privacy.k
    assert table.metrics["algorithm"] == "greedy_partition"
    _assert_faithful(frame, table.frame, dict(adult.hierarchies))
    # The 6,480-node lattice is below exact_below: both releases were made, the lower kept.
    details = table.result.details
    assert details["kept"] == "partition" and table.result.n_suppressed == 0
    assert details["partition_loss"] < details["exact_loss"]
    numeric = set(setup.numeric)
    ours = table_loss(frame[qis], table.frame[qis], adult.hierarchies, numeric)["total"]
    assert ours == pytest.approx(details["partition_loss"]) == table.metrics["loss"]
    mondrian = Mondrian(list(setup.models)).anonymize_table(
        frame, {**adult.hierarchies, "age": None}, numeric=numeric
    )
    assert ours < table_loss(frame[qis], mondrian.release[qis], adult.hierarchies, numeric)["total"]


# --------------------------------------------------------------------------------------------
# Random tables: every release is k-anonymous and distinct-l-diverse by an independent count


@st.composite
def _random_tables(draw):
    """A table of 8-60 records: a number, two categories of a 3-level taxonomy, a sensitive
    column; k (and l) small enough for the whole table to satisfy them."""
    n = draw(st.integers(8, 60))
    ints = st.integers(0, 2**31 - 1)
    rng = np.random.default_rng(draw(ints))
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n) if draw(st.booleans()) else rng.choice([20, 21, 60], n),
            "c1": rng.choice(["a1", "a2", "b1", "b2", "b3"], n, p=[0.5, 0.2, 0.15, 0.1, 0.05]),
            "c2": rng.choice(["a1", "a2", "b1", "b2", "b3"], n),
            SENSITIVE: rng.choice(["x", "y", "z"], n),
        }
    )
    k = draw(st.integers(2, max(2, n // 3)))
    l_value = draw(st.sampled_from([None, 2]))
    if l_value is not None and frame[SENSITIVE].nunique() < l_value:
        l_value = None
    cluster_below = draw(st.sampled_from([0, 10, 1000]))
    return frame, k, l_value, cluster_below


_TREE = {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_random_tables())
def test_random_tables_are_k_anonymous_l_diverse_and_faithful(case) -> None:
    frame, k, l_value, cluster_below = case
    hierarchies = {
        "age": None,
        "c1": taxonomy_hierarchy("c1", _TREE),
        "c2": taxonomy_hierarchy("c2", _TREE),
    }
    models = [KAnonymity(k=k)]
    if l_value is not None:
        models.append(DistinctLDiversity(column=SENSITIVE, l=l_value))
    algorithm = GreedyPartition(models, exact_below=0, cluster_below=cluster_below)
    release = algorithm.anonymize_table(frame, hierarchies).release

    qis = ["age", "c1", "c2"]
    text = release.astype("string")
    assert len(release) == len(frame)  # nothing suppressed
    assert text.groupby(qis).size().min() >= k
    assert anonymity.k_anonymity(text, qis) >= k
    if l_value is not None:
        assert text.groupby(qis)[SENSITIVE].nunique().min() >= l_value
    _assert_faithful(frame, release, {q: h for q, h in hierarchies.items() if q != "age"})


# --------------------------------------------------------------------------------------------
# Whole-table conditions (average risk): no region's check sees them


def _risky_table() -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(3)
    n = 200
    frame = pd.DataFrame(
        {
            "c1": rng.choice(["a1", "a2", "b1", "b2", "b3"], n),
            "c2": rng.choice(["a1", "a2", "b1", "b2", "b3"], n),
            SENSITIVE: rng.choice(["x", "y"], n),
        }
    )
    return frame, {q: taxonomy_hierarchy(q, _TREE) for q in ("c1", "c2")}


def test_a_partition_failing_the_average_risk_is_refused_not_returned() -> None:
    frame, hierarchies = _risky_table()
    models = [KAnonymity(k=2), AverageRisk(limit=0.1)]
    with pytest.raises(AnonymizationError, match="average prosecutor risk <= 0.1 .*whole-table"):
        GreedyPartition(models, exact_below=0).anonymize_table(frame, hierarchies)


def test_below_exact_below_the_exact_search_meets_the_average_risk(tmp_path: Path) -> None:
    frame, hierarchies = _risky_table()
    models = [KAnonymity(k=2), AverageRisk(limit=0.1)]
    setup = _setup(hierarchies, models)
    result, _, text = _written(frame, setup, tmp_path)
    assert result.algorithm == "greedy_partition" and result.details["kept"] == "exact"
    assert "fails average prosecutor risk <= 0.1 (reaches" in result.details["why"]
    assert "whole-table condition" in result.details["why"]
    decision = verify_table(text, ["c1", "c2"], models, **setup.gate_limits(len(frame)))
    assert decision.passed, decision.reasons


def test_estimated_k_map_checks_each_region_at_the_tables_sampling_fraction() -> None:
    """As for Mondrian: a region is checked with the table's sampling fraction (``k' = 10``
    here), not its own (a quarter of the table: ``k' = 8``), so the partition is released,
    not refused by the class check that sees the whole table."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"age": rng.integers(17, 91, 600), "x": rng.integers(0, 1000, 600)})
    model = EstimatedKMap(k=10, population_size=1200)
    result = GreedyPartition([model], exact_below=0).anonymize_table(
        frame, {"age": None, "x": None}
    )
    assert result.class_sizes.min() >= 10 and result.partitions > 1
    decision = verify_table(result.release, ["age", "x"], [model], input_rows=len(frame))
    assert decision.passed, decision.reasons
