"""DPHeter on real Adult rows: cuts, partitions, budget, selection, split points, pruning."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privgate.core.datasets import load_adult
from privgate.core.dp import Accountant, Spend
from privgate.core.dp.dpheter import (
    DPHeterConfig,
    cluster_class_labels,
    cluster_release,
    dpheter_release,
)
from privgate.core.dp.heterogeneous import heterogeneous_adult
from privgate.core.exceptions import (
    BudgetExceededError,
    HierarchyError,
    PolicyError,
    SchemaValidationError,
)
from privgate.core.hierarchy import ARXHierarchy, MaskingHierarchy, taxonomy_hierarchy
from privgate.core.utility import f_measure, match_point

HUGE = 1e7  # epsilon at which the exponential mechanism is an argmax and noise rounds to 0
CATEGORICAL = ("workclass", "education", "marital-status", "race", "sex")
NUMERIC = ("age", "hours-per-week")
#: Declared public bounds (UCI's documented ranges; never read from the data).
BOUNDS = {"age": (17, 90), "hours-per-week": (1, 99)}
CLASSES = ["<=50K", ">50K"]


@pytest.fixture(scope="module")
def adult(shared_data) -> pd.DataFrame:
    frame = load_adult(shared_data("adult/adult.data")).head(3000)
    return heterogeneous_adult(frame)


@pytest.fixture(scope="module")
def hierarchies(shared_data) -> tuple[dict, dict]:
    def arx(column: str) -> ARXHierarchy:
        return ARXHierarchy.from_csv(column, shared_data(f"arx/adult_hierarchy_{column}.csv"))

    return {c: arx(c) for c in CATEGORICAL}, {"occupation": arx("occupation")}


def _release(adult, hierarchies, config, **kwargs):
    categorical, set_valued = hierarchies
    return dpheter_release(
        adult,
        class_column="income",
        class_domain=CLASSES,
        categorical=categorical,
        numeric=list(NUMERIC),
        numeric_bounds=BOUNDS,
        set_valued=set_valued,
        config=config,
        **kwargs,
    )


def _entropy(counts) -> float:
    p = np.asarray(counts, dtype=float)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log2(p)).sum())


def _gain(groups: pd.Series, classes: pd.Series) -> float:
    table = pd.crosstab(groups, classes)
    n = table.values.sum()
    return _entropy(table.sum(axis=0)) - sum(row.sum() / n * _entropy(row) for row in table.values)


def test_initial_cut_is_the_root_and_all_budget_goes_to_the_counts(adult, hierarchies):
    result = _release(adult, hierarchies, DPHeterConfig(epsilon=HUGE, rounds=0))
    assert len(result.table) == 1
    row = result.table.iloc[0]
    assert all(row[c] == "*" for c in CATEGORICAL)
    assert row["age"] == "17-90"  # the declared bounds, whatever the data holds
    assert row["occupation"] == frozenset({"*"})
    assert row["count"] == len(adult)
    assert result.specializations == []
    assert [s.step for s in result.accountant.entries] == ["DPHeter leaf counts"]


def test_each_round_specializes_exactly_one_cut_element(adult, hierarchies):
    result = _release(adult, hierarchies, DPHeterConfig(epsilon=1.0, rounds=8))
    assert [s["round"] for s in result.specializations] == list(range(1, 9))
    # Replaying the history from the most general cut gives the final cuts.
    cuts = {c: ["*"] for c in CATEGORICAL}
    cuts.update({c: [f"{low}-{high}"] for c, (low, high) in BOUNDS.items()})
    cuts["occupation"] = [["*"]]
    for step in result.specializations:
        cut = cuts[step["attribute"]]
        assert cut.count(step["value"]) == 1
        at = cut.index(step["value"])
        cut[at : at + 1] = step["children"]
    assert cuts == {name: cut["values"] for name, cut in result.cuts.items()}
    assert len(result.table) == math.prod(len(c) for c in cuts.values())


def test_partitions_are_disjoint_cover_every_record_and_hold_its_values(adult, hierarchies):
    categorical, _ = hierarchies
    result = _release(adult, hierarchies, DPHeterConfig(epsilon=HUGE, rounds=10))
    index = result.partition_index(adult)
    assert index.min() >= 0 and index.max() < len(result.table)
    # Huge epsilon: the noisy counts are the exact partition sizes, so every record is counted
    # once (disjoint) and none is missing (cover).
    exact = np.bincount(index, minlength=len(result.table))
    assert np.array_equal(result.table["count"].to_numpy(), exact)
    assert exact.sum() == len(adult)
    # Each record's partition describes its values.
    rows = result.table.iloc[index]
    for c in CATEGORICAL:
        generalized = categorical[c].generalize(adult[c].tolist())
        assert all(
            label in set(levels)
            for label, levels in zip(rows[c].tolist(), generalized.tolist(), strict=True)
        )
    for c in NUMERIC:
        bounds = rows[c].str.split("-", expand=True).astype(int)
        values = adult[c].to_numpy()
        assert ((values >= bounds[0].to_numpy()) & (values <= bounds[1].to_numpy())).all()


def test_expand_has_one_record_per_count(adult, hierarchies):
    result = _release(adult, hierarchies, DPHeterConfig(epsilon=HUGE, rounds=4))
    expanded = result.expand()
    assert len(expanded) == result.table["count"].sum() == len(adult)
    assert "count" not in expanded.columns
    assert expanded["sex"].value_counts().sum() == len(adult)


@pytest.mark.parametrize(("epsilon", "rounds"), [(0.1, 4), (1.0, 8), (0.5, 16)])
def test_total_spend_is_exactly_epsilon_and_recorded(adult, hierarchies, epsilon, rounds):
    result = _release(adult, hierarchies, DPHeterConfig(epsilon=epsilon, rounds=rounds))
    assert result.accountant.total[0] == pytest.approx(epsilon, rel=1e-12)
    budget = result.budget
    assert budget["step_epsilon"] == pytest.approx(epsilon / 2 / (len(NUMERIC) + 2 * rounds))
    assert budget["counts"] >= epsilon / 2 * (1 - 1e-12)
    assert budget["selection_spent"] + budget["counts"] == pytest.approx(epsilon, rel=1e-12)
    selections = [s for s in result.accountant.entries if s.step.endswith("selection")]
    assert len(selections) == len(budget["rounds"]) == rounds


def test_caller_accountant_is_charged_and_its_cap_is_checked_first(adult, hierarchies):
    accountant = Accountant(budget=(2.0, 0.0))
    accountant.charge(Spend("laplace", 0.5, step="earlier release"))
    _release(adult, hierarchies, DPHeterConfig(epsilon=1.0, rounds=4), accountant=accountant)
    assert accountant.total[0] == pytest.approx(1.5, rel=1e-12)
    entries = len(accountant.entries)
    with pytest.raises(BudgetExceededError) as error:
        _release(adult, hierarchies, DPHeterConfig(epsilon=1.0, rounds=4), accountant=accountant)
    assert error.value.remaining[0] == pytest.approx(0.5)
    assert len(accountant.entries) == entries  # nothing drawn, nothing charged


def test_huge_epsilon_picks_the_max_score_specialization(adult, hierarchies):
    categorical, _ = hierarchies
    result = dpheter_release(
        adult,
        class_column="income",
        class_domain=CLASSES,
        categorical=categorical,
        numeric=list(NUMERIC),
        numeric_bounds=BOUNDS,
        config=DPHeterConfig(epsilon=HUGE, rounds=1),
    )
    # Independent scores of every root specialization.
    scores = {}
    for c in CATEGORICAL:
        table = categorical[c].generalize(adult[c].tolist())
        level = table.shape[1] - 2
        while len(set(table[:, level])) == 1:  # a single child is skipped
            level -= 1
        scores[c] = _gain(pd.Series(table[:, level]), adult["income"])
    for c in NUMERIC:
        values = adult[c].to_numpy()
        scores[c] = max(
            _gain(pd.Series(values < t), adult["income"]) for t in np.unique(values)[1:]
        )
    best = max(scores, key=scores.get)
    (chosen,) = result.specializations
    assert chosen["attribute"] == best
    assert chosen["score"] == pytest.approx(scores[best], abs=1e-9)


def test_numeric_split_points_are_candidate_values_and_the_best_at_huge_epsilon(adult):
    result = dpheter_release(
        adult,
        class_column="income",
        class_domain=CLASSES,
        categorical={},
        numeric=["age"],
        config=DPHeterConfig(epsilon=HUGE, rounds=3),
        numeric_bounds={"age": (0, 120)},
    )
    steps = result.specializations
    assert [s["attribute"] for s in steps] == ["age"] * 3
    for step in steps:
        low, high = (int(x) for x in step["value"].split("-"))
        split = step["split"]
        assert split == int(split) and low < split <= high  # a grid value inside the interval
        assert step["children"] == [f"{low}-{int(split) - 1}", f"{int(split)}-{high}"]
    first = steps[0]
    assert first["value"] == "0-120"
    age, income = adult["age"].to_numpy(), adult["income"]
    best = max(range(1, 121), key=lambda t: _gain(pd.Series(age < t), income))
    assert first["split"] == best
    assert result.cuts["age"]["bounds"] == [0, 120]


def test_set_valued_children_are_nonempty_subsets_and_low_counts_are_pruned(adult, hierarchies):
    _, set_valued = hierarchies
    exact = dpheter_release(
        adult,
        class_column="income",
        class_domain=CLASSES,
        numeric_bounds={},
        categorical={},
        numeric=[],
        set_valued=set_valued,
        config=DPHeterConfig(epsilon=HUGE, rounds=1),
    )
    (step,) = exact.specializations
    assert step["value"] == ["*"] and step["node"] == "*"
    groups = {"Technical", "Other", "Nontechnical"}
    children = [frozenset(c) for c in step["children"] if c != ["*"]]
    assert children and all(c and c <= groups for c in children)
    # Huge epsilon: a child survives exactly when some record has that combination of groups.
    occupation = ARXHierarchy.from_csv("occupation", set_valued["occupation"].source)
    top = dict(occupation.generalize(occupation.domain)[:, [0, 1]].tolist())
    observed = {frozenset(top[o] for o in cell) for cell in adult["occupation"]}
    assert set(children) == observed
    assert step["pruned"] == 7 - len(observed)
    assert step["residual"] == (step["pruned"] > 0)
    # A threshold above every count prunes every child: the records stay in the residual.
    pruned = dpheter_release(
        adult,
        class_column="income",
        class_domain=CLASSES,
        numeric_bounds={},
        categorical={},
        numeric=[],
        set_valued=set_valued,
        config=DPHeterConfig(epsilon=HUGE, rounds=1, set_threshold=len(adult) + 1),
    )
    assert pruned.specializations[0]["pruned"] == 7
    assert pruned.cuts["occupation"]["values"] == [["*"]]
    assert pruned.cuts["occupation"]["residual"] == [True]
    assert pruned.table["count"].tolist() == [len(adult)]


def test_score_is_left_out_of_the_publishable_description(adult, hierarchies):
    result = _release(adult, hierarchies, DPHeterConfig(epsilon=1.0, rounds=2))
    assert all("score" in s for s in result.specializations)
    assert all("score" not in s for s in result.to_dict()["specializations"])


@pytest.mark.parametrize(
    ("setting", "value"),
    [("rounds", -1), ("count_share", 1.0), ("score", "gini"), ("max_partitions", 0)],
)
def test_bad_settings_raise_naming_the_setting(setting, value):
    with pytest.raises(PolicyError, match=setting):
        DPHeterConfig(epsilon=1.0, **{setting: value})


def test_release_clustering_matches_the_original_at_huge_epsilon():
    rng = np.random.default_rng(0)
    n = 400
    group = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "kind": np.where(group == 1, "b1", "a1"),
            "level": np.where(group == 1, 60, 20) + rng.integers(0, 5, n),
        }
    )
    kind = taxonomy_hierarchy("kind", {"A": ["a1", "a2"], "B": ["b1", "b2"]})
    labels = cluster_class_labels(frame, ["kind", "level"], 2, "kmeans", seed=0)
    result = dpheter_release(
        frame.assign(cls=labels),
        class_column="cls",
        class_domain=[0, 1],
        categorical={"kind": kind},
        numeric=["level"],
        numeric_bounds={"level": (0, 100)},
        config=DPHeterConfig(epsilon=HUGE, rounds=3),
    )
    predicted = cluster_release(result, frame, 2, "bisecting", seed=0)
    assert f_measure(labels, predicted) == 1.0
    assert match_point(labels, predicted) == 1.0


def test_nothing_about_the_shape_comes_from_the_data(adult, hierarchies):
    """Domains, bounds and classes are declared: an undeclared one is refused, never read."""
    categorical, _ = hierarchies
    with pytest.raises(PolicyError, match="no declared bounds"):
        dpheter_release(
            adult,
            class_column="income",
            class_domain=CLASSES,
            categorical={},
            numeric=["age"],
            numeric_bounds={},
            config=DPHeterConfig(epsilon=1.0, rounds=1),
        )
    with pytest.raises(SchemaValidationError, match="outside its declared domain"):
        dpheter_release(
            adult,
            class_column="income",
            class_domain=["<=50K", "unknown"],
            categorical={"sex": categorical["sex"]},
            numeric=[],
            numeric_bounds={},
            config=DPHeterConfig(epsilon=1.0, rounds=1),
        )
    zips = pd.DataFrame({"zip": ["12345", "12346", "12399"] * 20, "cls": [0, 1, 1] * 20})
    masked = MaskingHierarchy("zip", length=5, levels=2)
    with pytest.raises(HierarchyError, match="whole domain declared"):
        dpheter_release(
            zips,
            class_column="cls",
            class_domain=[0, 1],
            categorical={"zip": masked},
            numeric=[],
            numeric_bounds={},
            config=DPHeterConfig(epsilon=1.0, rounds=1),
        )
    domain = ["12345", "12346", "12399", "31337"]  # 31337 never occurs: a leaf all the same
    declared = dpheter_release(
        zips,
        class_column="cls",
        class_domain=[0, 1, 2],
        categorical={"zip": masked},
        domains={"zip": domain},
        numeric=[],
        numeric_bounds={},
        config=DPHeterConfig(epsilon=HUGE, rounds=2),
    )
    # Round 1 splits the root into 123** and 31337 (single-child chains collapse), round 2
    # 123** into 1234* and 12399: the empty declared leaf 31337 is released with count 0.
    assert declared.cuts["zip"]["values"] == ["1234*", "12399", "31337"]
    assert declared.table.set_index("zip")["count"].to_dict() == {
        "1234*": 40,
        "12399": 20,
        "31337": 0,
    }
    assert declared.budget["classes"] == 3  # the declared classes, not the two observed
    assert declared.budget["sensitivity"] == pytest.approx(math.log2(3))
