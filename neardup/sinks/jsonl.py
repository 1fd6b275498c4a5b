"""JSON Lines tables: a row a line, ``{"name": value, ...}``, assembled with Arrow string
kernels and escaped as ``json.dumps(..., ensure_ascii=False)`` escapes them (NaN,
infinities and nulls as null); read back with Python's json."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .format import TableFormat


def write_jsonl(sink, schema: pa.Schema, tables, escape_formulas: bool = False) -> int:
    """JSON Lines to a path or a binary stream; returns the rows written."""
    if isinstance(sink, (str, os.PathLike)):
        with open(sink, "wb") as f:
            return write_jsonl(f, schema, tables)
    rows = 0
    for table in tables:
        for piece in _jsonl_buffers(table) if table.num_rows else []:
            sink.write(piece)
        rows += table.num_rows
    return rows


def read_jsonl(data: bytes) -> pa.Table:
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    return pa.Table.from_pylist(rows)


def _jsonl_buffers(table: pa.Table) -> list[pa.Buffer]:
    """The rows of ``table`` as JSON Lines: ``{"name": value, ...}\n`` per row."""
    pieces: list = []
    for k, (name, column) in enumerate(zip(table.column_names, table.columns)):
        pieces.append(_text(("{" if k == 0 else ", ") + json.dumps(name, ensure_ascii=False)
                            + ": "))
        pieces.append(_json_values(column.combine_chunks()))
    pieces.append(_text("}\n"))
    lines = pc.binary_join_element_wise(*pieces, _text(""))
    lines = lines.cast(pa.large_string())
    return [_text_buffer(chunk) for chunk in
            (lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines])]


def _text_buffer(chunk: pa.Array) -> pa.Buffer:
    """The bytes of a large_string array's values, back to back (no nulls)."""
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)
    start, end = int(offsets[chunk.offset]), int(offsets[chunk.offset + len(chunk)])
    return chunk.buffers()[2].slice(start, end - start)


def _text(value: str) -> pa.Scalar:
    return pa.scalar(value, pa.large_string())


_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_values(values: pa.Array) -> pa.Array:
    """Each value as JSON text (large_string): strings escaped as json.dumps does with
    ensure_ascii=False, numbers as Arrow prints them, NaN, infinities and nulls as null."""
    kind = values.type
    if pa.types.is_dictionary(kind):
        values = values.cast(kind.value_type)
        kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = pc.replace_substring(values.cast(pa.large_string()), "\\", "\\\\")
        text = pc.replace_substring(text, '"', '\\"')
        if pc.any(pc.match_substring_regex(text, "[\\x00-\\x1f]")).as_py():
            for code in range(32):
                char = chr(code)
                if pc.any(pc.match_substring(text, char)).as_py():
                    text = pc.replace_substring(text, char,
                                                _SHORT_ESCAPES.get(char, f"\\u{code:04x}"))
        out = pc.binary_join_element_wise(_text('"'), text, _text('"'), _text(""))
    elif pa.types.is_floating(kind):
        out = pc.cast(values, pa.large_string())
        out = pc.if_else(pc.is_finite(values), out, pa.scalar(None, pa.large_string()))
    elif pa.types.is_boolean(kind) or pa.types.is_integer(kind):
        out = pc.cast(values, pa.large_string())
    else:  # anything else: Python's json, value by value
        out = pa.array([json.dumps(v, ensure_ascii=False, default=jsonable)
                        for v in values.to_pylist()], pa.large_string())
    return pc.fill_null(out.cast(pa.large_string()), "null")


def jsonable(value):
    """What json.dumps writes for a value it has no rule for (numpy arrays, sets)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


SINK = TableFormat("jsonl", write_jsonl, read_jsonl)
