"""``neardup index build --engine spark --bloom``: the executors set the Bloom filters.

Documents are read, shingled and signed in the one pass of
:func:`neardup.spark.index_sources`. The driver counts the usable ones (``min_shingles``
or more) and those set aside, and hands the counts to the door's ``size``, which sizes
the filters as the local build does (and refuses what it refuses: an empty build without
``--capacity``, filters this machine cannot hold) and returns a
:class:`neardup.index.bloom.FilterFiller`: the generations' plans and the rank of the
usable document each one starts at. A generation boundary past the first is a rank;
the driver finds the document number at that rank by counting the usable documents in
blocks of :data:`RANK_BLOCK` numbers and listing those of the few blocks a boundary
falls in (two small jobs, run only when the build opens more than one generation).

Each task then sets the keys of its partition's documents in zeroed filters of the full
size, with the local kernels (through the filler), and cuts them into slices of
:data:`SLICE_WORDS` words. The slices are OR-ed by (generation, filter, slice) on the
executors (``reduceByKey``), so the driver receives each word of the filters once,
however many partitions there are, and holds the filters once, as the local build does.
Inserting is setting bits, so the OR is the local build's filters, byte for byte, under
any partitioning of the input (tests/spark/test_bloom_build.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from .stages import _csr, _signature_matrix

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    F = None

SLICE_WORDS = 1 << 20  # 8 MiB of a filter a row: what the executors OR, key by key
RANK_BLOCK = 1 << 16  # document numbers a block, to find a generation's first document
_PIECES = "generation long, kind long, slice long, words binary"


def fill_filters(signed, size, config) -> dict:
    """The Bloom filters of the signed documents ``signed`` (doc, shingles, size,
    signature), set by the executors: {"filters": one (band filters, exact-copy filter)
    pair per generation, "documents": rows read, "set_aside": documents with fewer than
    ``min_shingles`` shingles}. ``size(documents, set_aside)`` returns the filler."""
    usable_rows = F.col("size") >= config.min_shingles
    read, usable = signed.agg(F.count("*"), F.count(F.when(usable_rows, 1))).first()
    filler = size(int(usable), int(read - usable))
    rows = signed.where(usable_rows).select("doc", "shingles", "signature")
    bounds = _first_documents(rows, list(filler.starts[1:]))
    pieces = rows.mapInArrow(_filter_task(filler, bounds, config), _PIECES)
    slices = sum(-(-(plan.bands + 1) * plan.words // SLICE_WORDS) for plan in filler.plans)
    parallelism = signed.sparkSession.sparkContext.defaultParallelism
    merged = (pieces.rdd.map(lambda r: ((r.generation, r.kind, r.slice), bytes(r.words)))
              .reduceByKey(_or_words, numPartitions=max(1, min(parallelism, slices)))
              .collect())
    return {"filters": _assemble(filler, merged), "documents": int(read),
            "set_aside": int(read - usable)}


def _first_documents(rows, ranks: list[int]) -> np.ndarray:
    """int64[len(ranks)]: the document number of the usable document of each rank
    (ascending ranks, counted from 0 in document order)."""
    if not ranks:
        return np.zeros(0, dtype=np.int64)
    block = F.expr(f"doc div {RANK_BLOCK}").alias("block")
    counted = sorted((r[0], r[1]) for r in rows.groupBy(block).count().collect())
    blocks = np.array([b for b, _ in counted], dtype=np.int64)
    ends = np.cumsum([c for _, c in counted], dtype=np.int64)  # ranks before each block's end
    at = np.searchsorted(ends, np.asarray(ranks, dtype=np.int64), side="right")
    wanted = sorted(set(blocks[at].tolist()))
    listed = rows.where(F.expr(f"doc div {RANK_BLOCK}").isin(wanted)).select("doc").collect()
    docs = np.sort(np.array([r.doc for r in listed], dtype=np.int64))
    # the usable documents of the wanted blocks, in order: rank r is the
    # (r - ranks before its block)-th of its block
    before = ends - np.array([c for _, c in counted], dtype=np.int64)
    offsets = np.searchsorted(docs, blocks[at] * RANK_BLOCK)
    return docs[offsets + np.asarray(ranks, dtype=np.int64) - before[at]]


def _filter_task(filler, bounds: np.ndarray, config):
    """mapInArrow body: the partition's usable documents (doc, shingles, signature) →
    the slices of their filters that hold a bit (generation, kind 0 bands / 1 exact
    copies, slice, words)."""
    bits = config.bits or 32

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filters: dict = {}
        for batch in batches:
            if not batch.num_rows:
                continue
            docs = batch.column("doc").to_numpy()
            generations = np.searchsorted(bounds, docs, side="right")
            filler.insert(filters, generations, _csr(batch.column("shingles"),
                                                     config.hash_bits),
                          _signature_matrix(batch.column("signature"), config.num_perm,
                                            bits))
        for g, arrays in sorted(filters.items()):
            for kind, array in enumerate(arrays):
                words = array.reshape(-1)
                for s, lo in enumerate(range(0, words.size, SLICE_WORDS)):
                    piece = words[lo:lo + SLICE_WORDS]
                    if piece.any():
                        yield pa.RecordBatch.from_arrays(
                            [pa.array([g], pa.int64()), pa.array([kind], pa.int64()),
                             pa.array([s], pa.int64()),
                             pa.array([piece.tobytes()], pa.binary())],
                            names=["generation", "kind", "slice", "words"])
    return run


def _or_words(a: bytes, b: bytes) -> bytes:
    return np.bitwise_or(np.frombuffer(a, np.uint64), np.frombuffer(b, np.uint64)).tobytes()


def _assemble(filler, merged) -> list[tuple[np.ndarray, np.ndarray]]:
    """The OR-ed slices, put back: (band filters (b, words), exact-copy filter (1, words))
    per generation, zero where no task set a bit."""
    filters = [(np.zeros((plan.bands, plan.words), dtype=np.uint64),
                np.zeros((1, plan.words), dtype=np.uint64)) for plan in filler.plans]
    for (g, kind, s), words in merged:
        flat = filters[g][kind].reshape(-1)
        piece = np.frombuffer(words, dtype=np.uint64)
        flat[s * SLICE_WORDS:s * SLICE_WORDS + piece.size] = piece
    return filters
