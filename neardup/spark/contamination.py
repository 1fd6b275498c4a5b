"""``neardup contamination --engine spark``: the training corpus read by Spark's executors
(:mod:`neardup.spark.read`: JSON Lines byte ranges, CSV, Parquet, in their workers), the
evaluation sets broadcast (their grams are small), and each partition's documents matched
by the local engine's own partition function
(:func:`neardup.pipeline.contamination.match_documents`) in ``mapInArrow``. The driver
collects the matches only (one row per matching item and document) and builds the same
report and table as the local engine.

``clean``: the copy the Spark engine's dedup writes (:func:`neardup.spark.dedup.write_copies`:
part files by the executors for JSON Lines and Parquet, whose concatenation is the local
engine's clean copy; the local writer's copy for inputs read on the driver), without the
matching documents; with ``clean_spans``, each partition also cuts the matching spans out
of its matching documents, in the same pass, with the local engine's function
(:func:`neardup.pipeline.contamination_run.spans_cut`): the cut texts (few: the matching
documents only) come back to the driver with the matches and are written by the copy as
the edits of a ``dedup --unit`` run; a document whose words cannot be placed is removed
whole, as locally."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._core import counts as counting
from ..pipeline.contamination import (
    EvalSets,
    benchmark_report,
    match_documents,
    matches_table,
    sorted_matches,
)
from ..pipeline.contamination_run import ContaminationResult, spans_cut
from .progress import SparkStageTimer
from .read import read_reported
from .session import _require_spark, _session
from .write import _to_arrow

# what each partition sends back: the local matches table and the training document;
# with --clean-spans also a row per matching document (benchmark null): its text with the
# spans cut (``cut``; null: removed whole) and the bytes cut
_MATCH_SCHEMA = ("benchmark string, item_id string, training_id string, rule string, "
                 "overlap double, ngram string, item long, doc long, cut string, "
                 "cut_bytes long")
_CUT_COLUMNS = ("cut", "cut_bytes")


def contamination_sources(inputs, evals: EvalSets, source_options: dict, *, spark=None,
                          quiet: bool = True, clean=None,
                          clean_spans: bool = False) -> ContaminationResult:
    """The local engine's report, matches and counts (same rows, order and counts) for
    training ``inputs`` read by Spark, and with ``clean`` its clean copy in the Spark
    dedup layout (module docstring); ``source_options``: those of
    :func:`neardup.spark.read_documents`."""
    from .. import sources
    from .dedup import check_dedup_inputs

    _require_spark()
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    if clean is not None:
        fmt = source_options.get("fmt", "auto")
        check_dedup_inputs(paths, [sources.resolve_format(p, fmt) for p in paths],
                           "contamination --clean")
    if spark is None:
        spark = _session(quiet=quiet)
    timer = SparkStageTimer(spark, quiet)
    lean = dataclasses.replace(evals, sets=[dataclasses.replace(s, documents=None)
                                            for s in evals.sets])
    with timer.stage("read"):
        read, report = read_reported(spark, paths, **source_options)
    try:
        with timer.stage("match", "evaluation items in the training documents"):
            shared = spark.sparkContext.broadcast(lean)
            found = _to_arrow(read.documents.select("doc", "id", "text")
                              .mapInArrow(_matcher(shared, clean_spans), _MATCH_SCHEMA))
            shared.unpersist()
        cuts = found.filter(found.column("benchmark").is_null())
        found = found.filter(found.column("benchmark").is_valid()).drop(list(_CUT_COLUMNS))
        doc = found.column("doc").to_numpy().astype(np.int64)
        item = found.column("item").to_numpy().astype(np.int64)
        local_report = {k: v for k, v in report.items() if k not in ("inputs", "notes")}
        counts = counting.contamination_counts(
            local_report, documents=local_report["processed"],
            matched=int(np.unique(doc).size))
        if clean is not None:
            with timer.stage("write", f"the clean copy into {clean}"):
                _write_clean(spark, read, clean, np.unique(doc), cuts if clean_spans else None,
                             counts, source_options)
    finally:
        read.release()
    timer.say_totals()
    matches = sorted_matches(found.drop(["doc"]), evals, doc)
    return ContaminationResult(benchmark_report(evals, item, doc), matches, counts,
                               local_report,
                               {name: round(v, 4) for name, v in timer.seconds.items()},
                               {s.name: s.read_report for s in evals.sets})


def _write_clean(spark, read, out, matched: np.ndarray, cuts: pa.Table | None,
                 counts: dict, source_options: dict) -> None:
    """The clean copy of what ``read`` read into ``out`` (:func:`~neardup.spark.dedup.write_copies`)
    without the ``matched`` documents, or with ``cuts`` (doc, cut, cut_bytes: the
    :data:`_MATCH_SCHEMA` rows of the matching documents) their texts cut, those whose
    ``cut`` is null removed whole; ``counts`` gets what the local engine counts."""
    from pyspark.sql import functions as F

    from .dedup import write_copies

    encoding = source_options.get("encoding", "utf-8")
    text_field = source_options.get("text_fields", ("text",))[0]
    edits = None
    if cuts is not None:
        whole = cuts.filter(cuts.column("cut").is_null())
        changed = cuts.filter(cuts.column("cut").is_valid())
        removed = whole.column("doc").to_numpy().astype(np.int64)
        edits = spark.createDataFrame(
            pa.table({"doc": changed.column("doc").cast(pa.int64()),
                      "text": changed.column("cut").cast(pa.string())}),
            "doc long, text string")
    else:
        removed = matched
    gone = spark.createDataFrame(pa.table({"doc": pa.array(removed, pa.int64())}),
                                 "doc long").withColumn("removed", F.lit(True))
    flags = (read.documents.select("doc").join(F.broadcast(gone), "doc", "left")
             .select("doc", F.col("removed").isNull().alias("representative")))
    written = write_copies(read, flags, out, edits=edits, text_field=text_field,
                           command="contamination",
                           encoding=encoding)
    if cuts is None:
        counting.add_contamination_counts(counts, documents_removed=removed.size,
                                          clean=written)
    else:
        counting.add_contamination_counts(
            counts, documents_removed=removed.size, documents_changed=changed.num_rows,
            bytes_removed=int(pc.sum(changed.column("cut_bytes")).as_py() or 0),
            clean=written)


def _matcher(shared, clean_spans: bool = False):
    """The ``mapInArrow`` body: each batch of (doc, id, text) matched against the broadcast
    evaluation sets; the batch's matches, with their training document's number, and
    with ``clean_spans`` a row per matching document with its spans cut
    (:data:`_MATCH_SCHEMA`)."""
    def body(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        evals = shared.value
        for batch in batches:
            if batch.num_rows == 0:
                continue
            texts = batch.column("text").to_pylist()
            ids = batch.column("id").to_pylist()
            matches = match_documents(texts, evals)
            if matches.doc.size == 0:
                continue
            table = matches_table(evals, matches, ids)
            docs = batch.column("doc").to_numpy(zero_copy_only=False)
            table = table.append_column("doc", pa.array(docs[matches.doc], pa.int64()))
            table = table.append_column("cut", pa.nulls(table.num_rows, pa.string()))
            table = table.append_column("cut_bytes", pa.nulls(table.num_rows, pa.int64()))
            yield from table.to_batches()
            if clean_spans:
                yield _cut_rows(texts, docs, matches, evals, table.schema)
    return body


def _cut_rows(texts, docs: np.ndarray, matches, evals: EvalSets,
              schema: pa.Schema) -> pa.RecordBatch:
    """A batch's matching documents with their spans cut
    (:func:`~neardup.pipeline.contamination_run.spans_cut`) as :data:`_MATCH_SCHEMA` rows:
    doc, cut (null: removed whole), cut_bytes; the match columns null."""
    cut, whole, cut_bytes = spans_cut(texts, matches, evals)
    at = list(cut) + whole.tolist()
    n = len(at)
    columns = {name: pa.nulls(n, schema.field(name).type) for name in schema.names}
    columns["doc"] = pa.array(docs[np.asarray(at, dtype=np.int64)], pa.int64())
    columns["cut"] = pa.array([cut[d] for d in cut] + [None] * whole.size, pa.string())
    columns["cut_bytes"] = pa.array([cut_bytes[d] for d in cut] + [None] * whole.size,
                                    pa.int64())
    return pa.RecordBatch.from_pydict(columns, schema=schema)
