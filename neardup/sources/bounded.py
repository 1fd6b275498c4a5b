"""Reads that hold at most a bound: lines of a stream, a whole file, a stream kept whole.

Under a memory limit (:func:`neardup.sources.read_document_chunks` with
``max_record_bytes``) no reader holds more than about that many bytes of one record:
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
    (its line end not counted) is kept: it is consumed and an empty line stands in its
    place, its 0-based line number within the block listed in ``too long``."""
    size = block_bytes if bound is None else max(1, min(block_bytes, bound))
    while block := stream.read(size):
        too_long: list[int] = []
        if not block.endswith(b"\n"):
            if bound is None:
                block += stream.readline()
            else:  # every line before the last is shorter than the block, so than bound
                start = block.rfind(b"\n") + 1
                room = bound - (len(block) - start)
                tail = stream.readline(room + 1)
                if len(tail) > room and not tail.endswith(b"\n"):
                    skip_line(stream)
                    too_long.append(block.count(b"\n", 0, start))
                    block = block[:start] + b"\n"
                else:
                    block += tail
        yield block, too_long


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
