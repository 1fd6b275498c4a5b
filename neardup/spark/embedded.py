"""A find on Spark on embeddings: the local engine's cosine stages run on partitions, the
pairs verified and clustered on the driver by the local engine's own code.

After the one pass that reads, shingles and signs (:mod:`neardup.spark.read`: the
documents, their ids and shingle counts), a find on vectors is:

1. **vectors**: each document's vector read again from its input, where the first read
   put it (:func:`~neardup.spark.read.positioned`): a JSON Lines line's field parsed by
   the worker, a Parquet row's column read by Spark; joined to the documents;
2. **length**: one small job counts the vectors of each length, so the driver picks the
   length every vector must have as :mod:`neardup.sources.vectors` does (JSON Lines:
   the most common length among the documents; Parquet: each input's most common length
   among its rows, then the one most inputs have, the smallest on a tie);
3. **normalise**: each partition's vectors normalised (:func:`neardup.cosine.normalise`,
   row by row, so a row's unit vector and reason are the local ones), persisted; one job
   counts the reasons, so the driver knows the usable vectors and picks the local plan
   (:meth:`~neardup.config.FindConfig.cosine_plan`: its hyperplanes depend on them);
4. **lsh**: the usable vectors' band keys (:func:`neardup.cosine.band_keys`, the same
   hyperplanes from the seed) paired as MinHash's are (:func:`~neardup.spark.found.
   lsh_candidates`, the local rule in each bucket);
5. **verify and cluster**: the unit vectors of the documents on an edge fetched (a
   semi-join), and on the driver the local functions: :func:`neardup.cosine.
   screened_cosine` (the same cosines, to the bit), :func:`neardup.pipeline.cluster_pairs`
   over these documents numbered in order, the counts by :func:`neardup._core.counts.
   find_counts`.

So the pairs, cosines, clusters, dedup copy and counts are the local engine's with
method "lsh" (method "auto" runs LSH on Spark, as on a shingle run; locally it may
choose the all-pairs comparison for a small input, which finds every pair LSH finds).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from .. import cosine, lsh
from .._core import counts as counting
from ..cluster import member_similarities
from ..config import FindConfig
from ..pipeline import cluster_pairs, fixed_method
from ..result import FindResult
from .found import Found, lsh_candidates
from .read import _ranked, positioned, read_lines
from .stages import _row_values
from .worker import settled

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = F = None

_VECTOR = "vec"  # a document's vector as read: array<double>, null for none
_UNITS_SCHEMA = "doc long, id string, size long, text_length long, reason string, unit binary"


def check_inputs(paths, fmt: str) -> None:
    """ValueError, before anything is read, where an input is not a JSON Lines or Parquet
    file Spark reads itself (a directory, a compressed file, standard input, ...): the
    executors read the vectors where the first read found each record."""
    from .. import sources
    from .read import _read_by_spark

    paths = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    for path in map(os.fspath, paths):
        spec = sources.format_named(sources.resolve_format(path, fmt))
        if spec.spark is None or spec.spark.frame not in ("text", "parquet") \
                or not _read_by_spark(path, spec.name):
            raise ValueError(f"{path}: --engine spark reads embeddings from JSON Lines and "
                             f"Parquet files it reads itself (not a directory, a compressed "
                             f"file or standard input); give those files, or run with "
                             f"--engine local")


def vector_frame(read, column: str) -> tuple[DataFrame, dict[int, np.ndarray], str]:
    """(doc, id, size, text_length, source, vec) of the signed documents of ``read``, the
    vector counts by length the driver picks the length from (source → counts by length,
    index -1 for a null; one key, -1, when they are counted over the documents) and what
    the counts name as the vectors' source."""
    from .. import sources
    from ..sources import vectors

    spark = read.signed.sparkSession
    columnar = all(sources.format_named(f).read_column is not None for f in read.formats)
    docs = (read.records.where(F.col("outcome") == "processed")
            .select("source", "record", "doc", "id", "size", "text_length"))
    parts, by_length = [], {}
    for source, (path, fmt) in enumerate(zip(read.paths, read.formats)):
        mine = docs.where(F.col("source") == source).drop("source")
        if sources.format_named(fmt).spark.frame == "text":
            lines = positioned(read_lines(spark, path, read.splits[source]), read.starts,
                               source).select("record", "raw")
            got = (mine.join(lines, "record")
                   .select("doc", "id", "size", "text_length", "record", "raw")
                   .mapInArrow(settled(_parsed_vectors(column, read.encoding)),
                               f"doc long, id string, size long, text_length long, "
                               f"{_VECTOR} array<double>"))
        else:
            import pyarrow.parquet as pq

            schema = pq.read_schema(path)
            if column not in schema.names:
                raise ValueError(f"embeddings: {path}: no column {column!r}; the columns "
                                 f"are {schema.names}")
            vectors.from_arrow(pa.nulls(0, schema.field(column).type))  # lists of numbers?
            frame = spark.read.parquet(path)
            values = frame[column].cast("array<double>").alias(_VECTOR)
            rows = positioned(_ranked(frame.select(values)), read.starts, source)
            got = mine.join(rows.select("record", _VECTOR), "record").drop("record")
            if columnar:  # the input's own length: over its rows, as the local reader
                by_length[source] = _length_counts(frame.select(values))
        parts.append(got.withColumn("source", F.lit(source)))
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    if not columnar:
        by_length[-1] = _length_counts(frame)
    return frame, by_length, f"{'column' if columnar else 'field'} {column}"


