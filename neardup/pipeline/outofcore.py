"""Out of core: ``find`` under a memory limit, a chunk of documents at a time.

The in-memory path holds every shingle set and band key at once (the texts only a chunk at
a time, see :func:`neardup.pipeline.run.read_and_shingle`). Under a memory limit the
same stage functions run on one chunk of documents at a time:

    read a chunk (:func:`~neardup.sources.read_document_chunks`)
    → :func:`~neardup.text.prepare.shingle_documents` → :func:`~neardup.shingling.set_fingerprints`
    → :func:`~neardup.pipeline.sign` → :func:`~neardup.lsh.band_keys`

and each chunk's output is appended to files in a work directory: the CSR values
of the shingle sets, the n × K signature matrix, one file of band keys per band.
The chunk's texts are then dropped. :func:`~neardup.pipeline.find_sets` runs on
the files, memory-mapped: identical sets are grouped from the fingerprints (kept
in memory), each band's keys are loaded and grouped one band at a time
(:func:`~neardup.lsh.candidate_pairs_by_band`), candidates are verified on the
mapped CSR. Keys, signatures and sets are per-document functions, so the pairs,
clusters and representatives are exactly those of the in-memory path.

The limit bounds the process's anonymous memory (``RssAnon``: what the heap, numpy
and numba allocate), which is what cannot be given back without swap. Pages of
shared libraries and of the mapped spill files are file-backed and clean: they count
in the resident set while touched, the kernel drops them under pressure, and the limit
leaves them out (bench/bench_memory.py reports both). A limit is either kept or refused
with the floor it is below; nothing is exceeded silently. Where the memory goes
(:class:`MemoryCosts`, measured with bench/bench_memory.py on x86-64, Python 3.11):

- fixed: the interpreter with numpy, pyarrow, numba and the compiled kernels loaded,
  about 100 MB after a small run (``fixed`` = 128 MiB, lemmatizers included). The first
  run after an install also compiles the kernels (about 210 MB, once: they are cached);
- per document, for the whole run: while reading, its id's bytes, offset, hash and
  number in :class:`~neardup.sources.seen_ids.SeenIds` (which renames repeated ids); its
  id, shingle offsets, fingerprint, input and record number (what the dedup copy finds
  it by) are spilled with the rest and mapped (file-backed, outside the limit), so what
  stays on the heap is its shingle count, status, flags, cluster label and the
  temporaries of one stage at a time; the documents table is written 2^16 rows at a
  time, and the dedup copy streams the inputs again holding a byte a record of each
  input (which records are removed) and a byte a document (which are kept). Measured
  (200-word documents, ids of 9 characters, word 5-grams, limit 1G at 200k and 1M): the
  anonymous memory at the end of reading grows 44 bytes a document, the peak of the find
  (grouping, LSH, verification, clusters) 75, the writing 84, which is now the peak
  after reading: :attr:`~neardup.pairs.PairSet.groups` holds only the documents that
  pair, and the status column one ``str`` for all. 10M documents under 4G peaked at 932
  MiB for the whole process (98 bytes a document, the interpreter and the chunk in hand
  included), so after reading a document holds at most (932 MiB − fixed) / 10M ≈ 84
  bytes there too. So ``per_document`` + ``per_id_char`` × id length = 84 + c bytes: 93
  for the measured ids of 9 characters (11 % over the 1M peak, 24 % over the find's),
  100 with the 16 characters assumed until ids are read: 10M documents need ~1.0 GiB,
  100M ~9.4 GiB;
- per chunk: its texts and the shingling temporaries, ``per_char`` bytes per character
  of text: measured 14 for character 5-grams (32-bit hashes; 21 with 64-bit), 4.6 for
  word shingles of ASCII text, 11 for Cyrillic, 15 for code tokens, 9 with cleaning
  (all ≤ 16; a 20M-character document: 13.6, reading included); plus
  ``per_chunk_document`` + K·4 + b·8 bytes per document (its objects, signature, keys);
- reading a record (a line of a line file) holds its raw bytes, the joined block, the
  decoded text and the split lines: ``read_per_byte`` = 4 bytes a byte of the record;
- an input read from standard input or a pipe is kept whole (for the dedup copy).

:meth:`ChunkPlan.for_run` counts the records first (the lines of line files, about
1 GB/s, noting the longest; Parquet row counts from the metadata; a directory, a JSON
file or a stream: unknown), then sizes a chunk to what is left: ``limit - fixed - per document ×
records`` (half of ``limit - fixed`` when the records are unknown), 3/4 of it for text,
1/4 for the documents' rows. A chunk closes between reads once it holds
``chunk_chars``, so the record or block of lines that closes it must fit too: with only
line files the text budget less the longest line and one block, else half of it.
A record longer than what a chunk can still take once it closes (``record_bytes``: the
longest line where it was counted and fits, else the other half of the text budget) is
skipped by the readers unread, and an input kept whole (a stream, a JSON file) may hold
what the chunks leave (``stream_bytes``; past it the run ends saying so); compressed
inputs are not counted (their lines are the stream's).
Below ``fixed + per document × records + min_chunk`` (or when the longest line cannot
even be read) it refuses with that floor named, before reading: 400k documents need
~190 MiB, 10M ~1.4 GiB (BENCHMARKS.md, "memory" and "scale").
:meth:`ChunkPlan.admit` checks every chunk before it is shingled: a chunk whose text
exceeds the chunk's text budget, or more documents (or longer ids) than the limit
holds, end the run with a message naming the document or the floor, instead of
exceeding the limit. Not counted: candidates and pairs (about 40 bytes each, for
inputs with many duplicates), ``representative_field="id"`` (a fixed-width copy of the
ids), Parquet batches of large documents (8192 rows at a time) and, for dedup, the copy
of a Parquet input (read whole and filtered, as without a limit, so the copy's bytes are
the same) and of a JSON file (read whole again).
"""

