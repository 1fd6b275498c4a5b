"""``neardup index build --engine spark``: the executors write the index's segments.

Documents are read, shingled and signed in the one pass of :func:`neardup.spark.find_sources`;
the usable ones (``min_shingles`` or more) are cut into segments by document number
alone (segment k: ``doc * segments div documents = k``, consecutive documents in input
order, the same on every run), and the task that holds segment k writes it with the
writer the door hands in (:class:`neardup.index.SegmentWriter`, on a
file system the driver sees: the index folder must be shared, as for ``--against`` on
Spark). The driver only lists the entries the tasks return (a few hundred bytes each), so
no document passes through it. The index holds the local build's rows in the same order,
split into segments; after ``neardup index compact`` its files are the local build's,
byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa

from .stages import _csr, _signature_matrix
from .write import part_runs

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    F = None

# documents a segment: a task holds its rows' sets and signatures (~1.3 KB a document)
SEGMENT_DOCUMENTS = 200_000


def write_segments(signed, writer, config) -> dict:
    """The segments of the signed documents ``signed`` (doc, id, size, shingles,
    signature), written by the executors with ``writer``: {"entries": manifest entries in
    document order, "names": segment numbers the tasks may use, "documents": rows read,
    "set_aside": documents with fewer than ``min_shingles`` shingles}."""
    read, usable = (signed.agg(F.count("*"),
                               F.count(F.when(F.col("size") >= config.min_shingles, 1)))
                    .first())
    parallelism = signed.sparkSession.sparkContext.defaultParallelism
    parts = max(1, min(parallelism, -(-usable // 1000)), -(-usable // SEGMENT_DOCUMENTS))
    # segment k: the usable documents among doc * parts div read = k, a function of the
    # rows alone (a range partitioner's cuts would follow its samples)
    segment = F.expr(f"doc * {parts} div {max(1, int(read))}").cast("long")
    rows = (signed.where(F.col("size") >= config.min_shingles)
            .select(segment.alias("_part"), "doc", "id", "shingles", "signature")
            .repartition(parts, "_part").sortWithinPartitions("_part", "doc"))
    listed = rows.mapInArrow(_segment_task(writer, config), "first long, entry string")
    entries = [json.loads(r.entry) for r in sorted(listed.collect(), key=lambda r: r.first)]
    return {"entries": entries, "names": parts, "documents": int(read),
            "set_aside": int(read - usable)}


def _segment_task(writer, config):
    """mapInArrow body: each segment k the partition holds (its documents ascending) →
    segment k of ``writer``; one row a segment (its first document, its manifest entry)."""
    bits = config.bits or 32

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for segment, tables in part_runs(batches):
            table = pa.concat_tables(list(tables)).combine_chunks()
            sets = _csr(table.column("shingles").chunk(0), config.hash_bits)
            signatures = _signature_matrix(table.column("signature").chunk(0),
                                           config.num_perm, bits)
            entry = writer(segment, table.column("id").to_pylist(), sets, signatures)
            yield pa.RecordBatch.from_arrays(
                [pa.array([table.column("doc")[0].as_py()], pa.int64()),
                 pa.array([json.dumps(entry)])], names=["first", "entry"])
    return run
