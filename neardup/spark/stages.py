"""The Spark engine's stages: per-partition bodies and the DataFrame steps between them.

Per partition (``mapInArrow``) the local stage functions run on the same arrays:
:func:`~neardup.shingling.shingle`, :func:`~neardup.shingling.set_fingerprints`,
:func:`~neardup.minhash.minhash`, :func:`~neardup.lsh.band_keys`,
:func:`~neardup.verify.exact_jaccard` and :meth:`~neardup.minhash.Signatures.estimate`.
Every one of them works document by document (or pair by pair), so a partition's
output is bit-identical to the corresponding rows of a local run. A document's shingle
array, band keys and signature each travel as one ``binary`` value (the array's bytes
in its own width, :func:`_binary_rows`) and come back to the CSR
(:class:`~neardup.shingling.ShingleSets`) and matrices the stage functions take
(:func:`_row_values`).

What crosses documents (:mod:`neardup.spark.found`) uses two bodies from here: the
heads' (band, key, doc) entries sent to the partition of their (band, key) as one blob
a batch and partition (:func:`_band_blobs`), so that each partition holds whole
buckets, paired there by the local rule (:func:`~neardup.lsh.pairs_in_buckets`: star or
skip past ``max_bucket``; :func:`_bucket_batches`); and evaluate's truth, every pair's
exact Jaccard (:func:`_jaccard_at_least`).

With ``sketch="simhash"`` the partitions compute :func:`~neardup.simhash.fingerprints`
and :func:`~neardup.simhash.block_keys` instead of signatures and band keys, and the
Hamming search is a join: documents grouped by (block, block value), every pair inside
a group kept when popcount(xor) <= k and this block is the first the two agree on, as
:func:`~neardup.simhash.hamming_pairs` does, so each pair comes once. Its cost is the
pairs inside the groups (a group is not cut at ``max_bucket``, as locally).

Memory: a document's shingle array is 4 or 8 bytes a shingle; a signature is K x 4
bytes (K x 1 or 2 with ``bits``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from .. import lsh, simhash, verify
from .._core.hashing import GOLDEN, mix64
from ..config import FindConfig
from ..minhash import minhash
from ..shingling import ShingleSets, set_fingerprints, shingle
from ..text import prepare

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = Window = F = T = None


# ---------------------------------------------------------------- per-partition stages


def _binary_rows(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None
                 ) -> pa.Array:
    """Rows of one contiguous array as a binary column: row k is ``data[offsets[k]:
    offsets[k + 1]]``'s bytes, null where ``valid`` is False; no Python loop."""
    item = data.dtype.itemsize
    bounds = (np.asarray(offsets, dtype=np.int64) * item).astype(np.int32)
    mask = None if valid is None else pa.array(valid).buffers()[1]
    n = bounds.size - 1
    return pa.Array.from_buffers(pa.binary(), n, [mask, pa.py_buffer(bounds),
                                                  pa.py_buffer(np.ascontiguousarray(data))],
                                 null_count=-1 if valid is not None else 0)


