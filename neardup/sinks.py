"""Writing results: pairs and clusters as CSV, JSON Lines or Parquet, plus the summary.

Files are deterministic: the same run writes the same bytes, whether a table arrives
whole or in batches (Parquet row groups are cut at fixed row counts, not where batches
end). Timings, which change from run to run, go to ``timings.json`` only.

Every format is written column-wise by Arrow, batch by batch, so the pairs of a run
(possibly hundreds of millions of rows) stream to disk in bounded memory; JSON Lines
rows are assembled with Arrow string kernels, escaped as ``json.dumps`` escapes them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from .pairs import PAIR_SCHEMA, too_many_pairs

OUTPUT_FORMATS = ("csv", "jsonl", "parquet")
ROW_GROUP_ROWS = 1 << 20


def write_table(table: pa.Table, path: str | os.PathLike, fmt: str | None = None) -> Path:
    """Write ``table`` as csv, jsonl or parquet (from the suffix when ``fmt`` is None)."""
    return write_tables([table], path, fmt, schema=table.schema)[0]


def write_tables(tables: Iterable[pa.Table], path: str | os.PathLike, fmt: str | None = None,
                 *, schema: pa.Schema) -> tuple[Path, int]:
    """Write the rows of ``tables`` (each of ``schema``) as one file; returns (path, rows)."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(f"output format must be one of {OUTPUT_FORMATS}, got {fmt!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    if fmt == "csv":
        with pa_csv.CSVWriter(path, schema) as writer:
            for table in tables:
                writer.write_table(table)
                rows += table.num_rows
    elif fmt == "parquet":
        with pq.ParquetWriter(path, schema) as writer:
            pending: list[pa.Table] = []
            held = 0
            for table in tables:
                rows += table.num_rows
                pending.append(table)
                held += table.num_rows
                while held >= ROW_GROUP_ROWS:  # fixed row groups: same bytes however batched
                    whole = pa.concat_tables(pending)
                    writer.write_table(whole.slice(0, ROW_GROUP_ROWS),
                                       row_group_size=ROW_GROUP_ROWS)
                    pending, held = [whole.slice(ROW_GROUP_ROWS)], held - ROW_GROUP_ROWS
            if held or rows == 0:
                writer.write_table(pa.concat_tables(pending) if pending
                                   else schema.empty_table(), row_group_size=ROW_GROUP_ROWS)
    else:
        with open(path, "wb") as f:
            for table in tables:
                rows += table.num_rows
                if table.num_rows:
                    for piece in _jsonl_buffers(table):
                        f.write(piece)
    return path, rows


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
        out = pa.array([json.dumps(v, ensure_ascii=False, default=_jsonable)
                        for v in values.to_pylist()], pa.large_string())
    return pc.fill_null(out.cast(pa.large_string()), "null")


def write_json(obj, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=_jsonable) + "\n",
                    encoding="utf-8")
    return path


def write_result(result, out_dir: str | os.PathLike, fmt: str = "csv") -> dict[str, Path]:
    """pairs (or set_pairs), identical, clusters, documents, candidates (.FMT),
    summary.json, timings.json.

    With ``pairs="all"`` (the default) ``pairs.FMT`` lists every document pair, streamed
    in batches; above ``max_pairs`` nothing is written and a ValueError says how many
    pairs there are and which option to use. With ``pairs="groups"``, ``set_pairs.FMT``
    holds the pairs of distinct sets and ``identical.FMT`` every copy's group
    (:func:`neardup.pairs.expand` lists every pair from them).
    """
    config = result.config
    if config.pairs == "all":
        message = too_many_pairs(result.counts, config.max_pairs or None)
        if message is not None:
            raise ValueError(message)
    out_dir = Path(out_dir)
    started = time.perf_counter()
    written = {}
    if config.pairs == "all":
        written["pairs"], rows = write_tables(result.iter_pairs_tables(),
                                              out_dir / f"pairs.{fmt}", fmt, schema=PAIR_SCHEMA)
        if rows != result.counts["pairs"]:  # the listing and the count are one claim
            raise RuntimeError(f"wrote {rows:,} pairs where {result.counts['pairs']:,} were "
                               f"counted")
    else:
        written["set_pairs"] = write_table(result.set_pairs_table(),
                                           out_dir / f"set_pairs.{fmt}", fmt)
    written["identical"] = write_table(result.identical_table(), out_dir / f"identical.{fmt}",
                                       fmt)
    for name in ("clusters", "documents", "candidates"):
        table = getattr(result, f"{name}_table")()
        written[name] = write_table(table, out_dir / f"{name}.{fmt}", fmt)
    written["summary"] = write_json(result.summary(), out_dir / "summary.json")
    result.seconds["write"] = time.perf_counter() - started
    written["timings"] = write_json({k: round(v, 4) for k, v in result.seconds.items()},
                                    out_dir / "timings.json")
    return written


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
