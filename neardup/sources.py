"""Sources: inputs become :class:`Documents`; the dedup copy goes back out in each input's format.

Formats (``fmt="auto"`` guesses from the path):

========  =============================  =========================================
fmt       a record is                    document id (several inputs: prefixed)
========  =============================  =========================================
dir       a file under the root          path relative to the root
jsonl     a non-blank line (JSON object) ``id_field`` value, else line number
json      an element of the top-level    ``id_field`` value, else the element's
          array (a lone object: itself)  1-based position
csv/tsv   a data row after the header    ``id_field`` value, else row number
parquet   a row                          ``id_field`` value, else row number
lines     a line                         line number
========  =============================  =========================================

Compressed files (``.gz``, ``.zst``/``.zstd``, ``.bz2``, ``.xz`` after the format's
suffix: ``docs.jsonl.gz``) are read as a stream, record for record as the file they
hold (same accounting, same ids); zstd needs the ``zstandard`` package. A stream that
turns out corrupt or truncated ends its file there: what came before is read, the
rest is one failed record ("corrupt or truncated gzip data: ..."). Parquet compresses
its own columns and is not read compressed; files inside a directory are read as
they are (a ``.gz`` there is a binary file).

Directories skip version-control folders (``.git``, ``.hg``, ``.svn``) and what the
``.gitignore`` files inside the tree ignore (each one for its folder and below, with
git's rules: a deeper file overrides, ``!`` re-includes, a folder ignored is not
entered), unless ``respect_ignore=False``. Each skipped file, and each folder left
unentered, is one record skipped as "ignored (.gitignore)" or "VCS folder" (a folder
counts once, whatever it holds), so the accounting stays closed; the dedup copy
leaves them out. Files above the root, ``.git/info/exclude`` and git's global
excludes are not consulted.

Guarantees:

* Accounting is closed: every record read is exactly one of processed, skipped
  (cannot be read as text, or has no text) or failed (malformed, unreadable);
  :meth:`ReadReport.check` verifies ``records_seen == processed + skipped + failed``.
* Order is deterministic: inputs in the order given, a directory's files sorted
  by relative path, records in file order.
* Nothing is dropped silently at the document level: a duplicate id is renamed
  (``x#2``) and reported, never discarded.
* A bad record costs itself only. A CSV/TSV quote left open fails its record
  ("quote opened on line 3 is never closed") and reading goes on at the next
  line, so the rows after it are read as rows, not merged into it (one that a
  later quote closes just before a delimiter or line break looks like a field
  over several lines, and is read as one). A JSON "\\ud800" escape
  (a lone surrogate, which no output can hold) fails its record; a file name that
  is not UTF-8 gets an id with its bytes escaped (``bad\\xff.txt``), noted.
  A directory's named pipes, sockets and devices are skipped ("not a regular
  file") without being opened.
* :func:`write_deduplicated` removes exactly the documents whose ``keep`` is
  False; skipped and failed records are written back. Lines and JSONL are copied
  byte for byte, directories file for file, CSV/TSV rewritten by the csv module
  in the input's delimiter and line ending (a row it cannot parse copied as it
  is), JSON arrays element by element (each kept element's text as it was, the
  array's layout kept; a malformed file copied whole), Parquet filtered as an
  Arrow table. The copy is compressed as its name says (``out.jsonl.gz``: gzip),
  standard output (``"-"``) takes it uncompressed. File inputs are read again for
  the copy, and a file that changed since it was read is refused.

Line-based formats (lines, jsonl, csv, tsv) need an ASCII-compatible encoding.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import csv
import errno
import fnmatch
import gzip
import io
import itertools
import json
import lzma
import os
import re
import shutil
import stat
import sys
import zlib
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from . import jsonl

FORMATS = ("auto", "dir", "jsonl", "json", "csv", "tsv", "parquet", "lines")
STDIN = "-"
STDOUT = "-"  # write_deduplicated's out: the copy to standard output
STDIN_NAME = "<stdin>"
BINARY_PROBE_BYTES = 8192
_SUFFIX_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
}
_FORMAT_SUFFIX = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "tsv": ".tsv",
                  "parquet": ".parquet", "lines": ".txt"}
_DEFAULT_DELIMITER = {"csv": ",", "tsv": "\t"}
IGNORED = "ignored (.gitignore)"  # skip reasons of a directory scan
VCS_FOLDER = "VCS folder"
VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
# Routine skips are counted but not listed as problems, so real errors stay in view.
_ROUTINE_SKIPS = frozenset({"empty line", "empty text", IGNORED, VCS_FOLDER})
LINE_BLOCK_BYTES = 1 << 16  # lines are read and decoded a block at a time
PARQUET_BATCH_ROWS = 8192
JSONL_FIELDS_NAMED = 20  # a reason names at most this many of a record's fields


@dataclass
class Problem:
    source: str  # file path, or "<stdin>"
    location: str  # "row 17 (line 20)", "line 3", "column 'text'", "" for a whole file
    reason: str


@dataclass
class ReadReport:
    """What happened to every record: processed, skipped (with reason) or failed (with reason)."""

    records_seen: int = 0
    processed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)  # the first max_problems
    problems_total: int = 0
    max_problems: int = 100

    def check(self) -> None:
        """Raise AssertionError unless every record seen is accounted for exactly once."""
        accounted = self.processed + sum(self.skipped.values()) + sum(self.failed.values())
        if self.records_seen != accounted:
            raise AssertionError(
                f"read accounting broken: {self.records_seen} records seen but "
                f"{self.processed} processed + {sum(self.skipped.values())} skipped + "
                f"{sum(self.failed.values())} failed = {accounted}"
            )

    def as_dict(self) -> dict:
        return {
            "records_seen": self.records_seen,
            "processed": self.processed,
            "skipped": dict(sorted(self.skipped.items())),
            "failed": dict(sorted(self.failed.items())),
            "problems": [asdict(p) for p in self.problems],
            "problems_total": self.problems_total,
        }

    def _note(self, source: str, location: str, reason: str) -> None:
        self.problems_total += 1
        if len(self.problems) < self.max_problems:
            self.problems.append(Problem(source, location, reason))

    def _skip(self, source: str, location: str, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if reason not in _ROUTINE_SKIPS:
            self._note(source, location, reason)

    def _fail(self, source: str, location: str, reason: str) -> None:
        self.failed[reason] = self.failed.get(reason, 0) + 1
        self._note(source, location, reason)


@dataclass
class InputSource:
    """One input as read: enough to find its records again for the dedup copy."""

    given: str  # the path as given ("-" for standard input)
    fmt: str  # resolved format, never "auto"
    name: str  # basename, unique among the inputs: output name and id prefix
    encoding: str
    delimiter: str | None = None  # csv/tsv
    line_terminator: str = "\n"  # csv/tsv: the input's, reused for the copy
    entries: list[str] = field(default_factory=list)  # dir: relative path of each record
    # dir: records the copy leaves out (unreadable, not a regular file, ignored)
    not_copied: set[int] = field(default_factory=set)
    data: bytes | None = None  # standard input, kept for the copy
    stat: tuple[int, int] | None = None  # file: (size, mtime_ns) when read
    compression: str | None = None  # "gzip", "zstd", "bz2", "xz" (from the suffix) or None
    damaged: str | None = None  # a compressed file's stream broke: why (its last record)

    @property
    def display(self) -> str:
        return STDIN_NAME if self.given == STDIN else _printable(self.given)


@dataclass
class Documents:
    """n documents, column-wise; document d came from ``inputs[source[d]]``, record ``record[d]``.

    ``record`` is the 0-based position within the input: the index in the sorted
    file list (dir), the physical line index (lines, jsonl: line number - 1), the
    element index (json), or the data row index (csv/tsv without the header, parquet).
    """

    ids: list[str]
    texts: list[str]
    source: np.ndarray  # int32[n]
    record: np.ndarray  # int64[n]
    inputs: list[InputSource] = field(default_factory=list)
    start: int = 0  # a chunk's first document number (see read_document_chunks)
    # extra_fields asked of the reader: name -> one value per document (None: missing)
    fields: dict[str, list] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)


class _DocumentsBuilder:
    def __init__(self, report: ReadReport, extra_fields: Sequence[str] = ()):
        self.report = report
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.source: list[int] = []
        self.record: list[int] = []
        self.fields: dict[str, list] = {name: [] for name in extra_fields}
        self.id_uses: dict[str, int] = {}  # every id so far, chunks included: renames stay global
        self.pending_chars = 0  # characters of text held since the last take()
        self.taken = 0  # documents handed out by take()
        self.chunk_chars: int | None = None  # read in chunks: a chunk closes at this size
        self.chunk_docs = sys.maxsize  # ... or at this many documents

    def records_until_full(self, chars: np.ndarray, docs: np.ndarray, lo: int) -> int:
        """Where the next run of a block's records should end: after the record that fills
        the chunk (``chars``, ``docs``: the block's running totals of text and documents),
        or at the block's end when reading is not in chunks."""
        if self.chunk_chars is None:
            return chars.size
        before_chars = int(chars[lo - 1]) if lo else 0
        before_docs = int(docs[lo - 1]) if lo else 0
        docs_left = min(self.chunk_docs - len(self.texts), chars.size + 1)  # no overflow
        full = min(np.searchsorted(chars, before_chars + self.chunk_chars - self.pending_chars),
                   np.searchsorted(docs, before_docs + docs_left))
        return int(min(max(full + 1, lo + 1), chars.size))

    def add(self, source: int, record: int, doc_id: str, text: str,
            display: str, unit: str, number: int, values: Sequence = ()) -> None:
        """Append one document; ``unit number`` ("line 3", "row 2") locates it for messages;
        ``values``: its extra fields' values, in the order asked (missing: None)."""
        uses = self.id_uses.get(doc_id, 0)
        self.id_uses[doc_id] = uses + 1
        if uses:
            renamed = doc_id
            while renamed in self.id_uses:
                uses += 1
                renamed = f"{doc_id}#{uses}"
            self.id_uses[renamed] = 1
            reason = f"duplicate id {doc_id!r} (renamed to {renamed!r})"
            self.report._note(display, f"{unit} {number}" if unit else "", reason)
            doc_id = renamed
        self.ids.append(doc_id)
        self.texts.append(text)
        self.source.append(source)
        self.record.append(record)
        for column, value in itertools.zip_longest(self.fields.values(), values):
            column.append(value)
        self.pending_chars += len(text)
        self.report.processed += 1

    def extend(self, source: int, records: list[int], ids: list[str], texts: list[str],
               display: str, unit: str, values: dict[str, list] | None = None) -> None:
        """Append many documents; one set operation when no id repeats (the usual case).
        ``values``: each extra field's values (absent: every value missing)."""
        values = values or {}
        new_ids = dict.fromkeys(ids, 1)
        if len(new_ids) != len(ids) or not self.id_uses.keys().isdisjoint(new_ids):
            for k, (record, doc_id, text) in enumerate(zip(records, ids, texts, strict=True)):
                self.add(source, record, doc_id, text, display, unit, record + 1,
                         [values[name][k] if name in values else None for name in self.fields])
            return
        self.id_uses.update(new_ids)
        self.ids.extend(ids)
        self.texts.extend(texts)
        self.source.extend([source] * len(ids))
        self.record.extend(records)
        for name, column in self.fields.items():
            column.extend(values[name] if name in values else [None] * len(ids))
        self.pending_chars += sum(map(len, texts))
        self.report.processed += len(ids)

    def build(self, inputs: list[InputSource]) -> Documents:
        return Documents(
            ids=self.ids,
            texts=self.texts,
            source=np.asarray(self.source, dtype=np.int32),
            record=np.asarray(self.record, dtype=np.int64),
            inputs=inputs,
            start=self.taken,
            fields=self.fields,
        )

    def take(self, inputs: list[InputSource]) -> Documents:
        """The documents added since the last take, as a chunk; the builder lets go of them."""
        chunk = self.build(inputs)
        self.taken += len(chunk)
        self.ids, self.texts, self.source, self.record = [], [], [], []
        self.fields = {name: [] for name in self.fields}
        self.pending_chars = 0
        return chunk


def read_documents(
    inputs: Sequence[str | os.PathLike],
    *,
    fmt: str = "auto",
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    delimiter: str | None = None,
    encoding: str = "utf-8",
    max_problems: int = 100,
    progress: bool = False,
    respect_ignore: bool = True,
    extra_fields: Sequence[str] = (),
) -> tuple[Documents, ReadReport]:
    """Read every input into one :class:`Documents`, accounting for every record.

    inputs: paths (files or directories); "-" reads standard input ("lines"
        unless ``fmt`` says otherwise; at most once). A file whose name ends in
        .gz, .zst/.zstd, .bz2 or .xz is decompressed as it is read.
    fmt: one of FORMATS; "auto" guesses per input from the path (the suffix
        before a compression suffix: ``docs.jsonl.gz`` is jsonl).
    text_fields: fields/columns whose values, joined by "\\n", are the text (jsonl,
        json, csv, tsv, parquet). A column missing from a table header is a ValueError.
    id_field: field/column holding the document id; default: line or row number
        (json: the element's position).
    include, exclude: fnmatch globs for directories, matched against the path
        relative to the root, that path prefixed by the root's name, and (for
        patterns without "/") the basename. A directory matching an exclude
        pattern is not entered. Filtered files are not records.
    delimiter: csv/tsv field delimiter (default "," and tab).
    encoding: text encoding; undecodable records are skipped as "not <ENCODING>".
    max_problems: how many problems the report lists (all are counted).
    progress: show a progress bar on stderr while reading directories.
    respect_ignore: directories skip .git/.hg/.svn folders and what .gitignore
        files in the tree ignore, each counted as skipped (see the module's
        docstring); False reads everything.
    extra_fields: fields/columns whose value each document keeps in
        ``Documents.fields[name]`` (jsonl, json: the JSON value, None where absent
        or null; csv/tsv: the cell, None where empty; parquet: the value), e.g. for
        ``representative_field``. A column missing from a table header is a
        ValueError; lines and directories have no fields (ValueError).

    Directories: symlinked directories are never entered (no loops); files with
    a NUL byte in their first 8 KiB are skipped as "binary file", named pipes,
    sockets and devices as "not a regular file" (never opened); empty files are
    documents. A named pipe given as an input is read once, like standard input.
    Records with blank text in the other formats are skipped ("empty line",
    "empty text").
    """
    report = ReadReport(max_problems=max_problems)
    builder = _DocumentsBuilder(report, _field_names(extra_fields))
    sources: list[InputSource] = []
    for _ in _read_inputs(inputs, fmt, text_fields, id_field, include, exclude, delimiter,
                          encoding, max_problems, progress, builder, sources,
                          respect_ignore):
        pass
    return builder.build(sources), report


def read_document_chunks(
    inputs: Sequence[str | os.PathLike],
    *,
    chunk_chars: int,
    chunk_docs: int | None = None,
    fmt: str = "auto",
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    delimiter: str | None = None,
    encoding: str = "utf-8",
    max_problems: int = 100,
    progress: bool = False,
    respect_ignore: bool = True,
    extra_fields: Sequence[str] = (),
) -> tuple[Iterator[Documents], ReadReport, list[InputSource]]:
    """:func:`read_documents` a chunk at a time: (chunks, report, inputs).

    Each chunk is a :class:`Documents` of consecutive documents holding at least
    ``chunk_chars`` characters of text or ``chunk_docs`` documents, whichever comes
    first (the last chunk less); ``chunk.start`` is its
    first document number. Concatenated, the chunks' ids, texts, sources and records
    are exactly those :func:`read_documents` returns (same renames of repeated ids,
    which needs every id so far in memory), and ``report`` is the same once the
    chunks are exhausted (then checked); ``inputs`` fills as the inputs are opened.
    Options are checked here, before any read.
    Memory: one chunk's texts plus one block of the input (a line block of
    ``LINE_BLOCK_BYTES``, a JSON Lines block of ``jsonl.BLOCK_BYTES``, a Parquet batch
    of ``PARQUET_BATCH_ROWS`` rows, one file of a directory, one CSV row; a JSON file
    is read whole).
    """
    if not isinstance(chunk_chars, int) or chunk_chars < 1:
        raise ValueError(f"chunk_chars must be a positive integer, got {chunk_chars!r}")
    if chunk_docs is not None and (not isinstance(chunk_docs, int) or chunk_docs < 1):
        raise ValueError(f"chunk_docs must be a positive integer or None, got {chunk_docs!r}")
    max_docs = chunk_docs or sys.maxsize
    report = ReadReport(max_problems=max_problems)
    builder = _DocumentsBuilder(report, _field_names(extra_fields))
    builder.chunk_chars, builder.chunk_docs = chunk_chars, max_docs
    sources: list[InputSource] = []
    records = _read_inputs(inputs, fmt, text_fields, id_field, include, exclude, delimiter,
                           encoding, max_problems, progress, builder, sources,
                           respect_ignore)
    next(records)  # runs the checks now, not at the first chunk

    def chunks() -> Iterator[Documents]:
        for _ in records:
            if builder.pending_chars >= chunk_chars or len(builder.texts) >= max_docs:
                yield builder.take(sources)
        if builder.texts:
            yield builder.take(sources)

    return chunks(), report, sources


def _read_inputs(inputs, fmt, text_fields, id_field, include, exclude, delimiter, encoding,
                 max_problems, progress, builder, sources,
                 respect_ignore=True) -> Iterator[None]:
    """Read every input into ``builder``, yielding between records (where a chunk may end).

    The first yield comes after the options are checked, before any record is read.
    """
    paths = [os.fspath(p) for p in inputs]
    _validate(paths, fmt, text_fields, id_field, delimiter, encoding, max_problems)
    if not isinstance(respect_ignore, bool):
        raise ValueError(f"respect_ignore must be True or False, got {respect_ignore!r}")
    text_fields = list(text_fields)
    codec = _text_codec(encoding)
    not_decodable = f"not {_encoding_label(encoding)}"

    resolved = [_resolve_format(p, fmt) for p in paths]
    compressions = [_input_compression(p, f) for p, f in zip(paths, resolved, strict=True)]
    extra_fields = list(builder.fields)
    if extra_fields:
        for path, path_fmt in zip(paths, resolved, strict=True):
            if path_fmt in ("lines", "dir"):
                shown = STDIN_NAME if path == STDIN else _printable(path)
                raise ValueError(f"{shown}: a {'line file' if path_fmt == 'lines' else 'directory'}"
                                 f" has no fields to keep {extra_fields}")
    names = _unique_names(paths, resolved)
    several = len(paths) > 1
    report = builder.report
    yield
    for index, (path, path_fmt, name) in enumerate(zip(paths, resolved, names, strict=True)):
        src = InputSource(
            given=path, fmt=path_fmt, name=name, encoding=encoding,
            delimiter=delimiter or _DEFAULT_DELIMITER.get(path_fmt),
            compression=compressions[index],
        )
        sources.append(src)
        if path == STDIN:
            src.data = _read_stdin(encoding)
        elif path_fmt != "dir":
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode):
                src.stat = (st.st_size, st.st_mtime_ns)
            else:  # a named pipe given by name is a stream: read once and kept, like stdin
                src.data = _read_bytes(path)
        shown_name = _printable(name)
        context = _ReadContext(
            index=index, src=src, builder=builder, report=report, codec=codec,
            not_decodable=not_decodable, text_fields=text_fields, id_field=id_field,
            id_prefix=((f"{shown_name}/" if path_fmt == "dir" else f"{shown_name}:")
                       if several else ""),
            extra_fields=extra_fields,
        )
        if path_fmt == "dir":
            yield from _read_dir(context, include, exclude, progress, respect_ignore)
        elif path_fmt == "lines":
            yield from _read_lines(context)
        elif path_fmt == "jsonl":
            yield from _read_jsonl(context)
        elif path_fmt == "json":
            yield from _read_json(context)
        elif path_fmt in ("csv", "tsv"):
            yield from _read_table(context)
        else:
            yield from _read_parquet(context)
        if src.damaged is not None:  # the stream broke: the rest of the file is one record
            report.records_seen += 1
            report._fail(src.display, "", src.damaged)
    report.check()


