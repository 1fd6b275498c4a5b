"""The Spark engine: the local pipeline's stage functions, run on partitions of a DataFrame.

Only the plumbing differs from :mod:`neardup.pipeline`. Per partition (``mapInArrow``)
the same functions run on the same arrays: :func:`~neardup.shingling.shingle`,
:func:`~neardup.shingling.set_fingerprints`, :func:`~neardup.minhash.minhash`,
:func:`~neardup.lsh.band_keys`, :func:`~neardup.verify.exact_jaccard` and
:meth:`~neardup.minhash.Signatures.estimate`. Every one of them works document by
document (or pair by pair), so a partition's output is bit-identical to the
corresponding rows of a local run. What crosses documents is done with DataFrame
operations: grouping identical sets, LSH buckets, candidate pairs, connected
components (large-star / small-star, Kiveris et al. 2014) and representatives.

With ``sketch="simhash"`` the partitions compute :func:`~neardup.simhash.fingerprints`
and :func:`~neardup.simhash.block_keys` instead of signatures and band keys, and the
Hamming search is a join: documents grouped by (block, block value), every pair inside
a group kept when popcount(xor) <= k and this block is the first the two agree on, as
:func:`~neardup.simhash.hamming_pairs` does, so each pair comes once. Its cost is the
pairs inside the groups (a group is not cut at ``max_bucket``, as locally).

Results are the local engine's, row for row: the same pairs (ids, exact Jaccard,
estimate), the same cluster labels (smallest document index) and representatives,
given the same document numbering (``order_col``, or the DataFrame's order).

Pairs are document pairs, as in :mod:`neardup.pairs`: LSH and verification run on the
heads of identical groups (one per distinct set), then joins list every document pair:
the members of a group among themselves (J = 1), and every member of A's group with
every member of B's for each verified pair of distinct sets (A, B). Counts come from
the group sizes, not from the listing.

Memory: a document's shingle array (4 or 8 bytes a shingle) travels with it to the
verification join; a signature is K x 4 bytes (K x 1 or 2 with ``bits``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from . import lsh, simhash, verify
from .config import FindConfig
from .evaluate import BRUTE_MAX_DOCUMENTS, Evaluation, document_pair_metrics
from .minhash import Signatures, minhash
from .pairs import PAIR_SCHEMA, too_many_pairs
from .shingling import ShingleSets, set_fingerprints, shingle

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, SparkSession, Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = SparkSession = Window = F = T = None

__all__ = ["SparkFindResult", "connected_components", "evaluate", "evaluate_sources", "find",
           "find_sources", "read_documents", "read_sources", "write_result"]


@dataclass
class SparkFindResult:
    """What a Spark run found, as DataFrames with the columns of the local tables.

    pairs: every document pair: id_a, id_b, jaccard, estimate, doc_a, doc_b, sorted by
        (doc_a, doc_b) (as ``FindResult.pairs_table``)
    set_pairs: pairs of distinct sets (doc_a, doc_b: their heads), the same columns
        (``set_pairs_table``)
    identical: group, id, group_size, doc, head_doc: every document in an identical group
        of two or more (``identical_table``)
    clusters: cluster, id, cluster_size, representative, shingles, doc (``clusters_table``)
    documents: doc, id, shingles, status, cluster, representative (``documents_table``)
    candidates: doc_a, doc_b, jaccard, estimate, verified (``candidates_table``)
    counts: the local engine's counts, same keys in the same order.
    """

    pairs: DataFrame
    set_pairs: DataFrame
    identical: DataFrame
    clusters: DataFrame
    documents: DataFrame
    candidates: DataFrame
    labels: DataFrame  # doc, label (smallest document index in the cluster)
    config: FindConfig
    plan: lsh.BandPlan
    counts: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    read_report: dict | None = None

    def summary(self) -> dict:
        return {"counts": self.counts, "config": self.config.as_dict(),
                "plan": self.plan.as_dict(), "read": self.read_report}


def _require_spark() -> None:
    if F is None:
        raise ImportError("the Spark engine needs pyspark: pip install 'neardup[spark]'")


# ---------------------------------------------------------------- per-partition stages


def _as_int64(values: np.ndarray) -> np.ndarray:
    """Shingle hashes as Spark longs: uint32 widened, uint64 reinterpreted (view back later)."""
    return values.view(np.int64) if values.dtype == np.uint64 else values.astype(np.int64)


def _from_int64(values: np.ndarray, hash_bits: int) -> np.ndarray:
    return values.view(np.uint64) if hash_bits == 64 else values.astype(np.uint32)


def _list_column(values: np.ndarray, offsets: np.ndarray, type_) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values, type_))


def _csr(column: pa.Array, hash_bits: int) -> ShingleSets:
    """A list<long> column back to the CSR the stage functions take."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = column.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = column.flatten().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return ShingleSets(offsets, _from_int64(values, hash_bits))


def _signature_matrix(column: pa.Array, num_perm: int, bits: int) -> np.ndarray:
    dtype = np.uint32 if bits == 32 else (np.uint8 if bits <= 8 else np.uint16)
    raw = b"".join(column.to_pylist())
    return np.frombuffer(raw, dtype=dtype).reshape(-1, num_perm)


def _sign_batches(config: FindConfig, plan: lsh.BandPlan, normalize, tokenize):
    """mapInArrow body: (doc, text) → (doc, text_length, shingles, size, fingerprint,
    signature, keys, simhash). Documents below ``min_shingles`` get no sketch and no keys.
    MinHash: the signature and its band keys (simhash null); SimHash: the fingerprint
    (simhash, as a long) and its block keys (signature null)."""
    plugins = {"tokenize": tokenize}
    if normalize is not None:
        plugins["normalize"] = normalize
    options = config.shingle_options(**plugins)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            texts = batch.column("text").to_pylist()
            texts = ["" if t is None else t for t in texts]
            sets = shingle(texts, options)
            sizes = sets.sizes
            set_prints = set_fingerprints(sets, config.seed)
            usable = np.flatnonzero(sizes >= config.min_shingles)
            n = sets.n
            sig_rows: list[bytes | None] = [None] * n
            key_rows: list[list[int] | None] = [None] * n
            simhash_rows: list[int | None] = [None] * n
            if config.sketch == "simhash":
                prints = simhash.fingerprints(sets.subset(usable), config.seed)
                keys = simhash.block_keys(prints, config.hamming_distance())
                for row, d in enumerate(usable.tolist()):
                    simhash_rows[d] = int(prints[row].view(np.int64))
                    key_rows[d] = keys[row].view(np.int64).tolist()
            else:
                signatures = minhash(sets.subset(usable), config.num_perm, config.seed,
                                     config.family)
                if config.bits is not None:
                    signatures = signatures.b_bit(config.bits)
                keys = lsh.band_keys(signatures.matrix, plan.bands, plan.rows)
                for row, d in enumerate(usable.tolist()):
                    sig_rows[d] = signatures.matrix[row].tobytes()
                    key_rows[d] = keys[row].view(np.int64).tolist()
            yield pa.RecordBatch.from_arrays([
                batch.column("doc"),
                pa.array(np.fromiter(map(len, texts), dtype=np.int64, count=n)),
                _list_column(_as_int64(sets.values), sets.offsets, pa.int64()),
                pa.array(sizes.astype(np.int64)),
                pa.array(set_prints.view(np.int64)),
                pa.array(sig_rows, pa.binary()),
                pa.array(key_rows, pa.list_(pa.int64())),
                pa.array(simhash_rows, pa.int64()),
            ], names=["doc", "text_length", "shingles", "size", "fingerprint", "signature",
                      "keys", "simhash"])
    return run


