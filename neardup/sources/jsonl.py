"""JSON Lines: a record is a non-blank line, a JSON object; read a block at a time by
Arrow's JSON parser, with Python's rules as the judge.

A non-blank line is a record (a blank line is none), a JSON object whose text fields
make the text (:func:`neardup.sources.jsonfile._add_json_object`); its id is the
``id_field`` value, else the line number. The dedup copy is the input's lines byte for
byte minus the removed ones (:func:`neardup.sources.lines._write_lines`), an edited
record's object written again, an annotated one's fields added after its last.

Python's ``json.loads`` costs about 4 µs a line (a third of a 1 M-document run);
Arrow parses a block of lines in C++ several times faster. The two do not agree on
everything (Arrow rejects duplicate keys and control characters; Python accepts
``NaN``; types differ for numbers), so a block goes through Arrow only when the
answer is certain to be the one the line-by-line reader
(:func:`_read_jsonl_records`) gives:

* every non-blank line starts with "{" and is a JSON object that Arrow parses (any
  parse error, or a row count that differs from the non-blank lines: the block is
  read line by line instead; a block whose first value is ``null`` crashes
  pyarrow 26's reader, so it never gets one);
* every text field is a string in every object, and the id field (if any) a string
  or a 64-bit integer in every object: a missing or null field, a number or an
  object as text, fail or convert per line, so the block goes line by line;
* the fields kept for ``--representative-field`` are strings, 64-bit integers,
  booleans or absent (numbers Arrow could widen to float go line by line);
* the encoding is UTF-8, the whole block decodes as UTF-8, and no byte-order mark
  sits after the file's first byte.

Only then does :func:`parse_block` return the block's records; otherwise None, and
the caller reads the block line by line, so a bad line costs itself only, exactly
as before. Blank lines are not records, as in the line reader.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from .bounded import line_blocks, too_large
from .compression import _open_binary
from .documents import _ReadContext
from .format import Format, SparkReader
from .jsonfile import _add_json_object, name_the_fields
from .lines import _write_lines, count_lines, decode_line

BLOCK_BYTES = 1 << 20  # a block ends at the first line end after this many bytes

# what bytes.strip() removes: a line of only these is blank, not a record
_SPACE_BYTES = b" \t\n\r\x0b\x0c"
_BOM = b"\xef\xbb\xbf"
_NEWLINE, _BRACE = ord("\n"), ord("{")
_TEXT_TYPES = (pa.string(), pa.large_string())
_ID_TYPES = _TEXT_TYPES + (pa.int64(),)
_FIELD_TYPES = _ID_TYPES + (pa.bool_(), pa.null())


@dataclass
class Block:
    """The records of a block parsed by Arrow, in line order.

    ``lines``: each record's 0-based line number in the file; ``texts``: its text
    fields joined by newlines; ``ids``: the id field's value as text, or None when
    the ids are line numbers; ``fields``: each kept field's values (None: absent).
    """

    lines: np.ndarray
    texts: list[str]
    ids: list[str] | None
    fields: dict[str, list]


def block_lines(block: bytes) -> int:
    """Lines in a block as a file's line iteration counts them."""
    newlines = np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == _NEWLINE)
    return int(newlines) + (0 if block.endswith(b"\n") else 1)  # 4x bytes.count's speed


def parse_block(block: bytes, first_line: int, text_fields: list[str], id_field: str | None,
                extra_fields: list[str], utf8: bool) -> Block | None:
    """The block's records when Arrow's reading equals the line reader's, else None."""
    if not utf8 or _BOM in block[1 if first_line == 0 else 0:]:
        return None
    try:  # Arrow checks the UTF-8 of the values it converts only, the line reader all of it
        block.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = _object_lines(block)
    if lines is None or lines.size == 0:
        return None
    lines += first_line
    try:
        table = pa_json.read_json(pa.py_buffer(block),
                                  read_options=pa_json.ReadOptions(use_threads=False,
                                                                     block_size=len(block) + 1))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    if table.num_rows != lines.size:
        return None
    texts = [_column(table, name, _TEXT_TYPES, nulls=False) for name in text_fields]
    ids = _column(table, id_field, _ID_TYPES, nulls=False) if id_field is not None else None
    fields = {name: _column(table, name, _FIELD_TYPES, nulls=True) for name in extra_fields}
    if any(t is None for t in texts) or (id_field is not None and ids is None) \
            or any(v is None for v in fields.values()):
        return None
    joined = texts[0] if len(texts) == 1 else ["\n".join(parts) for parts in zip(*texts)]
    if ids is not None:
        ids = [value if isinstance(value, str) else str(value) for value in ids]
    return Block(lines, joined, ids, fields)