def _row_values(column: pa.Array, dtype) -> tuple[np.ndarray, np.ndarray]:
    """A binary column of :func:`_binary_rows` back to (values, offsets in values)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    column = column.cast(pa.binary())
    item = np.dtype(dtype).itemsize
    bounds = np.frombuffer(column.buffers()[1], dtype=np.int32)[
        column.offset:column.offset + len(column) + 1].astype(np.int64)
    # a null row has no bytes (Arrow writers, Spark's and :func:`_binary_rows`, give it
    # equal bounds): it reads as an empty row
    data = (np.frombuffer(column.buffers()[2], dtype=np.uint8)[bounds[0]:bounds[-1]]
            if column.buffers()[2] is not None else np.empty(0, dtype=np.uint8))
    offsets = bounds - bounds[0]
    return data.view(dtype), offsets // item


def _csr(column: pa.Array, hash_bits: int) -> ShingleSets:
    """A shingles column (each set's sorted hashes as bytes) back to the CSR the stage
    functions take."""
    values, offsets = _row_values(column, np.uint64 if hash_bits == 64 else np.uint32)
    return ShingleSets(offsets, values)


def _signature_matrix(column: pa.Array, num_perm: int, bits: int) -> np.ndarray:
    dtype = np.uint32 if bits == 32 else (np.uint8 if bits <= 8 else np.uint16)
    raw = b"".join(column.to_pylist())
    return np.frombuffer(raw, dtype=dtype).reshape(-1, num_perm)


def _signer(config: FindConfig, plan: lsh.BandPlan, normalize, tokenize,
            char_fallback: bool = False, sketches: bool = True):
    """texts → their sketch columns (:data:`_SIGNED_NAMES`: text_length, shingles, size,
    fingerprint, signature, keys, simhash, chars) as Arrow arrays, one row a text;
    documents below ``min_shingles`` get no sketch and no keys. MinHash: the signature
    and its band keys (simhash null); SimHash: the fingerprint (simhash, as a long) and
    its block keys (signature null). ``char_fallback`` (prose read from files, as the
    local file run shingles it, no ``tokenize``): a text mostly without spaces is
    shingled by characters (:func:`neardup.text.prepare.shingle_prose`), ``chars`` True.
    Without ``sketches``, the shingles and signature columns are null: a first pass that
    keeps only what the search needs, its documents on an edge signed again later."""
    plugins = {"tokenize": tokenize}
    if normalize is not None:
        plugins["normalize"] = normalize
    options = config.shingle_options(**plugins)
    fallback = char_fallback and tokenize is None and options.kind == "word"

    def sign(texts: list) -> list[pa.Array]:
        texts = ["" if t is None else t for t in texts]
        if fallback:
            sets, chars = prepare.shingle_prose(texts, options)
        else:
            sets, chars = shingle(texts, options), np.zeros(len(texts), dtype=bool)
        sizes = sets.sizes
        set_prints = set_fingerprints(sets, config.seed)
        usable = np.flatnonzero(sizes >= config.min_shingles)
        n = sets.n
        valid = np.zeros(n, dtype=bool)
        valid[usable] = True
        signature = pa.nulls(n, pa.binary())
        simhash_column = pa.nulls(n, pa.int64())
        if config.sketch == "simhash":
            prints = simhash.fingerprints(sets.subset(usable), config.seed)
            keys = simhash.block_keys(prints, config.hamming_distance())
            spread = np.zeros(n, dtype=np.int64)
            spread[usable] = prints.view(np.int64)
            simhash_column = pa.array(spread, mask=~valid)
        else:
            signatures = minhash(sets.subset(usable), config.num_perm, config.seed,
                                 config.family)
            if config.bits is not None:
                signatures = signatures.b_bit(config.bits)
            keys = lsh.band_keys(signatures.matrix, plan.bands, plan.rows)
            signature = _rows_of(signatures.matrix, usable, n)
        return [pa.array(np.fromiter(map(len, texts), dtype=np.int64, count=n)),
                (_binary_rows(sets.values, sets.offsets) if sketches
                 else pa.nulls(n, pa.binary())),
                pa.array(sizes.astype(np.int64)),
                pa.array(set_prints.view(np.int64)),
                signature if sketches else pa.nulls(n, pa.binary()),
                _rows_of(np.ascontiguousarray(keys).view(np.int64), usable, n),
                simhash_column,
                pa.array(chars)]
    return sign


def _rows_of(matrix: np.ndarray, rows: np.ndarray, n: int) -> pa.Array:
    """A binary column of n rows: row ``rows[k]`` holds ``matrix[k]``'s bytes, the others
    are null."""
    matrix = np.ascontiguousarray(matrix)
    width = matrix.shape[1] if matrix.ndim == 2 else 0
    lengths = np.zeros(n, dtype=np.int64)
    lengths[rows] = width
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = np.zeros(n, dtype=bool)
    valid[rows] = True
    return _binary_rows(matrix.reshape(-1), offsets, valid)


def _sign_batches(config: FindConfig, plan: lsh.BandPlan, normalize, tokenize,
                  char_fallback: bool = False):
    """mapInArrow body: (doc, id, text) → (doc, id, and the sketch columns of
    :func:`_signer`)."""
    sign = _signer(config, plan, normalize, tokenize, char_fallback)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_arrays(
                [batch.column("doc"), batch.column("id"),
                 *sign(batch.column("text").to_pylist())],
                names=["doc", "id", *_SIGNED_NAMES])
    return run


# the columns of :func:`_signer`, and with doc and id those of the signed documents
_SIGNED_NAMES = ("text_length", "shingles", "size", "fingerprint", "signature", "keys",
                 "simhash", "chars")
_SIGNED_COLUMNS = ("text_length long, shingles binary, size long, fingerprint long, "
                   "signature binary, keys binary, simhash long, chars boolean")
_SIGNED_SCHEMA = "doc long, id string, " + _SIGNED_COLUMNS


def _entry_types(n: int, bands: int) -> tuple[np.dtype, np.dtype]:
    """The narrowest types of a bucket entry's document (below ``n``) and band (below
    ``bands``) in a blob: a million documents of 18 bands shuffle 13 bytes an entry, not 24."""
    doc = np.dtype(np.uint32) if n <= 1 << 32 else np.dtype(np.int64)
    band = np.dtype(np.uint8) if bands <= 1 << 8 else np.dtype(np.uint16)
    return doc, band


def _entries_of(blob: bytes, types: tuple[np.dtype, np.dtype]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bands, keys, docs) of a :func:`_band_blobs` blob: its keys (int64), then its docs
    and its bands in ``types`` (:func:`_entry_types`)."""
    doc, band = types
    m = len(blob) // (8 + doc.itemsize + band.itemsize)
    keys = np.frombuffer(blob, dtype=np.int64, count=m)
    docs = np.frombuffer(blob, dtype=doc, count=m, offset=8 * m)
    bands = np.frombuffer(blob, dtype=band, count=m, offset=(8 + doc.itemsize) * m)
    return bands, keys, docs


