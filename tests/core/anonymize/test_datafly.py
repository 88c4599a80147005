"""Datafly and Multi-Attribute Datafly on the real ARX Adult table and on hand-built examples.

Every release is checked by pycanon (an independent implementation of the privacy models) and by
the gate, never by the algorithm's own bookkeeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_QI
from pycanon import anonymity

from privgate.core.anonymize import (
    Datafly,
    MultiAttributeDatafly,
    apply_generalization,
    approximation_degree,
)
from privgate.core.encoding import EncodedTable, FrequencySet, encode_table
from privgate.core.exceptions import AnonymizationError
from privgate.core.gate import verify_table
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.privacy import DistinctLDiversity, KAnonymity

pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

SENSITIVE = "salary-class"
LIMIT = 0.02
ALGORITHMS = [Datafly, MultiAttributeDatafly]


@dataclass(frozen=True)
class Adult:
    df: pd.DataFrame
    encoded: EncodedTable
    freq: FrequencySet

    @property
    def n(self) -> int:
        return len(self.df)


@pytest.fixture(scope="module")
def adult(shared_data) -> Adult:
    df = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    hierarchies = {
        qi: ARXHierarchy.from_csv(qi, shared_data(f"arx/adult_hierarchy_{qi}.csv"))
        for qi in ADULT_QI
    }
    encoded = encode_table(df, hierarchies, [SENSITIVE])
    return Adult(df, encoded, encoded.frequency_set())


def _release(adult: Adult, algorithm) -> tuple[pd.DataFrame, object]:
    result = algorithm.search(adult.freq)
    release = apply_generalization(adult.df, adult.encoded, result, list(adult.df.columns))
    release = release.reset_index(drop=True)  # pycanon indexes rows by position
    return release, result


# --------------------------------------------------------------------------------------------
# The real Adult table


def test_adult_shape(adult: Adult) -> None:
    assert adult.n == 30162
    assert list(adult.df.columns) == [*ADULT_QI, SENSITIVE]
    assert adult.encoded.heights == [1, 4, 1, 2, 3, 2, 2, 2]


@pytest.mark.parametrize("algorithm_cls", ALGORITHMS, ids=lambda c: c.name)
@pytest.mark.parametrize("k", [2, 5, 10])
def test_adult_release_is_k_anonymous(adult: Adult, algorithm_cls, k: int) -> None:
    models = [KAnonymity(k=k)]
    release, result = _release(adult, algorithm_cls(models, LIMIT))

    assert anonymity.k_anonymity(release, ADULT_QI) >= k
    assert result.n_suppressed <= math.floor(LIMIT * adult.n)
    assert len(release) == adult.n - result.n_suppressed
    # the original table is far from k-anonymous: the search had to generalize
    assert result.steps and sum(result.levels.values()) == len(result.steps)
    assert all(0 <= result.levels[q] <= h
               for q, h in zip(ADULT_QI, adult.encoded.heights, strict=True))  # fmt: skip
    decision = verify_table(
        release, ADULT_QI, models,
        input_rows=adult.n, suppression_limit=LIMIT, expected_columns=[*ADULT_QI, SENSITIVE],
    )  # fmt: skip
    assert decision.passed, decision.reasons
    assert decision.measurements["achieved"][f"{k}-anonymity"] >= k


@pytest.mark.parametrize("algorithm_cls", ALGORITHMS, ids=lambda c: c.name)
def test_adult_release_is_distinct_2_diverse(adult: Adult, algorithm_cls) -> None:
    models = [DistinctLDiversity(column=SENSITIVE, l=2)]
    release, result = _release(adult, algorithm_cls(models, LIMIT))

    assert anonymity.l_diversity(release, ADULT_QI, [SENSITIVE]) >= 2
    assert result.n_suppressed <= math.floor(LIMIT * adult.n)
    decision = verify_table(release, ADULT_QI, models, input_rows=adult.n,
                            suppression_limit=LIMIT)  # fmt: skip
    assert decision.passed, decision.reasons


@pytest.mark.parametrize("algorithm_cls", ALGORITHMS, ids=lambda c: c.name)
def test_k_larger_than_the_table_raises(adult: Adult, algorithm_cls) -> None:
    algorithm = algorithm_cls([KAnonymity(k=adult.n + 1)], LIMIT)
    with pytest.raises(AnonymizationError, match="cannot be reached"):
        algorithm.search(adult.freq)


@pytest.mark.parametrize("algorithm_cls", ALGORITHMS, ids=lambda c: c.name)
def test_k_equal_to_the_table_generalizes_everything(adult: Adult, algorithm_cls) -> None:
    release, result = _release(adult, algorithm_cls([KAnonymity(k=adult.n)], LIMIT))
    assert list(result.levels.values()) == adult.encoded.heights
    assert result.n_suppressed == 0
    assert (release[ADULT_QI] == "*").all().all()


def test_algorithms_agree_until_the_first_tie(adult: Adult) -> None:
    _, plain = _release(adult, Datafly([KAnonymity(k=5)], LIMIT))
    _, multi = _release(adult, MultiAttributeDatafly([KAnonymity(k=5)], LIMIT))
    first_tie = next(i for i, s in enumerate(plain.steps) if s["tied_with"])
    assert [s["generalize"] for s in plain.steps[:first_tie]] == [
        s["generalize"] for s in multi.steps[:first_tie]
    ]


# --------------------------------------------------------------------------------------------
# Hand-built examples


def _flat(column: str, values: list[str]) -> ARXHierarchy:
    """One generalization level: every value -> '*'."""
    return ARXHierarchy(column, [[v, "*"] for v in values])


def _tie_table(order: list[str]) -> tuple[pd.DataFrame, FrequencySet]:
    """A and B both have 2 distinct values; A's frequencies (3, 3), B's (5, 1).

    Classes (A, B): (a1, b1) x3, (a2, b1) x2, (a2, b2) x1 -> one record fails k = 2.
    Generalizing B first gives (a1, *) x3 and (a2, *) x3, which is 2-anonymous; generalizing A
    first gives (*, b1) x5 and (*, b2) x1, which is not.
    """
    df = pd.DataFrame({
        "A": ["a1", "a1", "a1", "a2", "a2", "a2"],
        "B": ["b1", "b1", "b1", "b1", "b1", "b2"],
    })[order]  # fmt: skip
    hierarchies = {
        "A": _flat("A", ["a1", "a2"]),
        "B": _flat("B", ["b1", "b2"]),
    }
    return df, encode_table(df, {c: hierarchies[c] for c in order}).frequency_set()


def test_tie_table_approximation_degrees() -> None:
    _, freq = _tie_table(["A", "B"])
    codes = freq.generalized_codes([0, 0])
    assert approximation_degree(codes[:, 0], freq.counts) == 0.0  # std(3, 3)
    assert approximation_degree(codes[:, 1], freq.counts) == 2.0  # std(5, 1)


def test_datafly_breaks_a_tie_by_declaration_order() -> None:
    _, freq = _tie_table(["A", "B"])
    result = Datafly([KAnonymity(k=2)], 0.0).search(freq)
    first = result.steps[0]
    assert first["generalize"] == "A"
    assert first["distinct_values"] == 2
    assert first["tied_with"] == ["B"]
    # generalizing A does not help, so B has to follow: the whole table becomes one class
    assert [s["generalize"] for s in result.steps] == ["A", "B"]
    assert result.levels == {"A": 1, "B": 1}
    assert result.n_suppressed == 0


def test_multi_attribute_datafly_breaks_a_tie_by_approximation_degree() -> None:
    df, freq = _tie_table(["A", "B"])
    result = MultiAttributeDatafly([KAnonymity(k=2)], 0.0).search(freq)
    first = result.steps[0]
    assert first["generalize"] == "B"  # std 2 beats std 0
    assert first["tied_with"] == ["A"]
    assert [s["generalize"] for s in result.steps] == ["B"]
    assert result.levels == {"A": 0, "B": 1}
    assert result.n_suppressed == 0
    release = apply_generalization(df, freq.table, result, ["A", "B"])
    assert release["A"].tolist() == df["A"].tolist()
    assert anonymity.k_anonymity(release, ["A", "B"]) == 3


def test_multi_attribute_choice_does_not_depend_on_declaration_order() -> None:
    _, freq = _tie_table(["B", "A"])
    plain = Datafly([KAnonymity(k=2)], 0.0).search(freq)
    multi = MultiAttributeDatafly([KAnonymity(k=2)], 0.0).search(freq)
    # declared first, B is now also Datafly's (arbitrary) choice
    assert plain.steps[0]["generalize"] == "B"
    assert multi.steps[0]["generalize"] == "B"
    assert plain.levels == multi.levels == {"B": 1, "A": 0}


def test_no_tie_both_take_the_attribute_with_most_distinct_values() -> None:
    df = pd.DataFrame({"A": ["a1", "a1", "a2", "a2"], "B": ["b1", "b2", "b3", "b3"]})
    freq = encode_table(df, {"A": _flat("A", ["a1", "a2"]),
                             "B": _flat("B", ["b1", "b2", "b3"])}).frequency_set()  # fmt: skip
    for cls in ALGORITHMS:
        result = cls([KAnonymity(k=2)], 0.0).search(freq)
        assert result.steps[0]["generalize"] == "B"
        assert result.steps[0]["distinct_values"] == 3
        assert result.steps[0]["tied_with"] == []


def test_suppression_instead_of_generalization_within_the_limit() -> None:
    _, freq = _tie_table(["A", "B"])
    # one failing record of six is within a 20% limit: suppress it, generalize nothing
    result = Datafly([KAnonymity(k=2)], 0.2).search(freq)
    assert result.steps == []
    assert result.levels == {"A": 0, "B": 0}
    assert result.suppressed.tolist() == [False, False, False, False, False, True]


def test_k_larger_than_a_small_table_raises() -> None:
    _, freq = _tie_table(["A", "B"])
    with pytest.raises(AnonymizationError, match="7-anonymity cannot be reached"):
        Datafly([KAnonymity(k=7)], 0.5).search(freq)


@pytest.mark.parametrize(
    ("codes", "counts", "frequencies"),
    [
        ([0, 0, 1, 2], [1, 2, 3, 4], [3, 3, 4]),
        ([0, 2, 2], [5, 1, 1], [5, 2]),  # code 1 is unused and does not count as a zero
        ([1, 1, 1], [2, 2, 2], [6]),
    ],
)
def test_approximation_degree_is_the_std_of_value_frequencies(codes, counts, frequencies) -> None:
    degree = approximation_degree(np.array(codes), np.array(counts))
    assert degree == pytest.approx(float(np.std(frequencies)))


def test_approximation_degree_hand_value() -> None:
    # frequencies (3, 3, 4): mean 10/3, variance (1/9 + 1/9 + 4/9) / 3 = 2/9
    degree = approximation_degree(np.array([0, 0, 1, 2]), np.array([1, 2, 3, 4]))
    assert degree == pytest.approx(math.sqrt(2) / 3)
    assert approximation_degree(np.array([], dtype=int), np.array([])) == 0.0


def test_invalid_parameters() -> None:
    with pytest.raises(ValueError, match="at least one privacy model"):
        Datafly([], 0.0)
    with pytest.raises(ValueError, match="suppression_limit"):
        MultiAttributeDatafly([KAnonymity(k=2)], 1.5)
