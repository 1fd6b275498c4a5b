"""Arrow IPC files (``.arrow``, ``.feather``): a record is a row; the dedup copy is the
table minus the removed rows, in the input's own IPC layout.

Both layouts are read: the file layout (Feather v2, ``pyarrow.ipc.new_file``) and the
stream layout (``pyarrow.ipc.new_stream``; the ``.arrow`` files a Hugging Face dataset's
``save_to_disk`` writes). A file is memory-mapped and read a batch of
``PARQUET_BATCH_ROWS`` rows at a time, only the columns asked for, as Parquet is: the
same rules for text, ids, nulls and bytes that are not UTF-8
(:func:`neardup.sources.parquet.read_batches`). Arrow compresses its own buffers (when
asked to), so an input is never read from, or its copy written to, a compressed stream.

The dedup copy is the input read again minus the removed rows, in the input's layout
and batches (a batch that loses no row is written as it was read: a copy that removes
nothing is the input's bytes; a compressed Feather file's copy is written uncompressed),
the schema and its metadata kept; edited and annotated as
Parquet's copy is (:func:`neardup.sources.parquet.copied_table`). The Spark engine reads
it on the driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .documents import InputSource, _ReadContext
from .format import Format, RecordCount
from .parquet import PARQUET_BATCH_ROWS, copied_table, read_batches

FILE_MAGIC = b"ARROW1"  # the file layout begins (and ends) with it; a stream does not


def _open(src: InputSource):
    """(reader, whether the input has the file layout): the input memory-mapped, or its
    bytes (standard input, a pipe)."""
    import pyarrow as pa

    source = pa.BufferReader(src.data) if src.data is not None else pa.memory_map(src.given)
    is_file = source.read(len(FILE_MAGIC)) == FILE_MAGIC
    source.seek(0)
    try:
        return (pa.ipc.open_file(source) if is_file else pa.ipc.open_stream(source)), is_file
    except (pa.ArrowInvalid, OSError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{src.display}: cannot read as Arrow IPC: {err}") from err


def _batches(reader, is_file: bool) -> Iterator:
    if is_file:
        return (reader.get_batch(k) for k in range(reader.num_record_batches))
    return iter(reader)


def _read_arrow(ctx: _ReadContext) -> Iterator[None]:
    reader, is_file = _open(ctx.src)

    def batches_of(columns: list[str]) -> Iterator:
        for batch in _batches(reader, is_file):
            batch = batch.select(columns)
            for start in range(0, batch.num_rows, PARQUET_BATCH_ROWS):
                yield batch.slice(start, PARQUET_BATCH_ROWS)

    yield from read_batches(ctx, reader.schema.names, "Arrow IPC", batches_of)


def _write_arrow(src: InputSource, removed: set[int], out,
                 edits: dict[int, str] | None = None, text_field: str = "text",
                 annotations=None) -> tuple[int, int]:
    """The table minus the removed rows (``edits``, ``annotations``: as Parquet's copy),
    in the input's layout (file or stream) and batches: a batch that loses no row and
    gains no column is written as it was read, so a copy that removes nothing is the
    input's bytes."""
    import pyarrow as pa

    from .._core import columns

    reader, is_file = _open(src)
    batches = list(_batches(reader, is_file))
    if edits or annotations is not None:
        table = pa.Table.from_batches(batches, reader.schema)
        kept = copied_table(table, src, removed, edits, text_field, annotations)
        schema, batches = kept.schema, kept.to_batches()
    else:
        schema, first, gone = reader.schema, 0, np.sort(np.fromiter(removed, dtype=np.int64))
        for k, batch in enumerate(batches):
            lo, hi = np.searchsorted(gone, [first, first + batch.num_rows])
            if hi > lo:
                mask = np.ones(batch.num_rows, dtype=bool)
                mask[gone[lo:hi] - first] = False
                batches[k] = batch.filter(columns.numbers(mask))
            first += batch.num_rows
    with (pa.ipc.new_file if is_file else pa.ipc.new_stream)(out, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sum(batch.num_rows for batch in batches), 0


def count_rows(path: str) -> RecordCount | None:
    """The rows of every batch, the file memory-mapped (no column is read); None where
    it cannot be read (the reader says why)."""
    try:
        reader, is_file = _open(InputSource(given=path, fmt=FORMAT.name, name="",
                                            encoding=""))
        return RecordCount(sum(batch.num_rows for batch in _batches(reader, is_file)),
                           "Arrow row counts")
    except Exception:  # unreadable here: the reader says why
        return None


def check_annotations(path: str, added: Sequence[str], shown: str) -> None:
    """``dedup --annotate``: ValueError where the schema already has a column of an
    ``added`` name."""
    from .annotations import refuse_collisions

    try:
        reader, _ = _open(InputSource(given=path, fmt=FORMAT.name, name="", encoding=""))
    except (ValueError, OSError):
        return  # read (and refused) as Arrow IPC by the run
    refuse_collisions(reader.schema.names, added, shown)


def read_column(src: InputSource, column: str):
    """``column`` of every row of an Arrow IPC input, as one Arrow chunked array."""
    import pyarrow as pa

    reader, is_file = _open(src)
    if column not in reader.schema.names:
        raise ValueError(f"{src.display}: no column {column!r}; the columns are "
                         f"{reader.schema.names}")
    field = reader.schema.field(column)
    return pa.chunked_array([batch.column(column) for batch in _batches(reader, is_file)],
                            type=field.type)


FORMAT = Format(
    name="arrow", title="Arrow IPC", described="an Arrow IPC file",
    suffixes=(".arrow", ".feather"), read=_read_arrow, copy=_write_arrow, annotates=True,
    check_annotations=check_annotations,
    self_compressed="an Arrow IPC file is read in place, not through a decompressing stream",
    record_unit="row", count=count_rows, read_column=read_column,
)