_SIGNED_SCHEMA = ("doc long, text_length long, shingles array<long>, size long, "
                  "fingerprint long, signature binary, keys array<long>, simhash long")


def _verify_batches(config: FindConfig):
    """mapInArrow body: candidate pairs with both sets and sketches → exact J, estimate
    (MinHash: from the signatures; SimHash: the J of the fingerprints' Hamming distance)."""
    bits = config.bits or 32

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            m = batch.num_rows
            if m == 0:
                continue
            sets = ShingleSets.concat([_csr(batch.column("shingles_a"), config.hash_bits),
                                       _csr(batch.column("shingles_b"), config.hash_bits)])
            i = np.arange(m, dtype=np.int64)
            j = i + m
            jaccard = verify.exact_jaccard(sets, i, j)
            if config.sketch == "simhash":
                prints_a, prints_b = (batch.column(name).to_numpy().view(np.uint64)
                                      for name in ("signature_a", "signature_b"))
                estimate = simhash.jaccard_estimate(simhash.popcounts(prints_a ^ prints_b))
            else:
                matrix = np.concatenate([
                    _signature_matrix(batch.column("signature_a"), config.num_perm, bits),
                    _signature_matrix(batch.column("signature_b"), config.num_perm, bits)])
                estimate = Signatures(matrix, config.family, config.num_perm, config.seed,
                                      bits).estimate(i, j)
            yield pa.RecordBatch.from_arrays([
                batch.column("doc_a"), batch.column("doc_b"),
                pa.array(jaccard), pa.array(estimate),
                pa.array(jaccard.round(6)), pa.array(estimate.round(6)),
            ], names=["doc_a", "doc_b", "jaccard", "estimate", "jaccard_6", "estimate_6"])
    return run


_VERIFIED_SCHEMA = ("doc_a long, doc_b long, jaccard double, estimate double, "
                    "jaccard_6 double, estimate_6 double")


# ---------------------------------------------------------------- connected components


def connected_components(edges: DataFrame, src: str = "src", dst: str = "dst",
                         max_rounds: int = 100) -> DataFrame:
    """(node, label) for every node on an edge: label = the smallest node in its component.

    Alternates large-star and small-star (Kiveris et al., "Connected Components in
    MapReduce and Beyond", SoCC 2014) until the graph is a forest of stars, each
    centred on the smallest node of its component: the fixed point of both
    operations, reached in O(log² n) rounds (a round is a few joins and
    aggregations). Nodes on no edge are not listed (each is its own component).
    """
    _require_spark()
    current = (edges.select(F.col(src).cast("long").alias("u"), F.col(dst).cast("long")
                            .alias("v"))
               .where(F.col("u") != F.col("v"))
               .select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
               .distinct().localCheckpoint(eager=False))
    rounds = 0
    while not _is_star_forest(current):
        if rounds == max_rounds:
            raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")
        # the checkpoint cuts the lineage, which would otherwise grow with every round
        current = _small_star(_large_star(current)).localCheckpoint(eager=False)
        rounds += 1
    nodes = current.select(F.col("u").alias("node"), F.col("v").alias("label"))
    centres = current.select(F.col("v").alias("node"), F.col("v").alias("label"))
    return nodes.union(centres).distinct()


def _is_star_forest(edges: DataFrame) -> bool:
    """True when every edge (u, v), u > v, is a leaf u's only edge to a centre v.

    Then each component is one star whose centre is its smallest node, and
    neither large-star nor small-star would change anything.
    """
    ends = edges.select("u", F.lit(1).alias("leaf")).union(
        edges.select(F.col("v").alias("u"), F.lit(0).alias("leaf")))
    per_node = ends.groupBy("u").agg(F.sum("leaf").alias("out"),
                                     F.min("leaf").alias("leaf_only"))
    # a node with two edges up, or both a leaf and a centre, is not yet in a star
    return per_node.where((F.col("out") > 1) | ((F.col("out") >= 1)
                                                 & (F.col("leaf_only") == 0))).isEmpty()


def _large_star(edges: DataFrame) -> DataFrame:
    """Link every strictly larger neighbour of u to the smallest of u's neighbourhood."""
    both = edges.union(edges.select(F.col("v").alias("u"), F.col("u").alias("v")))
    smallest = both.groupBy("u").agg(F.min("v").alias("m"))
    smallest = smallest.select("u", F.least("u", "m").alias("m"))
    out = both.join(smallest, "u").where(F.col("v") > F.col("u"))
    return out.select(F.col("v").alias("u"), F.col("m").alias("v")).distinct()


def _small_star(edges: DataFrame) -> DataFrame:
    """Link u and its smaller neighbours to the smallest of them."""
    oriented = edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
    smallest = oriented.groupBy("u").agg(F.min("v").alias("m"))
    out = oriented.join(smallest, "u").select(
        F.when(F.col("v") == F.col("m"), F.col("u")).otherwise(F.col("v")).alias("u"),
        F.col("m").alias("v"))
    return out.distinct()


# ---------------------------------------------------------------- the pipeline


def find(df: DataFrame, *, text_col: str = "text", id_col: str | None = "id",
         order_col: str | None = None, config: FindConfig | None = None,
         normalize=None, tokenize=None, **options) -> SparkFindResult:
    """Near-duplicate pairs and clusters among the rows of ``df`` (as ``find_texts``).

    Document numbering (what "smallest index" and "first" mean): ``order_col``, a
    0-based index column, if given; else the DataFrame's order (``zipWithIndex``).
    ``id_col`` None (or absent from ``df``) numbers ids "1", "2", ... as the local engine.
    ``options`` are :class:`~neardup.config.FindConfig` fields; ``normalize`` and
    ``tokenize`` plug in as in ``find_texts`` (they must be picklable).
    """
    _require_spark()
    config = config or FindConfig.from_options(**options)
    _check_find_config(config)
    for name in (text_col, order_col):
        if name is not None and name not in df.columns:
            raise ValueError(f"no column {name!r}; the columns are {df.columns}")
    plan = config.band_plan()
    seconds: dict[str, float] = {}
    docs = _numbered(df, text_col, id_col, order_col).persist()
    stages = _lsh_stages(docs, config, plan, normalize, tokenize, seconds)
    signed, heads, copies, candidates = (stages.signed, stages.heads, stages.copies,
                                         stages.candidates)
    started = time.perf_counter()
    search_stats = _search_stats(stages.entries, config)
    seconds[stages.search] += time.perf_counter() - started

    # verification: both sets and signatures joined to each candidate
    started = time.perf_counter()
    checked = _checked(heads, candidates, config).persist()
    verified = checked.where(F.col("jaccard") >= config.threshold) if config.verify else checked
    seconds["verify"] = time.perf_counter() - started

    # clusters: connected components of the set pairs and each copy's edge to its head,
    # which are those of every document pair (listing them all is not needed here)
    started = time.perf_counter()
    set_pair_docs = verified.select("doc_a", "doc_b", F.col("jaccard_6").alias("jaccard"),
                                    F.col("estimate_6").alias("estimate")).persist()
    components = connected_components(set_pair_docs.select("doc_a", "doc_b").union(copies),
                                      "doc_a", "doc_b")
    labels = (docs.select("doc").join(components.withColumnRenamed("node", "doc"), "doc",
                                      "left")
              .select("doc", F.coalesce("label", "doc").alias("label")))
    info = labels.join(signed.select("doc", "size", "text_length"), "doc")
    info = info.withColumn("cluster_size", F.count("*").over(Window.partitionBy("label")))
    rank = {"first": [F.col("doc")],
            "longest": [F.col("text_length").desc(), F.col("doc")],
            "shortest": [F.col("text_length"), F.col("doc")]}[config.representative]
    info = info.withColumn("representative", F.row_number().over(
        Window.partitionBy("label").orderBy(*rank)) == 1).persist()
    seconds["cluster"] = time.perf_counter() - started

    ids = docs.select("doc", "id")
    label_ids = ids.select(F.col("doc").alias("label"), F.col("id").alias("cluster"))
    documents = (info.join(ids, "doc").join(label_ids, "label")
                 .select("doc", "id", F.col("size").alias("shingles"),
                         F.when(F.col("size") >= config.min_shingles, F.lit("ok"))
                         .otherwise(F.lit("too few shingles")).alias("status"),
                         "cluster", "representative")
                 .orderBy("doc"))
    clusters = (info.where(F.col("cluster_size") > 1).join(ids, "doc").join(label_ids, "label")
                .orderBy(F.col("cluster_size").desc(), "label", "doc")
                .select("cluster", "id", "cluster_size", "representative",
                        F.col("size").alias("shingles"), "doc"))
    group_sizes, members = _identical_groups(copies)
    identical = (members.join(ids, "doc")
                 .join(ids.select(F.col("doc").alias("head_doc"), F.col("id").alias("group")),
                       "head_doc")
                 .orderBy("head_doc", "doc")
                 .select("group", "id", "group_size", "doc", "head_doc"))
    pairs = _with_ids(_document_pairs(members, set_pair_docs), ids)
    set_pairs = _with_ids(set_pair_docs, ids)
    candidate_table = checked.select(
        "doc_a", "doc_b", F.col("jaccard_6").alias("jaccard"),
        F.col("estimate_6").alias("estimate"),
        (F.col("jaccard") >= config.threshold).alias("verified")).orderBy("doc_a", "doc_b")

    started = time.perf_counter()
    counts = _counts(signed, heads, copies, candidates, _pair_counts(group_sizes, set_pair_docs),
                     info, config, search_stats)
    seconds["count"] = time.perf_counter() - started
    return SparkFindResult(pairs=pairs, set_pairs=set_pairs, identical=identical,
                           clusters=clusters, documents=documents, candidates=candidate_table,
                           labels=info.select("doc", "label"), config=config, plan=plan,
                           counts=counts, seconds=seconds)


