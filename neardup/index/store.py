"""The on-disk index: a versioned manifest and immutable columnar segments.

An index is a directory::

    IDX/manifest.json            format version, options, band plan, segment list
    IDX/lock                     held (flock) by the one process writing; holds its pid
    IDX/segments/seg-000001/     one immutable segment per build, add or compact
        ids.offsets.npy    int64[n + 1]   document ids, UTF-8, Arrow-style offsets
        ids.data.npy       uint8[bytes]
        sets.offsets.npy   int64[n + 1]   shingle sets in CSR (sorted, unique per row),
        sets.values.npy    uint32|uint64  for the exact Jaccard of a candidate
        signatures.npy     (n, K) uint32 (uint16/uint8 with b-bit MinHash)
        bands.keys.npy     (b, n) uint64  each band's keys, sorted (ties by document)
        bands.docs.npy     (b, n) int32   the document of each sorted key

Every array is an .npy file opened with ``np.load(mmap_mode="r")``: a query reads the
pages it binary-searches (``np.searchsorted`` on ``bands.keys``) and the CSR rows of its
candidates, never a whole segment. A segment holds only documents that can pair (at
least ``min_shingles`` shingles, not set aside), in the order they were added; document
g of the index is row g - base of the segment holding it, segments in manifest order.

Writes are atomic: a segment is written into a temporary folder, its files fsynced,
renamed into ``segments/``; then ``manifest.json`` is written to a temporary file,
fsynced and ``os.replace``-d over the old one (and the directory fsynced). A reader
sees the segments the manifest it read lists, which are never modified; a writer
killed at any point leaves the previous manifest, and the next writer sweeps the
unlisted folders. Writers take ``lock`` with ``fcntl.flock`` (exclusive, non-blocking):
a second writer is refused with the first one's pid. The manifest lists each file's
bytes and SHA-256; opening checks the sizes, :func:`verify_checksums` the hashes.
Same documents and options give byte-identical files (no timestamps anywhere).
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import lsh
from ..shingling import ShingleSets
from ..sinks.staging import file_sha256

FORMAT = "neardup-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LOCK = "lock"
SEGMENTS = "segments"
SEGMENT_FILES = ("ids.offsets.npy", "ids.data.npy", "sets.offsets.npy", "sets.values.npy",
                 "signatures.npy", "bands.keys.npy", "bands.docs.npy")
# test hook: the named write step kills its own process (SIGKILL), as a crash would
CRASH_ENV = "NEARDUP_INDEX_CRASH_AT"
_TEMP = ".tmp-"


class IndexBusyError(RuntimeError):
    """Another process holds the index's write lock."""


def crash_point(name: str) -> None:
    """Die here, at once, when the environment asks for it (tests of atomicity)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


class WriteLock:
    """``with WriteLock(path):`` the one writer of the index at ``path``.

    ``fcntl.flock`` on ``path/lock`` (exclusive, non-blocking), released when the file
    is closed, also by the kernel when the process dies: a killed writer never leaves
    the index locked. The holder writes its pid into the file for the message.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.fd: int | None = None

    def __enter__(self) -> WriteLock:
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise IndexBusyError(f"index {self.path} is being written by another process "
                                 f"(pid {holder}); try again when it has finished") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the flock
            self.fd = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(path: str | os.PathLike, manifest: dict) -> None:
    """Replace ``path/manifest.json`` atomically: temp file, fsync, os.replace, fsync dir."""
    path = Path(path)
    temp = path / f"{MANIFEST}{_TEMP}{os.getpid()}"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    crash_point("manifest-written")
    os.replace(temp, path / MANIFEST)
    _fsync_dir(path)


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of the index at ``path``; ValueError if it is none or a newer format."""
    file = Path(path) / MANIFEST
    if not file.is_file():
        raise ValueError(f"{path} is not a neardup index (no {MANIFEST}); create one with "
                         f"`neardup index build CORPUS -o {path}`")
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{file} is not valid JSON: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{file} is not a neardup index manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: index format version {manifest.get('format_version')}; "
                         f"this neardup reads version {FORMAT_VERSION}")
    return manifest


def sweep_unlisted(path: str | os.PathLike, manifest: dict | None) -> None:
    """Remove what killed writers left: segment folders the manifest does not list and
    temporary manifests. Call only while holding the :class:`WriteLock`."""
    path = Path(path)
    listed = {s["name"] for s in (manifest or {}).get("segments", [])}
    for folder in (path / SEGMENTS).glob("*"):
        if folder.name not in listed:
            shutil.rmtree(folder, ignore_errors=True)
    for temp in path.glob(f"{MANIFEST}{_TEMP}*"):
        temp.unlink(missing_ok=True)


@dataclass
class SegmentPiece:
    """Rows to write into a segment: ids as UTF-8 with offsets, sets, signatures and,
    when already computed (compaction), each band's keys in row order."""

    id_offsets: np.ndarray  # int64[n + 1]
    id_data: np.ndarray  # uint8
    sets: ShingleSets
    signatures: np.ndarray  # (n, K)
    band_column: object = None  # band -> uint64[n], or None: computed from signatures

    @property
    def n(self) -> int:
        return self.sets.n

    @classmethod
    def from_ids(cls, ids, sets: ShingleSets, signatures: np.ndarray) -> SegmentPiece:
        array = pa.array(list(ids), type=pa.large_string())
        if array.null_count:
            raise ValueError("document ids must not be missing")
        _, offsets, data = array.buffers()
        id_offsets = np.frombuffer(offsets, dtype=np.int64)[:len(array) + 1].copy()
        id_data = (np.frombuffer(data, dtype=np.uint8)[:int(id_offsets[-1])].copy()
                   if data is not None else np.empty(0, dtype=np.uint8))
        return cls(id_offsets, id_data, sets, np.ascontiguousarray(signatures))


