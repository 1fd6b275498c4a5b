"""The Spark engine: the local pipeline's stage functions, run on partitions of a DataFrame.

Only the plumbing differs from :mod:`neardup.pipeline`: per partition (``mapInArrow``)
the same functions run on the same arrays, document by document (or pair by pair), so
a partition's output is bit-identical to the corresponding rows of a local run; what
crosses documents (identical sets, LSH buckets or the SimHash search, candidate pairs,
connected components, representatives) is done with DataFrame operations.

Results are the local engine's, row for row: the same pairs (ids, exact Jaccard,
estimate), the same cluster labels (smallest document index) and representatives,
given the same document numbering (``order_col``, or the DataFrame's order), and the
same counts, keys in the same order.

Pairs are document pairs, as in :mod:`neardup.pairs`: LSH and verification run on the
heads of identical groups (one per distinct set), then joins list every document pair:
the members of a group among themselves (J = 1), and every member of A's group with
every member of B's for each verified pair of distinct sets (A, B). Counts come from
the group sizes, not from the listing.

This package's entry module holds the entry points and what they report: :func:`find`,
:func:`evaluate`, :func:`find_sources`, :func:`dedup_sources` and
:func:`evaluate_sources` (read, find, write), and the measures the counts are made of
(:mod:`neardup._core.counts` makes them; what the engine refuses is
:mod:`neardup.pipeline.refusals`'s table). The rest:

==============  ==========================================================
module          holds
==============  ==========================================================
``stages``      the stages: per-partition ``mapInArrow`` bodies (sign,
                verify) and the DataFrame steps between them (identical
                groups, LSH buckets, the SimHash search, document pairs)
``components``  connected components (large-star / small-star)
``read``        the inputs read by Spark as the local readers read them,
                with the same read report
``write``       a result's folder: part files written by the executors
                (default), or the local engine's files, byte for byte
``dedup``       the dedup copy: the inputs read again by the executors,
                the removed records left out by a join, written as parts
``units``       dedup --unit (line, paragraph, sentences:N, span): units cut
                and hashed per partition, first occurrences by windows, the
                removals cut out per document, the copy as ``dedup``'s
``spans``       dedup --unit span: token windows' hashes shuffled, candidate
                windows verified by their bytes, chains counted by windows
``repeats``     ``repeats --engine spark``: the repeated units' listing, the
                local table row for row
``against``     a run against an on-disk index: the executors search its
                memory-mapped segments (through a probe the door hands in)
``segments``    ``index build --engine spark``: the executors write the index's
                segments (with a writer the door hands in)
``session``     the pyspark guard and the session the engine starts or joins
==============  ==========================================================

pyspark is optional (extra ``spark``): each of these modules imports it in a ``try``,
so ``import neardup.spark`` works without it and an entry point says what to install.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import lsh
from .._core import counts as counting
from ..config import FindConfig
from ..evaluate import BRUTE_MAX_DOCUMENTS, Evaluation, document_pair_metrics
from ..pairs import PAIR_SCHEMA
from ..pipeline import refusals
from ..sinks import resolve_layout
from ..text import prepare
from .components import connected_components
from .found import Found, found_on_driver, held_columns, on_edges, verified_edges
from .progress import SparkStageTimer
from .read import _read, read_documents, read_sources
from .repeats import repeats_sources
from .session import _require_spark, _session
from .stages import (
    _SIGNED_SCHEMA,
    _jaccard_at_least,
    _numbered,
    _sign_batches,
    _signer,
)
from .units import dedup_units_sources
from .worker import settled, warming
from .write import TableOrder, cluster_bucket, key_bucket, write_result

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, Window
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = Window = F = None

__all__ = ["SparkFindResult", "connected_components", "dedup_sources", "dedup_units_sources",
           "evaluate", "evaluate_sources", "find", "find_sources", "index_sources",
           "read_documents", "read_sources", "repeats_sources", "write_result"]


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

    Against an index (``find_sources(..., against=probe)``, :mod:`neardup.spark.against`):
    the new documents first (``new_documents`` of them), then the indexed ones that were
    candidates; pairs have ``source_a``/``source_b`` (``pairs_schema``), documents and
    clusters ``source``, as :class:`neardup.index.query.IndexFindResult`'s tables.
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
    pairs_schema: pa.Schema = PAIR_SCHEMA
    new_documents: int | None = None  # against an index: documents 0..n_new-1 are new
    # each table's order and bucket: how the parts layout cuts it (neardup.spark.write)
    orders: dict[str, TableOrder] = field(default_factory=dict, repr=False)
    # the run's stages: their times are ``seconds``; progress on standard error unless quiet
    timer: SparkStageTimer | None = field(default=None, repr=False)
    # name -> (frame, how it is written): a pa.Table the driver holds (written there), or
    # the documents' rows unsorted (parts cut by document ranges); a table replaced since
    # is written by ``orders``
    held: dict = field(default_factory=dict, repr=False)
    # what the driver found of the documents on an edge (:class:`~neardup.spark.found.Found`:
    # a dedup's outcomes and explain table come from it); None against an index
    found: Found | None = field(default=None, repr=False)

    def summary(self) -> dict:
        return {"counts": self.counts, "config": self.config.as_dict(),
                "plan": self.plan.as_dict(), "read": self.read_report}


# ---------------------------------------------------------------- the pipeline

READ_STAGE = "read, shingle and sign"  # the one pass over the inputs
# what a worker signs before the first pass, loading the signer's kernels (worker.warming)
_WARM_TEXT = " ".join(f"w{k}" for k in range(64))


def find(df: DataFrame, *, text_col: str = "text", id_col: str | None = "id",
         order_col: str | None = None, config: FindConfig | None = None,
         normalize=None, tokenize=None, char_fallback: bool = False,
         **options) -> SparkFindResult:
    """Near-duplicate pairs and clusters among the rows of ``df`` (as ``find_texts``).

    Document numbering (what "smallest index" and "first" mean): ``order_col``, a
    0-based index column, if given; else the DataFrame's order (``zipWithIndex``).
    ``id_col`` None (or absent from ``df``) numbers ids "1", "2", ... as the local engine.
    ``options`` are :class:`~neardup.config.FindConfig` fields; ``normalize`` and
    ``tokenize`` plug in as in ``find_texts`` (they must be picklable).
    ``char_fallback``: word shingles with the fallback of a run on files (``neardup
    find``): a text mostly in scripts without spaces is shingled by characters
    (:func:`neardup.text.prepare.shingle_prose`), counted as ``char_fallback``.
    """
    config = _run_config(df, text_col, order_col, config, options, _check_find_config)
    docs = _numbered(df, text_col, id_col, order_col).persist()
    return _find_numbered(docs, config, normalize, tokenize, char_fallback=char_fallback)


def _find_numbered(docs: DataFrame, config: FindConfig, normalize=None, tokenize=None,
                   signed: DataFrame | None = None, char_fallback: bool = False,
                   documents: int | None = None, tally: dict | None = None,
                   timer: SparkStageTimer | None = None, read=None) -> SparkFindResult:
    """:func:`find` on numbered documents (doc, id, and text unless ``signed`` holds
    their sketches already, as :func:`~neardup.spark.read._read` gives them with a signer);
    ``char_fallback``: the documents were (or are) signed with it, and it is counted;
    ``documents``: how many there are (numbered 0..documents-1), when known; ``tally``:
    the reader's (:attr:`neardup.spark.read._Read.tally`, with ``documents``), so that no
    query counts the signed documents again; ``timer``: the run's stages (progress on
    standard error unless it is quiet; a quiet one by default); ``read``: the read
    ``signed`` comes from, on files (the documents' columns the driver holds, the
    sketches its pass left out: :func:`~neardup.spark.found.verified_edges`). Past
    signing, the stages of :mod:`neardup.spark.found`: a few wide jobs, the rest on the
    driver."""
    if timer is None:
        timer = SparkStageTimer(docs.sparkSession, quiet=True)
    plan = config.band_plan()
    if signed is None:
        with timer.stage("sign"):
            signed = docs.select("doc", "id", "text").mapInArrow(
                _sign_batches(config, plan, normalize, tokenize, char_fallback),
                _SIGNED_SCHEMA).persist()
    if tally is None or documents is None:
        usable = F.col("size") >= config.min_shingles
        row = signed.agg(F.count("*").alias("n"), F.max("doc").alias("last"),
                         F.sum(F.when(usable, 1).otherwise(0)).alias("usable"),
                         F.sum(F.when(usable, F.col("size")).otherwise(0)).alias("shingles"),
                         F.sum(F.col("chars").cast("long")).alias("chars")).first()
        documents = 0 if row["last"] is None else int(row["last"]) + 1
        tally = {key: int(row[key] or 0) for key in ("usable", "shingles", "chars")}
    found, counts = found_on_driver(signed, config, plan, documents, tally, char_fallback,
                                    timer, read)
    if char_fallback and config.shingle_kind == "word":
        prepare.warn_char_fallback(tally["chars"])
        counts.update(counting.shingling_counts(char_fallback=tally["chars"]))
    return _found_result(signed.select("doc", "id", "size"), found, counts, config, plan,
                         documents, timer, None if read is None else read.columns)


def _found_result(base: DataFrame, found: Found, counts: dict, config: FindConfig,
                  plan: lsh.BandPlan, documents: int, timer: SparkStageTimer,
                  columns: pa.Table | None = None) -> SparkFindResult:
    """The result's DataFrames from what the driver ``found`` of the documents on an
    edge; ``base``: every document's (doc, id, size), and on embeddings ``reason``
    (its vector's, "" for a usable one: its status). ``columns``: ``base``'s columns,
    when the driver holds them (:func:`~neardup.spark.found.held_columns`): it writes
    the documents table from them."""
    spark = base.sparkSession
    tables = found.tables()
    frames = {name: _frame(spark, table) for name, table in tables.items()}
    in_clusters = spark.sparkContext.broadcast(found.in_clusters())
    document_rows = base.mapInArrow(settled(_document_rows(in_clusters, config.min_shingles)),
                                    _DOCUMENT_SCHEMA)
    documents_frame = document_rows.orderBy("doc")
    labels = base.select("doc").mapInArrow(settled(_label_rows(in_clusters)),
                                           "doc long, label long")
    n = documents
    orders = {name: TableOrder(by, key_bucket(by[0], n)) for name, by
              in [("pairs", ("doc_a", "doc_b")), ("set_pairs", ("doc_a", "doc_b")),
                  ("candidates", ("doc_a", "doc_b")), ("identical", ("head_doc", "doc")),
                  ("documents", ("doc",))]}
    cluster_rows = frames["clusters"].join(labels, "doc")
    orders["clusters"] = TableOrder((F.col("cluster_size").desc(), "label", "doc"),
                                    cluster_bucket(n), cluster_rows)
    held = {name: (frames[name], table) for name, table in tables.items()}
    # written by document ranges, or by the driver from the columns it holds
    held["documents"] = (documents_frame, document_rows if columns is None else
                         pa.Table.from_batches(_document_rows(in_clusters, config.min_shingles)(
                             columns.select(["doc", "id", "size"]).to_batches()),
                             _DOCUMENT_ARROW))
    return SparkFindResult(pairs=frames["pairs"], set_pairs=frames["set_pairs"],
                           identical=frames["identical"], clusters=frames["clusters"],
                           documents=documents_frame, candidates=frames["candidates"],
                           labels=labels, config=config, plan=plan, counts=counts,
                           seconds=timer.seconds, orders=orders, timer=timer, held=held,
                           found=found)


def _frame(spark, table: pa.Table) -> DataFrame:
    """A driver table as a DataFrame (no job until it is used)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema))


