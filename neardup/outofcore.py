"""Out of core: ``find`` under a memory limit, a chunk of documents at a time.

The in-memory path holds every text, shingle set and signature at once. Under a
memory limit the same stage functions run on one chunk of documents at a time:

    read a chunk (:func:`~neardup.sources.read_document_chunks`)
    → :func:`~neardup.prepare.shingle_documents` → :func:`~neardup.shingling.set_fingerprints`
    → :func:`~neardup.pipeline.sign` → :func:`~neardup.lsh.band_keys`

and each chunk's output is appended to files in a work directory: the CSR values
of the shingle sets, the n × K signature matrix, one file of band keys per band.
The chunk's texts are then dropped. :func:`~neardup.pipeline.find_sets` runs on
the files, memory-mapped: identical sets are grouped from the fingerprints (kept
in memory), each band's keys are loaded and sorted one band at a time
(:func:`~neardup.lsh.candidate_pairs_by_band`), candidates are verified on the
mapped CSR. Keys, signatures and sets are per-document functions, so the pairs,
clusters and representatives are exactly those of the in-memory path.

Where the memory goes (n documents, K minima, b bands, C candidates):

- per chunk: its texts and the shingling temporaries, at most
  ``WORK_BYTES_PER_CHAR`` bytes per character of text (an upper bound: word
  1-grams measured about 12, bench/bench_scale.py at 100k documents; character
  shingles keep a uint64 code point and a uint64 hash per character, about 24),
  plus K·4 + b·8 bytes of signatures and keys per document;
- per document, for the whole run: its id (a Python string, and the dict that
  renames repeated ids), fingerprint, size, offset, text length and the result
  columns. Measured (bench/bench_scale.py, 200-word documents, 4G): peak RSS
  0.74 GiB at 100k documents, 1.72 GiB at 1M, so about ``BYTES_PER_DOCUMENT``
  bytes per document, more than the ~0.4 KB the columns need: probably the
  allocator's arenas, where each chunk's freed texts sat between ids that live on;
- per band: one key column, its sort order and sorted copy, 24 bytes per
  distinct set (24 MB at 1M documents); candidates: 8 bytes per pair per band
  until merged, then about 40 per candidate.

The chunk size is derived from the limit: ``CHUNK_SHARE`` of it goes to a chunk,
the rest is left for the per-document columns, the band sort and the
interpreter itself (about 0.2 GB with numpy, numba and pyarrow loaded). The
limit is a budget used to size chunks, not enforced by the operating system;
the per-document part grows with n (about 1 GB at 1M documents), so 4G holds
about 3M documents of this kind; beyond that the limit is exceeded. Pages of
the mapped files count in the resident set while they are touched; the kernel
can drop them (they are clean).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import lsh
from .minhash import DEFAULT_FAMILY, Signatures
from .shingling import ShingleSets

CHUNK_SHARE = 0.5
WORK_BYTES_PER_CHAR = 48
BYTES_PER_DOCUMENT = 1100
MIN_CHUNK_CHARS = 1024
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value) -> int:
    """Bytes from ``4G``, ``512M``, ``1.5GiB``, ``100k`` (powers of 1024) or an integer."""
    if isinstance(value, bool):
        value = None  # True is not a size
    if isinstance(value, int) and value > 0:
        return value
    match = _SIZE.match(value) if isinstance(value, str) else None
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()]) if match else 0
    if size <= 0:
        raise ValueError(f"memory_limit must be a positive size such as 4G, 512M or a "
                         f"number of bytes, got {value!r}")
    return size


@dataclass(frozen=True)
class ChunkPlan:
    """How many characters and documents of text one chunk holds under ``limit`` bytes."""

    limit: int
    chunk_chars: int
    chunk_docs: int

    @classmethod
    def for_limit(cls, limit: int, num_perm: int, bands: int) -> ChunkPlan:
        budget = limit * CHUNK_SHARE
        chars = max(MIN_CHUNK_CHARS, int(budget / WORK_BYTES_PER_CHAR))
        per_doc = num_perm * 4 + bands * 8 + BYTES_PER_DOCUMENT  # even an empty document
        docs = max(1, int(budget / 2 / per_doc))
        return cls(limit, chars, docs)

    def as_dict(self) -> dict:
        return {"memory_limit": self.limit, "chunk_chars": self.chunk_chars,
                "chunk_docs": self.chunk_docs}


@dataclass
class Spilled:
    """What the chunks produced, for :func:`~neardup.pipeline.find_sets`.

    ``sets`` and ``signatures`` (row d: document d) are mapped from disk;
    ``fingerprints`` are in memory (8 bytes per document).
    """

    sets: ShingleSets
    signatures: Signatures
    fingerprints: np.ndarray
    band_paths: list[Path]

    def band_columns(self, rows: np.ndarray):
        """Each band's keys of the documents ``rows`` (uint64[rows.size]), one band at a time."""
        for path in self.band_paths:
            keys = np.fromfile(path, dtype=np.uint64)
            yield keys[rows]
            del keys


