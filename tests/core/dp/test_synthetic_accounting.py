"""MST/AIM accounting: what is charged is OpenDP's own privacy map of what runs on the data.

OpenDP 0.16's MST can refuse its own selection budget by one ulp, so
:mod:`privgate.core.dp.synthetic` rehearses the measurement on an *empty* table before drawing.
These tests wrap the OpenDP measurements an AIM release builds (``recorded_measurements``; MST:
``test_synthetic.py``) and check, on real Adult records:
every measurement that is invoked before the charged draw sees a table with no records (the
rehearsal touches no private data); exactly one measurement sees the private records; and the
(ε, δ) charged for the draw is that measurement's own privacy map at one added or removed
record, within the policy's (ε, δ).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from recorded_measurements import recording_measurements

from privgate.core.dp.synthetic import SyntheticConfig, SyntheticDomains, synthesize

#: One OpenDP AIM release on a slice of Adult (and its replay): slow under load.
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


AIM = SyntheticConfig("aim", 1.0, 1e-6, aim_degree=2, aim_rounds=3)


@pytest.fixture(scope="module")
def recorded_aim(adult, tmp_path_factory):
    """One AIM release r1 through a journaled accountant, every OpenDP measurement it built
    and ran recorded (``recorded_measurements``): (ledger, result, accountant, runs)."""
    from privgate.core.dp.journal import JournaledAccountant
    from privgate.core.dp.ledger import BudgetLedger

    folder = tmp_path_factory.mktemp("aim-ledger")
    ledger = BudgetLedger(f"sqlite:///{folder / 'ledger.sqlite'}")
    ledger.open_account("adult", 4.0, 1e-5)
    accountant = JournaledAccountant(ledger, "adult", "r1", "run-1", (1.0, 1e-6))
    with recording_measurements() as seen:
        result = synthesize(adult, DOMAINS, AIM, accountant)
        yield ledger, result, accountant, list(seen)


@pytest.fixture(scope="module")
def aim_release(recorded_aim):
    """The module's AIM release: (ledger, result)."""
    ledger, result, _, _ = recorded_aim
    return ledger, result


def test_the_charge_is_the_map_of_the_measurement_that_ran(adult, recorded_aim) -> None:
    """AIM; MST: ``test_synthetic.py`` (the same check on that module's release)."""
    _, result, accountant, runs = recorded_aim
    rows = [height for height, _, _ in runs]
    assert rows[-1] == len(adult) and all(height == 0 for height in rows[:-1]), rows
    assert rows.count(len(adult)) == 1  # one draw on the private records
    _, ran, d_in = runs[-1]
    assert rows == [0, len(adult)] and runs[0][1] is ran  # rehearsed: the same measurement
    epsilon, delta = (float(x) for x in ran.map(d_in))
    (spend,) = accountant.entries
    assert (spend.epsilon, spend.delta) == (epsilon, delta)
    assert epsilon <= 1.0 and delta <= 1e-6
    assert result.spend == spend


def test_aim_releases_declared_columns_within_budget(adult, aim_release) -> None:
    _, result = aim_release
    assert list(result.frame.columns) == COLUMNS
    for name in COLUMNS:
        assert set(result.frame[name]) <= set(DOMAINS.categorical[name])
    assert result.spend.epsilon <= 1.0 and result.spend.delta <= 1e-6
    assert abs(len(result.frame) - len(adult)) < 300
    assert len(result.marginals) > len(COLUMNS)  # the rounds measured more than one-way marginals


def test_aim_replayed_on_a_neighbour_publishes_the_same_release(adult, aim_release) -> None:
    """AIM's rounds adapt to its own noisy outputs; all of it is the one journaled draw.

    D' = D without its first record plus a record outside the declared domains: replaying
    release r1's journal on D' spends nothing and publishes the identical table and account.
    """
    from privgate.core.dp.journal import JournaledAccountant

    ledger, first = aim_release
    spent = ledger.account("adult").spent_epsilon
    outsider = adult.iloc[[1]].assign(race="Martian")
    neighbour = pd.concat([adult.iloc[1:], outsider], ignore_index=True)
    accountant = JournaledAccountant(ledger, "adult", "r1", "run-2", (1.0, 1e-6))
    again = synthesize(neighbour, DOMAINS, AIM, accountant)
    assert accountant.replayed == 1 and ledger.account("adult").spent_epsilon == spent
    pd.testing.assert_frame_equal(again.frame, first.frame)
    assert again.public() == first.public()


def test_the_budget_search_is_kept_by_its_public_setting_only(
    adult, aim_release, monkeypatch
) -> None:
    """The kept OpenDP budget search is found by the declared columns, keys and settings, never
    by the records, and it is the search of that setting: rebuilt at its ρ, OpenDP's privacy
    map is the one the release was charged, and each run of it draws fresh noise."""
    from privgate.core.dp import synthetic
    from privgate.core.dp._accountant import Accountant
    from privgate.core.exceptions import BudgetExceededError

    ledger, result = aim_release
    asked = []
    kept_search = synthetic._kept_search

    def recorded(key: tuple):
        asked.append(key)
        return kept_search(key)

    monkeypatch.setattr(synthetic, "_kept_search", recorded)
    searches = kept_search.cache_info().misses
    other = adult.sample(frac=1.0, random_state=3).iloc[:500]  # other records, same policy
    with pytest.raises(BudgetExceededError):
        synthesize(other, DOMAINS, AIM, Accountant((0.5, 0.5)))
    declared = {name: DOMAINS.categorical[name] for name in COLUMNS}
    assert asked == [synthetic._public_setting(COLUMNS, declared, AIM)]
    assert kept_search.cache_info().misses == searches  # the release's search, not a new one
    measurement, rho, epsilon, delta, chosen = kept_search(asked[0])
    assert (rho, epsilon, delta) == (result.rho, result.spend.epsilon, result.spend.delta)
    rebuilt, d_in = synthetic._measurement(COLUMNS, declared, chosen, rho)
    assert rebuilt.map(d_in) == measurement.map(d_in)
    assert tuple(float(x) for x in rebuilt.map(d_in)) == (epsilon, delta)
    # Kept, it runs again on the same records with fresh noise (OpenDP measurements keep no
    # state between runs): its noisy one-way marginals, measured before AIM reads any model,
    # are not the draw's. Its models are not fitted here (as in the rehearsal): the fits only
    # steer AIM's later rounds, which this does not compare, and cost about 4 CPU s.
    import polars as pl

    coded = pl.LazyFrame({c: pl.Series(c, adult[c].tolist(), dtype=pl.String) for c in COLUMNS})
    (draw,) = ledger.draws("adult", "r1")
    again = synthetic._marginals_text(synthetic._run(measurement, coded, rehearsal=True))

    def one_way(text: str) -> dict:
        found: dict = {}  # each column's first one-way measurement (a round may repeat one)
        for m in json.loads(text)["marginals"]:
            if len(m["clique"]) == 1:
                found.setdefault(m["clique"][0], m["values"])
        return found

    assert set(one_way(again)) == set(one_way(draw.value)) == set(COLUMNS)
    assert one_way(again) != one_way(draw.value)
