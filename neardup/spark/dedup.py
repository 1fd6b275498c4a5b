"""``neardup dedup --engine spark``: the inputs minus their near-duplicates, copied by the
executors.

The documents removed are those :func:`neardup.spark.find_sources` does not keep (the
``documents`` table's ``representative``, as locally). The copy of each input is then
written where the input was read:

- **JSON Lines and Parquet files read by the executors**: the file is read again, split
  as the first read split it (:func:`~neardup.spark.read.positioned` gives every row its
  position in the input), the removed records are left out by a join on those positions
  (no record list reaches the driver), and the rest, in position order, is cut into
  parts of at most :data:`COPY_PART_ROWS` records by position alone
  (:func:`~neardup.spark.write.in_parts`: the same parts on every run), each written
  (``part-00000.jsonl``, ...) by the task that holds it. JSON
  Lines parts hold the input's lines byte for byte (blank, malformed and skipped lines
  too, as the local copy keeps them): concatenated in name order they are the local
  engine's copy, byte for byte. Parquet parts hold the kept rows in the input's schema.
  ``out`` is a folder (swapped in whole, as a results folder is) with the parts and
  ``manifest.json`` (each part's rows, bytes and SHA-256; what was written and
  removed); several inputs get a subfolder each, named as the local copies are.
- **Inputs read on the driver** (directories, line files, compressed files, standard
  input): their documents went through the driver already, so the keep flags are
  collected and the local writer (:func:`neardup.sources.copies.write_deduplicated`) writes
  the local engine's copy, in its layout.

What stays follows ``keep`` as locally (:class:`neardup.pipeline.dedup.DedupOutputs`):
the driver computes what happens to each document on an edge with the local function
(:meth:`~neardup.spark.found.Found.outcomes`) and broadcasts it; every other document is
a cluster of one, kept (:func:`outcome_rows`). With ``annotate`` the copy adds the local
copy's fields: a JSON Lines document's line gets them before its closing brace, rendered
by the local functions (:func:`neardup.sources.annotations.json_fields`,
:func:`neardup.sources.lines.annotated_line`), a Parquet part their columns after the
input's (null for a row that is not a document), and the local writer adds them to a
copy made on the driver. The explain file is written on the driver, from the same
outcomes (:meth:`~neardup.spark.found.Found.explain_table`).

``out`` a URL: the executors upload their parts beside it and the driver publishes the
folder, its manifest last (:class:`neardup._core.remote.StoreFolder`); a copy made on
the driver is staged locally and uploaded whole.

CSV/TSV files are read by Spark's CSV parser, which keeps no row's bytes: their copy is
refused before any reading (the local engine copies them; a compressed one is read and
copied on the driver, as above).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._core import remote
from ..sources.annotations import (
    ANNOTATION_COLUMNS,
    ANNOTATION_FIELDS,
    COSINE_COLUMN,
    PREFIX,
    annotation_columns,
)
from ..sources.copies import write_deduplicated
from .read import _ranked, open_bytes, positioned, read_lines
from .write import TableOrder, in_parts, key_bucket, part_runs, task_folder

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = F = None

MANIFEST = "manifest.json"
COPY_PART_ROWS = 1 << 16  # records a part of a copy holds at most (neardup.spark.write)
_PART_ROW = "partition long, name string, rows long, bytes long, sha256 string"


def check_dedup_inputs(paths: Sequence[str], formats: Sequence[str],
                       command: str = "dedup") -> None:
    """ValueError, before any reading, for an input Spark reads but cannot copy;
    ``command``: the run the message names."""
    from .. import sources
    from ..sinks.format import words
    from ..sources.registry import FORMATS

    for path, fmt in zip(paths, formats):
        spark = sources.format_named(fmt).spark
        if (spark is not None and not spark.copies and path != sources.STDIN
                and os.path.isfile(path) and not sources.compression_of(path)):
            copied = words([spec.title for spec in FORMATS if spec.spark and spec.spark.copies])
            raise ValueError(f"{path}: {command} --engine spark copies {copied} "
                             f"files on the executors; Spark's CSV parser keeps no row's "
                             f"bytes, so a {fmt.upper()} copy is the local engine's "
                             f"(--engine local)")


# an outcome row: whether the copy holds the document, and the fields --annotate adds
# (on embeddings, the cosine too: :func:`neardup.sources.annotations.annotation_columns`)
_ANNOTATION_TYPES = {"cluster": "string", "cluster_size": "long", "kept": "boolean",
                     "duplicate_of": "string", "jaccard": "double", COSINE_COLUMN: "double"}
_ARROW_TYPES = {"string": pa.string(), "long": pa.int64(), "boolean": pa.bool_(),
                "double": pa.float64()}


def outcome_schema(cosine: bool = False) -> str:
    """The outcome rows' schema (:func:`outcome_rows`); ``cosine``: a run on embeddings."""
    return "doc long, written boolean, " + ", ".join(
        f"{PREFIX}{name} {_ANNOTATION_TYPES[name]}" for name in annotation_columns(cosine))


