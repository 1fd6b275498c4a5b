"""The Spark readers: inputs read by Spark as the local readers (:mod:`neardup.sources`)
read them, with the same read report.

Against :func:`neardup.sources.read_documents` on the same inputs: the same documents,
ids and numbering (``doc``: the record's position over the inputs; each row's rank in its
partition comes from the JVM (:func:`_ranked`), each processed record's rank among its
partition's from the record body, and one small job over the persisted records turns
them into positions (:func:`_globally`): the input is read once) and the same report
(``ReadReport.as_dict()``: every record read is one of processed, skipped or failed,
checked by :meth:`~neardup.sources.documents.ReadReport.check`; the same reasons and problems),
except where its ``notes`` say otherwise: CSV/TSV as Spark's parser splits it,
repeated ids kept as they are.

Spark reads the formats whose :class:`~neardup.sources.Format` has a ``spark`` reader
(JSON Lines, CSV, TSV and Parquet files): Spark's own reader cuts the file into records
(its ``frame``: lines, CSV rows, Parquet rows) and Python on the executors sorts each
record (processed, skipped or failed, and why) with the local reader's helpers, in the
format's ``mapInArrow`` body (its ``parser``: :func:`_jsonl_records`, :func:`_csv_records`,
:func:`_parquet_records`), one row per record (``_RECORD_SCHEMA``); the report is a few
aggregations over those rows. Given a signer (``find --engine spark``), the same pass
shingles and signs each partition's processed records (:func:`_numbering`), so texts
cross from Python to the JVM and back only once, and are not kept. When an input is
anything else (a directory, a line or JSON file, standard input, a compressed or
non-regular file, or a URL to anything but JSON Lines), the local reader reads them all
on the driver (its report) and hands the documents to Spark. A JSON Lines file at a URL
(``s3://``, ``gs://``, ``hf://``, ``http(s)://``) is read as a local one, each worker
opening its byte range through fsspec with its own credentials (:func:`open_bytes`).

Executors import this module to run the record bodies: :mod:`neardup.sources` is
imported inside the functions that need it.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import mmap
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._core import remote
from .session import _require_spark
from .stages import _SIGNED_COLUMNS, _SIGNED_NAMES
from .worker import settled

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = SparkSession = F = T = None


_BLANK = "blank"  # a blank JSON Lines line: no record, but it counts in the line numbers
_CORRUPT = "_corrupt_record"
SPLIT_BYTES = 64 << 20  # a line file's byte range a task reads at most (:func:`line_splits`)
_UTF8_BOM = b"\xef\xbb\xbf"
_NEWLINE = ord("\n")
# one row per record read: what became of it (processed, skipped, failed) and why
_RECORD_SCHEMA = ("source int, record long, id string, text string, outcome string, "
                  "reason string, object boolean, fields array<string>")
# what the record bodies give once numbered in their partition (:func:`_numbering`): the
# partition and, for a processed record, its rank among the partition's processed ones;
# ``record`` is then the record's rank in its partition, made global by :func:`_globally`
_PART_SCHEMA = ", part int, local_doc long"


def read_sources(spark: SparkSession, inputs: Sequence[str | os.PathLike], *,
                 fmt: str = "auto", text_fields: Sequence[str] = ("text",),
                 id_field: str | None = None, delimiter: str | None = None,
                 **source_options) -> DataFrame:
    """(doc, id, text) for ``inputs``, numbered as :func:`~neardup.sources.read_documents`
    does; :func:`read_documents` also gives the read report."""
    return _read(spark, inputs, fmt=fmt, text_fields=text_fields, id_field=id_field,
                 delimiter=delimiter, **source_options).documents


def read_documents(spark: SparkSession, inputs: Sequence[str | os.PathLike], *,
                   fmt: str = "auto", text_fields: Sequence[str] = ("text",),
                   id_field: str | None = None, delimiter: str | None = None,
                   **source_options) -> tuple[DataFrame, dict]:
    """(doc, id, text) for ``inputs`` and the read report, as
    :func:`~neardup.sources.read_documents` gives them: the same documents, ids and
    numbering, the report's keys (``ReadReport.as_dict()``: records_seen, processed,
    skipped and failed by reason, problems, problems_total) plus ``inputs``, and
    ``notes`` where there is something the Spark readers do not account for.

    JSON Lines: Spark reads the lines (``spark.read.text``, raw bytes, split at "\\n" only);
    each is decoded and parsed by Python's json on the executors, as the local reader
    does: blank lines are not records, a malformed line, a non-object or a record without
    a text field fails, a blank text is skipped, the id is the line number. (Spark's
    JSON reader is not used: it numbers no lines, accepts single quotes and trailing
    text, and makes an array line several rows.) CSV/TSV: Spark's CSV parser
    (multi-line quoted fields; PERMISSIVE with a corrupt-record column, so a row whose
    number of fields differs from the header's fails); see the note it leaves. Parquet:
    Spark reads the rows; nulls, ids and text as the local reader. Directories, line
    files, standard input and non-regular files are read on the driver by the local
    reader (its own report) and handed to Spark. Repeated ids are not renamed (x#2)
    on Spark; a note counts them.
    """
    read = _read(spark, inputs, fmt=fmt, text_fields=text_fields, id_field=id_field,
                 delimiter=delimiter, **source_options)
    return read.documents, read.report()


@dataclass
class _Read:
    documents: DataFrame  # doc, id, text
    records: DataFrame | None  # _RECORD_SCHEMA, persisted; None when read on the driver
    inputs: list[dict]  # path, format, name, prefixed (as the local engine's summary)
    displays: list[str] = field(default_factory=list)  # each input as problems name it
    units: list[str] = field(default_factory=list)  # "line" or "row"
    notes: list[str] = field(default_factory=list)
    max_problems: int = 100
    local_report: dict | None = None  # the driver's ReadReport.as_dict()
    ranked: DataFrame | None = None  # the records as read, persisted (record: partition rank)
    signed: DataFrame | None = None  # doc, id and the sketch columns, when read with a signer
    paths: list[str] = field(default_factory=list)  # the inputs as given
    formats: list[str] = field(default_factory=list)  # each input's resolved format
    # (source, partition) -> the input's rows in its earlier partitions: a record's
    # position in its input is this plus its rank in the partition (:func:`_globally`)
    starts: dict = field(default_factory=dict)
    local_documents: object = None  # the local reader's Documents, when read on the driver
    document_count: int = 0  # the processed records: docs are numbered 0..document_count-1
    # (source, outcome, reason, records, JSON objects) for every record but blank lines,
    # from the numbering's job (:func:`_globally`): the report needs no pass of its own
    outcomes: list = field(default_factory=list)
    # with a signer and ``min_shingles``: usable (at least min_shingles), shingles (theirs)
    # and chars (shingled by characters) over the documents, from the same job
    tally: dict | None = None
    allow_empty: bool = False  # else a read that processed nothing is refused (report())
    encoding: str = "utf-8"
    # source -> the byte ranges a JSON Lines input was read in (:func:`line_splits`), so
    # that a second read (:func:`read_lines`) splits it the same way
    splits: dict = field(default_factory=dict)
    # source -> a line input's version when it was read (_version: size and ETag or mtime)
    versions: dict = field(default_factory=dict)
    # source -> the record body a line input was read with (:func:`_numbering`'s)
    bodies: dict = field(default_factory=dict)
    # every document's doc, id, size, fingerprint, when the driver holds them (a find's:
    # neardup.spark.found.held_columns)
    columns: pa.Table | None = None
    # the full signer, when the pass ran the light one (``signed`` has no shingles and
    # signatures, and source, part, record instead: :meth:`resigned` fills them in)
    signer: object = None

    def resigned(self, table: pa.Table) -> pa.Table:
        """``table`` (rows of ``signed``, a few documents) with its shingles and
        signature filled in: their lines read again from their splits and signed by the
        full signer, in one job; as it is when the pass kept them (``signer`` None)."""
        if self.signer is None or not table.num_rows:
            return table
        source = table.column("source").to_numpy().astype(np.int64)
        part = table.column("part").to_numpy().astype(np.int64)
        key = (source << 32) + part
        splits, where = np.unique(key, return_inverse=True)
        first = np.array([self.starts[int(k) >> 32, int(k) & 0xFFFFFFFF] for k in splits],
                         dtype=np.int64)  # each split's first record in its input
        rank = table.column("record").to_numpy().astype(np.int64) - first[where]
        for index in np.unique(source).tolist():
            self.check_unchanged(index)
        rows = np.arange(table.num_rows)
        wanted = []
        for k, at in enumerate(np.split(np.argsort(where, kind="stable"),
                                        np.cumsum(np.bincount(where))[:-1])):
            order = at[np.argsort(rank[at], kind="stable")]
            wanted.append((int(splits[k]) >> 32, int(splits[k]) & 0xFFFFFFFF, rank[order],
                           rows[order]))
        spark = self.signed.sparkSession
        tasks = min(len(wanted), 2 * max(1, spark.sparkContext.defaultParallelism))
        again = spark.range(len(wanted), numPartitions=tasks).mapInArrow(
            settled(_resigning(self.paths, self.splits, self.bodies, wanted, self.signer)),
            "row long, shingles binary, signature binary").toArrow()
        order = np.argsort(again.column("row").to_numpy(), kind="stable")
        if order.size != table.num_rows:
            raise RuntimeError(f"{order.size} of {table.num_rows} documents were found "
                               f"again in their lines: an input changed since it was read")
        for name in ("shingles", "signature"):
            table = table.set_column(table.schema.get_field_index(name), name,
                                     again.column(name).take(pa.array(order)))
        return table

    def check_unchanged(self, source: int) -> None:
        """RuntimeError where the line input ``source`` changed since it was read (its
        size and ETag, or on a file system its size and modification time), before a
        second read (the dedup copy, a verification's) splits it as the first."""
        path = self.paths[source]
        if source in self.versions and _version(path) != self.versions[source]:
            raise RuntimeError(f"{remote.shown(path)} changed since it was read; read it "
                               f"again")

    def report(self, ids: pa.Array | None = None) -> dict:
        """The ReadReport the local reader would give, from ``records`` (a few jobs); a
        read that processed nothing while records failed is refused as the local
        reader refuses it (:meth:`~neardup.sources.ReadReport.refuse_nothing_processed`),
        unless ``allow_empty``. ``ids``: every document's id, when the driver holds them
        (the repeated ones are counted there, not by a job)."""
        if self.local_report is not None:
            return self.local_report
        from .. import sources

        records = self.records
        routine = sorted(sources.ROUTINE_SKIPS)
        report = sources.ReadReport(max_problems=self.max_problems)
        objects: dict[int, int] = {}
        missing: dict[int, dict[str, int]] = {}
        for source, outcome, reason, n, in_objects in self.outcomes:
            report.records_seen += n
            objects[source] = objects.get(source, 0) + in_objects
            if outcome == "processed":
                report.processed += n
                continue
            kind = report.skipped if outcome == "skipped" else report.failed
            kind[reason] = kind.get(reason, 0) + n
            if not (outcome == "skipped" and reason in routine):
                report.problems_total += n
            if outcome == "failed" and reason.startswith("missing field "):
                missing.setdefault(source, {})[reason] = n
        is_problem = ~F.col("outcome").isin("processed", _BLANK) & ~(
            (F.col("outcome") == "skipped") & F.col("reason").isin(routine))
        listed = (records.where(is_problem).orderBy("source", "record")
                  .select("source", "record", "reason").limit(self.max_problems).collect()
                  if self.max_problems and report.problems_total else [])
        for source, display in enumerate(self.displays):
            first = len(report.problems)
            report.problems += [sources.Problem(display, f"{self.units[source]} {r['record'] + 1}",
                                                r["reason"])
                                for r in listed if r["source"] == source]
            reasons = missing.get(source)
            if reasons and sum(reasons.values()) == objects.get(source, 0):
                # no JSON object has a field asked for: the reasons name the fields they have
                sources.name_the_fields(report, display, reasons,
                                         self._fields_of(source), first)
        report.check()
        if not self.allow_empty:  # as the local reader refuses it, before anything is written
            report.refuse_nothing_processed(
                hint for hint in (sources.format_hint(sources.InputSource(
                    given=path, fmt=fmt, name=path, encoding=self.encoding))
                    for path, fmt in zip(self.paths, self.formats)) if hint)
        out = report.as_dict()
        out["inputs"] = self.inputs
        notes = list(self.notes)
        repeated = (len(ids) - len(pc.unique(ids)) if ids is not None else
                    records.where(F.col("outcome") == "processed").groupBy("id").count()
                    .where(F.col("count") > 1).agg(F.sum(F.col("count") - 1)).first()[0])
        if repeated:
            notes.append(f"{int(repeated):,} documents have an id an earlier document has: the "
                         f"local reader renames them (id#2, id#3, ...) and lists each as a "
                         f"problem; the Spark reader keeps the ids as they are")
        if notes:
            out["notes"] = notes
        return out

    def _fields_of(self, source: int) -> dict[str, None]:
        """The first field names of the records that miss a field, first seen first
        (at most one more than a reason names, so it can say "...")."""
        from ..sources import JSONL_FIELDS_NAMED

        named = (self.records.where((F.col("source") == source)
                                    & F.col("fields").isNotNull())
                 .select("record", F.posexplode("fields").alias("pos", "name"))
                 .groupBy("name").agg(F.min(F.struct("record", "pos")).alias("at"))
                 .orderBy("at").limit(JSONL_FIELDS_NAMED + 1).collect())
        return dict.fromkeys(r["name"] for r in named)

    def release(self) -> None:
        if self.ranked is not None:
            self.ranked.unpersist()


def _read(spark: SparkSession, inputs, *, fmt: str = "auto",
          text_fields: Sequence[str] = ("text",), id_field: str | None = None,
          delimiter: str | None = None, include: Sequence[str] = (),
          exclude: Sequence[str] = (), encoding: str = "utf-8",
          max_problems: int = 100, respect_ignore: bool = True, follow_links: bool = False,
          allow_empty: bool = False, signer=None, min_shingles: int | None = None,
          text_strings: bool = False, text_optional: bool = False,
          light_signer=None) -> _Read:
    """The inputs read as records (one Spark pass over each file, numbered by one small
    job over the persisted records, which also counts the report's outcomes); with
    ``signer`` (:func:`neardup.spark.stages._sign_batches`'s body), each partition's
    processed records are also signed in the same pass and ``signed`` holds them without
    their texts; with ``min_shingles`` too, the same job counts ``tally`` (the documents
    of at least ``min_shingles`` shingles, their shingles, those shingled by characters).
    ``text_strings``: a text field (JSON, Parquet) holding a number, a boolean, a list or
    an object is skipped with its reason, as the local reader's ``text_strings`` skips it
    (a units run writes the text back into the field). ``text_optional``: a JSON object
    without any text field, or every row of a Parquet file without any text column, is
    a document with an empty text, as the local reader's (a run on embeddings alone).
    ``light_signer``: ``signer`` without the shingles and signature (:func:`~neardup.spark.
    stages._signer`'s ``sketches``); where every input is a line file Spark reads in
    splits, the pass runs it, so the persisted rows are a fraction of the size, and
    :meth:`_Read.resigned` signs the few documents the driver verifies again, from their
    lines."""
    from .. import sources

    _require_spark()
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    sources.check_source_options(paths, fmt, text_fields, id_field, delimiter, encoding,
                                 max_problems)
    text_fields = list(text_fields)
    formats = [sources.resolve_format(p, fmt) for p in paths]
    names = sources.unique_names(paths, formats)
    several = len(paths) > 1
    # as the caller named them: summary.json is shared, no absolute path of this machine
    described = [{"path": p, "format": f, "name": n, "prefixed": several}
                 for p, f, n in zip(paths, formats, names)]
    if not all(_read_by_spark(p, f) for p, f in zip(paths, formats)):
        # directories, line files, stdin, compressed files and remote files but JSON
        # Lines: read here, handed to Spark
        documents, report = sources.read_documents(
            paths, fmt=fmt, text_fields=text_fields, id_field=id_field, include=include,
            exclude=exclude, delimiter=delimiter, encoding=encoding, max_problems=max_problems,
            respect_ignore=respect_ignore, follow_links=follow_links, allow_empty=allow_empty,
            text_strings=text_strings)
        rows = list(zip(range(len(documents)), documents.ids, documents.texts))
        local_documents = documents
        local = report.as_dict()
        local["inputs"] = [{"path": os.fspath(src.given), "format": src.fmt,
                            "name": src.name, "prefixed": several} for src in documents.inputs]
        documents = spark.createDataFrame(rows, "doc long, id string, text string")
        read = _Read(documents, None, local["inputs"], local_report=local, paths=paths,
                     formats=formats, local_documents=local_documents,
                     document_count=len(rows))
        if signer is not None:
            read.signed = documents.select("doc", "id", "text").mapInArrow(
                _signed_documents(signer), "doc long, id string, " + _SIGNED_COLUMNS)
        return read

    not_decodable = f"not {sources.encoding_label(encoding)}"
    codec = sources.text_codec(encoding)
    read = _Read(None, None, described, max_problems=max_problems, paths=paths,
                 formats=formats, allow_empty=allow_empty, encoding=encoding)
    record_schema = (_RECORD_SCHEMA + _PART_SCHEMA
                     + ("" if signer is None else ", " + _SIGNED_COLUMNS))
    if light_signer is not None and all(sources.format_named(f).spark.frame == "text"
                                        for f in formats):
        read.signer, signer = signer, light_signer  # the full one signs again (resigned)
    parts = []
    for index, (path, path_fmt, name) in enumerate(zip(paths, formats, names)):
        prefix = f"{sources.printable(name)}:" if several else ""
        read.displays.append(sources.printable(path))
        spec = sources.format_named(path_fmt)
        parser = spark_parser(spec)
        read.units.append(spec.record_unit)
        if spec.spark.frame == "text":
            body = parser(index, encoding, not_decodable, text_fields, id_field, prefix,
                          text_strings, text_optional=text_optional)
            read.versions[index] = _version(path)
            read.splits[index] = splits = line_splits(spark, path)
            read.bodies[index] = body
            parts.append(_in_splits(spark, path, splits, _numbering(body, signer),
                                    record_schema))
            continue
        if spec.spark.frame == "parquet":
            frame, corrupt = spark.read.parquet(path), None
        else:
            sep = delimiter or spec.delimiter
            # ISO-8859-1: one character a byte, so the executors get the bytes back and
            # decode them as the local reader does (undecodable rows skipped, not U+FFFD);
            # the delimiter, quotes and line breaks are ASCII, the same bytes in any
            # ASCII-compatible encoding
            options = dict(header=True, multiLine=True, escape='"', sep=sep,
                           encoding="ISO-8859-1")
            header = spark.read.csv(path, inferSchema=False, enforceSchema=False, **options)
            schema = T.StructType([*header.schema.fields,
                                   T.StructField(_CORRUPT, T.StringType())])
            frame = spark.read.csv(path, schema=schema, mode="PERMISSIVE",
                                   columnNameOfCorruptRecord=_CORRUPT, **options)
            corrupt, width = frame[_CORRUPT], len(header.columns)
        spark_names = [c for c in frame.columns if c != _CORRUPT]
        columns = (spark_names if corrupt is None else
                   [c.encode("latin-1").decode(codec, "surrogateescape") for c in spark_names])
        texts_here = text_fields
        if text_optional and corrupt is None and not set(text_fields) & set(columns):
            texts_here = []  # no text column: each row a document with an empty text
        for column in texts_here + ([id_field] if id_field else []):
            if column not in columns:
                raise ValueError(f"{path}: no column {column!r}; the columns are {columns}")
        spark_name = dict(zip(columns, spark_names))
        selected = frame.select(
            *[frame[spark_name[c]].alias(f"_t{k}") for k, c in enumerate(texts_here)],
            (frame[spark_name[id_field]] if id_field else F.lit(None).cast("string"))
            .alias("_id"),
            *([corrupt.alias("_corrupt")] if corrupt is not None else []))
        if spec.spark.frame == "parquet":
            body = parser(index, codec, not_decodable, texts_here, id_field, prefix,
                          text_strings)
        else:
            body = parser(index, sep, width, len(text_fields), id_field, prefix, encoding,
                          not_decodable)
            if not any("CSV" in note for note in read.notes):
                read.notes.append(_csv_note())
        parts.append(_ranked(selected).mapInArrow(settled(_numbering(body, signer)),
                                                  record_schema))
    ranked = parts[0]
    for part in parts[1:]:
        ranked = ranked.union(part)
    read.ranked = ranked.persist()
    numbering = _globally(
        read.ranked, [f"{sources.printable(n)}:" if several else "" for n in names],
        id_field is None, min_shingles if signer is not None else None)
    read.records, read.starts, read.document_count, read.outcomes, read.tally = numbering
    processed = read.records.where(F.col("outcome") == "processed")
    read.documents = processed.select("doc", "id", "text")
    if signer is not None:
        read.signed = processed.select("doc", "id", *_SIGNED_NAMES,
                                       *(("source", "part", "record")
                                         if read.signer is not None else ()))
    return read


def _read_by_spark(path: str, fmt: str) -> bool:
    """Whether Spark reads ``path`` itself (else the driver does): a regular local file
    of a format with a ``spark`` reader, uncompressed, or a remote one whose records are
    lines (JSON Lines), which the Python workers read through fsspec; Spark's own
    Parquet and CSV readers take no URL it has no Hadoop connector for."""
    from .. import sources

    spark = sources.format_named(fmt).spark
    if spark is None or path == sources.STDIN or sources.compression_of(path):
        return False
    if remote.is_url(path):
        return spark.frame == "text"
    return os.path.isfile(path)


def open_bytes(path: str):
    """The bytes of ``path``, a local file or a URL (through fsspec, with the worker's
    own credentials: its environment and the backend's configuration), seekable."""
    if remote.is_url(path):
        return remote.open_input(path)
    return open(path, "rb")


def _version(path: str) -> tuple:
    """What tells a line input read again from the one read first: (size, ETag or the
    like) of a URL (:func:`neardup._core.remote.stat_token`), (size, modification time)
    of a file, as the local engine's copy checks it."""
    if remote.is_url(path):
        return remote.stat_token(path)
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns)


def file_size(path: str) -> int:
    """The size in bytes of ``path``, a local file or a URL."""
    if remote.is_url(path):
        return int(remote.stat_token(path)[0])
    return os.path.getsize(path)


def spark_parser(spec):
    """The ``mapInArrow`` body a format's :class:`~neardup.sources.format.SparkReader`
    names (``module:function``), imported here: a body for each of its ``frame`` s
    ("text": (raw line, record) batches, "csv": Spark's CSV columns, "parquet": its
    columns), called as this module's three are."""
    import importlib

    module, _, name = spec.spark.parser.partition(":")
    return getattr(importlib.import_module(module), name)


def _csv_note() -> str:
    return ("CSV/TSV read by Spark's CSV parser: a row fails only when its number of fields "
            "differs from the header's; a quote left open (or closed mid-field) is parsed "
            "as Spark parses it, where the local reader fails that row and reads on; text "
            "after a closing quote keeps its quotes (\"x\"y is \"x\"y, locally xy); "
            "problems name the row, not its line")


def line_splits(spark: SparkSession, path: str) -> list[tuple[int, int]]:
    """The byte ranges [start, end) a line file is read in, one task each: at most
    :data:`SPLIT_BYTES` and ``spark.sql.files.maxPartitionBytes``, and no fewer than
    Spark's own file reader would cut (a core's share of the file, at least
    ``spark.sql.files.openCostInBytes``); past one range, a multiple of the cores, so the
    last wave of tasks is not one core's."""
    size = file_size(path)
    cores = max(1, spark.sparkContext.defaultParallelism)
    conf = spark.sparkContext.getConf()
    most = _bytes(spark.conf.get("spark.sql.files.maxPartitionBytes", "128m"))
    open_cost = _bytes(conf.get("spark.sql.files.openCostInBytes", "4m"))
    step = max(1, min(SPLIT_BYTES, most, max(open_cost, -(-size // cores))))
    n = max(1, -(-size // step))
    if n > 1:
        n = -(-n // cores) * cores
    return [(k * size // n, (k + 1) * size // n) for k in range(n)]


def _bytes(value: str) -> int:
    """A Spark size setting ("134217728", "128m", "4MB") in bytes."""
    value = str(value).strip().lower().removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(value[-1:], 1)
    return int(float(value[:-1] if scale > 1 else value) * scale)


def read_reported(spark: SparkSession, inputs, **options) -> tuple[_Read, dict]:
    """(:func:`_read` of ``inputs``, its :meth:`~_Read.report`); the read's cache released
    when the report refuses it (nothing processed), so the caller has nothing to undo."""
    read = _read(spark, inputs, **options)
    try:
        return read, read.report()
    except BaseException:
        read.release()
        raise


def read_lines(spark: SparkSession, path: str, splits: list[tuple[int, int]]) -> DataFrame:
    """(raw, record, part) of a line file read in ``splits`` (:func:`line_splits`) by
    the Python workers, as :func:`_read` reads it: ``part`` the split, ``record`` the
    line's rank in it (:func:`positioned` makes it the line's position in the file)."""

    def as_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield batch.set_column(0, "raw", batch.column(0).cast(pa.binary()))
    return _in_splits(spark, path, splits, as_rows, "raw binary, record long, part int",
                      newlines=False)


def _in_splits(spark: SparkSession, path: str, splits: list[tuple[int, int]], body,
               schema: str, newlines: bool = True) -> DataFrame:
    """``body`` run over the lines of each split of ``path`` (:func:`_split_lines`), a
    task a split."""
    return spark.range(len(splits), numPartitions=len(splits)).mapInArrow(
        settled(_split_lines(path, splits, _batch_rows(spark), body, newlines)), schema)


def _batch_rows(spark: SparkSession) -> int:
    return max(1, int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")))


def _split_lines(path: str, splits: list[tuple[int, int]], batch_rows: int, body,
                 newlines: bool = True):
    """mapInArrow body over ``spark.range(len(splits))`` (a split a partition): each split's
    lines read from the file by this worker, as Spark's text reader (Hadoop's line
    reader, "\n" only) gives them, so no line crosses the JVM: the lines that start in
    [start, end) (a split but the first starts after the first "\n" at or past
    start - 1; the last line may run past end), a UTF-8 byte-order mark at the file's
    start left out. They go to ``body`` (:func:`_numbering`'s) as batches of at most
    ``batch_rows`` lines (raw, record: the line's rank in its split, part: the split),
    each line with its "\n" (the file's last line may have none; the split's bytes are
    not copied: the format's record body trims it), or without it unless ``newlines``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def lines() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for part in batch.column(0).to_pylist():
                    yield from _lines_of(path, *splits[part], part, batch_rows, newlines)
        yield from body(lines())
    return run


def _lines_of(path: str, start: int, end: int, part: int, batch_rows: int,
              newlines: bool = True) -> Iterator[pa.RecordBatch]:
    """The batches of :func:`_split_lines` for the split [start, end) of ``path``.

    The split's bytes are mapped from a local file (no copy, and no fresh memory to
    fault in page by page) or read into one buffer from a URL; its line ends are found a
    block at a time, into one reused mask."""
    data = _split_bytes(path, start, end)
    if data is None:
        return
    buffer, ends = _line_ends(data)
    ended = buffer.size > 0 and buffer[-1] == _NEWLINE
    ranks = np.arange(ends.size, dtype=np.int64)
    offsets = np.empty(ends.size + 1, dtype=np.int64)
    offsets[0] = 0
    if newlines:  # the data as read (no copy): line k is values[offsets[k]:offsets[k + 1]]
        values = pa.py_buffer(data)
        offsets[1:] = ends
    else:  # the values without the separators
        values = pa.py_buffer(buffer[buffer != _NEWLINE])
        offsets[1:] = ends - ranks - 1  # each line's end less the separators through it
        if not ended:
            offsets[-1] += 1  # the last line has none
    for first in range(0, ends.size, batch_rows):
        n = min(batch_rows, ends.size - first)
        raw = pa.Array.from_buffers(pa.large_binary(), n, [
            None, pa.py_buffer(offsets[first:first + n + 1]), values])
        yield pa.RecordBatch.from_arrays(
            [raw, pa.array(ranks[first:first + n]), pa.array(np.full(n, part, dtype=np.int32))],
            names=["raw", "record", "part"])


def _line_ends(data) -> tuple[np.ndarray, np.ndarray]:
    """(data as uint8, where each of its lines ends, through its "\n"): a last line
    without one ends at the data's end, and data of no byte is one empty line."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    ends = _newlines(buffer) + 1
    if not (buffer.size and buffer[-1] == _NEWLINE):
        ends = np.append(ends, buffer.size)
    return buffer, ends


def _split_bytes(path: str, start: int, end: int):
    """The bytes of the lines of ``path`` that start in [start, end) (see
    :func:`_split_lines`), a UTF-8 byte-order mark at the file's start left out; None
    when no line starts there. A local file is mapped (a view of its pages), a URL read."""
    if remote.is_url(path):
        with open_bytes(path) as f:
            if start > 0:
                f.seek(start - 1)
                f.readline()  # the line under way at start belongs to the split before
                start = f.tell()
            if start >= end:
                return None
            data = bytearray(end - start)
            del data[f.readinto(data) or 0:]
            if data and not data.endswith(b"\n"):
                data += f.readline()  # the last line, through its end (grown in place)
        if not data:
            return None
        if start == 0 and data.startswith(_UTF8_BOM):
            del data[:len(_UTF8_BOM)]  # a file of the mark alone: one empty line
        return data
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if min(end, size) <= start:
            return None
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if start > 0:  # the line under way at start belongs to the split before
        start = mapped.find(b"\n", start - 1) + 1 or size
    if start >= min(end, size):
        return None
    stop = mapped.find(b"\n", end - 1) + 1 or size  # the last line, through its end
    if start == 0 and mapped[:len(_UTF8_BOM)] == _UTF8_BOM:
        start = len(_UTF8_BOM)  # a file of the mark alone: one empty line
    return memoryview(mapped)[start:stop]


def _newlines(buffer: np.ndarray, block: int = 1 << 22) -> np.ndarray:
    """The positions of the "\\n" bytes of ``buffer`` (uint8), compared ``block`` bytes
    at a time into one reused mask."""
    mask = np.empty(min(block, buffer.size), dtype=bool)
    found = [np.empty(0, dtype=np.int64)]
    for at in range(0, buffer.size, block):
        part = buffer[at:at + block]
        np.equal(part, _NEWLINE, out=mask[:part.size])
        found.append(np.flatnonzero(mask[:part.size]) + at)
    return np.concatenate(found)


def _ranked(df: DataFrame) -> DataFrame:
    """``df`` with ``part`` (its partition) and ``record``: each row's rank in its partition,
    in the JVM (``monotonically_increasing_id``, whose low 33 bits are that rank): no job,
    no row through Python; :func:`_globally` makes the ranks positions over the input."""
    part = F.spark_partition_id()
    rank = F.monotonically_increasing_id() - F.shiftleft(part.cast("long"), 33)
    return df.withColumn("record", rank).withColumn("part", part)


def _globally(ranked: DataFrame, prefixes: list[str], default_ids: bool,
              min_shingles: int | None = None) -> tuple[DataFrame, dict, int, list, dict | None]:
    """The persisted records of :func:`_ranked` inputs with global numbers: ``record`` the
    record's 0-based position in its input (blank lines counted, as line numbers count
    them), ``doc`` a processed record's position over all inputs, from one small job (the
    rows and processed records of each input's partitions); a record with no id field
    gets its position in its input, 1-based, after its input's prefix. Also the starts:
    (source, partition) -> the input's rows before that partition, the number of
    processed records (the documents), and from the same job the report's outcomes
    (:attr:`_Read.outcomes`) and, with ``min_shingles`` (signed records), the tally
    (:attr:`_Read.tally`)."""
    aggregates = [F.count("*").alias("rows"),
                  F.sum(F.col("object").cast("long")).alias("objects")]
    if min_shingles is not None:
        usable = F.col("size") >= min_shingles
        aggregates += [F.sum(F.when(usable, 1).otherwise(0)).alias("usable"),
                       F.sum(F.when(usable, F.col("size")).otherwise(0)).alias("shingles"),
                       F.sum(F.col("chars").cast("long")).alias("chars")]
    # a row per partition and outcome (a few a partition): positions, report and tally
    grouped = sorted(ranked.groupBy("source", "part", "outcome", "reason").agg(*aggregates)
                     .collect(), key=lambda row: (row["source"], row["part"], row["outcome"],
                                                  row["reason"] is not None, row["reason"] or ""))
    per_part: dict[tuple[int, int], list[int]] = {}
    outcomes: dict[tuple, list[int]] = {}
    tally = None if min_shingles is None else {"usable": 0, "shingles": 0, "chars": 0}
    for row in grouped:
        source, part, outcome = int(row["source"]), int(row["part"]), row["outcome"]
        at = per_part.setdefault((source, part), [0, 0])
        at[0] += int(row["rows"])
        if outcome == "processed":
            at[1] += int(row["rows"])
        if outcome != _BLANK:
            seen = outcomes.setdefault((source, outcome, row["reason"]), [0, 0])
            seen[0] += int(row["rows"])
            seen[1] += int(row["objects"] or 0)
        if tally is not None:
            for key in tally:
                tally[key] += int(row[key] or 0)
    outcome_rows = [(*key, n, objects) for key, (n, objects) in outcomes.items()]
    starts, doc_at, docs, previous, rows = {}, [], 0, None, 0
    for (source, part), (part_rows, part_docs) in sorted(per_part.items()):
        if source != previous:
            previous, rows = source, 0
        starts[source, part] = rows
        doc_at += [F.lit((source << 32) + part), F.lit(docs)]
        rows += part_rows
        docs += part_docs
    if not per_part:
        return (ranked.withColumn("doc", F.lit(None).cast("long")), starts, 0, outcome_rows,
                tally)
    key = F.shiftleft(F.col("source").cast("long"), 32) + F.col("part")
    numbered = (positioned(ranked, starts)
                .withColumn("doc", (F.create_map(*doc_at)[key] + F.col("local_doc"))
                            .cast("long")))
    if default_ids:
        prefix = F.create_map(*[x for k, p in enumerate(prefixes) for x in (F.lit(k),
                                                                            F.lit(p))])
        numbered = numbered.withColumn(
            "id", F.when(F.col("id").isNotNull(), F.concat(
                prefix[F.col("source")], (F.col("record") + 1).cast("string"))))
    return numbered, starts, docs, outcome_rows, tally


def positioned(ranked: DataFrame, starts: dict, source: int | None = None) -> DataFrame:
    """``ranked`` (:func:`_ranked` rows, with ``source`` unless ``source`` is given) with
    ``record`` its position in its input, from the partitions' ``starts``
    (:func:`_globally`); the same file read again is split the same way."""
    at = [x for (src, part), rows in starts.items() if source is None or src == source
          for x in (F.lit((src << 32) + part), F.lit(rows))]
    src = F.col("source").cast("long") if source is None else F.lit(source).cast("long")
    key = F.shiftleft(src, 32) + F.col("part")
    return ranked.withColumn("record", (F.create_map(*at)[key] + F.col("record")).cast("long"))


def _numbering(body, signer):
    """A record body (:func:`_jsonl_records`, ...) run on one partition, its rows given the
    partition (``part``) and each processed record its rank among the partition's
    processed ones (``local_doc``); with ``signer``, the processed records signed in the
    same pass (the sketch columns) and their texts dropped."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = [None]

        def inputs():
            for batch in batches:
                if batch.num_rows:
                    part[0] = batch.column("part")[0].as_py()
                yield batch

        seen = 0
        for out in body(inputs()):
            n = out.num_rows
            processed = np.asarray(out.column("outcome").to_numpy(zero_copy_only=False)
                                   == "processed")
            local = np.full(n, -1, dtype=np.int64)
            local[processed] = np.arange(seen, seen + int(processed.sum()))
            seen += int(processed.sum())
            columns = [out.column(name) for name in out.schema.names]
            names = list(out.schema.names)
            columns += [pa.array(np.full(n, part[0] or 0, dtype=np.int32)),
                        pa.array(local, mask=~processed)]
            names += ["part", "local_doc"]
            if signer is not None:
                texts = out.column("text").to_pylist()
                where = np.flatnonzero(processed)
                signed = signer([texts[k] for k in where.tolist()])
                for name, column in zip(_SIGNED_NAMES, signed):
                    columns.append(_spread(column, where, n))
                    names.append(name)
                columns[names.index("text")] = pa.nulls(n, pa.string())
            yield pa.RecordBatch.from_arrays(columns, names=names)
    return run


def _resigning(paths: list[str], splits: dict, bodies: dict, wanted: list, signer):
    """mapInArrow body over ``spark.range(len(wanted))``: for each (source, part, ranks,
    rows) of ``wanted``, the lines of those ranks in that split read again
    (:func:`_lines_ranked`), made records by the input's body and signed by ``signer``:
    (row, shingles, signature), a row each."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for t in batch.column(0).to_pylist():
                source, part, ranks, rows = wanted[t]
                lines = _lines_ranked(paths[source], *splits[source][part], part, ranks)
                texts, outcomes = [], []
                for out in bodies[source](iter([lines])):
                    texts += out.column("text").to_pylist()
                    outcomes += out.column("outcome").to_pylist()
                if outcomes != ["processed"] * rows.size:
                    raise RuntimeError(f"{paths[source]} changed since it was read: its "
                                       f"documents are not where they were")
                signed = signer(texts)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(rows), signed[_SIGNED_NAMES.index("shingles")],
                     signed[_SIGNED_NAMES.index("signature")]],
                    names=["row", "shingles", "signature"])
    return run


def _lines_ranked(path: str, start: int, end: int, part: int, ranks: np.ndarray
                  ) -> pa.RecordBatch:
    """The lines of ranks ``ranks`` (sorted) in the split [start, end) of ``path``, as
    :func:`_lines_of` gives them (raw with its "\n", record: the rank, part)."""
    data = _split_bytes(path, start, end)
    buffer, ends = _line_ends(data if data is not None else b"")
    if data is None:
        ends = ends[:0]
    if ranks.size and ranks[-1] >= ends.size:
        raise RuntimeError(f"{path} changed since it was read: it has fewer lines")
    begins = np.concatenate([[0], ends[:-1]])
    lo, hi = begins[ranks], ends[ranks]
    offsets = np.zeros(ranks.size + 1, dtype=np.int64)
    np.cumsum(hi - lo, out=offsets[1:])
    at = np.repeat(lo - offsets[:-1], hi - lo) + np.arange(offsets[-1])
    raw = pa.Array.from_buffers(pa.large_binary(), ranks.size, [
        None, pa.py_buffer(offsets), pa.py_buffer(buffer[at].tobytes())])
    return pa.RecordBatch.from_arrays(
        [raw, pa.array(ranks), pa.array(np.full(ranks.size, part, dtype=np.int32))],
        names=["raw", "record", "part"])


def _spread(column: pa.Array, where: np.ndarray, n: int) -> pa.Array:
    """``column``'s values at rows ``where`` of n rows, null elsewhere."""
    if len(column) == n:
        return column
    slots = np.full(n, len(column), dtype=np.int64)  # one past the end: a null
    slots[where] = np.arange(len(column))
    return pa.concat_arrays([column, pa.nulls(1, column.type)]).take(pa.array(slots))


def _signed_documents(signer):
    """mapInArrow body: (doc, id, text) → (doc, id, the sketch columns)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            signed = signer(batch.column("text").to_pylist())
            yield pa.RecordBatch.from_arrays([batch.column("doc"), batch.column("id"), *signed],
                                             names=["doc", "id", *_SIGNED_NAMES])
    return run


class _RecordRows:
    """The rows of one batch of records (``_RECORD_SCHEMA``)."""

    def __init__(self, source: int):
        self.source = source
        self.columns: dict[str, list] = {k: [] for k in ("record", "id", "text", "outcome",
                                                          "reason", "object", "fields")}

    def add(self, record: int, outcome: str, reason: str | None = None, *,
            doc_id: str | None = None, text: str | None = None, is_object: bool = False,
            fields: list[str] | None = None) -> None:
        for key, value in (("record", record), ("id", doc_id), ("text", text),
                           ("outcome", outcome), ("reason", reason), ("object", is_object),
                           ("fields", fields)):
            self.columns[key].append(value)

    def add_text(self, record: int, doc_id: str, text: str, not_decodable: str,
                 no_text: bool = False) -> None:
        """A record with its text: processed, or skipped as the local readers skip it
        (``no_text``: a record read without a text field, whose empty text is kept)."""
        from ..sources import has_surrogates  # executors import this module: sources lazily

        if has_surrogates(text) or has_surrogates(doc_id):
            self.add(record, "skipped", not_decodable)
        elif not no_text and not text.strip():
            self.add(record, "skipped", "empty text")
        else:
            self.add(record, "processed", doc_id=doc_id, text=text)

    def add_object(self, record: int, doc_id: str, text: str, no_text: bool = False) -> None:
        """A JSON object's record with its text and id: processed, or failed or skipped as
        the local JSONL reader sorts it (``no_text``: as :meth:`add_text`)."""
        from ..sources import has_surrogates

        if has_surrogates(text) or has_surrogates(doc_id):
            self.add(record, "failed", "lone surrogate escape: not valid Unicode",
                     is_object=True)
        elif not no_text and not text.strip():
            self.add(record, "skipped", "empty text", is_object=True)
        else:
            self.add(record, "processed", doc_id=doc_id, text=text, is_object=True)

    def batch(self) -> pa.RecordBatch:
        c = self.columns
        n = len(c["record"])
        return pa.RecordBatch.from_arrays([
            pa.array(np.full(n, self.source, dtype=np.int32)),
            pa.array(c["record"], pa.int64()), pa.array(c["id"], pa.string()),
            pa.array(c["text"], pa.string()), pa.array(c["outcome"], pa.string()),
            pa.array(c["reason"], pa.string()), pa.array(c["object"], pa.bool_()),
            pa.array(c["fields"], pa.list_(pa.string())),
        ], names=["source", "record", "id", "text", "outcome", "reason", "object", "fields"])


def _parsed_block(rows: _RecordRows, raw: pa.Array, records: list, text_fields: list[str],
                  id_field: str | None, prefix: str, utf8: bool) -> bool:
    """A batch's lines sorted into ``rows`` at once by Arrow's JSON parser when its answer
    is the line-by-line one (:func:`neardup.sources.jsonl.parse_block`, the local reader's
    fast path); False, nothing added, when the batch must go line by line. Never given
    a line holding a byte-order mark (the file's first may: line by line). ``raw``: the
    batch's lines; where each but the last ends with its "\n" (:func:`_lines_of`), the
    block is their bytes as read, one copy and no object a line, else they are joined."""
    from ..sources.jsonl import parse_block

    if not len(raw) or raw.null_count:
        return False
    raw = raw.cast(pa.large_binary())
    _, offsets, values = raw.buffers()
    at = np.frombuffer(offsets, dtype=np.int64)[raw.offset:raw.offset + len(raw) + 1]
    ends = at[1:-1]
    if (np.diff(at)[:-1] > 0).all() and (
            np.frombuffer(values, dtype=np.uint8)[ends - 1] == _NEWLINE).all():
        block = values[int(at[0]):int(at[-1])].to_pybytes()
    else:
        block = b"\n".join(raw.to_pylist())
    parsed = parse_block(block, 1, text_fields, id_field, [], utf8)  # 1: no BOM anywhere
    if parsed is None:
        return False
    # parse_block numbers the lines from first_line (1 here): the batch's line k is k + 1
    at = dict(zip((parsed.lines - 1).tolist(), range(parsed.lines.size)))
    for line, record in enumerate(records):
        k = at.get(line)
        if k is None:
            rows.add(record, _BLANK)
            continue
        text = parsed.texts[k]
        doc_id = parsed.ids[k] if parsed.ids is not None else f"{prefix}{record + 1}"
        rows.add_object(record, doc_id, text)
    return True


def _jsonl_records(source: int, encoding: str, not_decodable: str, text_fields: list[str],
                   id_field: str | None, prefix: str, text_strings: bool = False,
                   text_optional: bool = False):
    """mapInArrow body: (raw line, record) → records, as the local JSONL reader sorts them
    (``text_strings``: a text field that holds no string is skipped, as :func:`_read` says;
    Arrow's block parser reads string text fields only, so it never meets one; nor an
    object without one, which ``text_optional`` reads with an empty text)."""
    from ..sources import (
        JSONL_FIELDS_NAMED,
        as_text,
        decode_line,
        printable,
        text_not_strings,
    )

    utf8 = codecs.lookup(encoding).name == "utf-8"

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = _RecordRows(source)
            records = batch.column("record").to_pylist()
            if _parsed_block(rows, batch.column("raw"), records, text_fields, id_field,
                             prefix, utf8):
                yield rows.batch()
                continue
            for raw, record in zip(batch.column("raw").to_pylist(), records):
                if raw is not None and raw.endswith(b"\n"):
                    raw = raw[:-1]  # the line as Spark's text reader gives it
                if raw is None or not raw.strip():
                    rows.add(record, _BLANK)  # not a record; a line all the same
                    continue
                try:
                    line = decode_line(raw, record, encoding)
                except UnicodeDecodeError:
                    rows.add(record, "skipped", not_decodable)
                    continue
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):
                    rows.add(record, "failed", "malformed JSON")
                    continue
                if not isinstance(obj, dict):
                    rows.add(record, "failed", "not a JSON object")
                    continue
                fields = text_fields
                if text_optional and not any(name in obj for name in text_fields):
                    fields = []  # no text field: a document with an empty text
                absent = next((name for name in fields if obj.get(name) is None), None)
                if absent is None and id_field is not None and obj.get(id_field) is None:
                    absent = id_field
                if absent is not None:
                    rows.add(record, "failed", f"missing field {absent!r}", is_object=True,
                             fields=[printable(k) for k in list(obj)[:JSONL_FIELDS_NAMED + 1]])
                    continue
                wrong = text_not_strings(fields, [obj[name] for name in fields]
                                         ) if text_strings else None
                if wrong is not None:
                    rows.add(record, "skipped", wrong, is_object=True)
                    continue
                text = "\n".join(as_text(obj[name]) for name in fields)
                doc_id = (as_text(obj[id_field]) if id_field is not None
                          else f"{prefix}{record + 1}")
                rows.add_object(record, doc_id, text, no_text=not fields)
            yield rows.batch()
    return run


def _csv_records(source: int, sep: str, width: int, n_text: int, id_field: str | None,
                 prefix: str, encoding: str, not_decodable: str):
    """mapInArrow body: Spark's CSV rows (_t0.., _id, _corrupt, record; read as
    ISO-8859-1, a character a byte) → records, the bytes decoded as the local reader
    does (undecodable ones as lone surrogates, so the row is skipped)."""
    def decoded(value: str | None) -> str:  # CSV has no nulls: Spark's null is ""
        return "" if value is None else value.encode("latin-1").decode(encoding,
                                                                       "surrogateescape")

    def fields_in(row_text: str) -> int:
        return len(next(csv.reader(io.StringIO(decoded(row_text), newline=""),
                                   delimiter=sep), []))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = _RecordRows(source)
            texts = [batch.column(f"_t{k}").to_pylist() for k in range(n_text)]
            ids = batch.column("_id").to_pylist()
            for k, (record, corrupt) in enumerate(zip(batch.column("record").to_pylist(),
                                                      batch.column("_corrupt").to_pylist())):
                if corrupt is not None:
                    n = fields_in(corrupt)
                    rows.add(record, "failed", f"row has {n} fields, header has {width}"
                             if n != width else "malformed row")
                    continue
                text = "\n".join(decoded(column[k]) for column in texts)
                doc_id = decoded(ids[k]) if id_field is not None else f"{prefix}{record + 1}"
                rows.add_text(record, doc_id, text, not_decodable)
            yield rows.batch()
    return run


def _parquet_records(source: int, codec: str, not_decodable: str, text_fields: list[str],
                     id_field: str | None, prefix: str, text_strings: bool = False):
    """mapInArrow body: Parquet rows (_t0.., _id, record) → records, as the local reader
    (``text_strings``: a text column that holds no string is skipped, as :func:`_read`
    says)."""
    from ..sources import as_text, column_values, text_not_strings

    def to_text(value) -> str:
        return value.decode(codec) if isinstance(value, bytes) else as_text(value)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = _RecordRows(source)
            texts = [column_values(batch.column(f"_t{k}")) for k in range(len(text_fields))]
            ids = column_values(batch.column("_id"))
            for k, record in enumerate(batch.column("record").to_pylist()):
                values = [column[k] for column in texts]
                if any(v is None for v in values):
                    rows.add(record, "skipped", "null text")
                    continue
                wrong = text_not_strings(text_fields, values) if text_strings else None
                if wrong is not None:
                    rows.add(record, "skipped", wrong)
                    continue
                if id_field is not None and ids[k] is None:
                    rows.add(record, "failed", f"null id in column {id_field!r}")
                    continue
                try:
                    text = "\n".join(to_text(v) for v in values)
                    doc_id = to_text(ids[k]) if id_field is not None else f"{prefix}{record + 1}"
                except UnicodeDecodeError:
                    rows.add(record, "skipped", not_decodable)
                    continue
                rows.add_text(record, doc_id, text, not_decodable, no_text=not text_fields)
            yield rows.batch()
    return run
