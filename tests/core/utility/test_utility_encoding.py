"""Faithful encoding of generalized values: small tables by hand, then Adult's releases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy import ARXHierarchy, taxonomy_hierarchy
from privgate.core.utility import describe_domains, encode_features, factorize_labels

CITY = taxonomy_hierarchy("city", {"East": ["Boston", "NYC", "DC"], "West": ["LA", "SF"]})


@pytest.fixture()
def small():
    original = pd.DataFrame(
        {"age": [20, 30, 40, 60], "city": ["Boston", "NYC", "LA", "SF"]}, index=[10, 11, 12, 13]
    )
    domains = describe_domains(original, {"age": None, "city": CITY}, numeric={"age"})
    return original, domains


def test_numeric_labels_read_as_clipped_ranges(small) -> None:
    _, domains = small
    age = domains["age"]
    assert (age.low, age.high) == (20.0, 60.0)
    assert age.bounds("30") == (30.0, 30.0)
    assert age.bounds("20-30") == (20.0, 30.0)
    assert age.bounds("[40, 50)") == (40.0, 50.0)
    assert age.bounds("*") == (20.0, 60.0)
    assert age.bounds(None) == (20.0, 60.0)  # a missing cell says as little as '*'
    assert age.bounds("0-24") == (20.0, 24.0)  # an ARX band wider than the data is clipped
    assert age.cover("20-30").tolist() == [0, 1]
    assert age.cover("[40, 60)").tolist() == [2]  # half-open: 60 is not covered
    with pytest.raises(HierarchyError, match="'age'.*'old'"):
        age.cover("old")
    with pytest.raises(HierarchyError, match="covers none"):
        age.cover("70-80")


def test_categorical_labels_cover_their_leaves(small) -> None:
    _, domains = small
    city = domains["city"]
    leaves = city.leaves.tolist()
    assert sorted(leaves) == ["Boston", "LA", "NYC", "SF"]  # DC is not in the data
    assert sorted(leaves[i] for i in city.cover("East")) == ["Boston", "NYC"]
    assert sorted(leaves[i] for i in city.cover("West")) == ["LA", "SF"]
    assert len(city.cover("*")) == 4
    with pytest.raises(HierarchyError, match="'city'.*'Europe'"):
        city.cover("Europe")


def test_onehot_encoding_by_hand(small) -> None:
    _, domains = small
    release = pd.DataFrame({"age": ["20-30", "20-30", "*"], "city": ["East", "East", "LA"]})
    X, names = encode_features(release, domains)
    assert names == ["age", "age=*", "city=East", "city=LA"]
    # midpoints (25 - 20) / 40 and (40 - 20) / 40; '*' is its own indicator
    np.testing.assert_allclose(X, [[0.125, 0, 1, 0], [0.125, 0, 1, 0], [0.5, 1, 0, 1]])
    X, names = encode_features(release, domains, numeric="bounds")
    assert names[:3] == ["age.lo", "age.hi", "age=*"]
    np.testing.assert_allclose(X[:, :3], [[0, 0.25, 0], [0, 0.25, 0], [0, 1, 1]])


def test_leaf_encoding_by_hand_and_its_distances(small) -> None:
    original, domains = small
    release = pd.DataFrame({"age": ["20", "20-30", "*"], "city": ["Boston", "East", "*"]})
    X, names = encode_features(release, domains, categorical="leaves")
    leaf = {n: i for i, n in enumerate(names)}
    s = 1 / math.sqrt(2)
    assert names[0] == "age" and X[:, 0].tolist() == [0.0, 0.125, 0.5]
    assert X[0, leaf["city~Boston"]] == pytest.approx(s)
    assert X[1, leaf["city~Boston"]] == pytest.approx(s / 2)
    assert X[1, leaf["city~NYC"]] == pytest.approx(s / 2)
    assert X[2, 1:] == pytest.approx(np.full(4, s / 4))
    # a leaf is closer to its ancestor than to a disjoint leaf; two leaves are at distance 1
    X0, _ = encode_features(original, domains, categorical="leaves")
    boston, sf = X0[0, 1:], X0[3, 1:]
    east = X[1, 1:]
    assert np.sum((boston - sf) ** 2) == pytest.approx(1.0)
    assert np.sum((boston - east) ** 2) < np.sum((sf - east) ** 2)


def test_unknown_label_names_the_column(small) -> None:
    _, domains = small
    with pytest.raises(HierarchyError, match="'city'"):
        encode_features(pd.DataFrame({"age": ["20"], "city": ["Mars"]}), domains)


def test_hierarchy_label_of_a_numeric_column_spans_its_values() -> None:
    h = ARXHierarchy("age", [["20", "young", "*"], ["30", "young", "*"], ["60", "old", "*"]])
    domains = describe_domains(pd.DataFrame({"age": [20, 30, 60]}), {"age": h}, {"age"})
    assert domains["age"].bounds("young") == (20.0, 30.0)
    X, _ = encode_features(pd.DataFrame({"age": ["young", "old"]}), domains)
    np.testing.assert_allclose(X[:, 0], [5 / 40, 1.0])


def test_factorize_labels_keys_numbers_like_the_hierarchies() -> None:
    codes, labels = factorize_labels(pd.Series([39, 39.0, None, "x"], dtype=object))
    assert labels == ["39", "x", None]
    assert codes.tolist() == [0, 0, 2, 1]


def test_bad_parameters_are_named(small) -> None:
    original, domains = small
    with pytest.raises(ValueError, match="'categorical' parameter"):
        encode_features(original, domains, categorical="dense")
    with pytest.raises(ValueError, match="'numeric' parameter"):
        describe_domains(original, {"age": None}, numeric={"city"})


def test_adult_releases_encode_into_the_originals_space(adult, adult_k5, adult_mondrian):
    qis = adult.policy.quasi_identifiers
    domains = describe_domains(adult.frame, {q: adult.hierarchies[q] for q in qis}, {"age"})
    X0, names0 = encode_features(adult.frame, domains, categorical="leaves")
    for _, release in (adult_k5, adult_mondrian):
        X, names = encode_features(release, domains, categorical="leaves")
        assert names == names0 and X.shape == (len(release), len(names0))
        age = X[:, names.index("age")]
        assert age.min() >= 0 and age.max() <= 1  # age midpoints, scaled
        # every categorical block of a row is a distribution scaled by 1/sqrt(2)
        for q in (q for q in qis if q != "age"):
            block = [i for i, n in enumerate(names) if n.startswith(f"{q}~")]
            np.testing.assert_allclose(X[:, block].sum(axis=1), 1 / math.sqrt(2))
    # the original's own encoding is one-hot: a single leaf per block
    sex = [i for i, n in enumerate(names0) if n.startswith("sex~")]
    np.testing.assert_allclose(np.unique(X0[:, sex]), [0.0, 1 / math.sqrt(2)])
    assert ((X0[:, sex] > 0).sum(axis=1) == 1).all()
