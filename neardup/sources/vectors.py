"""Embeddings the user brings, one vector per record, aligned with the documents read.

Where the vectors come from (``embeddings``):

- a column of the records: in Parquet and Arrow IPC files and in data in memory
  (a pyarrow Table, a pandas DataFrame whose column holds numpy arrays or lists, a
  polars DataFrame), read through Arrow as a fixed-size list or a list of float16,
  float32 or float64 (integers are taken as floats); in other formats (JSON Lines,
  CSV) the field's value, a list of numbers, read with the record;
- a ``.npy`` file beside the records (a path ending in ``.npy``): a 2-D array whose row
  i is record i of the one input (the records as read, skipped ones included);
- in the library, a 2-D numpy array, row i for record i.

A record's vector is set aside, with its reason (:data:`neardup.cosine.REASONS`), when
it is null (:data:`~neardup.cosine.NO_VECTOR`) or its length is not the vectors' length
(:data:`~neardup.cosine.WRONG_LENGTH`; the length is the one most vectors have, the
smallest on a tie). NaN, infinities and zero norms are found when the vectors are
normalised (:func:`neardup.cosine.normalise`).
"""

from __future__ import annotations

import os

import numpy as np

from ..cosine import NO_VECTOR, WRONG_LENGTH
from .documents import Documents

NPY_SUFFIX = ".npy"


def is_npy(embeddings) -> bool:
    """True for a ``.npy`` path (vectors in a file beside the records)."""
    return isinstance(embeddings, (str, os.PathLike)) and \
        os.fspath(embeddings).lower().endswith(NPY_SUFFIX)


def field_name(embeddings) -> str | None:
    """The column to read with the records (None for an array or a .npy file)."""
    if embeddings is None or isinstance(embeddings, np.ndarray) or is_npy(embeddings):
        return None
    return str(embeddings)


def from_arrow(column) -> tuple[np.ndarray, np.ndarray]:
    """(vectors (rows, d) float32 or float64, reasons object[rows]) of an Arrow column of
    lists (fixed-size or not) of numbers; a null element inside a list is NaN. When every
    row has a vector of the common length the vectors may be Arrow's buffer, read-only."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = (column.combine_chunks() if column.num_chunks != 1 else column.chunk(0))
    kind = column.type
    dtype = _value_dtype(kind)
    rows = len(column)
    reasons = np.full(rows, "", dtype=object)
    valid = ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    reasons[~valid] = NO_VECTOR
    if pa.types.is_fixed_size_list(kind):
        lengths = np.full(rows, kind.list_size, dtype=np.int64)
    else:
        lengths = np.asarray(pc.fill_null(pc.list_value_length(column), 0)
                             .to_numpy(zero_copy_only=False), dtype=np.int64)
    present = lengths[valid]
    if present.size == 0:
        return np.zeros((rows, 0), dtype=dtype), reasons
    counts = np.bincount(present)
    d = int(np.argmax(counts))  # the most common length (the smallest on a tie)
    wrong = valid & (lengths != d)
    reasons[wrong] = WRONG_LENGTH
    good = valid & ~wrong
    if good.all():  # the column's values as they are (read-only where Arrow's): no copy
        values = pc.list_flatten(column).cast(pa.from_numpy_dtype(dtype))
        flat = values.fill_null(np.nan).to_numpy(zero_copy_only=False)
        return flat.reshape(rows, d), reasons
    vectors = np.zeros((rows, d), dtype=dtype)
    if good.any():
        picked = column.filter(pa.array(good))
        values = pc.list_flatten(picked).cast(pa.from_numpy_dtype(dtype))
        flat = values.fill_null(np.nan).to_numpy(zero_copy_only=False)
        vectors[good] = flat.reshape(-1, d)
    return vectors, reasons


def from_values(values) -> tuple[np.ndarray, np.ndarray]:
    """:func:`from_arrow` of a field's values read with the records (lists of numbers,
    or None): one per document."""
    return from_arrow(values_column(values))


def values_column(values):
    """A field's values (lists of numbers, or None) as an Arrow column of lists."""
    import pyarrow as pa

    try:
        column = pa.array([None if v is None else list(v) for v in values])
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
        raise ValueError(f"embeddings: a value is not a list of numbers: {err}") from err
    if pa.types.is_null(column.type):
        column = column.cast(pa.list_(pa.float64()))
    return column


