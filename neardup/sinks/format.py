"""What neardup knows about an output table format, in one object: :class:`TableFormat`.

Each format's module (``sinks/csv.py``, ``sinks/jsonl.py``, ``sinks/parquet.py``) exports
its ``TableFormat``; :mod:`neardup.sinks.registry` lists them, one line a format, and the
results folder, the tables written beside a run (``--explain``), standard output and
:func:`~neardup.sinks.read_table` look them up there. A table file is named after its
format (``pairs.parquet``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TableFormat:
    """One output format.

    ``name``: the value of ``--output-format``, and a file's suffix without its dot.
    ``write(sink, schema, tables, escape_formulas)``: the rows of ``tables`` (each of
    ``schema``; an iterable of pyarrow Tables) to ``sink``, a path or a binary stream;
    returns the rows written. The same rows give the same bytes, however they are
    batched. ``read(data)``: a table from a file's bytes, ids kept as strings.
    ``streams``: it can be written to standard output. ``escapes_formulas``: it takes
    ``escape_formulas`` (a spreadsheet's formulas, see :func:`neardup.sinks.write_folder`).
    """

    name: str
    write: Callable[[object, object, Iterable, bool], int]
    read: Callable[[bytes], object]
    streams: bool = True
    escapes_formulas: bool = False

    @property
    def suffix(self) -> str:
        return f".{self.name}"


def words(items, last: str = "and") -> str:
    """``a, b and c``: a list in a sentence."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"
