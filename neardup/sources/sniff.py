"""What an input's first lines look like, for the message of a read where every record
failed: JSON Lines named ``.json``, a CSV file named ``.jsonl``.

Only a hint: the format is still the one given or guessed from the name
(:func:`neardup.sources.resolve_format`); this never changes how an input is read.
"""

from __future__ import annotations

import csv
import json

from .compression import _open_binary
from .documents import InputSource

SNIFF_BYTES = 64 * 1024  # the head of an input a hint reads
SNIFF_LINES = 5  # the non-blank lines of it that must agree
SNIFFED_FORMATS = ("json", "jsonl")  # formats whose records fail on another format's content
SNIFFED_INPUTS = 8  # a read that processed nothing looks at this many inputs for a hint


def format_hint(src: InputSource) -> str | None:
    """``"did you mean --format F?"`` when ``src`` was read as JSON or JSON Lines and its
    first lines read as another format F (jsonl, json, csv or tsv); else None."""
    if src.fmt not in SNIFFED_FORMATS:
        return None
    try:
        with _open_binary(src) as f:
            head = f.read(SNIFF_BYTES)
    except (OSError, EOFError, ValueError):  # unreadable now: no hint
        return None
    lines = [line for line in head.decode(src.encoding, errors="replace").splitlines()
             if line.strip()]
    if len(head) == SNIFF_BYTES and len(lines) > 1:
        lines.pop()  # cut at the end of the head
    looks = looks_like(lines[:SNIFF_LINES])
    if looks is None or looks == src.fmt:
        return None
    return f"did you mean --format {looks}? ({src.display} reads as {_NAMES[looks]})"


_NAMES = {"jsonl": "JSON Lines", "json": "a JSON file", "csv": "CSV", "tsv": "TSV"}


def looks_like(lines: list[str]) -> str | None:
    """The format these first non-blank lines of a file look like: "jsonl" (each a JSON
    object, more than one), "json" (an array begins), "csv" or "tsv" (a header and rows
    of two or more fields each, all as many); None when they say nothing clear."""
    if not lines:
        return None
    if len(lines) > 1 and all(_is_json_object(line) for line in lines):
        return "jsonl"
    if lines[0].lstrip().startswith("["):
        return "json"
    for fmt, delimiter in (("tsv", "\t"), ("csv", ",")):
        widths = {len(row) for row in csv.reader(lines, delimiter=delimiter)}
        if len(widths) == 1 and widths.pop() >= 2 and len(lines) > 1:
            return fmt
    return None


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False