# ---------------------------------------------------------------- validation, naming


def _validate(paths, fmt, text_fields, id_field, delimiter, encoding, max_problems) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if not paths:
        raise ValueError("no inputs given")
    if paths.count(STDIN) > 1:
        raise ValueError("standard input ('-') can be read only once")
    if isinstance(text_fields, str) or not text_fields or not all(
        isinstance(f, str) and f for f in text_fields
    ):
        raise ValueError(f"text_fields must be a non-empty list of names, got {text_fields!r}")
    if id_field is not None and (not isinstance(id_field, str) or not id_field):
        raise ValueError(f"id_field must be a non-empty name or None, got {id_field!r}")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise ValueError(f"delimiter must be a single character, got {delimiter!r}")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None
    if max_problems < 0:
        raise ValueError(f"max_problems must be >= 0, got {max_problems!r}")
    for path in paths:
        if path != STDIN and not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


def _resolve_format(path: str, fmt: str) -> str:
    if path == STDIN:
        if fmt == "dir":
            raise ValueError("standard input ('-') cannot be read as a directory")
        return "lines" if fmt == "auto" else fmt
    is_dir = os.path.isdir(path)
    if fmt == "auto":
        if is_dir:
            return "dir"
        stem = os.path.splitext(path)[0] if compression_of(path) else path
        return _SUFFIX_FORMATS.get(os.path.splitext(stem)[1].lower(), "lines")
    if is_dir != (fmt == "dir"):
        kind = "a directory" if is_dir else "not a directory"
        raise ValueError(f"{path} is {kind}; it cannot be read as fmt={fmt!r}")
    return fmt


