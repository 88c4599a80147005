"""Tiered releases on real Adult records: each k-anonymous on exactly its covered columns."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from pycanon import anonymity

from privgate.core.anonymize import OptimalLattice, apply_generalization
from privgate.core.anonymize._tiered import TieredRelease, tiered_releases
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError, PolicyError
from privgate.core.privacy import KAnonymity
from privgate.core.ranking import rank_attributes

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

K = 5
LIMIT = 0.02
#: Fixed tiers in the shape a ranking of Adult gives (so the test does not depend on a forest).
TIERS = {
    "marital-status": 1,
    "age": 2,
    "education": 2,
    "occupation": 3,
    "sex": 4,
    "workclass": 4,
    "race": 5,
    "native-country": 5,
}


@pytest.fixture(scope="module")
def table(adult_sample, adult_qis) -> pd.DataFrame:
    return adult_sample[[*adult_qis, "hours-per-week", "income"]]


@pytest.fixture(scope="module")
def released(table) -> list[str]:
    return list(table.columns)


@pytest.fixture(scope="module")
def releases(table, adult_hierarchies, released) -> list[TieredRelease]:
    return tiered_releases(table, adult_hierarchies, TIERS, [KAnonymity(k=K)], LIMIT, released)


def test_one_release_per_tier_covering_tiers_one_to_e(releases, adult_qis):
    assert [r.tier for r in releases] == [1, 2, 3, 4, 5]
    for release in releases:
        expected = [q for q in adult_qis if TIERS[q] <= release.tier]
        assert release.covered == expected
        assert set(release.result.levels) == set(expected)
    assert set(releases[-1].covered) == set(adult_qis)  # E = 5 covers every ranked QI


def test_each_release_is_k_anonymous_on_its_covered_columns(releases, table):
    for release in releases:
        sizes = release.frame.groupby(release.covered, dropna=False).size()
        assert sizes.min() >= K, release.tier
        assert anonymity.k_anonymity(release.frame, release.covered) >= K
        assert release.result.n_suppressed <= math.floor(LIMIT * len(table))
        assert len(release.frame) == len(table) - release.result.n_suppressed


def test_early_releases_do_not_protect_uncovered_columns(releases, adult_qis):
    """The coverage is real: release 1 leaves rare combinations of the other QIs in place."""
    first = releases[0]
    assert anonymity.k_anonymity(first.frame, adult_qis) < K
    assert first.uncovered == [c for c in first.frame.columns if c not in first.covered]


def test_columns_outside_the_covered_tiers_are_unchanged(releases, table, released):
    for release in releases:
        assert list(release.frame.columns) == released
        original = table.loc[release.frame.index]
        for column in release.uncovered:
            pd.testing.assert_series_equal(release.frame[column], original[column])
        assert not release.frame.index.has_duplicates


def test_last_release_is_plain_k_anonymity(releases, table, adult_hierarchies, released):
    encoded = encode_table(table, adult_hierarchies)
    result = OptimalLattice([KAnonymity(k=K)], LIMIT).search(encoded.frequency_set())
    plain = apply_generalization(table, encoded, result, released)
    assert releases[-1].result.levels == result.levels
    pd.testing.assert_frame_equal(releases[-1].frame, plain)


def test_manifest_states_exactly_the_covered_columns(releases):
    manifest = json.loads(json.dumps(releases[2].to_dict()))
    assert manifest["tier"] == 3
    assert manifest["covered_columns"] == releases[2].covered
    assert set(manifest["covered_columns"]) | set(manifest["uncovered_columns"]) == set(
        releases[2].frame.columns
    )
    assert manifest["rows"] == len(releases[2].frame)


def test_with_a_real_ranking_and_selected_tiers(table, adult_hierarchies, adult_qis, released):
    ranking = rank_attributes(table, adult_qis, "income", n_estimators=30)
    chosen = tiered_releases(
        table,
        adult_hierarchies,
        ranking.tiers,
        [KAnonymity(k=10)],
        LIMIT,
        released,
        tiers_wanted=[3, 9],
    )
    assert [r.tier for r in chosen] == [3, 9]
    assert chosen[0].covered == [q for q in adult_qis if q in ranking.columns_in_tiers(3)]
    assert set(chosen[1].covered) == set(adult_qis)
    for release in chosen:
        assert release.frame.groupby(release.covered).size().min() >= 10


def test_refusals(table, adult_hierarchies, released):
    models = [KAnonymity(k=K)]
    partial = {q: t for q, t in TIERS.items() if q != "race"}
    with pytest.raises(PolicyError, match="'race'"):
        tiered_releases(table, adult_hierarchies, partial, models, LIMIT, released)
    extra = TIERS | {"hours-per-week": 5}
    with pytest.raises(PolicyError, match="hours-per-week"):
        tiered_releases(table, adult_hierarchies, extra, models, LIMIT, released)
    with pytest.raises(PolicyError, match="tiers_wanted"):
        tiered_releases(table, adult_hierarchies, TIERS, models, LIMIT, released, tiers_wanted=[0])
    with pytest.raises(PolicyError, match="'age'"):
        tiered_releases(table, adult_hierarchies, TIERS, models, LIMIT, released[1:])
    with pytest.raises(AnonymizationError, match="larger than the table"):
        tiered_releases(table, adult_hierarchies, TIERS, [KAnonymity(k=10**6)], 0.0, released)
