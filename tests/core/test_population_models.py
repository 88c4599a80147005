"""k-map and δ-presence: the search, the gate and an independent brute force agree.

The brute force generalizes every record of the input and of the population value by value
through the hierarchies (no encoding, no codes) and counts matches with a ``Counter``. On random
tables (hypothesis) every lattice node's verdict of the search's checker must equal it, and
the gate must reach the brute force's verdict on the release written at that node. On ARX's
Adult (research subset of 3,016 records in the 30,162-record table), the optimal search must
find ARX's expected node for ARX's k-map and δ-presence test cases without suppression.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privgate.core.anonymize import NodeChecker, OptimalLattice
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError
from privgate.core.gate import verify_table
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.privacy import (
    EstimatedKMap,
    KAnonymity,
    KMap,
    Population,
    PresenceLowerBound,
    PresenceUpperBound,
    derived_k,
)
from privgate.core.textcsv import read_text_columns

QIS = ("a", "b")


def _hierarchy(column: str, n_values: int) -> ARXHierarchy:
    """Values ``{column}0..``: pairs, then fours, then ``*`` (labels distinct across levels)."""
    rows = [
        [f"{column}{i}", f"{column}p{i // 2}", f"{column}q{i // 4}", "*"] for i in range(n_values)
    ]
    return ARXHierarchy(column, rows)


HIERARCHIES = {"a": _hierarchy("a", 6), "b": _hierarchy("b", 5)}


def _labels(value: str, column: str, level: int) -> str:
    return str(HIERARCHIES[column].generalize([value])[0, level])


def _brute_classes(rows: list[tuple[str, str]], node: tuple[int, int]) -> Counter:
    return Counter(
        tuple(_labels(v, q, lvl) for v, q, lvl in zip(row, QIS, node, strict=True)) for row in rows
    )


def _brute_verdict(sample, population, node, kind, k, dmin, dmax, allowance):
    """Failing classes at ``node``, and whether the node satisfies the model within the
    allowance (δ-presence's lower bound also needs every population record in a kept class)."""
    classes = _brute_classes(sample, node)
    people = _brute_classes(population, node)
    failing = set()
    for key, size in classes.items():
        count = people.get(key, 0)
        if kind == "kmap":
            ok = count >= k
        else:
            share = size / count if count else math.inf
            ok = share <= dmax + 1e-12 and share >= dmin - 1e-12
        if not ok:
            failing.add(key)
    suppressed = sum(classes[key] for key in failing)
    satisfied = suppressed <= allowance
    if kind == "presence" and dmin > 0:
        kept = set(classes) - failing
        satisfied &= all(key in kept for key in people)
    return failing, satisfied


def _models(kind, population, k, dmin, dmax):
    if kind == "kmap":
        return [KMap(k=k, population=population)]
    models = [PresenceUpperBound(delta_max=dmax, population=population)]
    if dmin > 0:
        models.append(PresenceLowerBound(delta_min=dmin, population=population))
    return models


@st.composite
def _tables(draw):
    population = draw(
        st.lists(
            st.tuples(
                st.integers(0, 5).map(lambda i: f"a{i}"), st.integers(0, 4).map(lambda i: f"b{i}")
            ),
            min_size=4,
            max_size=60,
        )
    )
    picks = draw(st.lists(st.booleans(), min_size=len(population), max_size=len(population)))
    sample = [row for row, keep in zip(population, picks, strict=True) if keep] or population[:1]
    extra = draw(st.lists(st.sampled_from(population), max_size=2))  # maybe not a subset
    return population, sample + extra, len(extra)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tables=_tables(),
    kind=st.sampled_from(["kmap", "presence"]),
    k=st.integers(1, 6),
    bounds=st.sampled_from([(0.0, 0.5), (0.0, 1.0), (0.1, 0.6), (0.3, 0.9)]),
    limit=st.sampled_from([0.0, 0.2]),
)
def test_search_and_gate_match_the_brute_force(tables, kind, k, bounds, limit):
    population_rows, sample, extra = tables
    dmin, dmax = bounds
    population = Population.from_columns(
        {q: [r[j] for r in population_rows] for j, q in enumerate(QIS)}, HIERARCHIES, "pop"
    )
    models = _models(kind, population, k, dmin, dmax)
    columns = {q: np.array([r[j] for r in sample], dtype=object) for j, q in enumerate(QIS)}
    freq = encode_table(columns, HIERARCHIES).frequency_set()
    allowance = math.floor(limit * len(sample) + 1e-9)
    if kind == "presence" and extra:
        subset = Counter(sample) <= Counter(population_rows)
        if not subset:
            with pytest.raises(AnonymizationError, match="subset of the population"):
                NodeChecker(freq, models, limit)
            return
    checker = NodeChecker(freq, models, limit)
    for node in itertools.product(range(4), range(4)):
        failing, satisfied = _brute_verdict(
            sample, population_rows, node, kind, k, dmin, dmax, allowance
        )
        assert checker.evaluate(node).satisfied == satisfied, node
        # The gate on the release written at this node (failing classes suppressed).
        kept = [
            r
            for r in sample
            if tuple(_labels(v, q, lvl) for v, q, lvl in zip(r, QIS, node, strict=True))
            not in failing
        ]
        release = {
            q: np.array([_labels(r[j], q, node[j]) for r in kept], dtype=object)
            for j, q in enumerate(QIS)
        }
        decision = verify_table(
            release, list(QIS), models, input_rows=len(sample), suppression_limit=limit
        )
        assert decision.passed == satisfied, (node, decision.reasons)