def _field_names(extra_fields: Sequence[str]) -> list[str]:
    if isinstance(extra_fields, str) or not all(isinstance(f, str) and f for f in extra_fields):
        raise ValueError(f"extra_fields must be a list of names, got {extra_fields!r}")
    return list(dict.fromkeys(extra_fields))


def _unique_names(paths: Sequence[str], formats: Sequence[str]) -> list[str]:
    """Each input's basename, made unique deterministically: 'a.txt', 'a-2.txt', ..."""
    bases = []
    for path, path_fmt in zip(paths, formats, strict=True):
        if path == STDIN:
            bases.append("stdin" + _FORMAT_SUFFIX[path_fmt])
        else:
            bases.append(os.path.basename(os.path.abspath(path)) or "root")
    taken = set(bases)
    names: list[str] = []
    for base in bases:
        name = base
        if name in names:
            stem, suffix = os.path.splitext(base)
            copy = 2
            while (name := f"{stem}-{copy}{suffix}") in taken:
                copy += 1
            taken.add(name)
        names.append(name)
    return names


def _text_codec(encoding: str) -> str:
    # A UTF-8 byte-order mark is not text: "utf-8-sig" drops it where it leads.
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def _encoding_label(encoding: str) -> str:
    name = codecs.lookup(encoding).name
    return "UTF-8" if name == "utf-8" else name


def _read_stdin(encoding: str) -> bytes:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer.read()
    return sys.stdin.read().encode(encoding)  # a text stream without bytes (tests, notebooks)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _as_text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _has_surrogates(text: str) -> bool:
    """Whether text holds a lone surrogate, which no UTF-8 output can hold.

    Undecodable bytes survive "surrogateescape" decoding (file names, CSV) as lone
    surrogates; JSON's "\\ud800" escapes and a few codecs (utf-7, unicode_escape)
    make them too.
    """
    if text.isascii():  # O(1): CPython flags ASCII strings
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _printable(text: str) -> str:
    """text, or where it holds lone surrogates a form any output can hold.

    A surrogate-escaped byte (a file name that is not UTF-8, as ``os.fsdecode``
    gives it) becomes ``\\xff``; any other lone surrogate becomes ``\\ud800``.
    """
    if not _has_surrogates(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate outside the escaped-byte range
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class _ReadContext:
    index: int
    src: InputSource
    builder: _DocumentsBuilder
    report: ReadReport
    codec: str
    not_decodable: str
    text_fields: list[str]
    id_field: str | None
    id_prefix: str
    extra_fields: list[str] = field(default_factory=list)

    def add(self, record: int, doc_id: str, text: str, unit: str, number: int,
            values: Sequence = ()) -> None:
        self.builder.add(self.index, record, doc_id, text, self.src.display, unit, number,
                         values)


# ---------------------------------------------------------------- compression

_COMPRESSION_SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2",
                         ".xz": "xz"}


def compression_of(path: str | os.PathLike) -> str | None:
    """The compression a file name's last suffix names ("gzip", "zstd", "bz2", "xz"), else
    None; standard input and output ("-") are never compressed."""
    path = os.fspath(path)
    if path == STDIN:
        return None
    return _COMPRESSION_SUFFIXES.get(os.path.splitext(path)[1].lower())


