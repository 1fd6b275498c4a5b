"""``find`` on embeddings under a memory limit: the vectors read a chunk at a time,
normalised and appended to files, banded from the files, verified from the files.

The stages are the in-memory run's (:mod:`neardup.pipeline.embedded`,
:mod:`neardup.cosine`); only where the vectors live differs, so the pairs, clusters and
representatives are the same:

1. **Read** a chunk of records (:func:`~neardup.sources.read_document_chunks`, the
   chunk sized by :class:`~neardup.pipeline.outofcore.ChunkPlan`): their vectors come
   with them (a JSON Lines field), from the input's column read forward a few thousand
   rows at a time (Parquet, Arrow IPC: :attr:`~neardup.sources.Format.column_batches`)
   or from the rows of a ``.npy`` file (memory-mapped). Each vector is normalised
   (:func:`neardup.cosine.normalise`) and appended, as float32, to the file of vectors of
   its length: the length every vector must have (the most common one, as
   :mod:`neardup.sources.vectors` chooses it) is known only once every record is read.
   The texts are shingled for their counts and sizes, then dropped.
2. **Band**: the plan (b × r over K hyperplanes, :meth:`~neardup.config.FindConfig.
   cosine_plan`) is made for the usable vectors counted, as in memory; their band keys
   are computed from the mapped file a batch at a time and appended to one file per
   band, and the bands are grouped one at a time
   (:func:`neardup.lsh.candidate_pairs_by_band`).
3. **Verify**: the candidates' exact cosines (:func:`neardup.cosine.screened_cosine`)
   read only the candidates' rows of the mapped file.

Method "auto" runs LSH here (all pairs would hold every vector; ``--method exact`` is
refused under a limit); ``--also-jaccard`` is refused (the shingle sets are not kept).

**Memory.** The vector files and the band files are mapped, file-backed pages that the
limit leaves out (as the MinHash run's spill files, :mod:`neardup.pipeline.outofcore`).
Held for the whole run: :data:`PER_DOCUMENT_VECTORS` bytes a document besides what any
run holds (its vector's length, reason and row of the file, its reason and cosine side
flags). Held a chunk at a time: the chunk's vectors as read and normalised,
:data:`PER_DIMENSION` bytes a dimension of each of its vectors (Python lists of floats
for a field read with its record, Arrow and numpy copies for a column): the chunk's
document count is sized for the dimensions the input declares (a Parquet or Arrow
fixed-size list, a ``.npy`` file's width, the first JSON Lines record's vector) and a
chunk whose vectors hold more is refused, naming the limit it needs. These per-dimension
costs are reckoned from the copies made, not measured. After reading: one band's keys
and their grouping (20 bytes a vector), the batches of band keys and of verification
sized to a chunk's budget, and the candidates and pairs (not counted, as in the MinHash
run).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import cosine, lsh
from .._core import counts as counting
from .._core import remote
from .._core.heap import release_freed_memory
from .._core.progress import StageTimer, say
from ..options import OptionGroups
from ..result import FindResult
from ..sources import Documents, StreamTooLarge, find_format, read_document_chunks, vectors
from ..sources.options import as_paths
from ..text import prepare
from . import outofcore
from .embedded import SpilledVectors, find_unit
from .run import add_counts, representative_config

PER_DOCUMENT_VECTORS = 32  # int64 length, uint8 reason, int64 row, its reason object, flags
PER_DIMENSION = {"fields": 96, "columns": 48, "array": 32}  # a chunk's vector, by origin
ASSUMED_DIMENSIONS = 4096  # a chunk is sized for this many when the input does not say
NO_VECTOR, OK, NOT_FINITE, ZERO_NORM = 0, 1, 2, 3  # a document's vector, as read
_REASON_OF = {NO_VECTOR: cosine.NO_VECTOR, OK: "", NOT_FINITE: cosine.NOT_FINITE,
              ZERO_NORM: cosine.ZERO_NORM}


def find_chunked_vectors(inputs, groups: OptionGroups, *, quiet: bool,
                         representative_field: str | None, limit: int, work_dir
                         ) -> tuple[FindResult, Documents]:
    """(FindResult, Documents) of a run on embeddings as
    :func:`~neardup.pipeline.run.find_documents` returns them, under ``limit`` bytes
    (see the module docstring); the Documents hold ids, inputs and records, mapped."""
    config = representative_config(groups, representative_field)
    source_options = groups.source.given()
    paths = as_paths(inputs)
    fmt = source_options.get("fmt", "auto")
    embeddings = config.embeddings
    field = vectors.read_with_records(embeddings, paths, fmt)
    origin = ("array" if vectors.field_name(embeddings) is None else
              "fields" if field is not None else "columns")
    array = _array_of(embeddings, paths) if origin == "array" else None
    chunking = _chunk_plan(config, limit, paths, fmt, origin,
                           _declared_dimensions(embeddings, array, paths, fmt, origin))
    chunks, report, sources = read_document_chunks(  # no --also-jaccard: texts optional
        paths, chunk_chars=chunking.chunk_chars, chunk_docs=chunking.chunk_docs,
        max_record_bytes=chunking.record_bytes, max_stream_bytes=chunking.stream_bytes,
        progress=not quiet, extra_fields=[field] if field else [], text_optional=True,
        **source_options)
    timer = StageTimer(quiet)
    with outofcore.WorkDirectory(work_dir) as directory:
        read = _ChunkedRead(directory, config, groups.prepare, origin, field, array,
                            str(embeddings), sources)
        while True:
            with read.timer.stage("read"):
                try:
                    chunk = next(chunks, None)
                except StreamTooLarge as err:
                    raise outofcore.MemoryLimitError(str(err)) from None
            if chunk is None:
                break
            chunking.admit(chunk)
            read.take(chunk, chunking)
            if not quiet:
                say(f"[neardup] chunk of {len(chunk):,} vectors read and normalised "
                    f"({read.store.documents:,} so far)")
            del chunk
        ids, source, record = read.writer.finish_documents()
        reasons, at, dimensions, shown = _settle(read, source, report.records_seen,
                                                 embeddings)
        release_freed_memory()
        timer.seconds.update(read.timer.seconds)
        unit = read.store.mapped(dimensions)
        key = np.concatenate(read.text_lengths) if read.text_lengths else None
        if representative_field == "id":
            key = np.asarray(ids.to_list())
        budget = max(chunking.budget, 1 << 20)
        spilled = SpilledVectors(at, _band_search(unit, directory, config, budget),
                                 pair_batch=_batch(budget, 20 * max(dimensions, 1),
                                                   cosine.PAIR_BATCH))
        result = find_unit(unit, reasons, read.sizes(), ids, config, source=shown,
                           timer=timer, representative_key=key, spilled=spilled)
        documents = Documents(ids=ids, texts=None, source=source, record=record,
                              inputs=sources)
        del unit, spilled
    generated = np.concatenate(read.generated) if read.generated else np.empty(0, bool)
    if groups.prepare.generated == "flag":
        result.status[generated & (result.status == "ok")] = "ok (generated)"
    result.counts.update(read.counts)
    counting.add(result.counts, chunks={**chunking.as_dict(), "chunks_read": read.chunks})
    result.read_report = report.as_dict()
    result.read_report["inputs"] = [
        {"path": remote.shown(os.fspath(src.given)), "format": src.fmt, "name": src.name,
         "prefixed": len(sources) > 1} for src in sources]
    return result, documents


def _chunk_plan(config, limit: int, paths, fmt: str, origin: str,
                dimensions: int | None) -> outofcore.ChunkPlan:
    """The MinHash run's chunk plan with a vector's bytes in each chunk's documents
    (:data:`PER_DIMENSION`, for ``dimensions`` or :data:`ASSUMED_DIMENSIONS`) and
    :data:`PER_DOCUMENT_VECTORS` in each document's for the run."""
    per_char = outofcore.COSTS.per_char_64 if (config.shingle_kind == "char"
                                               and config.hash_bits == 64) else None
    costs = replace(outofcore.COSTS,
                    per_document=outofcore.COSTS.per_document + PER_DOCUMENT_VECTORS,
                    per_chunk_document=outofcore.COSTS.per_chunk_document
                    + (dimensions or ASSUMED_DIMENSIONS) * PER_DIMENSION[origin])
    return outofcore.ChunkPlan.for_limit(limit, 0, 0, per_char=per_char,
                                         survey=outofcore.survey_inputs(paths, fmt),
                                         costs=costs)