def write_segment(root: str | os.PathLike, name: str, pieces: list[SegmentPiece],
                  bands: int, rows: int, chunk: int = 1 << 16) -> dict:
    """Write ``pieces`` (in order) as the segment ``root/segments/name``; its manifest entry.

    Arrays are written through ``np.lib.format.open_memmap`` a piece (and a chunk of rows)
    at a time, so compaction holds one band's keys and order (16 bytes a document), not
    the index. The folder appears under its name only when every file is on disk.
    """
    root = Path(root)
    n = sum(p.n for p in pieces)
    if n == 0:
        raise ValueError("a segment holds at least one document")
    (root / SEGMENTS).mkdir(exist_ok=True)
    temp = root / SEGMENTS / f"{name}{_TEMP}{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir()
    _write_csr(temp, "ids.offsets.npy", "ids.data.npy", np.uint8,
               [(p.id_offsets, p.id_data) for p in pieces], n, chunk)
    _write_csr(temp, "sets.offsets.npy", "sets.values.npy", pieces[0].sets.values.dtype,
               [(p.sets.offsets, p.sets.values) for p in pieces], n, chunk)
    signature_dtype = pieces[0].signatures.dtype
    num_perm = pieces[0].signatures.shape[1]
    signatures = _create(temp / "signatures.npy", signature_dtype, (n, num_perm))
    row = 0
    for p in pieces:
        for lo in range(0, p.n, chunk):
            hi = min(lo + chunk, p.n)
            signatures[row + lo:row + hi] = p.signatures[lo:hi]
        row += p.n
    _close(signatures)
    crash_point("segment-half-written")
    _write_bands(temp, pieces, n, bands, rows)
    for file in SEGMENT_FILES:
        with open(temp / file, "rb+") as f:
            os.fsync(f.fileno())
    _fsync_dir(temp)
    final = root / SEGMENTS / name
    os.rename(temp, final)
    _fsync_dir(root / SEGMENTS)
    crash_point("segment-written")
    files = [{"name": file, "bytes": (final / file).stat().st_size,
              "sha256": file_sha256(final / file)} for file in SEGMENT_FILES]
    return {"name": name, "documents": n, "bytes": sum(f["bytes"] for f in files),
            "files": files}


def _write_csr(folder: Path, offsets_name: str, values_name: str, dtype, parts: list,
               n: int, chunk: int) -> None:
    """Rows of several CSR parts (offsets, values) as one CSR pair of files."""
    offsets_out = _create(folder / offsets_name, np.int64, (n + 1,))
    values_out = _create(folder / values_name, dtype,
                         (sum(int(values.size) for _, values in parts),))
    offsets_out[0] = 0
    row, at = 0, 0
    for offsets, values in parts:
        rows = offsets.size - 1
        offsets_out[row + 1:row + rows + 1] = np.asarray(offsets[1:]) - offsets[0] + at
        step = chunk * 256
        for lo in range(0, values.size, step):  # a block at a time: values may be mapped
            hi = min(lo + step, values.size)
            values_out[at + lo:at + hi] = values[lo:hi]
        row, at = row + rows, at + int(values.size)
    _close(offsets_out)
    _close(values_out)


