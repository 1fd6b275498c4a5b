"""CSV and TSV: a record is a data row after the header; the dedup copy is the kept
rows, written back by the csv module.

The header names the columns; a text or id column missing from it is a ValueError
before any row is read. A row's text is its text columns joined by "\\n", its id the
``id_field`` cell, else the row number (the header is row 0; blank lines are not rows).
A row with a field count other than the header's fails; undecodable bytes cost their
row only (skipped as "not UTF-8", or the encoding given).

A bad record costs itself only: a quote left open fails its record ("quote opened on
line 3 is never closed") and reading goes on at the next line, so the rows after it are
read as rows, not merged into it (one that a later quote closes just before a delimiter
or line break looks like a field over several lines, and is read as one).

The dedup copy (:func:`_write_table`) is rewritten in the input's delimiter and line
ending, after the input's UTF-8 byte-order mark if it has one; a row the csv module
cannot parse is copied as it is. Needs an ASCII-compatible encoding.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import itertools
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator

from .bounded import DISCARD_BYTES, too_large
from .compression import _open_binary
from .documents import InputSource, _ReadContext, text_codec
from .format import Format, SparkReader
from .lines import count_lines


def _read_table(ctx: _ReadContext) -> Iterator[None]:
    src = ctx.src
    src.record_bound = ctx.max_record_bytes  # the copy skips the same rows the same way

    def first_line(line: str) -> None:  # the copy ends its lines as the header does
        src.line_terminator = "\r\n" if line.endswith("\r\n") else "\n"

    with _open_binary(src) as f, contextlib.closing(_csv_rows(
            f, ctx.codec, src.delimiter, ctx.max_record_bytes, first_line)) as rows:
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
    oversized = too_large(ctx.max_record_bytes) if ctx.max_record_bytes is not None else None
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
            (report._skip if error == oversized else report._fail)(display, location, error)
            continue
        if len(row) != width:
            report._fail(display, location, f"row has {len(row)} fields, header has {width}")
            continue
        text = "\n".join(row[c] for c in text_columns)
        doc_id = row[id_column] if id_column is not None else f"{ctx.id_prefix}{row_number}"
        ctx.add_row(record, doc_id, text, location, row_number,
                    [row[c] if row[c].strip() else None for c in extra_columns])


def _csv_rows(binary, codec: str, delimiter: str, bound: int | None = None,
              on_first_line: Callable[[str], None] | None = None,
              copy_skipped: Callable[[str], None] | None = None
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

    ``bound``: a row longer than that many characters (its lines together) is not kept:
    the rest of it is consumed a piece at a time (:class:`_RowSkip` follows its quoting
    across lines, so a long quoted field that spans lines stays one record) and the row
    comes back as None with the reason :func:`~neardup.sources.bounded.too_large` gives,
    reading going on after it. Its quoting is the csv module's (a quote that closes a
    field spanning lines with text after it ends the field there); a quote still open at
    the end of the file fails the row, which then holds the rest of the file. With
    ``copy_skipped``, each piece of such a row is handed to it as it is read (the copy
    keeps the row's characters unchanged).
    ``on_first_line`` gets the file's first line (with its line end).
    """
    stream = io.TextIOWrapper(binary, encoding=codec, errors="surrogateescape", newline="")
    previous_limit = csv.field_size_limit(2**31 - 1)  # documents can be long; restored below
    pending: deque[str] = deque()  # lines to read again after a quote left open
    consumed: list[str] = []  # the lines of the row being parsed
    at_end: list[bool] = [False]  # the row being parsed ran into the end of the file
    held = [0]  # characters of the lines in consumed
    skipped: list[_RowSkip | None] = [None]  # the row too long, once consumed
    cut_crlf = [False]  # that row's last piece ended with "\r": a "\n" may follow

    def lines() -> Iterator[str]:  # a new one after each resync, which fills pending
        keep = consumed.append
        while pending:
            line = pending.popleft()
            keep(line)
            held[0] += len(line)
            yield line
        if bound is None:
            for line in stream:
                keep(line)
                yield line
        while bound is not None:
            room = bound - held[0]
            line = stream.readline(room + 1)
            if not line:
                break
            if cut_crlf[0]:  # the "\n" of a skipped row's last "\r\n", read apart
                cut_crlf[0] = False
                if line == "\n":
                    if copy_skipped is not None:
                        copy_skipped(line)
                    continue
            if len(line) > room:
                skip = _RowSkip(delimiter, copy_skipped)
                for piece in (*consumed, line):
                    skip.feed(piece)
                while not skip.ended and (piece := stream.readline(DISCARD_BYTES)):
                    skip.feed(piece)
                skipped[0] = skip
                cut_crlf[0] = skip.after_cr
                raise _RowTooLarge
            keep(line)
            held[0] += len(line)
            yield line
        at_end[0] = True

    field_end = re.compile(f"[{re.escape(delimiter)}\r\n]")
    try:
        reader = csv.reader(lines(), delimiter=delimiter)
        row_number, next_line = 0, 1
        first_line_seen = on_first_line
        while True:
            consumed.clear()
            held[0] = 0
            oversized = False
            try:
                row, error = next(reader), ""
            except StopIteration:
                return
            except csv.Error as err:
                row, error = None, f"malformed row: {err}"
            except _RowTooLarge:  # its lines, consumed to where its quoting ends it
                skip, skipped[0] = skipped[0], None
                row, error, oversized = None, too_large(bound), skip.lines - len(consumed)
                if skip.in_quotes:  # the file ended inside a quoted field
                    error = (f"quote opened on line {next_line + skip.opened} is never "
                             f"closed (the rest of the file is this row, {error})")
                reader = csv.reader(lines(), delimiter=delimiter)
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
            if first_line_seen is not None and consumed:
                first_line_seen(consumed[0])
                first_line_seen = None
            first_line = next_line
            next_line += len(consumed) + oversized
            if row is not None and not row:
                continue
            # a row too long was handed to copy_skipped as it was read
            raw = "" if row is not None or oversized else "".join(consumed)
            yield row_number, first_line, row, error, raw
            row_number += 1
    finally:
        csv.field_size_limit(previous_limit)
        stream.detach()


