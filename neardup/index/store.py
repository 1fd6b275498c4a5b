"""The on-disk index: a versioned manifest and immutable columnar segments.

An index is a directory::

    IDX/manifest.json            format version, options, band plan, segment list
    IDX/lock                     held (flock) by the one process writing; holds its pid
    IDX/tombstones/tomb-000003.npy  int64, the removed documents (sorted), if any
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

Writes are atomic: a segment is written into a temporary folder (plain writes front
to back, each file's space reserved first with ``posix_fallocate``: a full disk is an
OSError naming the file, never a SIGBUS from a mapped page), its files fsynced, renamed
into ``segments/``; then ``manifest.json`` is written to a temporary file, fsynced and
``os.replace``-d over the old one (and the directory fsynced). A reader sees the
segments the manifest it read lists, which are never modified. A writer that fails
(a full disk, Ctrl-C, SIGTERM) removes what it wrote before the error propagates; one
killed at any point leaves the previous manifest, and the next writer sweeps what it
left: only names neardup writes (``seg-NNNNNN``, ``seg-NNNNNN.tmp-PID``, temporary
manifests), never a link, never anything else a user keeps in ``segments/``. Writers
take ``lock`` with ``fcntl.flock`` (exclusive, non-blocking): a second writer is refused
with the first one's pid. The manifest lists each file's bytes and SHA-256; opening
checks them as :mod:`neardup.index.integrity` says (the structure on every open, the
hashes once per file version), :func:`verify_checksums` hashes every file always.
Same documents and options give byte-identical files (no timestamps anywhere).

Removing documents (:meth:`neardup.Index.remove`) writes a new tombstones file, named for
the manifest version that lists it (with its bytes, SHA-256 and count), then swaps the
manifest; documents keep their numbers (adds append), so the file stays true until a
``compact`` drops the removed rows and the file with them. The one listed is the only
one kept: a sweep removes the others. An index with tombstones is format 2.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import mmap
import os
import re
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import lsh
from .._core import interrupt
from ..shingling import ShingleSets
from ..sinks.staging import file_sha256
from .integrity import (
    TOMBSTONE_NAME,
    VERIFIED,
    check_contents,
    check_documents,
    check_layout,
    check_manifest,
    check_rows,
    corrupt,
    load_array,
)

FORMAT = "neardup-index"
FORMAT_VERSION = 1
# an index with tombstones is written as format 2: a neardup that reads only format 1
# refuses it rather than let removed documents match again
TOMBSTONED_FORMAT_VERSION = 2
READ_FORMAT_VERSIONS = (FORMAT_VERSION, TOMBSTONED_FORMAT_VERSION)
TOMBSTONES = "tombstones"
MANIFEST = "manifest.json"
LOCK = "lock"
SEGMENTS = "segments"
SEGMENT_FILES = ("ids.offsets.npy", "ids.data.npy", "sets.offsets.npy", "sets.values.npy",
                 "signatures.npy", "bands.keys.npy", "bands.docs.npy")
# test hooks: the named write step kills its own process (SIGKILL), as a crash would,
# or stops it (SIGSTOP) for a test to signal it there
CRASH_ENV = "NEARDUP_INDEX_CRASH_AT"
STOP_ENV = "NEARDUP_INDEX_STOP_AT"
_TEMP = ".tmp-"
MERGE_ROWS = 1 << 20  # band keys a merge of sorted segments holds at a time (~44 MiB)
# the names a writer creates in segments/: the only ones a sweep may remove
WRITTEN_NAME = re.compile(r"seg-[0-9]{6,}(\.tmp-[0-9]+)?")


class IndexBusyError(RuntimeError):
    """Another process holds the index's write lock."""


