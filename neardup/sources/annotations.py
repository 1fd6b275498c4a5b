"""``dedup --annotate``: columns added to every record of the copy, in the input's format.

What is added is a table with one row per document (a run's
:meth:`~neardup.result.FindResult.outcomes_table`: cluster, cluster_size, kept,
duplicate_of, jaccard, and cosine for a run on embeddings); each column becomes the
field or column :data:`PREFIX` + its
name (``neardup_cluster``, ...), so that it cannot be mistaken for the input's own. An
input that already has one of those names is refused before anything is written
(:func:`check_annotation_target`, then again by each writer).

Each format adds them its own way, every original field kept as it was:

- JSON Lines: the fields go at the end of each document's object, after its last
  field (the object's bytes before them unchanged);
- CSV/TSV: columns after the last, in the header and in every row (the csv module's
  quoting, as for the rest of the copy);
- Parquet: columns after the last;
- data in memory (pandas, polars, Arrow, Hugging Face datasets, a list of dicts):
  columns (keys) after the last, see :func:`annotated_rows`.

A record that is not a document (skipped: no text; failed: malformed) has no
annotation: in JSON Lines it is copied unchanged, in CSV/TSV its cells are empty (a
row the csv module cannot parse is copied as it is), in Parquet and in memory its
values are null. Line files, JSON arrays and directories have no fields to add:
refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .documents import STDIN, Documents, printable

PREFIX = "neardup_"
# a dedup's annotations: the columns of FindResult.outcomes_table that are added (not
# its doc, id and written)
ANNOTATION_COLUMNS = ("cluster", "cluster_size", "kept", "duplicate_of", "jaccard")
ANNOTATION_FIELDS = tuple(PREFIX + name for name in ANNOTATION_COLUMNS)
# a run on embeddings adds the cosine of each record to the one it duplicates
COSINE_COLUMN = "cosine"


def annotation_columns(cosine: bool = False) -> tuple[str, ...]:
    """The columns a dedup adds: :data:`ANNOTATION_COLUMNS`, and with ``cosine`` (a run
    on embeddings) :data:`COSINE_COLUMN` after them."""
    return ANNOTATION_COLUMNS + ((COSINE_COLUMN,) if cosine else ())
_JSON_KEY = PREFIX.encode()  # a JSON Lines line without these bytes names no such field
SCAN_BYTES = 1 << 20  # a JSON Lines file is searched for PREFIX a block at a time


class Annotations:
    """The columns to add (``table``: one row per document, names without the prefix);
    :meth:`of_input` gives one input's, looked up by record."""

    def __init__(self, table: pa.Table, documents: Documents):
        if table.num_rows != len(documents):
            raise ValueError(f"annotations have {table.num_rows} rows for "
                             f"{len(documents)} documents")
        self.table = table
        self.names = [PREFIX + name for name in table.column_names]
        self.documents = documents
        self._values: list[list] | None = None

    def values(self) -> list[list]:
        """Each column's Python values (what the line formats write), made once."""
        if self._values is None:
            self._values = [column.to_pylist() for column in self.table.columns]
        return self._values

    def of_input(self, index: int, records: int | None = None) -> RecordAnnotations:
        """Input ``index``'s annotations; ``records``: how many records it holds, if
        known (else up to its last document's)."""
        source = np.asarray(self.documents.source)
        docs = np.flatnonzero(source == index)
        record = np.asarray(self.documents.record)[docs]
        size = max(records or 0, int(record.max()) + 1 if record.size else 0)
        document_at = np.full(size, -1, dtype=np.int64)
        document_at[record] = docs
        return RecordAnnotations(self.names, self.table, document_at, self.values)


