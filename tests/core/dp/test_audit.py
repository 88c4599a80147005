"""The ε audit: every mechanism and the end-to-end DPHeter release, and the audit's power.

For each mechanism and for DPHeter on small tables, neighbouring datasets D and D' (one record
added) are run many times; the Clopper-Pearson lower bound on ε (``core.dp.audit``) must not
exceed the claimed ε. The audit is only evidence if it can fail, so the same harness is pointed
at planted bugs — half the noise scale, a score whose sensitivity does not hold, and the
cluster-label scoring that was removed from the policy — and must report each as a violation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgate.core.dp import mechanisms
from privgate.core.dp.audit import audit_epsilon, clopper_pearson
from privgate.core.dp.dpheter import DPHeterConfig, cluster_class_labels, dpheter_release
from privgate.core.hierarchy import taxonomy_hierarchy

EPSILON = 1.0


def test_clopper_pearson_matches_known_values():
    low, high = clopper_pearson(5, 10, 0.05)
    assert low == pytest.approx(0.187086, abs=1e-6) and high == pytest.approx(0.812914, abs=1e-6)
    assert clopper_pearson(0, 10, 0.05)[0] == 0.0 and clopper_pearson(10, 10, 0.05)[1] == 1.0


# ----------------------------------------------------------------------------------------------
# Mechanisms (vectorized: n independent draws of the one-value mechanism at once)


def _counts(epsilon: float):
    return lambda count, n: mechanisms.discrete_laplace_counts([count] * n, epsilon)


def _values(epsilon: float):
    return lambda value, n: mechanisms.laplace_values([value] * n, epsilon, sensitivity=1.0)


@pytest.mark.slow  # 4 x 20,000 OpenDP draws per mechanism: 3-12 s under load
@pytest.mark.parametrize(
    ("name", "mechanism"), [("discrete laplace", _counts), ("laplace", _values)]
)
def test_noise_mechanisms_hold_their_epsilon_and_the_audit_catches_half_the_noise(name, mechanism):
    honest = audit_epsilon(
        None, 10, 11, batch=mechanism(EPSILON), trials=20_000, claimed_epsilon=EPSILON
    )
    assert not honest.violated, honest
    assert honest.epsilon_lower_bound > 0.7  # the audit is tight enough to mean something
    # Planted bug: half the noise scale (the noise of 2 epsilon, claimed as epsilon).
    buggy = audit_epsilon(
        None, 10, 11, batch=mechanism(2 * EPSILON), trials=20_000, claimed_epsilon=EPSILON
    )
    assert buggy.violated, buggy


@pytest.mark.slow  # an audit of OpenDP draws: 14 s under load
def test_gaussian_holds_its_epsilon_delta():
    def batch(value, n):
        return mechanisms.gaussian_values([value] * n, EPSILON, 1e-5, sensitivity=1.0)

    result = audit_epsilon(
        None, 0.0, 1.0, batch=batch, trials=20_000, claimed_epsilon=EPSILON, delta=1e-5
    )
    assert not result.violated, result


@pytest.mark.slow  # an audit of OpenDP draws: 13 s under load
def test_exponential_selection_holds_its_epsilon_and_an_understated_sensitivity_is_caught():
    def select(scores, sensitivity=1.0):
        return mechanisms.exponential_select(scores, EPSILON, sensitivity=sensitivity)

    # Neighbours move every score by at most 1 (the declared sensitivity), in both directions.
    honest = audit_epsilon(select, [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0], trials=8_000,
                           claimed_epsilon=EPSILON)  # fmt: skip
    assert not honest.violated, honest
    assert honest.epsilon_lower_bound > 0.5  # close to the bound: not drowned in noise
    # Planted bug: one record moves a score by 4 while the declared sensitivity is 1.
    buggy = audit_epsilon(select, [0.0, 0.0, 0.0], [4.0, 0.0, 0.0], trials=6_000,
                          claimed_epsilon=EPSILON)  # fmt: skip
    assert buggy.violated, buggy


@pytest.mark.slow  # an audit of OpenDP draws
def test_monotonic_selection_holds_half_the_noise_on_monotone_neighbours():
    def select(scores):
        return mechanisms.exponential_select(scores, EPSILON, sensitivity=1.0, monotonic=True)

    result = audit_epsilon(select, [0.0, 0.0, 0.0], [1.0, 1.0, 0.0], trials=6_000,
                           claimed_epsilon=EPSILON)  # fmt: skip
    assert not result.violated, result


@pytest.mark.slow  # an audit of OpenDP draws: 11 s under load
def test_a_laplace_vector_splits_its_l1_sensitivity():
    """Both coordinates move by 1 (L1 distance 2 = the declared sensitivity)."""

    def batch(value, n):
        noisy = mechanisms.laplace_values([value, value] * n, EPSILON, sensitivity=2.0)
        return noisy.reshape(n, 2).sum(axis=1)

    result = audit_epsilon(None, 0.0, 1.0, batch=batch, trials=20_000, claimed_epsilon=EPSILON)
    assert not result.violated, result
    assert result.epsilon_lower_bound > 0.4


# ----------------------------------------------------------------------------------------------
# DPHeter end to end on small tables

SEX = taxonomy_hierarchy("sex", {"person": ["F", "M"]})


def _groups(extra_age: int | None = None) -> pd.DataFrame:
    """Three tight age groups (20, 50, 80) whose 2-means clustering is one record from a flip."""
    ages = [20] * 101 + [50] * 100 + [80] * 100
    classes = ["low"] * 101 + ["high"] * 200
    if extra_age is not None:
        ages.append(extra_age)
        classes.append("high")
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": ages, "sex": rng.choice(["F", "M"], len(ages)), "cls": classes})


def _release(frame: pd.DataFrame, class_column: str, class_domain, **config):
    return _dpheter(frame, class_column, class_domain, **config).table


def _dpheter(frame: pd.DataFrame, class_column: str, class_domain, **config):
    return dpheter_release(
        frame,
        class_column=class_column,
        class_domain=class_domain,
        categorical={"sex": SEX},
        numeric=["age"],
        numeric_bounds={"age": (0, 100)},
        config=DPHeterConfig(epsilon=EPSILON, **config),
    )


def _root_split(frame: pd.DataFrame, class_column: str, class_domain, **config) -> float:
    """The age split point DPHeter chose for the root (its first draw), from the release."""
    result = _dpheter(frame, class_column, class_domain, rounds=1, score="max", **config)
    steps = [s for s in result.specializations if s["attribute"] == "age"]
    return steps[0]["split"] if steps else -1.0


@pytest.mark.slow
def test_dpheter_with_a_declared_class_holds_its_epsilon():
    """The Max score against each record's own declared class: sensitivity 1 holds."""
    result = audit_epsilon(
        lambda frame: _root_split(frame, "cls", ["low", "high"]),
        _groups(),
        _groups(extra_age=80),
        trials=1_000,
        claimed_epsilon=EPSILON,
    )
    assert not result.violated, result


