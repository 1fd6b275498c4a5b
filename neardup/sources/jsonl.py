"""JSON Lines read a block at a time by Arrow's JSON parser, with Python's rules as the judge.

Python's ``json.loads`` costs about 4 µs a line (a third of a 1 M-document run);
Arrow parses a block of lines in C++ several times faster. The two do not agree on
everything (Arrow rejects duplicate keys and control characters; Python accepts
``NaN``; types differ for numbers), so a block goes through Arrow only when the
answer is certain to be the one the line-by-line reader
(:func:`neardup.sources.lines._read_jsonl_records`) gives:

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

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

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
