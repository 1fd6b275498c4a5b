"""``find/dedup NEW --against IDX --engine spark``: the new documents' Spark run, then every
pair new × indexed, the local query's answer (:mod:`neardup.index.query`) row for row.

What crosses the layers: the Spark engine never imports the index (``spark`` and
``index`` are siblings, see CONTRIBUTING.md). The door (:mod:`neardup.api`) opens the
index, checks the query's options against it and its files (hashes included), and hands
this module a *probe*: a picklable object that answers ``candidates(keys)`` (query row,
index document, segment of every key match) and ``rows(documents)`` (their shingle sets,
signatures and ids); :class:`neardup.index.query.IndexProbe` is the one neardup makes.

The executors read the memory-mapped segments, not a broadcast of band keys: a
segment's keys are already sorted on disk (``np.searchsorted`` touches a few pages per
query key), the exact Jaccard needs the candidates' CSR rows, which a broadcast would
have to carry too, and a broadcast ships b × n × 12 bytes of keys and documents (plus
every set) to each executor however few documents are new. So each task maps the
segments (once per task, layout checked; the driver checked the hashes), searches its
partition's heads' band keys and verifies the matches with the local stage functions
(:func:`~neardup.verify.exact_jaccard`, :meth:`~neardup.minhash.Signatures.estimate`), as
:func:`_probed_batches`. No signature or set goes to the driver; the index must be at
the same path on every executor (local mode: any folder; a cluster: a shared mount), as
a results folder must. A ``compact`` of the index while the job runs removes segments
its tasks still map: they fail naming the missing file (run again).

Then, with DataFrame operations, as :func:`neardup.index.query.against` does with arrays:
the indexed documents that were candidates numbered after the n_new new ones in index
order (``doc_b = n_new + position``), the verified pairs expanded to every member of the
head's identical group, clusters as connected components of the new clusters and the
pairs with the index, and the counts of the local query, keys in its
order. ``source_a``/``source_b`` (pairs) and ``source`` (documents, clusters) say where a
document comes from, as locally.

Which new documents stay is the local rule (:func:`neardup.cluster.anchored_cover`): a
new document goes only for one that stays, indexed or new and kept before it, at J ≥ t.
The cover visits documents in one order over the whole graph, so one task runs the local
kernel on every edge that touches a new document (:func:`_anchored_removed`), as star
clusters do (on the driver, :mod:`neardup.spark.found`, the same limit).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from .. import cluster, verify
from .._core import counts as counting
from ..lsh import sorted_unique
from ..minhash import Signatures
from ..pairs import PAIR_SCHEMA
from ..shingling import ShingleSets
from .components import LOCAL_EDGES, connected_components, task_edges
from .stages import _csr, _row_values, _signature_matrix
from .write import SEGMENT_BUCKETS, TableOrder, cluster_bucket, key_bucket

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, Window
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = Window = F = None

SOURCE_NEW, SOURCE_INDEX = "new", "index"  # the local query's values (index.query)
PAIRS_WITH_SOURCES = PAIR_SCHEMA.append(pa.field("source_a", pa.string())).append(
    pa.field("source_b", pa.string()))
_PROBED_SCHEMA = ("doc_a long, index_doc long, segment long, jaccard double, "
                  "estimate double, jaccard_6 double, estimate_6 double, index_id string, "
                  "index_size long")


def _probed_batches(probe, config):
    """mapInArrow body over heads (doc, keys, shingles, signature): every (head, indexed
    document) pair sharing a band key, with its exact Jaccard and estimate, the indexed
    document's id and set size (one row a candidate, before verification)."""
    bits = config.bits or 32

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            q = batch.num_rows
            if q == 0:
                continue
            flat, _ = _row_values(batch.column("keys"), np.int64)
            rows, documents, segments = probe.candidates(flat.view(np.uint64).reshape(q, -1))
            if rows.size == 0:
                continue
            listed = sorted_unique(documents)
            sets, signatures, ids = probe.rows(listed)
            at = np.searchsorted(listed, documents)
            both = ShingleSets.concat([_csr(batch.column("shingles"), config.hash_bits), sets])
            jaccard = verify.exact_jaccard(both, rows, q + at)
            matrix = np.concatenate([_signature_matrix(batch.column("signature"),
                                                       config.num_perm, bits), signatures])
            estimate = Signatures(matrix, config.family, config.num_perm, config.seed,
                                  bits).estimate(rows, q + at)
            yield pa.RecordBatch.from_arrays([
                pa.array(batch.column("doc").to_numpy()[rows]), pa.array(documents),
                pa.array(segments), pa.array(jaccard), pa.array(estimate),
                pa.array(jaccard.round(6)), pa.array(estimate.round(6)),
                ids.take(pa.array(at)), pa.array(sets.sizes[at].astype(np.int64))],
                names=["doc_a", "index_doc", "segment", "jaccard", "estimate", "jaccard_6",
                       "estimate_6", "index_id", "index_size"])
    return run


