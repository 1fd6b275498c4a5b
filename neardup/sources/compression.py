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
(``"-"``) takes it uncompressed. A copy goes to a hidden sibling of ``path`` first, made
new for this run (:class:`neardup.sinks.staging.StagedFile`: never an input, another
file, or another run's copy), and is renamed onto ``path`` only once written whole; on
an error the sibling is removed and ``path`` is left as it was. A ``path`` that exists
and is no regular file (``/dev/null``, a named pipe) is written in place, never
replaced. A write that fails for want of space names the copy (``No space left on
device: out.jsonl``).
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import io
import lzma
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator

from .._core import remote
from ..sinks.staging import StagedFile
from .documents import STDIN, STDOUT, InputSource, printable

# a decompressed stream's read buffer: one block of lines (read_lines.LINE_BLOCK_BYTES)
STREAM_BUFFER_BYTES = 1 << 16


_COMPRESSION_SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2",
                         ".xz": "xz"}
# a write that fails for want of room: only writing the copy raises these, so they name it
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def compression_of(path: str | os.PathLike) -> str | None:
    """The compression a file name's last suffix names ("gzip", "zstd", "bz2", "xz"), else
    None; standard input and output ("-") are never compressed."""
    path = os.fspath(path)
    if path == STDIN:
        return None
    return _COMPRESSION_SUFFIXES.get(os.path.splitext(remote.shown(path))[1].lower())


def _input_compression(path: str, spec) -> str | None:
    """An input's compression, checked before any read: a format that compresses itself
    (``spec``, its :class:`~neardup.sources.format.Format`: Parquet) is never wrapped in
    one, zstd needs its package."""
    compression = None if spec.directory else compression_of(path)
    if compression is not None and spec.self_compressed:
        raise ValueError(f"{printable(path)}: {spec.self_compressed}; give the "
                         f"{spec.copy_suffix} file itself, not a {compression} copy of it")
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


def _open_file(path: str):
    """A file's bytes, read where they are: a local path, or a URL through fsspec (in a
    standard buffered reader: the readers call ``readline(limit)``)."""
    if remote.is_url(path):
        return io.BufferedReader(remote.open_input(path), STREAM_BUFFER_BYTES)
    return open(path, "rb")


@contextlib.contextmanager
def _open_binary(src: InputSource) -> Iterator[io.BufferedIOBase]:
    """The input's bytes as a stream, decompressed on the way when it is compressed."""
    with io.BytesIO(src.data) if src.data is not None else _open_file(src.given) as raw:
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
def _open_output(target: str, inputs: Iterable[str] = ()) -> Iterator[io.BufferedIOBase]:
    """A binary stream for a copy: ``target`` written whole or not at all (see
    :class:`~neardup.sinks.staging.StagedFile`; ``inputs`` are never touched) and
    compressed as its name says; "-": standard output as it is, flushed and left open."""
    if target == STDOUT:
        sys.stdout.flush()
        stdout = sys.stdout.buffer
        yield stdout
        stdout.flush()
        return
    try:
        with _written_at(target, inputs) as path, open(path, "wb") as raw:
            with _compressed(raw, target) as stream:
                yield stream
    except OSError as err:
        if err.errno in _NO_ROOM and err.filename is None:
            raise type(err)(err.errno, err.strerror, target) from err
        raise


def _written_at(target: str, inputs: Iterable[str]):
    """Where ``target`` is written: a stage renamed onto it once whole, or, for a target
    that exists and is no regular file (a device, a named pipe), the target itself."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return contextlib.nullcontext(target)
    return StagedFile(target, keep=inputs)


@contextlib.contextmanager
def _compressed(raw: io.BufferedIOBase, target: str) -> Iterator[io.BufferedIOBase]:
    compression = compression_of(target)
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
