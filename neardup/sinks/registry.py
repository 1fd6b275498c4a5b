"""The output table formats, one line each, in the order ``--output-format`` lists them.

A new one is a module of this package that exports a
:class:`~neardup.sinks.format.TableFormat` and one line below (see CONTRIBUTING.md).
"""

from __future__ import annotations

from .._core.choices import not_one_of
from . import csv, jsonl, parquet
from .format import TableFormat

SINKS: tuple[TableFormat, ...] = (
    csv.SINK,
    jsonl.SINK,
    parquet.SINK,
)

OUTPUT_FORMATS = tuple(sink.name for sink in SINKS)
STREAMED_FORMATS = tuple(sink.name for sink in SINKS if sink.streams)  # to standard output
BY_NAME = {sink.name: sink for sink in SINKS}


def sink_named(name: str) -> TableFormat:
    """The output format called ``name``; ValueError naming the choices for any other."""
    sink = BY_NAME.get(name)
    if sink is None:
        raise not_one_of("output format", name, OUTPUT_FORMATS)
    return sink