def _write_bands(folder: Path, pieces: list[SegmentPiece], n: int, bands: int,
                 rows: int) -> None:
    """Each band's keys sorted, and the document of each (stable: ties by document)."""
    doc_dtype = np.int32 if n < 2**31 else np.int64
    keys_out = _create(folder / "bands.keys.npy", np.uint64, (bands, n))
    docs_out = _create(folder / "bands.docs.npy", doc_dtype, (bands, n))
    fresh = [lsh.band_keys(p.signatures, bands, rows) if p.band_column is None else None
             for p in pieces]
    for band in range(bands):
        column = np.concatenate([p.band_column(band) if keys is None else keys[:, band]
                                 for p, keys in zip(pieces, fresh)])
        order = np.argsort(column, kind="stable")
        keys_out[band] = column[order]
        docs_out[band] = order.astype(doc_dtype)
    _close(keys_out)
    _close(docs_out)


def _create(path: Path, dtype, shape: tuple) -> np.ndarray:
    if int(np.prod(shape)) == 0:  # an empty memory map cannot be created: write the header
        np.save(path, np.empty(shape, dtype=dtype))
        return np.empty(shape, dtype=dtype)
    return np.lib.format.open_memmap(path, "w+", dtype, shape)


def _close(array: np.ndarray) -> None:
    if isinstance(array, np.memmap):
        array.flush()
        array._mmap.close()


def _load(path: Path) -> np.ndarray:
    """The array at ``path`` memory-mapped (read-only), as a plain ndarray view.

    Reads are random (binary searches, the CSR rows of candidates): the kernel is told
    so (MADV_RANDOM), or each page fault would read ahead 128 KiB around it, and a query
    of a few thousand rows would pull in a gigabyte of a large index."""
    array = np.load(path, mmap_mode="r")
    if not isinstance(array, np.memmap):
        return array
    if hasattr(mmap, "MADV_RANDOM"):
        array._mmap.madvise(mmap.MADV_RANDOM)
    return array.view(np.ndarray)


@dataclass(repr=False)
class Segment:
    """One segment's arrays, memory-mapped; nothing is read until it is indexed."""

    name: str
    n: int
    id_offsets: np.ndarray
    id_data: np.ndarray
    sets: ShingleSets
    signatures: np.ndarray
    band_keys: np.ndarray  # (b, n) uint64, each row sorted
    band_docs: np.ndarray  # (b, n) int32

    def __repr__(self) -> str:
        return f"Segment({self.name!r}, {self.n:,} documents)"

    @classmethod
    def open(cls, root: str | os.PathLike, entry: dict) -> Segment:
        folder = Path(root) / SEGMENTS / entry["name"]
        for file in entry["files"]:
            path = folder / file["name"]
            if not path.is_file() or path.stat().st_size != file["bytes"]:
                raise ValueError(f"index {root}: {entry['name']}/{file['name']} is missing or "
                                 f"has another size than {MANIFEST} says")
        arrays = {f: _load(folder / f) for f in SEGMENT_FILES}
        sets = ShingleSets(arrays["sets.offsets.npy"], arrays["sets.values.npy"])
        return cls(entry["name"], int(entry["documents"]), arrays["ids.offsets.npy"],
                   arrays["ids.data.npy"], sets, arrays["signatures.npy"],
                   arrays["bands.keys.npy"], arrays["bands.docs.npy"])

    def ids(self, rows: np.ndarray | None = None) -> pa.Array:
        """The ids of ``rows`` (all when None) as an Arrow string array."""
        array = pa.LargeStringArray.from_buffers(
            self.n, pa.py_buffer(self.id_offsets), pa.py_buffer(self.id_data))
        if rows is not None:
            array = array.take(pa.array(np.asarray(rows, dtype=np.int64)))
        return array.cast(pa.string())

    def band_column(self, band: int) -> np.ndarray:
        """uint64[n]: band ``band``'s key of every row, in row order (for compaction)."""
        column = np.empty(self.n, dtype=np.uint64)
        column[self.band_docs[band]] = self.band_keys[band]
        return column

    def piece(self) -> SegmentPiece:
        return SegmentPiece(self.id_offsets, self.id_data, self.sets, self.signatures,
                            self.band_column)


def verify_checksums(root: str | os.PathLike, manifest: dict) -> list[str]:
    """The files whose SHA-256 differs from the manifest's (empty: all intact)."""
    bad = []
    for entry in manifest["segments"]:
        for file in entry["files"]:
            path = Path(root) / SEGMENTS / entry["name"] / file["name"]
            if not path.is_file() or file_sha256(path) != file["sha256"]:
                bad.append(f"{entry['name']}/{file['name']}")
    return bad

