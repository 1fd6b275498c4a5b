"""Data already in memory: DataFrames and tables in, the same kind of table out.

``neardup.find(df, text="body", id="url")`` takes, besides paths:

- any object that exports the Arrow PyCapsule stream (``__arrow_c_stream__``): a pandas
  DataFrame (2.2+), a polars DataFrame, a pyarrow Table or RecordBatchReader, a DuckDB
  relation. One code path for all of them: :meth:`pyarrow.RecordBatchReader.from_stream`;
- a Hugging Face ``datasets.Dataset`` (its Arrow table, in the dataset's row order);
- a list of dicts (rows) or a list of strings (texts; ids "1", "2", ...): a list of
  strings is texts when none of them names an existing path and some hold a space or a
  line break; otherwise it is a list of paths (a tuple always is).

Rows become documents as a file's records do (:mod:`neardup.sources`): the ``text``
columns joined by a newline, the ``id`` column as the id (else the row number, 1-based),
repeated ids renamed ``id#2`` with a note, rows without text skipped with a reason, every
row accounted for in the read report. :func:`keep_rows` gives back the same kind of
object minus the removed rows (``neardup.dedup(df)`` returns a DataFrame).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .documents import Documents, InputSource, ReadReport, _DocumentsBuilder

MEMORY = "<memory>"


def is_in_memory(data) -> bool:
    """True for the in-memory kinds above; False for a path or a list of paths."""
    if isinstance(data, (str, bytes, os.PathLike)):
        return False
    if hasattr(data, "__arrow_c_stream__") or _is_hf_dataset(data) or _is_spark(data):
        return True
    if isinstance(data, (pa.Table, pa.RecordBatchReader)):
        return True
    if isinstance(data, list) and data:
        if all(isinstance(row, dict) for row in data):
            return True
        return all(isinstance(s, str) for s in data) and _texts_not_paths(data)
    return False


def _texts_not_paths(items: list[str]) -> bool:
    """A list of strings is texts when none names an existing path (or -) and some hold
    a space or a line break, as prose does; else it is paths, and a path that does not
    exist is reported as such instead of becoming a document."""
    if any(s == "-" or os.path.exists(s) for s in items):
        return False
    return any(any(c.isspace() for c in s) for s in items)


def _is_hf_dataset(data) -> bool:
    return type(data).__module__.startswith("datasets") and hasattr(data, "with_format")


def _is_spark(data) -> bool:
    return type(data).__module__.startswith("pyspark")


def kind_of(data) -> str:
    """A short name of the object's kind, for the read report and messages."""
    module = type(data).__module__.split(".")[0]
    return f"{module}.{type(data).__name__}"


def to_arrow(data) -> pa.Table:
    """The rows of ``data`` as one Arrow table (text is not copied through Python)."""
    if _is_spark(data):
        raise ValueError("a Spark DataFrame runs on Spark: use neardup.spark.find(df, "
                         "text_col=..., id_col=...)")
    if isinstance(data, pa.Table):
        return data
    if _is_hf_dataset(data):
        return data.with_format("arrow")[:]
    if hasattr(data, "__arrow_c_stream__") or isinstance(data, pa.RecordBatchReader):
        return pa.RecordBatchReader.from_stream(data).read_all()
    if data and isinstance(data[0], dict):
        return pa.Table.from_pylist(list(data))
    return pa.table({"text": pa.array(list(data), pa.string())})


def read_frame(data, text_fields: Sequence[str] = ("text",), id_field: str | None = None,
               extra_fields: Sequence[str] = (), text_optional: bool = False
               ) -> tuple[Documents, ReadReport, dict]:
    """Documents from an in-memory table, its read report, and the ``extra_fields``
    columns (one value per document, e.g. for ``representative_field``).
    ``text_optional``: a table with none of the ``text_fields`` gives every row as a
    document with an empty text (a run on embeddings alone)."""
    table = to_arrow(data)
    kind = kind_of(data)
    names = table.column_names
    no_text = text_optional and not any(name in names for name in text_fields)
    if no_text:
        text_fields = []
    for name in [*text_fields, *([id_field] if id_field else []), *extra_fields]:
        if name not in names:
            raise ValueError(f"{kind}: no column {name!r}; the columns are {names}")
    report = ReadReport()
    report.records_seen = table.num_rows
    parts = [pc.cast(table.column(name), pa.string()) for name in text_fields]
    if no_text:
        texts = [""] * table.num_rows
    else:
        text = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\n")
        texts = text.to_pylist()
    if id_field:
        raw_ids = pc.cast(table.column(id_field), pa.string()).to_pylist()
    else:
        raw_ids = [None] * table.num_rows
    builder = _DocumentsBuilder(report)
    rows = np.arange(table.num_rows)
    has_text = np.fromiter((no_text or (t is not None and t.strip() != "") for t in texts),
                           dtype=bool, count=len(texts))
    for row in np.flatnonzero(~has_text).tolist():
        reason = "empty text" if texts[row] is not None else "missing text (null)"
        report._skip(kind, f"row {row + 1}", reason)
    kept = rows[has_text]
    ids = [raw_ids[r] if raw_ids[r] is not None else str(r + 1) for r in kept.tolist()]
    builder.extend(0, kept.tolist(), ids, [texts[r] for r in kept.tolist()], kind, "row")
    documents = builder.build([InputSource(given=MEMORY, fmt="memory", name=kind,
                                           encoding="utf-8")])
    report.check()
    extras = {name: table.column(name).to_numpy(zero_copy_only=False)[kept]
              for name in extra_fields}
    return documents, report, extras


def keep_rows(data, keep_row: np.ndarray):
    """``data`` minus the rows whose ``keep_row`` is False, as the same kind of object
    (a RecordBatchReader or another stream comes back as a pyarrow Table)."""
    keep_row = np.asarray(keep_row, dtype=bool)
    if isinstance(data, pa.Table):
        return data.filter(pa.array(keep_row))
    module = type(data).__module__
    if module.startswith("pandas"):
        return data[keep_row]
    if module.startswith("polars"):
        import polars as pl

        return data.filter(pl.Series(keep_row))
    if _is_hf_dataset(data):
        return data.select(np.flatnonzero(keep_row).tolist())
    if isinstance(data, list):
        return [row for row, kept in zip(data, keep_row.tolist()) if kept]
    return to_arrow(data).filter(pa.array(keep_row))


def kept_row_mask(documents: Documents, keep_document: np.ndarray, n_rows: int) -> np.ndarray:
    """bool[rows]: a row stays unless it became a document that ``keep_document`` drops
    (skipped rows, those without text, stay as they were)."""
    keep = np.ones(n_rows, dtype=bool)
    keep[documents.record[~np.asarray(keep_document, dtype=bool)]] = False
    return keep