class SpillWriter:
    """Appends each chunk's shingle values, signatures and band keys to files in ``directory``."""

    def __init__(self, directory: Path, bands: int, rows: int):
        self.directory = directory
        self.bands, self.rows = bands, rows
        self.values_path = directory / "shingle_values.bin"
        self.signatures_path = directory / "signatures.bin"
        self.band_paths = [directory / f"band_{band:03d}.bin" for band in range(bands)]
        self._values = open(self.values_path, "wb")
        self._signatures = open(self.signatures_path, "wb")
        self._bands = [open(path, "wb") for path in self.band_paths]
        self.sizes: list[np.ndarray] = []
        self.prints: list[np.ndarray] = []
        self.values_dtype = None
        self.signature_dtype = None
        self.signature_params: dict | None = None

    def append(self, sets: ShingleSets, signatures: Signatures, prints: np.ndarray) -> None:
        keys = lsh.band_keys(signatures.matrix, self.bands, self.rows)
        self.values_dtype = self.values_dtype or sets.values.dtype
        self.signature_dtype = signatures.matrix.dtype
        self.signature_params = signatures.params()
        np.ascontiguousarray(sets.values, dtype=self.values_dtype).tofile(self._values)
        np.ascontiguousarray(signatures.matrix).tofile(self._signatures)
        for band, f in enumerate(self._bands):
            np.ascontiguousarray(keys[:, band]).tofile(f)
        self.sizes.append(sets.sizes)
        self.prints.append(prints)

    def finish(self) -> Spilled:
        for f in (self._values, self._signatures, *self._bands):
            f.close()
        sizes = np.concatenate(self.sizes) if self.sizes else np.empty(0, dtype=np.int64)
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        values = _mapped(self.values_path, self.values_dtype or np.uint32, (int(offsets[-1]),))
        params = self.signature_params or {"family": DEFAULT_FAMILY, "num_perm": 0, "seed": 0,
                                           "bits": 32}
        matrix = _mapped(self.signatures_path, self.signature_dtype or np.uint32,
                         (sizes.size, params["num_perm"]))
        prints = np.concatenate(self.prints) if self.prints else np.empty(0, dtype=np.uint64)
        return Spilled(ShingleSets(offsets, values), Signatures(matrix, **params), prints,
                       self.band_paths)


def _mapped(path: Path, dtype, shape: tuple) -> np.ndarray:
    """A read-only view of the file (a plain ndarray, so numba kernels take it)."""
    if int(np.prod(shape)) == 0:
        return np.empty(shape, dtype=dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode="r", shape=shape))


class WorkDirectory:
    """A fresh directory for the spilled files, removed on exit (inside ``parent`` if given)."""

    def __init__(self, parent: str | os.PathLike | None = None):
        if parent is not None:
            os.makedirs(parent, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="neardup-spill-", dir=parent))

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
