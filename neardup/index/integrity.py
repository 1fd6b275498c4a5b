"""Is a segment what its manifest says? Checked before any of its offsets reaches a kernel.

A segment's offsets and document numbers index memory-mapped arrays in numba kernels
and Arrow ``take``: one wrong value is a read outside the mapping (SIGSEGV, SIGBUS) or
a silently different answer. So a segment is checked at three levels, cheap to thorough:

1. **Every open** (a few bytes read): the manifest names only plain segments
   (``seg-NNNNNN``) and their seven files; each file has the manifest's size and a valid
   .npy header; dtypes and shapes are the segment's (n rows, K minima, b bands); both
   offset arrays start at 0 and end at their values' length.
2. **Once per file version**: each file's SHA-256 against the manifest, and the whole
   structure (offsets non-decreasing, band documents in 0..n-1). A file version is its
   (device, inode, size, mtime, ctime); a version found intact is remembered in memory
   and in ``IDX/verified.json``, so a query (a new process each time on the command
   line) does not hash the whole index again, only segments written or changed since.
   The file is best effort: a read-only index is checked in memory, once per process.
   A version whose mtime or ctime is within :data:`RACY_SECONDS` of its hashing is not
   remembered: a write in the same timestamp tick would not change them (as git treats
   "racily clean" files).
3. **Every use**: the offsets of the rows a query gathers and the documents of the band
   keys it matches are checked to be in range before they index anything.

What the cache cannot see: a byte changed while inode, size, mtime and ctime stay the
same (bit rot, a write to the block device). Level 3 still keeps every read in bounds;
``neardup index info --verify`` (:func:`neardup.index.store.verify_checksums`) hashes
every file whatever the cache says. Every failure is an :class:`IndexCorruptError`
whose message starts with "index corrupt" and names the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path

import numpy as np

from ..sinks.staging import file_sha256

VERIFIED = "verified.json"
RACY_SECONDS = 2.0
SEGMENT_NAME = re.compile(r"seg-[0-9]{6,}")
TOMBSTONE_NAME = re.compile(r"tomb-[0-9]{6,}\.npy")
BLOCK = 1 << 22  # elements a whole-array check reads at a time
_verified: dict[str, tuple] = {}  # this process's: absolute path -> (version, sha256)


class IndexCorruptError(ValueError):
    """A file of an index is not what its manifest and the format say."""


def corrupt(path, what: str) -> IndexCorruptError:
    return IndexCorruptError(f"index corrupt: {path}: {what}")


def check_manifest(file: Path, manifest: dict, segment_files: tuple[str, ...]) -> None:
    """Level 1 for the manifest: segments are plain names holding the format's files."""
    segments = manifest.get("segments")
    if not isinstance(segments, list):
        raise corrupt(file, "no list of segments")
    for entry in segments:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not SEGMENT_NAME.fullmatch(name):
            raise corrupt(file, f"segment name {name!r} is not a plain segment name "
                                f"(seg-NNNNNN, a folder of segments/)")
        files = entry.get("files")
        names = [f.get("name") for f in files if isinstance(f, dict)] \
            if isinstance(files, list) else None
        if names != list(segment_files) or not all(
                isinstance(f.get("bytes"), int) and isinstance(f.get("sha256"), str)
                for f in files):
            raise corrupt(file, f"segment {name} does not list the files {segment_files} "
                                f"with their bytes and SHA-256")
        if not isinstance(entry.get("documents"), int) or entry["documents"] < 1:
            raise corrupt(file, f"segment {name}: documents must be a positive integer")
    for key in ("bands", "rows", "documents"):
        if not isinstance(manifest.get(key), int) or manifest[key] < 0:
            raise corrupt(file, f"{key} must be a non-negative integer")
    if manifest["documents"] != sum(entry["documents"] for entry in segments):
        raise corrupt(file, f"documents ({manifest['documents']}) is not the sum of its "
                            f"segments' documents")
    tombstones = manifest.get("tombstones")
    if tombstones is not None and not (
            isinstance(tombstones, dict) and isinstance(tombstones.get("name"), str)
            and TOMBSTONE_NAME.fullmatch(tombstones["name"])
            and all(isinstance(tombstones.get(k), int) for k in ("documents", "bytes"))
            and isinstance(tombstones.get("sha256"), str)):
        raise corrupt(file, "tombstones must name a plain file (tomb-NNNNNN.npy) with its "
                            "documents, bytes and SHA-256")
    options = manifest.get("options")
    if not isinstance(options, dict) or not isinstance(options.get("num_perm"), int):
        raise corrupt(file, "no options with an integer num_perm")


