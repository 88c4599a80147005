"""Property-based tests: the privacy models, as the gate measures them, agree with pycanon.

pycanon (CSIC, Apache-2.0) is an independent implementation of the same definitions and is used
here as a test-only oracle on random small tables. Its recursive (c,l)-diversity sorts class
counts ascending and so computes something else; that model is checked against a brute-force
definition written below instead.

The second half checks that the algorithms' path (encoded frequency set, lookup arrays) and the
gate's path (plain group-by over the written labels) see the same equivalence classes, and that
whatever Datafly releases passes the gate.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

from privgate.core.anonymize import (
    Datafly,
    Generalization,
    MultiAttributeDatafly,
    apply_generalization,
)
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError
from privgate.core.gate import class_stats_of, verify_release, verify_table
from privgate.core.hierarchy import Hierarchy, IntervalHierarchy, taxonomy_hierarchy
from privgate.core.privacy import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)

#: 100 examples per property (200 before): the file's CPU time 25.6 -> 13.7 s. Each property
#: still sees every verdict often: k-anonymity passes in 58 % of the tables and fails in 30 %,
#: distinct l-diversity 41 / 49 %, and Datafly meets an unreachable table in 8 % and each of
#: generalized / suppressed / both / neither in 5-45 % (``--hypothesis-show-statistics``).
PROPERTY = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,  # the same examples on every run: a failure is always reproducible
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

SA = "s"
STRING_SENSITIVE = ["flu", "cold", "hiv", "cancer", "gastritis"]
#: Numbers whose text order ("-4" < "105" < "12" < "7" < "88") differs from their numeric order.
INT_SENSITIVE = [7, 12, -4, 105, 88]


@dataclass
class Table:
    df: pd.DataFrame
    qi: list[str]
    hierarchies: dict[str, Hierarchy]

    @property
    def numeric_sensitive(self) -> bool:
        return pd.api.types.is_integer_dtype(self.df[SA])

    @property
    def columns(self) -> list[str]:
        return list(self.df.columns)


def _codes(draw, n: int, size: int) -> list[int]:
    return draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n))


@st.composite
def _qi_column(draw, name: str, n: int) -> tuple[list, Hierarchy]:
    """Values of one quasi-identifier (strings or integers) and a random hierarchy over them."""
    size = draw(st.integers(1, 4))
    codes = _codes(draw, n, size)
    if draw(st.booleans()):  # integer-valued, generalized by bands
        step = draw(st.integers(1, 5))
        base = draw(st.integers(0, 20))
        domain = [base + step * c for c in range(size)]
        bands = draw(st.sampled_from([[2], [3], [2, 4], [5, 10], [2, 4, 8]]))
        if draw(st.booleans()):
            return [domain[c] for c in codes], IntervalHierarchy(name, bands)
    else:
        domain = [f"{name}v{c}" for c in range(size)]
    # a taxonomy of depth 1 or 2 with a random grouping of the domain
    group = draw(st.lists(st.integers(0, 2), min_size=size, max_size=size))
    tree: dict = {}
    for value, g in zip(domain, group, strict=True):
        tree.setdefault(f"{name}g{g}", []).append(str(value))
    if draw(st.booleans()):
        tops = draw(st.lists(st.integers(0, 1), min_size=3, max_size=3))
        deep: dict = {}
        for label, members in tree.items():
            deep.setdefault(f"{name}t{tops[int(label[-1])]}", {})[label] = members
        tree = deep
    return [domain[c] for c in codes], taxonomy_hierarchy(name, tree)


@st.composite
def tables(draw, numeric_sensitive: bool | None = None, min_sensitive_values: int = 1) -> Table:
    """2-60 rows, 1-3 quasi-identifiers with small alphabets, one sensitive column."""
    n = draw(st.integers(2, 60))
    n_qi = draw(st.integers(1, 3))
    data: dict[str, list] = {}
    hierarchies: dict[str, Hierarchy] = {}
    for j in range(n_qi):
        name = f"q{j}"
        data[name], hierarchies[name] = draw(_qi_column(name, n))
    if numeric_sensitive is None:
        numeric_sensitive = draw(st.booleans())
    alphabet = INT_SENSITIVE if numeric_sensitive else STRING_SENSITIVE
    size = draw(st.integers(max(1, min_sensitive_values), len(alphabet)))
    codes = _codes(draw, n, size)
    if min_sensitive_values > 1 and len(set(codes)) < min_sensitive_values:
        codes = list(range(min_sensitive_values)) + codes[min_sensitive_values:]
    data[SA] = [alphabet[c] for c in codes]
    df = pd.DataFrame(data)
    if numeric_sensitive:
        df[SA] = df[SA].astype("int64")
    return Table(df, list(hierarchies), hierarchies)


def _achieved(decision, model) -> float:
    return decision.measurements["achieved"][str(model)]


# --------------------------------------------------------------------------------------------
# The gate against pycanon


@PROPERTY
@given(table=tables(), k=st.integers(1, 12))
def test_k_anonymity_agrees_with_pycanon(table: Table, k: int) -> None:
    expected = anonymity.k_anonymity(table.df, table.qi)
    model = KAnonymity(k=k)
    decision = verify_table(table.df, table.qi, [model])
    event(f"k-anonymity passed: {decision.passed}")
    assert decision.passed == (expected >= k)
    assert _achieved(decision, model) == expected
    assert decision.measurements["min_class_size"] == expected
    if not decision.passed:
        assert any(f"{k}-anonymity" in r for r in decision.reasons)


@PROPERTY
@given(table=tables(), l_=st.integers(1, 6))
def test_distinct_l_diversity_agrees_with_pycanon(table: Table, l_: int) -> None:
    expected = anonymity.l_diversity(table.df, table.qi, [SA])
    model = DistinctLDiversity(column=SA, l=l_)
    decision = verify_table(table.df, table.qi, [model])
    event(f"distinct l-diversity passed: {decision.passed}")
    assert decision.passed == (expected >= l_)
    assert _achieved(decision, model) == expected


@PROPERTY
@given(table=tables(), l_=st.integers(1, 5))
def test_entropy_l_diversity_agrees_with_pycanon(table: Table, l_: int) -> None:
    expected = anonymity.entropy_l_diversity(table.df, table.qi, [SA])  # int(exp(min H))
    model = EntropyLDiversity(column=SA, l=l_)
    decision = verify_table(table.df, table.qi, [model])
    achieved = _achieved(decision, model)
    # pycanon truncates a float that may land just below an exact integer (exp(log 2) < 2).
    assert math.floor(achieved - 1e-9) <= expected <= math.floor(achieved + 1e-9)
    if abs(achieved - l_) > 1e-6:  # away from the boundary the verdicts must agree exactly
        assert decision.passed == (expected >= l_)
    else:
        assert decision.passed  # entropy exactly log(l) satisfies entropy l-diversity


@PROPERTY
@given(table=tables(), t=st.sampled_from([0.05, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.75, 1.0]))
def test_t_closeness_equal_distance_agrees_with_pycanon(table: Table, t: float) -> None:
    # pycanon uses the equal ground distance for text columns; equal distance ignores order.
    as_text = table.df.assign(**{SA: table.df[SA].astype(str)})
    expected = anonymity.t_closeness(as_text, table.qi, [SA])
    model = TCloseness(column=SA, t=t, distance="equal")
    decision = verify_table(table.df, table.qi, [model])
    assert _achieved(decision, model) == pytest.approx(expected, abs=1e-12)
    # EMDs of these tables are rationals with small denominators: 1e-9 apart means equal.
    if abs(expected - t) > 1e-9:
        assert decision.passed == (expected <= t)
    else:
        assert decision.passed


@PROPERTY
@given(
    table=tables(numeric_sensitive=True, min_sensitive_values=2),
    t=st.sampled_from([0.05, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.75, 1.0]),
)
def test_t_closeness_ordered_distance_agrees_with_pycanon(table: Table, t: float) -> None:
    # pycanon uses the ordered EMD for numeric columns (values in numeric order).
    expected = anonymity.t_closeness(table.df, table.qi, [SA])
    model = TCloseness(column=SA, t=t, distance="ordered")
    on_numbers = model.achieved(class_stats_of(table.df, table.qi, [SA]))
    assert on_numbers == pytest.approx(expected, abs=1e-12)
    # The gate reads the release back as text: the values must still be ordered as numbers.
    as_text = table.df.astype("string")
    on_text = model.achieved(class_stats_of(as_text, table.qi, [SA]))
    assert on_text == pytest.approx(expected, abs=1e-12)
    decision = verify_table(as_text, table.qi, [model])
    assert _achieved(decision, model) == pytest.approx(expected, abs=1e-12)
    if abs(expected - t) > 1e-9:
        assert decision.passed == (expected <= t)
    else:
        assert decision.passed


def _recursive_ratio_brute_force(df: pd.DataFrame, qi: list[str], c: float, l_: int) -> bool:
    """Recursive (c,l)-diversity from its definition: r1 < c * (r_l + ... + r_m) per class."""
    for _, group in df.groupby(qi):
        r = sorted(group[SA].value_counts().tolist(), reverse=True)
        if not r[0] < c * sum(r[l_ - 1 :]):
            return False
    return True


@PROPERTY
@given(
    table=tables(),
    c=st.sampled_from([0.5, 1, 1.5, 2, 3, 4]),
    l_=st.integers(2, 4),
)
def test_recursive_cl_diversity_matches_its_definition(table: Table, c: float, l_: int) -> None:
    model = RecursiveCLDiversity(column=SA, c=c, l=l_)
    decision = verify_table(table.df, table.qi, [model])
    assert decision.passed == _recursive_ratio_brute_force(table.df, table.qi, c, l_)
    worst = 0.0
    for _, group in table.df.groupby(table.qi):
        r = sorted(group[SA].value_counts().tolist(), reverse=True)
        tail = sum(r[l_ - 1 :])
        worst = max(worst, r[0] / tail if tail else math.inf)
    assert _achieved(decision, model) == pytest.approx(worst)


@PROPERTY
@given(table=tables(), k=st.integers(1, 6))
def test_release_read_back_from_csv_measures_the_same(table: Table, k: int) -> None:
    models = [
        KAnonymity(k=k),
        DistinctLDiversity(column=SA, l=2),
        EntropyLDiversity(column=SA, l=1.5),
        RecursiveCLDiversity(column=SA, c=2, l=2),
        TCloseness(column=SA, t=0.3, distance="equal"),
    ]
    if table.numeric_sensitive:
        models.append(TCloseness(column=SA, t=0.3, distance="ordered"))
    in_memory = verify_table(table.df, table.qi, models)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "release.csv"
        table.df.to_csv(path, index=False)
        from_disk = verify_release(path, table.qi, models)
    assert from_disk.passed == in_memory.passed
    for model in models:
        assert _achieved(from_disk, model) == pytest.approx(_achieved(in_memory, model))


# --------------------------------------------------------------------------------------------
# The algorithms' path against the gate's path


def _class_signature(sizes: np.ndarray, hist: np.ndarray, values: np.ndarray) -> list[tuple]:
    """Classes as a sorted list of (size, {value as text: count}): independent of the order of
    classes and of value columns (the gate reads values as text, the search keeps their type).
    """
    labels = [str(v) for v in values]
    return sorted(
        (int(s), tuple(sorted((lab, int(x)) for lab, x in zip(labels, row, strict=True) if x)))
        for s, row in zip(sizes, hist, strict=True)
    )


@PROPERTY
@given(table=tables(), data=st.data())
def test_frequency_set_classes_match_gate_classes(table: Table, data) -> None:
    encoded = encode_table(table.df, table.hierarchies, [SA])
    heights = encoded.heights
    levels = [data.draw(st.integers(0, h), label=f"level {j}") for j, h in enumerate(heights)]
    algo_stats, _ = encoded.frequency_set().class_stats(levels)

    result = Generalization(
        algorithm="fixed",
        levels=dict(zip(table.qi, levels, strict=True)),
        suppressed=np.zeros(len(table.df), dtype=bool),
    )
    release = apply_generalization(table.df, encoded, result, table.columns)
    gate_stats = class_stats_of(release, table.qi, [SA])

    assert sorted(algo_stats.sizes.tolist()) == sorted(gate_stats.sizes.tolist())
    # Same sensitive values on both paths (the gate sees them as text).
    assert sorted(str(v) for v in algo_stats.ordered_values[SA]) == sorted(
        str(v) for v in gate_stats.ordered_values[SA]
    )
    algo = _class_signature(
        algo_stats.sizes, algo_stats.histograms[SA], algo_stats.ordered_values[SA]
    )
    gate = _class_signature(
        gate_stats.sizes, gate_stats.histograms[SA], gate_stats.ordered_values[SA]
    )
    assert algo == gate
    assert anonymity.k_anonymity(release, table.qi) == int(algo_stats.sizes.min())
    for model in (
        KAnonymity(k=2),
        DistinctLDiversity(column=SA, l=2),
        EntropyLDiversity(column=SA, l=2),
        RecursiveCLDiversity(column=SA, c=2, l=2),
        TCloseness(column=SA, t=0.5, distance="equal"),
        TCloseness(column=SA, t=0.5, distance="ordered"),
    ):
        assert model.achieved(algo_stats) == pytest.approx(model.achieved(gate_stats))


@PROPERTY
@given(
    table=tables(),
    k=st.integers(1, 8),
    l_=st.integers(1, 3),
    limit=st.sampled_from([0.0, 0.05, 0.1, 0.3]),
    multi=st.booleans(),
)
def test_datafly_release_passes_the_gate(
    table: Table, k: int, l_: int, limit: float, multi: bool
) -> None:
    models = [KAnonymity(k=k), DistinctLDiversity(column=SA, l=l_)]
    algorithm = (MultiAttributeDatafly if multi else Datafly)(models, limit)
    encoded = encode_table(table.df, table.hierarchies, [SA])
    n = len(table.df)
    # Fully generalized, the table is one class; it fails iff it is too small or too uniform,
    # and then all n records fail, more than any suppression limit below 1 allows.
    unreachable = n < k or table.df[SA].nunique() < l_
    event(f"unreachable: {unreachable}")
    if unreachable:
        with pytest.raises(AnonymizationError):
            algorithm.search(encoded.frequency_set())
        return
    result = algorithm.search(encoded.frequency_set())
    release = apply_generalization(table.df, encoded, result, table.columns).reset_index(drop=True)
    assert len(release) == n - result.n_suppressed > 0
    event(f"generalized: {bool(result.steps)}, suppressed: {result.n_suppressed > 0}")
    assert result.n_suppressed <= math.floor(limit * n + 1e-9)
    decision = verify_table(
        release, table.qi, models,
        input_rows=n, suppression_limit=limit, expected_columns=table.columns,
    )  # fmt: skip
    assert decision.passed, decision.reasons
    assert anonymity.k_anonymity(release, table.qi) >= k
    assert anonymity.l_diversity(release, table.qi, [SA]) >= l_
