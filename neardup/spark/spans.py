"""``neardup dedup --unit span --engine spark``: repeated windows of ``min_tokens`` tokens
removed inside documents, with the local engine's copy and counts
(:mod:`neardup.units.spans` defines which windows and tokens go), found by shuffles and
sorts over small rows.

Locally the tokens are numbered by exact class over the whole corpus; on Spark that
would shuffle every token. Here a token's id is a 64-bit hash of its normalized bytes
and only windows travel:

1. **Windows** (:func:`_window_rows`, per partition): the local tokenizer
   (:func:`neardup.units.split.split_tokens`) and the run's normalization (a token that
   normalizes to nothing is no token, as locally); every window of L tokens inside one
   document becomes a row (``doc``, ``pos``: its first token's place among the
   document's tokens, ``hash``: the local kernel's rolling hash
   (:func:`neardup.units.spans.window_hashes`) over the tokens' hashes). One more row
   per document (``pos`` = -1) carries its token count.
2. **Candidates**: a window whose hash occurs once is unique; it is done. The rest
   (a window partitioned by ``hash``) are sent back to their documents (one join on
   ``doc``), where :func:`_window_bytes` cuts each one's normalized tokens,
   length-prefixed (so the concatenation is injective): equal bytes iff equal windows.
3. **Classes**: a window over those bytes gives each candidate its class's size and
   representative, the smallest (doc, pos), i.e. its first occurrence in corpus order.
   A hash collision only makes a candidate: the bytes decide, so a different text is
   never removed (a weak ``hashes`` in the tests forces them).
4. **Removed windows**: ``keep="first"``, every window of a repeated class but its
   representative; ``keep="none"``, every one. Each document's removed windows are
   collected (sorted) and joined to its text; :func:`_span_applied` cuts the covered
   tokens' runs out with the local code (:func:`neardup.units.spans.removed_ranges`,
   :func:`~neardup.units.remaining_texts`) and drops the document when fewer than
   ``min_chars`` characters are left.
5. **Repeated spans** (``spans_repeated``): the maximal chains of repeated classes
   (class C continues into C' iff C' = {g + 1 : g in C}). A window of a repeated class
   *extends* iff the window after it in its document is repeated, of the class whose
   representative is one token after its own, and of the same size; C is linked iff
   all its windows extend, and then its successor is unique. Each chain has one class
   that is not linked (its last), so chains = repeated classes - linked classes: one
   window over each document's repeated windows (ordered by ``pos``), one group by
   class, no iteration.

Why windows and not tokens: step 1 emits about one 24-byte row a token and only the
candidates (windows seen twice by hash) carry their bytes through a shuffle; documents
are tokenized again in steps 2 and 4 (only those with candidates, or with removals),
which costs CPU on the executors instead of a shuffle of every token's text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from .._core import counts as counting
from ..units import RemovalRanges, UnitAnalysis, UnitOptions, characters_left, remaining_texts
from .units import _where

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame, Window
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = Window = F = None

_WINDOW_ROW = "doc long, pos long, hash long, tokens long"
_BYTES_ROW = "doc long, pos long, window binary"
_SPAN_APPLIED_ROW = "doc long, bytes long, tokens long, keep boolean, text string"


def span_removals(documents: DataFrame, options: UnitOptions, normalize,
                  hashes: Callable | None):
    """(applied: doc, bytes, tokens (removed), keep, text (left, or null when dropped) of
    each document that loses tokens; the unit counts but ``tokens_removed``,
    ``bytes_removed`` and ``documents_changed`` (the caller's totals of ``applied``);
    the frames persisted on the way). ``documents``: (doc, text); ``hashes``: (values,
    offsets) -> uint64 a token (default :func:`neardup.units.hashing.piece_hashes`)."""
    length = options.min_tokens
    rows, repeated = repeated_windows(documents, length, normalize, hashes)
    totals = rows.agg(F.sum("tokens").alias("tokens"),
                      F.sum((F.col("pos") >= 0).cast("long")).alias("windows")).first()
    gone = repeated.where((F.col("doc") != F.col("rep_doc")) | (F.col("pos") != F.col("rep_pos"))) \
        if options.keep == "first" else repeated
    n_windows, n_removed = int(totals["windows"] or 0), gone.count()
    linked = class_links(repeated).agg(F.count("*").alias("classes"),
                                       F.sum("linked").alias("linked")).first()
    counts = counting.span_counts(
        tokens=totals["tokens"] or 0,
        spans_repeated=int(linked["classes"]) - int(linked["linked"] or 0),
        windows=n_windows, windows_removed=n_removed)
    removed = gone.groupBy("doc").agg(F.sort_array(F.collect_list("pos")).alias("positions"))
    applied = documents.join(removed, "doc").mapInArrow(
        _span_applied(length, normalize, options.min_chars), _SPAN_APPLIED_ROW)
    return applied, counts, [rows, repeated]


def repeated_windows(documents: DataFrame, length: int, normalize, hashes: Callable | None):
    """(rows: ``_WINDOW_ROW`` of every window and document, persisted; repeated: doc, pos,
    rep_doc, rep_pos (its class's representative), size of every window of a class of two
    or more, persisted), steps 1-3 of the module docstring."""
    rows = documents.mapInArrow(_window_rows(length, normalize, hashes), _WINDOW_ROW).persist()
    windows = rows.where(F.col("pos") >= 0)
    candidates = (windows.withColumn("n", F.count(F.lit(1)).over(Window.partitionBy("hash")))
                  .where(F.col("n") >= 2).select("doc", "pos"))
    asked = candidates.groupBy("doc").agg(F.sort_array(F.collect_list("pos")).alias("positions"))
    cut = documents.join(asked, "doc").mapInArrow(_window_bytes(length, normalize), _BYTES_ROW)
    by_window = Window.partitionBy("window")
    repeated = (cut.withColumn("rep", F.min(F.struct("doc", "pos")).over(by_window))
                .withColumn("size", F.count(F.lit(1)).over(by_window))
                .where(F.col("size") >= 2)
                .select("doc", "pos", F.col("rep.doc").alias("rep_doc"),
                        F.col("rep.pos").alias("rep_pos"), "size").persist())
    return rows, repeated


def class_links(repeated: DataFrame) -> DataFrame:
    """One row a repeated class: rep_doc, rep_pos, size, ``documents`` (distinct ones its
    windows lie in) and ``linked`` (1 iff it continues into the class one token later;
    module docstring, step 5)."""
    following = Window.partitionBy("doc").orderBy("pos")
    after = {name: F.lead(name).over(following) for name in ("pos", "rep_doc", "rep_pos", "size")}
    extends = ((after["pos"] == F.col("pos") + 1) & (after["rep_doc"] == F.col("rep_doc"))
               & (after["rep_pos"] == F.col("rep_pos") + 1) & (after["size"] == F.col("size")))
    return (repeated.withColumn("extends", F.coalesce(extends, F.lit(False)).cast("int"))
            .groupBy("rep_doc", "rep_pos")
            .agg(F.min("extends").alias("linked"), F.first("size").alias("size"),
                 F.countDistinct("doc").alias("documents")))


def span_chains(repeated: DataFrame, length: int) -> DataFrame:
    """The repeated spans (the listing's rows): doc, ``first`` and ``last`` token of the
    span in that document, count, documents; one row a maximal chain of classes. A
    chain's classes have consecutive representatives in one document, each linked but
    its last: a head is a class not preceded by a linked one, and its chain ends at the
    first class at or after it that is not linked."""
    in_doc = Window.partitionBy("rep_doc").orderBy("rep_pos")
    ahead = in_doc.rowsBetween(Window.currentRow, Window.unboundedFollowing)
    preceded = ((F.lag("rep_pos").over(in_doc) == F.col("rep_pos") - 1)
                & (F.lag("linked").over(in_doc) == 1))
    return (class_links(repeated)
            .withColumn("head", ~F.coalesce(preceded, F.lit(False)))
            .withColumn("end", F.min(F.when(F.col("linked") == 0, F.col("rep_pos"))).over(ahead))
            .where(F.col("head"))
            .select(F.col("rep_doc").alias("doc"), F.col("rep_pos").alias("first"),
                    (F.col("end") + length - 1).alias("last"), F.col("size").alias("count"),
                    "documents"))


def token_bytes(batch: pa.RecordBatch, normalize, row: np.ndarray, first: np.ndarray,
                last: np.ndarray):
    """(start, end) bytes of the token runs ``first[i]..last[i]`` (token positions, as the
    span unit counts tokens) of the batch's document ``row[i]``."""
    offsets, starts, ends, _, _ = _tokens(batch, normalize)
    return starts[offsets[row] + first], ends[offsets[row] + last]


def _tokens(batch: pa.RecordBatch, normalize):
    """The batch's tokens as the local span unit sees them: (offsets int64[n + 1] per
    document, start and end bytes of each in its document's text, normalized bytes and
    their offsets), tokens that normalize to nothing left out."""
    from neardup.units import split
    from neardup.units.hashing import normalized_pieces, texts_buffer

    data, doc_offsets = texts_buffer(batch.column("text"))
    doc, ts, te, _, _ = split.split_tokens(data, doc_offsets)
    values, value_offsets = normalized_pieces(data, ts, te, normalize)
    kept = value_offsets[1:] > value_offsets[:-1]
    doc = doc[kept]
    base = doc_offsets[doc]
    offsets = np.zeros(batch.num_rows + 1, np.int64)
    np.cumsum(np.bincount(doc, minlength=batch.num_rows), out=offsets[1:])
    value_offsets = np.append(value_offsets[:-1][kept], value_offsets[-1])
    return offsets, ts[kept] - base, te[kept] - base, values, value_offsets


def _window_rows(length: int, normalize, hashes: Callable | None):
    """mapInArrow body: (doc, text) -> ``_WINDOW_ROW``: a row a window, and one a document
    (``pos`` -1) with its token count (module docstring, step 1)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from neardup.units.hashing import piece_hashes
        from neardup.units.spans import window_hashes

        hash_of = piece_hashes if hashes is None else hashes
        for batch in batches:
            if not batch.num_rows:
                continue
            offsets, _, _, values, value_offsets = _tokens(batch, normalize)
            ids = np.asarray(hash_of(values, value_offsets), np.uint64)
            row, pos, window_hash = window_hashes(offsets, ids, length)
            docs = batch.column("doc").to_numpy()
            n = batch.num_rows
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.concatenate([docs, docs[row]]), pa.int64()),
                 pa.array(np.concatenate([np.full(n, -1, np.int64), pos])),
                 pa.array(np.concatenate([np.zeros(n, np.uint64), window_hash]).view(np.int64)),
                 pa.array(np.concatenate([np.diff(offsets), np.zeros(row.size, np.int64)]))],
                names=["doc", "pos", "hash", "tokens"])
    return run


def _window_bytes(length: int, normalize):
    """mapInArrow body: (doc, text, positions) -> ``_BYTES_ROW``: each asked window's
    normalized tokens, each prefixed by its length in 4 bytes (module docstring, step 2)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from neardup.units.hashing import gather

        for batch in batches:
            if not batch.num_rows:
                continue
            offsets, _, _, values, value_offsets = _tokens(batch, normalize)
            prefixed, bounds = _length_prefixed(values, value_offsets)
            row, pos = _asked(batch.column("positions"))
            first = offsets[row] + pos
            window, window_offsets = gather(prefixed, bounds[first], bounds[first + length],
                                            np.empty(0, np.uint8))
            binary = pa.LargeBinaryArray.from_buffers(
                pa.large_binary(), first.size, [None, pa.py_buffer(window_offsets),
                                                pa.py_buffer(window)])
            yield pa.RecordBatch.from_arrays(
                [pa.array(batch.column("doc").to_numpy()[row], pa.int64()),
                 pa.array(pos, pa.int64()), binary.cast(pa.binary())],
                names=["doc", "pos", "window"])
    return run


def _asked(positions: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    """(row, position) of each element of a list column, row by row."""
    lengths = np.diff(positions.offsets.to_numpy())
    return (np.repeat(np.arange(lengths.size), lengths),
            positions.flatten().to_numpy().astype(np.int64))


def _length_prefixed(values: np.ndarray, offsets: np.ndarray):
    """Each piece as its length (4 bytes, little-endian) then its bytes: (bytes, int64[n +
    1] offsets), the pieces back to back, so a run of pieces is one slice."""
    lengths = np.diff(offsets)
    bounds = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths + 4, out=bounds[1:])
    out = np.empty(bounds[-1], np.uint8)
    heads = bounds[:-1, None] + np.arange(4)
    out[heads.reshape(-1)] = lengths.astype("<u4").view(np.uint8)
    piece = np.repeat(np.arange(lengths.size), lengths)
    out[bounds[piece] + 4 + offsets[0] + np.arange(piece.size) - offsets[piece]] = \
        values[offsets[0]:offsets[-1]]
    return out, bounds


def _span_applied(length: int, normalize, min_chars: int):
    """mapInArrow body: (doc, text, positions of its removed windows) -> ``_SPAN_APPLIED_ROW``:
    the covered tokens' runs cut out by the local code, the characters left counted."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from neardup.units.hashing import texts_buffer
        from neardup.units.spans import removed_ranges

        for batch in batches:
            if not batch.num_rows:
                continue
            data, doc_offsets = texts_buffer(batch.column("text"))
            offsets, starts, ends, _, _ = _tokens(batch, normalize)
            row, pos = _asked(batch.column("positions"))
            run_offsets, run_starts, run_ends, covered = removed_ranges(
                offsets, starts, ends, offsets[row] + pos, length)
            removals = RemovalRanges(run_offsets, run_starts, run_ends)
            left = remaining_texts(UnitAnalysis(data, doc_offsets, removals, None, {}))
            keep = characters_left(left) >= min_chars
            yield pa.RecordBatch.from_arrays(
                [batch.column("doc"), pa.array(removals.bytes_per_document, pa.int64()),
                 pa.array(covered, pa.int64()), pa.array(keep),
                 _where(keep, left.cast(pa.string()))],
                names=["doc", "bytes", "tokens", "keep", "text"])
    return run

