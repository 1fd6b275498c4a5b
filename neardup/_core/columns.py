"""numpy columns to Arrow without pyarrow's pandas probe.

``pa.array`` checks its input against pandas types and imports pandas to do so
the first time it runs (about 0.5 s where pandas is installed), more than the
whole pipeline takes on a small corpus. Here numeric and boolean columns are
handed to Arrow as buffers and strings as one UTF-8 buffer with offsets; the
arrays are the ones ``pa.array`` would build.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_MAX_STRING_BYTES = 2**31 - 1  # int32 offsets of pa.string()


def numbers(values: np.ndarray) -> pa.Array:
    """A numeric or boolean numpy array as an Arrow array (no nulls)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), values.size, [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.size,
                                 [None, pa.py_buffer(values)])


def nullable_floats(values: np.ndarray) -> pa.Array:
    """A float numpy array as an Arrow float64 array with NaN as null: a value that was
    not measured (an exact join estimates nothing) is empty in CSV, null in JSON Lines
    and Parquet, rather than the text ``nan``."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    missing = np.isnan(values)
    if not missing.any():
        return numbers(values)
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(pa.float64(), values.size, [valid, pa.py_buffer(values)],
                                 null_count=int(missing.sum()))


def strings(values: Sequence[str]) -> pa.Array:
    """Python strings as an Arrow ``string`` array (no nulls)."""
    encoded = [s.encode("utf-8") for s in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)),
              out=offsets[1:])
    if offsets[-1] > _MAX_STRING_BYTES:
        return pa.array(list(values), pa.string())  # Arrow splits it into chunks
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets.astype(np.int32)),
                                  pa.py_buffer(b"".join(encoded))])


def table(columns: dict) -> pa.Table:
    """A table from numpy arrays (numbers, booleans, or strings as objects or
    unicode), lists of strings and Arrow arrays, in the order given."""
    arrays = []
    for values in columns.values():
        if isinstance(values, pa.Array | pa.ChunkedArray):
            arrays.append(values)
        elif isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
            arrays.append(numbers(values))
        else:
            arrays.append(strings(list(values)))
    return pa.Table.from_arrays(arrays, names=list(columns))