def crash_point(name: str) -> None:
    """Die (or stop) here, at once, when the environment asks for it (tests of atomicity
    and of cleaning up)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(STOP_ENV) == name:
        os.kill(os.getpid(), signal.SIGSTOP)


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


def fsync_dir(path: Path) -> None:
    """fsync a directory: the renames and creations in it are on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(path: str | os.PathLike, manifest: dict) -> None:
    """Replace ``path/manifest.json`` atomically: temp file, fsync, os.replace, fsync dir."""
    path = Path(path)
    manifest["format_version"] = (TOMBSTONED_FORMAT_VERSION if manifest.get(TOMBSTONES)
                                  else FORMAT_VERSION)
    temp = path / f"{MANIFEST}{_TEMP}{os.getpid()}"
    try:
        with naming(temp), open(temp, "w", encoding="utf-8") as f:
            f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        crash_point("manifest-written")
        os.replace(temp, path / MANIFEST)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(path)


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of the index at ``path``; ValueError if it is none or a newer format."""
    file = Path(path) / MANIFEST
    if not file.is_file():
        raise ValueError(f"{path} is not a neardup index (no {MANIFEST}); create one with "
                         f"`neardup index build CORPUS -o {path}`")
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise corrupt(file, f"not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{file} is not a neardup index manifest")
    if manifest.get("format_version") not in READ_FORMAT_VERSIONS:
        raise ValueError(f"{path}: index format version {manifest.get('format_version')}; "
                         f"this neardup reads versions {READ_FORMAT_VERSIONS}")
    if manifest.get("mode") == "bloom":  # neardup.index.bloom: filters, no documents
        raise ValueError(f"{path} is a Bloom index (one Bloom filter per band, no "
                         f"documents): open it with neardup.index.bloom.BloomIndex")
    check_manifest(file, manifest, SEGMENT_FILES)
    return manifest


def sweep_unlisted(path: str | os.PathLike, manifest: dict | None) -> None:
    """Remove what killed writers left: the segment folders neardup writes
    (:data:`WRITTEN_NAME`) that the manifest does not list, and temporary manifests.
    Anything else in ``segments/`` (it may be a link to a disk the user shares) is
    the user's: links are neither followed nor removed. Call only while holding the
    :class:`WriteLock`."""
    path = Path(path)
    listed = {s["name"] for s in (manifest or {}).get("segments", [])}
    try:
        entries = list(os.scandir(path / SEGMENTS))
    except FileNotFoundError:
        entries = []
    for entry in entries:
        if (entry.name not in listed and WRITTEN_NAME.fullmatch(entry.name)
                and entry.is_dir(follow_symlinks=False)):
            shutil.rmtree(entry.path, ignore_errors=True)
    tombstones = (manifest or {}).get(TOMBSTONES) or {}
    for file in (path / TOMBSTONES).glob("tomb-*") if (path / TOMBSTONES).is_dir() else []:
        name = file.name.split(_TEMP)[0]
        if (TOMBSTONE_NAME.fullmatch(name) and file.name != tombstones.get("name")
                and file.is_file() and not file.is_symlink()):
            file.unlink(missing_ok=True)
    for pattern in (f"{MANIFEST}{_TEMP}*", f"{VERIFIED}{_TEMP}*"):
        for temp in path.glob(pattern):
            if temp.is_file() and not temp.is_symlink():
                temp.unlink(missing_ok=True)


def discard_unlisted(path: str | os.PathLike) -> None:
    """After a failed write: sweep against the manifest on disk (the one a reader sees;
    it may already be the new one if only the last fsync failed)."""
    with contextlib.suppress(Exception):
        sweep_unlisted(path, read_manifest(path))


def write_tombstones(root: str | os.PathLike, version: int, documents: np.ndarray) -> dict:
    """Write the removed documents (int64, sorted, unique) as ``tombstones/tomb-VVVVVV.npy``
    for manifest version ``version`` (temp file, fsync, rename, as a segment); its
    manifest entry (not yet listed)."""
    folder = Path(root) / TOMBSTONES
    folder.mkdir(exist_ok=True)
    name = f"tomb-{version:06d}.npy"
    temp = folder / f"{name}{_TEMP}{os.getpid()}"
    try:
        with NpyWriter(temp, np.int64, (documents.size,)) as out:
            crash_point("tombstones-half-written")
            out.write(documents)
        os.rename(temp, folder / name)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(folder)
    crash_point("tombstones-written")
    return {"name": name, "documents": int(documents.size),
            "bytes": (folder / name).stat().st_size, "sha256": file_sha256(folder / name)}


def read_tombstones(root: str | os.PathLike, manifest: dict) -> np.ndarray:
    """int64: the removed documents of ``manifest`` (sorted, unique, in 0..documents-1),
    read whole and checked against the entry (bytes, SHA-256) and the format."""
    entry = manifest.get(TOMBSTONES)
    if not entry:
        return np.empty(0, dtype=np.int64)
    path = Path(root) / TOMBSTONES / entry["name"]
    if not path.is_file() or path.stat().st_size != entry["bytes"]:
        raise corrupt(path, f"missing, or another size than the {entry['bytes']:,} bytes "
                            f"{MANIFEST} says")
    if file_sha256(path) != entry["sha256"]:
        raise corrupt(path, "its SHA-256 differs from the manifest's")
    documents = np.asarray(load_array(path))
    if (documents.dtype != np.int64 or documents.ndim != 1
            or documents.size != entry["documents"] or (np.diff(documents) <= 0).any()):
        raise corrupt(path, f"not {entry['documents']:,} increasing int64 document numbers")
    check_documents(path, documents, int(manifest["documents"]))
    return documents


@dataclass
class SegmentPiece:
    """Rows to write into a segment: ids as UTF-8 with offsets, sets, signatures and,
    when already computed (compaction), each band's keys in row order."""

    id_offsets: np.ndarray  # int64[n + 1]
    id_data: np.ndarray  # uint8
    sets: ShingleSets
    signatures: np.ndarray  # (n, K)
    band_column: object = None  # band -> uint64[n], or None: computed from signatures
    rows: np.ndarray | None = None  # int64, ascending: only these rows (compaction)
    # band -> (keys sorted, their documents): a whole segment's sorted run, merged as is
    sorted_band: object = None

    @property
    def n(self) -> int:
        return self.sets.n if self.rows is None else int(self.rows.size)

    def row_blocks(self, chunk: int):
        """The rows written, ``chunk`` at a time: slices, or index arrays of ``rows``."""
        for lo in range(0, self.n, chunk):
            yield slice(lo, lo + chunk) if self.rows is None else self.rows[lo:lo + chunk]

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
                  bands: int, rows: int, chunk: int = 1 << 16,
                  merge_rows: int = MERGE_ROWS) -> dict:
    """Write ``pieces`` (in order) as the segment ``root/segments/name``; its manifest entry.

    Arrays are written front to back (:class:`NpyWriter`) a piece (and a chunk of rows)
    at a time. Pieces that are whole segments (their bands already sorted) are merged a
    block of at most ``merge_rows`` keys at a time (:func:`merge_sorted_band`), so a
    build or a compaction holds blocks, not the index; pieces with rows left out (a
    compaction with removed documents) hold one band's keys and order (about 28 bytes a
    document). The folder appears under its name only when every file is on disk; on
    any error (a full disk, Ctrl-C, SIGTERM) the temporary folder is removed first.
    """
    root = Path(root)
    n = sum(p.n for p in pieces)
    if n == 0:
        raise ValueError("a segment holds at least one document")
    (root / SEGMENTS).mkdir(exist_ok=True)
    temp = root / SEGMENTS / f"{name}{_TEMP}{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir()
    try:
        _write_csr(temp, "ids.offsets.npy", "ids.data.npy", np.uint8,
                   [(p.id_offsets, p.id_data, p.rows) for p in pieces], n, chunk)
        _write_csr(temp, "sets.offsets.npy", "sets.values.npy", pieces[0].sets.values.dtype,
                   [(p.sets.offsets, p.sets.values, p.rows) for p in pieces], n, chunk)
        num_perm = pieces[0].signatures.shape[1]
        with NpyWriter(temp / "signatures.npy", pieces[0].signatures.dtype,
                       (n, num_perm)) as signatures:
            for p in pieces:
                for block in p.row_blocks(chunk):
                    signatures.write(p.signatures[block])
        crash_point("segment-half-written")
        _write_bands(temp, pieces, n, bands, rows, merge_rows)
        fsync_dir(temp)
        final = root / SEGMENTS / name
        os.rename(temp, final)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    fsync_dir(root / SEGMENTS)
    crash_point("segment-written")
    files = [{"name": file, "bytes": (final / file).stat().st_size,
              "sha256": file_sha256(final / file)} for file in SEGMENT_FILES]
    return {"name": name, "documents": n, "bytes": sum(f["bytes"] for f in files),
            "files": files}


