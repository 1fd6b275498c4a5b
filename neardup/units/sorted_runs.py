"""Units under a memory limit: sorted runs of hashes on disk, merged, verified on disk.

:func:`neardup.units.find_repeated_units` holds the corpus's text and about 40 bytes a
unit in memory. Under ``--memory-limit`` (:func:`find_repeated_units_bounded`) the same
cuts (:mod:`~neardup.units.split`), normalization and hashes
(:mod:`~neardup.units.hashing`) run one chunk of documents at a time
(:func:`~neardup.sources.read_document_chunks`), and each chunk leaves files in a work
directory, then lets go of its texts:

- ``text.u8``: the chunk's original UTF-8 text, back to back (one int64 offset per
  document stays in memory);
- ``normalized.u8`` and ``normalized.i64``: each unit's normalized bytes and offsets
  (units that normalize to nothing are no units and are not written);
- ``units.i64``: per unit its document, compared text and cut, absolute offsets into
  ``text.u8`` (five int64); ``lengths.i64``: its normalized text's characters and words
  (two int64, for the minimum: :func:`~neardup.units.is_short`);
- a *run*: the chunk's (hash, unit number) pairs sorted by hash, stable, so a hash's
  units are in input order (``runs.u64`` / ``runs.i64``, runs back to back).

:func:`merge_runs` (numba) merges the k runs with a binary heap keyed by (hash, run):
runs are in input order, so the merged stream is sorted by (hash, unit number) and each
hash's units arrive in input order. Every group of equal hashes is verified byte for byte
against the normalized bytes, memory-mapped, as
:func:`~neardup.units.hashing.exact_classes` does in memory: ``class_of[u]`` is the first
unit in input order whose bytes equal u's, and a collision costs a comparison, never a
wrong class. Each unit also gets its class's size and how many documents hold it (a
class's units arrive in input order, so its documents are counted as changes of
document). These three int64 columns are files too.

``sentences:N`` runs the same machinery a second time over windows: a window (N
consecutive sentences of one document, numbered by its first sentence) is the N int64
sentence classes of ``class_of``, hashed, sorted in runs per chunk of sentences, merged,
and verified against those classes on disk. A window repeated removes its N sentences.

What stays in memory for the whole run: per document its id, source, record and text
offset (the reader's columns, about 100 bytes with a short id), each unit's document (8
bytes a unit, for the merge), the removal ranges (16 bytes per removed range, merged),
the repeated texts' rows (40 bytes each, those under the minimum too), and the bool
columns of what is kept; per chunk, what the in-memory path holds for it.
Memory-mapped files are file-backed pages the kernel can drop. The copy is written in
a second pass over the inputs: each edited record's text is rebuilt from ``text.u8``
minus its ranges, one chunk of documents at a time (:class:`EditedTexts`), for JSON
Lines, line and CSV/TSV copies; a directory's or a Parquet file's copy takes its edited
texts at once, as its writer does in memory.

Same cuts, classes and first occurrences as in memory, so the same ranges, counts and
repeats, and the same copy byte for byte (``tests/units/test_sorted_runs.py``, with
chunks forcing many runs and a hash that collides everywhere). The ``span`` unit runs
the same machinery with tokens as its pieces, then its windows in hash partitions
(:mod:`~neardup.units.span_runs`); the copy is written as here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .._core import counts as counting
from .._core.jit import njit
from ..sources import Documents, read_document_chunks
from ..sources.copies import LazyEdits
from . import (
    RemovalRanges,
    Repeats,
    UnitAnalysis,
    UnitOptions,
    characters_left,
    is_short,
    removal_counts,
    split,
    window_lengths,
)
from .hashing import normalized_pieces, piece_hashes, texts_buffer, unit_lengths
from .ranges import remove_ranges

FIXED_BYTES = 256 << 20  # interpreter, numpy, pyarrow, numba and the compiled kernels
BYTES_PER_CHAR = 32  # a chunk's text as Python str and UTF-8, normalized, joined, its units
# span: about 128 bytes a token while a chunk is cut, normalized and numbered, and a token
# is at least 2 bytes (one byte and a space)
SPAN_BYTES_PER_CHAR = 64
MIN_CHUNK_CHARS = 1 << 20
_SPLITTERS = {"line": split.split_lines, "paragraph": split.split_paragraphs,
              "sentences": split.split_sentences}
__all__ = ["BYTES_PER_CHAR", "FIXED_BYTES", "SPAN_BYTES_PER_CHAR", "Appender", "EditedTexts",
           "SpilledCorpus", "UnitChunking", "bytes_per_char", "chunk_chars_for",
           "chunking_for", "find_repeated_units_bounded", "kept_documents",
           "limit_for_record", "mapped", "merge_runs", "window_hashes"]


def bytes_per_char(kind: str) -> int:
    """What a chunk's character costs for unit ``kind`` (``UnitOptions.kind``)."""
    return SPAN_BYTES_PER_CHAR if kind == "span" else BYTES_PER_CHAR


