"""Arrays between numpy and pyarrow through their buffers, without pyarrow's pandas bridge.

Why: ``pyarrow.array(ndarray or list)`` and ``Array.to_numpy()`` go through pyarrow's pandas
shim, which imports pandas on first use when it is installed (it always is here). That import
is about 48 MiB of resident memory, a sixth of ``privgate anonymize``'s peak on 1M rows,
for a command that never makes a pandas object. The engine's columnar path (read, hash
grouping, write) moves its integer arrays and its lines of text through these functions
instead: the same arrays, zero-copy where pyarrow's own conversion is zero-copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_of", "numpy_of", "text_array"]

#: numpy integer dtypes and their Arrow types (by name: pyarrow is imported on first use).
_ARROW_INTS = {
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
}


def arrow_of(values: np.ndarray) -> pa.Array:
    """A 1-D integer ndarray as an Arrow array of the same type over the same memory (a
    copy only when ``values`` is not contiguous); the array keeps ``values`` alive."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype not in _ARROW_INTS:
        raise TypeError(f"arrow_of: a 1-D integer array, not {values.dtype} of {values.ndim} dims")
    arrow_type = getattr(pa, _ARROW_INTS[values.dtype])()
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def numpy_of(array: pa.Array) -> np.ndarray:
    """An Arrow integer array without nulls as a read-only ndarray view of its buffer (a
    boolean array as ``uint8`` 0/1, copied)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if array.null_count:
        raise ValueError("numpy_of: the array has nulls (fill them first)")
    if pa.types.is_boolean(array.type):  # bits, not bytes
        array = pc.cast(array, pa.uint8())
    if not pa.types.is_integer(array.type):
        raise TypeError(f"numpy_of: an integer array, not {array.type}")
    dtype = np.dtype(str(array.type))  # "int32", "uint8", ...: numpy's names too
    return np.frombuffer(
        array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize
    )


def text_array(texts: Sequence[str]) -> pa.Array:
    """Python strings as an Arrow ``large_string`` array (UTF-8 bytes and int64 offsets)."""
    import pyarrow as pa

    encoded = [text.encode("utf-8") for text in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    data = b"".join(encoded)
    return pa.Array.from_buffers(
        pa.large_string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