def _band_blobs(targets: np.ndarray, types: tuple[np.dtype, np.dtype]):
    """mapInArrow body over (doc, keys) of the heads: each batch's bucket entries (band,
    key, doc) sent to the bucket partition of their (band, key), as one row per partition
    (``dest``: the value Spark's hash partitioning sends to it, ``entries``: the entries'
    keys, docs and bands, in ``types`` (:func:`_entry_types`)): a shuffle of a few large
    rows, not of n x b small ones."""
    parts = np.uint64(targets.size)
    doc_type, band_type = types

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            flat, offsets = _row_values(batch.column("keys"), np.int64)
            lengths = np.diff(offsets)
            docs = np.repeat(batch.column("doc").to_numpy(), lengths)
            bands = np.arange(flat.size, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
            with np.errstate(over="ignore"):  # numpy's mix64: no kernel to build a worker
                mixed = mix64.py_func(flat.view(np.uint64) ^ (bands.astype(np.uint64) * GOLDEN))
            dest = (mixed % parts).astype(np.int64)
            order = np.argsort(dest, kind="stable")
            bounds = np.searchsorted(dest[order], np.arange(targets.size + 1))
            rows, blobs = [], []
            for t in np.flatnonzero(np.diff(bounds)).tolist():
                at = order[bounds[t]:bounds[t + 1]]
                rows.append(int(targets[t]))
                blobs.append(flat[at].tobytes() + docs[at].astype(doc_type).tobytes()
                             + bands[at].astype(band_type).tobytes())
            yield pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()),
                                              pa.array(blobs, pa.binary())],
                                             names=["dest", "entries"])
    return run


