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
- **False positives within the stated rate, however many documents are added.** The
  filters come in generations (:mod:`neardup.index.bloomfilter`: the sizing formulas,
  the probes, the growth): the first is sized for ``capacity`` documents, and a document
  past a generation's capacity opens a new one, twice as large at half the budget, so
  the per-query rate of all of them together stays within RATE. :meth:`BloomIndex.info`
  reports the rate estimated from the bits set (exact for the filters as they are), and
  a query against filters estimated past :data:`REFUSED_ABOVE` × RATE is refused
  without ``force``.
- **Exact copies.** A second filter per generation holds a hash of each whole shingle
  set (:func:`set_keys`): a flagged document whose set hash is also present is counted
  as (probably) an exact copy of an indexed document. It only labels flags; it never
  flags on its own (an identical set shares every band key anyway).

Filters are uint64 words, bit p in word p >> 6; inserting is OR, so filters built apart
(shards) with the same plans and OR-ed (:func:`merge`) are the filters of one build over
both. Same documents, options and sizing give byte-identical files.

On disk::

    IDX/manifest.json            format, "mode": "bloom", options, b × r, counts, and
                                 "bloom": fp, capacity, layout, one entry per generation
                                 (capacity, bits, hashes, probes, documents)
    IDX/filters/f-000001/
        bands-G.npy  (b, m_G/64) uint64   generation G's filter per band
        exact-G.npy  (1, m_G/64) uint64   its exact-copy filter

An index of layout 1 (an earlier neardup: "bloom" holds fp, capacity, bits and hashes;
``bands.npy`` and ``exact.npy``) is read as one generation probed by double hashing, as
it was written; its first add writes layout 2, that generation kept as it is.

