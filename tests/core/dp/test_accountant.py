"""Composition arithmetic of the accountant on worked examples."""

from __future__ import annotations

import json
import math

import pytest

from privgate.core.dp import Accountant, PrivacyParameterError, Spend, parallel, sequential
from privgate.core.exceptions import BudgetExceededError, PolicyError, PrivgateError


def test_sequential_sums_epsilons_and_deltas() -> None:
    spends = [Spend("laplace", 0.5), Spend("gaussian", 0.25, 1e-6), Spend("exponential", 0.125)]
    assert sequential(spends) == (0.875, 1e-6)


def test_parallel_takes_the_maxima_independently() -> None:
    # The largest epsilon and the largest delta come from different partitions.
    spends = [Spend("gaussian", 0.3, 1e-7), Spend("gaussian", 0.1, 1e-5), Spend("laplace", 0.2)]
    assert parallel(spends) == (0.3, 1e-5)


def test_empty_composition_costs_nothing() -> None:
    assert sequential([]) == (0.0, 0.0)
    assert parallel([]) == (0.0, 0.0)


def test_sequential_sum_is_correctly_rounded() -> None:
    # Ten charges of 0.1 add up to exactly 1.0 with fsum (a naive loop gives 0.9999999999999999).
    assert sequential([Spend("laplace", 0.1)] * 10) == (1.0, 0.0)


def test_mixed_sequential_and_parallel_worked_example() -> None:
    """A tree release: root count (0.2), two disjoint levels of leaves, a Gaussian mean.

    Total epsilon = 0.2 + max(0.3, 0.3, 0.1) + max(0.4, 0.2) + 0.5 = 1.4;
    total delta = 1e-6 (leaves) + 2e-6 (mean) = 3e-6.
    """
    acc = Accountant()
    acc.charge(Spend("discrete_laplace", 0.2, step="root count"))
    acc.charge_parallel(
        [
            Spend("discrete_laplace", 0.3),
            Spend("discrete_laplace", 0.3),
            Spend("gaussian", 0.1, 1e-6),
        ],
        step="level 1",
    )
    acc.charge_parallel([Spend("laplace", 0.4), Spend("laplace", 0.2)], step="level 2")
    acc.charge(Spend("gaussian", 0.5, 2e-6, sensitivity=2.0, step="mean"))

    epsilon, delta = acc.total
    assert epsilon == pytest.approx(1.4, rel=1e-12)
    assert delta == pytest.approx(3e-6, rel=1e-12)
    assert [entry.step for entry in acc.entries] == ["root count", "level 1", "level 2", "mean"]
    level_1 = acc.entries[1]
    assert level_1.mechanism == "parallel(discrete_laplace+gaussian)"
    assert (level_1.epsilon, level_1.delta) == (0.3, 1e-6)
    assert len(level_1.parts) == 3


def test_parallel_group_charges_the_maximum_once() -> None:
    acc = Accountant()
    with acc.parallel_group("leaf counts") as group:
        group.charge(Spend("discrete_laplace", 0.5))
        group.charge(Spend("discrete_laplace", 0.7))
        group.charge(Spend("discrete_laplace", 0.5))
        assert acc.entries == []  # nothing is charged before the group closes
    assert acc.total == (0.7, 0.0)
    assert len(acc.entries) == 1
    assert acc.entries[0].step == "leaf counts"
    assert acc.entries[0].mechanism == "parallel(discrete_laplace)"


def test_empty_parallel_group_records_nothing() -> None:
    acc = Accountant()
    with acc.parallel_group("nothing"):
        pass
    assert acc.entries == []


def test_budget_cap_raises_with_remaining_and_records_nothing() -> None:
    acc = Accountant(budget=(1.0, 1e-5))
    acc.charge(Spend("laplace", 0.75, step="counts"))
    with pytest.raises(BudgetExceededError) as info:
        acc.charge(Spend("laplace", 0.5, step="means"))
    assert info.value.remaining == pytest.approx((0.25, 1e-5))
    assert "means" in str(info.value) and "remaining" in str(info.value)
    assert isinstance(info.value, PrivgateError)
    assert acc.total == (0.75, 0.0)  # the refused charge left no trace
    acc.charge(Spend("laplace", 0.25))  # exactly the rest still fits
    assert acc.remaining == (0.0, pytest.approx(1e-5))


def test_budget_cap_on_delta_alone() -> None:
    acc = Accountant(budget=(10.0, 1e-6))
    acc.charge(Spend("gaussian", 1.0, 6e-7))
    with pytest.raises(BudgetExceededError) as info:
        acc.charge(Spend("gaussian", 1.0, 6e-7))
    assert info.value.remaining == pytest.approx((9.0, 4e-7))


