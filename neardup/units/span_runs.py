"""Token spans under a memory limit: the span unit's steps (:mod:`neardup.units.spans`)
over columns on disk, a chunk of documents or a hash partition at a time.

:func:`neardup.units.find_repeated_units` with ``unit="span"`` holds every token's start,
end and id at once. Under ``--memory-limit`` (:func:`find_repeated_spans_bounded`, called
by :func:`~neardup.units.sorted_runs.find_repeated_units_bounded`) the same tokens, ids,
windows and chains come from files in the work directory:

1. Tokens, a chunk of documents at a time (:func:`~neardup.sources.read_document_chunks`):
   the chunk is cut into tokens (:func:`~neardup.units.split.split_tokens`), normalized
   (a token that normalizes to nothing is none) and split into its distinct tokens,
   exactly, in memory (:func:`~neardup.units.hashing.exact_classes`). Written: the
   chunk's text (``text.u8``), each token's start and end in it (``tokens.start.i64``,
   ``tokens.end.i64``), the number of its distinct token (``tokens.distinct.i64``), and
   the distinct tokens' normalized bytes with a run of their hashes sorted, as
   :mod:`~neardup.units.sorted_runs` writes the other units.
2. Token ids: :func:`~neardup.units.sorted_runs.merge_runs` merges the distinct tokens'
   runs and verifies every group of one hash byte for byte: a distinct token's class is
   the first distinct token, in input order, with its bytes, and a token's id
   (``tokens.id.i64``) is its distinct token's class. Equal ids iff equal normalized
   bytes, as in memory; the ids' values differ from the in-memory ones, which changes
   nothing, as the kernel only compares ids for equality.
3. Windows: :func:`~neardup.units.spans.repeated_windows` over the memory-mapped ids, in
   ``passes`` hash partitions, each sorting its windows' keys in memory and comparing the
   ids of windows that share a hash. A partition's repeated windows (position,
   representative, class size) are appended to one file per chunk of documents
   (``windows.C.i64``): a window never crosses its document, so it lies in one chunk.
4. Per chunk, its repeated windows sorted by position give the removed windows (the keep
   policies of :mod:`~neardup.units.spans`), the tokens they cover and the removal
   ranges (:func:`~neardup.units.spans.covered_tokens`,
   :func:`~neardup.units.spans.token_runs`), and for the listing which windows extend
   into the next representative's class and how many documents each class lies in. The
   repeated classes are then chained whole (:func:`~neardup.units.spans.chain_heads`).

Same tokens, same equalities, same windows: the same ranges, counts and listing as in
memory, so the same copy byte for byte (``tests/units/test_span_runs.py``, down to one
document a chunk and with a hash that collides everywhere).

Memory, besides what :mod:`~neardup.units.sorted_runs` holds for every unit (the
documents' columns, the removal ranges): step 1 holds one chunk, as the in-memory path
would for it (about 128 bytes a token, charged as
:data:`~neardup.units.sorted_runs.SPAN_BYTES_PER_CHAR` a character: a token and the
space after it are 2 bytes at least); step 2 holds 24 bytes for each distinct token of
each chunk (the merge's three columns, memory-mapped); step 3 holds 8 bytes for each
window of the partition being sorted (``passes`` is chosen so that
:data:`BYTES_PER_WINDOW` a window of one partition fits in a chunk's share of the limit,
:func:`passes_for`) and 24 bytes for each of its repeated windows; step 4 holds one
chunk's repeated windows and tokens. For the whole run: 8 bytes a document (where its
tokens start) and about 40 bytes for each repeated class (representative, size,
documents, link; the listing's rows). The token ids (8 bytes a token) are memory-mapped
and read where windows are hashed and compared: file-backed pages, in the resident set
while the kernel keeps them, dropped under pressure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._core import counts as counting
from ..sources import Documents
from . import RemovalRanges, Repeats, UnitOptions, spans, split
from .hashing import exact_classes, gather, normalized_pieces, texts_buffer
from .sorted_runs import SPAN_BYTES_PER_CHAR, Appender, SpilledCorpus, mapped, merge_runs

# a partition's sort key (8) and its share of the hash groups and repeated windows (about
# 100 bytes each: positions, classes, sizes, the kernel's and the spill's copies)
BYTES_PER_WINDOW = 32
__all__ = ["BYTES_PER_WINDOW", "find_repeated_spans_bounded", "passes_for"]


def passes_for(windows: int, budget: int) -> int:
    """Hash partitions for ``windows`` windows, so that one partition's
    :data:`BYTES_PER_WINDOW` a window fit in ``budget`` bytes."""
    return max(1, -(-windows * BYTES_PER_WINDOW // max(budget, 1)))


@dataclass
class _Tokens:
    """Step 1's files and columns: the spilled corpus (``chunk_units``: where each
    chunk's tokens start), the documents' columns the copy needs, where each document's
    tokens start (int64[n_docs + 1]) and where each chunk's distinct tokens start."""

    spilled: SpilledCorpus
    columns: dict
    token_offsets: np.ndarray
    chunk_distinct: np.ndarray
    directory: Path

    def column(self, name: str, lo: int, hi: int) -> np.ndarray:
        """Tokens [lo, hi) of ``tokens.NAME.i64``, read (not mapped)."""
        return np.fromfile(self.directory / f"tokens.{name}.i64", np.int64, count=hi - lo,
                           offset=8 * lo)

    def chunks(self) -> Iterator[tuple[int, int, int]]:
        """(chunk, first document, end document) of each chunk."""
        docs = self.spilled.chunk_docs.tolist()
        return ((c, docs[c], docs[c + 1]) for c in range(len(docs) - 1))


