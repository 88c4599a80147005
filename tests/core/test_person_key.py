"""People, not rows: classes counted in distinct persons, suppression of whole persons.

The person-keyed node checker is compared with a brute force over every subset of persons
(the largest set whose records can all be released), and the gate with a plain count.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.anonymize import OptimalLattice, apply_generalization
from privgate.core.anonymize._persons import PersonNodeChecker
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError, PolicyError
from privgate.core.gate import class_stats_of, verify_table
from privgate.core.hierarchy import taxonomy_hierarchy
from privgate.core.policy import _validate
from privgate.core.privacy import (
    DistinctLDiversity,
    HighestRisk,
    KAnonymity,
    KMap,
    Population,
    persons_per_class,
)

HIERARCHIES = {
    "q1": taxonomy_hierarchy("q1", {"ab": ["a", "b"], "cd": ["c", "d"]}),
    "q2": taxonomy_hierarchy("q2", {"lo": ["1", "2"], "hi": ["3"]}),
}
#: Each quasi-identifier value's label at each level (from the hierarchies, asked once).
LABELS = {
    q: {v: h.generalize([v])[0] for v in (["a", "b", "c", "d"] if q == "q1" else ["1", "2", "3"])}
    for q, h in HIERARCHIES.items()
}


def test_persons_per_class_counts_each_person_once() -> None:
    classes = np.array([0, 0, 0, 1, 1, 1])
    persons = np.array([7, 7, 8, 7, 9, 9])
    assert persons_per_class(classes, persons, 3).tolist() == [2, 2, 0]


def test_gate_counts_people_in_a_class_of_many_admissions() -> None:
    """The issue's case: 17 admissions of 3 patients pass k = 10 over rows, not over people."""
    release = pd.DataFrame({"age": ["40-49"] * 17, "diagnosis": ["x"] * 17})
    persons = ["p1"] * 15 + ["p2", "p3"]
    over_rows = verify_table(release, ["age"], [KAnonymity(k=10)])
    assert over_rows.passed
    over_people = verify_table(
        release, ["age"], [KAnonymity(k=10)], persons=persons, input_persons=3
    )
    assert not over_people.passed
    assert over_people.measurements["min_class_size"] == 3
    assert over_people.measurements["persons"] == 3
    assert "10-anonymity not met: the release reaches 3" in over_people.reasons


def test_gate_counts_suppression_in_persons_and_refuses_what_it_cannot_count() -> None:
    release = pd.DataFrame({"q": ["a"] * 4, "s": ["x", "y", "x", "y"]})
    persons = ["p1", "p1", "p2", "p3"]
    decision = verify_table(
        release,
        ["q"],
        [KAnonymity(k=3)],
        persons=persons,
        input_persons=4,
        suppression_limit=0.25,
    )
    assert decision.passed, decision.reasons
    assert decision.measurements["suppressed"] == 1
    assert decision.measurements["suppressed_unit"] == "persons"
    assert "persons suppressed" in decision.summary
    strict = verify_table(release, ["q"], [KAnonymity(k=3)], persons=persons, input_persons=4)
    assert "1 persons suppressed, more than the limit of 0" in strict.reasons[0]
    tree = {"q": taxonomy_hierarchy("q", {"*": ["a"]})}
    population = Population.from_columns({"q": ["a"] * 6}, tree, "pop")
    k_map = KMap(k=2, population=population)
    blocked = verify_table(release, ["q"], [KAnonymity(k=2), k_map], persons=persons)
    assert not blocked.passed
    assert any("cannot be verified per person" in r for r in blocked.reasons)
    unkeyed = verify_table(release, ["q"], [KAnonymity(k=2)], persons=["p1", None, "p2", "p3"])
    assert not unkeyed.passed and "no person key" in unkeyed.reasons[-1]


# ---------------------------------------------------------------------------------------------
# The fixed point is the largest releasable set of people (brute force over person subsets)
# ---------------------------------------------------------------------------------------------