def copy_segment(source_root: str | os.PathLike, entry: dict, root: str | os.PathLike,
                 name: str) -> dict:
    """Copy the segment ``entry`` of the index at ``source_root`` as ``root/segments/name``
    (byte for byte, into a temporary folder renamed when whole, as :func:`write_segment`);
    its entry under the new name (the same files, bytes and SHA-256: the first open of
    the copy hashes it against them)."""
    source = Path(source_root) / SEGMENTS / entry["name"]
    temp = Path(root) / SEGMENTS / f"{name}{_TEMP}{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    try:
        for file in entry["files"]:
            with naming(temp / file["name"]), open(source / file["name"], "rb") as src, \
                    open(temp / file["name"], "wb") as dst:
                reserve(dst.fileno(), file["bytes"])
                while block := src.read(1 << 22):
                    interrupt.check()
                    dst.write(block)
                dst.flush()
                os.fsync(dst.fileno())
            crash_point("segment-half-written")
        fsync_dir(temp)
        os.rename(temp, Path(root) / SEGMENTS / name)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    fsync_dir(Path(root) / SEGMENTS)
    crash_point("segment-written")
    return {**entry, "name": name}


def _write_csr(folder: Path, offsets_name: str, values_name: str, dtype, parts: list,
               n: int, chunk: int) -> None:
    """Rows of several CSR parts (offsets, values, rows or None: all) as one CSR pair of
    files; a part with ``rows`` is gathered a chunk of rows at a time."""
    total = sum(int(values.size) if rows is None
                else int((offsets[rows + 1] - offsets[rows]).sum())
                for offsets, values, rows in parts)
    with NpyWriter(folder / offsets_name, np.int64, (n + 1,)) as offsets_out, \
            NpyWriter(folder / values_name, dtype, (total,)) as values_out:
        offsets_out.write(np.zeros(1, dtype=np.int64))
        at = 0
        for offsets, values, rows in parts:
            if rows is not None:
                at = _write_csr_rows(offsets_out, values_out, offsets, values, rows, at, chunk)
                continue
            for lo in range(1, offsets.size, chunk):
                offsets_out.write(np.asarray(offsets[lo:lo + chunk]) - offsets[0] + at)
            step = chunk * 256
            for lo in range(0, values.size, step):  # a block at a time: values may be mapped
                values_out.write(values[lo:lo + step])
            at += int(values.size)