def _length_counts(frame: DataFrame) -> np.ndarray:
    """int64[d + 2]: how many vectors of ``frame`` have each length (index length + 1;
    index 0: nulls). One job."""
    length = F.when(F.col(_VECTOR).isNull(), -1).otherwise(F.size(_VECTOR))
    rows = frame.groupBy(length.alias("length")).count().collect()
    counts = np.zeros(2 + max([r["length"] for r in rows], default=0), dtype=np.int64)
    for r in rows:
        counts[r["length"] + 1] = r["count"]
    return counts


def common_length(by_length: dict[int, np.ndarray]) -> tuple[int, list[int]]:
    """(d, sources whose vectors are all of the wrong length): the length most vectors
    have (the smallest on a tie; 0 when none), over the documents, or per input and then
    over the inputs as :func:`neardup.sources.vectors.for_documents` picks it."""
    def most(counts: np.ndarray) -> int:
        present = counts[1:]
        return int(np.argmax(present)) if present.sum() else 0

    if -1 in by_length:
        return most(by_length[-1]), []
    dims = {source: most(counts) for source, counts in by_length.items()}
    values = list(dims.values())
    d = max(set(values), key=lambda x: (values.count(x), -x))
    return d, [source for source, dim in dims.items() if dim != d]


def _parsed_vectors(column: str, encoding: str):
    """mapInArrow body: (doc, id, size, text_length, record, raw line) → the document's
    ``column`` field as a list of doubles (null when absent or null), as the local
    reader reads the field with the record (:func:`neardup.sources.vectors.values_column`)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ..sources import decode_line
        from ..sources.vectors import values_column

        for batch in batches:
            values = [json.loads(decode_line(raw, record, encoding)).get(column)
                      for raw, record in zip(batch.column("raw").to_pylist(),
                                             batch.column("record").to_pylist())]
            vec = values_column(values)
            if not pa.types.is_list(vec.type) or not (
                    pa.types.is_integer(vec.type.value_type)
                    or pa.types.is_floating(vec.type.value_type)
                    or pa.types.is_null(vec.type.value_type)):
                raise ValueError(f"embeddings: the field {column!r} holds {vec.type}, not "
                                 f"lists of numbers")
            yield pa.RecordBatch.from_arrays(
                [batch.column(k) for k in ("doc", "id", "size", "text_length")]
                + [vec.cast(pa.list_(pa.float64()))],
                names=["doc", "id", "size", "text_length", _VECTOR])
    return run


def _normalised(d: int, wrong_sources: list[int]):
    """mapInArrow body: the vector frame's rows → (doc, id, size, text_length, reason,
    unit: the float32 unit vector's bytes, empty when unusable); a vector whose length
    is not ``d``, or from one of ``wrong_sources``, is of the wrong length."""
    wrong = np.asarray(wrong_sources, dtype=np.int64)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ..sources import vectors

        for batch in batches:
            n = batch.num_rows
            lengths, groups = vectors.by_length(batch.column(_VECTOR))
            reasons = np.full(n, "", dtype=object)
            reasons[lengths < 0] = cosine.NO_VECTOR
            bad = (lengths >= 0) & ((lengths != d)
                                    | np.isin(batch.column("source").to_numpy(), wrong))
            reasons[bad] = cosine.WRONG_LENGTH
            matrix = np.zeros((n, d), dtype=np.float64)
            if d in groups:
                matrix[lengths == d] = groups[d]
            unit, reasons = cosine.normalise(matrix, reasons)
            good = reasons == ""
            width = np.where(good, 4 * d, 0)
            offsets = np.zeros(n + 1, dtype=np.int32)
            np.cumsum(width, out=offsets[1:])
            data = np.ascontiguousarray(unit[good]).tobytes()
            units = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                           pa.py_buffer(data)])
            yield pa.RecordBatch.from_arrays(
                [batch.column(k) for k in ("doc", "id", "size", "text_length")]
                + [pa.array(reasons.tolist(), pa.string()), units],
                names=["doc", "id", "size", "text_length", "reason", "unit"])
    return run


def _unit_matrix(column, d: int) -> np.ndarray:
    values, _ = _row_values(column, np.float32)
    return values.reshape(-1, d) if d else np.zeros((len(column), 0), dtype=np.float32)


def _band_keys(plan: lsh.BandPlan, seed: int, d: int):
    """mapInArrow body: (doc, unit) of usable vectors → (doc, keys: the b band keys'
    bytes, as the MinHash signer writes them)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        planes = cosine.hyperplanes(d, plan.bands * plan.rows, seed)
        for batch in batches:
            unit = _unit_matrix(batch.column("unit"), d)
            keys = cosine.band_keys(unit, plan, seed, planes)
            width = 8 * plan.bands
            offsets = np.arange(batch.num_rows + 1, dtype=np.int32) * width
            column = pa.Array.from_buffers(pa.binary(), batch.num_rows, [
                None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(keys).tobytes())])
            yield pa.RecordBatch.from_arrays([batch.column("doc"), column], names=["doc", "keys"])
    return run