def test_parallel_charge_is_checked_against_the_cap_as_its_maximum() -> None:
    acc = Accountant(budget=(1.0, 0.0))
    # Five disjoint partitions at 0.9 each cost 0.9, not 4.5: within the cap.
    acc.charge_parallel([Spend("laplace", 0.9)] * 5)
    assert acc.total == (0.9, 0.0)
    with pytest.raises(BudgetExceededError):
        acc.charge_parallel([Spend("laplace", 0.05), Spend("laplace", 0.2)])


def test_parallel_group_refuses_a_part_before_it_is_drawn() -> None:
    acc = Accountant(budget=(1.0, 0.0))
    with pytest.raises(BudgetExceededError), acc.parallel_group("leaves") as group:
        group.charge(Spend("laplace", 0.6))
        group.charge(Spend("laplace", 1.5))
    # The accepted part was charged on exit; the refused one was not.
    assert acc.total == (0.6, 0.0)


def test_split_budget_is_not_blocked_by_float_rounding() -> None:
    # 0.1 + 0.2 > 0.3 in binary floating point; the documented tolerance accepts it.
    acc = Accountant(budget=(0.3, 0.0))
    acc.charge(Spend("laplace", 0.1))
    acc.charge(Spend("laplace", 0.2))
    assert acc.total[0] == pytest.approx(0.3)
    with pytest.raises(BudgetExceededError):
        acc.charge(Spend("laplace", 1e-6))


def test_to_dict_is_json_ready_and_round_trips() -> None:
    acc = Accountant(budget=(2.0, 1e-5))
    acc.charge(Spend("exponential", 0.5, sensitivity=1.0, step="split", scale=4.0))
    acc.charge_parallel([Spend("gaussian", 0.4, 1e-6), Spend("laplace", 0.3)], step="leaves")
    data = json.loads(json.dumps(acc.to_dict()))
    assert data["budget"] == [2.0, 1e-5]
    assert data["total"] == [0.9, 1e-6]
    assert data["remaining"] == [pytest.approx(1.1), pytest.approx(9e-6)]
    assert [Spend.from_dict(entry) for entry in data["entries"]] == acc.entries
    assert data["entries"][0] == {
        "mechanism": "exponential",
        "epsilon": 0.5,
        "delta": 0.0,
        "sensitivity": 1.0,
        "step": "split",
        "scale": 4.0,
        "parts": [],
    }


def test_uncapped_accountant_has_no_remaining() -> None:
    acc = Accountant()
    acc.charge(Spend("laplace", 100.0))
    assert acc.remaining is None
    assert acc.to_dict()["budget"] is None


def test_entries_is_a_copy() -> None:
    acc = Accountant()
    acc.charge(Spend("laplace", 1.0))
    acc.entries.clear()
    assert len(acc.entries) == 1


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"mechanism": "", "epsilon": 1.0}, "mechanism"),
        ({"mechanism": "laplace", "epsilon": -0.1}, "epsilon"),
        ({"mechanism": "laplace", "epsilon": math.nan}, "epsilon"),
        ({"mechanism": "laplace", "epsilon": math.inf}, "epsilon"),
        ({"mechanism": "laplace", "epsilon": "1"}, "epsilon"),
        ({"mechanism": "laplace", "epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"mechanism": "laplace", "epsilon": 1.0, "delta": -1e-9}, "delta"),
        ({"mechanism": "laplace", "epsilon": 1.0, "sensitivity": 0}, "sensitivity"),
    ],
)
def test_invalid_spend_is_refused_naming_the_field(kwargs: dict, fragment: str) -> None:
    with pytest.raises(PrivacyParameterError, match=fragment) as info:
        Spend(**kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, PolicyError)


@pytest.mark.parametrize("budget", [(-1.0, 0.0), (1.0, 1.0), (math.inf, 0.0), (1.0,), "1"])
def test_invalid_budget_is_refused(budget: object) -> None:
    with pytest.raises(PrivacyParameterError, match="budget"):
        Accountant(budget=budget)  # type: ignore[arg-type]


def test_charge_parallel_needs_spends() -> None:
    with pytest.raises(PrivacyParameterError, match="at least one"):
        Accountant().charge_parallel([])


def test_charge_refuses_a_non_spend() -> None:
    with pytest.raises(TypeError, match="Spend"):
        Accountant().charge((1.0, 0.0))  # type: ignore[arg-type]
