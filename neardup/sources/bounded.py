"""Reads that hold at most a bound: lines of a stream, a whole file, a stream kept whole.

Under a memory limit (:func:`neardup.sources.read_document_chunks` with
``max_record_bytes``) no reader holds more than about that many bytes of one record
(a block of lines, 1 MB for JSON Lines, is read whole and its lines then measured):
a longer line (line files, JSON Lines, a CSV/TSV row) or file (in a directory,
decompressed) is consumed ``DISCARD_BYTES`` at a time without being kept, and the
record is skipped as "record larger than N bytes" (:func:`too_large`). A stream the
readers must keep whole (standard input or a named pipe, for the dedup copy; a JSON
file, parsed whole) is charged as it grows: past ``max_stream_bytes`` the read is
refused (:class:`StreamTooLarge`), before the limit is. Without a bound every read is
as long as its record.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

DISCARD_BYTES = 1 << 16  # what is read at a time of a record too large to keep


def too_large(bound: int) -> str:
    """The skip reason of a record longer than ``bound`` bytes."""
    return f"record larger than {bound:,} bytes"


class StreamTooLarge(ValueError):
    """A stream kept whole grew past what the memory limit leaves for it."""


def line_blocks(stream, block_bytes: int, bound: int | None = None
                ) -> Iterator[tuple[bytes, list[int]]]:
    """(block, too long) for the stream's bytes in blocks that end with a line end (or the
    stream's end): about ``block_bytes`` at a time, and no line longer than ``bound`` bytes
    (its line end not counted) is kept: an empty line stands in its place, its 0-based line
    number within the block listed in ``too long``. The last line of a block, read on to
    its end, is consumed unkept once it passes the bound; the lines inside the block are
    measured after it is read, so with a bound below ``block_bytes`` a block is held
    before its long lines are dropped (no more of a line is held than the larger of the
    block and the bound).

    The block stays ``block_bytes`` whatever the bound: a memory limit sets the bound to
    the longest record counted (1,334 bytes for 200-word documents), and blocks of that
    size cost JSON Lines a parse call every two lines (18 s for 100k documents, 2.5 s in
    1 MB blocks)."""
    while block := stream.read(block_bytes):
        too_long: list[int] = []
        if not block.endswith(b"\n"):
            if bound is None:
                block += stream.readline()
            else:
                start = block.rfind(b"\n") + 1
                room = bound - (len(block) - start)
                tail = stream.readline(room + 1) if room >= 0 else b""
                if room < 0 or (len(tail) > room and not tail.endswith(b"\n")):
                    skip_line(stream)
                    too_long.append(block.count(b"\n", 0, start))
                    block = block[:start] + b"\n"
                else:
                    block += tail
        if bound is not None and len(block) > bound + 1:
            block, inside = _without_long_lines(block, bound)
            too_long = sorted(set(too_long).union(inside))
        yield block, too_long


def _without_long_lines(block: bytes, bound: int) -> tuple[bytes, list[int]]:
    """The block with each line longer than ``bound`` emptied (its line end kept), and
    those lines' numbers within it."""
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == ord("\n"))
    if not block.endswith(b"\n"):
        ends = np.append(ends, len(block))
    starts = np.concatenate(([0], ends[:-1] + 1))
    long = np.flatnonzero(ends - starts > bound).tolist()
    if not long:
        return block, []
    pieces, kept_from = [], 0
    for k in long:
        pieces.append(block[kept_from:starts[k]])
        kept_from = int(ends[k])
    pieces.append(block[kept_from:])
    return b"".join(pieces), long


def skip_line(stream) -> None:
    """Consume the rest of the current line (through its line end), keeping none of it."""
    while (chunk := stream.readline(DISCARD_BYTES)) and not chunk.endswith(b"\n"):
        pass


def read_at_most(stream, bound: int | None) -> bytes | None:
    """The stream's bytes to its end, or None when it holds more than ``bound`` (then at
    most ``bound + 1`` of them were read)."""
    if bound is None:
        return stream.read()
    data = stream.read(bound + 1)
    return None if len(data) > bound else data