def by_length(column) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """(lengths int64[rows], {length: its rows' vectors (k, length)}) of an Arrow column
    of lists, the values as :func:`from_arrow` reads them (float64 for float64 or
    integers, else float32; a null element NaN); a null row has length -1. A run under
    a memory limit reads its vectors so, a chunk at a time, before the length they must
    have is known."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = (column.combine_chunks() if column.num_chunks != 1 else column.chunk(0))
    dtype = _value_dtype(column.type)
    lengths = lengths_of(column)
    valid = lengths >= 0
    groups = {}
    for length in np.unique(lengths[valid]).tolist():
        picked = column.filter(pa.array(lengths == length))
        values = pc.list_flatten(picked).cast(pa.from_numpy_dtype(dtype))
        flat = values.fill_null(np.nan).to_numpy(zero_copy_only=False)
        groups[length] = flat.reshape(-1, length) if length else np.zeros((len(picked), 0),
                                                                          dtype=dtype)
    return lengths, groups


def lengths_of(column) -> np.ndarray:
    """int64[rows]: the length of each list of an Arrow column of lists of numbers, -1
    for a null row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    _value_dtype(column.type)
    valid = ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_fixed_size_list(column.type):
        lengths = np.full(len(column), column.type.list_size, dtype=np.int64)
    else:
        lengths = np.asarray(pc.fill_null(pc.list_value_length(column), 0)
                             .to_numpy(zero_copy_only=False), dtype=np.int64)
    lengths[~valid] = -1
    return lengths


def _value_dtype(kind):
    """The numpy dtype :func:`from_arrow` reads a list type's values as; a type that is
    not a list of numbers is a ValueError."""
    import pyarrow as pa

    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind)):
        raise ValueError(f"embeddings: the column holds {kind}, not lists of numbers "
                         f"(fixed-size lists or lists of float16/32/64)")
    value_type = kind.value_type
    if not (pa.types.is_floating(value_type) or pa.types.is_integer(value_type)):
        raise ValueError(f"embeddings: the lists hold {value_type}, not numbers")
    return np.float64 if pa.types.is_float64(value_type) or \
        pa.types.is_integer(value_type) else np.float32


def from_array(array, records: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """A 2-D array of ``records`` rows (row i: record i) and no reasons yet; another
    shape is a ValueError naming ``what`` (the .npy file, or "the array")."""
    array = np.asarray(array)
    if array.ndim != 2:
        raise ValueError(f"embeddings: {what} has shape {array.shape}; it must be 2-D "
                         f"(one row per record)")
    if array.shape[0] != records:
        raise ValueError(f"embeddings: {what} has {array.shape[0]:,} rows but the input "
                         f"has {records:,} records (row i is record i)")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"embeddings: {what} holds {array.dtype}, not numbers")
    return array, np.full(records, "", dtype=object)