OUTCOME_SCHEMA = outcome_schema()
# every annotation field a copy may add, with its Arrow type
ANNOTATION_SCHEMA = pa.schema([(PREFIX + name, _ARROW_TYPES[_ANNOTATION_TYPES[name]])
                               for name in annotation_columns(cosine=True)])


def _fields_in(names) -> list[str]:
    """The annotation fields among ``names``, in their order."""
    return [field for field in ANNOTATION_SCHEMA.names if field in names]


def outcome_rows(documents: DataFrame, on_edges: pa.Table) -> DataFrame:
    """doc, written and the annotation fields (:data:`OUTCOME_SCHEMA`) of every document
    of ``documents`` (doc, id): those of ``on_edges`` (the documents on an edge,
    :meth:`~neardup.spark.found.Found.outcomes`, sorted by doc, broadcast) as the driver
    computed them; every other document is its own cluster, of size 1, kept and
    written, the duplicate of none."""
    table = pa.table({"doc": on_edges.column("doc").cast(pa.int64()),
                      "written": on_edges.column("written"),
                      **{field: on_edges.column(name).cast(ANNOTATION_SCHEMA.field(field).type)
                         for name, field in zip(ANNOTATION_COLUMNS, ANNOTATION_FIELDS)}})
    cosine = COSINE_COLUMN in on_edges.column_names
    if cosine:  # a run on embeddings: the cosine to the document kept, after the rest
        table = table.append_column(PREFIX + COSINE_COLUMN,
                                    on_edges.column(COSINE_COLUMN).cast(pa.float64()))
    held = documents.sparkSession.sparkContext.broadcast(table)
    return documents.select("doc", "id").mapInArrow(_outcome_batches(held),
                                                    outcome_schema(cosine))


