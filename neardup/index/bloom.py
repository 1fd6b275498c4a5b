"""A Bloom index: one Bloom filter per LSH band, a few tens of bytes a document.

LSHBloom (Khan et al., arXiv 2411.04257; datasketch's ``MinHashLSHBloom``): instead of
each band's sorted keys and the documents behind them, keep only a Bloom filter of each
band's keys. A new document is *flagged* when one of its band keys is in that band's
filter: it (probably) has a near-duplicate in the index. No pairs, no Jaccard, no id of
the indexed document: the filter holds none of them.

What is exact, what is estimated:

- **No false negatives against the full index.** A new document that the full index
  (same options, same b × r) pairs with an indexed document shares a band key with it;
  that key was inserted into that band's filter, so the document is flagged. Bloom
  mode flags a superset of what the full index finds as candidates (it cannot verify
  the Jaccard, so candidates below the threshold are flagged too).
- **False positives at a stated rate.** A filter of m bits holding n keys with k hash
  functions answers "present" for an absent key with probability ≈ (1 - e^(-kn/m))^k,
  exactly fill^k where fill is the fraction of bits set. A query is falsely flagged if
  any of the b bands is: 1 - (1 - p)^b. Build sizes each filter for the per-band rate
  p = 1 - (1 - RATE)^(1/b) at ``capacity`` keys (m = -capacity ln p / ln² 2 bits,
  k = round(m / capacity · ln 2)), so the per-query extra false-positive rate is at most
  RATE up to ``capacity`` documents. Past it the filters keep working but fill up and the
  rate grows; :meth:`BloomIndex.info` reports the rate estimated from the bits set
  (:func:`estimated_rate`), which is exact for the filters as they are.
- **Exact copies.** A second filter holds a hash of each whole shingle set
  (:func:`set_keys`): a flagged document whose set hash is also present is counted as
  (probably) an exact copy of an indexed document. It only labels flags; it never flags
  on its own (an identical set shares every band key anyway).

Hashing: the i-th probe of a key in band j is (h1 + i·h2) mod m (double hashing, Kirsch
& Mitzenmacher), h1 = mix64(key ⊕ salt_j), h2 = mix64(h1 ⊕ φ) | 1. Filters are uint64
words, bit p in word p >> 6; inserting is OR, so filters built apart (Spark partitions,
shards) and OR-ed (:func:`merge_filters`) are the filters of one build over both.
Same documents, options and sizing give byte-identical files.

On disk::

    IDX/manifest.json            format, "mode": "bloom", options, b × r, sizing, counts
    IDX/filters/f-000001/
        bands.npy    (b, m/64) uint64   one filter per band
        exact.npy    (m/64,) uint64     the exact-copy filter

Writes are atomic as the segments' (:mod:`neardup.index.store`): a new version's files
are written into ``f-NNNNNN.tmp-PID`` (space reserved first, fsynced), renamed, then the
manifest (listing each file's bytes and SHA-256) is replaced; a killed writer leaves the
previous version, and the next writer removes what it left. Opening reads both files
whole and checks their SHA-256.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from .. import cluster, lsh
from .._core import counts as counting
from .._core.hashing import GOLDEN, mix64
from .._core.jit import njit
from ..options import OptionGroups, column_names, split_options
from ..pipeline.run import find_documents
from ..result import FindResult
from ..shingling import ShingleSets
from ..sinks.staging import StagedDirectory, file_sha256, refuse_touching_inputs
from ..sources import frames
from ..sources.options import as_paths
from . import CONFIG_OPTIONS, PREPARE_OPTIONS, SOURCE_OPTIONS, BandedIndex, store
from .integrity import corrupt
from .store import MANIFEST, NpyWriter, WriteLock, crash_point, fsync_dir, write_manifest

MODE = "bloom"
DEFAULT_RATE = 1e-3  # per-query extra false-positive rate at capacity
FILTERS = "filters"
FILTER_FILES = ("bands.npy", "exact.npy")
WRITTEN_NAME = re.compile(r"f-[0-9]{6,}(\.tmp-[0-9]+)?")
_TEMP = ".tmp-"
FIND_REFUSED = ("is a Bloom index: it keeps one Bloom filter per band and no documents, so "
                "it has no pairs and no Jaccard to list; `neardup dedup NEW --against {path}` "
                "removes the new documents it flags, and neardup.index.bloom.BloomIndex(path)"
                ".query(NEW).flagged says which they are")


# ---- sizing: the formulas, next to the code that uses them ----

def per_band_rate(rate: float, bands: int) -> float:
    """p such that a query hits falsely in at least one of ``bands`` filters with
    probability 1 - (1 - p)^bands = ``rate``."""
    return -math.expm1(math.log1p(-rate) / bands)


@dataclass(frozen=True)
class FilterPlan:
    """The size of every filter: ``bits`` each (a multiple of 64), ``hashes`` probes a key,
    for ``capacity`` documents at ``rate`` per query over ``bands`` filters."""

    bands: int
    capacity: int
    rate: float
    bits: int
    hashes: int

    @classmethod
    def for_rate(cls, rate: float, capacity: int, bands: int) -> FilterPlan:
        if not 0.0 < rate < 1.0:
            raise ValueError(f"--fp (the false-positive rate per query) must be in (0, 1), "
                             f"got {rate!r}")
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"--capacity (the documents the filters are sized for) must be "
                             f"a positive integer, got {capacity!r}")
        p = per_band_rate(rate, bands)
        words = math.ceil(-capacity * math.log(p) / math.log(2) ** 2 / 64)
        while True:  # the best whole k; a word more while k's rounding misses p
            bits = words * 64
            best = bits / capacity * math.log(2)
            hashes = min((max(1, math.floor(best)), math.ceil(best)),
                         key=lambda k: _band_rate(bits, k, capacity))
            if _band_rate(bits, hashes, capacity) <= p:
                return cls(bands, capacity, rate, bits, hashes)
            words += 1

    @property
    def expected_rate(self) -> float:
        """The per-query false-positive rate expected at capacity (at most ``rate``)."""
        return -math.expm1(self.bands * math.log1p(
            -_band_rate(self.bits, self.hashes, self.capacity)))

    @property
    def words(self) -> int:
        return self.bits // 64

    @property
    def total_bytes(self) -> int:
        """The bytes of the b band filters and the exact-copy filter."""
        return (self.bands + 1) * self.bits // 8

    @property
    def bytes_per_document(self) -> float:
        """Bytes per document at capacity: all filters' bits / 8 / capacity."""
        return self.total_bytes / self.capacity