def _object_lines(block: bytes) -> np.ndarray | None:
    """0-based numbers, within the block, of its non-blank lines; None unless each of
    them starts with "{" (pyarrow 26 crashes on a block whose first value is null)."""
    data = np.frombuffer(block, dtype=np.uint8)
    starts = np.flatnonzero(data == _NEWLINE)[:-1 if block.endswith(b"\n") else None] + 1
    if data[:1].tolist() == [_BRACE] and (data[starts] == _BRACE).all():
        return np.arange(starts.size + 1, dtype=np.int64)  # the usual block: no blank line
    lines = block.split(b"\n")
    if block.endswith(b"\n"):
        lines.pop()
    found = []
    for number, line in enumerate(lines):  # a line per document, not per byte
        if line[:1] != b"{":
            if not line.strip(_SPACE_BYTES):
                continue  # blank
            if line.lstrip(_SPACE_BYTES)[:1] != b"{":
                return None
        found.append(number)
    return np.asarray(found, dtype=np.int64)


def _column(table: pa.Table, name: str, types: tuple, nulls: bool) -> list | None:
    """The column's values as Python objects; None when its type is not one of ``types``
    or (``nulls`` False) a value is missing. An absent column is all None."""
    if name not in table.column_names:
        return [None] * table.num_rows if nulls else None
    column = table.column(name)
    if column.type not in types or (not nulls and column.null_count):
        return None
    return column.to_pylist()


def _read_jsonl(ctx: _ReadContext) -> Iterator[None]:
    report = ctx.report
    missing: dict[str, int] = {}  # "missing field 'text'": records of this file failed so
    fields: dict[str, None] = {}  # the names those records have, first seen first
    first_problem = len(report.problems)
    objects = yield from _read_jsonl_records(ctx, missing, fields)
    if missing and sum(missing.values()) == objects:
        name_the_fields(report, ctx.src.display, missing, fields, first_problem)


def _read_jsonl_records(ctx: _ReadContext, missing: dict[str, int],
                        fields: dict[str, None]) -> Iterator[None]:
    """Read the records; return how many were JSON objects.

    A block of lines goes through Arrow's parser when that gives the answer reading
    line by line would (see :mod:`neardup.sources.jsonl`), else line by line."""
    utf8 = codecs.lookup(ctx.src.encoding).name == "utf-8"
    objects = 0
    first = 0  # line number of the block's first line
    bound = ctx.max_record_bytes
    with _open_binary(ctx.src) as f:
        for block, too_long in line_blocks(f, BLOCK_BYTES, bound):
            for offset in too_long:  # an empty line stands in its place: not a record
                ctx.report.records_seen += 1
                ctx.report._skip(ctx.src.display, f"line {first + offset + 1}",
                                 too_large(bound))
            count = block_lines(block)
            parsed = parse_block(block, first, ctx.text_fields, ctx.id_field,
                                       ctx.extra_fields, utf8)
            if parsed is not None:
                objects += yield from _add_parsed_block(ctx, parsed)
            else:
                for offset, raw in enumerate(block.split(b"\n")[:count]):
                    yield
                    objects += _read_jsonl_line(ctx, raw, first + offset, missing, fields)
            first += count
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
        line = decode_line(raw, record, ctx.src.encoding)
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


def _add_parsed_block(ctx: _ReadContext, block: Block) -> Iterator[None]:
    """The records of a block Arrow parsed, as :func:`_add_json_object` adds each: an
    empty text is skipped, the rest are documents. Read in chunks, it yields where the
    chunk fills (where reading line by line would let it close); returns the block's
    record count."""
    lines = block.lines.tolist()
    ids = block.ids if block.ids is not None else [f"{ctx.id_prefix}{line + 1}"
                                                   for line in lines]
    kept = np.fromiter((bool(text) and not text.isspace() for text in block.texts),
                       dtype=bool, count=len(lines))  # text.strip() not empty, uncopied
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


def _add_parsed_records(ctx: _ReadContext, block: Block, lines: list[int],
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


def check_annotations(path: str, added: Sequence[str], shown: str) -> None:
    """``dedup --annotate``: ValueError where a record already has a field of an
    ``added`` name. Every line holding the prefix's bytes is parsed; the rest only
    searched (a block at a time)."""
    from .annotations import SCAN_BYTES, scan_json_block
    from .compression import compression_of
    from .documents import InputSource

    src = InputSource(given=path, fmt=FORMAT.name, name="", encoding="utf-8",
                      compression=compression_of(path))
    with _open_binary(src) as f:
        record, tail = 0, b""
        while block := f.read(SCAN_BYTES):
            block = tail + block
            cut = block.rfind(b"\n") + 1
            tail, block = block[cut:], block[:cut]
            record = scan_json_block(block, record, added, shown)
        scan_json_block(tail, record, added, shown)


def looks_like_jsonl(lines: list[str]) -> bool:
    """The first non-blank lines of a file are JSON objects, more than one."""
    return len(lines) > 1 and all(_is_json_object(line) for line in lines)


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


FORMAT = Format(
    name="jsonl", title="JSON Lines", described="a JSON Lines file",
    suffixes=(".jsonl", ".ndjson"), read=_read_jsonl, copy=_write_lines, annotates=True,
    check_annotations=check_annotations, record_unit="line", count=count_lines,
    line_records=True, looks_like=looks_like_jsonl, hinted=True,
    spark=SparkReader("text", "neardup.spark.read:_jsonl_records", copies=True),
)
