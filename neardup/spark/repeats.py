"""``neardup repeats --engine spark``: the listing of repeated units, the local engine's
table row for row (:func:`neardup.units.run.repeats_of`), found by shuffles and sorts.

The repeated texts come from the steps of ``dedup --unit`` on Spark: a unit's class
(:func:`neardup.spark.units.unit_classes`, verified by its bytes), a window of
sentences (:func:`neardup.spark.units.sentence_windows`), or a chain of repeated token
windows (:func:`neardup.spark.spans.span_chains`). One row each: its first occurrence
(doc, start, end), count, distinct documents. The rows are ordered as the local table
(most repeated first, then first occurrence first; ``top``: Spark's ordered limit keeps
only the first N), grouped by document and joined to the texts once, where the local
:func:`~neardup.units.run.repeats_table` cuts each one's text and first offset. The
driver collects the listing only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from ..units import UnitOptions
from ..units.run import (
    DEFAULT_MAX_CHARS,
    REPEAT_COLUMNS,
    SPARED_SHOWN,
    UnitResult,
    repeats_counts,
    with_spared,
)
from .progress import SparkStageTimer
from .read import read_reported
from .session import _require_spark, _session
from .units import (
    _UNIT_ROW,
    check_spark_unit,
    sentence_windows,
    short_units,
    unit_classes,
    unit_rows,
)
from .write import _to_arrow

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = F = None

_LISTING_ROW = ("text string, count long, documents long, first_id string, "
                "first_offset long, bytes long, doc long, at long")


def repeats_sources(inputs, options: UnitOptions, *, spark=None, normalize=None,
                    top: int | None = None, max_chars: int = DEFAULT_MAX_CHARS,
                    quiet: bool = True, hashes: Callable | None = None,
                    **source_options) -> pa.Table:
    """The table :func:`neardup.repeats` gives on the local engine (same rows, order and
    columns), for ``inputs`` read by Spark. ``source_options``: those of
    :func:`neardup.spark.read_documents`; ``normalize``: the run's normalization;
    ``hashes``: as :func:`neardup.spark.dedup_units_sources`'."""
    return repeats_run(inputs, options, spark=spark, normalize=normalize, top=top,
                       max_chars=max_chars, quiet=quiet, hashes=hashes,
                       **source_options).repeats


def repeats_run(inputs, options: UnitOptions, *, spark=None, normalize=None,
                top: int | None = None, max_chars: int = DEFAULT_MAX_CHARS,
                quiet: bool = True, hashes: Callable | None = None,
                **source_options) -> UnitResult:
    """:func:`repeats_sources`' table as a :class:`~neardup.units.run.UnitResult`'s
    ``repeats``, with the records read (the counts of the local
    :func:`~neardup.units.run.repeats_run` without its units' totals, which Spark does
    not count here) and the seconds per stage."""
    _require_spark()
    check_spark_unit(options)
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    if spark is None:
        spark = _session(quiet=quiet)
    timer = SparkStageTimer(spark, quiet)
    cached: list[DataFrame] = []
    with timer.stage("read"):
        read, report = read_reported(spark, paths, **source_options)
    try:
        with timer.stage("list", f"repeated {options.unit} units"):
            table = _listing_table(read, options, normalize, top, max_chars, hashes, cached)
    finally:
        for frame in cached:
            frame.unpersist()
        read.release()
    timer.say_totals()
    local_report = {k: v for k, v in report.items() if k != "inputs"}  # as the local run's
    return UnitResult(repeats_counts(options, local_report, {}), local_report, table,
                      seconds={name: round(value, 4) for name, value in timer.seconds.items()})


def _listing_table(read, options: UnitOptions, normalize, top, max_chars, hashes,
                   cached: list) -> pa.Table:
    """The listing of the repeated units of what ``read`` read, collected on the driver,
    with what the minimum kept in its metadata; the frames to release are added to
    ``cached``."""
    documents = read.documents.select("doc", "text")
    if options.kind == "span":
        from .spans import repeated_windows, span_chains

        rows, repeated = repeated_windows(documents, options.min_tokens, normalize, hashes)
        cached += [rows, repeated]
        found = span_chains(repeated, options.min_tokens).select(
            "doc", F.col("first").alias("at"), F.col("last").alias("end"), "count",
            "documents")
        short = None
    else:
        found, persisted = _repeated_units(documents, options, normalize, hashes)
        cached += persisted
        short = found.where(F.col("short"))
        found = found.where(~F.col("short"))
    table = _listed(read, found, options, normalize, top, max_chars)
    if short is not None:  # what the minimum kept: how many, the most frequent
        table = with_spared(table, options,
                            _listed(read, short, options, normalize, SPARED_SHOWN,
                                    max_chars), short.count())
    return table