from __future__ import annotations

import errno
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import lsh
from .._core import columns, remote
from .._core.columns import IdColumn
from ..minhash import DEFAULT_FAMILY, Signatures
from ..shingling import ShingleSets
from ..sinks.staging import sweep_dead_runs
from ..sources import Format, compression_of, find_format, format_named, resolve_format
from ..sources.parquet import FORMAT as PARQUET
from ..sources.registry import DIRECTORY

CHUNK_SHARE = 0.5  # of the limit above ``fixed``, for a chunk, when the records are not counted
TEXT_SHARE = 0.75  # of a chunk's budget, for its text; the rest for its documents' rows
WORK_BYTES_PER_CHAR = 16
MIN_CHUNK_CHARS = 1024
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
ID_PIECE_BYTES = 2**31 - 1  # an Arrow string array's int32 offsets: ids past it, a new piece
SPILL_PREFIX = "neardup-spill-"  # a work directory's name: then its process id
READ_BLOCK_CHARS = 1 << 16  # a line file is read a block of lines (LINE_BLOCK_BYTES) at a time


@dataclass(frozen=True)
class MemoryCosts:
    """What a run costs in anonymous memory, in bytes (see the module docstring)."""

    fixed: int = 128 << 20
    per_document: int = 84
    per_id_char: int = 1
    assumed_id_chars: int = 16
    per_char: int = WORK_BYTES_PER_CHAR
    per_char_64: int = 24  # character shingles kept as 64-bit hashes
    per_chunk_document: int = 512  # plus K·4 + b·8
    read_per_byte: int = 4
    min_chunk: int = 8 << 20

    @classmethod
    def chunks_only(cls) -> MemoryCosts:
        """No fixed or per-document part: the limit only sizes the chunks (for tests that
        want many small chunks of a small corpus; such a limit is not kept)."""
        return cls(fixed=0, per_document=0, per_id_char=0, min_chunk=0)

    def document(self, id_chars: float | None = None) -> int:
        """Bytes a document holds for the whole run, with ids of ``id_chars`` characters."""
        chars = self.assumed_id_chars if id_chars is None else id_chars
        return int(self.per_document + self.per_id_char * chars)


COSTS = MemoryCosts()
BYTES_PER_DOCUMENT = COSTS.document()


class MemoryLimitError(ValueError):
    """The memory limit is below what the run needs (the message names the floor)."""