def _write_csr_rows(offsets_out: NpyWriter, values_out: NpyWriter, offsets: np.ndarray,
                    values: np.ndarray, rows: np.ndarray, at: int, chunk: int) -> int:
    """The CSR rows ``rows`` of (offsets, values), ``chunk`` rows at a time, their offsets
    starting at ``at``; returns the offset after them."""
    for lo in range(0, rows.size, chunk):
        block = rows[lo:lo + chunk]
        starts = np.asarray(offsets[block])
        lengths = np.asarray(offsets[block + 1]) - starts
        ends = np.cumsum(lengths)
        offsets_out.write(at + ends)
        count = int(ends[-1]) if ends.size else 0
        gather = np.repeat(starts - (ends - lengths), lengths) + np.arange(count)
        values_out.write(np.asarray(values[gather]))
        at += count
    return at


def _write_bands(folder: Path, pieces: list[SegmentPiece], n: int, bands: int,
                 rows: int, merge_rows: int) -> None:
    """Each band's keys sorted, and the document of each (stable: ties by document)."""
    doc_dtype = np.int32 if n < 2**31 else np.int64
    runs = all(p.sorted_band is not None and p.rows is None for p in pieces)
    fresh = [lsh.band_keys(p.signatures, bands, rows)
             if p.band_column is None and not runs else None for p in pieces]
    with NpyWriter(folder / "bands.keys.npy", np.uint64, (bands, n)) as keys_out, \
            NpyWriter(folder / "bands.docs.npy", doc_dtype, (bands, n)) as docs_out:
        for band in range(bands):  # C order: band after band, front to back
            if runs:
                for keys, docs in merge_sorted_band([p.sorted_band(band) for p in pieces],
                                                    merge_rows):
                    keys_out.write(keys)
                    docs_out.write(docs.astype(doc_dtype))
                continue
            column = np.concatenate([p.band_column(band) if keys is None else keys[:, band]
                                     for p, keys in zip(pieces, fresh)])
            order = np.argsort(column, kind="stable")
            keys_out.write(column[order])
            docs_out.write(order.astype(doc_dtype))


