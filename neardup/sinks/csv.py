"""CSV tables: Arrow's CSV writer, a header row, string cells that a spreadsheet would run
as a formula escaped (OWASP's advice against CSV injection); read back with the id
columns kept as strings."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from .format import TableFormat
from .results import STRING_COLUMNS

_FORMULA_START = "^[=+\\-@\\t\\r]"


def write_csv(sink, schema: pa.Schema, tables, escape_formulas: bool) -> int:
    """CSV with a header to a path or a binary stream; returns the rows written."""
    rows = 0
    with pa_csv.CSVWriter(sink, schema) as writer:
        for table in tables:
            writer.write_table(escape_formulas_in(table) if escape_formulas else table)
            rows += table.num_rows
    return rows


def escape_formulas_in(table: pa.Table) -> pa.Table:
    """String cells beginning with =, +, -, @, tab or CR, prefixed with ' (OWASP)."""
    for k, field in enumerate(table.schema):
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            column = table.column(k)
            risky = pc.match_substring_regex(column, _FORMULA_START)
            if pc.any(risky).as_py():
                quoted = pc.binary_join_element_wise(pa.scalar("'", field.type), column,
                                                     pa.scalar("", field.type))
                table = table.set_column(k, field, pc.if_else(risky, quoted, column))
    return table


def read_csv(data: bytes) -> pa.Table:
    types = {name: pa.string() for name in STRING_COLUMNS}
    return pa_csv.read_csv(pa.BufferReader(data),
                           convert_options=pa_csv.ConvertOptions(column_types=types))


SINK = TableFormat("csv", write_csv, read_csv, escapes_formulas=True)