def _numbered_after(df: DataFrame, column: str, first: int) -> DataFrame:
    """``df`` with ``doc``: ``first`` + the row's rank by ``column`` (distinct values),
    from per-partition counts (one small job), not a window over one partition."""
    part = F.spark_partition_id()
    ranked = (df.orderBy(column)
              .select("*", part.alias("_part"), (F.monotonically_increasing_id()
                                                 - F.shiftleft(part.cast("long"), 33))
                      .alias("_rank")).persist())
    offsets, total = [], first
    for row in ranked.groupBy("_part").count().orderBy("_part").collect():
        offsets += [F.lit(row["_part"]), F.lit(total)]
        total += row["count"]
    doc = F.create_map(*offsets)[F.col("_part")] + F.col("_rank") if offsets else F.lit(None)
    return ranked.withColumn("doc", doc.cast("long")).drop("_part", "_rank")


def with_index(result, signed: DataFrame, probe):
    """``result`` (a :class:`~neardup.spark.SparkFindResult` of the new documents, run
    with the index's options) against the index ``probe`` reads: the local query's
    tables and counts (see the module docstring)."""
    from dataclasses import replace

    started = time.perf_counter()
    config = result.config
    n_new = int(result.counts["documents"])
    identical = result.identical
    heads = (signed.where(F.col("size") >= config.min_shingles)
             .join(identical.where(F.col("doc") != F.col("head_doc")).select("doc"), "doc",
                   "left_anti")
             .select("doc", "keys", "shingles", "signature"))
    found = heads.mapInArrow(_probed_batches(probe, config), _PROBED_SCHEMA).persist()
    listed = _numbered_after(found.select("index_doc", "index_id", "index_size").distinct(),
                             "index_doc", n_new).persist()
    found = found.join(listed.select("index_doc", F.col("doc").alias("doc_b")),
                       "index_doc").persist()
    verified = found.where(F.col("jaccard") >= config.threshold) if config.verify else found
    verified = verified.persist()

    members = identical.select("head_doc", "doc")
    group_sizes = identical.select("head_doc", "group_size").distinct()
    new_ids = signed.select("doc", "id")
    index_pairs = (verified.select(F.col("doc_a").alias("head_doc"), "doc_b",
                                   F.col("index_id").alias("id_b"),
                                   F.col("jaccard_6").alias("jaccard"),
                                   F.col("estimate_6").alias("estimate"))
                   .join(members, "head_doc", "left")
                   .select(F.coalesce("doc", "head_doc").alias("doc_a"), "doc_b", "id_b",
                           "jaccard", "estimate")
                   .join(new_ids.select(F.col("doc").alias("doc_a"), F.col("id").alias("id_a")),
                         "doc_a"))
    new, index = F.lit(SOURCE_NEW), F.lit(SOURCE_INDEX)
    pair_columns = ["id_a", "id_b", "jaccard", "estimate", "doc_a", "doc_b"]
    pairs = (result.pairs.select(*pair_columns, new.alias("source_a"), new.alias("source_b"))
             .unionByName(index_pairs.select(*pair_columns, new.alias("source_a"),
                                             index.alias("source_b")))
             .orderBy("doc_a", "doc_b"))
    set_pairs = (result.set_pairs.unionByName(
        verified.join(new_ids.select(F.col("doc").alias("doc_a"), F.col("id").alias("id_a")),
                      "doc_a")
        .select("id_a", F.col("index_id").alias("id_b"), F.col("jaccard_6").alias("jaccard"),
                F.col("estimate_6").alias("estimate"), "doc_a", "doc_b"))
        .orderBy("doc_a", "doc_b"))

    # clusters: components of the new clusters (each member to its label) and the pairs
    # with the index; a label is the smallest document, always a new one
    edges = (result.labels.where(F.col("doc") != F.col("label"))
             .select(F.col("label").alias("doc_a"), F.col("doc").alias("doc_b"))
             .union(verified.select("doc_a", "doc_b")))
    by_label = Window.partitionBy("label")
    combined = (connected_components(edges, "doc_a", "doc_b").withColumnRenamed("node", "doc")
                .withColumn("cluster_size", F.count("*").over(by_label))
                .withColumn("with_index", F.max(F.col("doc") >= n_new).over(by_label))
                .persist())
    label_ids = result.documents.select(F.col("doc").alias("label"),
                                        F.col("id").alias("label_id"))
    placed = combined.select("doc", "label", "with_index").join(label_ids, "label")
    removed = _anchored_removed(result, verified, identical, n_new)
    new_documents = (result.documents.join(placed, "doc", "left").join(removed, "doc", "left")
                     .select("doc", "id", "shingles", "status",
                             F.coalesce("label_id", "cluster").alias("cluster"),
                             F.coalesce(~F.col("removed"), F.col("representative"))
                             .alias("representative"), new.alias("source")))
    indexed_documents = (listed.join(placed, "doc", "left")
                         .select("doc", F.col("index_id").alias("id"),
                                 F.col("index_size").alias("shingles"),
                                 F.lit("indexed").alias("status"),
                                 F.coalesce("label_id", "index_id").alias("cluster"),
                                 F.lit(True).alias("representative"), index.alias("source")))
    documents = new_documents.unionByName(indexed_documents).orderBy("doc").persist()
    cluster_rows = combined.select("doc", "label", "cluster_size").join(documents, "doc")
    cluster_order = (F.col("cluster_size").desc(), "label", "doc")
    cluster_columns = ("cluster", "id", "cluster_size", "representative", "shingles", "doc",
                       "source")
    clusters = cluster_rows.orderBy(*cluster_order).select(*cluster_columns)
    labels = (documents.select("doc").join(combined.select("doc", "label"), "doc", "left")
              .select("doc", F.coalesce("label", "doc").alias("label")))
    candidate_rows = (result.candidates.withColumn("_segment", F.lit(-1).cast("long"))
                      .unionByName(found.select(
                          "doc_a", "doc_b", F.col("jaccard_6").alias("jaccard"),
                          F.col("estimate_6").alias("estimate"),
                          (F.col("jaccard") >= config.threshold).alias("verified"),
                          F.col("segment").alias("_segment"))))
    candidate_order = ("_segment", "doc_a", "doc_b")
    candidates = candidate_rows.orderBy(*candidate_order).drop("_segment")

    counts = _counts(result.counts, n_new, probe, found, listed, verified, group_sizes,
                     combined, new_documents)
    seconds = result.seconds  # the run's timer's: the stages after this one add to it
    seconds["against index"] = time.perf_counter() - started
    end = n_new + counts["index"]["documents_listed"]  # documents 0..end-1
    pair_order = TableOrder(("doc_a", "doc_b"), key_bucket("doc_a", end))
    orders = {**result.orders, "pairs": pair_order, "set_pairs": pair_order,
              "documents": TableOrder(("doc",), key_bucket("doc", end)),
              "clusters": TableOrder(cluster_order, cluster_bucket(end), cluster_rows),
              # the new documents' candidates, then each segment's: a few buckets each
              "candidates": TableOrder(candidate_order, (F.col("_segment") + 1)
                                       * SEGMENT_BUCKETS
                                       + key_bucket("doc_a", n_new, SEGMENT_BUCKETS),
                                       candidate_rows)}
    return replace(result, pairs=pairs, set_pairs=set_pairs, clusters=clusters,
                   documents=documents, candidates=candidates, labels=labels, counts=counts,
                   seconds=seconds, pairs_schema=PAIRS_WITH_SOURCES,
                   new_documents=n_new, orders=orders, found=None)