def merge_sorted_band(runs: list[tuple[np.ndarray, np.ndarray]], merge_rows: int):
    """One band's sorted runs (each a segment's keys, sorted, and their documents:
    ties by document) merged, in blocks of (keys, documents int64) of at most
    ``merge_rows`` keys (or 1,024 a run, when there are many): the order of a stable
    sort of the runs' keys concatenated, run r's documents numbered after those of
    runs before it. So the merged files are those one sort of the whole column gives.

    Each round takes the next block of every run and writes every key up to the
    smallest (key, document) that ends a block not at its run's end: nothing later in
    any run can come before it. That run's whole block goes, so each round advances.
    Memory: a round's keys, about 44 bytes each (the blocks, their order, the output).
    """
    lengths = [int(keys.size) for keys, _ in runs]
    bases = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    block = max(1024, merge_rows // max(len(runs), 1))
    at = [0] * len(runs)
    while True:
        heads = []  # (run, keys, documents) of each run's next block
        for r, (keys, docs) in enumerate(runs):
            if at[r] < lengths[r]:
                stop = min(at[r] + block, lengths[r])
                heads.append((r, np.asarray(keys[at[r]:stop]),
                              np.asarray(docs[at[r]:stop], dtype=np.int64) + bases[r],
                              stop == lengths[r]))
        if not heads:
            return
        ends = [(int(k[-1]), int(d[-1])) for _, k, d, last in heads if not last]
        cut = min(ends) if ends else None
        taken_keys, taken_docs = [], []
        for r, keys, docs, _ in heads:
            if cut is None:
                count = keys.size
            else:
                lo = int(np.searchsorted(keys, np.uint64(cut[0]), side="left"))
                hi = int(np.searchsorted(keys, np.uint64(cut[0]), side="right"))
                count = lo + int(np.searchsorted(docs[lo:hi], cut[1], side="right"))
            taken_keys.append(keys[:count])
            taken_docs.append(docs[:count])
            at[r] += count
        keys = np.concatenate(taken_keys)
        order = np.argsort(keys, kind="stable")  # runs in document order: ties by document
        yield keys[order], np.concatenate(taken_docs)[order]


class NpyWriter:
    """``with NpyWriter(path, dtype, shape) as w: w.write(rows)...``: an .npy file written
    front to back with plain writes (the bytes ``np.save`` gives), its whole size
    reserved first (``os.posix_fallocate``) so that a full disk fails at once.

    Not a memory map: a mapped page the disk has no room for is a SIGBUS, not an error.
    Every OSError names the file; Ctrl-C and SIGTERM are acted on between writes
    (:func:`neardup._core.interrupt.check`). The file is fsynced when closed whole."""

    def __init__(self, path: Path, dtype, shape: tuple):
        self.path, self.dtype = Path(path), np.dtype(dtype)
        self.expected, self.written = int(np.prod(shape)), 0
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {
            "descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
            "shape": tuple(int(x) for x in shape)})
        self.file = None
        with naming(self.path):
            self.file = open(self.path, "wb")
            self.file.write(header.getvalue())
            self.file.flush()
            reserve(self.file.fileno(), header.tell() + self.expected * self.dtype.itemsize)

    def write(self, values: np.ndarray) -> None:
        interrupt.check()
        block = np.ascontiguousarray(values, dtype=self.dtype)
        if self.written + block.size > self.expected:
            raise ValueError(f"{self.path}: more values than its shape holds")
        with naming(self.path):
            self.file.write(memoryview(block).cast("B"))
        self.written += block.size

    def __enter__(self) -> NpyWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if self.file is None:
            return
        try:
            if kind is None:
                if self.written != self.expected:
                    raise ValueError(f"{self.path}: {self.written} values written of "
                                     f"{self.expected}")
                with naming(self.path):
                    self.file.flush()
                    os.fsync(self.file.fileno())
        finally:
            with contextlib.suppress(OSError):  # what the disk could not take is gone
                self.file.close()