def _listed(read, found: DataFrame, options: UnitOptions, normalize, top: int | None,
            max_chars: int) -> pa.Table:
    """The listing of the repeated texts ``found`` (doc, at, end, count, documents), most
    repeated first, the ``top`` first only, as the local table."""
    ordered = found.orderBy(F.desc("count"), "doc", "at")
    if top is not None:
        ordered = ordered.limit(top)
    asked = ordered.groupBy("doc").agg(F.collect_list(
        F.struct("at", "end", "count", "documents")).alias("repeats"))
    listing = (read.documents.select("doc", "id", "text").join(asked, "doc")
               .mapInArrow(_listing(options, normalize, max_chars), _LISTING_ROW)
               .orderBy(F.desc("count"), "doc", "at"))
    table = _to_arrow(listing)
    types = {"text": pa.string(), "first_id": pa.string()}
    return pa.table({name: table.column(name).combine_chunks().cast(types.get(name, pa.int64()))
                     for name in REPEAT_COLUMNS})


def _repeated_units(documents: DataFrame, options: UnitOptions, normalize, hashes):
    """(doc, at (its first byte), end, count, documents, short) of each repeated line,
    paragraph or window of sentences, at its first occurrence (``short``: under the
    minimum); the frames persisted."""
    pieces = documents.mapInArrow(unit_rows(options.kind, normalize, hashes), _UNIT_ROW)
    units = unit_classes(pieces).where(F.col("is_unit")).persist()
    if options.kind == "sentences":
        windows = sentence_windows(units, options.sentences)
        key = "key"
    else:
        windows, key = units.select("doc", "ts", "te", "first", "chars", "words"), "first"
    found = (windows.withColumn("short", short_units(options)).groupBy(key)
             .agg(F.min(F.struct("doc", "ts", "te")).alias("at"), F.count("*").alias("count"),
                  F.countDistinct("doc").alias("documents"),
                  F.max("short").alias("short"))  # a class's units: all short or none
             .where(F.col("count") >= 2)
             .select(F.col("at.doc").alias("doc"), F.col("at.ts").alias("at"),
                     F.col("at.te").alias("end"), "count", "documents", "short"))
    return found, [units]


def _listing(options: UnitOptions, normalize, max_chars: int):
    """mapInArrow body: (doc, id, text, repeats: its repeated texts) -> ``_LISTING_ROW``,
    by the local :func:`~neardup.units.run.repeats_table` (span: token positions turned
    into bytes first)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from neardup.units.hashing import texts_buffer
        from neardup.units.run import repeats_table

        for batch in batches:
            if not batch.num_rows:
                continue
            repeats = batch.column("repeats")
            lengths = np.diff(repeats.offsets.to_numpy())
            row = np.repeat(np.arange(batch.num_rows), lengths)
            flat = repeats.flatten()
            at, end = (flat.field(name).to_numpy().astype(np.int64) for name in ("at", "end"))
            if options.kind == "span":
                from neardup.spark.spans import token_bytes

                start, end = token_bytes(batch, normalize, row, at, end)
            else:
                start = at
            data, doc_offsets = texts_buffer(batch.column("text"))
            table = repeats_table(data, doc_offsets, row, start, end,
                                  flat.field("count").to_numpy(),
                                  flat.field("documents").to_numpy(),
                                  batch.column("id").take(pa.array(row)).to_pylist(), max_chars)
            yield pa.RecordBatch.from_arrays(
                [*(column.combine_chunks() for column in table.columns),
                 pa.array(batch.column("doc").to_numpy()[row], pa.int64()),
                 pa.array(at, pa.int64())],
                names=[*REPEAT_COLUMNS, "doc", "at"])
    return run