class _RowTooLarge(Exception):
    """A row ran past the bound while its lines were read."""


class _RowSkip:
    """A CSV row consumed a piece at a time from its start, keeping none of it: where it
    ends follows the csv module's quoting, so a line break inside a quoted field does not
    end it. The pieces are lines or parts of one (a text stream's ``readline``), so a line
    break outside quotes ends a piece; ``ended`` once one has ended the row.

    The csv module's grammar for a field: it is quoted if it starts with '"'; inside,
    '""' is a quote and a lone '"' closes it; text after the closing quote joins the
    field; anywhere else a '"' is text. Scanning jumps from quote to quote (``str.find``)
    and, outside quotes, from field end to field end: no step per character."""

    _START, _UNQUOTED, _QUOTED, _QUOTE = range(4)  # at a field's start, in one, in quotes,
    # just past a quote inside quotes (closing, or the first of '""')

    def __init__(self, delimiter: str, copy: Callable[[str], None] | None = None):
        self.field_end = re.compile(f"[{re.escape(delimiter)}\r\n]")
        self.copy = copy
        self.state = self._START
        self.lines = 0  # physical lines consumed (the last one counted, ended or not)
        self.opened = 0  # the 0-based line, from the row's first, of the open quote
        self.ended = False
        self.after_cr = False  # the last piece ended with "\r" (a "\n" may follow it)
        self._line_open = False  # the last piece did not end its line

    @property
    def in_quotes(self) -> bool:
        return self.state == self._QUOTED

    def feed(self, piece: str) -> None:
        if self.copy is not None:
            self.copy(piece)
        if not self._line_open and not (self.after_cr and piece == "\n"):
            self.lines += 1  # ("\r" and "\n" of one line end come apart at a piece's end)
        state, pos, end = self.state, 0, len(piece)
        while pos < end:
            if state == self._QUOTED:
                pos = piece.find('"', pos) + 1
                if pos == 0:
                    break
                state = self._QUOTE
            elif state in (self._QUOTE, self._START) and piece[pos] == '"':
                if state == self._START:
                    self.opened = self.lines - 1
                state, pos = self._QUOTED, pos + 1
            else:  # an unquoted field or the text after a closing quote: to its end
                match = self.field_end.search(piece, pos)
                if match is None:
                    state = self._UNQUOTED
                    break
                state, pos = self._START, match.end()
        self.state = state
        self.after_cr = piece.endswith("\r")
        self._line_open = not piece.endswith(("\n", "\r"))
        # a line break ends the piece, and the row when it was outside quotes
        self.ended = not self._line_open and state == self._START


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
    """Where column ``name`` is; ValueError when it is missing or named twice (which of
    them holds the text, or the id, would be a guess)."""
    try:
        index = header.index(name)
    except ValueError:
        raise ValueError(
            f"{display}: no column {name!r}; the columns are {header}"
        ) from None
    if header.count(name) > 1:
        where = [str(k + 1) for k, column in enumerate(header) if column == name]
        raise ValueError(f"{display}: the header names column {name!r} {len(where)} times "
                         f"(columns {', '.join(where)}); rename all but one")
    return index


