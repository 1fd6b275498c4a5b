"""A find on Spark past signing: a few wide jobs, then the local engine's own code on the
driver.

After the one pass that reads, shingles and signs (:mod:`neardup.spark.read`), what is
left is small: the documents that share a set fingerprint, the candidate pairs, the
sets of the documents in them. So a find is:

1. **identical sets**: (fingerprint, doc) of the usable documents, those sharing a
   fingerprint collected (one shuffle of two longs a document);
2. **lsh**: the heads' band entries sent once, as blobs, to the partition of their
   bucket and paired there by the local rule (:func:`~neardup.spark.stages._band_blobs`,
   :func:`~neardup.spark.stages._bucket_batches`); the candidates and each partition's
   bucket stats collected;
3. **verify**: the sets, sketches, ids and lengths of the documents in a candidate pair
   or an identical group fetched (one filtering pass over the persisted documents); on the
   driver, the local functions: copies confirmed on their sets as
   :func:`neardup.pipeline.identical_groups` confirms them, :func:`~neardup.verify.exact_jaccard`,
   the estimates, then :func:`neardup.pipeline.cluster_pairs` (the local cluster stage)
   over these documents numbered in order (which keeps every label and tie), and the
   counts by :func:`neardup._core.counts.find_counts`;
4. **write**: the tables the driver holds (pairs, identical, clusters, candidates) written
   there by the local part writer; the documents table (n rows) by the executors, parts
   cut by document ranges (:func:`neardup.spark.write.write_result`).

The driver holds the documents on an edge: their sets and sketches (a few MB at a
million documents). Past :data:`DRIVER_PAIRS` candidate pairs or identical copies the run
is refused with a message, rather than running the driver out of memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import lsh, simhash, verify
from .._core import counts as counting
from ..cluster import member_similarities
from ..config import FindConfig
from ..minhash import Signatures
from ..pipeline import cluster_pairs, fixed_method
from ..result import FindResult
from ..shingling import ShingleSets
from .components import LOCAL_EDGES
from .stages import (
    _BUCKETED_SCHEMA,
    _band_blobs,
    _bucket_batches,
    _csr,
    _entry_types,
    _partition_targets,
    _row_values,
)
from .worker import settled

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = F = None

DRIVER_PAIRS = LOCAL_EDGES  # candidates or copies the driver verifies and clusters at most
DRIVER_DOCUMENTS = 1 << 22  # documents whose columns the driver holds at most (held_columns)


def _refuse_past_bound(what: str, count: int) -> None:
    if count > DRIVER_PAIRS:
        raise ValueError(f"the Spark engine verifies and clusters on the driver: {count:,} "
                         f"{what} are over its limit of {DRIVER_PAIRS:,}; raise the "
                         f"threshold or lower max_bucket")


def shared_fingerprints(usable: DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(heads, copies) of the ``usable`` documents by fingerprint: for each document whose
    fingerprint an earlier one has, (that earliest document, it); not yet confirmed on the
    sets. One job (a shuffle of fingerprint and doc)."""
    table = (usable.select("fingerprint", "doc")
             .withColumn("_m", F.count("*").over(_by_fingerprint()))
             .where(F.col("_m") > 1).select("fingerprint", "doc").toArrow())
    return _shared(table.column("doc").to_numpy().astype(np.int64),
                   table.column("fingerprint").to_numpy())