def load_array(path: Path) -> np.ndarray:
    """The .npy file at ``path`` memory-mapped read-only; a bad header is corruption."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # a header numpy cannot read, a shape past the file's end
        raise corrupt(path, f"not a readable .npy array ({exc})") from None
    if not isinstance(array, np.memmap) and array.size:
        raise corrupt(path, "not a memory-mappable .npy array")
    return array


def check_layout(folder: Path, arrays: dict, n: int, bands: int, num_perm: int) -> None:
    """Level 1 for a segment's arrays: dtypes, shapes and the ends of both offsets."""
    def expect(name: str, dtypes, shape: tuple | None) -> None:
        """``shape`` None: any length, one dimension."""
        a = arrays[name]
        if a.dtype not in [np.dtype(d) for d in dtypes] or (
                a.shape != shape if shape is not None else a.ndim != 1):
            raise corrupt(folder / name, f"{a.dtype} {list(a.shape)}, expected "
                                         f"{'/'.join(str(np.dtype(d)) for d in dtypes)} "
                                         f"{list(shape) if shape else '[length]'}")

    expect("ids.offsets.npy", [np.int64], (n + 1,))
    expect("ids.data.npy", [np.uint8], None)
    expect("sets.offsets.npy", [np.int64], (n + 1,))
    expect("sets.values.npy", [np.uint32, np.uint64], None)
    expect("signatures.npy", [np.uint8, np.uint16, np.uint32, np.uint64], (n, num_perm))
    expect("bands.keys.npy", [np.uint64], (bands, n))
    expect("bands.docs.npy", [np.int32, np.int64], (bands, n))
    for offsets, values in (("ids.offsets.npy", "ids.data.npy"),
                            ("sets.offsets.npy", "sets.values.npy")):
        first, last = int(arrays[offsets][0]), int(arrays[offsets][-1])
        if first != 0 or last != arrays[values].size:
            raise corrupt(folder / offsets, f"offsets run from {first} to {last}; they must "
                                            f"run from 0 to {arrays[values].size}, the "
                                            f"length of {values}")


def check_contents(folder: Path, entry: dict, arrays: dict) -> None:
    """Level 2: each file's SHA-256 and the whole structure, once per file version."""
    versions = {f["name"]: _version(folder / f["name"]) for f in entry["files"]}
    sha = {f["name"]: f["sha256"] for f in entry["files"]}
    if all(_known(folder / name, versions[name], sha[name]) for name in versions):
        return
    started = time.time_ns()
    for name in versions:
        if file_sha256(folder / name) != sha[name]:
            raise corrupt(folder / name, "its SHA-256 differs from the manifest's")
    n = int(entry["documents"])
    for name in ("ids.offsets.npy", "sets.offsets.npy"):
        for lo, block in _blocks(arrays[name]):
            if (lo and block[0] < arrays[name][lo - 1]) or (np.diff(block) < 0).any():
                raise corrupt(folder / name, "offsets decrease")
    for band in range(arrays["bands.docs.npy"].shape[0]):
        for _, block in _blocks(arrays["bands.docs.npy"][band]):
            check_documents(folder / "bands.docs.npy", block, n)
    _remember(folder, versions, sha, started)


def check_rows(path: Path, offsets: np.ndarray, rows: np.ndarray, length: int) -> None:
    """Level 3: the CSR ``offsets`` of ``rows`` start and end inside 0..``length``."""
    starts = np.asarray(offsets[rows])
    ends = np.asarray(offsets[rows + 1])
    if rows.size and (starts.min() < 0 or ends.max() > length or (ends < starts).any()):
        raise corrupt(path, f"offsets out of range (0..{length}) or decreasing")


def check_documents(path: Path, documents: np.ndarray, n: int) -> None:
    """Level 3: every document number is in 0..n-1."""
    if documents.size and (documents.min() < 0 or documents.max() >= n):
        raise corrupt(path, f"document numbers out of range 0..{n - 1}")


def _blocks(array: np.ndarray):
    for lo in range(0, array.shape[0], BLOCK):
        yield lo, np.asarray(array[lo:lo + BLOCK])


def _version(path: Path) -> tuple:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _known(path: Path, version: tuple, sha256: str) -> bool:
    key = str(path.absolute())
    if key not in _verified:
        for known, value in _read_cache(path.parent.parent.parent).items():
            _verified.setdefault(known, value)
    return _verified.get(key) == (version, sha256)


def _read_cache(root: Path) -> dict:
    try:
        cached = json.loads((root / VERIFIED).read_text(encoding="utf-8"))
        return {str((root / name).absolute()): (tuple(v["version"]), v["sha256"])
                for name, v in cached["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # none yet, or unreadable: the files are hashed


def _remember(folder: Path, versions: dict, sha: dict, started: int) -> None:
    """Remember the versions just hashed (not the racy ones), in memory and on disk."""
    racy = started - int(RACY_SECONDS * 1e9)
    fresh = {str((folder / name).absolute()): (version, sha[name])
             for name, version in versions.items() if max(version[3], version[4]) < racy}
    if not fresh:
        return
    _verified.update(fresh)
    root = folder.parent.parent
    listed = {p.name for p in (root / "segments").iterdir()} if (root / "segments").is_dir() \
        else set()
    prefix = str(root.absolute()) + os.sep
    files = {key[len(prefix):]: {"version": list(version), "sha256": digest}
             for key, (version, digest) in _verified.items()
             if key.startswith(prefix) and key[len(prefix):].split(os.sep)[1] in listed}
    temp = root / f"{VERIFIED}.tmp-{os.getpid()}"
    try:  # best effort: a read-only index is checked in memory only
        temp.write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n",
                        encoding="utf-8")
        os.replace(temp, root / VERIFIED)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
