"""Line files and JSON Lines: a record is a line; the dedup copy is the input's lines
byte for byte, minus the removed ones.

Lines (``fmt="lines"``): every line is a record, a blank one skipped ("empty line"),
its id the line number. Lines are read and decoded a block of ``LINE_BLOCK_BYTES`` at
a time; a byte the encoding cannot decode costs its line only (skipped as "not
UTF-8", or the encoding given).

JSON Lines: a non-blank line is a record (a blank line is none), a JSON object whose
text fields make the text (:func:`neardup.sources.jsonfile._add_json_object`); its id is the
``id_field`` value, else the line number. A block of lines goes through Arrow's parser
when that gives the answer reading line by line would (:mod:`neardup.sources.jsonl`), else line
by line, so a malformed line fails itself only ("malformed JSON", "not a JSON object").

Both need an ASCII-compatible encoding: a line ends at the byte ``b"\\n"``.
:func:`_write_lines` copies the lines that are not removed as they are, blank lines,
failed and skipped records included.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator

import numpy as np

from .bounded import line_blocks, too_large
from .compression import _open_binary
from .documents import InputSource, _ReadContext, has_surrogates
from .format import Format, RecordCount

LINE_BLOCK_BYTES = 1 << 16  # lines are read and decoded a block at a time
COPY_PIECE_BYTES = 1 << 20  # the copy holds no more of a line it copies unchanged
SCAN_BLOCK_BYTES = 1 << 23  # count_lines reads a file this many bytes at a time
_JSON_SPACE = b" \t\r\n"  # JSON's whitespace, around a line's object


def _read_lines(ctx: _ReadContext) -> Iterator[None]:
    """Lines in blocks of about LINE_BLOCK_BYTES: one decode per block when it is clean,
    per line when not (a bad byte costs its line only)."""
    src, report, display = ctx.src, ctx.report, ctx.src.display
    bound = ctx.max_record_bytes
    first = 0  # record number of the block's first line
    with _open_binary(src) as f:
        for block, too_long in line_blocks(f, LINE_BLOCK_BYTES, bound):
            raws = block.split(b"\n")
            if block.endswith(b"\n"):
                raws.pop()
            # b"\n" ends a line; it never occurs inside a character of an ASCII-compatible
            # encoding, so a block decodes as its lines do
            try:
                text: str | None = block.decode(src.encoding)
            except UnicodeDecodeError:
                text = None
            if text is not None and not has_surrogates(text):  # utf-7 can make them
                lines: list[str | None] = text.split("\n")
                if block.endswith(b"\n"):
                    lines.pop()
                if first == 0:
                    lines[0] = lines[0].removeprefix("\ufeff")
            else:
                lines = [_decode_line_or_none(raw, first + k, src.encoding)
                         for k, raw in enumerate(raws)]
            report.records_seen += len(lines)
            records, texts = [], []
            for record, line in enumerate(lines, start=first):
                if too_long and record - first in too_long:
                    report._skip(display, f"line {record + 1}", too_large(bound))
                    continue
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
        line = decode_line(raw, record, encoding)
    except UnicodeDecodeError:
        return None
    return None if has_surrogates(line) else line


def edited_line(raw: bytes, record: int, text: str, text_field: str, fmt: str,
                encoding: str) -> bytes:
    """Line ``record`` (``raw``, its ending included) of a ``fmt`` ("lines" or "jsonl")
    input with its text replaced by ``text``: what the dedup copy writes for an edited
    record (the Spark copy calls it too, so both write the same bytes)."""
    ending = b"\n" if raw.endswith(b"\n") else b""
    bom = codecs.BOM_UTF8 if record == 0 and raw.startswith(codecs.BOM_UTF8) else b""
    if fmt == "lines":  # a CRLF line keeps its CR, whatever was removed before it
        cr = "\r" if raw.endswith(b"\r\n") and not text.endswith("\r") else ""
        return bom + (text + cr).encode(encoding) + ending
    line = raw[len(bom):].decode(encoding)
    obj = json.loads(line)
    obj[text_field] = text
    crlf = b"\r" if raw.endswith(b"\r\n") else b""
    return bom + json.dumps(obj, ensure_ascii=False).encode(encoding) + crlf + ending


def annotated_line(raw: bytes, fields: str, encoding: str) -> bytes:
    """A JSON Lines document's line (``raw``, its ending included) with ``fields``
    (``, "name": value`` ...) after its object's last field: the bytes before them and
    the line's ending unchanged."""
    body = raw.rstrip(_JSON_SPACE)
    inside = body[:-1]  # a document's line is one JSON object: it ends with "}"
    if inside.rstrip(_JSON_SPACE).endswith(b"{"):  # an object with no field: no comma
        fields = fields.removeprefix(", ")
    return inside + fields.encode(encoding, "surrogateescape") + b"}" + raw[len(body):]