def evaluate(df: DataFrame, *, text_col: str = "text", id_col: str | None = "id",
             order_col: str | None = None, config: FindConfig | None = None,
             normalize=None, tokenize=None, max_documents: int = BRUTE_MAX_DOCUMENTS,
             **options) -> Evaluation:
    """LSH against the truth on Spark, in document pairs: the counts and metrics of
    :func:`neardup.evaluate.evaluate_sets` with ``truth="brute"`` (and "exact", which
    counts the same) on the same documents and options.

    LSH: the candidates :func:`find` computes (identical sets grouped, LSH buckets, or
    with ``sketch="simhash"`` the Hamming search, over the heads, before verification),
    in document pairs: g(g - 1)/2 per identical group,
    g_A * g_B per candidate pair of distinct sets. Truth: a cartesian join of the
    documents' shingle arrays (a < b), the exact Jaccard of every pair
    (:func:`~neardup.verify.exact_jaccard` in ``mapInArrow``), kept where J >= t; O(n^2),
    so more than ``max_documents`` documents (of at least ``min_shingles`` shingles) are
    refused. No empirical S-curve and no sweep: ``curve`` and ``sweep`` are empty, as
    ``notes`` says. Arguments as :func:`find`'s.
    """
    _require_spark()
    config = config or FindConfig.from_options(**options)
    _check_sketch_and_measure(config)
    for name in (text_col, order_col):
        if name is not None and name not in df.columns:
            raise ValueError(f"no column {name!r}; the columns are {df.columns}")
    plan = config.band_plan()
    t = config.threshold
    docs = _numbered(df, text_col, id_col, order_col).persist()

    started = time.perf_counter()
    stages = _lsh_stages(docs, config, plan, normalize, tokenize, {})
    documents = stages.usable.count()
    if documents > max_documents:
        raise ValueError(f"evaluate on Spark compares every pair of documents (a cartesian "
                         f"join): {documents:,} documents are over its limit of "
                         f"{max_documents:,}; use the local engine (truth 'exact': every "
                         f"pair >= t, same counts)")
    group_sizes, members = _identical_groups(stages.copies)
    lsh_counts = _pair_counts(group_sizes, stages.candidates)  # candidates, document pairs
    set_false_positives = (_checked(stages.heads, stages.candidates, config)
                           .where(F.col("jaccard") < t).count())
    sets = stages.heads.count()
    lsh_seconds = time.perf_counter() - started

    started = time.perf_counter()
    side = stages.usable.select("doc", "shingles")
    product = (side.select(F.col("doc").alias("doc_a"), F.col("shingles").alias("shingles_a"))
               .crossJoin(side.select(F.col("doc").alias("doc_b"),
                                      F.col("shingles").alias("shingles_b")))
               .where(F.col("doc_a") < F.col("doc_b")))
    truth = product.mapInArrow(_jaccard_at_least(t, config.hash_bits),
                               "doc_a long, doc_b long, jaccard double")
    # each document's head (itself unless a copy); a true pair is found when both are in
    # one identical group, or their heads' pair is a candidate
    head_of = (stages.usable.select("doc")
               .join(stages.copies.select(F.col("doc_b").alias("doc"),
                                          F.col("doc_a").alias("head")), "doc", "left")
               .select("doc", F.coalesce("head", "doc").alias("head")))
    marked = (truth.join(head_of.select(F.col("doc").alias("doc_a"),
                                        F.col("head").alias("head_a")), "doc_a")
              .join(head_of.select(F.col("doc").alias("doc_b"),
                                   F.col("head").alias("head_b")), "doc_b")
              .select(F.least("head_a", "head_b").alias("x"),
                      F.greatest("head_a", "head_b").alias("y"),
                      (F.col("head_a") == F.col("head_b")).alias("same_group"),
                      ((F.col("doc_a") == F.col("head_a")) & (F.col("doc_b") == F.col("head_b")))
                      .alias("between_heads"))
              .join(stages.candidates.select(F.col("doc_a").alias("x"),
                                             F.col("doc_b").alias("y"),
                                             F.lit(True).alias("candidate")), ["x", "y"], "left"))
    hit = F.col("same_group") | F.col("candidate").isNotNull()
    row = marked.agg(
        F.count("*").alias("true_pairs"),
        F.sum(F.when(hit, 1).otherwise(0)).alias("found"),
        F.sum(F.when(F.col("between_heads"), 1).otherwise(0)).alias("set_true_pairs"),
        F.sum(F.when(F.col("between_heads") & F.col("candidate").isNotNull(), 1).otherwise(0))
        .alias("set_found")).first()
    truth_seconds = time.perf_counter() - started
    for frame in (docs, stages.signed, stages.copies, stages.entries, stages.candidates,
                  group_sizes, members):
        frame.unpersist()

    metrics = document_pair_metrics(
        truth="brute", documents=int(documents), sets=int(sets),
        identical_pairs=lsh_counts["identical_pairs"], true_pairs=int(row["true_pairs"]),
        candidates=lsh_counts["pairs"], found=int(row["found"] or 0),
        set_true_pairs=int(row["set_true_pairs"] or 0), set_candidates=lsh_counts["set_pairs"],
        set_found=int(row["set_found"] or 0), set_false_positives=int(set_false_positives),
        lsh_seconds=lsh_seconds, truth_seconds=truth_seconds)
    notes = [f"Spark engine: the truth is a cartesian join of the {documents:,} documents "
             f"(at most {max_documents:,}); no empirical S-curve or sweep (the local engine "
             f"computes them)"]
    simhash_run = config.sketch == "simhash"
    return Evaluation(t, plan.bands, plan.rows, metrics, [], [], notes, sketch=config.sketch,
                      distance=config.hamming_distance() if simhash_run else None)


