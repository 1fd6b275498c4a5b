"""A Spark result written as a results folder, in one of two layouts
(:data:`neardup.sinks.LAYOUTS`; ``auto`` is ``parts`` here).

``parts`` (the default): each table is written by the executors as part files,
``pairs/part-00007.parquet``, by the local writer's own code (:func:`neardup.sinks.write_part`
in ``mapInArrow``: the same CSV escaping, JSON Lines and Parquet schema and row groups).
Which rows go into which part is a function of the rows alone, never of the session or of
the order in which shuffle blocks arrive (:func:`in_parts`): each table says its order and
a *bucket* column non-decreasing along it (:class:`TableOrder`); one small job counts the
rows of each bucket, and consecutive buckets are joined into parts of at most
:data:`PART_ROWS` rows (a bucket is never split). The rows are hash-partitioned by part
number and sorted inside their partition, and a task writes one file a part it holds, so
the same input gives the same part files and manifest on any cluster. Each task hashes
what it wrote and returns one small row a part (part, rows, bytes, SHA-256), the only
thing the driver collects (:func:`_written_parts`). The tables' jobs run at once
(:class:`_ConcurrentParts`), each into a hidden folder beside the results, its parts
renamed into place. The folder must be on a file system the driver and every executor
see at the same path (local mode: any folder; a cluster: a shared mount), or be a URL
(``s3://``, ``gs://``, ``hf://``): each task then uploads its part through fsspec
beside it (:func:`task_folder`) and the driver publishes the folder once whole.

``single``: the local engine's folder, byte for byte (timings aside), for small runs:
:func:`write_result` hands :func:`neardup.sinks.write_folder` the tables the local engine
would. The small ones are collected whole as Arrow (:func:`_local_table`: in the local
tables' schema, since a Parquet file embeds it); the pairs come a partition at a time
(:func:`_arrow_batches`, about one partition held) and are cut again into the row groups
the writer cuts (:func:`_row_groups`), since a Parquet row group's bytes depend on where
its column chunks end. Everything passes through the driver: its memory bounds the run.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .._core import remote
from ..pairs import too_many_pairs
from ..sinks import PART_ROWS as _LOCAL_PART_ROWS

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    Column = DataFrame = F = None

PART_ROWS = _LOCAL_PART_ROWS  # a part holds at most this many rows, unless one bucket does
BUCKETS = 1 << 12  # the buckets a document number's range is cut into (see key_bucket)
SEGMENT_BUCKETS = 1 << 6  # the same for each index segment's candidates (--against)


@dataclass(frozen=True)
class TableOrder:
    """How a Spark table is cut into parts the same way on every run.

    ``by``: the table's order (names or Columns); ``bucket``: a long column
    non-decreasing along ``by`` (:func:`key_bucket`), of few distinct values, so that its
    per-value counts are small; ``frame``: for a table that lacks a column the order
    needs, its rows with that column too (else None: the table itself; a frame already
    sorted will do, Spark drops a sort under a repartition)."""

    by: tuple
    bucket: Column
    frame: DataFrame | None = None


def key_bucket(column: str, end: int, buckets: int = BUCKETS) -> Column:
    """``column * buckets div end``: a document number in [0, end) to one of ``buckets``
    buckets, in order (integer arithmetic: exact, non-decreasing)."""
    return F.expr(f"`{column}` * {int(buckets)} div {max(1, int(end))}").cast("long")


def cluster_bucket(n: int) -> Column:
    """The clusters table's bucket, along its order (cluster_size descending, label,
    doc): the larger cluster first, then :func:`key_bucket` of the label."""
    return ((F.lit(int(n)) - F.col("cluster_size")).cast("long") * BUCKETS
            + key_bucket("label", n))


def part_cuts(counts: list[tuple[int, int]], rows: int) -> dict[int, int]:
    """Each bucket's part: ``counts`` (bucket, rows) in bucket order, joined greedily into
    parts of at most ``rows`` rows (a part starts where adding the next bucket would pass
    ``rows``; a bucket larger than ``rows`` is a part alone). Depends on the counts only."""
    parts, part, held = {}, 0, 0
    for bucket, count in counts:
        if held and held + count > rows:
            part, held = part + 1, 0
        parts[bucket] = part
        held += count
    return parts


def in_parts(table: DataFrame, order: TableOrder, rows: int | None = None) -> DataFrame:
    """``table`` as ``_part`` + its columns: the rows of part k are the k-th run of its
    ``order`` (:func:`part_cuts` over one small job's per-bucket counts), every part's
    rows in one partition (hash-partitioned by ``_part``), sorted by (``_part``, the
    order) inside it. The same rows give the same parts whatever the session."""
    spark = table.sparkSession
    framed = (table if order.frame is None else order.frame).withColumn("_bucket",
                                                                        order.bucket)
    counts = sorted((int(r[0]), int(r[1])) for r in framed.groupBy("_bucket").count().collect())
    cuts = part_cuts(counts, rows or PART_ROWS)
    parts = max(cuts.values(), default=0) + 1
    mapping = spark.createDataFrame(sorted(cuts.items()) or [(0, 0)],
                                    "_bucket long, _part long")
    width = int(spark.conf.get("spark.sql.shuffle.partitions"))
    return (framed.join(F.broadcast(mapping), "_bucket")
            .repartition(max(1, min(parts, width)), "_part")
            .sortWithinPartitions("_part", *order.by)
            .select("_part", *table.columns))


def part_runs(batches: Iterator[pa.RecordBatch], schema: pa.Schema | None = None,
              column: str = "_part") -> Iterator[tuple[int, Iterator[pa.Table]]]:
    """(part, its tables) for the batches of one task of :func:`in_parts`, parts in
    order: each batch cut where ``column`` changes, the column dropped, cast to
    ``schema`` when given."""

    def slices() -> Iterator[tuple[int, pa.Table]]:
        for batch in batches:
            if not batch.num_rows:
                continue
            table = pa.Table.from_batches([batch])
            part = table.column(column).to_numpy()
            table = table.drop_columns([column])
            if schema is not None:
                table = table.select(schema.names).cast(schema)
            starts = np.concatenate([[0], np.flatnonzero(np.diff(part)) + 1, [part.size]])
            for lo, hi in itertools.pairwise(starts.tolist()):
                yield int(part[lo]), table.slice(lo, hi - lo)

    for part, runs in itertools.groupby(slices(), key=lambda run: run[0]):
        yield part, (table for _, table in runs)

if TYPE_CHECKING:
    from . import SparkFindResult


def write_result(result: SparkFindResult, out_dir: str | os.PathLike, fmt: str = "csv", *,
                 escape_formulas: bool = True, layout: str = "auto") -> dict[str, Path]:
    """The results folder of ``result``: its tables, summary, timings and manifest.

    ``layout`` ``auto`` or ``parts``: each table written by the executors as part files
    (:func:`_parts`), the manifest listing every part with its rows and SHA-256; read in
    order, the parts hold the local engine's rows in its order. ``single``: the folder
    :func:`neardup.sinks.write_result` writes for the same config, byte for byte (timings
    aside), every table collected to the driver (small runs only).

    ``pairs="all"``: above ``max_pairs`` nothing is written (the local message); else the
    pairs' rows are checked against ``counts["pairs"]``. ``pairs="groups"``: set_pairs
    instead. Then identical, clusters, documents, candidates.

    ``out_dir`` a URL (``s3://``, ``gs://``, ...): the executors upload their parts
    through fsspec beside it, the driver writes the rest, and the folder appears under
    the URL only when whole, its manifest last (:class:`neardup._core.remote.StoreFolder`).
    """
    from .. import sinks

    if remote.is_url(out_dir):
        with remote.StoreFolder(os.fspath(out_dir), (sinks.MANIFEST,)) as store:
            written = _write_result(result, store.local_out, fmt, escape_formulas, layout,
                                    store)
        return {name: store.shown(os.fspath(path)) for name, path in written.items()}
    return _write_result(result, out_dir, fmt, escape_formulas, layout)


def _write_result(result: SparkFindResult, out_dir, fmt: str, escape_formulas: bool,
                  layout: str, store=None) -> dict[str, Path]:
    """:func:`write_result` into the local folder ``out_dir``; with ``store``
    (:class:`~neardup._core.remote.StoreFolder`), the executors' parts go to the store."""
    from .. import sinks

    layout = sinks.resolve_layout(layout, "spark")
    config = result.config
    if config.pairs == "all":
        message = too_many_pairs(result.counts, config.max_pairs or None)
        if message is not None:
            raise ValueError(message)
    if fmt not in sinks.OUTPUT_FORMATS:  # checked again by write_folder, here before collecting
        raise ValueError(f"output format must be one of {sinks.OUTPUT_FORMATS}, got {fmt!r}")
    if layout == "parts":
        frames = ({"pairs": (result.pairs_schema, result.counts["pairs"])}
                  if config.pairs == "all" else
                  {"set_pairs": (_local_schema(result.set_pairs), None)})
        for name in ("identical", "clusters", "documents", "candidates"):
            frames[name] = (_local_schema(getattr(result, name)), None)
        # what the driver holds is written there; the documents by document ranges; a
        # table replaced since (or a run against an index) by its order's buckets
        held = {name: how for name, (frame, how) in result.held.items()
                if name in frames and frame is getattr(result, name)}
        ranged = {name: how for name, how in held.items() if isinstance(how, DataFrame)}
        spark_written = {name: (ranged.get(name, getattr(result, name)), result.orders[name],
                                schema) for name, (schema, _) in frames.items()
                         if not isinstance(held.get(name), pa.Table)}
        documents = result.counts.get("documents", 0)
        with _ConcurrentParts(out_dir, spark_written, fmt, escape_formulas,
                              dict.fromkeys(ranged, documents), store) as parts:
            tables = {name: sinks.PartsTable(
                _driver_parts(held[name].cast(schema), fmt, escape_formulas)
                if isinstance(held.get(name), pa.Table) else parts.writer(name),
                schema, expected, local=store is None or isinstance(held.get(name), pa.Table))
                for name, (schema, expected) in frames.items()}
            return sinks.write_folder(out_dir, fmt, tables, result.summary(),
                                      result.seconds, escape_formulas=escape_formulas)
    tables = {}
    if config.pairs == "all":
        schema = result.pairs_schema
        batches = (pa.Table.from_batches([batch]).cast(schema)
                   for batch in _arrow_batches(result.pairs))
        tables["pairs"] = (_row_groups(batches, sinks.ROW_GROUP_ROWS), schema,
                           result.counts["pairs"])
    else:
        table = _local_table(result.set_pairs)
        tables["set_pairs"] = ([table], table.schema, None)
    for name in ("identical", "clusters", "documents", "candidates"):
        table = _local_table(getattr(result, name))
        tables[name] = ([table], table.schema, None)
    return sinks.write_folder(out_dir, fmt, tables, result.summary(), result.seconds,
                              escape_formulas=escape_formulas)


_PART_ROW = pa.schema([("partition", pa.int64()), ("name", pa.string()), ("rows", pa.int64()),
                       ("bytes", pa.int64()), ("sha256", pa.string())])


class _ConcurrentParts:
    """Every table's Spark job started at once, each writing its parts into a folder of its
    own beside ``out_dir`` (hidden, on the same file system), so that the jobs' small
    stages fill the cores together instead of one job after another; a table's
    :class:`neardup.sinks.PartsTable` writer (:meth:`writer`) waits for its job and moves
    the parts it reported into the table's folder (a rename: the bytes and SHA-256 the
    executors computed hold). Used as a context manager: on leaving, every job is waited
    for and the side folders removed, whatever happened. With ``store``
    (:class:`~neardup._core.remote.StoreFolder`), the executors upload the parts to the
    store's side folder instead, and the writer names them to the store, which publishes
    them (and removes its side folder)."""

    def __init__(self, out_dir, frames: dict, fmt: str, escape_formulas: bool,
                 ranges: dict | None = None, store=None):
        from concurrent.futures import ThreadPoolExecutor

        self.store = store
        if store is None:
            out = Path(os.path.abspath(out_dir))
            out.parent.mkdir(parents=True, exist_ok=True)
            self.root = Path(tempfile.mkdtemp(prefix=f".{out.name}.parts-", dir=out.parent))
        self.pool = ThreadPoolExecutor(max_workers=max(1, len(frames)),
                                       thread_name_prefix="neardup-write")
        self.jobs = {}
        for name, (table, order, schema) in frames.items():
            if store is None:
                folder = self.root / name
                folder.mkdir()
            else:
                folder = f"{store.side}/{name}"
            if name in (ranges or {}):  # cut by document ranges: no counting job
                job = self.pool.submit(_written_ranges, table, ranges[name], str(folder),
                                       schema, fmt, escape_formulas)
            else:
                job = self.pool.submit(_written_parts, table, order, str(folder), schema,
                                       fmt, escape_formulas)
            self.jobs[name] = (folder, job)

    def writer(self, name: str):
        def write(folder: Path) -> list[dict]:
            written, job = self.jobs[name]
            entries = job.result()
            for entry in entries:
                if self.store is not None:
                    self.store.add_part(f"{name}/{entry['name']}",
                                        f"{written}/{entry['name']}")
                else:
                    os.replace(written / entry["name"], Path(folder) / entry["name"])
            return entries

        return write

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True)
        if self.store is None:
            shutil.rmtree(self.root, ignore_errors=True)


def _driver_parts(table: pa.Table, fmt: str, escape_formulas: bool):
    """A :class:`neardup.sinks.PartsTable` writer for a table the driver holds: parts of
    :data:`PART_ROWS` rows in row order, by the local part writer (the rows alone decide
    the parts)."""
    from .. import sinks

    def write(folder) -> list[dict]:
        entries = []
        for part, lo in enumerate(range(0, table.num_rows, PART_ROWS)):
            entry = sinks.write_part([table.slice(lo, PART_ROWS)], folder, part, fmt,
                                     schema=table.schema, escape_formulas=escape_formulas)
            if entry is not None:
                entries.append(entry)
        return entries
    return write


def _written_ranges(table: DataFrame, documents: int, folder: str, schema: pa.Schema,
                    fmt: str, escape_formulas: bool) -> list[dict]:
    """``table`` (one row per document, ``doc`` 0..documents-1) written as the parts of
    :data:`PART_ROWS` documents each, part k holding docs [k * PART_ROWS, (k + 1) *
    PART_ROWS): the number of documents cuts them, no job counts rows (one job, one
    shuffle)."""
    rows = PART_ROWS
    parts = max(1, -(-documents // rows))
    width = int(table.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    framed = (table.withColumn("_part", F.expr(f"doc div {int(rows)}").cast("long"))
              .repartition(max(1, min(parts, width)), "_part")
              .sortWithinPartitions("_part", "doc")
              .select("_part", *table.columns))
    return _parts_written(framed, folder, schema, fmt, escape_formulas)


def _written_parts(table: DataFrame, order: TableOrder, folder: str, schema: pa.Schema,
                   fmt: str, escape_formulas: bool) -> list[dict]:
    """``table`` written as ``folder/part-<k>.FMT``, its parts in ``order``
    (:func:`in_parts`), each by the task that holds it; the parts' entries (name, rows,
    bytes, sha256) in part order, which is row order. Only these rows reach the driver."""

    return _parts_written(in_parts(table, order), folder, schema, fmt, escape_formulas)


def _parts_written(framed: DataFrame, folder: str, schema: pa.Schema, fmt: str,
                   escape_formulas: bool) -> list[dict]:
    """The parts of ``framed`` (``_part`` + the table's columns, each part's rows in one
    partition, in order) written by the tasks that hold them; their entries in order."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from neardup import sinks  # the executor's neardup: the same writer code

        attempt = f"task{TaskContext.get().taskAttemptId()}"
        for part, tables in part_runs(batches, schema):
            with task_folder(folder) as local:
                entry = sinks.write_part(tables, local, part, fmt, schema=schema,
                                         escape_formulas=escape_formulas, attempt=attempt)
            if entry is not None:
                yield pa.RecordBatch.from_pylist([{"partition": part, **entry}],
                                                 schema=_PART_ROW)

    rows = framed.mapInArrow(write, "partition long, name string, rows long, "
                                    "bytes long, sha256 string").collect()
    return [{k: row[k] for k in ("name", "rows", "bytes", "sha256")}
            for row in sorted(rows, key=lambda row: row["partition"])]


@contextlib.contextmanager
def task_folder(folder: str) -> Iterator[str]:
    """Where a task writes its part files for ``folder``: the folder itself, or for a URL
    a local temporary folder whose files are uploaded under the URL through fsspec (each
    whole: a store shows an object once its upload is complete), with the executor's
    own credentials (its environment, the backend's configuration), when the block
    ends without an error."""
    if not remote.is_url(folder):
        yield folder
        return
    local = tempfile.mkdtemp(prefix="neardup-part-")
    try:
        yield local
        for name in sorted(os.listdir(local)):
            remote.upload(os.path.join(local, name), f"{folder}/{name}")
    finally:
        shutil.rmtree(local, ignore_errors=True)


def _local_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema of ``df`` as the local engine's tables have it
    (:func:`_local_table`): string, every field nullable, no metadata."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type)
                               else f.type) for f in to_arrow_schema(df.schema)])


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
