"""Sources: inputs become :class:`Documents`; the dedup copy goes back out in each input's format.

Formats (``fmt="auto"`` guesses from the path's suffix; a folder is ``dir``, a file
whose suffix names no format ``lines``). Each is one module exporting a
:class:`~neardup.sources.format.Format`, listed in :mod:`neardup.sources.registry`:

========  =============================  =========================================
fmt       a record is                    document id (several inputs: prefixed)
========  =============================  =========================================
dir       a file under the root          path relative to the root
jsonl     a non-blank line (JSON object) ``id_field`` value, else line number
json      an element of the top-level    ``id_field`` value, else the element's
          array (a lone object: itself)  1-based position
csv/tsv   a data row after the header    ``id_field`` value, else row number
parquet   a row                          ``id_field`` value, else row number
arrow     a row (Arrow IPC, Feather)     ``id_field`` value, else row number
lines     a line                         line number
========  =============================  =========================================

This package's entry point (this module) checks the options, resolves each input's
format (:mod:`~neardup.sources.registry`) and hands the input to its format's reader;
:mod:`~neardup.sources.copies` hands its dedup copy to its format's writer:

===============  ==========================================================
module           reads and writes back
===============  ==========================================================
``format``       :class:`Format`: what neardup knows about a format, in one object
``registry``     the formats, one line each; guessing one from a path
``copies``       the dedup copy: the inputs minus the removed records, edits, fields
``directory``    directories (the walk, .gitignore rules, the file copy)
``lines``        line files; the byte-for-byte line copy JSON Lines shares
``jsonl``        JSON Lines (Arrow's block parser, Python's rules as the judge)
``jsonfile``     JSON files; the JSON object rule JSON Lines shares
``delimited``    CSV and TSV (quote resync)
``parquet``      Parquet; the batch reader and table copy Arrow IPC shares
``arrow``        Arrow IPC (Feather) files and streams
``compression``  compressed streams in and out; copies written whole or not at all
``bounded``      reads that hold at most a bound (lines, files, streams kept whole)
``documents``    what they fill: Documents, ReadReport, InputSource, the builder
``frames``       data already in memory (DataFrames, Arrow, lists) as Documents
``annotations``  fields a dedup copy adds to each record (``dedup --annotate``)
``itemsets``     records that already are sets: (user, item) rows, list fields
``sniff``        what an input's first lines look like (a hint when nothing was read)
===============  ==========================================================

Compressed files (``.gz``, ``.zst``/``.zstd``, ``.bz2``, ``.xz`` after the format's
suffix: ``docs.jsonl.gz``) are read as a stream, record for record as the file they
hold; a corrupt or truncated stream ends its file there, the rest one failed record
(see :mod:`neardup.sources.compression`); so is each compressed file of a directory.
Directories skip version-control folders and what the tree's ``.gitignore`` files ignore,
each counted as skipped, unless ``respect_ignore=False``, and a link that leads outside
the directory ("link outside the input"), unless ``follow_links=True`` (see
:mod:`neardup.sources.directory`). Read in chunks under a memory limit, no read holds
more than a bound (see :mod:`neardup.sources.bounded`).

Guarantees:

* Accounting is closed: every record read is exactly one of processed, skipped
  (cannot be read as text, or has no text) or failed (malformed, unreadable);
  :meth:`ReadReport.check` verifies ``records_seen == processed + skipped + failed``.
  A read where no record was processed and some failed is refused (ValueError: the
  reasons, the fields the records have, the format the content looks like) unless
  ``allow_empty=True``.
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
  file") without being opened; a device given as an input is refused.
* The dedup copy (:func:`~neardup.sources.copies.write_deduplicated`) removes exactly
  the documents whose ``keep`` is False; skipped and failed records are written back
  (see :mod:`neardup.sources.copies`).

Line-based formats (lines, jsonl, csv, tsv) need an ASCII-compatible encoding.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
import sys
from collections.abc import Iterator, Sequence

from .._core import interrupt, remote
from .._core.choices import not_one_of
from .annotations import check_annotation_target
from .bounded import StreamTooLarge, read_at_most
from .compression import _input_compression, compression_of
from .directory import BINARY_PROBE_BYTES, DEDUP_MARKER, VCS_FOLDERS
from .documents import (
    IGNORED,
    ROUTINE_SKIPS,
    STDIN,
    STDIN_NAME,
    STDOUT,
    VCS_FOLDER,
    Documents,
    InputSource,
    Problem,
    ReadReport,
    _DocumentsBuilder,
    _ReadContext,
    as_text,
    has_surrogates,
    not_a_string,
    printable,
    text_codec,
    text_not_strings,
)
from .format import Format
from .jsonfile import JSONL_FIELDS_NAMED, name_the_fields
from .lines import LINE_BLOCK_BYTES, decode_line, edited_line
from .options import SourceOptions, as_paths
from .parquet import PARQUET_BATCH_ROWS, column_values
from .registry import (
    ANNOTATED_FORMATS,
    NAMES,
    find_format,
    format_named,
    guess_format,
    resolve_format,
)
from .sniff import SNIFFED_INPUTS, format_hint

# What this package gives users and the packages above it (spark reads with the same
# rules), wherever it is defined. A constant is read where it is defined: patch
# neardup.sources.lines.LINE_BLOCK_BYTES, not ours.
__all__ = [
    "ANNOTATED_FORMATS", "FORMATS", "STDIN", "STDIN_NAME", "STDOUT", "IGNORED", "VCS_FOLDER",
    "VCS_FOLDERS",
    "DEDUP_MARKER", "BINARY_PROBE_BYTES", "LINE_BLOCK_BYTES", "PARQUET_BATCH_ROWS",
    "JSONL_FIELDS_NAMED", "ROUTINE_SKIPS", "Documents", "Format", "InputSource",
    "Problem", "ReadReport",
    "SourceOptions", "StreamTooLarge", "as_paths", "read_documents", "read_document_chunks",
    "check_annotation_target", "check_source_options", "compression_of", "as_text",
    "column_values", "decode_line", "edited_line", "encoding_label", "find_format",
    "format_hint", "format_named", "guess_format", "has_surrogates", "name_the_fields",
    "not_a_string",
    "printable", "resolve_format", "text_codec", "text_not_strings", "unique_names",
]

FORMATS = NAMES  # fmt's values: "auto" and each format's name (neardup.sources.registry)


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
    follow_links: bool = False,
    text_strings: bool = False,
    allow_empty: bool = False,
    text_optional: bool = False,
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

    follow_links: directories read a link to a file outside them (by default it is
        skipped as "link outside the input"; links inside are read either way).
    text_strings: a text field (JSON, Parquet) that holds a number, a boolean, a list
        or an object is skipped with its reason (:func:`not_a_string`) instead of read
        as its JSON text: a units run writes the text back into the field.
    allow_empty: go on when no record was processed and some failed; by default that
        read raises ValueError naming the reasons, the fields the records have and the
        format an input's content looks like (a wrong ``text_fields``, ``id_field`` or
        format would otherwise run on no documents, and dedup copy every record).
    text_optional: a record that has none of the ``text_fields`` (a table without
        those columns, a JSON record without those fields) is a document with an
        empty text instead of a failure (a run on embeddings alone compares vectors);
        a text that is present but null or blank is skipped as ever.

    Directories: symlinked directories are never entered (no loops); files with
    a NUL byte in their first 8 KiB are skipped as "binary file", named pipes,
    sockets and devices as "not a regular file" (never opened); a ``.gz``,
    ``.zst``, ``.bz2`` or ``.xz`` file is decompressed (its id keeps its name);
    empty files are documents. A named pipe given as an input is read once, like
    standard input; a character or block device is refused (ValueError).
    Records with blank text in the other formats are skipped ("empty line",
    "empty text").
    """
    report = ReadReport(max_problems=max_problems)
    builder = _DocumentsBuilder(report, _field_names(extra_fields))
    sources: list[InputSource] = []
    for _ in _read_inputs(inputs, fmt, text_fields, id_field, include, exclude, delimiter,
                          encoding, max_problems, progress, builder, sources,
                          respect_ignore, follow_links, text_strings=text_strings,
                          allow_empty=allow_empty, text_optional=text_optional):
        interrupt.check()  # between records: where Ctrl-C and SIGTERM are acted on
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
    follow_links: bool = False,
    max_record_bytes: int | None = None,
    max_stream_bytes: int | None = None,
    text_strings: bool = False,
    allow_empty: bool = False,
    text_optional: bool = False,
) -> tuple[Iterator[Documents], ReadReport, list[InputSource]]:
    """:func:`read_documents` a chunk at a time: (chunks, report, inputs).

    Each chunk is a :class:`Documents` of consecutive documents holding at least
    ``chunk_chars`` characters of text or ``chunk_docs`` documents, whichever comes
    first (the last chunk less); ``chunk.start`` is its
    first document number. Concatenated, the chunks' ids, texts, sources and records
    are exactly those :func:`read_documents` returns (same renames of repeated ids,
    which needs every id so far in memory), and ``report`` is the same once the
    chunks are exhausted (then checked; a read that processed nothing raises there,
    unless ``allow_empty``); ``inputs`` fills as the inputs are opened.
    Options are checked here, before any read.
    Memory: one chunk's texts plus one block of the input (a line block of
    ``read_lines.LINE_BLOCK_BYTES``, a JSON Lines block of ``jsonl.BLOCK_BYTES``, a Parquet
    batch of ``read_parquet.PARQUET_BATCH_ROWS`` rows, one file of a directory, one CSV
    row; a JSON file is read whole).
    ``max_record_bytes``: no line, CSV/TSV row or directory file longer than this is kept;
    each is skipped as "record larger than N bytes", consumed unread
    (:mod:`neardup.sources.bounded`). ``max_stream_bytes``: what an input kept whole
    (standard input, a named pipe, a JSON file) may hold; past it the read raises
    :class:`StreamTooLarge`. None (the default): no bound.
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
    for name, bound in (("max_record_bytes", max_record_bytes),
                        ("max_stream_bytes", max_stream_bytes)):
        if bound is not None and (not isinstance(bound, int) or bound < 0):
            raise ValueError(f"{name} must be a non-negative integer or None, got {bound!r}")
    records = _read_inputs(inputs, fmt, text_fields, id_field, include, exclude, delimiter,
                           encoding, max_problems, progress, builder, sources,
                           respect_ignore, follow_links, max_record_bytes, max_stream_bytes,
                           text_strings, allow_empty, text_optional)
    next(records)  # runs the checks now, not at the first chunk

    def chunks() -> Iterator[Documents]:
        for _ in records:
            interrupt.check()
            if builder.pending_chars >= chunk_chars or len(builder.texts) >= max_docs:
                yield builder.take(sources)
        if builder.texts:
            yield builder.take(sources)

    return chunks(), report, sources


def _read_inputs(inputs, fmt, text_fields, id_field, include, exclude, delimiter, encoding,
                 max_problems, progress, builder, sources, respect_ignore=True,
                 follow_links=False, max_record_bytes=None,
                 max_stream_bytes=None, text_strings=False,
                 allow_empty=False, text_optional=False) -> Iterator[None]:
    """Read every input into ``builder``, yielding between records (where a chunk may end).

    The first yield comes after the options are checked, before any record is read; the
    last record read, the report is checked, and a read that processed nothing while
    records failed is refused unless ``allow_empty``.
    """
    paths = [os.fspath(p) for p in inputs]
    check_source_options(paths, fmt, text_fields, id_field, delimiter, encoding, max_problems)
    for name, value in (("respect_ignore", respect_ignore), ("follow_links", follow_links),
                        ("allow_empty", allow_empty)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")
    text_fields = list(text_fields)
    codec = text_codec(encoding)
    not_decodable = f"not {encoding_label(encoding)}"

    resolved = [resolve_format(p, fmt) for p in paths]
    specs = [format_named(f) for f in resolved]
    compressions = [_input_compression(p, spec) for p, spec in zip(paths, specs, strict=True)]
    extra_fields = list(builder.fields)
    if extra_fields:
        for path, spec in zip(paths, specs, strict=True):
            if not spec.fields:
                shown = STDIN_NAME if path == STDIN else printable(path)
                raise ValueError(f"{shown}: {spec.described} has no fields to keep "
                                 f"{extra_fields}")
    names = unique_names(paths, resolved)
    several = len(paths) > 1
    report = builder.report
    yield
    for index, (path, spec, name) in enumerate(zip(paths, specs, names, strict=True)):
        src = InputSource(
            given=path, fmt=spec.name, name=name, encoding=encoding,
            delimiter=delimiter or spec.delimiter, compression=compressions[index],
        )
        sources.append(src)
        if path == STDIN:
            src.data = _read_stdin(encoding, max_stream_bytes)
        elif remote.is_url(path):
            src.stat = remote.stat_token(path)  # size and ETag: the copy's re-read checks
        elif not spec.directory:
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode):
                src.stat = (st.st_size, st.st_mtime_ns)
            else:  # a named pipe given by name is a stream: read once and kept, like stdin
                with open(path, "rb") as pipe:
                    src.data = _kept_whole(pipe, max_stream_bytes, printable(path))
        shown_name = printable(name)
        context = _ReadContext(
            index=index, src=src, builder=builder, report=report, codec=codec,
            not_decodable=not_decodable, text_fields=text_fields, id_field=id_field,
            id_prefix=((f"{shown_name}/" if spec.directory else f"{shown_name}:")
                       if several else ""),
            extra_fields=extra_fields, max_record_bytes=max_record_bytes,
            max_stream_bytes=max_stream_bytes, text_strings=text_strings, include=include,
            exclude=exclude, progress=progress, respect_ignore=respect_ignore,
            follow_links=follow_links, text_optional=text_optional,
        )
        yield from spec.read(context)
        if src.damaged is not None:  # the stream broke: the rest of the file is one record
            report.records_seen += 1
            report._fail(src.display, "", src.damaged)
    report.check()
    if not allow_empty:
        report.refuse_nothing_processed(  # the hints read heads of files: only when refused
            hint for hint in map(format_hint, sources[:SNIFFED_INPUTS]) if hint)


# ---------------------------------------------------------------- validation, naming


def check_source_options(paths, fmt, text_fields, id_field, delimiter, encoding,
                         max_problems) -> None:
    if fmt not in FORMATS:
        raise not_one_of("fmt", fmt, FORMATS)
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
        if remote.is_url(path):
            remote.stat_token(path)  # a missing bucket or key, no credentials: named now
            continue
        if path != STDIN and not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        if path != STDIN:  # a device never ends (/dev/zero) or is no input at all
            mode = os.stat(path).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                kind = "character" if stat.S_ISCHR(mode) else "block"
                raise ValueError(f"{printable(path)} is a {kind} device, not a file: give a "
                                 f"file, a directory or - (standard input)")


def _field_names(extra_fields: Sequence[str]) -> list[str]:
    if isinstance(extra_fields, str) or not all(isinstance(f, str) and f for f in extra_fields):
        raise ValueError(f"extra_fields must be a list of names, got {extra_fields!r}")
    return list(dict.fromkeys(extra_fields))


def unique_names(paths: Sequence[str], formats: Sequence[str]) -> list[str]:
    """Each input's basename, made unique deterministically: 'a.txt', 'a-2.txt', ..."""
    bases = []
    for path, path_fmt in zip(paths, formats, strict=True):
        if path == STDIN:
            bases.append("stdin" + format_named(path_fmt).copy_suffix)
        else:
            bases.append(os.path.basename(os.path.abspath(remote.shown(path))) or "root")
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


def encoding_label(encoding: str) -> str:
    name = codecs.lookup(encoding).name
    return "UTF-8" if name == "utf-8" else name


def _read_stdin(encoding: str, bound: int | None = None) -> bytes:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return _kept_whole(buffer, bound, STDIN_NAME)
    # a text stream without bytes (tests, notebooks)
    text = sys.stdin.read() if bound is None else sys.stdin.read(bound + 1)
    return _kept_whole(io.BytesIO(text.encode(encoding)), bound, STDIN_NAME)


def _kept_whole(stream, bound: int | None, shown: str) -> bytes:
    """A stream's bytes, kept for the dedup copy; StreamTooLarge past ``bound`` bytes."""
    data = read_at_most(stream, bound)
    if data is None:
        raise StreamTooLarge(
            f"{shown} is a stream, kept whole while it is read, and it holds more than "
            f"{bound:,} bytes, what the memory limit leaves for it: save it to a file and "
            f"give the file, or give a larger --memory-limit")
    return data