class RecordAnnotations:
    """One input's annotations by record: ``document_at[record]`` is its document (-1:
    none), the values are ``table``'s row of that document (``values``: the columns'
    Python values, asked for by the line formats only)."""

    def __init__(self, names: list[str], table: pa.Table, document_at: np.ndarray,
                 values=None):
        self.names, self.table, self.document_at = names, table, document_at
        if values is None:
            cached: list = []

            def values() -> list[list]:
                if not cached:
                    cached.append([c.to_pylist() for c in table.columns])
                return cached[0]
        self._values = values
        self._json: list[str] | None = None
        self._cells: list[list[str]] | None = None

    def _document(self, record: int) -> int:
        return int(self.document_at[record]) if record < self.document_at.size else -1

    def json_fields(self, record: int) -> str:
        """What a JSON Lines record gets before its closing brace: ``, "name": value``
        for each column ("" for a record that is not a document)."""
        document = self._document(record)
        if document < 0:
            return ""
        if self._json is None:  # every document's, rendered once
            self._json = json_fields(self.names, self._values())
        return self._json[document]

    def cells(self, record: int) -> list[str]:
        """A CSV/TSV row's added cells: each value as text ("true"/"false" for booleans),
        empty for a null and for every cell of a record that is not a document."""
        document = self._document(record)
        if document < 0:
            return [""] * len(self.names)
        if self._cells is None:
            self._cells = [[_cell(value) for value in values] for values in self._values()]
        return [cells[document] for cells in self._cells]

    def columns(self, rows: int) -> list[pa.ChunkedArray]:
        """The added columns over ``rows`` records (null where a record is not a
        document)."""
        at = np.full(rows, -1, dtype=np.int64)
        known = min(rows, self.document_at.size)
        at[:known] = self.document_at[:known]
        taken = self.table.take(pa.array(at, type=pa.int64(), mask=at < 0))
        return taken.columns

    def check_names(self, names: Sequence[str], display: str) -> None:
        """ValueError where the input's ``names`` hold one of the added names."""
        refuse_collisions(names, self.names, display)

    def check_json(self, line: bytes, display: str, record: int) -> None:
        """ValueError where a JSON Lines record (a document's line) has a field of an
        added name."""
        if _JSON_KEY in line:
            _check_json_line(line, self.names, display, record)


def json_fields(names: Sequence[str], values: Sequence[list]) -> list[str]:
    """Each row's ``, "name": value`` for every column (``values``: the columns' Python
    values, named ``names``), rendered a column at a time: what a JSON Lines copy adds
    before a document's closing brace (:func:`neardup.sources.lines.annotated_line`;
    the Spark copy renders its rows with it too, so both write the same bytes)."""
    rendered = [[f', "{name}": ' + text for text in _json_texts(column)]
                for name, column in zip(names, values)]
    return ["".join(parts) for parts in zip(*rendered)]


def refuse_collisions(names: Sequence[str], added: Sequence[str], display: str) -> None:
    taken = [name for name in added if name in set(names)]
    if taken:
        raise ValueError(f"{display} already has {', '.join(repr(n) for n in taken)}: "
                         f"--annotate adds fields of these names; rename them in the input "
                         f"(or drop --annotate)")


def _check_json_line(line: bytes, added: Sequence[str], display: str, record: int) -> None:
    try:
        obj = json.loads(line)
    except ValueError:
        return  # not a document: copied as it is
    if isinstance(obj, dict):
        refuse_collisions(list(obj), added, f"{display} line {record + 1}")


def _json_texts(values: list) -> list[str]:
    """Each value as JSON (what ``json.dumps(value, ensure_ascii=False)`` writes)."""
    first = next((v for v in values if v is not None), None)
    if isinstance(first, str):
        encode = json.encoder.encode_basestring  # the C encoder, not ASCII-escaped
        return [encode(v) if v is not None else "null" for v in values]
    if isinstance(first, bool):
        return ["null" if v is None else "true" if v else "false" for v in values]
    return ["null" if v is None else repr(v) for v in values]  # numbers: repr is JSON's


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_annotation_target(inputs: Sequence[str | os.PathLike], formats: Sequence[str],
                            added: Sequence[str], scan: bool = True) -> None:
    """ValueError before any read where an input cannot take the added fields: its
    format has none (lines, a JSON array, a directory), or (``scan``) it already has a
    field of an added name (its format's ``check_annotations``: a Parquet schema, any
    JSON Lines record, each line holding the prefix's bytes parsed). A CSV/TSV header,
    and standard input, are checked as they are copied, before the copy's first byte or
    row."""
    from ..sinks.format import words
    from .registry import FORMATS, format_named

    for path, fmt in zip(inputs, formats):
        path = os.fspath(path)
        shown = printable(path)
        spec = format_named(fmt)
        if not spec.annotates:
            titles = words([s.title for s in FORMATS if s.annotates])
            raise ValueError(f"--annotate adds fields to {titles} records (and to data in "
                             f"memory); {shown} is {spec.refusing_fields()}, which has none")
        if path == STDIN or not scan or spec.check_annotations is None:
            continue  # CSV/TSV: the header is checked by the writer, before any row
        spec.check_annotations(path, added, shown)


