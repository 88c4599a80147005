"""numpy <-> Arrow through buffers (``privgate.core.arrow_numpy``) and the hash grouping on it:
the arrays pyarrow's own conversion gives, without importing pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from privgate.core.arrow_numpy import arrow_of, numpy_of, text_array
from privgate.core.encoding import hash_factorize


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16])
def test_integer_arrays_round_trip_as_pyarrow_converts_them(dtype):
    values = np.array([3, 0, 7, 1, 7, 2], dtype=dtype)
    arrow = arrow_of(values)
    assert arrow.equals(pa.array(values))
    assert numpy_of(arrow).dtype == np.dtype(dtype)
    np.testing.assert_array_equal(numpy_of(arrow), values)
    # a slice starts at its own offset in the shared buffer
    np.testing.assert_array_equal(numpy_of(arrow.slice(2, 3)), values[2:5])
    # a strided view is copied contiguously
    np.testing.assert_array_equal(numpy_of(arrow_of(values[::2])), values[::2])


def test_booleans_come_back_as_zero_one_bytes():
    flags = pa.array([True, False, True, True, False, False, False, False, True])
    np.testing.assert_array_equal(numpy_of(flags), [1, 0, 1, 1, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(numpy_of(flags.slice(3, 4)), [1, 0, 0, 0])


def test_nulls_floats_and_two_dimensions_are_refused():
    with pytest.raises(ValueError, match="nulls"):
        numpy_of(pa.array([1, None, 3]))
    with pytest.raises(TypeError, match="integer"):
        numpy_of(pa.array([1.5]))
    with pytest.raises(TypeError, match="1-D integer"):
        arrow_of(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(TypeError, match="1-D integer"):
        arrow_of(np.zeros(3))


def test_text_array_is_pyarrows_large_string_array():
    texts = ["Private", "", "Self-emp-not-inc", "é€\n", "a;b"]
    built = text_array(texts)
    assert built.equals(pa.array(texts, pa.large_string()))
    assert text_array([]).equals(pa.array([], pa.large_string()))
    picked = built.take(arrow_of(np.array([4, 0, 0], dtype=np.int32)))
    assert picked.to_pylist() == ["a;b", "Private", "Private"]


@pytest.mark.parametrize("n, distinct", [(0, 1), (1, 1), (1000, 7), (200_000, 150_000)])
def test_hash_factorize_is_pandas_factorize_in_first_appearance_order(n, distinct):
    rng = np.random.default_rng(n)
    universe = rng.integers(-(2**62), 2**62, distinct)
    key = rng.choice(universe, n) if n else np.empty(0, dtype=np.int64)
    ids, uniques = hash_factorize(key)
    expected_ids, expected_uniques = pd.factorize(key, sort=False)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_array_equal(uniques, expected_uniques)
    assert ids.dtype == np.int32 and uniques.dtype == np.int64


def test_the_conversions_import_no_pandas():
    """What the module is for: pyarrow's own ``pa.array(ndarray)`` and ``to_numpy()`` import
    pandas (its pandas shim), these do not."""
    probe = (
        "import sys, numpy as np\n"
        "from privgate.core.arrow_numpy import arrow_of, numpy_of, text_array\n"
        "from privgate.core.encoding import hash_factorize, group_codes\n"
        "a = arrow_of(np.arange(5)); numpy_of(a); text_array(['x', 'y']).take(a.slice(0, 1))\n"
        "hash_factorize(np.array([3, 1, 3]))\n"
        "group_codes([np.array([1, 0, 1]), np.array([2, 2, 0])], [2, 3], 3)\n"
        "ours = 'pandas' in sys.modules\n"
        "import pyarrow as pa; pa.array(np.arange(3))\n"
        "print(ours, 'pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["False", "True"]