def _anchored_removed(result, verified: DataFrame, identical: DataFrame, n_new: int,
                      local_edges: int = LOCAL_EDGES) -> DataFrame:
    """(doc, removed) of every new document on an edge (a verified pair, new × new or
    with the index, or an identical copy): whether the local rule removes it.

    Rows sent to one task: kind 0 a pair of new heads, kind 1 a new head and an indexed
    document (numbered from n_new), kind 2 (head, copy), kind 3 (document, whether the new
    run chose it), the order the cover visits in: chosen documents first, then the rest,
    each in input order, as locally."""
    pairs = (result.set_pairs.select(F.col("doc_a").alias("a"), F.col("doc_b").alias("b"),
                                     F.col("jaccard").cast("double"), F.lit(0).alias("kind"))
             .union(verified.select(F.col("doc_a").alias("a"), F.col("doc_b").alias("b"),
                                    F.col("jaccard").cast("double"), F.lit(1).alias("kind")))
             .union(identical.where(F.col("doc") != F.col("head_doc"))
                    .select(F.col("head_doc").alias("a"), F.col("doc").alias("b"),
                            F.lit(1.0).alias("jaccard"), F.lit(2).alias("kind"))))
    edges = pairs.localCheckpoint(eager=True)
    count = edges.count()
    if count > local_edges:
        raise ValueError(f"dedup against an index on Spark runs one task over every edge: "
                         f"{count:,} edges are over its limit of {local_edges:,}; use the "
                         f"local engine")
    on_edges = (edges.select(F.col("a").alias("doc"))
                .union(edges.where(F.col("kind") != 1).select(F.col("b").alias("doc")))
                .distinct())
    nodes = (on_edges.join(result.documents.select("doc", "representative"), "doc")
             .select(F.col("doc").alias("a"), F.col("representative").cast("long").alias("b"),
                     F.lit(None).cast("double").alias("jaccard"), F.lit(3).alias("kind")))
    return (edges.union(nodes).coalesce(1)
            .mapInArrow(_anchored_task(n_new), "doc long, removed boolean"))