class _ChunkedRead:
    """What the chunks leave: ids, inputs and records spilled (``writer``), vectors
    spilled (``store``), each document's shingle count and text length, the shingling
    counts; each input's column read forward (``cursors``)."""

    def __init__(self, directory: Path, config, prep, origin: str, field: str | None,
                 array, column: str, sources: list):
        self.config, self.prep = config, prep
        self.origin, self.field, self.array, self.column = origin, field, array, column
        self.sources = sources
        self.writer = outofcore.SpillWriter(directory, 0, 0)  # ids, inputs, records only
        self.store = _VectorFiles(directory)
        self.cursors: dict[int, _ColumnCursor] = {}
        self.shingles: list[np.ndarray] = []
        self.text_lengths: list[np.ndarray] = []
        self.generated: list[np.ndarray] = []
        self.counts: dict = {}
        self.chunks = 0
        self.timer = StageTimer(quiet=True)  # per-chunk stages add up without a line each

    def take(self, chunk, chunking: outofcore.ChunkPlan) -> None:
        with self.timer.stage("read"):
            lengths, by_length = _chunk_vectors(chunk, self.origin, self.field, self.array,
                                                self.sources, self.cursors, self.column)
        _admit_vectors(chunking, lengths, self.origin)
        with self.timer.stage("normalise"):
            self.store.append(lengths, by_length)
        del by_length
        with self.timer.stage("shingle"):  # for the counts and sizes, as in memory
            prepared = prepare.shingle_documents(chunk.texts, chunk.ids,
                                                 self.config.shingle_options(), self.prep)
        self.shingles.append(np.asarray(prepared.sets.sizes, dtype=np.int64))
        self.generated.append(prepared.generated)
        add_counts(self.counts, prepared.counts)
        if self.config.representative in ("longest", "shortest"):
            self.text_lengths.append(np.fromiter(map(len, chunk.texts), dtype=np.int64,
                                                 count=len(chunk.texts)))
        self.writer.append_ids(chunk.ids)
        self.writer.append_records(chunk.source, chunk.record)
        self.chunks += 1

    def sizes(self) -> np.ndarray:
        if not self.chunks:  # no document: the counts of shingling nothing
            self.counts = prepare.shingle_documents([], [], self.config.shingle_options(),
                                                    self.prep).counts
        return np.concatenate(self.shingles) if self.shingles else np.empty(0, np.int64)