@contextlib.contextmanager
def naming(path: Path):
    """An OSError inside (a write's ENOSPC names no file) names ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def reserve(fd: int, size: int) -> None:
    """Reserve ``size`` bytes of the file ``fd`` on disk (ENOSPC now, not later); where the
    file system cannot (EOPNOTSUPP, EINVAL), plain writes still fail cleanly."""
    if size == 0 or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise


def _load(path: Path) -> np.ndarray:
    """The array at ``path`` memory-mapped (read-only), as a plain ndarray view.

    Reads are random (binary searches, the CSR rows of candidates): the kernel is told
    so (MADV_RANDOM), or each page fault would read ahead 128 KiB around it, and a query
    of a few thousand rows would pull in a gigabyte of a large index."""
    array = load_array(path)
    if not isinstance(array, np.memmap):
        return array
    if hasattr(mmap, "MADV_RANDOM"):
        array._mmap.madvise(mmap.MADV_RANDOM)
    return array.view(np.ndarray)


@dataclass(repr=False)
class Segment:
    """One segment's arrays, memory-mapped; nothing is read until it is indexed.

    Opened only through :meth:`open`, which checks it (:mod:`neardup.index.integrity`);
    the rows a query reads go through :meth:`sets_of`, :meth:`ids` and
    :meth:`documents_of`, which check the offsets and documents they use."""

    name: str
    folder: Path
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
    def open(cls, root: str | os.PathLike, manifest: dict, entry: dict, *,
             written: bool = False) -> Segment:
        """The segment ``entry`` of ``manifest``, checked: its layout always, its hashes
        and whole structure once per file version (``written``: this process has just
        written and hashed it, layout only)."""
        folder = Path(root) / SEGMENTS / entry["name"]
        for file in entry["files"]:
            path = folder / file["name"]
            if not path.is_file() or path.stat().st_size != file["bytes"]:
                raise corrupt(path, f"missing, or another size than the {file['bytes']:,} "
                                    f"bytes {MANIFEST} says")
        arrays = {f: _load(folder / f) for f in SEGMENT_FILES}
        n = int(entry["documents"])
        check_layout(folder, arrays, n, int(manifest["bands"]),
                     int(manifest["options"]["num_perm"]))
        if not written:
            check_contents(folder, entry, arrays)
        sets = ShingleSets(arrays["sets.offsets.npy"], arrays["sets.values.npy"])
        return cls(entry["name"], folder, n, arrays["ids.offsets.npy"],
                   arrays["ids.data.npy"], sets, arrays["signatures.npy"],
                   arrays["bands.keys.npy"], arrays["bands.docs.npy"])

    def sets_of(self, rows: np.ndarray) -> ShingleSets:
        """The shingle sets of ``rows`` (in range), their offsets checked first."""
        rows = np.asarray(rows, dtype=np.int64)
        check_rows(self.folder / "sets.offsets.npy", self.sets.offsets, rows,
                   self.sets.values.size)
        return self.sets.subset(rows)

    def ids(self, rows: np.ndarray | None = None) -> pa.Array:
        """The ids of ``rows`` (all when None) as an Arrow string array, their offsets
        checked first and their bytes checked to be UTF-8."""
        rows = np.arange(self.n) if rows is None else np.asarray(rows, dtype=np.int64)
        path = self.folder / "ids.offsets.npy"
        check_rows(path, self.id_offsets, rows, self.id_data.size)
        array = pa.LargeStringArray.from_buffers(
            self.n, pa.py_buffer(self.id_offsets), pa.py_buffer(self.id_data))
        taken = array.take(pa.array(rows))
        try:
            taken.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise corrupt(self.folder / "ids.data.npy", f"ids are not UTF-8 ({exc})") from None
        return taken.cast(pa.string())

    def documents_of(self, band: int, positions: np.ndarray) -> np.ndarray:
        """int64: the documents at sorted ``positions`` (in 0..n-1) of band ``band``,
        checked to be documents of the segment."""
        documents = np.asarray(self.band_docs[band][positions], dtype=np.int64)
        check_documents(self.folder / "bands.docs.npy", documents, self.n)
        return documents

    def band_column(self, band: int) -> np.ndarray:
        """uint64[n]: band ``band``'s key of every row, in row order (for compaction)."""
        column = np.empty(self.n, dtype=np.uint64)
        column[self.band_docs[band]] = self.band_keys[band]
        return column

    def sorted_band(self, band: int) -> tuple[np.ndarray, np.ndarray]:
        """Band ``band``'s sorted keys and the document of each, as mapped."""
        return self.band_keys[band], self.band_docs[band]

    def piece(self, rows: np.ndarray | None = None) -> SegmentPiece:
        """The segment's rows to write (all; or ``rows``, ascending), read from the
        mapped files a chunk at a time as they are written."""
        if rows is None:
            return SegmentPiece(self.id_offsets, self.id_data, self.sets, self.signatures,
                                self.band_column, sorted_band=self.sorted_band)
        rows = np.asarray(rows, dtype=np.int64)
        return SegmentPiece(self.id_offsets, self.id_data, self.sets, self.signatures,
                            lambda band: self.band_column(band)[rows], rows)


def verify_checksums(root: str | os.PathLike, manifest: dict) -> list[str]:
    """The files whose SHA-256 differs from the manifest's (empty: all intact)."""
    bad = []
    for entry in manifest["segments"]:
        for file in entry["files"]:
            path = Path(root) / SEGMENTS / entry["name"] / file["name"]
            if not path.is_file() or file_sha256(path) != file["sha256"]:
                bad.append(f"{entry['name']}/{file['name']}")
    tombstones = manifest.get(TOMBSTONES)
    if tombstones:
        path = Path(root) / TOMBSTONES / tombstones["name"]
        if not path.is_file() or file_sha256(path) != tombstones["sha256"]:
            bad.append(f"{TOMBSTONES}/{tombstones['name']}")
    return bad