def _anchored_task(n_new: int):
    """mapInArrow body of :func:`_anchored_removed`: the local cover on the documents of
    the edges, numbered densely (new ones in input order, then the indexed ones)."""

    def run(batches):
        task = task_edges(batches, node_kind=3)
        if task is None:
            return
        a, b, kind, jaccard, free, chosen = task
        chosen = chosen.astype(bool)
        anchored = np.unique(b[kind == 1])
        f = free.size

        def number(docs):
            return np.where(docs < n_new, np.searchsorted(free, docs),
                            f + np.searchsorted(anchored, docs))

        head = np.arange(f + anchored.size, dtype=np.int64)
        copy = kind == 2
        head[number(b[copy])] = number(a[copy])
        pair = kind <= 1
        set_i, set_j, weight = number(a[pair]), number(b[pair]), jaccard[pair]
        by_pair = np.lexsort((set_j, set_i))
        visit = np.concatenate([np.flatnonzero(chosen), np.flatnonzero(~chosen)])
        rank = np.empty(f, dtype=np.int64)
        rank[visit] = np.arange(f, dtype=np.int64)
        matched, _ = cluster.anchored_cover(head, set_i[by_pair], set_j[by_pair],
                                            weight[by_pair], f, rank)
        yield pa.RecordBatch.from_arrays([pa.array(free), pa.array(matched >= 0)],
                                         names=["doc", "removed"])

    return run


def _counts(before: dict, n_new: int, probe, found: DataFrame, listed: DataFrame,
            verified: DataFrame, group_sizes: DataFrame, combined: DataFrame,
            new_documents: DataFrame) -> dict:
    """The local query's counts (:func:`neardup.index.query.against`), keys in its order:
    a pair with an indexed document stands for (head's group size) document pairs; one of
    equal sets (J = 1 exactly) is counted identical, as a batch run groups them."""
    size = F.coalesce("group_size", F.lit(1))
    same = F.col("jaccard") == 1.0
    row = (verified.join(group_sizes.withColumnRenamed("head_doc", "doc_a"), "doc_a", "left")
           .agg(F.count("*").alias("set_pairs"), F.sum(size).alias("pairs"),
                F.sum(F.when(same, size).otherwise(0)).alias("identical"),
                F.sum(F.when(same, 1).otherwise(0)).alias("identical_sets"),
                F.countDistinct("doc_b").alias("in_pairs")).first())
    with_index, identical = int(row["pairs"] or 0), int(row["identical"] or 0)
    clusters = combined.agg(F.countDistinct("label").alias("clusters"),
                            F.count("*").alias("documents"),
                            F.sum(F.when((F.col("doc") < n_new) & F.col("with_index"), 1)
                                  .otherwise(0)).alias("new_with_index")).first()
    n_found = found.count()
    identical_sets = int(row["identical_sets"] or 0)
    index = counting.index_section(
        path=probe.path, documents=probe.documents, segments=len(probe.manifest["segments"]),
        candidates=n_found, documents_listed=listed.count(), documents_in_pairs=row["in_pairs"],
        pairs_with_index=with_index, identical_pairs_with_index=identical,
        new_in_clusters_with_index=clusters["new_with_index"] or 0)
    counts = counting.against_index(
        before,
        pairs=counting.pair_counts(
            before["identical_pairs"] + identical,
            before["near_duplicate_pairs"] + with_index - identical,
            before["set_pairs"] + int(row["set_pairs"]) - identical_sets),
        candidates=before["candidates"] + n_found, clusters=clusters["clusters"],
        documents_in_clusters=clusters["documents"],
        removable=new_documents.where(~F.col("representative")).count(),
        new_documents=n_new, index=index)
    return counts