class _VectorFiles:
    """The normalised vectors appended to one file per length, in document order, with
    each document's length (-1: none) and what normalising found (:data:`OK`, ...)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.files: dict[int, object] = {}
        self.rows: dict[int, int] = {}
        self.lengths: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.documents = 0

    def path(self, length: int) -> Path:
        return self.directory / f"vectors_{length}.bin"

    def append(self, lengths: np.ndarray, by_length: dict[int, np.ndarray]) -> None:
        codes = np.full(lengths.size, NO_VECTOR, dtype=np.uint8)
        for length, rows in by_length.items():
            unit, why = cosine.normalise(rows)
            codes[lengths == length] = np.select(
                [why == cosine.NOT_FINITE, why == cosine.ZERO_NORM], [NOT_FINITE, ZERO_NORM],
                OK).astype(np.uint8)
            if length not in self.files:
                self.files[length] = open(self.path(length), "wb")
                self.rows[length] = 0
            unit.tofile(self.files[length])
            self.rows[length] += unit.shape[0]
        self.lengths.append(lengths.astype(np.int64))
        self.codes.append(codes)
        self.documents += lengths.size

    def close(self) -> tuple[np.ndarray, np.ndarray]:
        for f in self.files.values():
            f.close()
        if not self.lengths:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint8)
        return np.concatenate(self.lengths), np.concatenate(self.codes)

    def mapped(self, length: int) -> np.ndarray:
        """(rows, length) float32: the vectors of that length, mapped (read-only)."""
        rows = self.rows.get(length, 0)
        if rows == 0 or length == 0:
            return np.zeros((rows, length), dtype=np.float32)
        return np.asarray(np.memmap(self.path(length), dtype=np.float32, mode="r",
                                    shape=(rows, length)))


class _ColumnCursor:
    """One input's vector column read forward a batch at a time: the rows a chunk asks
    for (in order), and the count of every row's length, as reading it whole counts."""

    def __init__(self, src, column: str):
        self.batches = find_format(src.fmt).column_batches(src, column)
        self.batch = None
        self.start = 0  # the first row of ``batch``
        self.histogram: dict[int, int] = {}

    def _advance(self) -> bool:
        if self.batch is not None:
            self.start += len(self.batch)
        self.batch = next(self.batches, None)
        if self.batch is None:
            return False
        lengths = vectors.lengths_of(self.batch)
        values, times = np.unique(lengths[lengths >= 0], return_counts=True)
        for value, count in zip(values.tolist(), times.tolist()):
            self.histogram[value] = self.histogram.get(value, 0) + count
        return True

    def take(self, records: np.ndarray):
        """The rows ``records`` (ascending, past every row taken before)."""
        import pyarrow as pa

        pieces, k = [], 0
        while k < records.size:
            while self.batch is None or records[k] >= self.start + len(self.batch):
                if not self._advance():
                    raise ValueError(f"embeddings: the column has fewer rows than record "
                                     f"{int(records[k]) + 1}")
            hi = int(np.searchsorted(records, self.start + len(self.batch)))
            pieces.append(self.batch.take(pa.array(records[k:hi] - self.start)))
            k = hi
        return pieces

    def drain(self) -> None:
        while self._advance():
            pass

    def dimensions(self) -> int:
        """The length most rows have (the smallest on a tie), 0 when none has one."""
        if not self.histogram:
            return 0
        return min(self.histogram, key=lambda x: (-self.histogram[x], x))