def test_the_gate_refuses_a_label_two_levels_share():
    """'x' is value x at level 0 and the group {x, y} at level 1: the release does not say
    which, so the gate cannot count the population and blocks."""
    h = {"a": ARXHierarchy("a", [["x", "x", "*"], ["y", "x", "*"]])}
    population = Population.from_columns({"a": ["x", "y", "y"]}, h, "pop")
    release = {"a": np.array(["x", "x"], dtype=object)}
    decision = verify_table(release, ["a"], [KMap(k=2, population=population)])
    assert not decision.passed
    assert any("names different population values" in r for r in decision.reasons)


def test_estimated_k_map_follows_arx_derivation():
    """ARX's KMap.calculateKZeroPoisson / calculateKPoisson at a 10 % sample: k' <= k, and a
    larger sampling fraction never asks for smaller classes."""
    assert derived_k(5, 1.0, 0.01, "poisson")[0] == 5  # a census: k' is k
    small = [derived_k(100, f, 0.01, "zero_truncated_poisson")[0] for f in (0.001, 0.01, 0.1)]
    assert small == sorted(small) and small[-1] <= 100
    model = EstimatedKMap(k=100, population_size=300_000, significance=0.01)
    need = model.required_size(30_000)
    assert need == derived_k(100, 0.1, 0.01, "zero_truncated_poisson")[0]


@pytest.fixture(scope="module")
def arx_subset(shared_data):
    """ARX's Adult as the population, ARX's 10 % research subset as the input; QIs as in
    ARX's tests with occupation as the sensitive attribute (every other hierarchy column)."""
    qis = [
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "salary-class",
    ]
    hierarchies = {
        q: ARXHierarchy.from_csv(q, shared_data(f"arx/adult_hierarchy_{q}.csv"), delimiter=";")
        for q in qis
    }
    population = Population.from_columns(
        read_text_columns(shared_data("arx/adult.csv"), delimiter=";"), hierarchies, "adult.csv"
    )
    subset = read_text_columns(shared_data("arx/adult_subset.csv"), delimiter=";")
    return qis, hierarchies, population, subset


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("kmap5", [1, 0, 1, 2, 3, 2, 2, 1]),  # TestAnonymizationKMap: k=5, 0 %, AECS 45.0149
        ("presence_0_02", [1, 4, 1, 1, 0, 2, 2, 0]),  # TestAnonymizationDPresence #0: AECS 52.0
        ("presence_005_015", [0, 4, 0, 1, 3, 2, 2, 1]),  # #6: AECS 150.8
    ],
)
def test_arx_expected_nodes_on_adult(arx_subset, case, expected):
    qis, hierarchies, population, subset = arx_subset
    models = {
        "kmap5": [KMap(k=5, population=population)],
        "presence_0_02": [PresenceUpperBound(delta_max=0.2, population=population)],
        "presence_005_015": [
            PresenceUpperBound(delta_max=0.15, population=population),
            PresenceLowerBound(delta_min=0.05, population=population),
        ],
    }[case]
    freq = encode_table(subset, hierarchies).frequency_set()
    found = OptimalLattice(models, 0.0, metric="average_class_size").search(freq)
    assert [found.levels[q] for q in qis] == expected
    # The gate, on the release written at that node, reaches the same verdict.
    release = {
        q: hierarchies[q].generalize(list(subset[q]))[:, found.levels[q]].astype(object)
        for q in qis
    }
    decision = verify_table(release, qis, models, input_rows=len(subset[qis[0]]))
    assert decision.passed, decision.reasons
    assert KAnonymity(k=1).holds(decision.measurements["min_class_size"])


