"""Greedy Hamdist: binarization, the Hamming gain against brute force, the greedy selection."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

from privgate.core.anonymize._hamdist import binarize, greedy_hamdist_select, hamming_gain
from privgate.core.datasets import load_breast_cancer_wisconsin
from privgate.core.exceptions import AnonymizationError

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

BCW_CELLS = [
    "clump_thickness",
    "uniformity_of_cell_size",
    "uniformity_of_cell_shape",
    "marginal_adhesion",
    "single_epithelial_cell_size",
    "bland_chromatin",
    "normal_nucleoli",
    "mitoses",
]


def brute_force_distance(binary: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per feature: differing values summed over every pair of differently labelled records."""
    total = np.zeros(binary.shape[1], dtype=np.int64)
    for i, j in itertools.combinations(range(len(labels)), 2):
        if labels[i] != labels[j]:
            total += binary[i] != binary[j]
    return total


def smallest_class(frame: pd.DataFrame, columns: list[str]) -> int:
    if not columns:
        return len(frame)
    return int(frame.groupby(columns, sort=False).size().min())


def reference_greedy(binary: pd.DataFrame, labels: np.ndarray, k: int) -> list[str]:
    """The greedy algorithm as the issue states it, step by step, with brute-force distances.

    At each step, among the features not yet chosen whose addition keeps the projection
    k-anonymous, add the one that increases the total distance most (first in column order on
    ties); stop when none increases it.
    """
    matrix = binary.to_numpy()
    chosen: list[str] = []
    total = 0
    while True:
        best, best_total = None, total
        for j, name in enumerate(binary.columns):
            if name in chosen or smallest_class(binary, [*chosen, name]) < k:
                continue
            columns = [binary.columns.get_loc(c) for c in chosen] + [j]
            candidate = int(brute_force_distance(matrix[:, columns], labels).sum())
            if candidate > best_total:
                best, best_total = name, candidate
        if best is None:
            return chosen
        chosen.append(best)
        total = best_total


# ------------------------------------------------------------------------------------------
# binarize


def test_binarize_names_values_and_missing() -> None:
    frame = pd.DataFrame(
        {
            "work": pd.array(["Private", None, "Gov", "Private"], dtype="string"),
            "age": pd.array([30, 40, 30, 30], dtype="Int64"),
        },
        index=[10, 11, 12, 13],
    )
    binary = binarize(frame, ["work", "age"])
    assert list(binary.columns) == ["work=Gov", "work=Private", "work=<NA>", "age=30", "age=40"]
    assert (binary.dtypes == np.uint8).all()
    assert binary.index.tolist() == [10, 11, 12, 13]
    assert binary["work=Private"].tolist() == [1, 0, 0, 1]
    assert binary["work=<NA>"].tolist() == [0, 1, 0, 0]
    assert binary["age=40"].tolist() == [0, 1, 0, 0]
    assert (binary.sum(axis=1) == 2).all()  # exactly one 1 per attribute


def test_binarize_refuses_colliding_names() -> None:
    frame = pd.DataFrame({"v": pd.Series([1, "1"], dtype=object)})
    with pytest.raises(AnonymizationError, match="'v=1'"):
        binarize(frame)


# ------------------------------------------------------------------------------------------
# Hamming gain


def test_hand_worked_gain() -> None:
    binary = pd.DataFrame({"sep": [1, 1, 0, 0], "alt": [1, 0, 1, 0], "flat": [0, 0, 0, 0]})
    # sep differs on all 4 cross-class pairs; alt on (0,3) and (1,2); flat on none.
    assert hamming_gain(binary, ["a", "a", "b", "b"]).to_dict() == {"sep": 4, "alt": 2, "flat": 0}


@st.composite
def labelled_binary(draw) -> tuple[np.ndarray, np.ndarray]:
    n_rows = draw(st.integers(1, 25))
    n_features = draw(st.integers(1, 6))
    n_classes = draw(st.integers(1, 4))
    bits = draw(st.lists(st.booleans(), min_size=n_rows * n_features, max_size=n_rows * n_features))
    labels = draw(st.lists(st.integers(0, n_classes - 1), min_size=n_rows, max_size=n_rows))
    return np.array(bits, dtype=np.uint8).reshape(n_rows, n_features), np.array(labels)


@PROPERTY
@given(labelled_binary())
def test_gain_equals_brute_force_pairwise_sum(case) -> None:
    matrix, labels = case
    binary = pd.DataFrame(matrix, columns=[f"f{j}" for j in range(matrix.shape[1])])
    gain = hamming_gain(binary, labels)
    assert gain.tolist() == brute_force_distance(matrix, labels).tolist()
    # Booleans and string labels give the same numbers.
    assert hamming_gain(binary.astype(bool), labels.astype(str)).tolist() == gain.tolist()