def _input_compression(path: str, fmt: str) -> str | None:
    """An input's compression, checked before any read: one Parquet is never wrapped in,
    one zstd needs its package."""
    compression = None if fmt == "dir" else compression_of(path)
    if compression is not None and fmt == "parquet":
        raise ValueError(f"{_printable(path)}: Parquet compresses its own columns; give the "
                         f".parquet file itself, not a {compression} copy of it")
    if compression == "zstd":
        _zstandard(path)
    return compression


def _zstandard(path: str):
    try:
        import zstandard
    except ImportError:
        raise ValueError(f"{_printable(path)} is zstd-compressed: .zst files need the "
                         f"zstandard package (pip install zstandard)") from None
    return zstandard


@contextlib.contextmanager
def _open_binary(src: InputSource) -> Iterator[io.BufferedIOBase]:
    """The input's bytes as a stream, decompressed on the way when it is compressed."""
    with io.BytesIO(src.data) if src.data is not None else open(src.given, "rb") as raw:
        if src.compression is None:
            yield raw
            return
        if src.compression == "gzip":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif src.compression == "bz2":
            stream = bz2.BZ2File(raw, "rb")
        elif src.compression == "xz":
            stream = lzma.LZMAFile(raw, "rb")
        else:
            stream = _zstandard(src.given).ZstdDecompressor().stream_reader(
                raw, read_across_frames=True, closefd=False)
        with stream:
            yield io.BufferedReader(_Decompressed(stream, src), LINE_BLOCK_BYTES)


class _Decompressed(io.RawIOBase):
    """A decompressing stream that ends where its data breaks (corrupt, truncated), with
    the reason left in ``src.damaged``: the readers see the file end there, and the
    read accounts for the rest as one failed record."""

    def __init__(self, stream, src: InputSource):
        self.stream, self.src = stream, src
        self.errors: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError,
                                                        zlib.error)
        if src.compression == "zstd":
            self.errors += (_zstandard(src.given).ZstdError,)
        self.broken = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.broken:
            return 0
        try:  # read1: what one step decompresses, so the data before a break comes through
            data = self.stream.read1(len(buffer))
        except self.errors as err:
            self.broken = True
            self.src.damaged = f"corrupt or truncated {self.src.compression} data: {err}"
            return 0
        buffer[:len(data)] = data
        return len(data)


@contextlib.contextmanager
def _open_output(target: str) -> Iterator[io.BufferedIOBase]:
    """A binary stream for a copy: ``target`` written whole or not at all (see
    :class:`_AtomicFile`) and compressed as its name says; "-": standard output as it
    is, flushed and left open."""
    if target == STDOUT:
        sys.stdout.flush()
        stdout = sys.stdout.buffer
        yield stdout
        stdout.flush()
        return
    compression = compression_of(target)
    with _AtomicFile(target) as partial, open(partial, "wb") as raw:
        if compression is None:
            yield raw
            return
        if compression == "gzip":  # no name, no time: the same copy byte for byte
            stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
        elif compression == "bz2":
            stream = bz2.BZ2File(raw, "wb")
        elif compression == "xz":
            stream = lzma.LZMAFile(raw, "wb")
        else:
            stream = _zstandard(target).ZstdCompressor().stream_writer(raw, closefd=False)
        with stream:
            yield stream


# ---------------------------------------------------------------- directories


def _read_dir(ctx: _ReadContext, include, exclude, progress: bool,
              respect_ignore: bool = True) -> Iterator[None]:
    from tqdm import tqdm

    root = ctx.src.given
    root_name = os.path.basename(os.path.abspath(root))
    entries, unreadable_dirs, ignored = _walk(root, root_name, include, exclude, respect_ignore,
                                              ctx.report)
    ctx.src.entries = entries
    report = ctx.report
    bar = tqdm(entries, disable=not progress, file=sys.stderr, unit="file", desc=ctx.src.name)
    for record, rel in enumerate(bar):
        yield
        report.records_seen += 1
        path = os.path.join(root, rel)
        shown = _printable(path)  # a file name that is not UTF-8, with its bytes escaped
        if rel in ignored:  # a file .gitignore names, or a folder not entered: not copied
            ctx.src.not_copied.add(record)
            report._skip(shown, "", ignored[rel])
            continue
        if rel in unreadable_dirs:
            ctx.src.not_copied.add(record)
            report._fail(shown, "", f"unreadable directory: {unreadable_dirs[rel]}")
            continue
        try:
            # stat before open: opening a named pipe would wait for a writer forever
            is_regular = stat.S_ISREG(os.stat(path).st_mode)
            data = _read_bytes(path) if is_regular else b""
        except OSError as err:
            ctx.src.not_copied.add(record)
            report._fail(shown, "", err.strerror or type(err).__name__)
            continue
        if not is_regular:  # a named pipe, socket or device: never opened, never copied
            ctx.src.not_copied.add(record)
            report._skip(shown, "", "not a regular file")
            continue
        if b"\0" in data[:BINARY_PROBE_BYTES]:
            report._skip(shown, "", "binary file")
            continue
        try:
            text = data.decode(ctx.codec)
        except UnicodeDecodeError:
            report._skip(shown, "", ctx.not_decodable)
            continue
        if _has_surrogates(text):
            report._skip(shown, "", ctx.not_decodable)
            continue
        doc_id = _printable(rel)
        if doc_id != rel:
            report._note(shown, "", f"file name is not UTF-8; id escaped as {doc_id}")
        ctx.add(record, ctx.id_prefix + doc_id, text, "", 0)