def _outcome_batches(held):
    """mapInArrow body of :func:`outcome_rows`."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from .found import on_edges

        table = held.value
        docs = table.column("doc").to_numpy()
        for batch in batches:
            where, at = on_edges(batch, docs)
            n, mask = batch.num_rows, pa.array(where)
            if docs.size:
                taken = table.take(pa.array(at))
            else:  # nothing on an edge: every column of the others' values
                taken = pa.table({name: pa.nulls(n, table.schema.field(name).type)
                                  for name in table.column_names})
            alone = {"written": pa.array(np.ones(n, dtype=bool)),
                     "neardup_cluster": batch.column("id").cast(pa.string()),
                     "neardup_cluster_size": pa.array(np.ones(n, dtype=np.int64)),
                     "neardup_kept": pa.array(np.ones(n, dtype=bool))}
            columns = [batch.column("doc").cast(pa.int64())]
            for name in table.column_names[1:]:
                other = alone.get(name, pa.nulls(n, table.schema.field(name).type))
                columns.append(pc.if_else(mask, taken.column(name).combine_chunks(),
                                          other))
            yield pa.RecordBatch.from_arrays(columns, names=table.column_names)
    return run


def write_copies(read, documents: DataFrame, out: str | os.PathLike, *,
                 edits: DataFrame | None = None, text_field: str = "text",
                 encoding: str = "utf-8", written: str = "representative",
                 annotate: bool = False, command: str = "dedup") -> dict:
    """The dedup copy of what ``read`` (:class:`~neardup.spark.read._Read`) read, minus
    the documents whose ``written`` column in ``documents`` (the result's documents
    table, or :func:`outcome_rows`) is false; returns the local writer's summary:
    written, removed, outputs. ``annotate``: ``documents`` holds the annotation fields
    too (:func:`outcome_rows`), added to every document written. ``command``: the
    command the manifest names as the copy's writer.

    ``edits`` (doc, text): kept documents whose text is replaced in ``text_field``
    (units removed inside them, :mod:`neardup.spark.units`), written as the local
    writer writes an edited record (:func:`neardup.sources.edited_line` for a JSON Lines
    line, the text column's value for a Parquet row); every other record as without."""
    from .. import sources

    fields = _fields_in(documents.columns) if annotate else []
    if read.records is None:  # read on the driver: the local writer, the local layout
        # a URL: written locally and uploaded whole once written
        with remote.Staging(last=(sources.DEDUP_MARKER,)) as staging:
            written_here = _driver_copy(read, documents, staging.output("--out", out),
                                        edits, text_field, written, fields)
            staging.publish()
        return staging.show(written_here)
    processed = read.records.where(F.col("outcome") == "processed")
    removed = (processed.join(documents.where(~F.col(written)).select("doc"), "doc")
               .select("source", "record").persist())
    noted = None if not annotate else (
        processed.select("doc", "source", "record")
        .join(documents.where(F.col(written)).select("doc", *fields), "doc")
        .select("source", "record", *fields))
    edited = None if edits is None else (
        processed.select("doc", "source", "record")
        .join(edits.select("doc", F.col("text").alias("edit")), "doc")
        .select("source", "record", "edit"))
    several = len(read.paths) > 1
    names = [entry["name"] for entry in read.inputs]
    owned = set(names) if several else None
    with _staged(out, lambda name: name == MANIFEST or (
            name in owned if several else name.startswith("part-"))) as (stage, store):
        outputs, files = [], []
        for source, (path, fmt) in enumerate(zip(read.paths, read.formats)):
            folder = stage / names[source] if several else stage
            folder.mkdir(exist_ok=True)
            if store is not None:  # the executors write beside the URL
                folder = f"{store.side}/{names[source]}" if several else store.side
            gone = removed.where(F.col("source") == source).select("record")
            lines = read.records.where(F.col("source") == source)
            total, records = lines.count(), lines.where(F.col("outcome") != "blank").count()
            changed = None if edited is None else (
                edited.where(F.col("source") == source).select("record", "edit"))
            notes = None if noted is None else (
                noted.where(F.col("source") == source).select("record", *fields))
            parts = _copy(read, source, path, fmt, gone, folder, total, changed,
                          text_field, encoding, notes)
            n_removed = gone.count()
            rows = sum(part["rows"] for part in parts)
            if rows != total - n_removed:  # every row of the input is copied or removed
                raise RuntimeError(f"{path}: the copy holds {rows:,} rows where "
                                   f"{total - n_removed:,} were read and kept; the input "
                                   f"changed or was split differently: run again")
            prefix = f"{names[source]}/" if several else ""
            files += [{**part, "name": prefix + part["name"]} for part in parts]
            for part in parts if store is not None else []:
                store.add_part(prefix + part["name"], f"{folder}/{part['name']}")
            outputs.append({"input": sources.printable(path),
                            "output": os.path.join(os.fspath(out), prefix),
                            "format": fmt, "written": records - n_removed,
                            "removed": n_removed, "not_copied": 0})
        removed.unpersist()
        written = {"written": sum(o["written"] for o in outputs),
                   "removed": sum(o["removed"] for o in outputs), "outputs": outputs}
        from .._core.version import VERSION

        with open(stage / MANIFEST, "w", encoding="utf-8") as f:
            json.dump({"written by": f"neardup {command} --engine spark", "neardup": VERSION,
                       **written, "files": files}, f, indent=1)
    return written


def _driver_copy(read, documents: DataFrame, out, edits: DataFrame | None, text_field: str,
                 written: str, fields: list[str]) -> dict:
    """The local writer's copy of inputs read on the driver (:func:`write_copies`)."""

    flags = documents.select("doc", written, *fields).orderBy("doc").toArrow()
    keep = np.asarray(flags.column(written).to_numpy(zero_copy_only=False), dtype=bool)
    if edits is None:
        annotations = None if not fields else pa.table(
            [flags.column(field).cast(ANNOTATION_SCHEMA.field(field).type)
             for field in fields], names=[field.removeprefix(PREFIX) for field in fields])
        return write_deduplicated(read.local_documents, keep, read.paths, out,
                                          annotate=annotations)
    changed = edits.orderBy("doc").toArrow()
    return write_deduplicated(
        read.local_documents, keep, read.paths, out, text_field=text_field,
        edits=dict(zip(changed.column("doc").to_pylist(),
                       changed.column("text").to_pylist(), strict=True)))


@contextlib.contextmanager
def _staged(out, owned) -> Iterator[tuple[Path, object]]:
    """(the local folder the driver writes the copy's folder in, the store or None): a
    local ``out`` staged and swapped in whole (:class:`~neardup.sinks.staging.StagedDirectory`),
    a URL published whole, its manifest last (:class:`~neardup._core.remote.StoreFolder`:
    the executors upload their parts beside it)."""
    from ..sinks.staging import StagedDirectory

    if not remote.is_url(out):
        with StagedDirectory(out, owned, option="--out") as stage:
            yield stage, None
        return
    with remote.StoreFolder(os.fspath(out), (MANIFEST,)) as store:
        os.makedirs(store.local_out)
        yield Path(store.local_out), store


def _copy(read, source: int, path: str, fmt: str, gone: DataFrame, folder: Path,
          total: int, changed: DataFrame | None = None, text_field: str = "text",
          encoding: str = "utf-8", notes: DataFrame | None = None) -> list[dict]:
    """The input ``path`` (``total`` rows) read again, minus the ``gone`` records, with
    the ``changed`` (record, edit) ones' texts replaced or the ``notes`` (record and the
    annotation fields) added, written into ``folder`` as part files by the executors;
    their entries, in order."""
    from ..sources import format_named

    spec = format_named(fmt)
    spark, frame_kind = gone.sparkSession, spec.spark.frame
    if frame_kind == "text":
        read.check_unchanged(source)
        frame = read_lines(spark, path, read.splits[source])  # split as the first read
        with open_bytes(path) as f:  # a last line without "\n" is copied without one
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 1))
            open_end = size > 0 and f.read(1) != b"\n"
        write = _line_parts(str(folder), total - 1 if open_end else None,
                            None if changed is None else (text_field, encoding),
                            spec.copy_suffix, None if notes is None else encoding)
    else:
        import pyarrow.parquet as pq

        frame = spark.read.parquet(path)
        schema = pq.read_schema(path)
        if notes is not None:  # the local copy's columns after the input's
            schema = pa.schema(list(schema) + [ANNOTATION_SCHEMA.field(field) for field
                                               in _fields_in(notes.columns)],
                               metadata=schema.metadata)
        write = _parquet_parts(str(folder), schema)
    kept = (positioned(frame if frame_kind == "text" else _ranked(frame), read.starts, source)
            .join(gone, "record", "left_anti"))
    if notes is not None:  # null for a row that is not a document
        kept = kept.join(notes, "record", "left")
    if changed is not None:
        kept = kept.join(changed, "record", "left")
        # the text column's value replaced, every other as it was; a column of another
        # type (numbers, lists) holds no text a units run reads, so nothing to replace
        if frame_kind == "parquet" and frame.schema[text_field].dataType.typeName() in ("string",
                                                                                 "binary"):
            kept = kept.withColumn(text_field, F.coalesce(F.col("edit"), kept[text_field]))
    order = TableOrder(("record",), key_bucket("record", total))
    rows = in_parts(kept, order, COPY_PART_ROWS).mapInArrow(write, _PART_ROW).collect()
    return [{k: row[k] for k in ("name", "rows", "bytes", "sha256")}
            for row in sorted(rows, key=lambda row: row["partition"])]


