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


class IdColumn(Sequence):
    """Document ids held as one Arrow string array (offsets and UTF-8 bytes, possibly
    memory-mapped), read as a sequence of str: ``ids[d]`` decodes one id, so n ids
    cost their bytes and offsets instead of n Python strings. ``arrow``: the array, or
    a chunked array where the ids' bytes outgrow one array's int32 offsets."""

    def __init__(self, arrow: pa.Array | pa.ChunkedArray):
        self.arrow = arrow

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, d):
        if isinstance(d, slice):
            return self.arrow[d].to_pylist()
        return self.arrow[int(d)].as_py()

    def __iter__(self):
        for lo in range(0, len(self.arrow), 1 << 16):  # a batch of strings at a time
            yield from self.arrow.slice(lo, 1 << 16).to_pylist()

    def to_list(self) -> list[str]:
        return self.arrow.to_pylist()

    def __eq__(self, other) -> bool:  # as a list of the same ids compares
        if isinstance(other, IdColumn):
            return self.arrow.equals(other.arrow)
        if isinstance(other, list | tuple):
            return len(other) == len(self) and self.to_list() == list(other)
        return NotImplemented

    __hash__ = None  # a mutable sequence's rule: equal to a list, so not hashable

    def __repr__(self) -> str:
        return f"IdColumn({len(self):,} ids)"


def id_array(ids: Sequence[str]) -> pa.Array | pa.ChunkedArray:
    """``ids`` as Arrow strings: an :class:`IdColumn`'s own array, else :func:`strings`."""
    return ids.arrow if isinstance(ids, IdColumn) else strings(ids)
