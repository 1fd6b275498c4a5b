"""A Spark result written as the local engine writes it: the same results folder, byte
for byte (timings aside).

:func:`write_result` hands :func:`neardup.sinks.write_folder` the tables the local
engine would. The small ones are collected whole as Arrow (:func:`_local_table`: in the
local tables' schema, since a Parquet file embeds it); the pairs, which can outgrow the
driver, come a partition at a time (:func:`_arrow_batches`, about one partition held)
and are cut again into the row groups the writer cuts (:func:`_row_groups`), since a
Parquet row group's bytes depend on where its column chunks end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from ..pairs import PAIR_SCHEMA, too_many_pairs

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = None

if TYPE_CHECKING:
    from . import SparkFindResult


def write_result(result: SparkFindResult, out_dir: str | os.PathLike, fmt: str = "csv", *,
                 escape_formulas: bool = True) -> dict[str, Path]:
    """The results folder :func:`neardup.sinks.write_result` writes for the same config,
    byte for byte (timings aside), by the same :func:`~neardup.sinks.write_folder`.

    ``pairs="all"``: above ``max_pairs`` nothing is written (the local message); else
    ``pairs.FMT`` streams to disk a partition at a time (:func:`_arrow_batches`), its
    rows checked against ``counts["pairs"]``. ``pairs="groups"``: ``set_pairs.FMT``
    instead. Then identical, clusters, documents, candidates (.FMT), far smaller than the
    pairs, each collected whole; summary, timings and manifest as the local engine's.
    """
    from .. import sinks

    config = result.config
    if config.pairs == "all":
        message = too_many_pairs(result.counts, config.max_pairs or None)
        if message is not None:
            raise ValueError(message)
    if fmt not in sinks.OUTPUT_FORMATS:  # checked again by write_folder, here before collecting
        raise ValueError(f"output format must be one of {sinks.OUTPUT_FORMATS}, got {fmt!r}")
    tables = {}
    if config.pairs == "all":
        batches = (pa.Table.from_batches([batch]).cast(PAIR_SCHEMA)
                   for batch in _arrow_batches(result.pairs))
        tables["pairs"] = (_row_groups(batches, sinks.ROW_GROUP_ROWS), PAIR_SCHEMA,
                           result.counts["pairs"])
    else:
        table = _local_table(result.set_pairs)
        tables["set_pairs"] = ([table], table.schema, None)
    for name in ("identical", "clusters", "documents", "candidates"):
        table = _local_table(getattr(result, name))
        tables[name] = ([table], table.schema, None)
    return sinks.write_folder(out_dir, fmt, tables, result.summary(), result.seconds,
                              escape_formulas=escape_formulas)


def _local_table(df: DataFrame) -> pa.Table:
    """``df`` collected as the local engine builds its tables (:func:`neardup._core.columns.table`):
    string (not large_string), every field nullable, no metadata, one chunk a column;
    Parquet files embed the schema, so it must match for the bytes to."""
    table = _to_arrow(df)
    schema = pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type)
                                 else f.type) for f in table.schema])
    return table.cast(schema).replace_schema_metadata(None).combine_chunks()


def _row_groups(tables: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The rows of ``tables`` again, in tables of ``rows`` rows (the last may hold fewer),
    each column one chunk.

    A Parquet row group's bytes depend on where its column chunks end (pages are cut
    after runs of values counted from each chunk's start), so Spark's small Arrow batches
    are joined into the row groups the writer cuts: the bytes of a whole table's.
    """
    pending: list[pa.Table] = []
    held = 0
    for table in tables:
        pending.append(table)
        held += table.num_rows
        while held >= rows:
            whole = pa.concat_tables(pending)
            yield whole.slice(0, rows).combine_chunks()
            pending, held = [whole.slice(rows)], held - rows
    if held:
        yield pa.concat_tables(pending).combine_chunks()


def _arrow_batches(df: DataFrame) -> Iterator[pa.RecordBatch]:
    """The rows of ``df`` in its order, as Arrow record batches, a partition at a time.

    PySpark has no Arrow ``toLocalIterator``: each partition's batches are serialized
    (Arrow IPC) into binary rows by ``mapInArrow`` and fetched by ``toLocalIterator``,
    which runs one partition at a time in partition order, so the driver holds about
    one partition, not the whole table.
    """

    def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, batch.schema) as writer:
                    writer.write_batch(batch)
                packed = pa.array([sink.getvalue().to_pybytes()], pa.binary())
                yield pa.RecordBatch.from_arrays([packed], names=["ipc"])

    for row in df.mapInArrow(pack, "ipc binary").toLocalIterator():
        yield from pa.ipc.open_stream(row["ipc"])


def _to_arrow(df: DataFrame) -> pa.Table:
    """Collect ``df`` as an Arrow table (``toArrow`` is Spark 4; 3.5 has the private form)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    batches = df._collect_as_arrow()
    if batches:
        return pa.Table.from_batches(batches)
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema).empty_table()  # typed: no rows must still match local
