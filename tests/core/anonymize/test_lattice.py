"""The class-table grouping helpers of the lattice search (core/anonymize/_lattice.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.anonymize._lattice import _group_dense


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