def found_on_vectors(read, config: FindConfig, timer
                     ) -> tuple[Found, dict, DataFrame, lsh.BandPlan]:
    """The find on embeddings past reading (see the module): (what the driver found of
    the documents on an edge, the counts, the documents' (doc, id, size, reason) rows,
    the plan)."""
    n = read.document_count
    with timer.stage("read vectors"):
        frame, by_length, shown = vector_frame(read, str(config.embeddings))
        d, wrong_sources = common_length(by_length)
    with timer.stage("normalise"):
        units = frame.mapInArrow(settled(_normalised(d, wrong_sources)), _UNITS_SCHEMA).persist()
        tally = {(r["reason"]): (int(r["count"]), int(r["shingles"] or 0)) for r in
                 units.groupBy("reason").agg(F.count("*").alias("count"),
                                             F.sum("size").alias("shingles")).collect()}
    usable, shingles = tally.get("", (0, 0))
    reasons = {reason: tally[reason][0] for reason in sorted(tally) if reason}  # as np.unique
    plan = config.cosine_plan(usable)
    good = units.where(F.col("reason") == "")
    with timer.stage("lsh"):
        keyed = good.select("doc", "unit").mapInArrow(settled(_band_keys(plan, config.seed, d)),
                                                      "doc long, keys binary")
        ci, cj, search = lsh_candidates(keyed, np.empty(0, dtype=np.int64), config, plan, n)
    with timer.stage("verify", f"{ci.size:,} candidates"):
        docs = np.unique(np.concatenate([ci, cj]))
        table = _fetched(good, docs)
        unit = _unit_matrix(table.column("unit"), d)
        i, j = np.searchsorted(docs, ci), np.searchsorted(docs, cj)
        cos = cosine.screened_cosine(unit, i, j, config.threshold)
        keep = cos >= config.threshold if config.verify else np.ones(i.size, dtype=bool)
        nan = np.full(i.size, np.nan)
        candidates = {"i": i, "j": j, "jaccard": nan, "estimate": nan, "cosine": cos,
                      "verified": cos >= config.threshold}
    m = docs.size
    sizes = table.column("size").to_numpy().astype(np.int64)
    key = table.column("text_length").to_numpy().astype(np.int64)
    with timer.stage("cluster"):
        none = np.empty(0, dtype=np.int64)
        ki, kj, kc = i[keep], j[keep], cos[keep]
        order = np.lexsort((kj, ki))
        ki, kj, kc = ki[order], kj[order], kc[order]
        pair_set, labels, representative = cluster_pairs(
            m, np.arange(m), none, none, ki, kj, np.full(ki.size, np.nan),
            np.full(ki.size, np.nan), config,
            key if config.representative in ("longest", "shortest") else None)
        lowest = counting.NOT_CENTER
        if config.clusters == "center":
            member, kept_for, _ = member_similarities(None, labels, representative,
                                                      measure=None)
            value = cosine.exact_cosine(unit, member, kept_for)
            value = value[~np.isnan(value)]
            lowest = round(float(value.min()), 6) if value.size else None
    status = np.empty(m, dtype=object)
    status.fill("ok")
    result = FindResult(ids=table.column("id").to_pylist(), config=config, plan=plan,
                        shingle_counts=sizes, status=status, pair_set=pair_set, labels=labels,
                        representative=representative, candidates=candidates, cosine=kc)
    method, method_choice = fixed_method(config, "spark")
    counts = counting.find_counts(
        documents=n, set_aside=n - usable, shingled=usable, shingles=shingles,
        identical_copies=0, candidates=int(ci.size), pairs=pair_set.counts(),
        **counting.cluster_counts(np.bincount(labels, minlength=m)),
        removable=int(m - representative.sum()), min_member_similarity=lowest,
        search=search, method=method, method_choice=method_choice,
        vectors=counting.vector_counts(source=shown, dimensions=d, reasons=reasons,
                                       usable=usable, hyperplanes=plan.num_perm,
                                       bands=plan.bands, rows=plan.rows))
    rows = units.select("doc", "id", "size", "reason")
    return Found(docs, result, lowest), counts, rows, plan


def _fetched(units: DataFrame, docs: np.ndarray) -> pa.Table:
    """doc, id, size, text_length, unit of ``docs`` (sorted), sorted by doc: a semi-join
    with ``docs`` broadcast, as :func:`neardup.spark.found.fetched` fetches sets."""
    from pyspark.sql.types import LongType, StructField, StructType

    spark = units.sparkSession
    wanted = spark.createDataFrame(pa.table({"doc": pa.array(docs, pa.int64())}),
                                   schema=StructType([StructField("doc", LongType())]))
    table = (units.select("doc", "id", "size", "text_length", "unit")
             .join(F.broadcast(wanted), "doc", "left_semi").toArrow())
    return table.sort_by("doc")