def parse_size(value) -> int:
    """Bytes from ``4G``, ``512M``, ``1.5GiB``, ``100k`` (powers of 1024) or an integer."""
    if isinstance(value, bool):
        value = None  # True is not a size
    if isinstance(value, int) and value > 0:
        return value
    match = _SIZE.match(value) if isinstance(value, str) else None
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()]) if match else 0
    if size <= 0:
        raise ValueError(f"memory_limit must be a positive size such as 4G, 512M or a "
                         f"number of bytes, got {value!r}")
    return size


def format_size(size: float) -> str:
    """``size`` bytes for a message: "415 MiB", "4.4 GiB"."""
    if size >= 10 << 30:
        return f"{size / (1 << 30):,.0f} GiB"
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GiB"
    return f"{math.ceil(max(size, 0) / (1 << 20)):,} MiB"


def as_option(size: float) -> str:
    """The smallest ``--memory-limit`` value, rounded up, that is at least ``size`` bytes."""
    if size > 1 << 30:
        return f"{math.ceil(size / (1 << 30) * 10) / 10:g}G"
    return f"{math.ceil(size / (1 << 20))}M"


@dataclass(frozen=True)
class InputSurvey:
    """What the inputs hold before they are read, as far as it is cheap to know.

    ``records``: an upper bound on the documents (non-empty lines of line files, rows of
    Parquet files), None when an input cannot be counted (a directory, a JSON file,
    standard input, a pipe); ``counted``: the documents of the inputs that could be.
    ``longest``: bytes of the longest line, with ``where`` saying which; ``bounded``:
    every input is a line file (lines, JSON Lines) so no document is longer than that
    (in characters); a CSV/TSV row is not bounded by its line (a quoted field spans
    lines).
    """

    records: int | None = None
    counted: int = 0
    longest: int = 0
    where: str = ""
    how: str = ""
    bounded: bool = False


def survey_inputs(paths: Sequence[str], fmt: str = "auto") -> InputSurvey:
    """Count the records of ``paths`` (read as ``fmt``) and find the longest line: each
    input its format's counter (:attr:`neardup.sources.Format.count`)."""
    counted, unknown, longest, where, how = 0, False, 0, "", set()
    bounded = bool(paths)
    for path in paths:
        spec = _counted_format(path, fmt)
        found = spec.count(path) if spec is not None and spec.count is not None else None
        bounded = bounded and found is not None and spec.line_records
        if found is None:
            unknown = True
            continue
        counted += found.records
        how.add(found.how)
        if found.longest > longest:
            longest, where = found.longest, f"line {found.longest_line:,} of {path}"
    return InputSurvey(None if unknown else counted, counted, longest, where,
                       " and ".join(sorted(how)), bounded)


def _counted_format(path: str, fmt: str) -> Format | None:
    """The format of an input that can be counted before it is read (a regular,
    uncompressed file); None for standard input, a directory, a pipe, a compressed file."""
    if path == "-" or fmt == DIRECTORY.name:
        return None
    if remote.is_url(path):  # a Parquet footer is a small read; counting lines, a whole pass
        spec = format_named(resolve_format(path, fmt))
        return spec if spec is PARQUET else None
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
    except OSError:
        return None  # the reader says why
    if not stat.S_ISREG(mode):  # a directory, or a pipe read once by the reader
        return None
    if compression_of(path) is not None:  # its lines are the decompressed stream's
        return None
    return format_named(resolve_format(path, fmt))