def scan_json_block(block: bytes, record: int, added: Sequence[str], shown: str) -> int:
    """The lines of ``block`` (a JSON Lines file's, from line ``record``) that hold the
    prefix's bytes, parsed and checked for an added name; returns the next line's
    number."""
    if _JSON_KEY in block:
        for number, line in enumerate(block.split(b"\n")):
            if _JSON_KEY in line:
                _check_json_line(line, added, shown, record + number)
    return record + block.count(b"\n")


def annotated_rows(data, keep_row: np.ndarray, table: pa.Table, document_at: np.ndarray):
    """``data`` (in memory, see :mod:`neardup.sources.frames`) minus the rows whose
    ``keep_row`` is False, with ``table``'s columns (one row per document; the row of
    document ``document_at[row]``, null where -1) added after its own, named
    :data:`PREFIX` + each name; the same kind of object."""
    from . import frames

    names = [PREFIX + name for name in table.column_names]
    if isinstance(data, list) and data and not isinstance(data[0], dict):
        raise ValueError("--annotate adds columns: a list of strings has none; give a "
                         "list of dicts or a table")
    keep_row = np.asarray(keep_row, dtype=bool)
    rows = RecordAnnotations(names, table, document_at).columns(keep_row.size)
    added = pa.table([column.filter(pa.array(keep_row)) for column in rows], names=names)
    module = type(data).__module__
    cheap = isinstance(data, (list, pa.Table)) or frames._is_hf_dataset(data) \
        or module.startswith(("pandas", "polars"))
    if cheap:  # a stream is read once: its names are checked on the rows kept
        refuse_collisions(_column_names(data), names, frames.kind_of(data))
    kept = frames.keep_rows(data, keep_row)
    if not cheap:
        refuse_collisions(_column_names(kept), names, frames.kind_of(data))
    if isinstance(kept, pa.Table):
        for name, column in zip(names, added.columns):
            kept = kept.append_column(name, column)
        return kept
    if module.startswith("pandas"):
        import pandas as pd

        kept = kept.copy()
        nullable = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(),
                    pa.float64(): pd.Float64Dtype(), pa.string(): pd.StringDtype()}
        for name, column in zip(names, added.columns):
            kept[name] = pd.Series(column.to_pandas(types_mapper=nullable.get).array,
                                   index=kept.index)
        return kept
    if module.startswith("polars"):
        import polars as pl

        return kept.with_columns([pl.from_arrow(column).alias(name)
                                  for name, column in zip(names, added.columns)])
    if frames._is_hf_dataset(data):
        for name, column in zip(names, added.columns):
            kept = kept.add_column(name, column.to_pylist())
        return kept
    if isinstance(data, list):
        values = added.to_pylist()
        return [{**row, **extra} for row, extra in zip(kept, values)]
    return kept  # a stream: keep_rows gave an Arrow table (handled above)


def _column_names(data) -> list[str]:
    from . import frames

    if isinstance(data, list):
        return list(dict.fromkeys(key for row in data for key in row))
    if frames._is_hf_dataset(data):
        return list(data.column_names)
    if type(data).__module__.startswith(("pandas", "polars")):
        return [str(name) for name in data.columns]
    return data.column_names  # an Arrow table