def find_repeated_spans_bounded(chunks: Iterator[Documents], options: UnitOptions, normalize,
                                directory: Path, *, chunk_chars: int, hash_pieces: Callable
                                ) -> tuple[SpilledCorpus, dict, RemovalRanges, Repeats, dict]:
    """The span unit of the chunks (see the module docstring): (spilled corpus, the
    documents' columns, removal ranges, repeated spans, counts without the removal's)."""
    tokens = _spill_tokens(chunks, normalize, directory, hash_pieces)
    ids = _token_ids(tokens, directory)
    length = options.min_tokens
    windows = int(np.maximum(np.diff(tokens.token_offsets) - length + 1, 0).sum())
    passes = passes_for(windows, chunk_chars * SPAN_BYTES_PER_CHAR)  # a chunk's share
    _spill_windows(tokens, ids, length, passes)
    removals, repeats, windows_removed, tokens_removed = _analysis(tokens, options)
    counts = counting.span_counts(tokens=tokens.token_offsets[-1],
                                  spans_repeated=repeats.doc.size, windows=windows,
                                  windows_removed=windows_removed,
                                  tokens_removed=tokens_removed)
    return tokens.spilled, tokens.columns, removals, repeats, counts


def _spill_tokens(chunks, normalize, directory: Path, hash_pieces) -> _Tokens:
    """Step 1: each chunk's tokens, their distinct tokens and a sorted run of these."""
    files = {name: Appender(directory / name, dtype) for name, dtype in (
        ("text.u8", np.uint8), ("tokens.start.i64", np.int64), ("tokens.end.i64", np.int64),
        ("tokens.distinct.i64", np.int64), ("runs.u64", np.uint64), ("runs.i64", np.int64),
        ("normalized.u8", np.uint8), ("normalized.i64", np.int64))}
    files["normalized.i64"].write(np.zeros(1, np.int64))
    doc_offsets, per_doc = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
    chunk_docs, chunk_tokens, chunk_distinct = [0], [0], [0]
    ids, source, record = [], [], []
    n_bytes = n_tokens = n_distinct = n_norm = 0
    for chunk in chunks:
        data, offsets = texts_buffer(chunk.texts)
        doc, ts, te, _, _ = split.split_tokens(data, offsets)
        values, piece_offsets = normalized_pieces(data, ts, te, normalize)
        kept = piece_offsets[1:] > piece_offsets[:-1]  # empty: no token
        local = np.concatenate([np.zeros(1, np.int64), piece_offsets[1:][kept]])
        class_of, _ = exact_classes(values, local, np.asarray(hash_pieces(values, local),
                                                              np.uint64))
        firsts = np.flatnonzero(class_of == np.arange(class_of.size))
        number = np.zeros(class_of.size, np.int64)
        number[firsts] = np.arange(firsts.size) + n_distinct
        distinct, distinct_offsets = gather(values, local[firsts], local[firsts + 1],
                                            np.empty(0, np.uint8))
        hashes = np.asarray(hash_pieces(distinct, distinct_offsets), np.uint64)
        order = np.argsort(hashes, kind="stable")
        files["runs.u64"].write(hashes[order])
        files["runs.i64"].write(order + n_distinct)
        files["normalized.u8"].write(distinct)
        files["normalized.i64"].write(distinct_offsets[1:] + n_norm)
        files["tokens.distinct.i64"].write(number[class_of])
        files["tokens.start.i64"].write(ts[kept] + n_bytes)
        files["tokens.end.i64"].write(te[kept] + n_bytes)
        files["text.u8"].write(data)
        doc_offsets.append(offsets[1:] + n_bytes)
        per_doc.append(np.cumsum(np.bincount(doc[kept], minlength=len(chunk))) + n_tokens)
        n_bytes, n_tokens = n_bytes + data.size, n_tokens + class_of.size
        n_distinct, n_norm = n_distinct + firsts.size, n_norm + distinct.size
        chunk_docs.append(chunk.start + len(chunk))
        chunk_tokens.append(n_tokens)
        chunk_distinct.append(n_distinct)
        ids += chunk.ids
        source.append(np.asarray(chunk.source, np.int32))
        record.append(np.asarray(chunk.record, np.int64))
    for name in ("tokens.start.i64", "tokens.end.i64", "tokens.distinct.i64"):
        files[name].finish()  # read back a chunk at a time (_Tokens.column)
    spilled = SpilledCorpus(
        data=files["text.u8"].finish(), doc_offsets=np.concatenate(doc_offsets),
        units=np.empty((0, 5), np.int64), lengths=np.empty((0, 2), np.int64),
        chunk_docs=np.asarray(chunk_docs, np.int64),
        chunk_units=np.asarray(chunk_tokens, np.int64), run_hashes=files["runs.u64"].finish(),
        run_units=files["runs.i64"].finish(), normalized=files["normalized.u8"].finish(),
        normalized_offsets=files["normalized.i64"].finish(), text_path=directory / "text.u8")
    columns = {"ids": ids,
               "source": np.concatenate(source) if source else np.empty(0, np.int32),
               "record": np.concatenate(record) if record else np.empty(0, np.int64)}
    return _Tokens(spilled, columns, np.concatenate(per_doc),
                   np.asarray(chunk_distinct, np.int64), directory)