_DOCUMENT_SCHEMA = ("doc long, id string, shingles long, status string, cluster string, "
                    "representative boolean")
_DOCUMENT_ARROW = pa.schema([("doc", pa.int64()), ("id", pa.string()), ("shingles", pa.int64()),
                             ("status", pa.string()), ("cluster", pa.string()),
                             ("representative", pa.bool_())])


def _document_rows(in_clusters, min_shingles: int):
    """mapInArrow body: (doc, id, size) → the documents table's rows, the cluster and
    representative of a document on an edge from the driver's (broadcast) arrays."""

    def run(batches):
        docs, cluster_ids, representative, _ = in_clusters.value
        for batch in batches:
            where, at = on_edges(batch, docs)
            ids = batch.column("id")
            cluster = pc.if_else(pa.array(where), cluster_ids.take(pa.array(at))
                                 if docs.size else ids, ids)
            kept = np.where(where, representative[at] if docs.size else True, True)
            size = batch.column("size").to_numpy()
            if "reason" in batch.schema.names:  # embeddings: a vector set aside, its reason
                reason = batch.column("reason").to_numpy(zero_copy_only=False)
                status = np.where(reason == "", "ok", reason)
            else:
                status = np.where(size >= min_shingles, "ok", "too few shingles")
            yield pa.RecordBatch.from_arrays(
                [batch.column("doc"), ids, batch.column("size"), pa.array(status, pa.string()),
                 cluster, pa.array(kept)],
                names=["doc", "id", "shingles", "status", "cluster", "representative"])
    return run