def _bucket_batches(n: int, max_bucket: int, policy: str, types: tuple[np.dtype, np.dtype]):
    """mapInArrow body over one partition of :func:`_band_blobs` rows (entries in
    ``types``), holding whole buckets: the candidate pairs inside them
    (:func:`~neardup.lsh.pairs_in_buckets`, the local engine's rule) as (doc_a, doc_b),
    then one row (doc_a null) with the partition's bucket stats (largest, over: buckets
    past ``max_bucket``, avoided: pairs they did not emit)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunks = [_entries_of(blob, types)
                  for batch in batches for blob in batch.column("entries").to_pylist()]
        band, key, doc = ([np.concatenate(column) for column in zip(*chunks)] if chunks
                          else [np.empty(0, dtype=np.int64)] * 3)
        i, j, stats = lsh.pairs_in_buckets(band, key, doc, n, max_bucket=max_bucket,
                                           policy=policy)
        none = pa.nulls(i.size, pa.int64())
        yield pa.RecordBatch.from_arrays([pa.array(i), pa.array(j), none, none, none],
                                         names=_BUCKETED_COLUMNS)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()),
             pa.array([stats.largest_bucket]), pa.array([stats.buckets_over_limit]),
             pa.array([stats.pairs_avoided])], names=_BUCKETED_COLUMNS)
    return run


def _partition_targets(spark, parts: int) -> np.ndarray:
    """For each partition t < ``parts``, a long that Spark's hash partitioning
    (``repartition(parts, col)``: pmod(murmur3(col), parts)) sends to t, found by Spark's
    own hash expression in one small job, so every bucket partition gets its own."""
    found: dict[int, int] = {}
    span = 16 * parts
    while len(found) < parts:
        rows = (spark.range(span - 16 * parts, span)
                .select("id", F.expr(f"pmod(hash(id), {parts})").alias("t")).collect())
        for row in rows:
            found.setdefault(int(row["t"]), int(row["id"]))
        span += 16 * parts
    return np.array([found[t] for t in range(parts)], dtype=np.int64)


_BUCKETED_COLUMNS = ["doc_a", "doc_b", "largest", "over", "avoided"]
_BUCKETED_SCHEMA = "doc_a long, doc_b long, largest long, over long, avoided long"


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


# ---------------------------------------------------------------- across documents


def _exploded_keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: (doc, simhash, keys) → one row per key (doc, simhash, band, key)."""
    for batch in batches:
        keys, offsets = _row_values(batch.column("keys"), np.int64)
        lengths = np.diff(offsets)
        where = np.repeat(np.arange(batch.num_rows), lengths)
        band = (np.arange(keys.size, dtype=np.int64) - np.repeat(offsets[:-1], lengths))
        yield pa.RecordBatch.from_arrays(
            [batch.column("doc").take(pa.array(where)), batch.column("simhash").take(
                pa.array(where)), pa.array(band.astype(np.int32)), pa.array(keys)],
            names=["doc", "simhash", "band", "key"])


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
    entries = heads.select("doc", "simhash", "keys").mapInArrow(
        _exploded_keys, "doc long, simhash long, band int, key long")
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


def _numbered(df: DataFrame, text_col: str, id_col: str | None,
              order_col: str | None) -> DataFrame:
    """(doc, id, text): doc from ``order_col`` or the row's position; id defaults to doc + 1."""
    has_id = id_col is not None and id_col in df.columns
    text = F.col(text_col).cast("string")
    if order_col is not None:
        numbered = df.select(F.col(order_col).cast("long").alias("doc"), text.alias("text"),
                             *( [F.col(id_col).cast("string").alias("id")] if has_id else []))
    else:  # the row's position in the DataFrame's order, counted in the JVM (one small job)
        part = F.spark_partition_id()
        ranked = df.select(text.alias("text"),
                           *([F.col(id_col).cast("string").alias("id")] if has_id else []),
                           part.alias("_part"), (F.monotonically_increasing_id()
                                                 - F.shiftleft(part.cast("long"), 33))
                           .alias("_rank")).persist()
        offsets, total = [], 0
        for row in ranked.groupBy("_part").count().orderBy("_part").collect():
            offsets += [F.lit(row["_part"]), F.lit(total)]
            total += row["count"]
        doc = (F.create_map(*offsets)[F.col("_part")] + F.col("_rank") if offsets
               else F.lit(None))
        numbered = ranked.withColumn("doc", doc.cast("long")).drop("_part", "_rank")
    if not has_id:
        numbered = numbered.withColumn("id", (F.col("doc") + 1).cast("string"))
    return numbered.select("doc", "id", "text")