def read_npy(path, records: int) -> tuple[np.ndarray, np.ndarray]:
    """The vectors of a ``.npy`` file (memory-mapped), checked by :func:`from_array`."""
    try:
        array = np.load(os.fspath(path), mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise
    except ValueError as err:
        raise ValueError(f"embeddings: {path} is not a numpy array file: {err}") from err
    return from_array(array, records, os.fspath(path))


def read_column(src, column: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`from_arrow` of ``column`` of an input whose format reads columns whole
    (its ``Format.read_column``: Parquet, Arrow IPC)."""
    from .registry import find_format

    spec = find_format(src.fmt)
    if spec is None or spec.read_column is None:
        raise ValueError(f"embeddings: {src.display} is {src.fmt}; its vectors are read "
                         f"with its records")
    try:
        return from_arrow(spec.read_column(src, column))
    except ValueError as err:
        raise ValueError(f"embeddings: {err}") from err


def for_documents(per_input: list[tuple[np.ndarray, np.ndarray]], documents: Documents
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(vectors (n, d), reasons object[n]) of the documents, from each input's vectors by
    record (``documents.source``, ``documents.record``); inputs whose lengths differ
    make the shorter ones' vectors :data:`~neardup.cosine.WRONG_LENGTH`."""
    n = len(documents.ids)
    if not per_input:
        return np.zeros((n, 0)), np.full(n, NO_VECTOR, dtype=object)
    if len(per_input) == 1 and per_input[0][0].shape[0] == n \
            and np.array_equal(documents.record, np.arange(n)):
        return per_input[0]  # document d is record d: the vectors as read, not a copy
    dims = [v.shape[1] for v, _ in per_input]
    d = max(set(dims), key=lambda x: (sum(1 for y in dims if y == x), -x))
    dtype = np.result_type(*[v.dtype for v, _ in per_input], np.float32)
    vectors = np.zeros((n, d), dtype=dtype)
    reasons = np.full(n, "", dtype=object)
    for k, (v, r) in enumerate(per_input):
        docs = np.flatnonzero(documents.source == k)
        rows = documents.record[docs]
        if v.shape[1] != d:
            reasons[docs] = np.where(r[rows] == "", WRONG_LENGTH, r[rows])
            continue
        vectors[docs] = v[rows]
        reasons[docs] = r[rows]
    return vectors, reasons


def read_with_records(embeddings, paths, fmt: str) -> str | None:
    """The field to read with the records for ``embeddings``: its column where an input
    is not a Parquet or Arrow IPC file (JSON Lines, CSV: a list per record), else None
    (those columns are read whole afterwards, :func:`of_documents`)."""
    from . import resolve_format
    from .registry import find_format

    field = field_name(embeddings)
    if field is None:
        return None
    formats = [find_format(resolve_format(os.fspath(p), fmt)) for p in paths]
    if all(spec is not None and spec.read_column is not None for spec in formats):
        return None
    return field


def of_documents(embeddings, documents: Documents, records: int, *, table=None,
                 fields: dict | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """(vectors (n, d), reasons object[n], what the counts name as their source) of the
    ``documents`` read from ``records`` records: from a ``.npy`` file or an array (row i:
    record i; one input only), from the column of ``table`` (data in memory), from the
    field read with the records (``fields``), or from each Parquet or Arrow input's
    column."""
    if isinstance(embeddings, np.ndarray) or is_npy(embeddings):
        if len(documents.inputs) > 1:
            raise ValueError(f"embeddings: an array's row i is record i of one input; "
                             f"{len(documents.inputs)} inputs were given (give a column "
                             f"instead, or one input)")
        if isinstance(embeddings, np.ndarray):
            rows = from_array(embeddings, records, "the array")
            shown = f"an array of shape {embeddings.shape}"
        else:
            rows = read_npy(embeddings, records)
            shown = os.fspath(embeddings)
        return (*for_documents([rows], documents), shown)
    column = str(embeddings)
    if table is not None:
        if column not in table.column_names:
            raise ValueError(f"embeddings: no column {column!r}; the columns are "
                             f"{table.column_names}")
        return (*for_documents([from_arrow(table.column(column))], documents),
                f"column {column}")
    if fields is not None and column in fields:
        vectors, reasons = from_values(fields[column])
        return vectors, reasons, f"field {column}"
    per_input = [read_column(src, column) for src in documents.inputs]
    return (*for_documents(per_input, documents), f"column {column}")