def _releasable(frame: pd.DataFrame, node, people: set, models) -> bool:
    """Every class of the records of ``people`` at ``node`` satisfies the models."""
    rows = frame[frame["person"].isin(people)]
    if rows.empty:
        return True
    generalized = {
        q: [LABELS[q][v][level] for v in rows[q]]
        for q, level in zip(HIERARCHIES, node, strict=True)
    }
    table = pd.DataFrame({**generalized, "s": rows["s"].to_numpy()})
    stats = class_stats_of(table, list(HIERARCHIES), ["s"], rows["person"].to_numpy())
    return all(model.satisfied_by(stats).all() for model in models)


def _largest_releasable(frame: pd.DataFrame, node, models, at_least: int = 0) -> set:
    """The largest set of people whose records can all be released (the first in the
    subsets' order when several are as large); the empty set when no set of ``at_least``
    people or more is releasable (the sizes below cannot be kept within a suppression limit,
    so the brute force need not try them)."""
    everyone = sorted(set(frame["person"]))
    for size in range(len(everyone), at_least - 1, -1):
        for people in itertools.combinations(everyone, size):
            if _releasable(frame, node, set(people), models):
                return set(people)
    return set()


tables = st.lists(
    st.tuples(
        st.integers(0, 5),  # person
        st.sampled_from("abcd"),
        st.sampled_from("123"),
        st.sampled_from("xyz"),
    ),
    min_size=2,
    max_size=14,
)
model_sets = st.sampled_from(
    [
        [KAnonymity(k=2)],
        [KAnonymity(k=3)],
        [KAnonymity(k=2), DistinctLDiversity(column="s", l=2)],
        [KAnonymity(k=2), HighestRisk(limit=0.34)],
    ]
)


@pytest.mark.slow  # brute force over every subset of persons: 10-12 s
@settings(max_examples=40, deadline=None)
@given(rows=tables, models=model_sets)
def test_checker_suppresses_exactly_the_people_outside_the_largest_releasable_set(
    rows, models
) -> None:
    frame = pd.DataFrame(rows, columns=["person", "q1", "q2", "s"])
    frame["person"] = frame["person"].map(lambda p: f"p{p}")
    encoded = encode_table(frame, HIERARCHIES, ["s"])
    codes, _ = pd.factorize(frame["person"])
    checker = PersonNodeChecker(encoded.frequency_set(), codes, models, suppression_limit=1.0)
    for node in [(0, 0), (1, 0), (0, 1), (1, 1), (2, 2)]:
        checker.evaluate(node)
        kept = ~checker.suppressed_rows(node)
        expected = _largest_releasable(frame, node, models)
        assert set(frame["person"][kept]) == expected, node
        # Whole persons: a kept person keeps every record.
        assert kept.sum() == frame["person"].isin(expected).sum()


# ---------------------------------------------------------------------------------------------
# The policy: a person key is a never-published identifier, with models that hold per person
# ---------------------------------------------------------------------------------------------


def _person_policy(**privacy) -> dict:
    return {
        "dataset": "hospital",
        "input": {"path": "x.csv"},
        "columns": {
            "subject_id": {"role": "identifier"},
            "gender": {
                "role": "quasi_identifier",
                "hierarchy": {"kind": "taxonomy", "tree": {"*": ["F", "M"]}},
            },
            "diagnosis": {"role": "sensitive"},
            "ward": {"role": "insensitive"},
        },
        "privacy": {"k": 2, "person_key": "subject_id", **privacy},
    }


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"privacy": {"k": 2, "person_key": "nobody"}}, "unknown column 'nobody'"),
        ({"privacy": {"k": 2, "person_key": "ward"}}, "must have role 'identifier'"),
        ({"algorithm": {"name": "mondrian"}}, "algorithm 'mondrian' counts records"),
        (
            {
                "privacy": {
                    "k": 2,
                    "person_key": "subject_id",
                    "k_map": {"k": 3},
                    "population": {"path": "population.csv"},
                }
            },
            "k_map with a population table cannot be guaranteed per person",
        ),
    ],
)
def test_person_key_policy_refusals(change: dict, fragment: str) -> None:
    data = {**_person_policy(), **change}
    with pytest.raises(PolicyError, match=fragment):
        _validate(data, "test")


