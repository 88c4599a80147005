"""The class-table grouping helpers of the lattice search (core/anonymize/_lattice.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import privgate.core.anonymize._lattice as lattice_module
from privgate.core.anonymize._lattice import _group, _group_dense


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 3000),
    st.integers(1, 5000),
    st.sampled_from([np.int32, np.int64]),
    st.integers(0, 2**32 - 1),
)
def test_dense_grouping_is_np_unique(rows, space, dtype, seed):
    """Marking the keys present in the key space: np.unique's sorted distinct keys and each
    row's rank among them, in the key's own integer type, with the top of the space used."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, space, rows).astype(dtype)
    if rows:
        key[0] = space - 1
    distinct, inverse = _group_dense(key, space)
    want, want_inverse = np.unique(key, return_inverse=True)
    np.testing.assert_array_equal(distinct, want)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
    assert inverse.dtype == key.dtype


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 3000),
    st.integers(1, 6000),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from(["uniform", "skewed", "one key"]),
    st.integers(0, 2**32 - 1),
)
def test_grouping_split_at_a_pivot_is_np_unique(rows, space, dtype, shape, seed):
    """The grouping of large keys, sorted as two halves of their value range on two threads:
    np.unique's groups (each row's rank among the sorted distinct keys) and a row of each
    group as its representative, as the serial sort gives; with most rows on one key (the
    pivot drawn on it) and with a single key (an empty side)."""
    rng = np.random.default_rng(seed)
    if shape == "uniform":
        key = rng.integers(0, space, rows)
    elif shape == "skewed":  # most rows at the low end: the sampled median is that key
        key = np.where(rng.random(rows) < 0.8, 0, rng.integers(0, space, rows))
    else:
        key = np.full(rows, space - 1)
    key = key.astype(dtype)
    want_inverse = np.unique(key, return_inverse=True)[1].reshape(-1)
    for threshold in (1, 1 << 40):  # every key set split, then never
        saved = lattice_module.PARALLEL_GROUP_ROWS
        lattice_module.PARALLEL_GROUP_ROWS = threshold
        try:
            first, inverse = _group(key)
        finally:
            lattice_module.PARALLEL_GROUP_ROWS = saved
        np.testing.assert_array_equal(inverse, want_inverse)
        assert len(first) == len(np.unique(key))
        np.testing.assert_array_equal(inverse[first], np.arange(len(first)))