Writes are atomic as the segments' (:mod:`neardup.index.store`): a new version's files
are written into ``f-NNNNNN.tmp-PID`` (space reserved first, fsynced), renamed, then the
manifest (listing each file's bytes and SHA-256) is replaced; a killed writer leaves the
previous version, and the next writer removes what it left. Opening reads the files
whole and checks their SHA-256.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from .. import cluster, lsh
from .._core import counts as counting
from .._core.hashing import GOLDEN, mix64
from .._core.jit import njit
from .._core.machine import machine_memory
from ..options import OptionGroups, column_names, split_options
from ..pipeline.outofcore import MemoryLimitError, WorkDirectory, as_option, format_size
from ..pipeline.run import find_documents
from ..result import FindResult
from ..shingling import ShingleSets
from ..sinks.staging import StagedDirectory, file_sha256, refuse_touching_inputs
from . import CONFIG_OPTIONS, PREPARE_OPTIONS, SOURCE_OPTIONS, BandedIndex, store
from .bloomfilter import (
    DOUBLE_HASHING,
    GROWTH,
    SPLITMIX,
    TIGHTENING,
    FilterPlan,
    Generation,
    Generations,
    check_capacity,
    check_rate,
    estimated_rate,
    fill_fraction,
    first_plan,
    hits,
    insert,
    merge_filters,
)
from .chunks import check_limit, chunk_plan, signed_chunks, split_index_options
from .integrity import corrupt
from .store import MANIFEST, NpyWriter, WriteLock, crash_point, fsync_dir, write_manifest

__all__ = ["BUILD_BLOCK", "DEFAULT_RATE", "BloomFindResult", "BloomIndex", "FilterFiller",
           "FilterPlan", "Generations", "build_rate",
           "dedup_against", "dedup_result", "estimated_rate", "fill_fraction", "hits",
           "insert", "is_bloom", "merge", "merge_filters", "refuse_find", "set_keys"]

MODE = "bloom"
LAYOUT = 2  # filters in generations, probes named per generation (1: one filter, double hashing)
LAYOUT_1_FILES = ["bands.npy", "exact.npy"]
DEFAULT_RATE = 1e-3  # per-query extra false-positive rate, however many are added
REFUSED_ABOVE = 2.0  # a query refuses filters estimated past this many times their rate
FILTERS = "filters"
WRITTEN_NAME = re.compile(r"f-[0-9]{6,}(\.tmp-[0-9]+)?")
_TEMP = ".tmp-"
FIND_REFUSED = ("is a Bloom index: it keeps one Bloom filter per band and no documents, so "
                "it has no pairs and no Jaccard to list; `neardup dedup NEW --against {path}` "
                "removes the new documents it flags, and neardup.index.bloom.BloomIndex(path)"
                ".query(NEW).flagged says which they are")


def build_rate(bloom: bool, fp: float | None, capacity: int | None) -> float | None:
    """The --fp a build with ``bloom`` sizes its filters for (:data:`DEFAULT_RATE` when
    not given), None without ``bloom``; --fp or --capacity without it is refused."""
    if bloom:
        return DEFAULT_RATE if fp is None else fp
    if fp is not None or capacity is not None:
        raise ValueError("--fp and --capacity size a Bloom index: give --bloom too")
    return None


def filter_files(generations: int) -> list[str]:
    """The files of a version's folder: each generation's band and exact-copy filters."""
    return [f"{kind}-{g}.npy" for g in range(generations) for kind in ("bands", "exact")]


def check_fits(plan: FilterPlan, capacity: int, fp: float) -> None:
    """Refuse filters this machine cannot hold (whole, and twice while adding), before
    anything is read."""
    memory = machine_memory()
    if 2 * plan.total_bytes > memory:
        raise ValueError(
            f"--capacity {capacity:,} at --fp {fp:g} needs {plan.total_bytes:,} "
            f"bytes of Bloom filters ({plan.total_bytes / 2**30:,.1f} GiB, "
            f"{plan.bytes_per_document:.1f} a document), held in memory whole and twice "
            f"while adding; this machine has {memory / 2**30:,.1f} GiB: give a --capacity "
            f"of at most {capacity * memory // (2 * plan.total_bytes):,} (the index grows "
            f"past it with a new generation of filters)")


# ---- keys ----

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


# ---- building ----

BUILD_BLOCK = 100_000  # a build inserts its documents this many at a time


def _new_manifest(prep, config) -> dict:
    """A new Bloom index's manifest: its options and b × r, nothing inserted yet."""
    plan = config.band_plan()
    return {
        "format": store.FORMAT, "format_version": store.FORMAT_VERSION, "mode": MODE,
        "version": 1, "threshold": config.threshold, "bands": plan.bands,
        "rows": plan.rows, "weights": list(config.weights),
        "options": {**{k: getattr(config, k) for k in CONFIG_OPTIONS},
                    **{k: getattr(prep, k) for k in PREPARE_OPTIONS}},
        "documents": 0, "set_aside": 0, "next_filters": 1, "filters": None,
    }


def _blocks(keys):
    """(band keys, set keys) of consecutive documents, regrouped into blocks of
    :data:`BUILD_BLOCK` documents (the last fewer). A build inserts them so, whatever
    chunks the reading gave: which documents open a new generation, and how large it is,
    then depend on the documents alone, so every engine's build of the same input writes
    the same filters (:meth:`FilterFiller.of` plans the same blocks)."""
    pending, count = [], 0
    for band_keys, exact_keys in keys:
        pending.append((band_keys, exact_keys))
        count += len(band_keys)
        while count >= BUILD_BLOCK:
            band_keys, exact_keys = (np.concatenate(a) for a in zip(*pending))
            yield band_keys[:BUILD_BLOCK], exact_keys[:BUILD_BLOCK]
            pending = [(band_keys[BUILD_BLOCK:], exact_keys[BUILD_BLOCK:])]
            count -= BUILD_BLOCK
    if count:
        yield tuple(np.concatenate(a) for a in zip(*pending))


@dataclass(frozen=True)
class _Sizing:
    """A build's --fp and --capacity, checked (and the capacity's filters against this
    machine's memory) before anything is read."""

    fp: float
    capacity: int | None
    bands: int

    @classmethod
    def of(cls, fp: float, capacity: int | None, plan: lsh.BandPlan) -> _Sizing:
        check_rate(fp)
        if capacity is not None:
            check_capacity(capacity)
            check_fits(first_plan(fp, capacity, plan.bands), capacity, fp)
        return cls(fp, capacity, plan.bands)

    def filter_bytes(self, documents: int) -> int:
        """Bytes of the filters a build of ``documents`` documents holds whole."""
        capacity = self.capacity if self.capacity is not None else documents
        return first_plan(self.fp, max(capacity, 1), self.bands).total_bytes

    def filters(self) -> Generations | None:
        """Empty filters for the capacity given (None without one: sized once counted)."""
        if self.capacity is None:
            return None
        return Generations.sized(self.fp, self.capacity, self.bands)

    def for_documents(self, documents: int, set_aside: int) -> Generations:
        """Empty filters for a build of ``documents`` usable documents (no capacity
        given): refused when there are none, or when this machine cannot hold them."""
        if not documents:
            raise ValueError("no documents to size the Bloom filters for (the input "
                             f"holds none that can pair; {set_aside:,} set aside): give "
                             "--capacity N, the documents the first filters should hold")
        check_fits(first_plan(self.fp, documents, self.bands), documents, self.fp)
        return Generations.sized(self.fp, documents, self.bands)


FILTERS_HELD = "the Bloom filters, held whole"
BLOCK_COPIES = 3  # a block's keys while inserted: gathered, joined, made contiguous


class _WaitingKeys:
    """The band and set keys of a build without ``capacity``, until the documents are
    counted and the filters sized: in memory without a limit, in a file of the work
    directory under one (8 × (b + 1) bytes a document, read back a block at a time)."""

    def __init__(self, plan, work_dir):
        self.plan, self.work_dir = plan, work_dir
        self.held: list = []
        self.documents = 0
        self.file = None

    def __enter__(self) -> _WaitingKeys:
        if self.plan is not None:
            self.scratch = WorkDirectory(self.work_dir)
            self.path = self.scratch.__enter__() / "keys.bin"
            self.file = open(self.path, "wb")
        return self

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            self.file.close()
        if self.plan is not None:
            self.scratch.__exit__(*exc)

    def append(self, block) -> None:
        band_keys, exact_keys = block
        self.documents += len(band_keys)
        if self.file is None:
            self.held.append(block)
            return
        self.bands = band_keys.shape[1]
        np.ascontiguousarray(np.column_stack([band_keys, exact_keys]),
                             dtype=np.uint64).tofile(self.file)

    def check_fits(self, filter_bytes: int) -> None:
        """Under a limit: the filters sized for the documents read must fit in it."""
        plan = self.plan
        if plan is None:
            return
        need = (plan.costs.fixed + plan.costs.document(plan.id_chars / max(plan.seen, 1))
                * plan.seen + filter_bytes + plan.costs.min_chunk)
        if need > plan.limit:
            raise MemoryLimitError(
                f"after reading {plan.seen:,} documents: the Bloom filters for the "
                f"{self.documents:,} that can pair take ~{format_size(filter_bytes)}, held "
                f"whole; with the interpreter and its kernels (~"
                f"{format_size(plan.costs.fixed)}) the memory limit of "
                f"{format_size(plan.limit)} is below the floor of ~{format_size(need)}: "
                f"give --memory-limit {as_option(need)} or more")

    def blocks(self):
        """(band keys, set keys) of the documents, a block of :data:`BUILD_BLOCK` at a time."""
        if self.file is None:
            yield from self.held
            return
        self.file.close()
        self.file = None
        if not self.documents:
            return
        keys = np.memmap(self.path, dtype=np.uint64, mode="r",
                         shape=(self.documents, self.bands + 1))
        for lo in range(0, self.documents, BUILD_BLOCK):
            block = np.asarray(keys[lo:lo + BUILD_BLOCK])
            yield block[:, :-1], block[:, -1].copy()


@dataclass(frozen=True)
class FilterFiller:
    """Sets a build's filters where an engine's workers run (picklable, and small: the
    generations' plans, not their filters). Generation g takes the usable documents of
    rank ``starts[g]`` up to ``starts[g + 1]`` (the last: up to ``documents``), ranks
    counted in input order from 0, as the local build inserts them (:func:`_blocks`).
    A worker sets the keys of its documents in zeroed filters of the full size
    (:meth:`insert`); the OR of every worker's filters is the local build's."""

    plans: tuple[FilterPlan, ...]
    starts: tuple[int, ...]
    documents: int
    rows: int

    @classmethod
    def of(cls, filters: Generations, documents: int, rows: int) -> FilterFiller:
        """The filler of ``documents`` usable documents inserted into ``filters`` (empty,
        as sized): generations opened and documents counted in as the local build
        does, a block of :data:`BUILD_BLOCK` at a time."""
        spans = []
        for lo in range(0, documents, BUILD_BLOCK):
            spans += [(g, lo + start) for g, start, _ in
                      filters.take(min(BUILD_BLOCK, documents - lo))]
        starts = [documents] * len(filters.generations)
        for g, start in reversed(spans):
            starts[g] = start
        starts[0] = 0
        return cls(tuple(g.plan for g in filters.generations), tuple(starts), documents,
                   rows)

    def generation_of(self, ranks: np.ndarray) -> np.ndarray:
        """int64[n]: the generation that takes each usable document of rank ``ranks``."""
        return np.searchsorted(np.asarray(self.starts[1:], dtype=np.int64), ranks,
                               side="right").astype(np.int64)

    def insert(self, filters: dict, generations: np.ndarray, sets: ShingleSets,
               signatures: np.ndarray) -> None:
        """Set the keys of documents (their generations, shingle sets and signatures,
        row for row) in ``filters``: {generation: (band filters (b, words), exact-copy
        filter (1, words))}, each made zeroed at its full size on first use."""
        band_keys = lsh.band_keys(signatures, self.plans[0].bands, self.rows)
        exact_keys = set_keys(sets)
        for g in np.unique(generations).tolist():
            plan = self.plans[g]
            if g not in filters:
                filters[g] = (np.zeros((plan.bands, plan.words), dtype=np.uint64),
                              np.zeros((1, plan.words), dtype=np.uint64))
            rows = generations == g
            insert(filters[g][0], band_keys[rows], plan, g)
            insert(filters[g][1], exact_keys[rows][:, None], plan, g)


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
        self.filters = _read_filters(self.path, self.manifest)

    def __repr__(self) -> str:
        return (f"BloomIndex({str(self.path)!r}: {self.n:,} documents inserted, "
                f"{len(self.filters.generations)} generation(s) of filters for "
                f"{self.filters.capacity:,}, {self.bands} x {self.rows} bands)")

    @property
    def n(self) -> int:
        return int(self.manifest["documents"])

    @property
    def fp(self) -> float:
        """The per-query false-positive rate the filters are sized for, in all."""
        return float(self.manifest["bloom"]["fp"])

    # ---- writing ----

    @classmethod
    def build(cls, inputs, path: str | os.PathLike, *, fp: float = DEFAULT_RATE,
              capacity: int | None = None, quiet: bool = True, text=None, id=None,
              memory_limit=None, work_dir=None, **options) -> BloomIndex:
        """Bloom-index ``inputs`` at ``path`` (a new or empty folder), read, shingled and
        banded as :meth:`neardup.Index.build` does. ``fp``: the per-query extra
        false-positive rate, kept however many documents are added (new generations of
        filters open past ``capacity``); ``capacity``: the documents the first
        generation holds (default: the documents of this build, whose band keys are then
        held until all are read: 8 bytes × (b + 1) a document; give ``capacity`` to
        insert a block of :data:`BUILD_BLOCK` documents at a time). Filters this machine
        cannot hold are refused, and so is an empty build without ``capacity``, before
        anything is written. ``memory_limit``, ``work_dir``: as
        :meth:`neardup.Index.build`'s; the filters are held whole and count against the
        limit, and the band keys waiting for the sizing go to ``work_dir``."""
        source, prep, config = split_index_options(column_names(options, text, id))
        sizing = _Sizing.of(fp, capacity, config.band_plan())  # refused before reading
        check_limit("index build", inputs, memory_limit, work_dir, {"--out": path})
        plan = config.band_plan()
        chunking = chunk_plan(memory_limit, inputs, source, config, held=lambda counted: (
            (FILTERS_HELD, sizing.filter_bytes(counted)),
            ("the keys of a block of documents inserted at once", BLOCK_COPIES * 8
             * (plan.bands + 1) * (min(counted, BUILD_BLOCK) or BUILD_BLOCK))))
        filters, set_aside = sizing.filters(), 0

        def signed_keys():
            nonlocal set_aside
            for _, sets, signatures, aside in signed_chunks(inputs, source, prep, config,
                                                            quiet, chunking):
                set_aside += aside
                yield lsh.band_keys(signatures, plan.bands, plan.rows), set_keys(sets)

        if filters is not None:
            for block in _blocks(signed_keys()):
                filters.insert(*block)
        else:
            with _WaitingKeys(chunking, work_dir) as waiting:
                for keys in signed_keys():  # one generation for them all: no blocks needed
                    waiting.append(keys)
                filters = sizing.for_documents(waiting.documents, set_aside)
                waiting.check_fits(filters.total_bytes)
                for band_keys, exact_keys in waiting.blocks():
                    filters.insert(band_keys, exact_keys)
        return cls._write_new(path, _new_manifest(prep, config), sizing, filters, set_aside)

    @classmethod
    def build_by(cls, path: str | os.PathLike, prep, config, fill, *,
                 fp: float = DEFAULT_RATE, capacity: int | None = None) -> BloomIndex:
        """A new Bloom index at ``path`` for documents shingled with ``prep`` and signed
        and banded with ``config``, whose filters another engine sets where its workers
        run (``neardup index build --engine spark --bloom``). ``fill(size)`` reads the
        inputs and counts them, calls ``size(documents, set_aside)`` once (the sizing and
        its refusals are :meth:`build`'s), which returns a :class:`FilterFiller` for
        that many usable documents in input order, and returns one (band filters,
        exact-copy filter) pair per generation of the filler: the OR of the filters the
        filler set for every part of the documents. The files are those :meth:`build`
        writes for the same input, byte for byte."""
        sizing = _Sizing.of(fp, capacity, config.band_plan())  # refused before reading
        made: dict = {}

        def size(documents: int, set_aside: int) -> FilterFiller:
            filters = sizing.filters() or sizing.for_documents(documents, set_aside)
            made.update(filters=filters, set_aside=set_aside)
            return FilterFiller.of(filters, documents, config.band_plan().rows)

        parts = fill(size)
        filters = made["filters"]
        if len(parts) != len(filters.generations):
            raise ValueError(f"the engine filled {len(parts)} generation(s) of filters "
                             f"where {len(filters.generations)} were planned")
        for gen, (bands, exact) in zip(filters.generations, parts):
            gen.bands = merge_filters(gen.bands, bands)
            gen.exact = merge_filters(gen.exact, exact)
        return cls._write_new(path, _new_manifest(prep, config), sizing, filters,
                              made["set_aside"])

    @classmethod
    def _write_new(cls, path, manifest: dict, sizing: _Sizing, filters: Generations,
                   set_aside: int) -> BloomIndex:
        documents = filters.documents
        manifest.update(documents=documents, set_aside=set_aside,
                        bloom={"fp": sizing.fp, "capacity": sizing.capacity or documents,
                               "layout": LAYOUT, "growth": GROWTH, "tightening": TIGHTENING})
        with StagedDirectory(path, lambda name: False, option="--out") as stage:
            (stage / FILTERS).mkdir()
            with WriteLock(stage):
                _write_version(stage, manifest, filters)
        return cls(path)

    def add(self, inputs, *, quiet: bool = True, text=None, id=None, memory_limit=None,
            work_dir=None, **options) -> dict:
        """Insert the documents of ``inputs`` (shingled with the index's options); past
        the last generation's capacity into a new one (the rate stays within fp).
        ``memory_limit``: chunks sized for it, what the filters hold (now and with the
        generations the counted documents open) counted against it."""
        options = column_names(options, text, id)
        source = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
        options.pop("threshold", None)
        self.warn_past_rate()
        _, prep, config = split_index_options(self.query_options(options))
        check_limit("index add", inputs, memory_limit, work_dir, {"index": self.path})
        chunking = chunk_plan(memory_limit, inputs, source, config, held=lambda counted: (
            (FILTERS_HELD, self.filters.bytes_after(counted)),))
        with WriteLock(self.path):
            def insert_inputs(filters: Generations):
                documents = set_aside = 0
                for _, sets, signatures, aside in signed_chunks(inputs, source, prep, config,
                                                                quiet, chunking):
                    filters.insert(lsh.band_keys(signatures, self.bands, self.rows),
                                   set_keys(sets))
                    documents, set_aside = documents + sets.n, set_aside + aside
                return documents, set_aside
            return self._add_locked(insert_inputs)

    def add_kept(self, new: FindResult, result: BloomFindResult) -> dict:
        """Insert the new documents a dedup keeps that can pair (the caller holds the
        write lock): their band keys and set keys, as computed for the query."""
        rows = np.flatnonzero(result.kept_new & (new.pair_set.head >= 0))
        band_keys, exact_keys = _document_keys(new, self.bands, self.rows)

        def insert_kept(filters: Generations):
            filters.insert(band_keys[rows], exact_keys[rows])
            return int(rows.size), 0
        return self._add_locked(insert_kept)

    def writing(self) -> WriteLock:
        return WriteLock(self.path)

    def _add_locked(self, fill) -> dict:
        """``fill(filters) -> (inserted, set aside)`` on a copy of the latest filters;
        then a new version is written (nothing changes when nothing was)."""
        manifest = _read_manifest(self.path)  # the latest, under the lock
        _sweep(self.path, manifest)
        self.filters = None  # the filters are held once: those read now, filled in place
        try:
            filters = _read_filters(self.path, manifest)  # fresh arrays, this add's own
            generations = len(filters.generations)
            inserted, set_aside = fill(filters)
            if inserted or set_aside:
                manifest["documents"] += inserted
                manifest["set_aside"] += set_aside
                manifest["version"] += 1
                old = manifest["filters"]["name"]
                _write_version(self.path, manifest, filters)
                shutil.rmtree(self.path / FILTERS / old, ignore_errors=True)
            now = len(filters.generations)
            del filters
        finally:
            self.__init__(self.path)
        return {"added": inserted, "set_aside": set_aside,
                "documents": manifest["documents"], "version": manifest["version"],
                "generations": now, "new_generations": now - generations}

    # ---- reading ----

    def flag(self, new: FindResult) -> tuple[np.ndarray, np.ndarray]:
        """(flagged, exact) bool[n_new] for a local-engine result kept with
        ``keep_arrays=True`` and the index's options: flagged, some band key of the
        document is in its band's filter of some generation (it probably has a
        near-duplicate in the index; certainly, if the full index would pair it); exact,
        flagged and its whole set hash is in an exact-copy filter too. Documents too
        short to pair are never flagged."""
        band_keys, exact_keys = _document_keys(new, self.bands, self.rows)
        usable = new.pair_set.head >= 0
        flagged = (self.filters.hits(band_keys) > 0) & usable
        exact = flagged & self.filters.exact_hits(exact_keys)
        return flagged, exact

    def past_rate(self) -> list[str]:
        """What to tell about generations of the earlier layout estimated past the rate
        they were sized for (filled past their capacity): one line each."""
        said = []
        for g, gen in enumerate(self.filters.generations):
            rate = gen.estimated_rate()
            if gen.plan.probes == DOUBLE_HASHING and rate > gen.plan.rate:
                said.append(
                    f"generation {g} of the Bloom index {self.path}, written by an earlier "
                    f"neardup (probed by double hashing), holds {gen.documents:,} documents "
                    f"for a capacity of {gen.plan.capacity:,}: its bits alone flag about "
                    f"{rate:.3g} of new documents with no near-duplicate, past the --fp "
                    f"{gen.plan.rate:g} it was sized for, and it keeps that rate (new "
                    f"documents go into new generations); the whole index flags about "
                    f"{self.filters.estimated_rate():.3g}. Rebuild it from its inputs to "
                    f"lower it")
        return said

    def warn_past_rate(self) -> None:
        for line in self.past_rate():
            warnings.warn(line, stacklevel=3)

    def check_rate(self, force: bool = False) -> float:
        """The estimated per-query rate; refused past :data:`REFUSED_ABOVE` × fp unless
        ``force`` (a query would remove that many unique documents)."""
        rate = self.filters.estimated_rate()
        if rate > REFUSED_ABOVE * self.fp and not force:
            raise ValueError(
                f"the Bloom index {self.path} would flag about {rate:.3g} of new documents "
                f"with no near-duplicate in it (estimated from its filters' bits), "
                f"{rate / self.fp:.1f} times the --fp {self.fp:g} it was sized for: each is "
                f"a unique document removed. Rebuild it from its inputs with a larger "
                f"--capacity, or give --force to query it as it is")
        return rate

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
        """What the filters hold and cost, per generation and in all; the false-positive
        rate estimated from the bits set (exact for these filters: 1 - ∏(1 - fill^k))."""
        filters = self.filters
        fills = filters.fill()
        all_fill = np.concatenate(fills)
        files = self.manifest["filters"]["files"]
        info = {
            "path": str(self.path), "mode": MODE,
            "format_version": self.manifest["format_version"],
            "version": self.manifest["version"], "documents": self.n,
            "set_aside": self.manifest["set_aside"], "capacity": filters.capacity,
            "fp": self.fp, "fp_estimated": filters.estimated_rate(),
            "layout": self.manifest["bloom"]["layout"],
            "generations": [{**g.plan.as_dict(), "documents": g.documents,
                             "fp": g.plan.rate, "filled_fraction": round(float(f.mean()), 6),
                             "fp_estimated": estimated_rate(f, g.plan.hashes),
                             "takes_documents": g.plan.takes_keys}
                            for g, f in zip(filters.generations, fills)],
            "warnings": self.past_rate(),
            "filters": (self.bands + 1) * len(filters.generations),
            "bits": filters.total_bytes * 8,
            "bytes": sum(f["bytes"] for f in files),
            "bytes_per_document": round(filters.total_bytes / filters.capacity, 2),
            "bytes_per_inserted_document": round(filters.total_bytes / self.n, 2)
            if self.n else None,
            "filled_fraction": round(float(all_fill.mean()), 6),
            "filled_fraction_max": round(float(all_fill.max()), 6),
            "exact_filled_fraction": round(float(np.mean(
                [fill_fraction(g.exact)[0] for g in filters.generations])), 6),
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
    (Bloom indexes with the same options, bands and generations of filters: refused by
    name otherwise, and when a generation would hold more documents than its capacity:
    build one index over all inputs then); documents and set-aside counts add up
    (insertions: a document in two is counted twice, and its keys are set once). Holds
    each input's write lock while it reads: no add in between."""
    sources = list(sources)
    real = [os.path.realpath(s) for s in sources]
    twice = sorted({str(s) for s, r in zip(sources, real) if real.count(r) > 1})
    if twice:
        raise ValueError(f"merge lists an index twice: {', '.join(twice)}")
    if len(sources) < 2:
        raise ValueError("merge needs at least two Bloom indexes")
    for source in sources:
        _read_manifest(Path(source))  # not a Bloom index: said before a lock file is made
    refuse_touching_inputs([Path(s) for s in sources], {"--out": path})
    with contextlib.ExitStack() as locks:
        for source in sources:
            locks.enter_context(WriteLock(Path(source)))
        return _merge_locked([BloomIndex(s) for s in sources], path)


def _merge_locked(indexes: list[BloomIndex], path) -> BloomIndex:
    first = indexes[0]
    same = ("options", "bands", "rows", "threshold")
    for other in indexes[1:]:
        probes = [(g, a.plan.probes, b.plan.probes) for g, (a, b) in enumerate(
            zip(first.filters.generations, other.filters.generations))
            if a.plan.probes != b.plan.probes]
        if probes:
            g, a, b = probes[0]
            raise ValueError(
                f"Bloom indexes {first.path} and {other.path} probe generation {g} "
                f"differently ({a} vs {b}; {DOUBLE_HASHING} is a filter written by an "
                f"earlier neardup): their filters cannot be OR-ed. Only indexes with the "
                f"same generations merge; query both, or rebuild one from its inputs")
        differ = [k for k in same if other.manifest[k] != first.manifest[k]]
        if _sizing(other) != _sizing(first):
            differ.append("bloom (the filters' sizing: --fp, --capacity, generations)")
        if differ:
            raise ValueError(f"Bloom indexes {first.path} and {other.path} differ in "
                             f"{', '.join(differ)}: only filters of equal options and "
                             f"sizing merge")
    filters = first.filters.copy()
    for g, gen in enumerate(filters.generations):
        for other in indexes[1:]:
            theirs = other.filters.generations[g]
            gen.bands = merge_filters(gen.bands, theirs.bands)
            gen.exact = merge_filters(gen.exact, theirs.exact)
            gen.documents += theirs.documents
        if gen.documents > gen.plan.capacity:
            total = sum(i.n for i in indexes)
            raise ValueError(
                f"the merged Bloom filters would hold {gen.documents:,} documents in "
                f"generation {g}, sized for {gen.plan.capacity:,}: past it the "
                f"false-positive rate exceeds --fp {first.fp:g}. Build one index over all "
                f"the inputs (e.g. --capacity {total:,}), or build each part with the "
                f"--capacity of the whole")
    manifest = {k: v for k, v in first.manifest.items() if k != "filters"}
    manifest.update(version=1, next_filters=1, filters=None,
                    documents=sum(i.n for i in indexes),
                    set_aside=sum(i.manifest["set_aside"] for i in indexes))
    with StagedDirectory(path, lambda name: False, option="--out") as stage:
        (stage / FILTERS).mkdir()
        with WriteLock(stage):
            _write_version(stage, manifest, filters)
    return BloomIndex(path)


def _sizing(index: BloomIndex):
    s = index.manifest["bloom"]
    return (s["fp"], s["capacity"], [g.plan for g in index.filters.generations])


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
               "fp_estimated": index.filters.estimated_rate(), "fp": index.fp}
    counts = counting.against_index(new.counts, removable=int(new.n - kept.sum()),
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
    index.check_rate(force=force)  # before anything is read
    index.warn_past_rate()
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


def _read_manifest(path: Path) -> dict:
    if not is_bloom(path):
        store.read_manifest(path)  # its message: no index there, or not a Bloom one
        raise ValueError(f"{path} is a full index, not a Bloom index")
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("format") != store.FORMAT or \
            manifest.get("format_version") != store.FORMAT_VERSION:
        raise ValueError(f"{path}: not a Bloom index of format version "
                         f"{store.FORMAT_VERSION}")
    sizing = manifest.get("bloom")
    if isinstance(sizing, dict) and sizing.get("layout", 1) == 1:
        manifest = _from_layout_1(path, manifest)
        sizing = manifest["bloom"]
    elif isinstance(sizing, dict) and sizing.get("layout") != LAYOUT:
        raise ValueError(f"{path} is a Bloom index of layout {sizing.get('layout')!r}, "
                         f"written by a later neardup; this one reads layouts 1 and "
                         f"{LAYOUT}")
    generations = sizing.get("generations") if isinstance(sizing, dict) else None
    entry = manifest.get("filters")
    if not isinstance(generations, list) or not generations or not isinstance(entry, dict) \
            or not WRITTEN_NAME.fullmatch(str(entry.get("name"))) \
            or [f.get("name") for f in entry.get("files", [])] not in \
            (filter_files(len(generations)), LAYOUT_1_FILES if sizing["layout"] == 1 else None):
        raise corrupt(path / MANIFEST, "no filters entry listing each generation's "
                                       "bands-G.npy and exact-G.npy")
    return manifest


def _from_layout_1(path: Path, manifest: dict) -> dict:
    """A manifest of layout 1 (one filter per band and an exact-copy filter, sized for fp
    at capacity, probed by double hashing, every document in it) as that of one closed
    generation; its files keep their names until an add writes layout 2."""
    s = manifest["bloom"]
    entry = manifest.get("filters")
    if not all(isinstance(s.get(k), int) and s.get(k) > 0 for k in ("capacity", "bits",
                                                                     "hashes")) \
            or s["bits"] % 64 or not isinstance(entry, dict) \
            or not WRITTEN_NAME.fullmatch(str(entry.get("name"))) \
            or [f.get("name") for f in entry.get("files", [])] != LAYOUT_1_FILES:
        raise corrupt(path / MANIFEST, "a Bloom index of layout 1 without its sizing "
                                       "(capacity, bits, hashes) or its filters entry "
                                       "listing bands.npy and exact.npy")
    generation = {"capacity": s["capacity"], "bits": s["bits"], "hashes": s["hashes"],
                  "probes": DOUBLE_HASHING, "fp": s["fp"], "documents": manifest["documents"]}
    return {**manifest, "bloom": {"fp": s["fp"], "capacity": s["capacity"], "layout": 1,
                                  "growth": GROWTH, "tightening": TIGHTENING,
                                  "generations": [generation]}}


def _read_filters(path: Path, manifest: dict) -> Generations:
    """The generations of filters, each file checked: size, SHA-256, shape."""
    s = manifest["bloom"]
    folder = path / FILTERS / manifest["filters"]["name"]
    files = iter(manifest["filters"]["files"])
    generations = []
    for entry in s["generations"]:
        plan = FilterPlan(manifest["bands"], entry["capacity"], entry["fp"], entry["bits"],
                          entry["hashes"], entry.get("probes", SPLITMIX))
        bands, exact = (_read_array(folder, next(files), (rows, plan.words))
                        for rows in (plan.bands, 1))
        generations.append(Generation(plan, bands, exact, entry["documents"]))
    return Generations(s["fp"], generations)


def _read_array(folder: Path, file: dict, shape: tuple[int, int]) -> np.ndarray:
    at = folder / file["name"]
    try:
        data = at.read_bytes()
    except OSError:
        raise corrupt(at, "missing") from None
    if len(data) != file["bytes"] or hashlib.sha256(data).hexdigest() != file["sha256"]:
        raise corrupt(at, "another size or SHA-256 than the manifest says")
    array = np.load(io.BytesIO(data), allow_pickle=False)
    if array.dtype != np.uint64 or array.shape != shape:
        raise corrupt(at, f"shape {array.shape} {array.dtype}, not {shape} uint64")
    return array


def _write_version(root: Path, manifest: dict, filters: Generations) -> None:
    """Write the filters as the next version's folder, then the manifest listing it (and
    each generation's plan and documents); on any error what was written is removed (the
    previous version stays)."""
    name = f"f-{manifest['next_filters']:06d}"
    temp = root / FILTERS / f"{name}{_TEMP}{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    final = root / FILTERS / name
    names = filter_files(len(filters.generations))
    arrays = [a for g in filters.generations for a in (g.bands, g.exact)]
    try:
        for file, array in zip(names, arrays):
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
            for f in names]}
        manifest["bloom"].update(layout=LAYOUT, generations=[
            {**g.plan.as_dict(), "fp": g.plan.rate, "documents": g.documents}
            for g in filters.generations])
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