def _jaccard_at_least(threshold: float, hash_bits: int):
    """mapInArrow body: pairs with both shingle arrays → (doc_a, doc_b, jaccard), J >= t."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            m = batch.num_rows
            if m == 0:
                continue
            sets = ShingleSets.concat([_csr(batch.column("shingles_a"), hash_bits),
                                       _csr(batch.column("shingles_b"), hash_bits)])
            i = np.arange(m, dtype=np.int64)
            jaccard = verify.exact_jaccard(sets, i, i + m)
            keep = pa.array(jaccard >= threshold)
            yield pa.RecordBatch.from_arrays([
                batch.column("doc_a").filter(keep), batch.column("doc_b").filter(keep),
                pa.array(jaccard).filter(keep)], names=["doc_a", "doc_b", "jaccard"])
    return run


def _check_find_config(config: FindConfig) -> None:
    if config.representative == "field":
        raise ValueError("representative='field' is not supported by the Spark engine; "
                         "use first, longest or shortest")
    if config.method == "exact":
        raise ValueError("method='exact' is not supported by the Spark engine, which runs "
                         "MinHash + LSH; use the local engine for the exact join")
    if config.clusters != "components":
        raise ValueError(f"clusters={config.clusters!r} is not supported by the Spark engine, "
                         f"which computes connected components; use the local engine")
    _check_sketch_and_measure(config)


def _check_sketch_and_measure(config: FindConfig) -> None:
    """Spark runs MinHash + LSH or the SimHash search, on Jaccard only (find and evaluate)."""
    if config.measure != "jaccard":
        raise ValueError(f"measure={config.measure!r} is not supported by the Spark engine, "
                         f"which runs MinHash + LSH or SimHash; use the local engine (the "
                         f"exact join)")


@dataclass
class _Stages:
    """What :func:`find` and :func:`evaluate` share, all lazy: signed documents, identical
    groups (``copies``: head doc_a, copy doc_b), the heads, the bucket entries (LSH
    buckets or SimHash blocks: doc, band, key, bucket_size) and the candidates (heads
    doc_a < doc_b, before verification); ``search``: the timing's name for the search."""

    signed: DataFrame
    usable: DataFrame
    copies: DataFrame
    heads: DataFrame
    entries: DataFrame
    candidates: DataFrame
    search: str = "lsh"


def _lsh_stages(docs: DataFrame, config: FindConfig, plan: lsh.BandPlan, normalize, tokenize,
                seconds: dict) -> _Stages:
    """Sign (doc, text), group identical sets, LSH buckets, candidate pairs of heads."""
    started = time.perf_counter()
    signed = docs.select("doc", "text").mapInArrow(
        _sign_batches(config, plan, normalize, tokenize), _SIGNED_SCHEMA).persist()
    usable = signed.where(F.col("size") >= config.min_shingles)
    seconds["sign"] = time.perf_counter() - started

    # identical sets: grouped by fingerprint, confirmed on the arrays, head = smallest doc
    started = time.perf_counter()
    heads_by_print = usable.groupBy("fingerprint").agg(F.min("doc").alias("head"))
    head_sets = usable.select(F.col("doc").alias("head"), F.col("shingles").alias("head_set"))
    copies = (usable.join(heads_by_print, "fingerprint").where(F.col("doc") != F.col("head"))
              .join(head_sets, "head").where(F.col("shingles") == F.col("head_set"))
              .select(F.col("head").alias("doc_a"), F.col("doc").alias("doc_b"))).persist()
    heads = usable.join(copies.select(F.col("doc_b").alias("doc")), "doc", "left_anti")
    seconds["group identical sets"] = time.perf_counter() - started

    if config.sketch == "simhash":
        started = time.perf_counter()
        entries, candidates = _hamming_search(heads, config.hamming_distance())
        seconds["hamming search"] = time.perf_counter() - started
        return _Stages(signed, usable, copies, heads, entries, candidates, "hamming search")

    # LSH: (band, key, doc) for heads; pairs inside each bucket, star/skip for big ones
    started = time.perf_counter()
    entries = heads.select("doc", F.posexplode("keys").alias("band", "key"))
    bucket = Window.partitionBy("band", "key")
    entries = (entries.withColumn("bucket_size", F.count("*").over(bucket))
               .withColumn("hub", F.min("doc").over(bucket))
               .where(F.col("bucket_size") > 1)).persist()
    small = entries.where(F.col("bucket_size") <= config.max_bucket)
    a, b = small.alias("a"), small.alias("b")
    full_pairs = a.join(b, (F.col("a.band") == F.col("b.band"))
                        & (F.col("a.key") == F.col("b.key"))
                        & (F.col("a.doc") < F.col("b.doc"))).select(
        F.col("a.doc").alias("doc_a"), F.col("b.doc").alias("doc_b"))
    candidates = full_pairs
    if config.bucket_policy == "star":
        star_pairs = entries.where((F.col("bucket_size") > config.max_bucket)
                                   & (F.col("doc") != F.col("hub"))).select(
            F.col("hub").alias("doc_a"), F.col("doc").alias("doc_b"))
        candidates = candidates.union(star_pairs)
    candidates = candidates.distinct().persist()
    seconds["lsh"] = time.perf_counter() - started
    return _Stages(signed, usable, copies, heads, entries, candidates)


def _hamming_search(heads: DataFrame, k: int) -> tuple[DataFrame, DataFrame]:
    """Every pair of heads (doc_a < doc_b) whose SimHash fingerprints are within Hamming
    distance ``k``, each once: :func:`~neardup.simhash.hamming_pairs` as a join.

    The heads' ``keys`` are their k + 1 blocks (:func:`~neardup.simhash.block_keys`);
    heads are grouped by (block, value) and every pair inside a group of two or more is
    a comparison (the cost: the pairs inside the groups, about
    (k + 1) · n² / 2^(64 / (k + 1)) / 2 for uniform fingerprints, all of them, however
    large a group is). A pair is kept when popcount(xor) <= k and the group's block is
    the first the two agree on, so one agreeing on several blocks comes once.
    Returns (entries: doc, simhash, band, key, bucket_size for groups of two or more;
    candidates), both persisted.
    """
    shifts, masks = simhash.blocks(k)
    entries = heads.select("doc", "simhash", F.posexplode("keys").alias("band", "key"))
    entries = (entries.withColumn("bucket_size", F.count("*").over(
        Window.partitionBy("band", "key"))).where(F.col("bucket_size") > 1)).persist()
    a, b = entries.alias("a"), entries.alias("b")
    diff = F.col("a.simhash").bitwiseXOR(F.col("b.simhash"))
    # block q of the xor is 0 where the two agree on it; least() skips the nulls
    first_agreeing = F.least(*[F.when(F.shiftrightunsigned(diff, int(shift))
                                      .bitwiseAND(F.lit(int(mask.view(np.int64)))) == 0,
                                      F.lit(q))
                               for q, (shift, mask) in enumerate(zip(shifts, masks))],
                             F.lit(None).cast("int"))
    candidates = (a.join(b, (F.col("a.band") == F.col("b.band"))
                         & (F.col("a.key") == F.col("b.key"))
                         & (F.col("a.doc") < F.col("b.doc")))
                  .where((F.bit_count(diff) <= k) & (first_agreeing == F.col("a.band")))
                  .select(F.col("a.doc").alias("doc_a"), F.col("b.doc").alias("doc_b"))
                  .persist())
    return entries, candidates