def _label_rows(in_clusters):
    """mapInArrow body: doc → (doc, label: the smallest document of its cluster)."""

    def run(batches):
        docs, _, _, label_docs = in_clusters.value
        for batch in batches:
            where, at = on_edges(batch, docs)
            doc = batch.column("doc").to_numpy()
            label = np.where(where, label_docs[at] if docs.size else doc, doc)
            yield pa.RecordBatch.from_arrays([batch.column("doc"), pa.array(label)],
                                             names=["doc", "label"])
    return run


def evaluate(df: DataFrame, *, text_col: str = "text", id_col: str | None = "id",
             order_col: str | None = None, config: FindConfig | None = None,
             normalize=None, tokenize=None, max_documents: int = BRUTE_MAX_DOCUMENTS,
             char_fallback: bool = False, **options) -> Evaluation:
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
    config = _run_config(df, text_col, order_col, config, options,
                         _check_sketch_and_measure)
    plan = config.band_plan()
    t = config.threshold
    docs = _numbered(df, text_col, id_col, order_col).persist()

    started = time.perf_counter()
    signed = docs.select("doc", "id", "text").mapInArrow(
        _sign_batches(config, plan, normalize, tokenize, char_fallback),
        _SIGNED_SCHEMA).persist()
    usable = signed.where(F.col("size") >= config.min_shingles)
    row = signed.agg(F.max("doc").alias("last"), F.sum(F.when(
        F.col("size") >= config.min_shingles, 1).otherwise(0)).alias("usable")).first()
    documents = int(row["usable"] or 0)
    if documents > max_documents:
        raise ValueError(f"evaluate on Spark compares every pair of documents (a cartesian "
                         f"join): {documents:,} documents are over its limit of "
                         f"{max_documents:,}; use the local engine (truth 'exact': every "
                         f"pair >= t, same counts)")
    n = 0 if row["last"] is None else int(row["last"]) + 1
    edges = verified_edges(signed, usable, config, plan, n,
                           SparkStageTimer(docs.sparkSession, quiet=True))
    # document pairs: g(g - 1)/2 per identical group, g_A * g_B per candidate pair of heads
    heads, copies_of = np.unique(edges.heads_of, return_counts=True)
    group = copies_of.astype(np.int64) + 1

    def group_size(doc: np.ndarray) -> np.ndarray:  # 1: a head with no copies
        at = np.searchsorted(heads, doc)
        hit = at < heads.size
        hit[hit] = heads[at[hit]] == doc[hit]
        sizes = np.ones(doc.size, dtype=np.int64)
        sizes[hit] = group[at[hit]]
        return sizes

    between = int((group_size(edges.ci) * group_size(edges.cj)).sum())
    lsh_counts = counting.pair_counts(int((group * (group - 1) // 2).sum()), between,
                                      edges.ci.size)
    set_false_positives = int((edges.jaccard < t).sum())
    sets = documents - edges.copies.size
    lsh_seconds = time.perf_counter() - started

    started = time.perf_counter()
    spark = docs.sparkSession
    side = usable.select("doc", "shingles")
    product = (side.select(F.col("doc").alias("doc_a"), F.col("shingles").alias("shingles_a"))
               .crossJoin(side.select(F.col("doc").alias("doc_b"),
                                      F.col("shingles").alias("shingles_b")))
               .where(F.col("doc_a") < F.col("doc_b")))
    truth = product.mapInArrow(_jaccard_at_least(t, config.hash_bits),
                               "doc_a long, doc_b long, jaccard double")
    # each document's head (itself unless a copy); a true pair is found when both are in
    # one identical group, or their heads' pair is a candidate
    copied = _frame(spark, pa.table({"doc": pa.array(edges.copies, pa.int64()),
                                     "head": pa.array(edges.heads_of, pa.int64())}))
    head_of = (usable.select("doc").join(copied, "doc", "left")
               .select("doc", F.coalesce("head", "doc").alias("head")))
    candidates = _frame(spark, pa.table({"x": pa.array(edges.ci, pa.int64()),
                                         "y": pa.array(edges.cj, pa.int64()),
                                         "candidate": pa.array(np.ones(edges.ci.size,
                                                                       dtype=bool))}))
    marked = (truth.join(head_of.select(F.col("doc").alias("doc_a"),
                                        F.col("head").alias("head_a")), "doc_a")
              .join(head_of.select(F.col("doc").alias("doc_b"),
                                   F.col("head").alias("head_b")), "doc_b")
              .select(F.least("head_a", "head_b").alias("x"),
                      F.greatest("head_a", "head_b").alias("y"),
                      (F.col("head_a") == F.col("head_b")).alias("same_group"),
                      ((F.col("doc_a") == F.col("head_a")) & (F.col("doc_b") == F.col("head_b")))
                      .alias("between_heads"))
              .join(candidates, ["x", "y"], "left"))
    hit = F.col("same_group") | F.col("candidate").isNotNull()
    row = marked.agg(
        F.count("*").alias("true_pairs"),
        F.sum(F.when(hit, 1).otherwise(0)).alias("found"),
        F.sum(F.when(F.col("between_heads"), 1).otherwise(0)).alias("set_true_pairs"),
        F.sum(F.when(F.col("between_heads") & F.col("candidate").isNotNull(), 1).otherwise(0))
        .alias("set_found")).first()
    truth_seconds = time.perf_counter() - started
    for frame in (docs, signed):
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


def _run_config(df, text_col: str, order_col: str | None, config: FindConfig | None,
                options: dict, check) -> FindConfig:
    """The run's config (from ``options`` unless given), checked by ``check`` for what
    Spark runs, and the named columns checked against ``df``."""
    _require_spark()
    config = config or FindConfig.from_options(**options)
    check(config)
    for name in (text_col, order_col):
        if name is not None and name not in df.columns:
            raise ValueError(f"no column {name!r}; the columns are {df.columns}")
    return config


def _check_find_config(config: FindConfig) -> None:
    """What Spark refuses of a find's config (:mod:`neardup.pipeline.refusals`)."""
    refusals.check(refusals.SPARK, "find", {}, config, partial=True)
    refusals.check(refusals.SPARK, "find a DataFrame", {}, config, partial=True)
    if config.method == "auto":  # runs LSH ("lsh" warned when the config was made)
        config.warn_if_bands_fall_short()


def _check_sketch_and_measure(config: FindConfig) -> None:
    """What Spark refuses of an evaluation's config (:mod:`neardup.pipeline.refusals`)."""
    refusals.check(refusals.SPARK, "evaluate", {}, config, partial=True)


# ---------------------------------------------------------------- from inputs


def find_sources(inputs, *, out=None, output_format: str = "csv", spark=None,
                 text_fields: Sequence[str] = ("text",), id_field: str | None = None,
                 fmt: str = "auto", delimiter: str | None = None, include=(), exclude=(),
                 encoding: str = "utf-8", normalize=None, tokenize=None,
                 respect_ignore: bool = True, follow_links: bool = False,
                 allow_empty: bool = False, escape_formulas: bool = True,
                 layout: str = "auto", quiet: bool = True, against=None,
                 **options) -> SparkFindResult:
    """``neardup find --engine spark``: read ``inputs`` with Spark, find, write to ``out``.

    ``layout`` (:data:`neardup.sinks.LAYOUTS`): ``auto``/``parts`` has the executors write
    each table as part files (``out`` on a file system they all see); ``single`` collects
    the tables to the driver and writes the local engine's files (small runs).
    Without ``spark``, the session of :func:`~neardup.spark.session._session`, which says
    what it sized on standard error unless ``quiet``.
    ``result.read_report`` is the read report of
    :func:`~neardup.spark.read.read_documents`.
    ``against``: the probe of an index (:class:`neardup.index.query.IndexProbe`; the
    options the index's): every pair new × indexed too (:mod:`neardup.spark.against`)."""
    _require_spark()
    resolve_layout(layout, "spark")  # checked before any reading
    if spark is None:
        spark = _session(quiet=quiet)
    with _wide_stages(spark):
        return _find_sources(inputs, out, output_format, spark, text_fields, id_field, fmt,
                             delimiter, include, exclude, encoding, normalize, tokenize,
                             respect_ignore, follow_links, allow_empty, escape_formulas,
                             layout, quiet, against, options)


@contextlib.contextmanager
def _wide_stages(spark):
    """Adaptive query execution off while a find runs: its plans cut their partitions
    themselves, and adaptively each shuffle is a Spark job of its own (its map stage run
    apart), so a find would run twice as many jobs; the session's setting is restored."""
    key = "spark.sql.adaptive.enabled"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _find_sources(inputs, out, output_format, spark, text_fields, id_field, fmt, delimiter,
                  include, exclude, encoding, normalize, tokenize, respect_ignore,
                  follow_links, allow_empty, escape_formulas, layout, quiet, against,
                  options) -> SparkFindResult:
    result, read = _found(inputs, spark, quiet, normalize, tokenize, options,
                          dict(text_fields=text_fields, id_field=id_field, fmt=fmt,
                               delimiter=delimiter, include=include, exclude=exclude,
                               encoding=encoding, respect_ignore=respect_ignore,
                               follow_links=follow_links, allow_empty=allow_empty), against)
    if out is not None:  # the writer times itself: "write" in the folder's timings
        with result.timer.stage("write", f"the tables into {out}", keep=False):
            write_result(result, out, output_format, escape_formulas=escape_formulas,
                         layout=layout)
    result.timer.say_totals()
    read.release()
    return result


def dedup_sources(inputs, out, *, spark=None, text_fields: Sequence[str] = ("text",),
                  id_field: str | None = None, fmt: str = "auto",
                  delimiter: str | None = None, include=(), exclude=(),
                  encoding: str = "utf-8", normalize=None, tokenize=None,
                  respect_ignore: bool = True, follow_links: bool = False,
                  allow_empty: bool = False, quiet: bool = True, against=None,
                  keep: str = "representative", annotate: bool = False, explain=None,
                  **options) -> SparkFindResult:
    """``neardup dedup --engine spark``: :func:`find_sources` on ``inputs``, then their copy
    minus the documents not kept, written to ``out`` (see :mod:`neardup.spark.dedup`: part
    files written by the executors for JSON Lines and Parquet, the local copy for inputs
    read on the driver). ``result.counts["dedup"]`` says what was written.
    ``keep``, ``annotate``, ``explain``: as on the local engine
    (:class:`neardup.pipeline.dedup.DedupOutputs`, checked before any reading): the same
    records kept, the same fields added, the same explain file (written on the driver).
    ``against``: an index's probe (see :func:`find_sources`): the new documents minus
    those that duplicate an indexed one or are not kept among themselves (``keep``,
    ``annotate`` and ``explain`` are not for it)."""
    from .. import sources
    from ..pipeline.dedup import DedupOutputs
    from .dedup import check_dedup_inputs, outcome_rows, write_copies

    _require_spark()
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    check_dedup_inputs(paths, [sources.resolve_format(p, fmt) for p in paths])
    outputs = DedupOutputs(keep, annotate, explain)
    if against is None:
        outputs.check(paths, out, fmt)
    else:  # the door refuses explain against an index (neardup.pipeline.refusals)
        outputs.check_against()
    result, read = _found(paths, spark, quiet, normalize, tokenize, options,
                          dict(text_fields=text_fields, id_field=id_field, fmt=fmt,
                               delimiter=delimiter, include=include, exclude=exclude,
                               encoding=encoding, respect_ignore=respect_ignore,
                               follow_links=follow_links, allow_empty=allow_empty), against)
    if against is not None:  # the new documents' rows only: the copy is of them
        documents = result.documents.where(F.col("doc") < result.new_documents)
        with result.timer.stage("write", f"the kept records into {out}"):
            counting.add(result.counts, dedup=write_copies(read, documents, out))
    else:  # what each document becomes, from the driver's outcomes of those on an edge
        outcomes = outcome_rows(read.signed, result.found.outcomes(keep))
        with result.timer.stage("write", f"the {'' if keep == 'all' else 'kept '}records "
                                         f"into {out}"):
            written = write_copies(read, outcomes, out, written="written",
                                   annotate=annotate, encoding=encoding)
            counting.add(result.counts, dedup=outputs.copy_counts(written))
        if explain is not None:
            outputs.write_explain(result.found.explain_table(keep), result.counts)
    result.timer.say_totals()
    read.release()
    return result


def index_sources(inputs, writer, *, spark=None, text_fields: Sequence[str] = ("text",),
                  id_field: str | None = None, fmt: str = "auto",
                  delimiter: str | None = None, include=(), exclude=(),
                  encoding: str = "utf-8", normalize=None, tokenize=None,
                  respect_ignore: bool = True, follow_links: bool = False,
                  allow_empty: bool = False, quiet: bool = True, bloom: bool = False,
                  **options) -> dict:
    """``neardup index build --engine spark``: ``inputs`` read, shingled and signed as
    :func:`find_sources` does, and written by the executors as the segments of an index
    with ``writer`` (:class:`neardup.index.SegmentWriter`; see
    :mod:`neardup.spark.segments`). Returns the entries to list, the number of segment
    names used, the documents read and set aside, and ``read_report``. ``bloom``:
    ``writer`` is a Bloom build's ``size``, and the filters are returned instead
    (:mod:`neardup.spark.bloom`)."""
    from .bloom import fill_filters
    from .segments import write_segments

    _require_spark()
    config = FindConfig.from_options(**options)  # checked before any reading
    if spark is None:
        spark = _session(quiet=quiet)
    signer = _signer(config, config.band_plan(), normalize, tokenize, char_fallback=True)
    timer = SparkStageTimer(spark, quiet)
    with timer.stage(READ_STAGE):
        read = _read(spark, inputs, signer=signer, text_fields=text_fields,
                     id_field=id_field, fmt=fmt, delimiter=delimiter, include=include,
                     exclude=exclude, encoding=encoding, respect_ignore=respect_ignore,
                     follow_links=follow_links, allow_empty=allow_empty)
        report = read.report()  # the one pass: read, shingle, sign
    with timer.stage("write", "the Bloom filters" if bloom else "the index's segments"):
        done = (fill_filters if bloom else write_segments)(read.signed, writer, config)
    timer.say_totals()
    read.release()
    return {**done, "read_report": report}


def _found(inputs, spark, quiet: bool, normalize, tokenize, options: dict,
           source_options: dict, against=None):
    """(result, read) of ``inputs``: read, shingled and signed in one pass, then found
    (and paired with the index ``against`` probes, if given)."""
    config = FindConfig.from_options(**options)  # refused options: by neardup.api's door
    if config.method == "auto":  # runs LSH ("lsh" warned when the config was made)
        config.warn_if_bands_fall_short()
    if spark is None:
        spark = _session(quiet=quiet)
    if config.embeddings is not None:
        from .embedded import check_inputs

        check_inputs(inputs, source_options["fmt"])
    signer = _signer(config, config.band_plan(), normalize, tokenize, char_fallback=True)
    timer = SparkStageTimer(spark, quiet)
    with timer.stage(READ_STAGE):
        warm = warming(spark, lambda: signer([_WARM_TEXT]))
        light = None  # the pass keeps only what the search needs, unless an index needs all
        if against is None and config.embeddings is None:
            light = _signer(config, config.band_plan(), normalize, tokenize,
                            char_fallback=True, sketches=False)
        # on embeddings alone a record needs no text (read with an empty one), as locally
        text_optional = config.embeddings is not None and config.also_jaccard is None
        read = _read(spark, inputs, signer=signer, min_shingles=config.min_shingles,
                     text_optional=text_optional, light_signer=light,
                     **source_options)  # the one pass
        warm.join()
        if config.embeddings is None:
            read.columns = held_columns(read.signed, read.document_count)
        report = read.report(None if read.columns is None else read.columns.column("id"))
    if config.embeddings is not None:
        result = _find_embedded(read, config, tokenize is None, timer)
    else:
        result = _find_numbered(read.signed.select("doc", "id"), config, signed=read.signed,
                                char_fallback=tokenize is None,
                                documents=read.document_count, tally=read.tally, timer=timer,
                                read=read)
    result.read_report = report
    if against is not None:
        from .against import with_index

        with timer.stage("against index", keep=False):  # with_index times it
            result = with_index(result, read.signed, against)
    return result, read


def _find_embedded(read, config: FindConfig, char_fallback: bool,
                   timer: SparkStageTimer) -> SparkFindResult:
    """:func:`_find_numbered` on the vectors of ``read``'s documents
    (:mod:`neardup.spark.embedded`)."""
    from .embedded import found_on_vectors

    found, counts, rows, plan = found_on_vectors(read, config, timer)
    if char_fallback and config.shingle_kind == "word":
        prepare.warn_char_fallback(read.tally["chars"])
        counts.update(counting.shingling_counts(char_fallback=read.tally["chars"]))
    result = _found_result(rows, found, counts, config, plan, read.document_count, timer)
    result.pairs_schema = found.local.pairs_schema  # with the cosine column
    return result


def evaluate_sources(inputs, *, spark=None, text_fields: Sequence[str] = ("text",),
                     id_field: str | None = None, fmt: str = "auto",
                     delimiter: str | None = None, include=(), exclude=(),
                     encoding: str = "utf-8", normalize=None, tokenize=None,
                     max_documents: int = BRUTE_MAX_DOCUMENTS, allow_empty: bool = False,
                     **options) -> Evaluation:
    """``neardup evaluate --engine spark``: read ``inputs`` with Spark (as
    :func:`find_sources`), then :func:`evaluate`; ``read_report`` says how they were read."""
    _require_spark()
    config = FindConfig.from_options(**options)  # checked before any reading
    if spark is None:
        spark = _session()
    read = _read(spark, inputs, fmt=fmt, text_fields=text_fields, id_field=id_field,
                 delimiter=delimiter, include=include, exclude=exclude, encoding=encoding,
                 allow_empty=allow_empty)
    report = read.report()
    evaluation = evaluate(read.documents, order_col="doc", id_col="id", config=config,
                          normalize=normalize, tokenize=tokenize, max_documents=max_documents,
                          char_fallback=True)
    evaluation.read_report = report
    read.release()
    return evaluation
