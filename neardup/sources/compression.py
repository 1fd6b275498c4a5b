"""Compressed streams in and out, and output files written whole or not at all.

Reading: a file whose name ends in ``.gz``, ``.zst``/``.zstd``, ``.bz2`` or ``.xz``
after the format's suffix (``docs.jsonl.gz``) is read as a stream
(:func:`_open_binary`), record for record as the file it holds (same accounting, same
ids); zstd needs the ``zstandard`` package. A stream that turns out corrupt or
truncated ends its file there (:class:`_Decompressed`): what came before is read, the
rest is one failed record ("corrupt or truncated gzip data: ..."). Parquet compresses
its own columns and is not read compressed; a directory's compressed files are read
the same way, one record each (:mod:`neardup.sources.directory`).

Writing: a dedup copy is compressed as its name says (:func:`_open_output`; gzip
without a name or a time, so the same copy is the same bytes), standard output
(``"-"``) takes it uncompressed. A copy goes to ``path.partial`` first and is renamed
onto ``path`` only once written whole (:class:`_AtomicFile`); on an error the partial
file is removed and ``path`` is left as it was.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import sys
import zlib
from collections.abc import Iterator

from .documents import STDIN, STDOUT, InputSource, printable

# a decompressed stream's read buffer: one block of lines (read_lines.LINE_BLOCK_BYTES)
STREAM_BUFFER_BYTES = 1 << 16


_COMPRESSION_SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2",
                         ".xz": "xz"}


def compression_of(path: str | os.PathLike) -> str | None:
    """The compression a file name's last suffix names ("gzip", "zstd", "bz2", "xz"), else
    None; standard input and output ("-") are never compressed."""
    path = os.fspath(path)
    if path == STDIN:
        return None
    return _COMPRESSION_SUFFIXES.get(os.path.splitext(path)[1].lower())


def _input_compression(path: str, fmt: str) -> str | None:
    """An input's compression, checked before any read: one Parquet is never wrapped in,
    one zstd needs its package."""
    compression = None if fmt == "dir" else compression_of(path)
    if compression is not None and fmt == "parquet":
        raise ValueError(f"{printable(path)}: Parquet compresses its own columns; give the "
                         f".parquet file itself, not a {compression} copy of it")
    if compression == "zstd":
        _zstandard(path)
    return compression


def _zstandard(path: str):
    try:
        import zstandard
    except ImportError:
        raise ValueError(f"{printable(path)} is zstd-compressed: .zst files need the "
                         f"zstandard package (pip install zstandard)") from None
    return zstandard


@contextlib.contextmanager
def _open_binary(src: InputSource) -> Iterator[io.BufferedIOBase]:
    """The input's bytes as a stream, decompressed on the way when it is compressed."""
    with io.BytesIO(src.data) if src.data is not None else open(src.given, "rb") as raw:
        if src.compression is None:
            yield raw
            return
        if src.compression == "gzip":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif src.compression == "bz2":
            stream = bz2.BZ2File(raw, "rb")
        elif src.compression == "xz":
            stream = lzma.LZMAFile(raw, "rb")
        else:
            stream = _zstandard(src.given).ZstdDecompressor().stream_reader(
                raw, read_across_frames=True, closefd=False)
        with stream:
            yield io.BufferedReader(_Decompressed(stream, src), STREAM_BUFFER_BYTES)


class _Decompressed(io.RawIOBase):
    """A decompressing stream that ends where its data breaks (corrupt, truncated), with
    the reason left in ``src.damaged``: the readers see the file end there, and the
    read accounts for the rest as one failed record."""

    def __init__(self, stream, src: InputSource):
        self.stream, self.src = stream, src
        self.errors: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError,
                                                        zlib.error)
        if src.compression == "zstd":
            self.errors += (_zstandard(src.given).ZstdError,)
        self.broken = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.broken:
            return 0
        try:  # read1: what one step decompresses, so the data before a break comes through
            data = self.stream.read1(len(buffer))
        except self.errors as err:
            self.broken = True
            self.src.damaged = f"corrupt or truncated {self.src.compression} data: {err}"
            return 0
        buffer[:len(data)] = data
        return len(data)


@contextlib.contextmanager
def _open_output(target: str) -> Iterator[io.BufferedIOBase]:
    """A binary stream for a copy: ``target`` written whole or not at all (see
    :class:`_AtomicFile`) and compressed as its name says; "-": standard output as it
    is, flushed and left open."""
    if target == STDOUT:
        sys.stdout.flush()
        stdout = sys.stdout.buffer
        yield stdout
        stdout.flush()
        return
    compression = compression_of(target)
    with _AtomicFile(target) as partial, open(partial, "wb") as raw:
        if compression is None:
            yield raw
            return
        if compression == "gzip":  # no name, no time: the same copy byte for byte
            stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
        elif compression == "bz2":
            stream = bz2.BZ2File(raw, "wb")
        elif compression == "xz":
            stream = lzma.LZMAFile(raw, "wb")
        else:
            stream = _zstandard(target).ZstdCompressor().stream_writer(raw, closefd=False)
        with stream:
            yield stream


class _AtomicFile:
    """Open ``path + '.partial'``; on success rename it onto ``path``, on error remove it."""

    def __init__(self, path: str):
        self.path = path
        self.partial = f"{path}.partial"

    def __enter__(self) -> str:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        return self.partial

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            os.replace(self.partial, self.path)
        elif os.path.exists(self.partial):
            os.remove(self.partial)
