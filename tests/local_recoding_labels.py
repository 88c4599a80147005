"""What a local-recoding release (Mondrian, greedy partition) must write for each record.

Shared by the tests of both algorithms, so that "faithful" means one thing: a numeric label is
the original value or a range ``lo-hi`` that holds it, a categorical label is the original
value or one of its ancestors in the column's hierarchy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

#: A numeric region's label: its smallest and largest value.
RANGE = re.compile(r"^(-?\d+)-(-?\d+)$")


def assert_labels_cover_originals(
    original: pd.DataFrame,
    release: pd.DataFrame,
    hierarchies: Mapping,
    numeric: str = "age",
    strict_ranges: bool = False,
) -> None:
    """Every label of ``release`` covers the value of the same record in ``original``.

    ``numeric`` is the integer column labelled by ranges; ``hierarchies`` the categorical
    columns to check (``numeric`` is skipped there). ``strict_ranges``: a range's ends differ
    (Mondrian writes the plain value when they are equal).
    """
    for value, label in zip(original[numeric], release[numeric].astype(str), strict=True):
        match = RANGE.match(label)
        if match:
            lo, hi = int(match.group(1)), int(match.group(2))
            assert lo < hi or not strict_ranges, label
            assert lo <= value <= hi, (value, label)
        else:
            assert label == str(value)
    for qi, hierarchy in hierarchies.items():
        if qi == numeric:
            continue
        values = original[qi].unique()
        table = hierarchy.generalize(list(values))
        allowed = {(v, str(lab)) for v, row in zip(values, table, strict=True) for lab in row}
        pairs = set(zip(original[qi], release[qi].astype(str), strict=True))
        assert pairs <= allowed, sorted(pairs - allowed)[:5]
