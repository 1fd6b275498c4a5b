"""What an input's first lines look like, for the message of a read where every record
failed: JSON Lines named ``.json``, a CSV file named ``.jsonl``.

Only a hint: the format is still the one given or guessed from the name
(:func:`neardup.sources.resolve_format`); this never changes how an input is read.
"""

from __future__ import annotations

from .compression import _open_binary
from .documents import InputSource

SNIFF_BYTES = 64 * 1024  # the head of an input a hint reads
SNIFF_LINES = 5  # the non-blank lines of it that must agree
SNIFFED_INPUTS = 8  # a read that processed nothing looks at this many inputs for a hint


def format_hint(src: InputSource) -> str | None:
    """``"did you mean --format F?"`` when ``src`` was read as a format whose records fail
    on another's content (its ``hinted``: JSON, JSON Lines) and its first lines read as
    another format F (the first whose ``looks_like`` says so); else None."""
    from .registry import find_format, format_named

    spec = find_format(src.fmt)
    if spec is None or not spec.hinted:
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
    return (f"did you mean --format {looks}? ({src.display} reads as "
            f"{format_named(looks).title})")


def looks_like(lines: list[str]) -> str | None:
    """The name of the format these first non-blank lines of a file look like (JSON Lines:
    each a JSON object, more than one; JSON: an array begins; CSV or TSV: a header and
    rows of two or more fields each, all as many); None when they say nothing clear."""
    from .registry import FORMATS

    if not lines:
        return None
    return next((spec.name for spec in FORMATS
                 if spec.looks_like is not None and spec.looks_like(lines)), None)