def decode_line(raw: bytes, record: int, encoding: str) -> str:
    text = raw.decode(encoding)
    return text.removeprefix("\ufeff") if record == 0 else text  # byte-order mark


def _write_lines(src: InputSource, removed: set[int], out, edits: dict[int, str] | None = None,
                 text_field: str = "text", annotations=None) -> tuple[int, int]:
    """Copy the input's lines byte for byte, leaving out removed records (line indices).

    ``annotations`` (JSON Lines, a :class:`~neardup.sources.annotations.RecordAnnotations`):
    fields added to each document's object (:func:`annotated_line`).

    ``edits``: record -> its new text (units removed inside it): a line file's line is
    that text and the line's own ending; a JSON Lines record is its object with
    ``text_field`` set to it, written again by ``json.dumps(ensure_ascii=False)`` (keys
    in their order; the other records stay byte for byte)."""
    if annotations is not None:
        display = src.display

        def rewriter(record: int):
            fields = annotations.json_fields(record)
            if not fields:  # not a document: copied as it is
                return None

            def annotate(raw: bytes) -> bytes:
                annotations.check_json(raw, display, record)
                return annotated_line(raw, fields, src.encoding)
            return annotate
    elif edits:
        def rewriter(record: int):
            if record not in edits:
                return None
            return lambda raw: edited_line(raw, record, edits[record], text_field, src.fmt,
                                           src.encoding)
    else:
        rewriter = None
    return _copy_lines(src, removed, out, rewriter)


def _copy_lines(src: InputSource, removed: set[int], out, rewriter) -> tuple[int, int]:
    """The one loop of :func:`_write_lines`: every line not removed written, byte for
    byte unless ``rewriter(record)`` gives a function of the whole line that makes what is
    written in its place (``rewriter`` None, or its answer None: the line as it is).

    A line that is removed or rewritten is a document, which was read whole: it is read
    whole here too. Any other line is copied ``COPY_PIECE_BYTES`` at a time, so a record a
    bound skipped for its length is never held whole. Returns (records written, 1 if the
    input was damaged else 0); a blank JSON Lines line is no record."""
    written = 0
    with _open_binary(src) as f:
        record = 0
        while raw := f.readline(COPY_PIECE_BYTES):
            whole = raw.endswith(b"\n")
            dropped = record in removed
            rewrite = None if dropped or rewriter is None else rewriter(record)
            if dropped or rewrite is not None:  # a document: it was read whole
                if not whole:
                    raw += f.readline()
                if rewrite is not None:
                    raw = rewrite(raw)
            content = bool(raw.strip())  # jsonl: a blank line is no record
            if not whole and not dropped and rewrite is None:
                out.write(raw)  # copied a piece at a time: a record a bound skipped is long
                while (raw := f.readline(COPY_PIECE_BYTES)) and not raw.endswith(b"\n"):
                    out.write(raw)
                    content = content or bool(raw.strip())
                content = content or bool(raw.strip())
            if not dropped:
                out.write(raw)
                if src.fmt == "lines" or content:
                    written += 1
            record += 1
    return written, int(src.damaged is not None)


def count_lines(path: str) -> RecordCount:
    """The non-empty lines of a file (an upper bound on its records, for the memory plan)
    and its longest line, in bytes, with its 1-based number; a block of
    ``SCAN_BLOCK_BYTES`` at a time."""
    count = longest = longest_at = 0
    current = 0  # bytes of the line still open at the end of the last block
    seen = 0  # lines ended before this block
    buffer = bytearray(SCAN_BLOCK_BYTES)
    with open(path, "rb", buffering=0) as f:
        while got := f.readinto(buffer):
            data = np.frombuffer(buffer, dtype=np.uint8, count=got)
            ends = np.flatnonzero(data == 10)
            if ends.size == 0:
                current += got
                continue
            lengths = np.diff(ends) - 1
            first = current + int(ends[0])
            count += int(first > 0) + int(np.count_nonzero(lengths > 0))
            if first > longest:
                longest, longest_at = first, seen + 1
            if lengths.size and int(lengths.max()) > longest:
                k = int(np.argmax(lengths))
                longest, longest_at = int(lengths[k]), seen + k + 2
            seen += ends.size
            current = got - int(ends[-1]) - 1
    if current:
        count += 1
        if current > longest:
            longest, longest_at = current, seen + 1
    return RecordCount(count, "lines counted", longest, longest_at)


FORMAT = Format(
    name="lines", title="lines", described="a line file", suffixes=(".txt",),
    read=_read_lines, copy=_write_lines, fields=False, record_unit="line",
    count=count_lines, line_records=True,
)