def _subset_policy(tmp_path, shared_data, privacy: str) -> Path:
    """A policy on ARX's Adult research subset (QIs as in ARX's k-map / δ-presence tests)."""
    data = shared_data("arx/adult.csv").parent
    columns = "\n".join(
        f"  {q}:\n    role: quasi_identifier\n"
        f"    hierarchy: {{kind: arx, path: {data}/adult_hierarchy_{q}.csv}}"
        for q in ARX_QIS
    )
    text = f"""
dataset: adult-subset
input: {{path: {data}/adult_subset.csv, format: csv, delimiter: ";"}}
columns:
{columns}
  occupation: {{role: insensitive}}
privacy:
{privacy}
algorithm: {{name: optimal, metric: average_class_size}}
output: {{directory: {tmp_path}/out}}
"""
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


ARX_QIS = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
)


def test_policy_to_written_release_with_delta_presence(tmp_path, shared_data):
    """The policy's δ-presence reaches ARX's node through the lean CLI path, whose gate
    re-reads the written CSV; a stricter bound on the same file blocks it."""
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.gate import verify_release
    from privgate.core.policy import load_policy

    population = shared_data("arx/adult.csv")
    policy = load_policy(
        _subset_policy(
            tmp_path,
            shared_data,
            f'  k: 1\n  population: {{path: {population}, delimiter: ";"}}\n'
            "  delta_presence: {min: 0.05, max: 0.15}",
        )
    )
    output = tmp_path / "release.csv"
    decision, summary = anonymize_csv(policy, output)
    assert decision.passed, decision.reasons
    assert [summary["levels"][q] for q in ARX_QIS] == [0, 4, 0, 1, 3, 2, 2, 1]
    achieved = decision.measurements["achieved"]
    assert max(v for name, v in achieved.items() if "<=" in name) <= 0.15
    strict = PresenceUpperBound(
        delta_max=0.1,
        population=Population.from_columns(
            read_text_columns(population, delimiter=";"),
            {
                q: ARXHierarchy.from_csv(q, shared_data(f"arx/adult_hierarchy_{q}.csv"))
                for q in ARX_QIS
            },
            "adult.csv",
        ),
    )
    assert not verify_release(output, list(ARX_QIS), [strict]).passed


@pytest.mark.parametrize(
    ("privacy", "message"),
    [
        ("  k: 1\n  delta_presence: {max: 0.2}", "declare privacy.population"),
        ("  k: 1\n  k_map: {k: 5}", "k_map needs privacy.population"),
        ("  k: 1\n  delta_presence: {min: 0.3, max: 0.2}", "must be below max"),
    ],
)
def test_policy_refuses_population_models_without_their_population(
    tmp_path, shared_data, privacy, message
):
    from privgate.core.exceptions import PolicyError
    from privgate.core.policy import load_policy

    with pytest.raises(PolicyError, match=message):
        load_policy(_subset_policy(tmp_path, shared_data, privacy))


def test_estimated_k_map_from_the_policy(tmp_path, shared_data):
    """k-map estimated from a population size (ARX's KMap with the zero-truncated Poisson
    estimate): the release is k'-anonymous for the derived k'."""
    from privgate.core.anonymize import SearchSetup
    from privgate.core.policy import load_policy

    policy = load_policy(
        _subset_policy(
            tmp_path,
            shared_data,
            "  k: 1\n  k_map: {k: 100, population_size: 300000, significance: 0.01}",
        )
    )
    setup = SearchSetup.from_policy(policy)
    (model,) = [m for m in setup.models if isinstance(m, EstimatedKMap)]
    need = model.required_size(3016)
    assert 1 < need < 100
    subset = read_text_columns(shared_data("arx/adult_subset.csv"), delimiter=";")
    freq = encode_table(subset, setup.hierarchies).frequency_set()
    found = OptimalLattice(setup.models, 0.0).search(freq)
    stats, _ = freq.class_stats([found.levels[q] for q in setup.quasi_identifiers])
    assert stats.sizes.min() >= need


def test_policy_refuses_an_algorithm_that_cannot_count_a_population(tmp_path, shared_data):
    from privgate.core.exceptions import PolicyError
    from privgate.core.policy import load_policy

    path = _subset_policy(
        tmp_path,
        shared_data,
        f"  k: 1\n  population: {{path: {shared_data('arx/adult.csv')}, delimiter: ';'}}\n"
        "  k_map: {k: 5}",
    )
    path.write_text(
        path.read_text().replace("{name: optimal, metric: average_class_size}", "{name: mondrian}")
    )
    with pytest.raises(PolicyError, match="cannot check k-map"):
        load_policy(path)
