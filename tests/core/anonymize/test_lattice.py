"""The class-table grouping helpers of the lattice search (core/anonymize/_lattice.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import privgate.core.anonymize._lattice as lattice_module
import privgate.core.encoding as encoding_module
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
    st.sampled_from(["uniform", "skewed", "one key", "wide", "halves"]),
    st.integers(0, 2**32 - 1),
)
def test_grouping_split_at_a_pivot_is_np_unique(rows, space, dtype, shape, seed):
    """The grouping of large keys, sorted as two halves of their value range on two threads
    and, for int32 keys, by two 16-bit radix passes: np.unique's groups (each row's rank among
    the sorted distinct keys) and a row of each group as its representative, as the serial
    sort gives; with most rows on one key (the pivot drawn on it), with a single key (an
    empty side), with keys up to 2**31 - 1 and with keys sharing one 16-bit half."""
    rng = np.random.default_rng(seed)
    if shape == "wide":  # a few distinct keys spread over the whole int32 range
        key = rng.choice(rng.integers(0, 2**31, max(1, space // 50)), rows)
    elif shape == "halves":  # keys equal in one 16-bit half, apart in the other
        high = rng.integers(0, 2**15 - 4) + rng.integers(0, 4, rows)  # neighbouring highs
        key = high * 2**16 + rng.integers(0, 3, rows)
    elif shape == "uniform":
        key = rng.integers(0, space, rows)
    elif shape == "skewed":  # most rows at the low end: the sampled median is that key
        key = np.where(rng.random(rows) < 0.8, 0, rng.integers(0, space, rows))
    else:
        key = np.full(rows, space - 1)
    key = key.astype(dtype)
    want_inverse = np.unique(key, return_inverse=True)[1].reshape(-1)
    for split, radix in [(1, 1), (1, 1 << 40), (1 << 40, 1), (1 << 40, 1 << 40)]:
        saved = lattice_module.PARALLEL_GROUP_ROWS, encoding_module.RADIX_ROWS
        lattice_module.PARALLEL_GROUP_ROWS, encoding_module.RADIX_ROWS = split, radix
        try:
            first, inverse = _group(key)
        finally:
            lattice_module.PARALLEL_GROUP_ROWS, encoding_module.RADIX_ROWS = saved
        np.testing.assert_array_equal(inverse, want_inverse)
        assert len(first) == len(np.unique(key))
        np.testing.assert_array_equal(inverse[first], np.arange(len(first)))