def _token_ids(tokens: _Tokens, directory: Path) -> np.ndarray:
    """Step 2: every token's id (its distinct token's class), a file mapped back."""
    s = tokens.spilled
    n_distinct = int(tokens.chunk_distinct[-1])
    class_of, size, documents = (mapped(directory / f"distinct.{column}.i64", np.int64,
                                        (n_distinct,), "w+")
                                 for column in ("class", "size", "documents"))
    if n_distinct:
        merge_runs(s.run_hashes, s.run_units, tokens.chunk_distinct, s.normalized,
                   s.normalized_offsets, 0, 1, np.zeros(n_distinct, np.int64), class_of, size,
                   documents)
    out = Appender(directory / "tokens.id.i64", np.int64)
    bounds = s.chunk_units.tolist()
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        out.write(class_of[tokens.column("distinct", lo, hi)])
    return out.finish()


def _spill_windows(tokens: _Tokens, ids: np.ndarray, length: int, passes: int) -> None:
    """Step 3: each hash partition's repeated windows, appended to their chunk's file
    as rows of (position, representative, class size)."""
    bounds = tokens.spilled.chunk_units
    for part in range(passes):
        positions, reps, counts = spans.repeated_windows(tokens.token_offsets,
                                                         ids.view(np.uint64), length,
                                                         passes, part)
        order = np.argsort(positions)  # by position, so by chunk: no row is copied twice
        at = np.searchsorted(positions[order], bounds)
        for c in np.flatnonzero(np.diff(at)).tolist():
            rows = order[at[c]:at[c + 1]]
            with open(tokens.directory / f"windows.{c}.i64", "ab") as f:
                f.write(np.stack([positions[rows], reps[rows], counts[rows]], axis=1).tobytes())
        del positions, reps, counts, order


