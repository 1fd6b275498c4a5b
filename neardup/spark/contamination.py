"""``neardup contamination --engine spark``: the training corpus read by Spark's executors
(:mod:`neardup.spark.read`: JSON Lines byte ranges, CSV, Parquet, in their workers), the
evaluation sets broadcast (their grams are small), and each partition's documents matched
by the local engine's own partition function
(:func:`neardup.pipeline.contamination.match_documents`) in ``mapInArrow``. The driver
collects the matches only (one row per matching item and document) and builds the same
report and table as the local engine. The clean copy is the local engine's."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from .._core import counts as counting
from ..pipeline.contamination import (
    EvalSets,
    benchmark_report,
    match_documents,
    matches_table,
    sorted_matches,
)
from ..pipeline.contamination_run import ContaminationResult
from .progress import SparkStageTimer
from .read import _read
from .session import _require_spark, _session
from .write import _to_arrow

# what each partition sends back: the local matches table and the training document
_MATCH_SCHEMA = ("benchmark string, item_id string, training_id string, rule string, "
                 "overlap double, ngram string, item long, doc long")


def contamination_sources(inputs, evals: EvalSets, source_options: dict, *, spark=None,
                          quiet: bool = True) -> ContaminationResult:
    """The local engine's report and matches (same rows, order and counts) for training
    ``inputs`` read by Spark; ``source_options``: those of
    :func:`neardup.spark.read_documents`."""
    _require_spark()
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    if spark is None:
        spark = _session(quiet=quiet)
    timer = SparkStageTimer(spark, quiet)
    lean = dataclasses.replace(evals, sets=[dataclasses.replace(s, documents=None)
                                            for s in evals.sets])
    with timer.stage("read"):
        read = _read(spark, paths, **source_options)
        try:
            report = read.report()
        except BaseException:
            read.release()
            raise
    try:
        with timer.stage("match", "evaluation items in the training documents"):
            shared = spark.sparkContext.broadcast(lean)
            found = _to_arrow(read.documents.select("doc", "id", "text")
                              .mapInArrow(_matcher(shared), _MATCH_SCHEMA))
            shared.unpersist()
    finally:
        read.release()
    timer.say_totals()
    doc = found.column("doc").to_numpy().astype(np.int64)
    item = found.column("item").to_numpy().astype(np.int64)
    matches = sorted_matches(found.drop(["doc"]), evals, doc)
    local_report = {k: v for k, v in report.items() if k not in ("inputs", "notes")}
    counts = counting.contamination_counts(local_report, documents=local_report["processed"],
                                           matched=int(np.unique(doc).size))
    return ContaminationResult(benchmark_report(evals, item, doc), matches, counts,
                               local_report,
                               {name: round(v, 4) for name, v in timer.seconds.items()},
                               {s.name: s.read_report for s in evals.sets})


def _matcher(shared):
    """The ``mapInArrow`` body: each batch of (doc, id, text) matched against the broadcast
    evaluation sets; the batch's matches, with their training document's number."""
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
            doc = batch.column("doc").to_numpy(zero_copy_only=False)[matches.doc]
            table = table.append_column("doc", pa.array(doc, pa.int64()))
            yield from table.to_batches()
    return body