def _checked(heads: DataFrame, candidates: DataFrame, config: FindConfig) -> DataFrame:
    """Each candidate with both sets and sketches joined: exact J and the estimate
    (doc_a, doc_b, jaccard, estimate, jaccard_6, estimate_6)."""
    sketch = "simhash" if config.sketch == "simhash" else "signature"
    side = heads.select("doc", "shingles", F.col(sketch).alias("signature"))
    joined = (candidates
              .join(side.select(F.col("doc").alias("doc_a"), F.col("shingles").alias(
                  "shingles_a"), F.col("signature").alias("signature_a")), "doc_a")
              .join(side.select(F.col("doc").alias("doc_b"), F.col("shingles").alias(
                  "shingles_b"), F.col("signature").alias("signature_b")), "doc_b"))
    return joined.mapInArrow(_verify_batches(config), _VERIFIED_SCHEMA)


def _identical_groups(copies: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The identical groups of two or more, from ``copies`` (doc_a: head, doc_b: a copy).

    Returns (group_sizes, members): (head_doc, group_size) one row per group, and
    (head_doc, doc, group_size) one row per document of a group, its head included.
    A head with no copies is in neither: it stands for itself alone.
    """
    group_sizes = (copies.groupBy(F.col("doc_a").alias("head_doc"))
                   .agg((F.count("*") + 1).alias("group_size"))).persist()
    members = (copies.select(F.col("doc_a").alias("head_doc"), F.col("doc_b").alias("doc"))
               .union(group_sizes.select("head_doc", F.col("head_doc").alias("doc")))
               .join(group_sizes, "head_doc")).persist()
    return group_sizes, members


def _document_pairs(members: DataFrame, set_pairs: DataFrame) -> DataFrame:
    """Every document pair (doc_a < doc_b, jaccard, estimate), unordered.

    Inside an identical group: each two members, J = estimate = 1 (a self-join on the
    head). Across a pair of distinct sets (A, B) (``set_pairs``: heads doc_a < doc_b,
    jaccard, estimate): every member of A's group with every member of B's, at the set
    pair's J and estimate; a member of B's group may come before one of A's, hence
    least/greatest. No pair comes twice: a document is in one group only.
    """
    a, b = members.alias("a"), members.alias("b")
    one = F.lit(1.0).cast("double")
    inside = (a.join(b, (F.col("a.head_doc") == F.col("b.head_doc"))
                     & (F.col("a.doc") < F.col("b.doc")))
              .select(F.col("a.doc").alias("doc_a"), F.col("b.doc").alias("doc_b"),
                      one.alias("jaccard"), one.alias("estimate")))

    def side(name: str) -> DataFrame:
        return members.select(F.col("head_doc").alias(f"doc_{name}"),
                              F.col("doc").alias(f"member_{name}"))

    # a head with no copies has no members row: the left join keeps it as itself
    across = (set_pairs.join(side("a"), "doc_a", "left").join(side("b"), "doc_b", "left")
              .select(F.coalesce("member_a", "doc_a").alias("x"),
                      F.coalesce("member_b", "doc_b").alias("y"), "jaccard", "estimate")
              .select(F.least("x", "y").alias("doc_a"), F.greatest("x", "y").alias("doc_b"),
                      "jaccard", "estimate"))
    return inside.unionByName(across)


def _with_ids(pairs: DataFrame, ids: DataFrame) -> DataFrame:
    """The pairs table's rows: id_a, id_b, jaccard, estimate, doc_a, doc_b, sorted."""
    return (pairs.join(ids.select(F.col("doc").alias("doc_a"), F.col("id").alias("id_a")),
                       "doc_a")
            .join(ids.select(F.col("doc").alias("doc_b"), F.col("id").alias("id_b")), "doc_b")
            .orderBy("doc_a", "doc_b")
            .select("id_a", "id_b", "jaccard", "estimate", "doc_a", "doc_b"))


def _pair_counts(group_sizes: DataFrame, set_pairs: DataFrame) -> dict:
    """Document-pair counts from group sizes, as :meth:`neardup.pairs.PairSet.counts`:
    g(g - 1)/2 per identical group, g_A * g_B per pair of distinct sets (nothing listed)."""
    twice_identical = group_sizes.agg(
        F.sum(F.col("group_size") * (F.col("group_size") - 1))).first()[0] or 0

    def sizes(name: str) -> DataFrame:
        return group_sizes.select(F.col("head_doc").alias(f"doc_{name}"),
                                  F.col("group_size").alias(f"size_{name}"))

    row = (set_pairs.join(sizes("a"), "doc_a", "left").join(sizes("b"), "doc_b", "left")
           .agg(F.count("*").alias("set_pairs"),  # a head with no copies: a group of one
                F.sum(F.coalesce("size_a", F.lit(1)) * F.coalesce("size_b", F.lit(1)))
                .alias("between"))).first()
    identical, between = int(twice_identical) // 2, int(row["between"] or 0)
    return {"pairs": identical + between, "identical_pairs": identical,
            "near_duplicate_pairs": between, "set_pairs": int(row["set_pairs"])}


def _numbered(df: DataFrame, text_col: str, id_col: str | None,
              order_col: str | None) -> DataFrame:
    """(doc, id, text): doc from ``order_col`` or the row's position; id defaults to doc + 1."""
    has_id = id_col is not None and id_col in df.columns
    text = F.col(text_col).cast("string")
    if order_col is not None:
        numbered = df.select(F.col(order_col).cast("long").alias("doc"), text.alias("text"),
                             *( [F.col(id_col).cast("string").alias("id")] if has_id else []))
    else:
        selected = df.select(text.alias("text"),
                             *([F.col(id_col).cast("string").alias("id")] if has_id else []))
        schema = T.StructType([T.StructField("doc", T.LongType(), False),
                               *selected.schema.fields])
        rows = selected.rdd.zipWithIndex().map(lambda pair: (pair[1], *pair[0]))
        numbered = df.sparkSession.createDataFrame(rows, schema)
    if not has_id:
        numbered = numbered.withColumn("id", (F.col("doc") + 1).cast("string"))
    return numbered.select("doc", "id", "text")


def _search_stats(entries: DataFrame, config: FindConfig) -> dict:
    """The counts of the candidate search: LSH's bucket stats, or with SimHash the local
    search's (:class:`~neardup.simhash.SearchStats`) and LSH's left at zero, as locally."""
    if config.sketch != "simhash":
        return {"buckets": _bucket_stats(entries, config)}
    k = config.hamming_distance()
    row = (entries.groupBy("band", "key").agg(F.first("bucket_size").alias("m"))
           .agg(F.coalesce(F.sum(F.col("m") * (F.col("m") - 1)), F.lit(0)).alias("twice"),
                F.coalesce(F.max("m"), F.lit(0)).alias("largest")).first())
    stats = simhash.SearchStats(k, k + 1, int(row["twice"]) // 2, int(row["largest"]))
    return {"buckets": lsh.CandidateStats().as_dict(), "simhash": stats.as_dict()}


def _bucket_stats(entries: DataFrame, config: FindConfig) -> dict:
    sizes = entries.groupBy("band", "key").agg(F.first("bucket_size").alias("m"))
    big = F.col("m") > config.max_bucket
    kept = (F.col("m") - 1) if config.bucket_policy == "star" else F.lit(0)
    row = sizes.agg(
        F.coalesce(F.max("m"), F.lit(0)).alias("largest"),
        F.sum(F.when(big, 1).otherwise(0)).alias("over"),
        F.sum(F.when(big, F.col("m") * (F.col("m") - 1) / 2 - kept).otherwise(0))
        .alias("avoided")).first()
    return {"buckets_over_limit": int(row["over"] or 0), "largest_bucket": int(row["largest"]),
            "pairs_avoided": int(row["avoided"] or 0)}


def _counts(signed, heads, copies, candidates, pair_counts, info, config, search) -> dict:
    """The local engine's counts, keys in its order (``pair_counts``: :func:`_pair_counts`,
    ``search``: :func:`_search_stats`)."""
    doc_row = signed.agg(
        F.count("*").alias("n"),
        F.sum(F.when(F.col("size") >= config.min_shingles, 1).otherwise(0)).alias("usable"),
        F.sum(F.when(F.col("size") >= config.min_shingles, F.col("size")).otherwise(0))
        .alias("shingles")).first()
    n, usable = int(doc_row["n"]), int(doc_row["usable"] or 0)
    n_copies = copies.count()
    cluster_row = info.agg(
        F.sum(F.when(F.col("cluster_size") > 1, 1).otherwise(0)).alias("in_clusters"),
        F.sum(F.when((F.col("cluster_size") > 1) & F.col("representative"), 1).otherwise(0))
        .alias("clusters"),
        F.sum(F.when(F.col("representative"), 0).otherwise(1)).alias("removable")).first()
    return {
        "documents": n,
        "too_few_shingles": n - usable,
        "shingled": usable,
        "shingles": int(doc_row["shingles"] or 0),
        "distinct_sets": heads.count(),
        "identical_copies": n_copies,
        "candidates": candidates.count(),
        **pair_counts,
        "clusters": int(cluster_row["clusters"] or 0),
        "documents_in_clusters": int(cluster_row["in_clusters"] or 0),
        "removable": int(cluster_row["removable"] or 0),
        **search,
        **_method_counts(config),
    }


def _method_counts(config: FindConfig) -> dict:
    """method and method_choice as the local engine reports them (Spark never plans)."""
    if config.sketch == "simhash":
        return {"method": "simhash",
                "method_choice": {"method": "simhash", "reason": "chosen by the user"
                                  if config.method == "lsh" else
                                  "sketch simhash: its search, chosen by the user"}}
    return {"method": "lsh",
            "method_choice": {"method": "lsh", "reason": "chosen by the user"
                              if config.method == "lsh" else "the Spark engine runs MinHash + LSH"}}


# ---------------------------------------------------------------- reading and writing

_SPARK_FORMATS = ("jsonl", "csv", "tsv", "parquet")
_CORRUPT = "_corrupt_record"
# one row per record read: what became of it (processed, skipped, failed) and why
_RECORD_SCHEMA = ("source int, record long, id string, text string, outcome string, "
                  "reason string, object boolean, fields array<string>")


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

    def report(self) -> dict:
        """The ReadReport the local reader would give, from ``records`` (a few jobs)."""
        if self.local_report is not None:
            return self.local_report
        from . import sources

        records = self.records
        routine = sorted(sources._ROUTINE_SKIPS)
        report = sources.ReadReport(max_problems=self.max_problems)
        objects: dict[int, int] = {}
        missing: dict[int, dict[str, int]] = {}
        for row in (records.groupBy("source", "outcome", "reason")
                    .agg(F.count("*").alias("n"),
                         F.sum(F.col("object").cast("long")).alias("objects")).collect()):
            source, outcome, reason, n = row["source"], row["outcome"], row["reason"], row["n"]
            report.records_seen += n
            objects[source] = objects.get(source, 0) + int(row["objects"] or 0)
            if outcome == "processed":
                report.processed += n
                continue
            kind = report.skipped if outcome == "skipped" else report.failed
            kind[reason] = kind.get(reason, 0) + n
            if not (outcome == "skipped" and reason in routine):
                report.problems_total += n
            if outcome == "failed" and reason.startswith("missing field "):
                missing.setdefault(source, {})[reason] = n
        is_problem = (F.col("outcome") != "processed") & ~(
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
                sources._name_the_fields(report, display, reasons,
                                         self._fields_of(source), first)
        report.check()
        out = report.as_dict()
        out["inputs"] = self.inputs
        notes = list(self.notes)
        repeated = (self.documents.groupBy("id").count().where(F.col("count") > 1)
                    .agg(F.sum(F.col("count") - 1)).first()[0])
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
        from .sources import JSONL_FIELDS_NAMED

        named = (self.records.where((F.col("source") == source)
                                    & F.col("fields").isNotNull())
                 .select("record", F.posexplode("fields").alias("pos", "name"))
                 .groupBy("name").agg(F.min(F.struct("record", "pos")).alias("at"))
                 .orderBy("at").limit(JSONL_FIELDS_NAMED + 1).collect())
        return dict.fromkeys(r["name"] for r in named)

    def release(self) -> None:
        if self.records is not None:
            self.records.unpersist()


def _read(spark: SparkSession, inputs, *, fmt: str = "auto",
          text_fields: Sequence[str] = ("text",), id_field: str | None = None,
          delimiter: str | None = None, include: Sequence[str] = (),
          exclude: Sequence[str] = (), encoding: str = "utf-8",
          max_problems: int = 100, respect_ignore: bool = True) -> _Read:
    from . import sources

    _require_spark()
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    sources._validate(paths, fmt, text_fields, id_field, delimiter, encoding, max_problems)
    text_fields = list(text_fields)
    formats = [sources._resolve_format(p, fmt) for p in paths]
    names = sources._unique_names(paths, formats)
    several = len(paths) > 1
    described = [{"path": os.path.abspath(p), "format": f, "name": n, "prefixed": several}
                 for p, f, n in zip(paths, formats, names)]
    if not all(f in _SPARK_FORMATS and p != sources.STDIN and os.path.isfile(p)
               and not sources.compression_of(p) for p, f in zip(paths, formats)):
        # directories, line files, stdin and compressed files: read here, handed to Spark
        documents, report = sources.read_documents(
            paths, fmt=fmt, text_fields=text_fields, id_field=id_field, include=include,
            exclude=exclude, delimiter=delimiter, encoding=encoding, max_problems=max_problems,
            respect_ignore=respect_ignore)
        rows = list(zip(range(len(documents)), documents.ids, documents.texts))
        local = report.as_dict()
        local["inputs"] = [{"path": src.given if src.given == sources.STDIN
                            else os.path.abspath(src.given), "format": src.fmt,
                            "name": src.name, "prefixed": several} for src in documents.inputs]
        return _Read(spark.createDataFrame(rows, "doc long, id string, text string"), None,
                     local["inputs"], local_report=local)

    not_decodable = f"not {sources._encoding_label(encoding)}"
    codec = sources._text_codec(encoding)
    read = _Read(None, None, described, max_problems=max_problems)
    parts = []
    for index, (path, path_fmt, name) in enumerate(zip(paths, formats, names)):
        prefix = f"{sources._printable(name)}:" if several else ""
        read.displays.append(sources._printable(path))
        read.units.append("line" if path_fmt == "jsonl" else "row")
        if path_fmt == "jsonl":
            lines = spark.read.text(path, lineSep="\n").select(
                F.col("value").cast("binary").alias("raw"))
            body = _jsonl_records(index, encoding, not_decodable, text_fields, id_field, prefix)
            parts.append(_positioned(lines, "record").mapInArrow(body, _RECORD_SCHEMA))
            continue
        if path_fmt == "parquet":
            frame, corrupt = spark.read.parquet(path), None
        else:
            sep = delimiter or ("\t" if path_fmt == "tsv" else ",")
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
        for column in text_fields + ([id_field] if id_field else []):
            if column not in columns:
                raise ValueError(f"{path}: no column {column!r}; the columns are {columns}")
        spark_name = dict(zip(columns, spark_names))
        selected = frame.select(
            *[frame[spark_name[c]].alias(f"_t{k}") for k, c in enumerate(text_fields)],
            (frame[spark_name[id_field]] if id_field else F.lit(None).cast("string"))
            .alias("_id"),
            *([corrupt.alias("_corrupt")] if corrupt is not None else []))
        if path_fmt == "parquet":
            body = _parquet_records(index, codec, not_decodable, len(text_fields), id_field,
                                    prefix)
        else:
            body = _csv_records(index, sep, width, len(text_fields), id_field, prefix,
                                encoding, not_decodable)
            if not any("CSV" in note for note in read.notes):
                read.notes.append(_csv_note())
        parts.append(_positioned(selected, "record").mapInArrow(body, _RECORD_SCHEMA))
    records = parts[0]
    for part in parts[1:]:
        records = records.union(part)
    read.records = records.persist()
    processed = read.records.where(F.col("outcome") == "processed").select("id", "text")
    read.documents = _positioned(processed, "doc").select("doc", "id", "text")
    return read


def _csv_note() -> str:
    return ("CSV/TSV read by Spark's CSV parser: a row fails only when its number of fields "
            "differs from the header's; a quote left open (or closed mid-field) is parsed "
            "as Spark parses it, where the local reader fails that row and reads on; text "
            "after a closing quote keeps its quotes (\"x\"y is \"x\"y, locally xy); "
            "problems name the row, not its line")


def _positioned(df: DataFrame, name: str) -> DataFrame:
    """``df`` with ``name``: each row's 0-based position in partition order, as
    ``zipWithIndex`` numbers them but in the JVM (no row goes through Python).

    A first job counts the rows of each partition; the position is then the partition's
    offset plus the row's rank in it (``monotonically_increasing_id``, whose low 33 bits
    are that rank). ``df`` must give the same partitions each time (a file scan, a
    persisted frame); the count reads every column, so Spark parses the rows as the
    second job does (a CSV count without columns may skip the parser).
    """
    part = F.spark_partition_id()
    sizes = dict(df.groupBy(part.alias("p"))
                 .agg(F.count(F.struct(*[df[c] for c in df.columns])).alias("n")).collect())
    if not sizes:
        return df.withColumn(name, F.lit(None).cast("long"))
    offsets, total = [], 0
    for p in range(max(sizes) + 1):
        offsets += [F.lit(p), F.lit(total)]
        total += sizes.get(p, 0)
    rank = F.monotonically_increasing_id() - F.shiftleft(part.cast("long"), 33)
    return df.withColumn(name, (F.create_map(*offsets)[part] + rank).cast("long"))


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

    def add_text(self, record: int, doc_id: str, text: str, not_decodable: str) -> None:
        """A record with its text: processed, or skipped as the local readers skip it."""
        from .sources import _has_surrogates  # executors import spark.py: sources lazily

        if _has_surrogates(text) or _has_surrogates(doc_id):
            self.add(record, "skipped", not_decodable)
        elif not text.strip():
            self.add(record, "skipped", "empty text")
        else:
            self.add(record, "processed", doc_id=doc_id, text=text)

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


def _jsonl_records(source: int, encoding: str, not_decodable: str, text_fields: list[str],
                   id_field: str | None, prefix: str):
    """mapInArrow body: (raw line, record) → records, as the local JSONL reader sorts them."""
    from .sources import JSONL_FIELDS_NAMED, _as_text, _decode_line, _has_surrogates, _printable

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = _RecordRows(source)
            for raw, record in zip(batch.column("raw").to_pylist(),
                                   batch.column("record").to_pylist()):
                if raw is None or not raw.strip():
                    continue  # a blank line is not a record
                try:
                    line = _decode_line(raw, record, encoding)
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
                absent = next((name for name in text_fields if obj.get(name) is None), None)
                if absent is None and id_field is not None and obj.get(id_field) is None:
                    absent = id_field
                if absent is not None:
                    rows.add(record, "failed", f"missing field {absent!r}", is_object=True,
                             fields=[_printable(k) for k in list(obj)[:JSONL_FIELDS_NAMED + 1]])
                    continue
                text = "\n".join(_as_text(obj[name]) for name in text_fields)
                doc_id = (_as_text(obj[id_field]) if id_field is not None
                          else f"{prefix}{record + 1}")
                if _has_surrogates(text) or _has_surrogates(doc_id):
                    rows.add(record, "failed", "lone surrogate escape: not valid Unicode",
                             is_object=True)
                elif not text.strip():
                    rows.add(record, "skipped", "empty text", is_object=True)
                else:
                    rows.add(record, "processed", doc_id=doc_id, text=text, is_object=True)
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


def _parquet_records(source: int, codec: str, not_decodable: str, n_text: int,
                     id_field: str | None, prefix: str):
    """mapInArrow body: Parquet rows (_t0.., _id, record) → records, as the local reader."""
    from .sources import _as_text, _column_values

    def to_text(value) -> str:
        return value.decode(codec) if isinstance(value, bytes) else _as_text(value)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = _RecordRows(source)
            texts = [_column_values(batch.column(f"_t{k}")) for k in range(n_text)]
            ids = _column_values(batch.column("_id"))
            for k, record in enumerate(batch.column("record").to_pylist()):
                values = [column[k] for column in texts]
                if any(v is None for v in values):
                    rows.add(record, "skipped", "null text")
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
                rows.add_text(record, doc_id, text, not_decodable)
            yield rows.batch()
    return run


def write_result(result: SparkFindResult, out_dir: str | os.PathLike, fmt: str = "csv", *,
                 escape_formulas: bool = True) -> dict[str, Path]:
    """The results folder :func:`neardup.sinks.write_result` writes for the same config,
    byte for byte (timings aside), by the same :func:`~neardup.sinks.write_folder`.

    ``pairs="all"``: above ``max_pairs`` nothing is written (the local message); else
    ``pairs.FMT`` streams to disk a partition at a time (:func:`_arrow_batches`), its
    rows checked against ``counts["pairs"]``. ``pairs="groups"``: ``set_pairs.FMT``
    instead. Then identical, clusters, documents, candidates (.FMT), far smaller than the
    pairs, each collected whole; summary, timings and manifest as the local engine's.
    """
    from . import sinks

    config = result.config
    if config.pairs == "all":
        message = too_many_pairs(result.counts, config.max_pairs or None)
        if message is not None:
            raise ValueError(message)
    if fmt not in sinks.OUTPUT_FORMATS:  # checked again by write_folder, here before collecting
        raise ValueError(f"output format must be one of {sinks.OUTPUT_FORMATS}, got {fmt!r}")
    tables = {}
    if config.pairs == "all":
        batches = (pa.Table.from_batches([batch]).cast(PAIR_SCHEMA)
                   for batch in _arrow_batches(result.pairs))
        tables["pairs"] = (_row_groups(batches, sinks.ROW_GROUP_ROWS), PAIR_SCHEMA,
                           result.counts["pairs"])
    else:
        table = _local_table(result.set_pairs)
        tables["set_pairs"] = ([table], table.schema, None)
    for name in ("identical", "clusters", "documents", "candidates"):
        table = _local_table(getattr(result, name))
        tables[name] = ([table], table.schema, None)
    return sinks.write_folder(out_dir, fmt, tables, result.summary(), result.seconds,
                              escape_formulas=escape_formulas)


def _local_table(df: DataFrame) -> pa.Table:
    """``df`` collected as the local engine builds its tables (:func:`neardup.columns.table`):
    string (not large_string), every field nullable, no metadata, one chunk a column;
    Parquet files embed the schema, so it must match for the bytes to."""
    table = _to_arrow(df)
    schema = pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type)
                                 else f.type) for f in table.schema])
    return table.cast(schema).replace_schema_metadata(None).combine_chunks()