def _chunk_windows(tokens: _Tokens, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chunk c's repeated windows by position: (positions, representatives, sizes)."""
    path = tokens.directory / f"windows.{c}.i64"
    rows = np.fromfile(path, np.int64).reshape(-1, 3) if path.exists() \
        else np.empty((0, 3), np.int64)
    order = np.argsort(rows[:, 0])  # positions are unique: any sort gives one order
    return tuple(np.ascontiguousarray(rows[order, k]) for k in range(3))


def _analysis(tokens: _Tokens, options: UnitOptions
              ) -> tuple[RemovalRanges, Repeats, int, int]:
    """Step 4: per chunk its removal ranges and its classes' links and documents; then
    the chains of the repeated classes. (ranges, spans, windows removed, tokens removed)"""
    length, offsets = options.min_tokens, tokens.token_offsets
    doc_offsets = tokens.spilled.doc_offsets
    ranges_per_doc = np.zeros(doc_offsets.size - 1, np.int64)
    starts, ends, classes, sizes, unlinked, doc_reps, doc_counts = ([] for _ in range(7))
    tokens_removed = windows_removed = 0
    for c, d0, d1 in tokens.chunks():
        t0, t1 = int(offsets[d0]), int(offsets[d1])
        positions, reps, counts = _chunk_windows(tokens, c)
        removed_windows = positions[reps != positions] if options.keep == "first" \
            else positions
        windows_removed += removed_windows.size
        removed = spans.covered_tokens(removed_windows - t0, t1 - t0, length)
        tokens_removed += int(np.count_nonzero(removed))
        run_offsets, first, last = spans.token_runs(removed, offsets[d0:d1 + 1] - t0)
        runs = np.diff(run_offsets)
        ranges_per_doc[d0:d1] = runs
        base = np.repeat(doc_offsets[d0:d1], runs)
        starts.append(tokens.column("start", t0, t1)[first] - base)
        ends.append(tokens.column("end", t0, t1)[last] - base)
        member_doc = np.searchsorted(offsets, positions, side="right") - 1
        following = positions + 1
        at = np.minimum(np.searchsorted(positions, following), max(positions.size - 1, 0))
        extends = ((positions[at] == following) & (following + length <= offsets[member_doc + 1])
                   & (reps[at] == reps + 1) & (counts[at] == counts))
        unlinked.append(np.unique(reps[~extends]))
        heads = reps == positions
        classes.append(positions[heads])
        sizes.append(counts[heads])
        order = np.lexsort((member_doc, reps))  # a class's documents, one change each
        r, d = reps[order], member_doc[order]
        new = np.ones(r.size, bool)
        new[1:] = (r[1:] != r[:-1]) | (d[1:] != d[:-1])
        held, held_counts = np.unique(r[new], return_counts=True)
        doc_reps.append(held)
        doc_counts.append(held_counts)
    removal_offsets = np.zeros(ranges_per_doc.size + 1, np.int64)
    np.cumsum(ranges_per_doc, out=removal_offsets[1:])
    removals = RemovalRanges(removal_offsets, *(_joined(parts) for parts in (starts, ends)))
    repeats = _chains(tokens, length, *(_joined(parts) for parts in (
        classes, sizes, unlinked, doc_reps, doc_counts)))
    return removals, repeats, int(windows_removed), tokens_removed


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)


def _chains(tokens: _Tokens, length: int, classes, sizes, unlinked, doc_reps, doc_counts
            ) -> Repeats:
    """The repeated spans, as :func:`~neardup.units.spans.repeated_spans` lists them, from
    the repeated classes (representatives ascending), their sizes, the classes some window
    of which does not extend, and per (class, chunk) the documents holding it."""
    linked = np.ones(classes.size, bool)
    linked[np.searchsorted(classes, unlinked)] = False
    documents = np.zeros(classes.size, np.int64)
    np.add.at(documents, np.searchsorted(classes, doc_reps), doc_counts)
    heads, last = spans.chain_heads(classes, linked)
    at_head = np.searchsorted(classes, heads)
    offsets = tokens.token_offsets
    doc = np.searchsorted(offsets, heads, side="right") - 1
    base = tokens.spilled.doc_offsets[doc]
    token_starts = mapped(tokens.directory / "tokens.start.i64", np.int64, (int(offsets[-1]),))
    token_ends = mapped(tokens.directory / "tokens.end.i64", np.int64, (int(offsets[-1]),))
    return Repeats(doc.astype(np.int64), token_starts[heads] - base,
                   token_ends[last + length - 1] - base, sizes[at_head], documents[at_head])