def _walk(root: str, root_name: str, include, exclude, respect_ignore: bool = False,
          report: ReadReport | None = None
          ) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Relative paths ("/"-separated, sorted) of the selected files under root, those of
    the directories that cannot be listed (with their error) and those skipped by
    ``respect_ignore`` (with the reason; a folder not entered ends in "/").

    Symlinked directories are listed by os.walk but not entered (followlinks=False),
    so a link to an ancestor cannot loop. Directories that cannot be listed come
    back as entries too, with their error, so they are counted as failed. Names
    are as ``os.fsdecode`` gives them (bytes that are not UTF-8 as lone surrogates),
    so they open the file again; ids and messages escape them (:func:`_printable`).
    The note a dedup copy holds at its root (``DEDUP_MARKER``) is not a document.
    ``--exclude`` and ``--include`` apply first: what they filter out is no entry,
    ignored or not.
    """
    unreadable: dict[str, str] = {}
    skipped: dict[str, str] = {}
    ignores = _GitIgnores(root, report) if respect_ignore else None

    def on_error(err: OSError) -> None:
        rel = _relative(root, err.filename or root)
        unreadable[rel] = err.strerror or type(err).__name__

    selected: list[str] = []
    for directory, dirnames, filenames in os.walk(root, onerror=on_error):
        rel_dir = _relative(root, directory)
        if ignores is not None and ".gitignore" in filenames:
            ignores.load(rel_dir)
        entered = []
        for d in dirnames:
            rel = f"{rel_dir}/{d}/" if rel_dir else f"{d}/"
            if _matches_any(rel, root_name, exclude):
                continue
            if ignores is not None and os.path.islink(os.path.join(directory, d)):
                entered.append(d)  # listed, never entered: as without respect_ignore
            elif ignores is not None and d in VCS_FOLDERS:
                skipped[rel] = VCS_FOLDER
            elif ignores is not None and ignores.ignored(rel):
                skipped[rel] = IGNORED
            else:
                entered.append(d)
        dirnames[:] = entered
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if rel == DEDUP_MARKER:  # neardup's note on a dedup copy, not a document
                continue
            if include and not _matches_any(rel, root_name, include):
                continue
            if _matches_any(rel, root_name, exclude):
                continue
            if ignores is not None and ignores.ignored(rel):
                skipped[rel] = IGNORED
                continue
            selected.append(rel)
    selected.extend(unreadable)
    selected.extend(skipped)
    return sorted(selected), unreadable, skipped


class _GitIgnores:
    """The .gitignore files of a tree, as git reads them (pathspec's GitIgnoreSpec): each
    one's patterns are relative to its folder; the deepest file with a pattern matching
    a path decides (within a file the last matching pattern), a "!" pattern re-includes."""

    def __init__(self, root: str, report: ReadReport | None):
        self.root, self.report = root, report
        self.specs: dict[str, object] = {}  # folder ("" for the root) -> its GitIgnoreSpec

    def load(self, rel_dir: str) -> None:
        from pathspec import GitIgnoreSpec

        path = os.path.join(self.root, rel_dir, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                self.specs[rel_dir] = GitIgnoreSpec.from_lines(f.read().splitlines())
        except (OSError, ValueError) as err:  # unreadable, or a pattern pathspec refuses
            if self.report is not None:
                self.report._note(_printable(path), "", f".gitignore not applied: {err}")

    def ignored(self, rel: str) -> bool:
        """Whether ``rel`` (a folder's ends in "/") is ignored."""
        folder = rel.rstrip("/")
        while True:
            folder = folder.rpartition("/")[0] if "/" in folder else ""
            spec = self.specs.get(folder)
            if spec is not None:
                decided = spec.check_file(rel[len(folder) + 1:] if folder else rel).include
                if decided is not None:
                    return decided
            if not folder:
                return False


def _relative(root: str, path: str) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _matches_any(rel: str, root_name: str, patterns: Sequence[str]) -> bool:
    basename = rel.rstrip("/").rsplit("/", 1)[-1]
    for pattern in patterns:
        if (
            fnmatch.fnmatchcase(rel, pattern)
            or fnmatch.fnmatchcase(f"{root_name}/{rel}", pattern)
            or ("/" not in pattern and fnmatch.fnmatchcase(basename, pattern))
        ):
            return True
    return False


# ---------------------------------------------------------------- lines and JSONL


def _read_lines(ctx: _ReadContext) -> Iterator[None]:
    """Lines in blocks of about LINE_BLOCK_BYTES: one decode per block when it is clean,
    per line when not (a bad byte costs its line only)."""
    src, report, display = ctx.src, ctx.report, ctx.src.display
    first = 0  # record number of the block's first line
    with _open_binary(src) as f:
        while raws := f.readlines(LINE_BLOCK_BYTES):
            # b"\n" ends a line; it never occurs inside a character of an ASCII-compatible
            # encoding, so a block decodes as its lines do
            raws = [raw[:-1] if raw.endswith(b"\n") else raw for raw in raws]
            try:
                block: str | None = b"\n".join(raws).decode(src.encoding)
            except UnicodeDecodeError:
                block = None
            if block is not None and not _has_surrogates(block):  # utf-7 can make them
                lines: list[str | None] = block.split("\n")
                if first == 0:
                    lines[0] = lines[0].removeprefix("\ufeff")
            else:
                lines = [_decode_line_or_none(raw, first + k, src.encoding)
                         for k, raw in enumerate(raws)]
            report.records_seen += len(lines)
            records, texts = [], []
            for record, line in enumerate(lines, start=first):
                if line is None:
                    report._skip(display, f"line {record + 1}", ctx.not_decodable)
                    continue
                if line.endswith("\r"):
                    line = line[:-1]
                if not line or line.isspace():
                    report._skip(display, f"line {record + 1}", "empty line")
                    continue
                records.append(record)
                texts.append(line)
            ids = [f"{ctx.id_prefix}{record + 1}" for record in records]
            ctx.builder.extend(ctx.index, records, ids, texts, display, "line")
            first += len(raws)
            yield


def _decode_line_or_none(raw: bytes, record: int, encoding: str) -> str | None:
    try:
        line = _decode_line(raw, record, encoding)
    except UnicodeDecodeError:
        return None
    return None if _has_surrogates(line) else line


def _decode_line(raw: bytes, record: int, encoding: str) -> str:
    text = raw.decode(encoding)
    return text.removeprefix("\ufeff") if record == 0 else text  # byte-order mark


def _read_jsonl(ctx: _ReadContext) -> Iterator[None]:
    report = ctx.report
    missing: dict[str, int] = {}  # "missing field 'text'": records of this file failed so
    fields: dict[str, None] = {}  # the names those records have, first seen first
    first_problem = len(report.problems)
    objects = yield from _read_jsonl_records(ctx, missing, fields)
    if missing and sum(missing.values()) == objects:
        _name_the_fields(report, ctx.src.display, missing, fields, first_problem)


def _read_jsonl_records(ctx: _ReadContext, missing: dict[str, int],
                        fields: dict[str, None]) -> Iterator[None]:
    """Read the records; return how many were JSON objects.

    A block of lines goes through Arrow's parser when that gives the answer reading
    line by line would (see :mod:`neardup.jsonl`), else line by line."""
    utf8 = codecs.lookup(ctx.src.encoding).name == "utf-8"
    objects = 0
    first = 0  # line number of the block's first line
    with _open_binary(ctx.src) as f:
        for block in jsonl.line_blocks(f):
            parsed = jsonl.parse_block(block, first, ctx.text_fields, ctx.id_field,
                                       ctx.extra_fields, utf8)
            if parsed is not None:
                objects += yield from _add_parsed_block(ctx, parsed)
            else:
                for offset, raw in enumerate(block.split(b"\n")[:jsonl.block_lines(block)]):
                    yield
                    objects += _read_jsonl_line(ctx, raw, first + offset, missing, fields)
            first += jsonl.block_lines(block)
    return objects


def _read_jsonl_line(ctx: _ReadContext, raw: bytes, record: int, missing: dict[str, int],
                     fields: dict[str, None]) -> int:
    """One line (0-based number ``record``); 1 if it was a JSON object, else 0."""
    report, display = ctx.report, ctx.src.display
    if not raw.strip():
        return 0  # a blank line is not a record
    report.records_seen += 1
    location = f"line {record + 1}"
    try:
        line = _decode_line(raw, record, ctx.src.encoding)
    except UnicodeDecodeError:
        report._skip(display, location, ctx.not_decodable)
        return 0
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        report._fail(display, location, "malformed JSON")
        return 0
    if not isinstance(obj, dict):
        report._fail(display, location, "not a JSON object")
        return 0
    _add_json_object(ctx, obj, record, f"{ctx.id_prefix}{record + 1}", "line",
                     record + 1, missing, fields)
    return 1


def _add_parsed_block(ctx: _ReadContext, block: jsonl.Block) -> Iterator[None]:
    """The records of a block Arrow parsed, as :func:`_add_json_object` adds each: an
    empty text is skipped, the rest are documents. Read in chunks, it yields where the
    chunk fills (where reading line by line would let it close); returns the block's
    record count."""
    lines = block.lines.tolist()
    ids = block.ids if block.ids is not None else [f"{ctx.id_prefix}{line + 1}"
                                                   for line in lines]
    kept = np.fromiter((bool(text.strip()) for text in block.texts), dtype=bool,
                       count=len(lines))
    chars = np.cumsum(np.fromiter(map(len, block.texts), dtype=np.int64, count=len(lines))
                      * kept)
    docs = np.cumsum(kept)
    lo = 0
    while lo < len(lines):
        hi = ctx.builder.records_until_full(chars, docs, lo)
        _add_parsed_records(ctx, block, lines, ids, kept, lo, hi)
        yield
        lo = hi
    return len(lines)


def _add_parsed_records(ctx: _ReadContext, block: jsonl.Block, lines: list[int],
                        ids: list[str], kept: np.ndarray, lo: int, hi: int) -> None:
    ctx.report.records_seen += hi - lo
    if kept[lo:hi].all():
        ctx.builder.extend(ctx.index, lines[lo:hi], ids[lo:hi], block.texts[lo:hi],
                           ctx.src.display, "line",
                           {name: column[lo:hi] for name, column in block.fields.items()})
        return
    for k in range(lo, hi):  # one by one: problems stay in line order
        if not kept[k]:
            ctx.report._skip(ctx.src.display, f"line {lines[k] + 1}", "empty text")
            continue
        ctx.add(lines[k], ids[k], block.texts[k], "line", lines[k] + 1,
                [block.fields[name][k] for name in ctx.extra_fields])


def _add_json_object(ctx: _ReadContext, obj: dict, record: int, default_id: str, unit: str,
                     number: int, missing: dict[str, int], fields: dict[str, None]) -> None:
    """One JSON object (a JSONL line, a JSON array's element) as a document, or a record
    failed or skipped with its reason; ``missing`` and ``fields`` gather what
    :func:`_name_the_fields` needs."""
    report, display, location = ctx.report, ctx.src.display, f"{unit} {number}"
    absent = next((name for name in ctx.text_fields if obj.get(name) is None), None)
    if absent is None and ctx.id_field is not None and obj.get(ctx.id_field) is None:
        absent = ctx.id_field
    if absent is not None:
        reason = f"missing field {absent!r}"
        missing[reason] = missing.get(reason, 0) + 1
        if len(fields) <= JSONL_FIELDS_NAMED:
            fields.update(dict.fromkeys(obj))
        report._fail(display, location, reason)
        return
    text = "\n".join(_as_text(obj[name]) for name in ctx.text_fields)
    doc_id = _as_text(obj[ctx.id_field]) if ctx.id_field is not None else default_id
    if _has_surrogates(text) or _has_surrogates(doc_id):  # "\ud800" is valid JSON
        report._fail(display, location, "lone surrogate escape: not valid Unicode")
        return
    if not text.strip():
        report._skip(display, location, "empty text")
        return
    ctx.add(record, doc_id, text, unit, number, [obj.get(name) for name in ctx.extra_fields])


def _name_the_fields(report: ReadReport, display: str, missing: dict[str, int],
                     fields: dict[str, None], first_problem: int) -> None:
    """No JSON object of the file has a field asked for (likely a wrong --text-field):
    each such failure's reason also names the fields the records do have."""
    names = [_printable(name) for name in list(fields)[:JSONL_FIELDS_NAMED]]
    if len(fields) > JSONL_FIELDS_NAMED:
        names.append("...")
    have = f"fields are {', '.join(names)}" if names else "the records have no fields"
    for reason, count in missing.items():
        report.failed[reason] -= count
        if not report.failed[reason]:
            del report.failed[reason]
        named = f"{reason}; {have}"
        report.failed[named] = report.failed.get(named, 0) + count
    for problem in report.problems[first_problem:]:
        if problem.source == display and problem.reason in missing:
            problem.reason = f"{problem.reason}; {have}"


# ---------------------------------------------------------------- JSON files


def _read_json(ctx: _ReadContext) -> Iterator[None]:
    """A JSON file, read whole: a top-level array is one record per element, a lone
    object one record; anything else (malformed, or a lone number, string, ...) is one
    record failed, the file's."""
    src, report, display = ctx.src, ctx.report, ctx.src.display
    with _open_binary(src) as f:
        data = f.read()
    yield
    if src.damaged is not None:  # a compressed stream that broke: the file is that record
        return
    try:
        text = data.decode(ctx.codec)
    except UnicodeDecodeError:
        report.records_seen += 1
        report._skip(display, "", ctx.not_decodable)
        return
    try:
        values, spans = _parse_json_file(text)
    except json.JSONDecodeError as err:
        report.records_seen += 1
        report._fail(display, f"line {err.lineno} column {err.colno}",
                     f"malformed JSON file: {err.msg}")
        return
    except RecursionError:
        report.records_seen += 1
        report._fail(display, "", "malformed JSON file: nested too deeply")
        return
    del text
    missing: dict[str, int] = {}
    fields: dict[str, None] = {}
    first_problem = len(report.problems)
    if spans is None:  # one value, not an array
        report.records_seen += 1
        if not isinstance(values[0], dict):
            report._fail(display, "", "not a JSON array or object")
            return
        _add_json_object(ctx, values[0], 0, f"{ctx.id_prefix}1", "object", 1, missing, fields)
        objects = 1
    else:
        objects = 0
        for record, value in enumerate(values):
            yield
            report.records_seen += 1
            if not isinstance(value, dict):
                report._fail(display, f"element {record + 1}", "not a JSON object")
                continue
            objects += 1
            _add_json_object(ctx, value, record, f"{ctx.id_prefix}{record + 1}", "element",
                             record + 1, missing, fields)
    if missing and sum(missing.values()) == objects:
        _name_the_fields(report, display, missing, fields, first_problem)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_DECODER = json.JSONDecoder()


def _parse_json_file(text: str) -> tuple[list, list[tuple[int, int]] | None]:
    """(the elements, each one's (start, end) in ``text``) of a top-level array, or
    ([the value], None) for any other value; json.JSONDecodeError where ``text`` is not
    one JSON value. The spans let the dedup copy keep each element's text as it was."""
    space = _JSON_SPACE.match
    pos = space(text).end()
    if not text.startswith("[", pos):
        value, pos = _JSON_DECODER.raw_decode(text, pos)
        values, spans = [value], None
    else:
        values, spans = [], []
        pos = space(text, pos + 1).end()
        if text.startswith("]", pos):
            pos += 1
        else:
            while True:
                value, end = _JSON_DECODER.raw_decode(text, pos)
                values.append(value)
                spans.append((pos, end))
                pos = space(text, end).end()
                if text.startswith(",", pos):
                    pos = space(text, pos + 1).end()
                elif text.startswith("]", pos):
                    pos += 1
                    break
                else:
                    raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
    if space(text, pos).end() != len(text):
        raise json.JSONDecodeError("Extra data", text, pos)
    return values, spans


def _write_json(src: InputSource, removed: set[int], out) -> tuple[int, int]:
    """The array minus the removed elements: each kept element's text as it was, between
    the text before the first element and after the last, joined by the separator the
    first two had. A file that is not an array (one object, or a failed file) is copied
    as it is; a compressed one that broke, not at all."""
    with _open_binary(src) as f:
        data = f.read()
    if src.damaged is not None:
        return 0, 1
    try:
        text = data.decode(_text_codec(src.encoding))
        values, spans = _parse_json_file(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        out.write(data)
        return 1, 0
    if spans is None or not removed:
        out.write(data)
        return len(values), 0
    kept = [text[start:end] for k, (start, end) in enumerate(spans) if k not in removed]
    separator = text[spans[0][1]:spans[1][0]] if len(spans) > 1 else ","
    if data.startswith(codecs.BOM_UTF8) and _text_codec(src.encoding) == "utf-8-sig":
        out.write(codecs.BOM_UTF8)
    body = text[:spans[0][0]] + separator.join(kept) + text[spans[-1][1]:]
    out.write(body.encode(src.encoding, "surrogateescape"))
    return len(kept), 0


# ---------------------------------------------------------------- CSV and TSV


def _read_table(ctx: _ReadContext) -> Iterator[None]:
    src = ctx.src
    with _open_binary(src) as f:  # opened twice: a decompressing stream cannot seek back
        first_line = f.readline()
    src.line_terminator = "\r\n" if first_line.endswith(b"\r\n") else "\n"
    with _open_binary(src) as f, contextlib.closing(_csv_rows(f, ctx.codec,
                                                             src.delimiter)) as rows:
        yield from _read_table_rows(ctx, rows)


def _read_table_rows(ctx: _ReadContext, rows) -> Iterator[None]:
    report, display = ctx.report, ctx.src.display
    header = next(rows, None)
    if header is None:
        report._note(display, "", "empty file: no header row, no records")
        return
    header_row = header[2]
    if header_row is None:
        raise ValueError(f"{display}: cannot parse the header row: {header[3]}")
    text_columns = [_column_index(header_row, name, display) for name in ctx.text_fields]
    id_column = (_column_index(header_row, ctx.id_field, display)
                 if ctx.id_field is not None else None)
    extra_columns = [_column_index(header_row, name, display) for name in ctx.extra_fields]
    width = len(header_row)
    for record, (row_number, line_number, row, error, _) in enumerate(rows):
        yield
        report.records_seen += 1
        location = f"row {row_number} (line {line_number})"
        if row is None:
            report._fail(display, location, error)
            continue
        if len(row) != width:
            report._fail(display, location, f"row has {len(row)} fields, header has {width}")
            continue
        text = "\n".join(row[c] for c in text_columns)
        doc_id = row[id_column] if id_column is not None else f"{ctx.id_prefix}{row_number}"
        if _has_surrogates(text) or _has_surrogates(doc_id):
            report._skip(display, location, ctx.not_decodable)
            continue
        if not text.strip():
            report._skip(display, location, "empty text")
            continue
        ctx.add(record, doc_id, text, "row", row_number,
                [row[c] if row[c].strip() else None for c in extra_columns])


def _csv_rows(binary, codec: str, delimiter: str
              ) -> Iterator[tuple[int, int, list | None, str, str]]:
    """(row number, first line number, fields or None, why None, the row's text if None)
    for the header and each row.

    The header is row 0; blank lines are not rows. Undecodable bytes come through
    as lone surrogates ("surrogateescape"), so one bad byte costs one row, not the
    file. Reading and writing the dedup copy share this, so row numbers agree.

    A quote left open would swallow every line after it into one field (the csv
    module says nothing), so a row spanning lines is checked (:func:`_runaway_quote`):
    a quoted field that runs to the end of the file, or closes only lines later
    with text after the closing quote (a stray quote closed it), fails that record
    alone, its lines up to the one the quote opened on. Reading goes on at the next
    line, so the rows it would have swallowed are read as rows.
    """
    stream = io.TextIOWrapper(binary, encoding=codec, errors="surrogateescape", newline="")
    previous_limit = csv.field_size_limit(2**31 - 1)  # documents can be long; restored below
    pending: deque[str] = deque()  # lines to read again after a quote left open
    consumed: list[str] = []  # the lines of the row being parsed
    at_end: list[bool] = [False]  # the row being parsed ran into the end of the file

    def lines() -> Iterator[str]:  # a new one after each resync, which fills pending
        keep = consumed.append
        while pending:
            line = pending.popleft()
            keep(line)
            yield line
        for line in stream:
            keep(line)
            yield line
        at_end[0] = True

    field_end = re.compile(f"[{re.escape(delimiter)}\r\n]")
    try:
        reader = csv.reader(lines(), delimiter=delimiter)
        row_number, next_line = 0, 1
        while True:
            consumed.clear()
            try:
                row, error = next(reader), ""
            except StopIteration:
                return
            except csv.Error as err:
                row, error = None, f"malformed row: {err}"
            if row and (len(consumed) > 1 or at_end[0]):
                quote = _runaway_quote(consumed, field_end, at_end[0])
                if quote is not None:
                    opened, closed = quote
                    row = None
                    error = f"quote opened on line {next_line + opened} " + (
                        "is never closed" if closed is None else
                        f"closes mid-field on line {next_line + closed}")
                    pending.extendleft(reversed(consumed[opened + 1:]))  # read them again
                    del consumed[opened + 1:]
                    at_end[0] = False
                    reader = csv.reader(lines(), delimiter=delimiter)
            first_line = next_line
            next_line += len(consumed)
            if row is not None and not row:
                continue
            yield row_number, first_line, row, error, "" if row is not None else "".join(consumed)
            row_number += 1
    finally:
        csv.field_size_limit(previous_limit)
        stream.detach()


def _runaway_quote(lines: list[str], field_end: re.Pattern,
                   at_end: bool) -> tuple[int, int | None] | None:
    """(line index where a quoted field opens, line index where it closes or None) for the
    first quoted field of a row that runs to the end of the file (``at_end``) or that
    closes on a later line than it opened with text after the closing quote.

    The csv module's grammar for a field: it is quoted if it starts with '"'; inside,
    '""' is a quote and a lone '"' closes it; text after the closing quote joins the
    field (the lenient default); anywhere else a '"' is text. ``field_end`` matches
    what ends a field: the delimiter or a line break.
    """
    text = "".join(lines)

    def line_of(pos: int) -> int:
        starts = list(itertools.accumulate((len(line) for line in lines[:-1]), initial=0))
        return bisect_right(starts, pos) - 1

    pos, end = 0, len(text)
    while pos < end:
        if text[pos] == '"':  # a quoted field: find its closing quote
            opened = pos
            close = text.find('"', pos + 1)
            while close >= 0 and text.startswith('"', close + 1):
                close = text.find('"', close + 2)
            if close < 0:
                return (line_of(opened), None) if at_end else None
            pos = close + 1
            if pos < end and not field_end.match(text, pos):
                if "\n" in text[opened:close] or "\r" in text[opened:close]:
                    return line_of(opened), line_of(close)
                match = field_end.search(text, pos)  # the rest of the field is text
                pos = match.start() if match else end
        else:
            match = field_end.search(text, pos)
            pos = match.start() if match else end
        pos += 1  # past the delimiter or line break: the next field starts
    return None


def _column_index(header: list[str], name: str, display: str) -> int:
    try:
        return header.index(name)
    except ValueError:
        raise ValueError(
            f"{display}: no column {name!r}; the columns are {header}"
        ) from None


# ---------------------------------------------------------------- Parquet


def _parquet_file(src: InputSource):
    import pyarrow as pa

    return pa.BufferReader(src.data) if src.data is not None else src.given


def _read_parquet_table(src: InputSource, columns: list[str] | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(_parquet_file(src), columns=columns)
    except (pa.ArrowInvalid, OSError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{src.display}: cannot read as Parquet: {err}") from err


def _read_parquet(ctx: _ReadContext) -> Iterator[None]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src, report, display = ctx.src, ctx.report, ctx.src.display
    try:
        parquet = pq.ParquetFile(_parquet_file(src))
    except Exception as err:
        raise ValueError(f"{display}: cannot read as Parquet: {err}") from err
    schema_names = parquet.schema_arrow.names
    wanted = (ctx.text_fields + ([ctx.id_field] if ctx.id_field is not None else [])
              + ctx.extra_fields)
    for name in wanted:
        if name not in schema_names:
            raise ValueError(f"{display}: no column {name!r}; the columns are {schema_names}")
    to_text = _parquet_value_decoder(ctx)
    batches = parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS,
                                   columns=list(dict.fromkeys(wanted)))
    record = 0
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowInvalid, OSError) as err:
            raise ValueError(f"{display}: cannot read as Parquet: {err}") from err
        if batch is None:
            return
        text_columns = [_column_values(batch.column(name)) for name in ctx.text_fields]
        ids = _column_values(batch.column(ctx.id_field)) if ctx.id_field is not None else None
        extra_columns = [_column_values(batch.column(name)) for name in ctx.extra_fields]
        for row in range(batch.num_rows):
            yield
            report.records_seen += 1
            location = f"row {record + 1}"
            values = [column[row] for column in text_columns]
            doc_id = ids[row] if ids is not None else None
            record += 1
            if any(v is None for v in values):
                report._skip(display, location, "null text")
                continue
            if ids is not None and doc_id is None:
                report._fail(display, location, f"null id in column {ctx.id_field!r}")
                continue
            try:
                text = "\n".join(to_text(v) for v in values)
                doc_id = to_text(doc_id) if ids is not None else f"{ctx.id_prefix}{record}"
            except UnicodeDecodeError:
                report._skip(display, location, ctx.not_decodable)
                continue
            if _has_surrogates(text) or _has_surrogates(doc_id):
                report._skip(display, location, ctx.not_decodable)
                continue
            if not text.strip():
                report._skip(display, location, "empty text")
                continue
            ctx.add(record - 1, doc_id, text, "row", record,
                    [column[row] for column in extra_columns])


def _column_values(column) -> list:
    """A batch column as Python values; a string column holding bytes that are not
    UTF-8 (Parquet does not check) gives its values with those bytes escaped as
    lone surrogates, so the bad values alone are skipped."""
    try:
        return column.to_pylist()
    except UnicodeDecodeError:
        import pyarrow as pa

        as_bytes = pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()
        return [None if value is None else value.decode("utf-8", "surrogateescape")
                for value in column.cast(as_bytes).to_pylist()]


def _parquet_value_decoder(ctx: _ReadContext) -> Callable[[object], str]:
    def to_text(value) -> str:
        if isinstance(value, bytes):  # binary columns hold encoded text
            return value.decode(ctx.codec)
        return _as_text(value)

    return to_text


# ---------------------------------------------------------------- the dedup copy


def write_deduplicated(
    documents: Documents,
    keep: np.ndarray,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
) -> dict:
    """Write the inputs minus the documents whose ``keep[d]`` is False, each in its format.

    One input: ``out`` is the output file (a directory for a directory input);
    "-" writes it to standard output, uncompressed (one file input only).
    Several inputs: ``out`` is a directory holding one output per input, named
    after the input's unique basename (``Documents.inputs[i].name``).
    A file copy is compressed as its name says (``.gz``, ``.zst``, ``.bz2``,
    ``.xz``; none: plain), whatever the input's compression; several inputs' copies
    keep their input's names, so their compression too.
    Only documents are ever removed: skipped and failed records are written back
    (a directory copy leaves out only files that could not be read or that the
    scan skipped as ignored; the rest of a compressed file past a break cannot be
    copied). File inputs are read again; one that changed since
    :func:`read_documents` is refused.

    Returns ``{"written": records written, "removed": documents removed,
    "outputs": [{"input", "output", "format", "written", "removed", "not_copied"}]}``.
    """
    given = [os.fspath(p) for p in inputs]
    if given != [src.given for src in documents.inputs]:
        raise ValueError(
            f"inputs {given} are not the inputs the documents were read from "
            f"{[src.given for src in documents.inputs]}"
        )
    check_copy_target(given, out, documents.inputs[0].fmt if len(given) == 1 else "auto")
    keep = np.asarray(keep)
    if keep.dtype != np.bool_ or keep.shape != (len(documents),):
        raise ValueError(
            f"keep must be a bool array of shape ({len(documents)},), "
            f"got {keep.dtype} {keep.shape}"
        )
    out = os.fspath(out)
    single = len(documents.inputs) == 1
    targets = [out if single else os.path.join(out, src.name) for src in documents.inputs]
    for src, target in zip(documents.inputs, targets):
        if target != STDOUT:
            _refuse_overwriting_input(src, target)
    if single and documents.inputs[0].fmt != "dir":
        return _write_copies(documents, keep, targets, targets)
    # a folder of copies is replaced whole: a second run leaves exactly its own files
    from .outputs import StagedDirectory

    marked = os.path.isfile(os.path.join(out, DEDUP_MARKER))
    with StagedDirectory(out, lambda name: marked, option="--out") as stage:
        staged = [str(stage) if single else os.path.join(stage, src.name)
                  for src in documents.inputs]
        written = _write_copies(documents, keep, staged, targets)
        with open(os.path.join(stage, DEDUP_MARKER), "w", encoding="utf-8") as f:
            json.dump({"written by": "neardup dedup", "inputs": [src.display for src in
                                                                 documents.inputs],
                       "written": written["written"], "removed": written["removed"]}, f)
    return written


DEDUP_MARKER = ".neardup-dedup.json"  # a folder of copies a later dedup may replace


def check_copy_target(inputs: Sequence[str | os.PathLike], out: str | os.PathLike,
                      fmt: str = "auto") -> None:
    """ValueError where ``out`` cannot take the dedup copy of ``inputs`` read as ``fmt``,
    checked before any read: standard output ("-") takes one file's records, and a
    copy's compression suffix needs a format it can wrap (not Parquet) and, for zstd,
    its package."""
    paths = [os.fspath(p) for p in inputs]
    out = os.fspath(out)
    formats = [_resolve_format(p, fmt) for p in paths]
    if out == STDOUT:
        if len(paths) != 1:
            raise ValueError(f"the dedup copy goes to standard output (-o -) for one input "
                             f"only, got {len(paths)}; give a directory for several")
        if formats[0] == "dir":
            raise ValueError(f"{paths[0]} is a directory: its dedup copy is a directory of "
                             f"files and cannot go to standard output (-o -); give -o DIR")
        return
    if len(paths) != 1 or formats[0] == "dir":
        return  # copies named after their inputs, which were read: they can be written
    compression = compression_of(out)
    if compression is not None and formats[0] == "parquet":
        raise ValueError(f"{out}: Parquet compresses its own columns; name the copy "
                         f".parquet, without the .{out.rsplit('.', 1)[-1]}")
    if compression == "zstd":
        _zstandard(out)


def _write_copies(documents: Documents, keep: np.ndarray, paths: list[str],
                  shown: list[str]) -> dict:
    """Each input's copy written to ``paths[i]`` (reported as ``shown[i]``)."""
    source = np.asarray(documents.source)
    outputs = []
    for index, (src, path, target) in enumerate(zip(documents.inputs, paths, shown)):
        removed = set(documents.record[(source == index) & ~keep].tolist())
        if src.fmt == "dir":
            counts = _write_dir(src, removed, path)
        else:
            _check_unchanged(src)
            with _open_output(path) as out:
                counts = _WRITERS[src.fmt](src, removed, out)
        outputs.append({"input": src.display, "output": target, "format": src.fmt,
                        "written": counts[0], "removed": len(removed),
                        "not_copied": counts[1]})
    return {
        "written": sum(o["written"] for o in outputs),
        "removed": sum(o["removed"] for o in outputs),
        "outputs": outputs,
    }


def _refuse_overwriting_input(src: InputSource, target: str) -> None:
    if src.given == STDIN:
        return
    source_path, target_path = os.path.realpath(src.given), os.path.realpath(target)
    inside = src.fmt == "dir" and os.path.commonpath([source_path, target_path]) == source_path
    if source_path == target_path or inside:
        raise ValueError(f"the dedup copy {target} would overwrite or sit inside its input "
                         f"{src.given}")
    if src.fmt != "dir" and os.path.isdir(target):
        raise ValueError(f"{target} is a directory; the dedup copy of {src.given} is a file")


def _check_unchanged(src: InputSource) -> None:
    if src.stat is None:
        return
    st = os.stat(src.given)
    if (st.st_size, st.st_mtime_ns) != src.stat:
        raise RuntimeError(f"{src.given} changed since it was read; read it again")


class _AtomicFile:
    """Open ``path + '.partial'``; on success rename it onto ``path``, on error remove it."""

    def __init__(self, path: str):
        self.path = path
        self.partial = f"{path}.partial"

    def __enter__(self) -> str:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        return self.partial

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            os.replace(self.partial, self.path)
        elif os.path.exists(self.partial):
            os.remove(self.partial)


def _write_lines(src: InputSource, removed: set[int], out) -> tuple[int, int]:
    """Copy the input's lines byte for byte, leaving out removed records (line indices)."""
    written = 0
    with _open_binary(src) as f:
        for record, raw in enumerate(f):
            if record in removed:
                continue
            out.write(raw)
            if src.fmt == "lines" or raw.strip():  # jsonl blank lines are not records
                written += 1
    return written, int(src.damaged is not None)


def _write_table(src: InputSource, removed: set[int], out) -> tuple[int, int]:
    """Rewrite the kept rows with the csv module; a row it cannot parse is copied as it is."""
    written = 0
    codec = _text_codec(src.encoding)
    text_out = io.TextIOWrapper(out, encoding=src.encoding, errors="surrogateescape",
                                newline="")
    try:
        writer = csv.writer(text_out, delimiter=src.delimiter,
                            lineterminator=src.line_terminator)
        # the csv module quotes a field holding "\r" only where the line terminator has
        # one; unquoted, it would end the row when read again
        quoting = csv.writer(text_out, delimiter=src.delimiter,
                             lineterminator=src.line_terminator, quoting=csv.QUOTE_ALL)
        bare_cr = "\r" not in src.line_terminator

        def write_row(row: list[str]) -> None:
            cr = bare_cr and any("\r" in value for value in row)
            (quoting if cr else writer).writerow(row)

        with _open_binary(src) as f, contextlib.closing(_csv_rows(f, codec,
                                                                 src.delimiter)) as rows:
            header = next(rows, None)
            if header is not None:
                write_row(header[2])
            for record, (_, _, row, _, text) in enumerate(rows):
                if record in removed:
                    continue
                if row is None:  # not parsed, so not rewritten: its lines, byte for byte
                    text_out.write(text)
                else:
                    write_row(row)
                written += 1
        text_out.flush()
    finally:
        text_out.detach()  # the stream is the caller's to close
    return written, int(src.damaged is not None)


def _write_parquet(src: InputSource, removed: set[int], out) -> tuple[int, int]:
    import pyarrow.parquet as pq

    from . import columns

    table = _read_parquet_table(src)
    mask = np.ones(table.num_rows, dtype=bool)
    mask[np.fromiter(removed, dtype=np.int64, count=len(removed))] = False
    kept = table.filter(columns.numbers(mask))
    pq.write_table(kept, out)
    return kept.num_rows, 0


def _write_dir(src: InputSource, removed: set[int], target: str) -> tuple[int, int]:
    written = 0
    for record, rel in enumerate(src.entries):
        if record in removed or record in src.not_copied:
            continue
        destination = os.path.join(target, rel)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copyfile(os.path.join(src.given, rel), destination)
        written += 1
    os.makedirs(target, exist_ok=True)
    return written, len(src.not_copied)


# a file format's writer: (input, removed record indices, binary stream) -> (written, not
# copied); the stream is opened, compressed and closed by _write_copies
_WRITERS = {
    "lines": _write_lines,
    "jsonl": _write_lines,
    "json": _write_json,
    "csv": _write_table,
    "tsv": _write_table,
    "parquet": _write_parquet,
}