@pytest.mark.slow
def test_the_audit_catches_cluster_label_scoring():
    """The removed option, planted: class = the owner's k-means labels of the table itself.

    Adding one record at age 80 flips the 2-means clustering of all 100 records at age 50, so
    the Max score of every split point moves by about 100 records, not 1, and the first split
    point of the release gives the record away.

    The owner's clustering is deterministic (k-means with a fixed seed), so each table is
    clustered once; every trial draws DPHeter's noise afresh on the labelled table (refitting
    k-means 600 times gave the same labels and took minutes on 2 shared cores).
    """
    dataset, neighbour = _groups(), _groups(extra_age=80)
    labelled = {
        id(frame): frame.assign(cluster=cluster_class_labels(frame, ["age"], 2, "kmeans", seed=0))
        for frame in (dataset, neighbour)
    }

    def clustered(frame: pd.DataFrame) -> float:
        return _root_split(labelled[id(frame)], "cluster", [0, 1])

    result = audit_epsilon(clustered, dataset, neighbour, trials=300, claimed_epsilon=EPSILON)
    assert result.violated, result


def _noisy_total(frame: pd.DataFrame) -> int:
    """DPHeter with no specialization round: the whole epsilon buys the one noisy count."""
    return int(_release(frame, "cls", ["low", "high"], rounds=0)["count"].iloc[0])


@pytest.mark.slow
def test_dpheter_counts_hold_their_epsilon_and_the_audit_catches_half_the_noise(monkeypatch):
    honest = audit_epsilon(
        _noisy_total, _groups(), _groups(extra_age=80), trials=1_000, claimed_epsilon=EPSILON
    )
    assert not honest.violated, honest

    # Planted bug: every OpenDP measurement built with twice the epsilon (half the noise
    # scale) while the accountant is told the claimed epsilon.
    real = mechanisms._pure_measurement

    def half_noise(kind, epsilon, sensitivity):
        measurement, _, scale = real(kind, 2 * epsilon, sensitivity)
        return measurement, epsilon, scale

    monkeypatch.setattr(mechanisms, "_pure_measurement", half_noise)
    buggy = audit_epsilon(
        _noisy_total, _groups(), _groups(extra_age=80), trials=1_000, claimed_epsilon=EPSILON
    )
    assert buggy.violated, buggy
