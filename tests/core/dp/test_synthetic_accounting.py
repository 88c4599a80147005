"""MST/AIM accounting: what is charged is OpenDP's own privacy map of what runs on the data.

OpenDP 0.16's MST can refuse its own selection budget by one ulp, so
:mod:`privgate.core.dp.synthetic` rehearses the measurement on an *empty* table before drawing.
These tests wrap the OpenDP measurements the module builds and check, on real Adult records:
every measurement that is invoked before the charged draw sees a table with no records (the
rehearsal touches no private data); exactly one measurement sees the private records; and the
(ε, δ) charged for the draw is that measurement's own privacy map at one added or removed
record, within the policy's (ε, δ).
"""

from __future__ import annotations

import pandas as pd
import pytest
from synthetic_once import one_budget_search_per_setting

from privgate.core.dp import synthetic
from privgate.core.dp._accountant import Accountant
from privgate.core.dp.synthetic import SyntheticConfig, SyntheticDomains, synthesize

#: Two OpenDP synthesizer runs on a slice of Adult: a few seconds each, slow under load.
pytestmark = pytest.mark.slow

COLUMNS = ["sex", "race", "salary-class"]
DOMAINS = SyntheticDomains(
    columns=COLUMNS,
    categorical={
        "sex": ["Female", "Male"],
        "race": ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"],
        "salary-class": ["<=50K", ">50K"],
    },
    numeric={},
    integer=frozenset(),
)


@pytest.fixture(scope="module")
def adult(shared_data) -> pd.DataFrame:
    frame = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    return frame[COLUMNS].iloc[:2000].reset_index(drop=True)


class _Recorded:
    """An OpenDP measurement that records the number of records of every table it is run on."""

    def __init__(self, inner, d_in, seen: list) -> None:
        self._inner = inner
        self._d_in = d_in
        self._seen = seen

    def __call__(self, frame):
        self._seen.append((frame.collect().height, self._inner, self._d_in))
        return self._inner(frame)

    def map(self, d_in):
        return self._inner.map(d_in)


@pytest.mark.parametrize("method", ["mst", "aim"])
def test_the_charge_is_the_map_of_the_measurement_that_ran(adult, monkeypatch, method) -> None:
    seen: list = []
    original = synthetic._measurement

    def recorded(*args, **kwargs):
        measurement, d_in = original(*args, **kwargs)
        return _Recorded(measurement, d_in, seen), d_in

    monkeypatch.setattr(synthetic, "_measurement", recorded)
    config = SyntheticConfig(method, 1.0, 1e-6, aim_degree=2, aim_rounds=3)
    accountant = Accountant(budget=(1.0, 1e-6))
    result = synthesize(adult, DOMAINS, config, accountant)
    rows = [height for height, _, _ in seen]
    assert rows[-1] == len(adult) and all(height == 0 for height in rows[:-1]), rows
    assert rows.count(len(adult)) == 1  # one draw on the private records
    _, ran, d_in = seen[-1]
    epsilon, delta = (float(x) for x in ran.map(d_in))
    (spend,) = accountant.entries
    assert (spend.epsilon, spend.delta) == (epsilon, delta)
    assert epsilon <= 1.0 and delta <= 1e-6
    assert result.spend == spend


def test_aim_replayed_on_a_neighbour_publishes_the_same_release(adult, tmp_path) -> None:
    """AIM's rounds adapt to its own noisy outputs; all of it is the one journaled draw.

    D' = D without its first record plus a record outside the declared domains: replaying
    release r1's journal on D' spends nothing and publishes the identical table and account.
    """
    from privgate.core.dp.journal import JournaledAccountant
    from privgate.core.dp.ledger import BudgetLedger

    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("adult", 4.0, 1e-5)
    config = SyntheticConfig("aim", 1.0, 1e-6, aim_degree=2, aim_rounds=3)
    with one_budget_search_per_setting():  # the replay reuses the draw's measurement
        first = synthesize(
            adult, DOMAINS, config, JournaledAccountant(ledger, "adult", "r1", "run-1", (1.0, 1e-6))
        )
        spent = ledger.account("adult").spent_epsilon
        outsider = adult.iloc[[1]].assign(race="Martian")
        neighbour = pd.concat([adult.iloc[1:], outsider], ignore_index=True)
        accountant = JournaledAccountant(ledger, "adult", "r1", "run-2", (1.0, 1e-6))
        again = synthesize(neighbour, DOMAINS, config, accountant)
    assert accountant.replayed == 1 and ledger.account("adult").spent_epsilon == spent
    pd.testing.assert_frame_equal(again.frame, first.frame)
    assert again.public() == first.public()
    assert len(first.marginals) > len(COLUMNS)  # the rounds measured more than one-way marginals
