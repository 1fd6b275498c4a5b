"""Parquet: a record is a row; the dedup copy is the table minus the removed rows.

Rows are read a batch of ``PARQUET_BATCH_ROWS`` at a time, only the columns asked for;
one missing from the schema is a ValueError before any row is read. A row's text is its
text columns joined by "\\n" (binary columns decoded in the input's encoding), its id the
``id_field`` value, else the row number. A null text is skipped ("null text"), a null
id fails its row; a string value whose bytes are not UTF-8 (Parquet does not check)
costs its row only. Parquet compresses its own columns: it is never read from, or
written to, a compressed stream.

The dedup copy (:func:`_write_parquet`) is the input read again as an Arrow table and
filtered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from .._core import remote
from .documents import InputSource, _ReadContext, as_text, text_not_strings
from .format import Format, RecordCount, SparkReader

PARQUET_BATCH_ROWS = 8192


def _parquet_file(src: InputSource):
    import pyarrow as pa

    if src.data is not None:
        return pa.BufferReader(src.data)
    return remote.open_input(src.given) if remote.is_url(src.given) else src.given


def _read_parquet_table(src: InputSource, columns: list[str] | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(_parquet_file(src), columns=columns)
    except (pa.ArrowInvalid, OSError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{src.display}: cannot read as Parquet: {err}") from err


def _read_parquet(ctx: _ReadContext) -> Iterator[None]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(_parquet_file(ctx.src))
    except Exception as err:
        raise ValueError(f"{ctx.src.display}: cannot read as Parquet: {err}") from err
    yield from read_batches(
        ctx, parquet.schema_arrow.names, "Parquet",
        lambda columns: parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns))


def read_batches(ctx: _ReadContext, schema_names: list[str], what: str,
                 batches_of: Callable[[list[str]], Iterator]) -> Iterator[None]:
    """The rows of a table read a batch at a time (Parquet, Arrow IPC), each row a record:
    ``schema_names`` are its columns (one asked for and missing, or named twice, is a
    ValueError before any row is read), ``batches_of(columns)`` gives its batches of those
    columns only, ``what`` names the format in an error."""
    import pyarrow as pa

    report, display = ctx.report, ctx.src.display
    wanted = (ctx.text_fields + ([ctx.id_field] if ctx.id_field is not None else [])
              + ctx.extra_fields)
    for name in wanted:
        if name not in schema_names:
            raise ValueError(f"{display}: no column {name!r}; the columns are {schema_names}")
        if schema_names.count(name) > 1:  # which one holds the text would be a guess
            raise ValueError(f"{display}: the schema names column {name!r} "
                             f"{schema_names.count(name)} times; rename all but one")
    to_text = _parquet_value_decoder(ctx)
    batches = batches_of(list(dict.fromkeys(wanted)))
    record = 0
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowInvalid, OSError) as err:
            raise ValueError(f"{display}: cannot read as {what}: {err}") from err
        if batch is None:
            return
        text_columns = [column_values(batch.column(name)) for name in ctx.text_fields]
        ids = column_values(batch.column(ctx.id_field)) if ctx.id_field is not None else None
        extra_columns = [column_values(batch.column(name)) for name in ctx.extra_fields]
        for row in range(batch.num_rows):
            yield
            report.records_seen += 1
            location = f"row {record + 1}"
            values = [column[row] for column in text_columns]
            doc_id = ids[row] if ids is not None else None
            record += 1
            if any(v is None for v in values):
                report._skip(display, location, "null text")
                continue
            if ctx.text_strings and (wrong := text_not_strings(ctx.text_fields,
                                                               values)) is not None:
                report._skip(display, location, wrong)
                continue
            if ids is not None and doc_id is None:
                report._fail(display, location, f"null id in column {ctx.id_field!r}")
                continue
            try:
                text = "\n".join(to_text(v) for v in values)
                doc_id = to_text(doc_id) if ids is not None else f"{ctx.id_prefix}{record}"
            except UnicodeDecodeError:
                report._skip(display, location, ctx.not_decodable)
                continue
            ctx.add_row(record - 1, doc_id, text, location, record,
                        [column[row] for column in extra_columns])


def column_values(column) -> list:
    """A batch column as Python values; a string column holding bytes that are not
    UTF-8 (Parquet does not check) gives its values with those bytes escaped as
    lone surrogates, so the bad values alone are skipped."""
    try:
        return column.to_pylist()
    except UnicodeDecodeError:
        import pyarrow as pa

        as_bytes = pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()
        return [None if value is None else value.decode("utf-8", "surrogateescape")
                for value in column.cast(as_bytes).to_pylist()]


def _parquet_value_decoder(ctx: _ReadContext) -> Callable[[object], str]:
    def to_text(value) -> str:
        if isinstance(value, bytes):  # binary columns hold encoded text
            return value.decode(ctx.codec)
        return as_text(value)

    return to_text


def _write_parquet(src: InputSource, removed: set[int], out,
                   edits: dict[int, str] | None = None,
                   text_field: str = "text", annotations=None) -> tuple[int, int]:
    """The table minus the removed rows; ``edits`` (row -> new text) set in
    ``text_field``, every other value as it was. ``annotations`` (a
    :class:`~neardup.sources.annotations.RecordAnnotations`): columns added after the
    last (null for a row that is not a document)."""
    import pyarrow.parquet as pq

    kept = copied_table(_read_parquet_table(src), src, removed, edits, text_field, annotations)
    pq.write_table(kept, out)
    return kept.num_rows, 0


def copied_table(table, src: InputSource, removed: set[int],
                 edits: dict[int, str] | None = None, text_field: str = "text",
                 annotations=None):
    """What a table's dedup copy holds (Parquet, Arrow IPC): ``table`` minus the removed
    rows, ``edits`` set in ``text_field`` and ``annotations``' columns added after the
    last (see :func:`_write_parquet`)."""
    import pyarrow as pa

    from .._core import columns

    if edits:
        k = table.schema.get_field_index(text_field)
        values = table.column(k).to_pylist()
        for row, text in edits.items():
            values[row] = text
        field = table.schema.field(k)
        table = table.set_column(k, field, pa.array(values, field.type))
    if annotations is not None:
        annotations.check_names(table.column_names, src.display)
        for name, column in zip(annotations.names, annotations.columns(table.num_rows)):
            table = table.append_column(name, column)
    mask = np.ones(table.num_rows, dtype=bool)
    mask[np.fromiter(removed, dtype=np.int64, count=len(removed))] = False
    return table.filter(columns.numbers(mask))


def count_rows(path: str) -> RecordCount | None:
    """The rows the file's footer counts; None where it cannot be read (the reader says
    why)."""
    try:
        import pyarrow.parquet as pq

        return RecordCount(pq.read_metadata(remote.open_input(path) if remote.is_url(path)
                                            else path).num_rows, "Parquet row counts")
    except Exception:  # unreadable here: the reader says why
        return None


def check_annotations(path: str, added: Sequence[str], shown: str) -> None:
    """``dedup --annotate``: ValueError where the schema already has a column of an
    ``added`` name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .annotations import refuse_collisions

    try:
        names = pq.read_schema(path).names
    except (pa.ArrowInvalid, OSError):
        return  # read (and refused) as Parquet by the run
    refuse_collisions(names, added, shown)


def read_column(src: InputSource, column: str):
    """``column`` of every row of a Parquet input, as one Arrow (chunked) array."""
    import pyarrow.parquet as pq

    names = pq.ParquetFile(_parquet_file(src)).schema_arrow.names
    if column not in names:
        raise ValueError(f"{src.display}: no column {column!r}; the columns are {names}")
    return _read_parquet_table(src, [column]).column(column)


FORMAT = Format(
    name="parquet", title="Parquet", described="a Parquet file", suffixes=(".parquet", ".pq"),
    read=_read_parquet, copy=_write_parquet, annotates=True,
    check_annotations=check_annotations, self_compressed="Parquet compresses its own columns",
    record_unit="row", count=count_rows,
    spark=SparkReader("parquet", "neardup.spark.read:_parquet_records", copies=True),
    read_column=read_column,
)