def chunk_chars_for(limit: int, kind: str = "line") -> int:
    """Characters of text a chunk may hold under ``limit`` bytes (:func:`chunking_for`'s
    ``chunk_chars``). A limit below the floor is refused, naming it."""
    return chunking_for(limit, kind).chunk_chars


@dataclass(frozen=True)
class UnitChunking:
    """How a units run reads under a memory limit: a chunk closes once it holds
    ``chunk_chars`` characters, between reads, so the record that closes it may add up
    to ``record_bytes`` more (a record's characters are at most its bytes); a longer
    record is skipped unread and copied unchanged (:mod:`neardup.sources.bounded`), and
    an input kept whole (standard input, a named pipe) may hold ``stream_bytes``."""

    limit: int
    kind: str
    chunk_chars: int
    record_bytes: int
    stream_bytes: int

    def reading(self) -> dict:
        """The bounds as :func:`~neardup.sources.read_document_chunks` takes them."""
        return {"max_record_bytes": self.record_bytes, "max_stream_bytes": self.stream_bytes}

    def skip_warning(self, longest: int, where: str) -> str | None:
        """What to tell before reading when a record counted before reading (``longest``
        bytes, at ``where``) is longer than a chunk can take: it is copied unchanged, and
        the limit that would process it; None when it fits."""
        if longest <= self.record_bytes:
            return None
        from ..pipeline.outofcore import as_option, format_size

        return (f"the longest record ({where}, {format_size(longest)}) is longer than a "
                f"chunk of --unit {self.kind} can take under the memory limit of "
                f"{format_size(self.limit)} ({self.record_bytes:,} bytes): it is skipped "
                f"unread and copied unchanged, its units not removed, as every record as "
                f"long, and the read report counts it; give --memory-limit "
                f"{as_option(limit_for_record(longest, self.kind))} or more to process it")