@dataclass
class ChunkPlan:
    """How many characters and documents of text one chunk holds under ``limit`` bytes.

    ``budget``: bytes a chunk may use (:data:`TEXT_SHARE` of them for its text, at
    ``per_char`` bytes a character); ``documents``: the records the plan was made for
    (an upper bound; None when they could not be counted); ``floor``: the smallest
    limit the plan would have accepted. :meth:`admit` checks each chunk as it is read.
    """

    limit: int
    chunk_chars: int
    chunk_docs: int
    budget: int = 0
    per_char: int = WORK_BYTES_PER_CHAR
    documents: int | None = None
    floor: int = 0
    longest: int = 0  # bytes of the longest line of the counted inputs
    longest_where: str = ""  # which line that is ("line 1 of FILE")
    bounded: bool = False  # no document is longer (see InputSurvey)
    costs: MemoryCosts = field(default=COSTS, repr=False)
    seen: int = 0  # documents admitted so far
    id_chars: int = 0  # their ids' characters
    record_bytes: int = 0  # the longest record a chunk can take: longer ones are skipped
    stream_bytes: int = 0  # what an input kept whole (a stream, a JSON file) may hold
    held: tuple = ()  # (what, bytes): held whole for the run besides (a Bloom index's filters)

    @classmethod
    def for_limit(cls, limit: int, num_perm: int, bands: int, *, documents: int | None = None,
                  per_char: int | None = None, survey: InputSurvey | None = None,
                  costs: MemoryCosts | None = None, held: Sequence = ()) -> ChunkPlan:
        """The plan for ``documents`` records (None: unknown); refuses a limit below the floor.

        ``survey`` (from :func:`survey_inputs`; it replaces ``documents``) gives the
        records and the longest line; ``held``: (what, bytes) the run holds whole
        besides, named in the refusal.
        """
        costs = costs or COSTS
        per_char = per_char or costs.per_char
        survey = survey or InputSurvey(records=documents, counted=documents or 0)
        documents = survey.records
        held = tuple((what, int(size)) for what, size in held)
        extra = sum(size for _, size in held)
        besides = held
        held = costs.fixed + costs.document() * survey.counted + extra
        read = survey.longest * costs.read_per_byte
        least = max(costs.min_chunk, read)  # the smallest chunk budget
        if documents is None:
            budget = int((limit - held) * CHUNK_SHARE)
            floor = held + math.ceil(least / CHUNK_SHARE)
        else:
            budget = limit - held
            floor = held + least
        if budget < least:
            raise MemoryLimitError(_floor_message(limit, floor, costs, survey, read, per_char,
                                                  besides))
        text = budget * TEXT_SHARE
        chars = int(text / per_char)
        # a chunk closes once it holds chunk_chars, between reads: one record, or one
        # block of lines; what closes it must fit too, and a counted input says how long
        # a document can be (its line, at most)
        # a record longer than what is left once a chunk closes could not be shingled
        # within the budget: the readers skip it unread (record_bytes)
        slack = READ_BLOCK_CHARS
        if survey.bounded and survey.longest + slack + MIN_CHUNK_CHARS <= chars:
            chars -= survey.longest + slack  # no document is longer than its line
            record = survey.longest
        else:
            chars = chars // 2 - slack
            record = max(MIN_CHUNK_CHARS, chars)
        chars = max(MIN_CHUNK_CHARS, chars)  # shingled in this process (no workers)
        docs = max(1, int((budget - text) / (costs.per_chunk_document + num_perm * 4
                                             + bands * 8)))
        stream = max(0, limit - held - budget)  # the rest, while reading
        return cls(limit, chars, docs, budget, per_char, documents, floor, survey.longest,
                   survey.where, survey.bounded, costs, record_bytes=record,
                   stream_bytes=stream, held=besides)

    @classmethod
    def for_run(cls, limit: int, config, inputs: Sequence[str], source_options: dict, *,
                costs: MemoryCosts | None = None, held: Sequence = ()) -> ChunkPlan:
        """:meth:`for_limit` for ``config`` (a :class:`~neardup.config.FindConfig`) on
        ``inputs``, their records counted first (:func:`survey_inputs`); ``costs``
        (default: ``find``'s) and ``held`` as :meth:`for_limit`'s (or a function of the
        documents counted that returns it)."""
        costs = costs or COSTS
        per_char = costs.per_char
        if config.shingle_kind == "char" and config.hash_bits == 64:
            per_char = costs.per_char_64
        survey = survey_inputs(inputs, source_options.get("fmt", "auto"))
        if callable(held):  # what is held depends on the documents counted
            held = held(survey.counted)
        return cls.for_limit(limit, config.num_perm, config.band_plan().bands,
                             per_char=per_char, survey=survey, costs=costs, held=held)

    def skip_warning(self) -> str | None:
        """What to tell before reading when a counted record is longer than a chunk can
        take under the limit (it will be skipped unread, as "record larger than N
        bytes"): which record, and the limit that would process it; None otherwise."""
        if not self.bounded or self.longest <= self.record_bytes:
            return None
        held = self.limit - self.budget  # bounded inputs are counted: the budget is the rest
        needed = held + math.ceil((self.longest + READ_BLOCK_CHARS + MIN_CHUNK_CHARS)
                                  * self.per_char / TEXT_SHARE)
        return (f"the longest record ({self.longest_where}, {format_size(self.longest)}) "
                f"is longer than a chunk can take under the memory limit of "
                f"{format_size(self.limit)} ({self.record_bytes:,} bytes): it is skipped "
                f"unread, as every record as long, and the read report counts it; give "
                f"--memory-limit {as_option(needed)} or more to process it")

    def admit(self, chunk) -> None:
        """Check a chunk just read (a :class:`~neardup.sources.Documents`), before it is
        shingled: its text must fit the chunk's budget, and the documents so far (with
        their ids as long as they are) what the limit holds for the whole run."""
        costs = self.costs
        lengths = [len(text) for text in chunk.texts]
        if sum(lengths) * self.per_char > self.budget * TEXT_SHARE:
            raise MemoryLimitError(self._document_message(chunk, lengths))
        self.seen += len(chunk)
        self.id_chars += sum(map(len, chunk.ids))
        per_doc = costs.document(self.id_chars / self.seen if self.seen else None)
        kept = sum(len(src.data) for src in chunk.inputs if getattr(src, "data", None))
        documents = max(self.seen, self.documents or 0)
        need = costs.fixed + kept + per_doc * documents + sum(size for _, size in self.held)
        reading = self.documents is None  # chunks to come get the budget set at the start
        if reading:  # while reading, a document holds about half of what it does at the end
            need = max(need, costs.fixed + kept + per_doc * documents // 2 + self.budget)
        if need > self.limit:
            raise MemoryLimitError(self._documents_message(need, per_doc, documents, kept))

    def as_dict(self) -> dict:
        return {"memory_limit": self.limit, "chunk_chars": self.chunk_chars,
                "chunk_docs": self.chunk_docs, "chunk_budget": self.budget,
                "floor": self.floor, "records_counted": self.documents,
                "max_record_bytes": self.record_bytes, "max_stream_bytes": self.stream_bytes}

    def _document_message(self, chunk, lengths: list[int]) -> str:
        costs, k = self.costs, int(np.argmax(lengths))
        size, total = lengths[k], sum(lengths)
        text_budget = self.budget * TEXT_SHARE
        # a limit at which the document is admitted whatever chunk it closes: with the
        # lines counted a chunk leaves room for the longest line, else it closes at half
        longest = max(size, self.longest) if self.bounded else 2 * size
        needed = (self.limit - self.budget + (longest + READ_BLOCK_CHARS + MIN_CHUNK_CHARS)
                  * self.per_char / TEXT_SHARE)
        what = f"document {chunk.ids[k]!r}{_locate(chunk, k)} has {size:,} characters"
        if size * self.per_char * 2 <= text_budget:  # not one document: the chunk is too long
            what = (f"a chunk of {len(lengths):,} documents holds {total:,} characters (the "
                    f"longest: {chunk.ids[k]!r}{_locate(chunk, k)}, {size:,})")
            size = total
        return (f"{what}: shingling it takes about {format_size(size * self.per_char)} "
                f"({self.per_char} bytes a character), more than the "
                f"{format_size(text_budget)} of text a chunk may use under the memory limit "
                f"of {format_size(self.limit)} (what is left after "
                f"~{format_size(costs.fixed)} for the interpreter and its kernels and "
                f"~{costs.document():,} bytes a document for the whole run); give "
                f"--memory-limit {as_option(needed)} or more, or split the document")

    def _documents_message(self, need: float, per_doc: int, documents: int, kept: int) -> str:
        costs = self.costs
        counted = (f"{documents:,} documents" if self.documents is None or
                   self.seen > self.documents else
                   f"~{documents:,} documents (records counted before reading)")
        parts = [f"the interpreter and its kernels take ~{format_size(costs.fixed)}",
                 f"each of the {counted} costs ~{per_doc:,} bytes for the whole run (ids of "
                 f"~{self.id_chars / max(self.seen, 1):.0f} characters): "
                 f"~{format_size(per_doc * documents)}"]
        if kept:
            parts.append(f"the input read from a stream is kept whole: {format_size(kept)}")
        parts += [f"{what}: ~{format_size(size)}" for what, size in self.held]
        if self.documents is None:
            parts.append(f"each chunk {format_size(self.budget)} while reading")
        advice = (f"give --memory-limit {as_option(need)} or more"
                  if self.documents is not None and self.seen <= self.documents else
                  f"give --memory-limit above {as_option(need)} (more for the documents "
                  f"still to come)")
        return (f"after reading {self.seen:,} documents: the memory limit of "
                f"{format_size(self.limit)} is below the floor of at least "
                f"~{format_size(need)} this input needs: " + "; ".join(parts)
                + f"; {advice}")


def _locate(chunk, k: int) -> str:
    """Where document ``k`` of ``chunk`` came from, for a message: " (line 3 of a.jsonl)"."""
    try:
        source = chunk.inputs[int(chunk.source[k])]
        record = int(chunk.record[k])
        spec = find_format(source.fmt)  # (data in memory has none)
        if spec is not None and spec.directory and record < len(source.entries):
            return f" ({source.display}/{source.entries[record]})"
        unit = "line" if spec is not None and spec.record_unit == "line" else "record"
        return f" ({unit} {record + 1:,} of {source.display})"
    except (AttributeError, IndexError, TypeError):
        return ""


def _floor_message(limit: int, floor: int, costs: MemoryCosts, survey: InputSurvey,
                   read: int, per_char: int, held: Sequence = ()) -> str:
    parts = [f"the interpreter and its kernels take ~{format_size(costs.fixed)}"]
    documents = costs.document() * survey.counted
    if survey.counted:
        counted = f"~{survey.counted:,} documents ({survey.how} in the input"
        counted += "s that could be counted)" if survey.records is None else ")"
        parts.append(f"each of the {counted} costs ~{costs.document():,} bytes for the whole "
                     f"run: ~{format_size(documents)}")
    parts += [f"{what}: ~{format_size(size)}" for what, size in held]
    advice = f"give --memory-limit {as_option(floor)} or more"
    if read > costs.min_chunk:
        # the longest line is read whole; if it is one document's text, it is shingled whole
        text = math.ceil((survey.longest + READ_BLOCK_CHARS + MIN_CHUNK_CHARS)
                         * per_char / TEXT_SHARE)
        parts.append(f"the longest record ({survey.where}) is {format_size(survey.longest)}: "
                     f"reading it takes ~{format_size(read)}, shingling it (if it is all "
                     f"text) ~{format_size(survey.longest * per_char)} at {per_char} "
                     f"bytes a character")
        advice = (f"give --memory-limit {as_option(floor - read + max(read, text))} or more "
                  f"for it, or split it")
    else:
        parts.append(f"a chunk needs at least {format_size(costs.min_chunk)}")
    if survey.records is None:
        parts.append("and chunks get half of what is left when the documents cannot be "
                     "counted before reading")
    return (f"the memory limit of {format_size(limit)} is below the floor of "
            f"~{format_size(floor)} this input needs: " + "; ".join(parts) + f"; {advice}")


@dataclass
class Spilled:
    """What the chunks produced, for :func:`~neardup.pipeline.find_sets`.

    ``sets`` (values and offsets), ``signatures`` (row d: document d), ``fingerprints``
    and ``ids`` are mapped from disk: file-backed pages, not the heap.
    """

    sets: ShingleSets
    signatures: Signatures
    fingerprints: np.ndarray
    band_paths: list[Path]
    ids: IdColumn | None = None  # mapped too (see SpillWriter.append_ids)
    source: np.ndarray | None = None  # int32[n], mapped: each document's input ...
    record: np.ndarray | None = None  # int64[n], mapped: ... and record (the dedup copy)

    def band_columns(self, rows: np.ndarray):
        """Each band's keys of the documents ``rows`` (uint64[rows.size]), one band at a time."""
        for path in self.band_paths:
            keys = np.fromfile(path, dtype=np.uint64)
            yield keys[rows]
            del keys


class SpillWriter:
    """Appends each chunk's shingle values, signatures and band keys to files in ``directory``."""

    def __init__(self, directory: Path, bands: int, rows: int):
        self.directory = directory
        self.bands, self.rows = bands, rows
        self.values_path = directory / "shingle_values.bin"
        self.offsets_path = directory / "shingle_offsets.bin"
        self.prints_path = directory / "fingerprints.bin"
        self.signatures_path = directory / "signatures.bin"
        self.band_paths = [directory / f"band_{band:03d}.bin" for band in range(bands)]
        self.source_path = directory / "source.bin"
        self.record_path = directory / "record.bin"
        self._values = open(self.values_path, "wb")
        self._offsets = open(self.offsets_path, "wb")
        self._prints = open(self.prints_path, "wb")
        self._signatures = open(self.signatures_path, "wb")
        self._bands = [open(path, "wb") for path in self.band_paths]
        self._source = open(self.source_path, "wb")
        self._record = open(self.record_path, "wb")
        self.documents = 0
        self.shingles = 0  # values written: the next chunk's offsets start there
        np.zeros(1, dtype=np.int64).tofile(self._offsets)
        self.values_dtype = None
        self.signature_dtype = None
        self.signature_params: dict | None = None
        self.id_pieces: list[tuple[Path, Path, int]] = []  # (offsets, bytes, ids) files
        self._id_files = None
        self._id_bytes = 0  # of the open piece: its int32 offsets end there

    def append_ids(self, ids: Sequence[str]) -> None:
        """Append a chunk's ids as Arrow string buffers (int32 offsets, UTF-8 bytes); a
        new piece of files starts where the bytes would outgrow int32 offsets."""
        array = columns.strings(ids)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        offsets_buf, data_buf = array.buffers()[1:3]
        offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=len(array) + 1)
        offsets = offsets[array.offset:]
        size = int(offsets[-1] - offsets[0])
        if self._id_files is None or self._id_bytes + size > ID_PIECE_BYTES:
            self._close_ids()
            piece = len(self.id_pieces)
            paths = (self.directory / f"id_offsets_{piece:03d}.bin",
                     self.directory / f"id_bytes_{piece:03d}.bin")
            self._id_files = [open(path, "wb") for path in paths]
            np.zeros(1, dtype=np.int32).tofile(self._id_files[0])
            self.id_pieces.append((*paths, 0))
            self._id_bytes = 0
        (offsets[1:] - offsets[0] + self._id_bytes).astype(np.int32).tofile(self._id_files[0])
        if data_buf is not None:
            self._id_files[1].write(memoryview(data_buf)[int(offsets[0]):int(offsets[-1])])
        self._id_bytes += size
        last = self.id_pieces[-1]
        self.id_pieces[-1] = (last[0], last[1], last[2] + len(array))

    def append_records(self, source: np.ndarray, record: np.ndarray) -> None:
        """Append a chunk's input and record numbers (:class:`~neardup.sources.Documents`'
        ``source`` and ``record``), what the dedup copy finds each document by."""
        np.ascontiguousarray(source, dtype=np.int32).tofile(self._source)
        np.ascontiguousarray(record, dtype=np.int64).tofile(self._record)

    def _close_ids(self) -> None:
        for f in self._id_files or ():
            f.close()
        self._id_files = None

    def mapped_ids(self) -> IdColumn:
        """The ids appended, mapped from their files (file-backed pages, not the heap)."""
        self._close_ids()
        arrays = []
        for offsets_path, bytes_path, count in self.id_pieces:
            offsets = _mapped(offsets_path, np.int32, (count + 1,))
            size = int(offsets[-1])
            data = _mapped(bytes_path, np.uint8, (size,)) if size else np.empty(0, np.uint8)
            arrays.append(pa.Array.from_buffers(pa.string(), count,
                                                [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(data)]))
        if not arrays:
            return IdColumn(columns.strings([]))
        return IdColumn(arrays[0] if len(arrays) == 1 else pa.chunked_array(arrays))

    def append(self, sets: ShingleSets, signatures: Signatures, prints: np.ndarray) -> None:
        keys = lsh.band_keys(signatures.matrix, self.bands, self.rows)
        self.values_dtype = self.values_dtype or sets.values.dtype
        self.signature_dtype = signatures.matrix.dtype
        self.signature_params = signatures.params()
        np.ascontiguousarray(sets.values, dtype=self.values_dtype).tofile(self._values)
        np.ascontiguousarray(signatures.matrix).tofile(self._signatures)
        for band, f in enumerate(self._bands):
            np.ascontiguousarray(keys[:, band]).tofile(f)
        (sets.offsets[1:] - sets.offsets[0] + self.shingles).astype(np.int64).tofile(
            self._offsets)
        np.ascontiguousarray(prints, dtype=np.uint64).tofile(self._prints)
        self.documents += sets.n
        self.shingles += int(sets.offsets[-1] - sets.offsets[0])

    def finish_documents(self) -> tuple[IdColumn, np.ndarray, np.ndarray]:
        """(ids, source, record) mapped, every file closed: for a run that spilled only
        its documents (a run on embeddings keeps its vectors in files of its own)."""
        for f in (self._values, self._offsets, self._prints, self._signatures, *self._bands,
                  self._source, self._record):
            f.close()
        n = os.path.getsize(self.source_path) // 4
        ids = self.mapped_ids() if self.id_pieces else IdColumn(columns.strings([]))
        return (ids, _mapped(self.source_path, np.int32, (n,)),
                _mapped(self.record_path, np.int64, (n,)))

    def finish(self) -> Spilled:
        for f in (self._values, self._offsets, self._prints, self._signatures, *self._bands,
                  self._source, self._record):
            f.close()
        n = self.documents
        # offsets and fingerprints mapped too: a document holds no heap for them
        offsets = (_mapped(self.offsets_path, np.int64, (n + 1,)) if n
                   else np.zeros(1, dtype=np.int64))
        values = _mapped(self.values_path, self.values_dtype or np.uint32, (self.shingles,))
        params = self.signature_params or {"family": DEFAULT_FAMILY, "num_perm": 0, "seed": 0,
                                           "bits": 32}
        matrix = _mapped(self.signatures_path, self.signature_dtype or np.uint32,
                         (n, params["num_perm"]))
        prints = _mapped(self.prints_path, np.uint64, (n,))
        ids = self.mapped_ids() if self.id_pieces else None
        source = _mapped(self.source_path, np.int32, (os.path.getsize(self.source_path) // 4,))
        record = _mapped(self.record_path, np.int64, (os.path.getsize(self.record_path) // 8,))
        return Spilled(ShingleSets(offsets, values), Signatures(matrix, **params), prints,
                       self.band_paths, ids, source, record)


def _mapped(path: Path, dtype, shape: tuple) -> np.ndarray:
    """A read-only view of the file (a plain ndarray, so numba kernels take it)."""
    if int(np.prod(shape)) == 0:
        return np.empty(shape, dtype=dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode="r", shape=shape))


class WorkDirectory:
    """A fresh directory for the spilled files, removed on exit (inside ``parent`` if given).

    A ``parent`` that does not exist is made, and every folder of it made here is removed
    on exit too, deepest first and only while empty (another run may have put its own
    work folder there meanwhile): a run leaves no folder behind that it created.
    The directory is named ``neardup-spill-PID-...`` after this process: a run killed
    before it could remove its own (SIGKILL) leaves it, and the next run in the same
    ``parent`` removes every one whose process is gone before it spills."""

    def __init__(self, parent: str | os.PathLike | None = None):
        self.created = _make_folders(parent) if parent is not None else []
        try:
            sweep_dead_runs(parent if parent is not None else tempfile.gettempdir(),
                            SPILL_PREFIX)
            self.path = Path(tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-",
                                              dir=parent))
        except BaseException:
            _remove_empty(self.created)
            raise

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        _remove_empty(self.created)


def _make_folders(path: str | os.PathLike) -> list[Path]:
    """Make ``path`` and its missing parents; the folders made, deepest first."""
    missing = []
    folder = Path(os.path.abspath(path))
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    made: list[Path] = []
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:  # made meanwhile by another run: not ours to remove
                continue
            made.insert(0, folder)
    except BaseException:
        _remove_empty(made)
        raise
    return made


def _remove_empty(folders: Sequence[Path]) -> None:
    for folder in folders:  # deepest first
        try:
            folder.rmdir()
        except OSError:  # not empty (someone else's files), or already gone
            return