def _row_groups(tables: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The rows of ``tables`` again, in tables of ``rows`` rows (the last may hold fewer),
    each column one chunk.

    A Parquet row group's bytes depend on where its column chunks end (pages are cut
    after runs of values counted from each chunk's start), so Spark's small Arrow batches
    are joined into the row groups the writer cuts: the bytes of a whole table's.
    """
    pending: list[pa.Table] = []
    held = 0
    for table in tables:
        pending.append(table)
        held += table.num_rows
        while held >= rows:
            whole = pa.concat_tables(pending)
            yield whole.slice(0, rows).combine_chunks()
            pending, held = [whole.slice(rows)], held - rows
    if held:
        yield pa.concat_tables(pending).combine_chunks()


def _arrow_batches(df: DataFrame) -> Iterator[pa.RecordBatch]:
    """The rows of ``df`` in its order, as Arrow record batches, a partition at a time.

    PySpark has no Arrow ``toLocalIterator``: each partition's batches are serialized
    (Arrow IPC) into binary rows by ``mapInArrow`` and fetched by ``toLocalIterator``,
    which runs one partition at a time in partition order, so the driver holds about
    one partition, not the whole table.
    """

    def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, batch.schema) as writer:
                    writer.write_batch(batch)
                packed = pa.array([sink.getvalue().to_pybytes()], pa.binary())
                yield pa.RecordBatch.from_arrays([packed], names=["ipc"])

    for row in df.mapInArrow(pack, "ipc binary").toLocalIterator():
        yield from pa.ipc.open_stream(row["ipc"])


def find_sources(inputs, *, out=None, output_format: str = "csv", spark=None,
                 text_fields: Sequence[str] = ("text",), id_field: str | None = None,
                 fmt: str = "auto", delimiter: str | None = None, include=(), exclude=(),
                 encoding: str = "utf-8", normalize=None, tokenize=None,
                 respect_ignore: bool = True, escape_formulas: bool = True,
                 **options) -> SparkFindResult:
    """``neardup find --engine spark``: read ``inputs`` with Spark, find, write to ``out``.

    ``result.read_report`` is the read report of :func:`read_documents`."""
    _require_spark()
    config = FindConfig.from_options(**options)  # checked before any reading
    _check_find_config(config)
    if spark is None:
        spark = _session()
    read = _read(spark, inputs, fmt=fmt, text_fields=text_fields, id_field=id_field,
                 delimiter=delimiter, include=include, exclude=exclude, encoding=encoding,
                 respect_ignore=respect_ignore)
    report = read.report()
    result = find(read.documents, order_col="doc", id_col="id", config=config,
                  normalize=normalize, tokenize=tokenize)
    result.read_report = report
    if out is not None:
        write_result(result, out, output_format, escape_formulas=escape_formulas)
    read.release()
    return result


def evaluate_sources(inputs, *, spark=None, text_fields: Sequence[str] = ("text",),
                     id_field: str | None = None, fmt: str = "auto",
                     delimiter: str | None = None, include=(), exclude=(),
                     encoding: str = "utf-8", normalize=None, tokenize=None,
                     max_documents: int = BRUTE_MAX_DOCUMENTS, **options) -> Evaluation:
    """``neardup evaluate --engine spark``: read ``inputs`` with Spark (as
    :func:`find_sources`), then :func:`evaluate`; ``read_report`` says how they were read."""
    _require_spark()
    config = FindConfig.from_options(**options)  # checked before any reading
    if spark is None:
        spark = _session()
    read = _read(spark, inputs, fmt=fmt, text_fields=text_fields, id_field=id_field,
                 delimiter=delimiter, include=include, exclude=exclude, encoding=encoding)
    report = read.report()
    evaluation = evaluate(read.documents, order_col="doc", id_col="id", config=config,
                          normalize=normalize, tokenize=tokenize, max_documents=max_documents)
    evaluation.read_report = report
    read.release()
    return evaluation


def _to_arrow(df: DataFrame) -> pa.Table:
    """Collect ``df`` as an Arrow table (``toArrow`` is Spark 4; 3.5 has the private form)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    batches = df._collect_as_arrow()
    if batches:
        return pa.Table.from_batches(batches)
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema).empty_table()  # typed: no rows must still match local