# ------------------------------------------------------------------------------------------
# Greedy selection


@pytest.fixture
def eight_rows() -> tuple[pd.DataFrame, list[str]]:
    binary = pd.DataFrame(
        {
            "rare": [1, 0, 0, 0, 0, 0, 0, 0],  # gain 1*7 - 1*3 = 4
            "flat": [0, 0, 0, 0, 0, 0, 0, 0],  # gain 0
            "half": [1, 1, 0, 0, 1, 1, 0, 0],  # gain 4*4 - (2*2 + 2*2) = 8
            "label": [1, 1, 1, 1, 0, 0, 0, 0],  # gain 16: separates the classes
        }
    )
    return binary, ["A"] * 4 + ["B"] * 4


def test_hand_worked_greedy(eight_rows) -> None:
    binary, labels = eight_rows
    selection = greedy_hamdist_select(binary, labels, k=2)
    # label: classes 4/4 -> kept. half: classes of 2 -> kept. rare: row 0 alone -> rejected.
    # flat: increases nothing -> not added.
    assert selection.kept == ["label", "half"]
    assert selection.rejected == ["rare", "flat"]
    assert [(s["name"], s["gain"], s["smallest_class"]) for s in selection.steps] == [
        ("label", 16, 4),
        ("half", 8, 2),
        ("rare", 4, 1),
        ("flat", 0, None),
    ]
    assert selection.steps[3]["reason"] == "no gain"
    assert selection.smallest_class == 2
    assert selection.algorithm == "greedy_hamdist"


def test_higher_k_keeps_less(eight_rows) -> None:
    binary, labels = eight_rows
    selection = greedy_hamdist_select(binary, labels, k=3)
    # label: 4/4 -> kept; half would leave classes of 2 -> rejected; rare -> 1.
    assert selection.kept == ["label"]
    assert greedy_hamdist_select(binary, labels, k=5).kept == []
    assert greedy_hamdist_select(binary, labels, k=5).smallest_class == 8


@PROPERTY
@given(labelled_binary(), st.integers(1, 6))
def test_greedy_matches_the_step_by_step_definition(case, k) -> None:
    matrix, labels = case
    k = min(k, len(labels))
    binary = pd.DataFrame(matrix, columns=[f"f{j}" for j in range(matrix.shape[1])])
    selection = greedy_hamdist_select(binary, labels, k)
    assert selection.kept == reference_greedy(binary, labels, k)
    assert smallest_class(binary, selection.kept) >= k
    if selection.kept:
        assert anonymity.k_anonymity(binary, selection.kept) >= k


def test_errors() -> None:
    binary = pd.DataFrame({"f": [0, 1, 1]})
    with pytest.raises(AnonymizationError, match="privacy.k = 4 is larger than the table"):
        greedy_hamdist_select(binary, [0, 1, 1], k=4)
    with pytest.raises(AnonymizationError, match="feature 'g' is not binary: 2"):
        greedy_hamdist_select(pd.DataFrame({"f": [0, 1, 1], "g": [0, 2, 1]}), [0, 1, 1], k=1)
    with pytest.raises(AnonymizationError, match="2 labels for a table of 3 rows"):
        greedy_hamdist_select(binary, [0, 1], k=1)
    with pytest.raises(AnonymizationError, match="label missing at position 1"):
        greedy_hamdist_select(binary, pd.Series([0, None, 1]), k=1)


# ------------------------------------------------------------------------------------------
# Real data


def test_breast_cancer_wisconsin(shared_data) -> None:
    frame = load_breast_cancer_wisconsin(
        shared_data("breast_cancer_wisconsin/breast-cancer-wisconsin.data")
    )
    binary = binarize(frame, BCW_CELLS)
    # 8 attributes with the values 1..10, except mitoses (never 9 in this file).
    assert binary.shape == (699, 79)
    benign = (frame["class"] == 2).to_numpy()
    selection = greedy_hamdist_select(binary, benign, k=10)
    gains = hamming_gain(binary, benign)
    assert selection.kept
    assert selection.kept[0] == gains.idxmax()
    assert smallest_class(binary, selection.kept) >= 10
    assert anonymity.k_anonymity(binary, selection.kept) >= 10
    # The kept gains add up to the projection's Hamming distance between benign and malignant
    # samples, computed here as a (benign x malignant) matrix product.
    kept = binary[selection.kept].to_numpy(dtype=np.int64)
    b, m = kept[benign], kept[~benign]
    distance = int((b @ (1 - m).T + (1 - b) @ m.T).sum())
    assert distance == int(gains[selection.kept].sum())
    for name in selection.rejected:
        step = next(s for s in selection.steps if s["name"] == name)
        assert step["reason"] == "no gain" or step["smallest_class"] < 10
