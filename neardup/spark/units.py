"""``neardup dedup --unit line|paragraph|sentences:N|span --engine spark``: repeated units
removed inside documents, with the local engine's outputs and counts
(:mod:`neardup.units`), found by shuffles and sorts.

The steps, each a DataFrame step or a ``mapInArrow`` body that calls the local code:

1. **Cut and hash** (:func:`unit_rows`, per partition): the local cutter
   (:mod:`neardup.units.split`) and normalization and hash (:mod:`neardup.units.hashing`)
   give one row per unit: ``doc``, its compared text ``[ts, te)`` and removed bytes
   ``[cs, ce)`` (byte offsets in the document's UTF-8 text), its 64-bit ``hash`` and its
   normalized bytes ``norm`` (what the exact comparison needs).
2. **Classes**: a window over (``hash``, ``norm``) gives each unit its class's first
   occurrence in input order (the smallest (doc, ts)) and size. Grouping on the bytes
   themselves is the byte-for-byte verification: units that share a hash but not their
   bytes are classes apart (``hash_collisions``: distinct texts minus distinct hashes,
   as :func:`neardup.units.hashing.exact_classes` counts them); a collision never joins
   two texts.
3. **sentences:N**: a window over each document's sentences (ordered by position) makes
   the array of N consecutive sentences' classes; windows of one array are one class,
   first occurrence first, and a removed window's N sentences go (a second window over
   the document: a sentence goes when a removed window starting at most N - 1
   sentences before it does).
4. **Removal**: ``keep="first"``: every unit (window) but its class's first occurrence;
   ``keep="none"``: every unit of a class of two or more; never a unit under the minimum
   (``short``: its normalized text's characters and words, by the local
   :func:`~neardup.units.hashing.unit_lengths`, a window's the sum of its sentences').
   The removed bytes of each document are collected (sorted) and joined to its text; a
   ``mapInArrow`` (:func:`_applied`) merges them and cuts them out with the local code
   (:class:`~neardup.units.ranges.RemovalRanges`, :func:`~neardup.units.remaining_texts`)
   and drops the document when fewer than ``min_chars`` characters are left
   (:func:`~neardup.units.characters_left`). Only the documents that lose units pass
   through this step.
5. **Copy**: :func:`neardup.spark.dedup.write_copies` with the edited texts: JSON Lines
   and Parquet files read by the executors become part files (the JSON Lines parts,
   concatenated in name order, are the local copy byte for byte); inputs read on the
   driver get the local writer's copy.

The span unit (token windows, :mod:`neardup.units.spans`) takes steps 1-4 of its own
(:mod:`neardup.spark.spans`: window hashes shuffled, candidates verified by their bytes)
and shares step 5.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from .._core import counts as counting
from ..units import RemovalRanges, UnitAnalysis, UnitOptions, characters_left, remaining_texts
from ..units import split as unit_split
from ..units.run import UnitResult, run_counts
from .progress import SparkStageTimer
from .read import read_reported
from .session import _require_spark, _session

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, Window
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = Window = F = None

SPARK_UNITS = ("line", "paragraph", "sentences", "span")  # the kinds this module runs
_UNIT_ROW = ("doc long, ts long, te long, cs long, ce long, hash long, norm binary, "
             "chars long, words long")
_APPLIED_ROW = "doc long, bytes long, keep boolean, text string"
_CUTTERS = {"line": unit_split.split_lines, "paragraph": unit_split.split_paragraphs,
            "sentences": unit_split.split_sentences}


def check_spark_unit(options: UnitOptions) -> None:
    """ValueError, naming the unit, for a unit the Spark engine does not run."""
    if options.kind not in SPARK_UNITS:
        raise ValueError(f"--unit {options.unit} runs on the local engine only; --engine "
                         f"spark takes --unit line, paragraph, sentences:N or span")


def dedup_units_sources(inputs, out, options: UnitOptions, *, spark=None, normalize=None,
                        quiet: bool = True, hashes: Callable | None = None,
                        **source_options) -> UnitResult:
    """The copy of ``inputs`` without their repeated units, written to ``out`` (see the
    module docstring); the :class:`~neardup.units.run.UnitResult` the local engine's
    :func:`~neardup.units.run.dedup_units` gives (its counts, but ``dedup``'s outputs
    name the folder of parts). ``source_options``: those of
    :func:`neardup.spark.read_documents`; ``normalize``: the run's normalization.
    ``hashes``: (values, offsets) -> uint64 a piece, a unit or (span) a token (default:
    :func:`neardup.units.hashing.piece_hashes`; any function of the bytes gives the same
    result, a weak one forces collisions)."""
    from .. import sources
    from .dedup import check_dedup_inputs, write_copies

    _require_spark()
    check_spark_unit(options)
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    fmt = source_options.get("fmt", "auto")
    text_fields = list(source_options.get("text_fields", ("text",)))
    encoding = source_options.get("encoding", "utf-8")
    check_dedup_inputs(paths, [sources.resolve_format(p, fmt) for p in paths])
    if spark is None:
        spark = _session(quiet=quiet)
    timer = SparkStageTimer(spark, quiet)
    with timer.stage("read"):
        # text_strings: the text goes back
        read, report = read_reported(spark, paths, text_strings=True, **source_options)
    cached: list[DataFrame] = []
    try:
        with timer.stage("units", f"{options.unit} of {report['processed']:,} documents"):
            applied, counts = _applied_units(read, report, options, normalize, hashes, cached)
        flags = (read.documents.select("doc")
                 .join(applied.select("doc", "keep"), "doc", "left")
                 .select("doc", F.coalesce(F.col("keep"), F.lit(True)).alias("representative")))
        edits = applied.where(F.col("keep")).select("doc", "text")
        with timer.stage("write", f"the copies into {out}"):
            counting.add(counts, dedup=write_copies(read, flags, out, edits=edits,
                                                    text_field=text_fields[0],
                                                    encoding=encoding))
    finally:  # the run's caches go, whether it wrote or failed
        for frame in cached:
            frame.unpersist()
        read.release()
    timer.say_totals()
    seconds = {name: round(value, 4) for name, value in timer.seconds.items()}
    local_report = {k: v for k, v in report.items() if k != "inputs"}  # as the local run's
    return UnitResult(counts, local_report, seconds=seconds)


def _applied_units(read, report: dict, options: UnitOptions, normalize, hashes,
                   cached: list) -> tuple[DataFrame, dict]:
    """(applied, counts): each changed document's (doc, text, keep, bytes[, tokens]) with
    its repeated units removed, persisted, and the run's counts (:func:`run_counts`); the
    frames to release are added to ``cached``."""
    documents = read.documents.select("doc", "text")
    if options.kind == "span":
        from .spans import span_removals

        applied, unit_counts, persisted = span_removals(documents, options, normalize, hashes)
    else:
        pieces = documents.mapInArrow(unit_rows(options.kind, normalize, hashes), _UNIT_ROW)
        removed, unit_counts, persisted = _removed_units(pieces, options)
        applied = _removals_applied(documents, removed, options.min_chars)
    cached += persisted
    applied = applied.persist()
    cached.append(applied)
    removed_tokens = [F.sum("tokens").alias("tokens")] if options.kind == "span" else []
    totals = applied.agg(F.count("*").alias("changed"), F.sum("bytes").alias("bytes"),
                         F.sum((~F.col("keep")).cast("long")).alias("dropped"),
                         *removed_tokens).first()
    if options.kind == "span":
        counting.add_unit_counts(unit_counts, tokens_removed=totals["tokens"] or 0)
    counting.add_unit_counts(unit_counts, bytes_removed=totals["bytes"] or 0,
                             documents_changed=totals["changed"])
    n_documents = report["processed"]
    counts = run_counts(options, report, unit_counts,
                        n_documents - int(totals["dropped"] or 0), n_documents)
    return applied, counts


def unit_rows(kind: str, normalize, hashes: Callable | None):
    """mapInArrow body: (doc, text) -> one row a unit (``_UNIT_ROW``), by the local cutter,
    normalization, hash and lengths (characters, words); a unit that normalizes to
    nothing is kept here (hashes and collisions count it, as locally) and left out of
    the units later."""
    cut = _CUTTERS[kind]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from neardup.units.hashing import (
            normalized_pieces,
            piece_hashes,
            texts_buffer,
            unit_lengths,
        )

        hash_of = piece_hashes if hashes is None else hashes
        for batch in batches:
            if not batch.num_rows:
                continue
            data, doc_offsets = texts_buffer(batch.column("text"))
            doc, ts, te, cs, ce = cut(data, doc_offsets)
            values, offsets = normalized_pieces(data, ts, te, normalize)
            base = doc_offsets[doc]
            docs = batch.column("doc").to_numpy()[doc]
            norm = pa.LargeBinaryArray.from_buffers(
                pa.large_binary(), doc.size, [None, pa.py_buffer(offsets),
                                              pa.py_buffer(np.ascontiguousarray(values))])
            chars, words = unit_lengths(values, offsets)
            yield pa.RecordBatch.from_arrays(
                [pa.array(docs, pa.int64()), *(pa.array(x - base, pa.int64())
                                               for x in (ts, te, cs, ce)),
                 pa.array(np.asarray(hash_of(values, offsets), np.uint64).view(np.int64)),
                 norm.cast(pa.binary()), pa.array(chars, pa.int64()),
                 pa.array(words, pa.int64())],
                names=["doc", "ts", "te", "cs", "ce", "hash", "norm", "chars", "words"])
    return run


def _removed_units(pieces: DataFrame, options: UnitOptions):
    """(removed: doc, cs, ce of every unit that goes; the unit counts, keys as the local
    engine's; the frames persisted on the way, for the caller to release)."""
    classed = unit_classes(pieces).withColumn("short", short_units(options)).persist()
    units = classed.where(F.col("is_unit"))
    if options.kind == "sentences":
        removed, counts, cached = _windows_removed(units, options)
        row = classed.agg(*_texts_and_hashes()).first()
    else:
        removed = _removed(units, options.keep).select("doc", "cs", "ce")
        row = classed.agg(*_texts_and_hashes(),
                          *_class_counts(options.keep, F.col("is_unit"))).first()
        counts, cached = _counted(row), []
    counting.add_unit_counts(counts, hash_collisions=int(row["texts"] or 0) - int(row["hashes"]))
    return removed, counts, [classed, *cached]


def short_units(options: UnitOptions):
    """A unit (a window) under the minimum: fewer ``chars`` or ``words`` than
    ``options.minimum`` (:func:`neardup.units.is_short`)."""
    chars, words = options.minimum
    return (F.col("chars") < chars) | (F.col("words") < words)


def unit_classes(pieces: DataFrame) -> DataFrame:
    """The rows of :func:`unit_rows` (but ``norm``) with each unit's class: ``first`` (its
    first occurrence, a struct of doc and ts), ``size``, ``is_first``, ``is_unit`` (its
    text normalizes to something)."""
    by_text = Window.partitionBy("hash", "norm")
    at = F.struct("doc", "ts")
    return (pieces.withColumn("first", F.min(at).over(by_text))
            .withColumn("size", F.count(F.lit(1)).over(by_text))
            .withColumn("is_first", F.col("first") == at)
            .withColumn("is_unit", F.length("norm") > 0)
            .drop("norm"))


def _texts_and_hashes():
    """Aggregations: the distinct texts and distinct hashes of every piece (those that
    normalize to nothing too: the local collision count holds them)."""
    return (F.sum(F.col("is_first").cast("long")).alias("texts"),
            F.countDistinct("hash").alias("hashes"))


def _removed(units: DataFrame, keep: str) -> DataFrame:
    """The units (or windows) that go: not their class's first occurrence
    (``keep="first"``), or of a class of two or more (``keep="none"``), and not under the
    minimum (``short``)."""
    return units.where(_gone(keep) & ~F.col("short"))


def _gone(keep: str):
    return ~F.col("is_first") if keep == "first" else F.col("size") >= 2


def _class_counts(keep: str, among=None):
    """Aggregations: units, distinct, repeated, removed, and those under the minimum, of
    the rows ``among`` (a condition; default all) with ``is_first``, ``size`` and
    ``short``; :func:`_counted` names them."""
    among = F.lit(True) if among is None else among
    short, repeated = F.col("short"), F.col("is_first") & (F.col("size") >= 2)

    def total(condition):
        return F.sum((among & condition).cast("long"))

    return (total(F.lit(True)).alias("units"), total(F.col("is_first")).alias("distinct"),
            total(repeated & ~short).alias("repeated"),
            total(_gone(keep) & ~short).alias("removed"), total(short).alias("short"),
            total(repeated & short).alias("short_repeated"),
            total(_gone(keep) & short).alias("short_spared"))


def _counted(row) -> dict:
    """The unit counts of a row of :func:`_class_counts`, keys as the local engine's."""
    return counting.unit_counts(**{key: int(row[name] or 0) for key, name in (
        ("units", "units"), ("distinct", "distinct"), ("repeated", "repeated"),
        ("removed", "removed"), ("short", "short"), ("short_repeated", "short_repeated"),
        ("short_spared", "short_spared"))})


def _windows_removed(sentences: DataFrame, options: UnitOptions):
    """sentences:N: windows of N consecutive sentences of a document (the array of their
    classes' first occurrences), equal when the arrays are; the sentences a removed
    window covers go. (removed: doc, cs, ce; counts; the frames persisted)."""
    width = options.sentences
    in_doc = Window.partitionBy("doc").orderBy("ts")
    windows = sentence_windows(sentences, width).drop("te") \
        .withColumn("short", short_units(options))
    by_key = Window.partitionBy("key")
    at = F.struct("doc", "ts")
    classed = (windows.withColumn("first", F.min(at).over(by_key))
               .withColumn("size", F.count(F.lit(1)).over(by_key))
               .withColumn("is_first", F.col("first") == at).persist())
    counts = _counted(classed.agg(*_class_counts(options.keep)).first())
    starts = _removed(classed, options.keep).select("doc", "ts", F.lit(1).alias("starts"))
    behind = in_doc.rowsBetween(-(width - 1), 0)
    covered = (sentences.select("doc", "ts", "cs", "ce").join(starts, ["doc", "ts"], "left")
               .withColumn("covered", F.max("starts").over(behind)).persist())
    row = covered.agg(F.count("*").alias("sentences"),
                      F.count("covered").alias("removed")).first()
    counting.add_unit_counts(counts, sentences=row["sentences"], sentences_removed=row["removed"])
    removed = covered.where(F.col("covered").isNotNull()).select("doc", "cs", "ce")
    return removed, counts, [classed, covered]


def sentence_windows(sentences: DataFrame, width: int) -> DataFrame:
    """(doc, ts, te, key, chars, words) of every window of ``width`` consecutive sentences
    of a document (rows of :func:`unit_classes` that are units): its first sentence's
    start, its last one's end, ``key`` the array of their classes' first occurrences,
    and the sums of their characters and words."""
    in_doc = Window.partitionBy("doc").orderBy("ts")

    def ahead(column: str, k: int):
        return F.col(column) if k == 0 else F.lead(column, k).over(in_doc)

    key = F.array(*[ahead("first", k) for k in range(width)])
    sums = [sum((ahead(column, k) for k in range(1, width)), ahead(column, 0)).alias(column)
            for column in ("chars", "words")]
    return (sentences.select("doc", "ts", F.lead("te", width - 1).over(in_doc).alias("te"),
                             key.alias("key"), *sums)
            .where(F.col("key")[width - 1].isNotNull()))


def _removals_applied(documents: DataFrame, removed: DataFrame, min_chars: int) -> DataFrame:
    """(doc, bytes removed, kept, the text left or null when dropped) of each document
    that loses units: its removed ranges collected in order and cut out
    (:func:`_applied`)."""
    ranges = (removed.groupBy("doc")
              .agg(F.sort_array(F.collect_list(F.struct("cs", "ce"))).alias("ranges")))
    return (documents.join(ranges, "doc")
            .mapInArrow(_applied(min_chars), _APPLIED_ROW))


def _applied(min_chars: int):
    """mapInArrow body: (doc, text, ranges) -> ``_APPLIED_ROW``, by the local code: the
    ranges merged (:meth:`RemovalRanges.from_units`), cut out (:func:`remaining_texts`),
    the characters left counted (:func:`characters_left`)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from neardup.units.hashing import texts_buffer

        for batch in batches:
            n = batch.num_rows
            if not n:
                continue
            data, doc_offsets = texts_buffer(batch.column("text"))
            ranges = batch.column("ranges")
            flat = ranges.flatten()
            offsets = ranges.offsets.to_numpy()
            owner = np.repeat(np.arange(n), np.diff(offsets))
            removals = RemovalRanges.from_units(
                n, owner, flat.field("cs").to_numpy(), flat.field("ce").to_numpy())
            left = remaining_texts(UnitAnalysis(data, doc_offsets, removals, None, {}))
            keep = characters_left(left) >= min_chars
            yield pa.RecordBatch.from_arrays(
                [batch.column("doc"), pa.array(removals.bytes_per_document, pa.int64()),
                 pa.array(keep), _where(keep, left.cast(pa.string()))],
                names=["doc", "bytes", "keep", "text"])
    return run


def _where(mask: np.ndarray, values: pa.Array) -> pa.Array:
    """``values`` where ``mask``, null elsewhere."""
    import pyarrow.compute as pc

    return pc.if_else(pa.array(mask), values, pa.scalar(None, values.type))