def _session() -> SparkSession:
    """The active session; else one from spark-submit's settings; else local mode on all cores.

    Only a session started here in local mode gets neardup's defaults: Python workers in
    this interpreter (it has neardup and numba), a few shuffle partitions per core instead
    of 200, no progress bars, and a quiet log, since neardup reports its own progress:
    Spark logs errors only, without its start-up banners (a log4j2 configuration of
    neardup's, unless Spark's conf folder has a ``log4j2.properties`` or
    ``LOG4J_CONFIGURATION_FILE`` names one), the JVM's "WARNING: Using incubator modules"
    line is left out of its standard error (the rest passes through), and PySpark's
    warning about pandas >= 3 is ignored (the engine hands Spark Arrow, not pandas).
    Under spark-submit (or with ``spark.master`` set), its configuration stands.
    """
    import tempfile
    import threading
    import warnings

    import pyspark
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # spark-submit starts Python with PYSPARK_GATEWAY_PORT set, before a SparkConf can see
    # its settings; once a JVM is up, a SparkConf sees spark.master
    if "PYSPARK_GATEWAY_PORT" in os.environ or SparkConf().contains("spark.master"):
        return SparkSession.builder.appName("neardup").getOrCreate()
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = os.cpu_count() or 1
    conf = (SparkConf().setMaster("local[*]").setAppName("neardup")
            .set("spark.sql.shuffle.partitions", str(4 * cores))
            .set("spark.ui.showConsoleProgress", "false"))
    if getattr(SparkContext, "_gateway", None) is not None:  # a JVM from an earlier session
        return SparkSession.builder.config(conf=conf).getOrCreate()

    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(
        os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__), "conf")
    own_log = ("LOG4J_CONFIGURATION_FILE" in os.environ
               or os.path.exists(os.path.join(conf_dir, "log4j2.properties")))
    config = None
    if not own_log:  # log4j2 reads it as the JVM starts
        handle, config = tempfile.mkstemp(prefix="neardup-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w") as f:
            f.write("rootLogger.level = error\n"
                    "rootLogger.appenderRef.stderr.ref = console\n"
                    "appender.console.type = Console\n"
                    "appender.console.name = console\n"
                    "appender.console.target = SYSTEM_ERR\n"
                    "appender.console.layout.type = PatternLayout\n"
                    "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
                    # PySpark's gateway logger at the root's level: no "Setting default log
                    # level" banner
                    "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer\n"
                    "logger.gateway.level = error\n")
        os.environ["LOG4J_CONFIGURATION_FILE"] = config

    def forward(fd: int) -> None:  # the JVM's standard error, less the incubator line
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                if line.startswith(b"WARNING: Using incubator modules"):
                    continue
                try:
                    while line:
                        line = line[os.write(2, line):]
                except OSError:  # standard error closed: the JVM still needs its pipe read
                    pass

    read_end, write_end = os.pipe()
    forwarder = threading.Thread(target=forward, args=(read_end,), daemon=True,
                                 name="neardup-spark-stderr")
    forwarder.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except BaseException:
        os.close(write_end)
        forwarder.join(timeout=5)  # the JVM has exited: what it said is shown first
        raise
    finally:
        if config is not None:
            del os.environ["LOG4J_CONFIGURATION_FILE"]
            os.unlink(config)
    os.close(write_end)
    SparkContext(conf=conf, gateway=gateway)
    return SparkSession.builder.getOrCreate()