def _band_rate(bits: int, hashes: int, keys: int) -> float:
    """A filter's expected false-positive rate: (1 - (1 - 1/m)^(k n))^k."""
    return (-math.expm1(hashes * keys * math.log1p(-1 / bits))) ** hashes


def fill_fraction(filters: np.ndarray) -> np.ndarray:
    """float64[...]: the fraction of bits set in each filter (the last axis: words)."""
    return np.bitwise_count(filters).sum(axis=-1, dtype=np.int64) / (filters.shape[-1] * 64)


def estimated_rate(fill: np.ndarray, hashes: int) -> float:
    """The probability that an absent key hits at least one filter: 1 - ∏(1 - fill^k)."""
    return float(-np.expm1(np.log1p(-np.asarray(fill, dtype=np.float64) ** hashes).sum()))


def merge_filters(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The OR of two filters of the same shape: the filter of both key sets (exact:
    inserting is setting bits, so order and partition do not matter)."""
    if a.shape != b.shape or a.dtype != np.uint64 or b.dtype != np.uint64:
        raise ValueError(f"filters merge only with the same shape of uint64 words: "
                         f"{a.shape} {a.dtype} vs {b.shape} {b.dtype}")
    return np.bitwise_or(a, b)


# ---- the kernels ----

@njit(inline="always")
def _salt(band):
    return mix64(np.uint64(band + 1) * GOLDEN)


@njit(cache=True)
def _insert(filters, keys, bits, hashes):
    """Set the probes of ``keys`` (n, b) in ``filters`` (b, words): band j's keys in j."""
    m = np.uint64(bits)
    for j in range(keys.shape[1]):
        salt = _salt(j)
        row = filters[j]
        for d in range(keys.shape[0]):
            h1 = mix64(keys[d, j] ^ salt)
            h2 = mix64(h1 ^ GOLDEN) | np.uint64(1)
            for i in range(hashes):
                p = (h1 + np.uint64(i) * h2) % m
                row[p >> np.uint64(6)] |= np.uint64(1) << (p & np.uint64(63))


@njit(cache=True)
def _hits(filters, keys, bits, hashes):
    """int32[n]: the bands of each row of ``keys`` whose filter holds its key."""
    m = np.uint64(bits)
    out = np.zeros(keys.shape[0], dtype=np.int32)
    for j in range(keys.shape[1]):
        salt = _salt(j)
        row = filters[j]
        for d in range(keys.shape[0]):
            h1 = mix64(keys[d, j] ^ salt)
            h2 = mix64(h1 ^ GOLDEN) | np.uint64(1)
            present = True
            for i in range(hashes):
                p = (h1 + np.uint64(i) * h2) % m
                if not (row[p >> np.uint64(6)] >> (p & np.uint64(63))) & np.uint64(1):
                    present = False
                    break
            if present:
                out[d] += 1
    return out


@njit(cache=True)
def _set_keys(offsets, values, out):
    for d in range(out.size):
        h = np.uint64(offsets[d + 1] - offsets[d]) * GOLDEN
        for v in range(offsets[d], offsets[d + 1]):
            h += mix64(np.uint64(values[v]) + GOLDEN)  # a sum: the order does not matter
        out[d] = mix64(h)


def set_keys(sets: ShingleSets) -> np.ndarray:
    """uint64[n]: a 64-bit hash of each whole shingle set (equal sets, equal keys)."""
    out = np.empty(sets.n, dtype=np.uint64)
    _set_keys(np.asarray(sets.offsets, dtype=np.int64), np.asarray(sets.values), out)
    return out


def insert(filters: np.ndarray, keys: np.ndarray, plan: FilterPlan) -> None:
    """Insert ``keys`` (n, k) into ``filters`` (k, words), in place."""
    if len(keys):
        _insert(filters, np.ascontiguousarray(keys, dtype=np.uint64), plan.bits, plan.hashes)


def hits(filters: np.ndarray, keys: np.ndarray, plan: FilterPlan) -> np.ndarray:
    """int32[n]: how many of the filters hold each row's key (0: certainly absent)."""
    return _hits(filters, np.ascontiguousarray(keys, dtype=np.uint64), plan.bits, plan.hashes)


# ---- the index ----

def is_bloom(path) -> bool:
    """Whether ``path`` holds a Bloom index (a manifest with mode "bloom")."""
    try:
        manifest = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("mode") == MODE


def refuse_find(path) -> None:
    """find --against a Bloom index: refused by name (it has no pairs to list)."""
    if is_bloom(path):
        raise ValueError(f"--against {path} " + FIND_REFUSED.format(path=path))


class BloomIndex(BandedIndex):
    """The Bloom index at ``path``: its manifest and filters, read whole and checked."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.manifest = _read_manifest(self.path)
        self.band_filters, self.exact_filter = _read_filters(self.path, self.manifest)

    def __repr__(self) -> str:
        return (f"BloomIndex({str(self.path)!r}: {self.n:,} documents inserted, capacity "
                f"{self.plan.capacity:,}, {self.bands} x {self.rows} bands)")

    @property
    def n(self) -> int:
        return int(self.manifest["documents"])

    @property
    def plan(self) -> FilterPlan:
        s = self.manifest["bloom"]
        return FilterPlan(self.bands, s["capacity"], s["fp"], s["bits"], s["hashes"])

    # ---- writing ----

    @classmethod
    def build(cls, inputs, path: str | os.PathLike, *, fp: float = DEFAULT_RATE,
              capacity: int | None = None, quiet: bool = True, text=None, id=None,
              **options) -> BloomIndex:
        """Bloom-index ``inputs`` at ``path`` (a new or empty folder), read, shingled and
        banded as :meth:`neardup.Index.build` does. ``fp``: the per-query extra
        false-positive rate at ``capacity`` documents (default: the documents of this
        build, whose band keys are then held until all are read: 8 bytes × (b + 1) a
        document; give ``capacity`` to insert a chunk at a time)."""
        from . import _chunks, _sign, _split_options

        if capacity is not None:
            FilterPlan.for_rate(fp, capacity, 1)  # refused at the door, before reading
        else:
            FilterPlan.for_rate(fp, 1, 1)
        source, prep, config = _split_options(column_names(options, text, id))
        if not frames.is_in_memory(inputs):
            refuse_touching_inputs(as_paths(inputs), {"--out": path})
        plan = config.band_plan()
        manifest = {
            "format": store.FORMAT, "format_version": store.FORMAT_VERSION, "mode": MODE,
            "version": 1, "threshold": config.threshold, "bands": plan.bands,
            "rows": plan.rows, "weights": list(config.weights),
            "options": {**{k: getattr(config, k) for k in CONFIG_OPTIONS},
                        **{k: getattr(prep, k) for k in PREPARE_OPTIONS}},
            "documents": 0, "set_aside": 0, "next_filters": 1, "filters": None,
        }
        sizing = FilterPlan.for_rate(fp, capacity, plan.bands) if capacity else None
        filters = exact = None
        held, set_aside, documents = [], 0, 0
        for chunk_ids, texts in _chunks(inputs, source, quiet):
            _, sets, signatures, aside = _sign(chunk_ids, texts, prep, config)
            set_aside += aside
            documents += sets.n
            keys = (lsh.band_keys(signatures, plan.bands, plan.rows), set_keys(sets))
            if sizing is None:
                held.append(keys)
                continue
            if filters is None:
                filters, exact = _empty(sizing)
            insert(filters, keys[0], sizing)
            insert(exact, keys[1][:, None], sizing)
        if sizing is None:
            sizing = FilterPlan.for_rate(fp, max(documents, 1), plan.bands)
            filters, exact = _empty(sizing)
            for band_keys, exact_keys in held:
                insert(filters, band_keys, sizing)
                insert(exact, exact_keys[:, None], sizing)
        elif filters is None:
            filters, exact = _empty(sizing)
        manifest.update(documents=documents, set_aside=set_aside,
                        bloom={"fp": fp, "capacity": sizing.capacity, "bits": sizing.bits,
                               "hashes": sizing.hashes})
        with StagedDirectory(path, lambda name: False, option="--out") as stage:
            (stage / FILTERS).mkdir()
            with WriteLock(stage):
                _write_version(stage, manifest, filters, exact)
        return cls(path)

    def add(self, inputs, *, quiet: bool = True, text=None, id=None, **options) -> dict:
        """Insert the documents of ``inputs`` (shingled with the index's options)."""
        from . import _chunks, _sign, _split_options

        options = column_names(options, text, id)
        source = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
        options.pop("threshold", None)
        _, prep, config = _split_options(self.query_options(options))
        if not frames.is_in_memory(inputs):
            refuse_touching_inputs(as_paths(inputs), {"index": self.path}, replaced=())
        with WriteLock(self.path):
            def insert_inputs(filters, exact, plan):
                documents = set_aside = 0
                for chunk_ids, texts in _chunks(inputs, source, quiet):
                    _, sets, signatures, aside = _sign(chunk_ids, texts, prep, config)
                    insert(filters, lsh.band_keys(signatures, self.bands, self.rows), plan)
                    insert(exact, set_keys(sets)[:, None], plan)
                    documents, set_aside = documents + sets.n, set_aside + aside
                return documents, set_aside
            return self._add_locked(insert_inputs)

    def add_kept(self, new: FindResult, result: BloomFindResult) -> dict:
        """Insert the new documents a dedup keeps that can pair (the caller holds the
        write lock): their band keys and set keys, as computed for the query."""
        rows = np.flatnonzero(result.kept_new & (new.pair_set.head >= 0))
        band_keys, exact_keys = _document_keys(new, self.bands, self.rows)

        def insert_kept(filters, exact, plan):
            insert(filters, band_keys[rows], plan)
            insert(exact, exact_keys[rows][:, None], plan)
            return int(rows.size), 0
        return self._add_locked(insert_kept)

    def writing(self) -> WriteLock:
        return WriteLock(self.path)

    def _add_locked(self, fill) -> dict:
        """``fill(filters, exact, plan) -> (inserted, set aside)`` on copies of the latest
        filters; then a new version is written (nothing changes when nothing was)."""
        manifest = _read_manifest(self.path)  # the latest, under the lock
        _sweep(self.path, manifest)
        filters, exact = _read_filters(self.path, manifest)
        filters, exact = filters.copy(), exact.copy()
        inserted, set_aside = fill(filters, exact, self.plan)
        if inserted or set_aside:
            manifest["documents"] += inserted
            manifest["set_aside"] += set_aside
            manifest["version"] += 1
            old = manifest["filters"]["name"]
            _write_version(self.path, manifest, filters, exact)
            shutil.rmtree(self.path / FILTERS / old, ignore_errors=True)
        self.__init__(self.path)
        return {"added": inserted, "set_aside": set_aside,
                "documents": manifest["documents"], "version": manifest["version"]}

    # ---- reading ----

    def flag(self, new: FindResult) -> tuple[np.ndarray, np.ndarray]:
        """(flagged, exact) bool[n_new] for a local-engine result kept with
        ``keep_arrays=True`` and the index's options: flagged, some band key of the
        document is in its band's filter (it probably has a near-duplicate in the index;
        certainly, if the full index would pair it); exact, flagged and its whole set
        hash is in the exact filter too. Documents too short to pair are never flagged."""
        plan = self.plan
        band_keys, exact_keys = _document_keys(new, self.bands, self.rows)
        usable = new.pair_set.head >= 0
        flagged = (hits(self.band_filters, band_keys, plan) > 0) & usable
        exact = flagged & (hits(self.exact_filter, exact_keys[:, None], plan) > 0)
        return flagged, exact

    def query(self, inputs, *, quiet: bool = True, text=None, id=None, force: bool = False,
              representative_field: str | None = None, **options) -> BloomFindResult:
        """The new documents of ``inputs`` against the index: their own result (pairs
        among themselves) with ``flagged`` (bool per document: probably has a
        near-duplicate in the index) and the dedup's kept mask (:func:`dedup_result`);
        options as :func:`neardup.find`'s, those the index fixes taken from it."""
        groups = split_options(column_names(options, text, id))
        return dedup_against(inputs, self.path, groups, quiet=quiet, force=force,
                             representative_field=representative_field)[1]

    def info(self, verify: bool = False) -> dict:
        """What the filters hold and cost; the false-positive rate estimated from the
        bits set (exact for these filters: 1 - ∏(1 - fill_j^k))."""
        plan = self.plan
        fill = fill_fraction(self.band_filters)
        files = self.manifest["filters"]["files"]
        info = {
            "path": str(self.path), "mode": MODE,
            "format_version": self.manifest["format_version"],
            "version": self.manifest["version"], "documents": self.n,
            "set_aside": self.manifest["set_aside"], "capacity": plan.capacity,
            "over_capacity": self.n > plan.capacity, "fp_at_capacity": plan.rate,
            "bits_per_filter": plan.bits, "hashes": plan.hashes, "filters": self.bands + 1,
            "bits": (self.bands + 1) * plan.bits,
            "bytes": sum(f["bytes"] for f in files),
            "bytes_per_document": round(plan.bytes_per_document, 2),
            "bytes_per_inserted_document": round(plan.total_bytes / self.n, 2)
            if self.n else None,
            "filled_fraction": round(float(fill.mean()), 6),
            "filled_fraction_max": round(float(fill.max()), 6),
            "fp_estimated": estimated_rate(fill, plan.hashes),
            "exact_filled_fraction": round(float(fill_fraction(self.exact_filter)[0]), 6),
            "threshold": self.threshold, "bands": self.bands, "rows": self.rows,
            "p_at_threshold": round(float(lsh.s_curve(self.threshold, self.bands,
                                                      self.rows)), 6),
            "options": self.options,
        }
        if verify:
            folder = self.path / FILTERS / self.manifest["filters"]["name"]
            info["corrupt_files"] = [f"{FILTERS}/{self.manifest['filters']['name']}/"
                                     f"{f['name']}" for f in files
                                     if file_sha256(folder / f["name"]) != f["sha256"]]
        return info


def merge(sources, path: str | os.PathLike) -> BloomIndex:
    """A new Bloom index at ``path`` whose filters are the OR of those of ``sources``
    (Bloom indexes with the same options, bands and sizing: refused by name otherwise);
    documents and set-aside counts add up (insertions: a document in two is counted
    twice, and its keys are set once)."""
    indexes = [BloomIndex(s) for s in sources]
    if not indexes:
        raise ValueError("merge needs at least one Bloom index")
    first = indexes[0]
    same = ("options", "bands", "rows", "threshold", "bloom")
    for other in indexes[1:]:
        differ = [k for k in same if other.manifest[k] != first.manifest[k]]
        if differ:
            raise ValueError(f"Bloom indexes {first.path} and {other.path} differ in "
                             f"{', '.join(differ)}: only filters of equal options and "
                             f"sizing merge")
    filters, exact = first.band_filters.copy(), first.exact_filter.copy()
    for other in indexes[1:]:
        filters = merge_filters(filters, other.band_filters)
        exact = merge_filters(exact, other.exact_filter)
    manifest = {k: v for k, v in first.manifest.items() if k != "filters"}
    manifest.update(version=1, next_filters=1, filters=None,
                    documents=sum(i.n for i in indexes),
                    set_aside=sum(i.manifest["set_aside"] for i in indexes))
    with StagedDirectory(path, lambda name: False, option="--out") as stage:
        (stage / FILTERS).mkdir()
        with WriteLock(stage):
            _write_version(stage, manifest, filters, exact)
    return BloomIndex(path)


@dataclass(repr=False)  # FindResult's one-line repr
class BloomFindResult(FindResult):
    """The new documents' own result, with which of them the index flags and which a
    dedup against it keeps (``representative`` is that kept mask)."""

    flagged: np.ndarray | None = None  # bool[n]: some band key is in the index's filters

    @property
    def kept_new(self) -> np.ndarray:
        return self.representative


def dedup_result(index: BloomIndex, new: FindResult) -> BloomFindResult:
    """A dedup against a Bloom index: a new document is removed when it is flagged (it
    probably has a near-duplicate in the index), or when it has a verified pair (J ≥ t)
    with a new document kept before it. A flagged document keeps nothing: a new document
    close only to a flagged one stays (the rule against a full index,
    :func:`neardup.cluster.anchored_cover`, with the flagged documents gone instead of
    anchored: whether their indexed near-duplicate is also close to it is unknown, and
    components would remove it on a chain). Against the full index of the same documents
    a Bloom index removes every document that has a candidate there, and possibly more:
    candidates the full index rejects below the threshold, and false positives."""
    flagged, exact = index.flag(new)
    p = new.pair_set
    free = ~flagged[p.set_i] & ~flagged[p.set_j]
    visit = np.concatenate([np.flatnonzero(new.representative),
                            np.flatnonzero(~new.representative)])
    rank = np.empty(new.n, dtype=np.int64)
    rank[visit] = np.arange(new.n, dtype=np.int64)
    matched, _ = cluster.anchored_cover(p.head, p.set_i[free], p.set_j[free],
                                        p.jaccard[free], new.n, rank)
    kept = (matched < 0) & ~flagged
    section = {"mode": MODE, "path": str(index.path), "documents": index.n,
               "flagged": int(flagged.sum()), "flagged_exact": int(exact.sum()),
               "removed_for_new": int((~kept & ~flagged).sum()),
               "fp_estimated": index.info()["fp_estimated"]}
    counts = counting.against_index(new.counts, removable=new.n - kept.sum(),
                                      new_documents=new.n, index=section)
    values = {f.name: getattr(new, f.name) for f in fields(new) if f.init}
    values.update(representative=kept, counts=counts)
    return BloomFindResult(**values, flagged=flagged)


def dedup_against(inputs, against, groups: OptionGroups, *, quiet: bool, force: bool,
                  representative_field: str | None):
    """(index, :func:`dedup_result`, the new documents' own result, documents) for
    :func:`neardup.dedup` against the Bloom index ``against``; the options it fixes are
    taken from it, as against a full index."""
    index = BloomIndex(against)
    given = index.query_options(groups.given, force=force)
    groups = split_options(given, source=groups.source)
    new, documents = find_documents(inputs, groups, quiet=quiet,
                                    representative_field=representative_field,
                                    keep_arrays=True)
    return index, dedup_result(index, new), new, documents


# ---- files ----

def _document_keys(new: FindResult, bands: int, rows: int):
    """(band keys (n, b), set keys (n,)) of every new document: its distinct set's (a
    document too short to pair gets its group's row 0, and is masked by the callers)."""
    head = new.pair_set.head
    heads = np.flatnonzero(head == np.arange(new.n))  # rows of new.signatures
    row = np.searchsorted(heads, np.maximum(head, 0)).clip(0, max(heads.size - 1, 0))
    if heads.size == 0:
        return np.zeros((new.n, bands), dtype=np.uint64), np.zeros(new.n, dtype=np.uint64)
    band_keys = lsh.band_keys(new.signatures.matrix, bands, rows)[row]
    return band_keys, set_keys(new.sets.subset(heads))[row]


def _empty(plan: FilterPlan):
    return (np.zeros((plan.bands, plan.words), dtype=np.uint64),
            np.zeros((1, plan.words), dtype=np.uint64))


def _read_manifest(path: Path) -> dict:
    if not is_bloom(path):
        store.read_manifest(path)  # its message: no index there, or not a Bloom one
        raise ValueError(f"{path} is a full index, not a Bloom index")
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("format") != store.FORMAT or \
            manifest.get("format_version") != store.FORMAT_VERSION:
        raise ValueError(f"{path}: not a Bloom index of format version "
                         f"{store.FORMAT_VERSION}")
    entry = manifest.get("filters")
    if not isinstance(entry, dict) or not WRITTEN_NAME.fullmatch(str(entry.get("name"))) \
            or [f.get("name") for f in entry.get("files", [])] != list(FILTER_FILES):
        raise corrupt(path / MANIFEST, f"no filters entry listing {FILTER_FILES}")
    return manifest


def _read_filters(path: Path, manifest: dict):
    """(band filters (b, words), exact filter (1, words)), checked: size, SHA-256, shape."""
    s = manifest["bloom"]
    folder = path / FILTERS / manifest["filters"]["name"]
    shapes = {"bands.npy": (manifest["bands"], s["bits"] // 64), "exact.npy": (1, s["bits"] // 64)}
    arrays = []
    for file in manifest["filters"]["files"]:
        at = folder / file["name"]
        try:
            data = at.read_bytes()
        except OSError:
            raise corrupt(at, "missing") from None
        if len(data) != file["bytes"] or hashlib.sha256(data).hexdigest() != file["sha256"]:
            raise corrupt(at, "another size or SHA-256 than the manifest says")
        array = np.load(io.BytesIO(data), allow_pickle=False)
        if array.dtype != np.uint64 or array.shape != shapes[file["name"]]:
            raise corrupt(at, f"shape {array.shape} {array.dtype}, not "
                              f"{shapes[file['name']]} uint64")
        arrays.append(array)
    return arrays[0], arrays[1]


def _write_version(root: Path, manifest: dict, filters: np.ndarray, exact: np.ndarray) -> None:
    """Write the filters as the next version's folder, then the manifest listing it; on
    any error what was written is removed (the previous version stays)."""
    name = f"f-{manifest['next_filters']:06d}"
    temp = root / FILTERS / f"{name}{_TEMP}{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    final = root / FILTERS / name
    try:
        for file, array in zip(FILTER_FILES, (filters, exact)):
            with NpyWriter(temp / file, np.uint64, array.shape) as out:
                half = max(array.shape[0] // 2, 1)
                out.write(array[:half])
                crash_point("bloom-half-written")
                if half < array.shape[0]:
                    out.write(array[half:])
        fsync_dir(temp)
        os.rename(temp, final)
        fsync_dir(root / FILTERS)
        crash_point("bloom-written")
        manifest["filters"] = {"name": name, "files": [
            {"name": f, "bytes": (final / f).stat().st_size, "sha256": file_sha256(final / f)}
            for f in FILTER_FILES]}
        manifest["next_filters"] += 1
        write_manifest(root, manifest)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        listed = _listed_name(root)
        if listed != name:
            shutil.rmtree(final, ignore_errors=True)
        raise


def _listed_name(root: Path) -> str | None:
    try:
        return json.loads((root / MANIFEST).read_text(encoding="utf-8"))["filters"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _sweep(root: Path, manifest: dict) -> None:
    """Remove what killed writers left: filter folders the manifest does not list (only
    the names a writer creates) and temporary manifests. Call holding the write lock."""
    store.sweep_unlisted(root, {"segments": []})  # the temporary manifests
    listed = manifest["filters"]["name"]
    for entry in os.scandir(root / FILTERS):
        if (entry.name != listed and WRITTEN_NAME.fullmatch(entry.name)
                and entry.is_dir(follow_symlinks=False)):
            shutil.rmtree(entry.path, ignore_errors=True)