def held_fingerprints(columns: pa.Table, min_shingles: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shared_fingerprints` from the documents' columns the driver holds
    (:func:`held_columns`): no job."""
    usable = columns.column("size").to_numpy() >= min_shingles
    return _shared(columns.column("doc").to_numpy()[usable],
                   columns.column("fingerprint").to_numpy()[usable])


def _shared(doc: np.ndarray, prints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(doc, kind="stable")
    doc, prints = doc[order], prints[order]
    _, first_index, inverse = np.unique(prints, return_index=True, return_inverse=True)
    first_of = doc[first_index][inverse]
    member = first_of != doc
    _refuse_past_bound("identical copies", int(member.sum()))
    return first_of[member], doc[member]


def held_columns(signed: DataFrame, documents: int) -> pa.Table | None:
    """Every document's doc, id, size and fingerprint, collected to the driver in doc
    order by one job, when there are at most :data:`DRIVER_DOCUMENTS` (a few dozen bytes
    each): the driver then groups the identical sets, counts the repeated ids and writes
    the documents table itself, with no job for each. None past that: each is a Spark
    job."""
    if documents > DRIVER_DOCUMENTS:
        return None
    table = signed.select("doc", "id", "size", "fingerprint").toArrow()
    doc = table.column("doc").to_numpy()
    if doc.size > 1 and not (doc[1:] > doc[:-1]).all():
        table = table.take(pa.array(np.argsort(doc, kind="stable")))
    return pa.table({"doc": table.column("doc").cast(pa.int64()),
                     "id": table.column("id").cast(pa.string()),
                     "size": table.column("size").cast(pa.int64()),
                     "fingerprint": table.column("fingerprint").cast(pa.int64())}
                    ).combine_chunks()


def _by_fingerprint():
    from pyspark.sql import Window

    return Window.partitionBy("fingerprint")


def lsh_candidates(usable: DataFrame, skip: np.ndarray, config: FindConfig,
                   plan: lsh.BandPlan, n: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """The candidate pairs of heads (doc_a < doc_b, distinct, sorted) and the search's
    counts: the band entries of the usable documents but ``skip`` (the copies) shuffled
    once as blobs and paired inside their partitions by the local rule. One job (and
    :func:`~neardup.spark.stages._partition_targets`' small one)."""
    spark = usable.sparkSession
    n = max(1, n)
    types = _entry_types(n, plan.bands)
    entry = 8 + sum(t.itemsize for t in types)  # bytes a bucket entry: 64 MB a partition
    parts = max(2 * spark.sparkContext.defaultParallelism, n * plan.bands * entry // (64 << 20))
    blobs = _band_blobs(_partition_targets(spark, parts), types)
    skipped = spark.sparkContext.broadcast(np.asarray(skip, dtype=np.int64))
    rows = (usable.select("doc", "keys")
            .mapInArrow(settled(lambda batches: blobs(_skipping(batches, skipped))),
                        "dest long, entries binary")
            .repartition(parts, "dest")
            .mapInArrow(settled(_bucket_batches(n, config.max_bucket, config.bucket_policy,
                                                types)),
                        _BUCKETED_SCHEMA).toArrow())
    a = rows.column("doc_a")
    stats = pc.is_null(a)
    pairs = rows.filter(pc.invert(stats))
    i = pairs.column("doc_a").to_numpy().astype(np.int64)
    j = pairs.column("doc_b").to_numpy().astype(np.int64)
    _refuse_past_bound("candidate pairs", int(i.size))
    packed = np.unique(i * np.int64(n) + j)  # distinct, sorted by (doc_a, doc_b)
    i, j = packed // n, packed % n
    stat_rows = rows.filter(stats)
    largest = pc.max(stat_rows.column("largest")).as_py() or 0
    over = pc.sum(stat_rows.column("over")).as_py() or 0
    avoided = pc.sum(stat_rows.column("avoided")).as_py() or 0
    buckets = lsh.CandidateStats(buckets_over_limit=int(over), largest_bucket=int(largest),
                                 pairs_avoided=int(avoided))
    return i, j, counting.search_counts(buckets)


def _without(frame: DataFrame, skip: np.ndarray, schema: str) -> DataFrame:
    """``frame`` but the rows whose doc is in ``skip`` (broadcast, not in a plan)."""
    skipped = frame.sparkSession.sparkContext.broadcast(np.asarray(skip, dtype=np.int64))
    return frame.mapInArrow(settled(lambda batches: _skipping(batches, skipped)), schema)


def _skipping(batches: Iterator[pa.RecordBatch], skipped) -> Iterator[pa.RecordBatch]:
    """The batches but their rows whose doc is in ``skipped`` (a broadcast array): inside
    the body that takes them, so no Python worker of its own."""
    drop = skipped.value
    for batch in batches:
        if drop.size:
            batch = batch.filter(pa.array(~np.isin(batch.column("doc").to_numpy(), drop)))
        yield batch


def hamming_candidates(usable: DataFrame, skip: np.ndarray, config: FindConfig
                       ) -> tuple[np.ndarray, np.ndarray, dict]:
    """SimHash: the heads' pairs within the Hamming distance
    (:func:`~neardup.spark.stages._hamming_search`) and the search's counts."""
    from .stages import _hamming_search

    k = config.hamming_distance()
    heads = _without(usable.select("doc", "simhash", "keys"), skip,
                     "doc long, simhash long, keys binary")
    entries, candidates = _hamming_search(heads, k)
    pairs = candidates.orderBy("doc_a", "doc_b").toArrow()
    search = hamming_stats(entries, k)
    entries.unpersist()
    candidates.unpersist()
    i = pairs.column("doc_a").to_numpy().astype(np.int64)
    j = pairs.column("doc_b").to_numpy().astype(np.int64)
    _refuse_past_bound("candidate pairs", int(i.size))
    return i, j, search


def hamming_stats(entries: DataFrame, k: int) -> dict:
    """The search's counts (:class:`~neardup.simhash.SearchStats`, LSH's at zero) from
    the Hamming search's bucket entries, as the local search counts them."""
    row = (entries.groupBy("band", "key").agg(F.first("bucket_size").alias("m"))
           .agg(F.coalesce(F.sum(F.col("m") * (F.col("m") - 1)), F.lit(0)).alias("twice"),
                F.coalesce(F.max("m"), F.lit(0)).alias("largest")).first())
    stats = simhash.SearchStats(k, k + 1, int(row["twice"]) // 2, int(row["largest"]))
    return counting.search_counts(lsh.CandidateStats(), stats)


def fetched(signed: DataFrame, docs: np.ndarray, read=None) -> pa.Table:
    """doc, id, size, text_length, shingles, signature, simhash of ``docs`` (sorted), as
    Arrow, sorted by doc: one filtering pass over the persisted documents, in the JVM (a
    semi-join with ``docs`` broadcast), so only these documents reach the driver and none
    goes through a Python worker. ``read``: the read whose pass ``signed`` comes from,
    if it kept no shingles and signatures (:attr:`neardup.spark.read._Read.signer`):
    these documents are signed again from their lines (one more job)."""
    from pyspark.sql.types import LongType, StructField, StructType

    spark = signed.sparkSession
    wanted = spark.createDataFrame(pa.table({"doc": pa.array(docs, pa.int64())}),
                                   schema=StructType([StructField("doc", LongType())]))
    columns = ("doc", "id", "size", "text_length", "shingles", "signature", "simhash")
    if read is not None and read.signer is None:
        read = None  # its pass kept the sketches
    if read is not None:
        columns += ("source", "part", "record")
    table = (signed.select(*columns).join(F.broadcast(wanted), "doc", "left_semi")
             .toArrow()).sort_by("doc")
    return table if read is None else read.resigned(table).select(list(columns[:7]))


class Found:
    """What the driver computed for the documents on an edge (``docs``, sorted: the local
    problem's numbering), and the global tables from it."""

    def __init__(self, docs: np.ndarray, local: FindResult, lowest):
        self.docs = docs
        self.local = local
        self.lowest = lowest

    def _global(self, table: pa.Table, *names: str) -> pa.Table:
        for name in names:
            at = table.schema.get_field_index(name)
            local_docs = table.column(name).to_numpy()
            table = table.set_column(at, table.schema.field(at),
                                     pa.array(self.docs[local_docs], pa.int64()))
        return table

    def tables(self) -> dict[str, pa.Table]:
        """The local engine's tables but documents, with global document numbers."""
        r = self.local
        return {"pairs": self._global(r.pairs_table(), "doc_a", "doc_b"),
                "set_pairs": self._global(r.set_pairs_table(), "doc_a", "doc_b"),
                "identical": self._global(r.identical_table(), "doc", "head_doc"),
                "clusters": self._global(r.clusters_table(), "doc"),
                "candidates": self._global(r.candidates_table(), "doc_a", "doc_b")}

    def outcomes(self, keep: str) -> pa.Table:
        """What a dedup under ``keep`` does with each document on an edge: the local
        :meth:`~neardup.result.FindResult.outcomes_table` over them, with global document
        numbers. Every other document is a cluster of one: its own cluster, of size 1,
        kept and written, the duplicate of none."""
        return self._global(self.local.outcomes_table(keep), "doc")

    def explain_table(self, keep: str) -> pa.Table:
        """The local :meth:`~neardup.result.FindResult.explain_table`: a removed document
        is on an edge, and the local numbering keeps the input's order, so its rows are
        the whole run's."""
        return self.local.explain_table(keep)

    def in_clusters(self) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray]:
        """(docs, their cluster ids, representative, label docs) of the documents on an
        edge: every other document is a cluster of one, its own representative."""
        r = self.local
        return (self.docs, r.id_array.take(pa.array(r.labels)), r.representative,
                self.docs[r.labels])


def on_edges(batch: pa.RecordBatch, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where, at): the rows of ``batch`` whose doc is one of ``docs`` (sorted), and its
    index there (0 for the others)."""
    doc = batch.column("doc").to_numpy()
    at = np.minimum(np.searchsorted(docs, doc), max(0, docs.size - 1))
    where = (docs[at] == doc) if docs.size else np.zeros(doc.size, dtype=bool)
    return where, np.where(where, at, 0)


@dataclass
class Edges:
    """The documents on an edge and what the driver verified of them (see
    :func:`verified_edges`): ``docs`` (sorted; their local numbers are positions here),
    their fetched ``table`` and ``sets``; the confirmed identical copies (``h``, ``c``:
    local head and copy; ``heads_of``, ``copies``: the same, global); the candidate pairs
    of heads (``i``, ``j`` local; ``ci``, ``cj`` global) with their exact ``jaccard`` and
    ``estimate``; ``search``: the search's counts."""

    docs: np.ndarray
    table: pa.Table
    sets: ShingleSets
    h: np.ndarray
    c: np.ndarray
    heads_of: np.ndarray
    copies: np.ndarray
    i: np.ndarray
    j: np.ndarray
    ci: np.ndarray
    cj: np.ndarray
    jaccard: np.ndarray
    estimate: np.ndarray
    search: dict


def verified_edges(signed: DataFrame, usable: DataFrame, config: FindConfig,
                   plan: lsh.BandPlan, n: int, timer, read=None) -> Edges:
    """Identical sets grouped, the candidate search over the heads, and the documents on
    an edge fetched and verified on the driver (steps 1 to 3 of the module), for
    :func:`found_on_driver` and Spark's evaluate alike; ``read``: the read ``signed``
    comes from (:class:`neardup.spark.read._Read`), when a find on files made it: the
    documents' columns the driver holds (its ``columns``, :func:`held_columns`) and the
    sketches its pass left out (:func:`fetched`)."""
    columns = None if read is None else read.columns
    with timer.stage("group identical sets"):
        heads_of, copies = (shared_fingerprints(usable) if columns is None
                            else held_fingerprints(columns, config.min_shingles))
    while True:
        if config.sketch == "simhash":
            with timer.stage("hamming search"):
                ci, cj, search = hamming_candidates(usable, copies, config)
        else:
            with timer.stage("lsh"):
                ci, cj, search = lsh_candidates(usable, copies, config, plan, n)
        with timer.stage("verify", f"{ci.size:,} candidates"):
            docs = np.unique(np.concatenate([heads_of, copies, ci, cj]))
            table = fetched(signed, docs, read)
            sets = _csr(table.column("shingles"), config.hash_bits)
            local = np.searchsorted(docs, np.concatenate([heads_of, copies, ci, cj]))
            h, c, i, j = np.split(local, np.cumsum([heads_of.size, copies.size, ci.size]))
            confirmed = verify.exact_jaccard(sets, h, c) == 1.0
            if not confirmed.all():  # a fingerprint collision: the member stands on its own,
                heads_of, copies = heads_of[confirmed], copies[confirmed]  # in the buckets
                continue
            jaccard = verify.exact_jaccard(sets, i, j)
            estimate = _estimates(table, i, j, config)
        return Edges(docs, table, sets, h, c, heads_of, copies, i, j, ci, cj, jaccard,
                     estimate, search)


def found_on_driver(signed: DataFrame, config: FindConfig, plan: lsh.BandPlan, n: int,
                    documents: dict, char_fallback: bool, timer, read=None
                    ) -> tuple[Found, dict]:
    """The find past signing (see the module): (what the driver found, the counts).
    ``documents``: n, usable, shingles, chars of the signed documents; ``read``: the
    read they come from, if a find on files made it (:func:`verified_edges`)."""
    usable = signed.where(F.col("size") >= config.min_shingles)
    edges = verified_edges(signed, usable, config, plan, n, timer, read)
    docs, table, sets, h, c = edges.docs, edges.table, edges.sets, edges.h, edges.c
    i, j, jaccard, estimate = edges.i, edges.j, edges.jaccard, edges.estimate
    copies, ci, search = edges.copies, edges.ci, edges.search
    candidates = {"i": i, "j": j, "jaccard": jaccard, "estimate": estimate}
    real = jaccard >= config.threshold if config.verify else np.ones(i.size, dtype=bool)
    m = docs.size
    sizes = table.column("size").to_numpy().astype(np.int64)
    key = table.column("text_length").to_numpy().astype(np.int64)
    with timer.stage("cluster"):
        pair_set, labels, representative = cluster_pairs(
            m, np.arange(m), h, c, i[real], j[real], jaccard[real], estimate[real], config,
            key if config.representative in ("longest", "shortest") else None)
        lowest = counting.NOT_CENTER
        if config.clusters == "center":
            _, _, similarity = member_similarities(sets, labels, representative, "jaccard")
            lowest = round(float(similarity.min()), 6) if similarity.size else None
    status = np.empty(m, dtype=object)
    status.fill("ok")
    result = FindResult(ids=table.column("id").to_pylist(), config=config, plan=plan,
                        shingle_counts=sizes, status=status, pair_set=pair_set,
                        labels=labels, representative=representative,
                        candidates=candidates)
    with timer.stage("count"):  # from the rows the jobs returned: no job of its own
        counts = _counts(n, documents, copies, ci, pair_set, labels, representative, lowest,
                         search, config)
    return Found(docs, result, lowest), counts


def _counts(n, documents, copies, ci, pair_set, labels, representative, lowest, search,
            config) -> dict:
    m = labels.size
    cluster = counting.cluster_counts(np.bincount(labels, minlength=m))
    method, method_choice = fixed_method(config, "spark")
    return counting.find_counts(
        documents=n, shingled=documents["usable"], shingles=documents["shingles"],
        identical_copies=int(copies.size), candidates=int(ci.size), pairs=pair_set.counts(),
        **cluster, removable=int(m - representative.sum()), min_member_similarity=lowest,
        search=search, method=method, method_choice=method_choice)


def _estimates(table: pa.Table, i: np.ndarray, j: np.ndarray, config: FindConfig) -> np.ndarray:
    """The estimate of each candidate from the fetched sketches, as the local engine's."""
    if config.sketch == "simhash":
        prints = table.column("simhash").to_numpy(zero_copy_only=False).view(np.uint64)
        return simhash.jaccard_estimate(simhash.popcounts(prints[i] ^ prints[j]))
    bits = config.bits or 32
    dtype = np.uint32 if bits == 32 else (np.uint8 if bits <= 8 else np.uint16)
    values, offsets = _row_values(table.column("signature"), dtype)
    matrix = values.reshape(-1, config.num_perm) if values.size else np.empty(
        (0, config.num_perm), dtype=dtype)
    # every fetched document is usable: one signature a row, in doc order
    return Signatures(matrix, config.family, config.num_perm, config.seed, bits).estimate(i, j)