def test_person_key_policy_accepted_with_person_models() -> None:
    data = _person_policy(
        l_diversity=[{"column": "diagnosis", "variant": "distinct", "l": 2}], risk={"highest": 0.5}
    )
    policy = _validate(data, "test")
    assert policy.privacy.person_key == "subject_id"
    counted = _person_policy(  # every model with a per-person definition (docs/PERSONS.md)
        l_diversity=[
            {"column": "diagnosis", "variant": "entropy", "l": 2},
            {"column": "diagnosis", "variant": "entropy", "l": 2, "estimator": "grassberger"},
            {"column": "diagnosis", "variant": "recursive", "l": 2, "c": 3},
        ],
        t_closeness=[{"column": "diagnosis", "t": 0.4}],
        beta_likeness=[{"column": "diagnosis", "beta": 2.0}],
        delta_disclosure=[{"column": "diagnosis", "delta": 2.0}],
        k_map={"k": 3, "population_size": 1000},
        risk={
            "highest": 0.5,
            "average": 0.3,
            "share_above": 0.2,
            "threshold": 0.4,
            "suppress": True,
        },
        suppression_limit=0.1,
    )
    policy = _validate(counted, "test")
    assert policy.privacy.person_key == "subject_id"
    assert "subject_id" not in policy.released_columns


# ---------------------------------------------------------------------------------------------
# The person-keyed optimal search against a brute force over the lattice, and the gate
# ---------------------------------------------------------------------------------------------


def _precision(frame: pd.DataFrame, node, kept_people: set) -> float:
    """ARX's precision loss, from its definition: suppressed records lose everything."""
    heights = [HIERARCHIES[q].height for q in HIERARCHIES]
    per_row = sum(level / h for level, h in zip(node, heights, strict=True))
    kept = frame["person"].isin(kept_people).to_numpy()
    q = len(heights)
    return (kept.sum() * per_row + (~kept).sum() * q) / (len(frame) * q)


@pytest.mark.slow  # brute force over every subset of persons: 10-12 s
@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(rows=tables, models=model_sets, limit=st.sampled_from([0.0, 0.2, 0.5]))
def test_person_search_finds_the_brute_force_optimum_and_the_gate_agrees(rows, models, limit):
    frame = pd.DataFrame(rows, columns=["person", "q1", "q2", "s"])
    frame["person"] = frame["person"].map(lambda p: f"p{p}")
    n_persons = frame["person"].nunique()
    allowed = int(limit * n_persons + 1e-9)
    feasible = {}
    for node in itertools.product(range(3), range(3)):
        kept = _largest_releasable(frame, node, models, at_least=max(1, n_persons - allowed))
        if kept and n_persons - len(kept) <= allowed:
            feasible[node] = (_precision(frame, node, kept), kept)
    encoded = encode_table(frame, HIERARCHIES, ["s"])
    codes, _ = pd.factorize(frame["person"])
    search = OptimalLattice(models, limit, metric="precision")
    if not feasible:
        with pytest.raises(AnonymizationError, match="persons"):
            search.search(encoded.frequency_set(), persons=codes)
        return
    result = search.search(encoded.frequency_set(), persons=codes)
    node = tuple(result.levels.values())
    best = min(loss for loss, _ in feasible.values())
    assert node in feasible and feasible[node][0] == pytest.approx(best)
    assert set(frame["person"][~result.suppressed]) == feasible[node][1]
    release = apply_generalization(frame, encoded, result, ["q1", "q2", "s"])
    decision = verify_table(
        release,
        list(HIERARCHIES),
        models,
        persons=frame["person"][~result.suppressed].to_numpy(),
        input_persons=n_persons,
        suppression_limit=limit,
    )
    assert decision.passed, decision.reasons