def _chunk_vectors(chunk, origin: str, field: str | None, array, sources, cursors,
                   column: str):
    """(lengths int64[len(chunk)], {length: vectors}) of a chunk's documents: from the
    field read with them, the rows of the array, or each input's ``column``."""
    import pyarrow as pa

    if origin == "fields":
        return vectors.by_length(vectors.values_column(chunk.fields[field]))
    if origin == "array":
        if chunk.record.size and int(chunk.record.max()) >= array.shape[0]:
            raise ValueError(f"embeddings: the array has {array.shape[0]:,} rows but the "
                             f"input has more records (row i is record i)")
        rows = np.asarray(array[chunk.record])
        return (np.full(len(chunk), array.shape[1], dtype=np.int64),
                {array.shape[1]: rows} if len(chunk) else {})
    pieces = []
    for k in np.unique(chunk.source).tolist():  # inputs in order, records ascending
        if k not in cursors:
            cursors[k] = _ColumnCursor(sources[k], column)
        pieces += cursors[k].take(chunk.record[chunk.source == k])
    if not pieces:
        return np.empty(0, dtype=np.int64), {}
    column = pa.concat_arrays([p.cast(pieces[0].type) for p in pieces]) \
        if len(pieces) > 1 else pieces[0]
    return vectors.by_length(column)


def _admit_vectors(chunking, lengths: np.ndarray, origin: str) -> None:
    """A chunk whose vectors hold more than a chunk's budget ends the run, naming the
    limit it needs (the chunk was sized for the dimensions the input declared)."""
    if lengths.size == 0:
        return
    longest = int(max(lengths.max(), 0))
    need = lengths.size * (outofcore.COSTS.per_chunk_document
                           + longest * PER_DIMENSION[origin])
    if need > chunking.budget:
        raise outofcore.MemoryLimitError(
            f"a chunk of {lengths.size:,} vectors of {longest:,} dimensions takes about "
            f"{outofcore.format_size(need)} to read and normalise, more than the "
            f"{outofcore.format_size(chunking.budget)} a chunk may use under the memory "
            f"limit of {outofcore.format_size(chunking.limit)}; give --memory-limit "
            f"{outofcore.as_option(chunking.limit - chunking.budget + need)} or more")


def _settle(read: _ChunkedRead, source: np.ndarray, records: int, embeddings):
    """(reasons object[n], at int64[n], d, what the counts name) once every record is
    read: the length the vectors must have, chosen as :mod:`neardup.sources.vectors`
    chooses it, and each document's row of that length's file."""
    origin, cursors, inputs = read.origin, read.cursors, len(read.sources)
    if origin == "columns":  # every input's lengths, as reading it whole counts them
        for k, src in enumerate(read.sources):
            cursors.setdefault(k, _ColumnCursor(src, read.column)).drain()
    lengths, codes = read.store.close()
    n = lengths.size
    if origin == "array":
        if inputs > 1:
            raise ValueError(f"embeddings: an array's row i is record i of one input; "
                             f"{inputs} inputs were given (give a column instead, or one "
                             f"input)")
        array = _array_of(embeddings, None)
        if array.shape[0] != records:
            vectors.from_array(array, records, _shown_array(embeddings))  # raises
        d = array.shape[1]
        wrong = np.zeros(n, dtype=bool)
        shown = _shown_array(embeddings)
    elif origin == "fields":
        present = lengths[lengths >= 0]
        d = int(np.argmax(np.bincount(present))) if present.size else 0
        wrong = (lengths >= 0) & (lengths != d)
        shown = f"field {embeddings}"
    else:
        dims = [cursors[k].dimensions() for k in range(inputs)] if inputs else [0]
        d = max(set(dims), key=lambda x: (sum(1 for y in dims if y == x), -x))
        input_d = np.asarray(dims, dtype=np.int64)[source] if n else np.empty(0, np.int64)
        wrong = (lengths >= 0) & ((lengths != d) | (input_d != d))
        shown = f"column {embeddings}"
    reasons = np.empty(n, dtype=object)
    for code, reason in _REASON_OF.items():
        reasons[codes == code] = reason
    reasons[wrong] = cosine.WRONG_LENGTH
    at = np.full(n, -1, dtype=np.int64)
    of_d = lengths == d
    at[of_d] = np.arange(int(of_d.sum()), dtype=np.int64)
    return reasons, at, d, shown