def _write_table(src: InputSource, removed: set[int], out, edits: dict[int, str] | None = None,
                 text_field: str = "text", annotations=None) -> tuple[int, int]:
    """Rewrite the kept rows with the csv module; a row it cannot parse is copied as it is.
    ``edits``: row -> its new text, set in column ``text_field``. ``annotations`` (a
    :class:`~neardup.sources.annotations.RecordAnnotations`): columns added after the
    last, in the header and every row written (empty cells for a row that is not a
    document)."""
    written = 0
    edits = edits or {}
    codec = text_codec(src.encoding)
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

        if codec == "utf-8-sig":  # reading drops a UTF-8 byte-order mark; the copy keeps it
            with _open_binary(src) as f:  # opened twice: a decompressing stream cannot seek
                if f.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8:
                    text_out.write("\ufeff")
        with _open_binary(src) as f, contextlib.closing(_csv_rows(
                f, codec, src.delimiter, src.record_bound, copy_skipped=text_out.write)) as rows:
            header = next(rows, None)
            if header is not None:
                if annotations is not None:
                    annotations.check_names(header[2], src.display)  # before any row
                    header[2].extend(annotations.names)
                write_row(header[2])
                column = header[2].index(text_field) if edits else -1
            for record, (_, _, row, _, text) in enumerate(rows):
                if record in removed:
                    continue
                if record in edits and row is not None:
                    row = [*row[:column], edits[record], *row[column + 1:]]
                if annotations is not None and row is not None:
                    row.extend(annotations.cells(record))
                if row is None:  # not parsed, so not rewritten: its lines, byte for byte
                    text_out.write(text)  # ("" for a row too long: copied as it was read)
                else:
                    write_row(row)
                written += 1
        text_out.flush()
    finally:
        text_out.detach()  # the stream is the caller's to close
    return written, int(src.damaged is not None)


def _looks_delimited(lines: list[str], delimiter: str) -> bool:
    """A header and rows of two or more fields each, all as many."""
    widths = {len(row) for row in csv.reader(lines, delimiter=delimiter)}
    return len(widths) == 1 and widths.pop() >= 2 and len(lines) > 1


def _looks_tsv(lines: list[str]) -> bool:
    return _looks_delimited(lines, "\t")


def _looks_csv(lines: list[str]) -> bool:  # (a head that reads as both is TSV)
    return _looks_delimited(lines, ",") and not _looks_tsv(lines)


_SPARK = SparkReader("csv", "neardup.spark.read:_csv_records")
# a row's lines are counted: an upper bound on the rows, but no bound on a row's length
# (a quoted field spans lines)
CSV = Format(
    name="csv", title="CSV", described="a CSV file", suffixes=(".csv",), read=_read_table,
    copy=_write_table, annotates=True, delimiter=",", record_unit="row", count=count_lines,
    spark=_SPARK, looks_like=_looks_csv,
)
TSV = Format(
    name="tsv", title="TSV", described="a TSV file", suffixes=(".tsv", ".tab"),
    read=_read_table, copy=_write_table, annotates=True, delimiter="\t", record_unit="row",
    count=count_lines, spark=_SPARK, looks_like=_looks_tsv,
)
