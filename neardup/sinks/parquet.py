"""Parquet tables: the schema as given, row groups cut at fixed row counts
(``ROW_GROUP_ROWS``), not where batches end, so the same rows are the same bytes."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from .format import TableFormat

ROW_GROUP_ROWS = 1 << 20


def write_parquet(sink, schema: pa.Schema, tables, escape_formulas: bool = False) -> int:
    """Parquet to a path or a binary stream; returns the rows written."""
    rows = 0
    with pq.ParquetWriter(sink, schema) as writer:
        pending: list[pa.Table] = []
        held = 0
        for table in tables:
            rows += table.num_rows
            pending.append(table)
            held += table.num_rows
            while held >= ROW_GROUP_ROWS:  # fixed row groups: same bytes however batched
                whole = pa.concat_tables(pending)
                # one chunk per column: a page's bytes depend on where chunks end
                writer.write_table(whole.slice(0, ROW_GROUP_ROWS).combine_chunks(),
                                   row_group_size=ROW_GROUP_ROWS)
                pending, held = [whole.slice(ROW_GROUP_ROWS)], held - ROW_GROUP_ROWS
        if held or rows == 0:
            last = pa.concat_tables(pending) if pending else schema.empty_table()
            writer.write_table(last.combine_chunks(), row_group_size=ROW_GROUP_ROWS)
    return rows


def read_parquet(data: bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(data))


SINK = TableFormat("parquet", write_parquet, read_parquet, streams=False)