def _line_parts(folder: str, last_record: int | None,
                edited: tuple[str, str] | None = None, suffix: str = "",
                annotated: str | None = None):
    """mapInArrow body over :func:`~neardup.spark.write.in_parts`: each part's lines (raw
    bytes, in order) written as ``part-NNNNN.jsonl``, each followed by "\\n" but
    ``last_record``, the input's last line when it has none; ``edited`` (text field,
    encoding): a line whose ``edit`` is not null is written as the local copy writes an
    edited record; ``annotated`` (the encoding): a document's line gets its annotation
    fields as the local copy adds them."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        attempt = TaskContext.get().taskAttemptId()
        for part, tables in part_runs(batches):
            with task_folder(folder) as local:
                entry = _line_part(local, part, attempt, (batch for table in tables
                                                          for batch in table.to_batches()),
                                   last_record, edited, suffix, annotated)
            if entry is not None:
                yield pa.RecordBatch.from_pylist([entry])
    return write


def _line_part(folder: str, part: int, attempt: int, batches: Iterator[pa.RecordBatch],
               last_record: int | None, edited: tuple[str, str] | None,
               suffix: str, annotated: str | None = None) -> dict | None:
    """Part ``part`` of a JSON Lines copy from ``batches`` (see :func:`_line_parts`),
    named with the input format's ``suffix``: its entry, or None, writing nothing, when
    there are no rows."""
    name = f"part-{part:05d}{suffix}"
    temp = os.path.join(folder, f".{name}.task{attempt}-{secrets.token_hex(4)}")
    digest, rows, size = hashlib.sha256(), 0, 0
    try:
        with open(temp, "wb") as f:
            for batch in batches:
                if not batch.num_rows:
                    continue
                raw = batch.column("raw")
                if edited is not None:
                    raw = _edited_lines(batch, raw, *edited)
                if annotated is not None:
                    raw = _annotated_lines(batch, raw, annotated)
                data = _newline_joined(raw)
                if batch.column("record")[batch.num_rows - 1].as_py() == last_record:
                    data = data[:-1]  # the input's last line, left open
                f.write(data)
                digest.update(data)
                rows += batch.num_rows
                size += len(data)
        if not rows:
            os.remove(temp)
            return None
        os.replace(temp, os.path.join(folder, name))
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    return {"partition": part, "name": name, "rows": rows, "bytes": size,
            "sha256": digest.hexdigest()}


def _edited_lines(batch: pa.RecordBatch, raw: pa.Array, text_field: str,
                  encoding: str) -> pa.Array:
    """``raw`` with each line whose ``edit`` is not null written again around that text
    (:func:`neardup.sources.edited_line`; its line break, added back here, taken off)."""
    from neardup.sources import edited_line

    edits = batch.column("edit")
    where = np.flatnonzero(edits.is_valid().to_numpy(zero_copy_only=False))
    if not where.size:
        return raw
    lines = raw.to_pylist()
    records = batch.column("record").to_pylist()
    texts = edits.to_pylist()
    for k in where.tolist():  # one json.dumps an edited record, as the local writer does
        lines[k] = edited_line(lines[k] + b"\n", records[k], texts[k], text_field, "jsonl",
                               encoding)[:-1]
    return pa.array(lines, pa.binary())


def _annotated_lines(batch: pa.RecordBatch, raw: pa.Array, encoding: str) -> pa.Array:
    """``raw`` with each document's line (its annotation fields not null) given them as
    the local copy gives them (:func:`neardup.sources.lines.annotated_line`)."""
    from neardup.sources.annotations import json_fields
    from neardup.sources.lines import annotated_line

    names = _fields_in(batch.schema.names)
    where = np.flatnonzero(batch.column(ANNOTATION_FIELDS[0]).is_valid()
                           .to_numpy(zero_copy_only=False))
    if not where.size:
        return raw
    at = pa.array(where)
    fields = json_fields(names, [batch.column(field).take(at).to_pylist() for field in names])
    lines = raw.to_pylist()
    for k, added in zip(where.tolist(), fields):  # the line's ending added back, taken off
        lines[k] = annotated_line(lines[k] + b"\n", added, encoding)[:-1]
    return pa.array(lines, pa.binary())


def _newline_joined(raw: pa.Array) -> bytes:
    """The values of a binary array, each followed by "\\n", as one bytes object."""
    raw = raw.cast(pa.binary())
    offsets = np.frombuffer(raw.buffers()[1], dtype=np.int32)[raw.offset:raw.offset
                                                               + len(raw) + 1]
    data = np.frombuffer(raw.buffers()[2], dtype=np.uint8) if raw.buffers()[2] else \
        np.empty(0, dtype=np.uint8)
    n = len(raw)
    out = np.empty(int(offsets[-1] - offsets[0]) + n, dtype=np.uint8)
    newline = offsets[1:] - offsets[0] + np.arange(n)
    byte = np.ones(out.size, dtype=bool)
    byte[newline] = False
    out[byte] = data[offsets[0]:offsets[-1]]
    out[newline] = 10
    return out.tobytes()


def _parquet_parts(folder: str, schema: pa.Schema):
    """mapInArrow body over :func:`~neardup.spark.write.in_parts`: each part's kept rows
    written as ``part-NNNNN.parquet`` in the input's schema (the writer of a results
    part)."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from neardup import sinks

        attempt = f"task{TaskContext.get().taskAttemptId()}"
        for part, tables in part_runs(batches, schema):
            with task_folder(folder) as local:
                entry = sinks.write_part(tables, local, part, "parquet", schema=schema,
                                         attempt=attempt)
            if entry is not None:
                yield pa.RecordBatch.from_pylist([{"partition": part, **entry}])
    return write