def _band_search(unit: np.ndarray, directory: Path, config, budget: int):
    """search(positions, plan) for :class:`~neardup.pipeline.embedded.SpilledVectors`:
    the band keys of rows ``positions`` of ``unit``, a batch at a time into a file per
    band, then the bands grouped one at a time."""

    def search(positions: np.ndarray, plan: lsh.BandPlan):
        bits = plan.bands * plan.rows
        planes = cosine.hyperplanes(unit.shape[1], bits, config.seed)
        paths = [directory / f"cosine_band_{band:04d}.bin" for band in range(plan.bands)]
        files = [open(path, "wb") for path in paths]
        try:
            step = _batch(budget, 4 * unit.shape[1] + 6 * bits + 16 * plan.bands,
                          cosine.SIGN_BATCH)
            for lo in range(0, positions.size, step):
                keys = cosine.band_keys(unit[positions[lo:lo + step]], plan, config.seed,
                                        planes)
                for band, f in enumerate(files):
                    np.ascontiguousarray(keys[:, band]).tofile(f)
                del keys
        finally:
            for f in files:
                f.close()
        columns = (np.fromfile(path, dtype=np.uint64) for path in paths)
        return lsh.candidate_pairs_by_band(columns, positions.size,
                                           max_bucket=config.max_bucket,
                                           policy=config.bucket_policy)

    return search


def _batch(budget: int, per_row: int, most: int) -> int:
    """Rows a batch of ``per_row`` bytes each may hold within a quarter of ``budget``."""
    return int(min(most, max(256, budget // 4 // max(per_row, 1))))


def _array_of(embeddings, paths):
    """The 2-D array of an array or ``.npy`` run (memory-mapped), checked for its shape
    and values as :func:`neardup.sources.vectors.from_array` checks them."""
    if isinstance(embeddings, np.ndarray):
        array = embeddings
    else:
        try:
            array = np.load(os.fspath(embeddings), mmap_mode="r", allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"embeddings: {embeddings} is not a numpy array file: "
                             f"{err}") from err
    if paths is not None and len(paths) > 1:
        raise ValueError(f"embeddings: an array's row i is record i of one input; "
                         f"{len(paths)} inputs were given (give a column instead, or one "
                         f"input)")
    if array.ndim != 2:
        raise ValueError(f"embeddings: {_shown_array(embeddings)} has shape {array.shape}; "
                         f"it must be 2-D (one row per record)")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"embeddings: {_shown_array(embeddings)} holds {array.dtype}, not "
                         f"numbers")
    return array


def _shown_array(embeddings) -> str:
    if isinstance(embeddings, np.ndarray):
        return f"an array of shape {embeddings.shape}"
    return os.fspath(embeddings)


def _declared_dimensions(embeddings, array, paths, fmt: str, origin: str) -> int | None:
    """The vectors' length as the input declares it before reading, None if it does not:
    an array's width, a fixed-size list column's size, the first JSON Lines record's."""
    import pyarrow as pa

    from ..sources import compression_of, resolve_format

    if origin == "array":
        return int(array.shape[1])
    column = str(embeddings)
    path = paths[0] if paths else None
    if path is None or path == "-" or remote.is_url(path) or not os.path.isfile(path):
        return None
    spec = find_format(resolve_format(path, fmt))
    try:
        if origin == "columns" and spec is not None and spec.column_batches is not None:
            from ..sources.documents import InputSource

            src = InputSource(given=path, fmt=spec.name, name=path, encoding="utf-8")
            first = next(spec.column_batches(src, column), None)
            if first is None:
                return None
            if pa.types.is_fixed_size_list(first.type):
                return int(first.type.list_size)
            lengths = vectors.lengths_of(first)
            return int(lengths.max()) if lengths.size and lengths.max() >= 0 else None
        if origin == "fields" and spec is not None and spec.line_records and \
                compression_of(path) is None:
            with open(path, "rb") as f:
                for line in f:
                    if line.strip():
                        value = json.loads(line).get(column)
                        return len(value) if isinstance(value, list) else None
    except (ValueError, OSError, AttributeError, TypeError):
        return None
    return None
