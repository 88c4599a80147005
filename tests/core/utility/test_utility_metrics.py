"""Loss, the engine's metrics and total variation of a release: by hand, and against the engine.

The small table (6 records, age / city / disease) is worked out in the comments; the Adult
checks compare the measures taken on the written release with the optimal search's own
objective values for the same node.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from privgate.core.hierarchy import hierarchies_for
from privgate.core.policy import ReleasePolicy
from privgate.core.utility import (
    describe_domains,
    measure_utility,
    release_metrics,
    total_variation,
)

LOG3, LOG6 = math.log2(3), math.log2(6)


@pytest.fixture()
def toy():
    policy = ReleasePolicy.model_validate(
        {
            "dataset": "toy",
            "input": {"path": "toy.csv"},
            "columns": {
                "age": {
                    "role": "quasi_identifier",
                    "type": "integer",
                    "hierarchy": {"kind": "interval", "bands": [10, 20]},
                },
                "city": {
                    "role": "quasi_identifier",
                    "hierarchy": {
                        "kind": "taxonomy",
                        "tree": {"East": ["Boston", "NYC", "DC"], "West": ["LA", "SF"]},
                    },
                },
                "disease": {"role": "sensitive"},
            },
            "privacy": {"k": 2},
        }
    )

    original = pd.DataFrame(
        {
            "age": [21, 23, 27, 41, 45, 49],
            "city": ["Boston", "NYC", "DC", "LA", "SF", "LA"],
            "disease": ["flu", "flu", "cold", "flu", "cold", "cold"],
        }
    )
    # age and city one level up; record 5 suppressed
    release = pd.DataFrame(
        {
            "age": ["20-29", "20-29", "20-29", "40-49", "40-49"],
            "city": ["East", "East", "East", "West", "West"],
            "disease": ["flu", "flu", "cold", "flu", "cold"],
        },
        index=[0, 1, 2, 3, 4],
    )
    return policy, hierarchies_for(policy), original, release


def test_small_table_by_hand(toy) -> None:
    policy, hierarchies, original, release = toy
    utility = measure_utility(original, release, policy, hierarchies, levels={"age": 1, "city": 1})

    # age spans 49 - 21 = 28; a 10-year band '20-29' costs 9/28; the suppressed record 1
    age_loss = (3 * 9 / 28 + 2 * 9 / 28 + 1) / 6
    # city has 5 leaves: East covers 3 -> 2/4, West 2 -> 1/4; suppressed 1
    city_loss = (3 * 2 / 4 + 2 * 1 / 4 + 1) / 6
    assert utility.loss["per_attribute"] == pytest.approx({"age": age_loss, "city": city_loss})
    assert utility.loss["total"] == pytest.approx((age_loss + city_loss) / 2)
    assert utility.loss["n_suppressed"] == 1

    m = utility.metrics
    # classes of 3 and 2, one record suppressed: (9 + 4 + 1 * 6) / 6^2
    assert m["discernibility"] == pytest.approx(19 / 36)
    # (5 kept / 2 classes) / k=2
    assert m["average_class_size"] == pytest.approx(1.25)
    # entropy: age loses 5 * log2(3) (each band covers 3 ages) + log2(6) (suppressed);
    # city loses 3 * log2(3) (East) + (log2(3) - 1) (LA under West) + log2(3) (SF under West)
    # + log2(6/2) (the suppressed LA); worst case 6 log2 6 (age) + 4 log2 6 + 2 log2 3 (city)
    lost = 5 * LOG3 + LOG6 + 6 * LOG3 - 1
    assert m["entropy"] == pytest.approx(lost / (10 * LOG6 + 2 * LOG3))
    # precision: heights 3 (age) and 2 (city); kept 5 x (1/3 + 1/2), suppressed 1 x 2
    assert m["precision"] == pytest.approx(1 - (5 * (1 / 3 + 1 / 2) + 2) / (6 * 2))
    assert (m["classes"], m["min_class_size"], m["suppressed"]) == (2, 2, 1)

    # total variation: ages 1/6 each vs 1/5 (under 20-29) and 2/15 (under 40-49)
    assert utility.distribution["age"] == pytest.approx(0.5 * (3 / 30 + 3 / 30))
    # cities 1/6, 1/6, 1/6, 2/6, 1/6 vs 1/5 each
    assert utility.distribution["city"] == pytest.approx(0.5 * (3 / 30 + 4 / 30 + 1 / 30))
    # disease 1/2 each vs 3/5 flu, 2/5 cold
    assert utility.distribution["disease"] == pytest.approx(0.1)
    # no utility section: only the cheap measures
    assert utility.classification is None and utility.clustering is None


def test_identical_release_loses_nothing(toy) -> None:
    policy, hierarchies, original, _ = toy
    utility = measure_utility(original, original.copy(), policy, hierarchies)
    assert utility.loss["total"] == 0.0
    assert utility.metrics["entropy"] == 0.0
    assert set(utility.distribution.values()) == {0.0}
    assert utility.metrics["precision"] is None  # no levels given


def test_total_variation_of_star_and_disjoint_support() -> None:
    original = pd.DataFrame({"c": ["a", "a", "b", "c"]})
    domain = describe_domains(original, {"c": None})["c"]
    assert total_variation(domain, pd.Series(["*", "*", "*", "*"])) == pytest.approx(
        0.5 * (abs(0.5 - 1 / 3) + 2 * abs(0.25 - 1 / 3))
    )
    assert total_variation(domain, pd.Series(["c", "c"])) == pytest.approx(0.75)
    assert total_variation(domain, pd.Series([], dtype=object)) == 1.0


def test_release_rows_must_carry_their_original_index(toy) -> None:
    policy, hierarchies, original, release = toy
    with pytest.raises(ValueError, match="no original record with the same index"):
        release_metrics(
            original,
            release.set_axis([0, 1, 2, 3, 99]),
            describe_domains(original, {"city": hierarchies["city"]}),
            k=2,
        )


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("metric", ["entropy", "discernibility", "average_class_size", "precision"])
def test_adult_metrics_equal_the_searchs_objective(adult, k, metric) -> None:
    """On the written release, each metric equals the optimal search's value for its node."""
    table, release = adult.release("optimal", **{"privacy.k": k, "algorithm.metric": metric})
    qis = adult.policy.quasi_identifiers
    domains = describe_domains(adult.frame, {q: adult.hierarchies[q] for q in qis}, {"age"})
    m = release_metrics(
        adult.frame,
        release,
        domains,
        k=k,
        levels=table.result.levels,
        heights={q: adult.hierarchies[q].height for q in qis},
    )
    measured = 1 - m["precision"] if metric == "precision" else m[metric]
    assert measured == pytest.approx(table.metrics["search_loss"], rel=1e-12, abs=1e-12)
    assert m["suppressed"] == table.result.n_suppressed


def test_adult_loss_is_the_stages_loss(adult, adult_k5, adult_mondrian) -> None:
    for table, release in (adult_k5, adult_mondrian):
        policy = adult.policy_for(table.metrics["algorithm"])
        utility = measure_utility(
            adult.frame, release, policy, adult.hierarchies, levels=table.result.levels
        )
        assert utility.loss["total"] == pytest.approx(table.metrics["loss"])
        assert utility.loss["per_attribute"] == pytest.approx(table.metrics["loss_per_attribute"])
        assert utility.metrics["suppressed"] == table.metrics["suppressed"]
        # a column released as is moves only through suppression
        tv = utility.distribution["salary-class"]
        assert tv == 0.0 if table.metrics["suppressed"] == 0 else 0 < tv < 0.01
    assert adult_mondrian[0].metrics["algorithm"] == "mondrian"