def chunking_for(limit: int, kind: str = "line") -> UnitChunking:
    """The reading under ``limit`` bytes for unit ``kind`` (``UnitOptions.kind``): half of
    what the fixed part leaves is for a chunk, at :func:`bytes_per_char` a character,
    shared by the chunk's characters and the record that closes it; of the other half
    (the per-document columns and the merge's pages), a quarter of what the fixed part
    leaves for an input kept whole. A limit below the floor is refused, naming it."""
    per_char = bytes_per_char(kind)
    chars = (limit - FIXED_BYTES) // 2 // per_char
    if chars < MIN_CHUNK_CHARS:
        floor = FIXED_BYTES + 2 * per_char * MIN_CHUNK_CHARS
        raise ValueError(f"--memory-limit {limit:,} bytes is below what --unit needs: at "
                         f"least {-(-floor // (1 << 20))}M (the interpreter and kernels, "
                         f"and one chunk of text)")
    record = int(chars // 2)
    return UnitChunking(limit, kind, int(chars - record), record,
                        int((limit - FIXED_BYTES) // 4))


def limit_for_record(size: int, kind: str = "line") -> int:
    """The smallest limit (bytes) whose chunks take a record of ``size`` bytes."""
    per_char = bytes_per_char(kind)
    floor = FIXED_BYTES + 2 * per_char * MIN_CHUNK_CHARS
    return max(floor, FIXED_BYTES + 2 * per_char * (2 * size + 1))


class Appender:
    """An array appended chunk by chunk to a file, mapped back when finished."""

    def __init__(self, path: Path, dtype):
        self.path, self.dtype, self.size = path, np.dtype(dtype), 0
        self.file = open(path, "wb")  # noqa: SIM115 (closed by finish)

    def write(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, self.dtype)
        self.file.write(values.tobytes())  # one buffer, as numpy lays it out
        self.size += values.size

    def finish(self, columns: int = 1) -> np.ndarray:
        self.file.close()
        return mapped(self.path, self.dtype, (self.size // columns, columns)
                      if columns > 1 else (self.size,))


def mapped(path: Path, dtype, shape: tuple, mode: str = "r") -> np.ndarray:
    """A file as an ndarray (numba takes no memmap subclass); empty: an empty array."""
    if not int(np.prod(shape)):
        return np.zeros(shape, dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode=mode, shape=shape))


@dataclass
class SpilledCorpus:
    """Pass one's files, mapped: ``data`` (the corpus's UTF-8 text), ``doc_offsets``
    (int64[n_docs + 1], in memory), ``units`` (int64[n, 5]: doc, text_start, text_end,
    cut_start, cut_end), ``lengths`` (int64[n, 2]: characters, words), ``chunk_docs`` /
    ``chunk_units`` (int64[chunks + 1]: where each chunk's documents and units start),
    the runs and the normalized bytes."""

    data: np.ndarray
    doc_offsets: np.ndarray
    units: np.ndarray
    lengths: np.ndarray
    chunk_docs: np.ndarray
    chunk_units: np.ndarray
    run_hashes: np.ndarray
    run_units: np.ndarray
    normalized: np.ndarray
    normalized_offsets: np.ndarray
    text_path: Path  # ``data``'s file, read a chunk at a time by the copy


def _spill(chunks: Iterator[Documents], options: UnitOptions, normalize, directory: Path,
           hash_pieces: Callable) -> tuple[SpilledCorpus, dict]:
    """Pass one: each chunk cut, normalized, hashed and written (see the module
    docstring). Returns the files and the documents' columns (ids, source, record) the
    copy needs."""
    files = {name: Appender(directory / name, dtype) for name, dtype in (
        ("text.u8", np.uint8), ("units.i64", np.int64), ("lengths.i64", np.int64),
        ("runs.u64", np.uint64),
        ("runs.i64", np.int64), ("normalized.u8", np.uint8), ("normalized.i64", np.int64))}
    files["normalized.i64"].write(np.zeros(1, np.int64))
    splitter = _SPLITTERS[options.kind]
    doc_offsets, chunk_docs, chunk_units = [np.zeros(1, np.int64)], [0], [0]
    ids, source, record = [], [], []
    n_bytes = n_units = n_norm = 0
    for chunk in chunks:
        data, offsets = texts_buffer(chunk.texts)
        doc, ts, te, cs, ce = splitter(data, offsets)
        values, piece_offsets = normalized_pieces(data, ts, te, normalize)
        kept = piece_offsets[1:] > piece_offsets[:-1]  # empty: no unit (nothing written)
        ends = piece_offsets[1:][kept]
        local = np.concatenate([np.zeros(1, np.int64), ends])
        hashes = np.asarray(hash_pieces(values, local), np.uint64)
        order = np.argsort(hashes, kind="stable")
        files["runs.u64"].write(hashes[order])
        files["runs.i64"].write(order + n_units)
        files["units.i64"].write(np.stack([doc[kept] + chunk.start, ts[kept] + n_bytes,
                                           te[kept] + n_bytes, cs[kept] + n_bytes,
                                           ce[kept] + n_bytes], axis=1))
        files["lengths.i64"].write(np.stack([column[kept] for column in
                                             unit_lengths(values, piece_offsets)], axis=1))
        files["normalized.u8"].write(values)
        files["normalized.i64"].write(ends + n_norm)
        files["text.u8"].write(data)
        doc_offsets.append(offsets[1:] + n_bytes)
        n_bytes, n_units, n_norm = n_bytes + data.size, n_units + int(kept.sum()), \
            n_norm + values.size
        chunk_docs.append(chunk.start + len(chunk))
        chunk_units.append(n_units)
        ids += chunk.ids
        source.append(np.asarray(chunk.source, np.int32))
        record.append(np.asarray(chunk.record, np.int64))
    spilled = SpilledCorpus(
        data=files["text.u8"].finish(), doc_offsets=np.concatenate(doc_offsets),
        units=files["units.i64"].finish(5), lengths=files["lengths.i64"].finish(2),
        chunk_docs=np.asarray(chunk_docs, np.int64),
        chunk_units=np.asarray(chunk_units, np.int64), run_hashes=files["runs.u64"].finish(),
        run_units=files["runs.i64"].finish(), normalized=files["normalized.u8"].finish(),
        normalized_offsets=files["normalized.i64"].finish(), text_path=directory / "text.u8")
    columns = {"ids": ids,
               "source": np.concatenate(source) if source else np.empty(0, np.int32),
               "record": np.concatenate(record) if record else np.empty(0, np.int64)}
    return spilled, columns


# ---------------------------------------------------------------- the merge


@njit(inline="always")
def _before(hashes, pos, a, b):
    """Run a's next pair comes before run b's: by hash, then by run (input order)."""
    ha, hb = hashes[pos[a]], hashes[pos[b]]
    return ha < hb or (ha == hb and a < b)


@njit(inline="always")
def _sift_down(heap, size, hashes, pos, i):
    while True:
        smallest, left, right = i, 2 * i + 1, 2 * i + 2
        if left < size and _before(hashes, pos, heap[left], heap[smallest]):
            smallest = left
        if right < size and _before(hashes, pos, heap[right], heap[smallest]):
            smallest = right
        if smallest == i:
            return
        heap[i], heap[smallest] = heap[smallest], heap[i]
        i = smallest


@njit(inline="always")
def _piece(offsets, stride, width, u):
    """(start, end) of piece u: ``offsets[u]:offsets[u + 1]``, or with ``stride`` > 0 the
    fixed-width ``u * stride:(u + width) * stride``."""
    if stride > 0:
        return u * stride, (u + width) * stride
    return offsets[u], offsets[u + 1]


@njit(inline="always")
def _same_bytes(values, offsets, stride, width, a, b):
    sa, ea = _piece(offsets, stride, width, a)
    sb, eb = _piece(offsets, stride, width, b)
    if ea - sa != eb - sb:
        return False
    for k in range(ea - sa):
        if values[sa + k] != values[sb + k]:
            return False
    return True


@njit(cache=True)
def _verify_group(group, g, values, offsets, stride, width, doc, class_of, size, documents,
                  reps, rep_of, rep_size, rep_docs, rep_last):
    """One hash's units (in input order) split into their distinct texts; returns how
    many texts beyond the first shared the hash."""
    found = 0
    for t in range(g):
        u = group[t]
        r = -1
        for q in range(found):
            if _same_bytes(values, offsets, stride, width, reps[q], u):
                r = q
                break
        if r < 0:
            r = found
            reps[r], rep_size[r], rep_docs[r], rep_last[r] = u, 0, 0, -1
            found += 1
        rep_of[t] = r
        rep_size[r] += 1
        if doc[u] != rep_last[r]:
            rep_docs[r] += 1
            rep_last[r] = doc[u]
    for t in range(g):
        u, r = group[t], rep_of[t]
        class_of[u], size[u], documents[u] = reps[r], rep_size[r], rep_docs[r]
    return found - 1


@njit(cache=True)
def merge_runs(hashes, units, bounds, values, offsets, stride, width, doc, class_of, size,
               documents):
    """The runs ``hashes[bounds[r]:bounds[r + 1]]`` (each sorted by hash, their
    ``units`` in input order within a hash; runs in input order) merged; each hash's
    units verified byte for byte (pieces: see :func:`_piece`). Fills, per unit u,
    ``class_of[u]`` (the first unit with u's bytes), ``size[u]`` (its class's units) and
    ``documents[u]`` (distinct documents holding the class, ``doc[u]`` per unit);
    returns the collisions (distinct texts that shared a hash with an earlier one)."""
    k = bounds.size - 1
    pos = bounds[:-1].copy()
    heap = np.empty(max(k, 1), np.int64)
    n_heap = 0
    for r in range(k):
        if pos[r] < bounds[r + 1]:
            heap[n_heap] = r
            n_heap += 1
    for i in range(n_heap // 2 - 1, -1, -1):
        _sift_down(heap, n_heap, hashes, pos, i)
    capacity = 1024
    group = np.empty(capacity, np.int64)
    rep_of = np.empty(capacity, np.int64)
    reps = np.empty(capacity, np.int64)
    rep_size = np.empty(capacity, np.int64)
    rep_docs = np.empty(capacity, np.int64)
    rep_last = np.empty(capacity, np.int64)
    collisions = 0
    while n_heap > 0:
        h = hashes[pos[heap[0]]]
        g = 0
        while n_heap > 0 and hashes[pos[heap[0]]] == h:
            r = heap[0]
            if g == capacity:  # a larger group: every buffer doubles
                capacity *= 2
                group = _grown(group, capacity)
                rep_of, reps = np.empty(capacity, np.int64), _grown(reps, capacity)
                rep_size, rep_docs = _grown(rep_size, capacity), _grown(rep_docs, capacity)
                rep_last = _grown(rep_last, capacity)
            group[g] = units[pos[r]]
            g += 1
            pos[r] += 1
            if pos[r] == bounds[r + 1]:
                n_heap -= 1
                heap[0] = heap[n_heap]
            _sift_down(heap, n_heap, hashes, pos, 0)
        collisions += _verify_group(group, g, values, offsets, stride, width, doc, class_of,
                                    size, documents, reps, rep_of, rep_size, rep_docs,
                                    rep_last)
    return collisions


@njit(cache=True)
def _grown(array, capacity):
    out = np.empty(capacity, array.dtype)
    out[:array.size] = array
    return out


def _merged(directory: Path, name: str, hashes, units, bounds, values, offsets, stride,
            width, doc) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(class_of, size, documents, collisions): :func:`merge_runs` into three int64
    files of ``doc.size`` entries."""
    n = doc.size
    out = [mapped(directory / f"{name}.{column}.i64", np.int64, (n,), "w+")
           for column in ("class", "size", "documents")]
    collisions = merge_runs(hashes, units, bounds, values, offsets, stride, width, doc,
                            *out) if n else 0
    return out[0], out[1], out[2], int(collisions)


@njit(cache=True)
def window_hashes(classes, starts, width):
    """uint64 per window: FNV-1a over its ``width`` sentence classes, finished with
    splitmix64's mixer (a window's text is its classes; equal classes, equal hash)."""
    out = np.empty(starts.size, np.uint64)
    for i in range(starts.size):
        h = np.uint64(0xCBF29CE484222325)
        for k in range(width):
            h = (h ^ np.uint64(classes[starts[i] + k])) * np.uint64(0x100000001B3)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out[i] = h ^ (h >> np.uint64(31))
    return out


# ---------------------------------------------------------------- the analysis


def find_repeated_units_bounded(inputs, source_options: dict, options: UnitOptions, normalize,
                                directory: Path, *, chunk_chars: int, progress: bool = False,
                                hash_pieces: Callable = piece_hashes
                                ) -> tuple[Documents, object, UnitAnalysis, SpilledCorpus]:
    """:func:`neardup.units.find_repeated_units` of the inputs read in chunks of
    ``chunk_chars`` characters, its files in ``directory`` (see the module docstring):
    (documents without their texts in memory, the read report, the analysis, the
    spilled corpus). ``hash_pieces``: (values, offsets) -> uint64 per unit, a test's
    hook (any function of the bytes gives the same result)."""
    chunks, report, sources = read_document_chunks(inputs, chunk_chars=chunk_chars,
                                                   progress=progress, **source_options)
    if options.kind == "span":
        from .span_runs import find_repeated_spans_bounded  # numba kernels: on demand

        spilled, columns, removals, repeats, counts = find_repeated_spans_bounded(
            chunks, options, normalize, directory, chunk_chars=chunk_chars,
            hash_pieces=hash_pieces)
    else:
        spilled, columns = _spill(chunks, options, normalize, directory, hash_pieces)
        removals, repeats, counts, short_repeats = _analysis(directory, spilled, options)
    columns["inputs"] = sources  # filled as the inputs were opened, chunks or none
    n_docs = spilled.doc_offsets.size - 1
    counts.update(removal_counts(removals))
    texts = _TextsOnDisk(spilled)
    kept_docs = Documents(ids=columns["ids"], texts=texts, source=columns["source"],
                          record=columns["record"], inputs=columns["inputs"])
    analysis = UnitAnalysis(spilled.data, spilled.doc_offsets, removals, repeats, counts,
                            None if options.kind == "span" else short_repeats)
    if kept_docs.source.size != n_docs:
        raise AssertionError(f"{n_docs} documents spilled but {kept_docs.source.size} read")
    return kept_docs, report, analysis, spilled


def _analysis(directory: Path, spilled: SpilledCorpus, options: UnitOptions
              ) -> tuple[RemovalRanges, Repeats, dict, Repeats]:
    """line, paragraph, sentences:N: the units' classes merged from the runs, then what
    each unit removes (``hash_collisions`` among the counts), and the repeated texts at
    or over the minimum and under it."""
    units = spilled.units
    doc = np.ascontiguousarray(units[:, 0]) if units.size else np.empty(0, np.int64)
    class_of, size, documents, collisions = _merged(
        directory, "units", spilled.run_hashes, spilled.run_units, spilled.chunk_units,
        spilled.normalized, spilled.normalized_offsets, 0, 1, doc)
    if options.kind == "sentences":
        collected, sentences_removed = _windows(directory, spilled, doc, class_of, options)
    else:
        collected = _units(spilled, doc, class_of, size, documents, options)
    removals, repeats, counts, short_repeats = collected.finish()
    if options.kind == "sentences":
        counting.add_unit_counts(counts, sentences=doc.size,
                                 sentences_removed=sentences_removed)
    counting.add_unit_counts(counts, hash_collisions=collisions)
    return removals, repeats, counts, short_repeats


def _chunk_slices(spilled: SpilledCorpus) -> Iterator[tuple[int, int]]:
    """(first, end) unit of each chunk."""
    return zip(spilled.chunk_units[:-1].tolist(), spilled.chunk_units[1:].tolist(),
               strict=True)


class _Collected:
    """Removal ranges and repeated rows (at or over the minimum, and under it) gathered
    chunk by chunk, and the unit counts."""

    def __init__(self, n_docs: int, doc_offsets: np.ndarray):
        self.n_docs, self.doc_offsets = n_docs, doc_offsets
        self.removed: list[tuple[np.ndarray, ...]] = []
        self.repeated: list[tuple[np.ndarray, ...]] = []
        self.short_repeated: list[tuple[np.ndarray, ...]] = []
        # units, distinct, repeated, removed, short, short_repeated, short_spared
        self.totals = np.zeros(7, np.int64)

    def add(self, ids, class_of, size, policy, short, rows: tuple[np.ndarray, ...],
            ranges: tuple[np.ndarray, ...]) -> None:
        """``policy``: what the keep policy removes; ``short``: under the minimum (kept);
        ``ranges``: (doc, cut start, cut end) of the units removed (``policy & ~short``)."""
        first = class_of == ids
        repeated = first & (size >= 2)
        self.totals += [ids.size, first.sum(), np.count_nonzero(repeated & ~short),
                        np.count_nonzero(policy & ~short), short.sum(),
                        np.count_nonzero(repeated & short), np.count_nonzero(policy & short)]
        self.repeated.append(tuple(column[repeated & ~short] for column in rows))
        self.short_repeated.append(tuple(column[repeated & short] for column in rows))
        self.removed.append(ranges)

    def _repeats(self, found: list) -> Repeats:
        columns = [np.concatenate([r[k] for r in found]) if found
                   else np.empty(0, np.int64) for k in range(5)]
        rbase = self.doc_offsets[columns[0]]
        return Repeats(columns[0], columns[1] - rbase, columns[2] - rbase, columns[3],
                       columns[4])

    def finish(self) -> tuple[RemovalRanges, Repeats, dict, Repeats]:
        doc, start, end = (np.concatenate([r[k] for r in self.removed]) if self.removed
                           else np.empty(0, np.int64) for k in range(3))
        base = self.doc_offsets[doc]
        removals = RemovalRanges.from_units(self.n_docs, doc, start - base, end - base)
        counts = counting.unit_counts(**dict(zip(
            ("units", "distinct", "repeated", "removed", "short", "short_repeated",
             "short_spared"), self.totals.tolist(), strict=True)))
        return removals, self._repeats(self.repeated), counts, self._repeats(self.short_repeated)


def _units(spilled, doc, class_of, size, documents, options):
    """line, paragraph: a unit is removed when it is not its class's first (keep
    first) or its class has two or more (keep none), and is not short."""
    collected = _Collected(spilled.doc_offsets.size - 1, spilled.doc_offsets)
    for lo, hi in _chunk_slices(spilled):
        ids = np.arange(lo, hi)
        cls, sz = np.asarray(class_of[lo:hi]), np.asarray(size[lo:hi])
        policy = cls != ids if options.keep == "first" else sz >= 2
        lengths = np.asarray(spilled.lengths[lo:hi])
        short = is_short(lengths[:, 0], lengths[:, 1], options.minimum)
        removed = policy & ~short
        u = np.asarray(spilled.units[lo:hi])
        collected.add(ids, cls, sz, policy, short,
                      (u[:, 0], u[:, 1], u[:, 2], sz, np.asarray(documents[lo:hi])),
                      (u[removed, 0], u[removed, 3], u[removed, 4]))
    return collected


def _window_starts(doc: np.ndarray, lo: int, hi: int, width: int) -> np.ndarray:
    """The sentences in [lo, hi) that start a window of ``width`` sentences of one
    document (a chunk holds whole documents, so no window crosses it)."""
    starts = np.arange(lo, max(hi - width + 1, lo))
    return starts[doc[starts] == doc[starts + width - 1]] if starts.size else starts


def _windows(directory, spilled, doc, sentence_class, options):
    """sentences:N: windows hashed from their sentence classes, sorted in runs, merged
    and verified on those classes; a removed window removes its N sentences. (The
    collected rows and counts, the sentences removed.)"""
    width = options.sentences
    hashes = Appender(directory / "windows.u64", np.uint64)
    numbers = Appender(directory / "windows.i64", np.int64)
    bounds = [0]
    classes = sentence_class if sentence_class.size else np.zeros(0, np.int64)
    for lo, hi in _chunk_slices(spilled):
        starts = _window_starts(doc, lo, hi, width)
        h = window_hashes(classes, starts, width)
        order = np.argsort(h, kind="stable")
        hashes.write(h[order])
        numbers.write(starts[order])
        bounds.append(bounds[-1] + starts.size)
    window_class, size, documents, _ = _merged(
        directory, "windows", hashes.finish(), numbers.finish(), np.asarray(bounds, np.int64),
        classes.view(np.uint8), np.empty(0, np.int64), 8, width, doc)
    collected = _Collected(spilled.doc_offsets.size - 1, spilled.doc_offsets)
    sentences_removed = 0
    for lo, hi in _chunk_slices(spilled):
        starts = _window_starts(doc, lo, hi, width)
        cls, sz = window_class[starts], size[starts]
        policy = cls != starts if options.keep == "first" else sz >= 2
        lengths = np.asarray(spilled.lengths[lo:hi])
        short = is_short(*window_lengths(lengths[:, 0], lengths[:, 1], starts - lo, width),
                         options.minimum)
        removed = policy & ~short
        cover = np.zeros(hi - lo + 1, np.int64)
        np.add.at(cover, starts[removed] - lo, 1)
        np.add.at(cover, starts[removed] - lo + width, -1)
        covered = np.flatnonzero(np.cumsum(cover[:-1]) > 0) + lo
        sentences_removed += covered.size
        u = spilled.units
        collected.add(starts, cls, sz, policy, short,
                      (doc[starts], u[starts, 1], u[starts + width - 1, 2], sz,
                       documents[starts]),
                      (doc[covered], u[covered, 3], u[covered, 4]))
    return collected, int(sentences_removed)


# ---------------------------------------------------------------- the copy


def _remaining(spilled: SpilledCorpus, removals: RemovalRanges, lo: int, hi: int
               ) -> pa.LargeStringArray:
    """Documents [lo, hi) minus their ranges, as one Arrow array. Their bytes are read
    from the file, not through the mapping, so that no page of the text stays in the
    resident set after the chunk."""
    r = removals
    a, b = int(r.offsets[lo]), int(r.offsets[hi])
    first, end = int(spilled.doc_offsets[lo]), int(spilled.doc_offsets[hi])
    data = np.fromfile(spilled.text_path, np.uint8, count=end - first, offset=first)
    values, offsets = remove_ranges(data, spilled.doc_offsets[lo:hi + 1] - first,
                                    r.offsets[lo:hi + 1] - a, r.starts[a:b], r.ends[a:b])
    return pa.LargeStringArray.from_buffers(hi - lo, pa.py_buffer(offsets),
                                            pa.py_buffer(values))


def _chunk_documents(spilled: SpilledCorpus) -> Iterator[tuple[int, int]]:
    """(first, end) document of each chunk."""
    return zip(spilled.chunk_docs[:-1].tolist(), spilled.chunk_docs[1:].tolist(),
               strict=True)


def kept_documents(analysis: UnitAnalysis, spilled: SpilledCorpus, min_chars: int
                   ) -> np.ndarray:
    """bool per document: nothing removed from it, or at least ``min_chars`` characters
    left (as :func:`neardup.units.run.dedup_units` decides in memory), a chunk at a time."""
    touched = analysis.removals.bytes_per_document > 0
    keep = np.ones(touched.size, bool)
    for lo, hi in _chunk_documents(spilled):
        if touched[lo:hi].any():
            left = characters_left(_remaining(spilled, analysis.removals, lo, hi))
            keep[lo:hi] = ~touched[lo:hi] | (left >= min_chars)
    return keep


class EditedTexts(LazyEdits):
    """document -> its text minus its ranges, for the documents kept that lost bytes;
    built one chunk of documents at a time, when the copy asks for one of them."""

    def __init__(self, analysis: UnitAnalysis, spilled: SpilledCorpus, keep: np.ndarray):
        self.analysis, self.spilled = analysis, spilled
        self.changed = keep & (analysis.removals.bytes_per_document > 0)
        self.block: tuple[int, int, list[str]] = (0, 0, [])

    @property
    def documents(self) -> np.ndarray:
        return np.flatnonzero(self.changed)

    def __contains__(self, d) -> bool:
        return isinstance(d, (int, np.integer)) and 0 <= d < self.changed.size and \
            bool(self.changed[d])

    def __getitem__(self, d) -> str:
        if d not in self:
            raise KeyError(d)
        lo, hi, texts = self.block
        if not lo <= d < hi:
            chunk = int(np.searchsorted(self.spilled.chunk_docs, d, side="right")) - 1
            lo, hi = int(self.spilled.chunk_docs[chunk]), int(self.spilled.chunk_docs[chunk + 1])
            texts = _remaining(self.spilled, self.analysis.removals, lo, hi).to_pylist()
            self.block = (lo, hi, texts)
        return texts[d - lo]


class _TextsOnDisk(Sequence):
    """The documents' original texts, read from the spilled corpus when asked."""

    def __init__(self, spilled: SpilledCorpus):
        self.data, self.offsets = spilled.data, spilled.doc_offsets

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, d: int) -> str:
        return self.data[self.offsets[d]:self.offsets[d + 1]].tobytes().decode("utf-8")


