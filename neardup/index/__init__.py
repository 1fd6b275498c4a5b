"""An on-disk index of documents already seen, to deduplicate new data against old.

``Index.build(corpus, "idx/")`` shingles, signs and bands a corpus once and keeps what a
later query needs (ids, shingle sets, signatures, sorted band keys) in memory-mapped
segments (:mod:`neardup.index.store`); ``Index("idx/").add(more)`` appends a segment;
``neardup.find(new, against="idx/")`` finds every pair new × indexed and new × new
(:mod:`neardup.index.query`); ``neardup.dedup(new, out, against="idx/", add=True)``
keeps the new documents that duplicate nothing and adds them to the index.
``Index("idx/").remove(ids)`` tombstones documents so they never match again, and
``Index.merge([a, b], "c/")`` joins indexes built apart (:mod:`neardup.index.edit`).
``Index.build(corpus, "idx/", bloom=True, fp=1e-3)`` keeps one Bloom filter per band
instead (:mod:`neardup.index.bloom`): tens of bytes a document, "probably has a
near-duplicate in the index" per new document, no pairs.

What must match and what may differ: the index fixes everything that makes a shingle
set, a signature or a band key (:data:`INDEX_OPTIONS`: shingles, cleaning, MinHash
family, K, seed, bits, b × r, min_shingles). A query that gives one of them with
another value is refused with a ValueError naming each (index value vs query value);
one it leaves out takes the index's value. The threshold may differ: the bands were
tuned for the build's threshold t0, and at a threshold t they find a pair of
similarity t with probability P(t) = 1 - (1 - t^r)^b (:func:`neardup.lsh.s_curve`); a
query at t ≠ t0 is warned with P(t), and refused below P(t) = 0.5 unless forced.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from .. import lsh
from ..options import column_names
from ..pipeline import FindConfig, refusals
from ..shingling import ShingleSets
from ..sinks.staging import StagedDirectory
from ..sources.options import SourceOptions
from ..text import prepare
from . import edit, store
from .chunks import (
    check_limit,
    chunk_plan,
    signed_chunks,
    split_index_options,
    write_segments,
)
from .integrity import IndexCorruptError
from .store import (
    SEGMENTS,
    TOMBSTONES,
    Segment,
    SegmentPiece,
    WriteLock,
    discard_unlisted,
    read_manifest,
    read_tombstones,
    sweep_unlisted,
    write_manifest,
    write_segment,
    write_tombstones,
)

__all__ = ["BandedIndex", "Index", "IndexCorruptError", "SegmentWriter"]

# the options that make a set, a signature or a band key: fixed by the index
CONFIG_OPTIONS = ("shingle_kind", "shingle_size", "hash_bits", "min_shingles", "num_perm",
                  "seed", "family", "bits")
PREPARE_OPTIONS = tuple(f.name for f in fields(prepare.PrepareOptions)
                        if not f.name.startswith("_"))
INDEX_OPTIONS = CONFIG_OPTIONS + ("bands", "rows") + PREPARE_OPTIONS
# read options; everything else (threshold, verify, max_bucket, ...) is the query's own
SOURCE_OPTIONS = SourceOptions.keys()
MIN_RECALL = 0.5  # P(t) below this at the query's threshold is refused unless forced


class BandedIndex:
    """What every index kind shares: the options, threshold and b × r bands its manifest
    fixes, and the door a query's options pass through (``self.manifest`` and
    ``self.path`` are set by the subclass)."""

    manifest: dict
    path: Path

    @property
    def options(self) -> dict:
        return dict(self.manifest["options"])

    @property
    def threshold(self) -> float:
        return float(self.manifest["threshold"])

    @property
    def bands(self) -> int:
        return int(self.manifest["bands"])

    @property
    def rows(self) -> int:
        return int(self.manifest["rows"])

    # ---- the door: a query's options against the index's ----

    def query_options(self, options: dict, *, force: bool = False) -> dict:
        """``options`` with the index's values filled in; ValueError naming each option
        given with another value than the index's; the threshold checked by
        :meth:`check_threshold`."""
        options = dict(options)
        if "weights" in options:  # they only choose b x r, which the index fixes
            options.pop("weights")
        if options.get("method", "lsh") not in ("lsh", "auto"):
            raise ValueError(f"a query against an index uses its LSH bands: method must be "
                             f"'lsh' (or 'auto'), got {options['method']!r}")
        options["method"] = "lsh"
        if options.get("pairs", "all") != "all":
            raise ValueError("a query against an index lists every pair (pairs='all'): the "
                             "compact form groups identical sets, and a new document's "
                             "indexed copies are not in its group")
        for key, only in (("measure", "jaccard"), ("clusters", "components"),
                          ("sketch", "minhash")):
            if options.get(key, only) != only:
                raise ValueError(f"a query against an index verifies Jaccard of MinHash LSH "
                                 f"candidates and clusters by components: {key} must be "
                                 f"{only!r}, got {options[key]!r}")
        mine = {**self.options, "bands": self.bands, "rows": self.rows}
        given = {k: _comparable(options[k]) for k in INDEX_OPTIONS
                 if k in options and options[k] is not None}
        differ = edit.option_differences(mine, given, given, ("index", "query"))
        if differ:
            raise ValueError(f"the query's options differ from the index {self.path}'s: "
                             f"{'; '.join(differ)}; leave them out to use the index's")
        options.update(mine)
        options["threshold"] = self.check_threshold(options.get("threshold"), force=force)
        return options

    def check_threshold(self, threshold: float | None, *, force: bool = False) -> float:
        """The query's threshold (the index's when None); a warning with P(t) when it
        differs from the one the bands were tuned for, a ValueError when P(t) < 0.5 and
        not ``force``."""
        if threshold is None or float(threshold) == self.threshold:
            return self.threshold
        if not 0.0 < float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        recall = float(lsh.s_curve(float(threshold), self.bands, self.rows))
        message = (f"the index's bands ({self.bands} x {self.rows}) were tuned for t = "
                   f"{self.threshold}; at t = {threshold} they find a pair of that "
                   f"similarity with probability P(t) = 1 - (1 - t^{self.rows})^{self.bands}"
                   f" = {recall:.3f}")
        if recall < MIN_RECALL and not force:
            raise ValueError(message + f", below {MIN_RECALL}: refused (force=True / --force "
                             f"to run anyway, or build an index for this threshold)")
        warnings.warn(message, stacklevel=3)
        return float(threshold)


class Index(BandedIndex):
    """The index at ``path``, opened read-only: its manifest and memory-mapped segments.

    ``n`` documents (only those that can pair: at least ``min_shingles`` shingles), the
    ``stored`` rows less the ``removed`` ones (:meth:`remove`); document g is row
    g - base of the segment holding it, removed or not. Opening maps every segment's
    files, so a concurrent ``compact`` that removes old segments does not disturb an
    open index, and checks them (:mod:`neardup.index.integrity`: the layout always, the
    SHA-256 and whole structure of a file version not checked before): a damaged index
    is an :class:`IndexCorruptError` naming the file.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._open()

    def _open(self) -> None:
        """(Re)read the manifest and map the segments it lists. A compaction may remove
        the segments of the manifest just read before they are mapped: then the new
        manifest is read, once."""
        for attempt in range(2):
            self.manifest = read_manifest(self.path)
            try:
                self.segments = [Segment.open(self.path, self.manifest, entry)
                                 for entry in self.manifest["segments"]]
                self.tombstones = read_tombstones(self.path, self.manifest)
                break
            except (ValueError, OSError):
                if attempt or read_manifest(self.path)["version"] == self.manifest["version"]:
                    raise
        sizes = np.array([s.n for s in self.segments], dtype=np.int64)
        self.bases = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def __repr__(self) -> str:
        return (f"Index({str(self.path)!r}: {self.n:,} documents in {len(self.segments)} "
                f"segment(s), {self.bands} x {self.rows} bands tuned for t = "
                f"{self.threshold})")

    @property
    def n(self) -> int:
        """The documents that can match: those stored less those removed."""
        return self.stored - self.removed

    @property
    def stored(self) -> int:
        """The documents the segments hold, removed ones included (numbers 0..stored-1)."""
        return int(self.bases[-1])

    @property
    def removed(self) -> int:
        """The documents removed (tombstoned) and not yet dropped by :meth:`compact`."""
        return int(self.tombstones.size)

    def live_documents(self) -> np.ndarray:
        """int64[n]: the numbers of the documents not removed, ascending (their ids:
        ``index.ids(index.live_documents())``)."""
        keep = np.ones(self.stored, dtype=bool)
        keep[self.tombstones] = False
        return np.flatnonzero(keep)

    def is_removed(self, documents: np.ndarray) -> np.ndarray:
        """bool per document number of ``documents``: removed (a tombstone lists it)."""
        documents = np.asarray(documents, dtype=np.int64)
        if not self.tombstones.size:
            return np.zeros(documents.shape, dtype=bool)
        at = np.minimum(np.searchsorted(self.tombstones, documents), self.tombstones.size - 1)
        return self.tombstones[at] == documents

    # ---- writing ----

    @classmethod
    def build(cls, inputs, path: str | os.PathLike, *, quiet: bool = True,
              text=None, id=None, bloom: bool = False, fp: float | None = None,
              capacity: int | None = None, memory_limit=None, work_dir=None,
              **options) -> Index:
        """Index ``inputs`` (paths or data in memory, as :func:`neardup.find` reads them)
        at ``path``, a new or empty folder; ``options``: source, shingle, cleaning and
        MinHash options of :func:`neardup.find`, and the ``threshold`` the bands are
        tuned for (b × r chosen as ``find`` chooses them, or given); ``text``/``id``
        name the columns as in :func:`neardup.find`. ``bloom=True``: a Bloom index
        instead, one Bloom filter per band sized for ``capacity`` documents at ``fp``
        false positives per query (:class:`neardup.index.bloom.BloomIndex`).
        ``memory_limit`` (bytes, or a size such as "4G"): chunks sized for it, the runs
        spilled under ``work_dir`` (default: the system's temporary directory), a limit
        below what the build needs refused naming the floor (:mod:`neardup.index.chunks`);
        the same files."""
        from .bloom import BloomIndex, build_rate

        if (rate := build_rate(bloom, fp, capacity)) is not None:
            return BloomIndex.build(inputs, path, fp=rate, capacity=capacity, quiet=quiet,
                                    text=text, id=id, memory_limit=memory_limit,
                                    work_dir=work_dir, **options)
        source, prep, config = split_index_options(column_names(options, text, id))
        check_limit("index build", inputs, memory_limit, work_dir, {"--out": path})
        plan = chunk_plan(memory_limit, inputs, source, config)
        return cls.build_by(path, prep, config, lambda stage, manifest: write_segments(
            stage, manifest, signed_chunks(inputs, source, prep, config, quiet, plan),
            plan=plan, work_dir=work_dir))

    @classmethod
    def build_by(cls, path: str | os.PathLike, prep, config: FindConfig, fill) -> Index:
        """A new index at ``path`` (a new or empty folder, staged and swapped in whole)
        for documents shingled with ``prep`` and signed and banded with ``config``, whose
        segments ``fill(stage, manifest)`` writes: it appends their entries to
        ``manifest`` (in document order, e.g. with a :class:`SegmentWriter` for
        ``stage``) and returns the documents set aside. :meth:`build` fills it by
        reading here; another engine (``neardup index build --engine spark``) by
        writing segments where its workers run."""
        plan = config.band_plan()
        manifest = {
            "format": store.FORMAT, "format_version": store.FORMAT_VERSION,
            "version": 1, "threshold": config.threshold, "bands": plan.bands,
            "rows": plan.rows, "weights": list(config.weights),
            "options": {**{k: getattr(config, k) for k in CONFIG_OPTIONS},
                        **{k: getattr(prep, k) for k in PREPARE_OPTIONS}},
            "documents": 0, "set_aside": 0, "next_segment": 1, "segments": [],
        }
        with StagedDirectory(path, lambda name: False, option="--out") as stage:
            (stage / SEGMENTS).mkdir()
            with WriteLock(stage):
                manifest["set_aside"] = fill(stage, manifest)
                write_manifest(stage, manifest)
        return cls(path)

    def add(self, inputs, *, quiet: bool = True, text=None, id=None, memory_limit=None,
            work_dir=None, **options) -> dict:
        """Add the documents of ``inputs`` as a new segment (shingled with the index's
        options; source options are this input's). Returns what was added.
        ``memory_limit``, ``work_dir``: as :meth:`build`'s (the same segment)."""
        refusals.check(refusals.INDEX, "index add", {"embeddings": options.get("embeddings")})
        options = column_names(options, text, id)
        source = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
        options.pop("threshold", None)  # a query's; adding does not verify anything
        options = self.query_options(options)
        _, prep, config = split_index_options(options)
        check_limit("index add", inputs, memory_limit, work_dir, {"index": self.path})
        plan = chunk_plan(memory_limit, inputs, source, config)
        with WriteLock(self.path):
            return self._add_locked(lambda root, manifest: write_segments(
                root, manifest, signed_chunks(inputs, source, prep, config, quiet, plan),
                plan=plan, work_dir=work_dir))

    def add_documents(self, ids, sets: ShingleSets, signatures: np.ndarray, *,
                      locked: bool = False) -> dict:
        """Add documents already shingled and signed with the index's options (one row
        of ``sets`` and ``signatures`` per id). ``locked``: the caller holds
        :meth:`writing`."""
        def write(root: Path, manifest: dict) -> int:
            _append_segment(root, manifest, ids, sets, signatures)
            return 0

        if locked:
            return self._add_locked(write)
        with WriteLock(self.path):
            return self._add_locked(write)

    def writing(self) -> WriteLock:
        """``with index.writing():`` hold the write lock across a query and an add."""
        return WriteLock(self.path)

    def _add_locked(self, write) -> dict:
        """``write(root, manifest) -> set aside`` appends segments to ``manifest``; then the
        manifest is replaced, once (nothing changes when nothing was added)."""
        manifest = read_manifest(self.path)  # the latest, under the lock
        sweep_unlisted(self.path, manifest)
        before = manifest["documents"]
        try:
            set_aside = write(self.path, manifest)
            manifest["set_aside"] += set_aside
            if manifest["documents"] > before or set_aside:
                manifest["version"] += 1
                write_manifest(self.path, manifest)
        except BaseException:  # a full disk, Ctrl-C, SIGTERM: no segment of it is left
            discard_unlisted(self.path)
            raise
        self._open()
        return {"added": manifest["documents"] - before, "set_aside": set_aside,
                "documents": manifest["documents"], "version": manifest["version"]}

    def compact(self) -> dict:
        """Merge every segment into one (same rows, same order, less the removed ones:
        the tombstones go with them); the old segments are removed once the new manifest
        is in place."""
        with WriteLock(self.path):
            manifest = read_manifest(self.path)
            sweep_unlisted(self.path, manifest)
            old = [Segment.open(self.path, manifest, entry) for entry in manifest["segments"]]
            removed = read_tombstones(self.path, manifest)
            if len(old) <= 1 and not removed.size:
                return {"segments_before": len(old), "segments": len(old),
                        "version": manifest["version"], "dropped": 0}
            try:
                pieces = _live_pieces(old, removed)
                manifest["segments"] = [_merge(self.path, manifest, pieces)] if pieces else []
                manifest["documents"] = sum(e["documents"] for e in manifest["segments"])
                manifest.pop(TOMBSTONES, None)
                manifest["version"] += 1
                write_manifest(self.path, manifest)
            except BaseException:
                discard_unlisted(self.path)
                raise
            sweep_unlisted(self.path, manifest)
        self._open()
        return {"segments_before": len(old), "segments": len(manifest["segments"]),
                "version": manifest["version"], "dropped": int(removed.size)}

    def remove(self, ids) -> dict:
        """Remove every document whose id is one of ``ids`` (strings): tombstones written
        aside, then the manifest swapped under the write lock; the documents never match
        again, and :meth:`compact` drops their rows. Removing a removed id again changes
        nothing. Returns the ``ids`` given (distinct), documents ``removed`` now and
        ``already_removed``, the ids ``not_found`` in the index (a count and a few), the
        ``documents`` left, ``removed_total`` and the ``version``."""
        wanted = edit.distinct_ids(ids)
        with WriteLock(self.path):
            self._open()  # the latest version, under the lock
            manifest = read_manifest(self.path)
            sweep_unlisted(self.path, manifest)
            documents, found = edit.documents_with_ids(self, wanted)
            fresh = documents[~self.is_removed(documents)]
            report = edit.removal_report(wanted, found, int(documents.size), int(fresh.size))
            if fresh.size:
                try:
                    manifest["version"] += 1
                    manifest[TOMBSTONES] = write_tombstones(
                        self.path, manifest["version"], np.union1d(self.tombstones, fresh))
                    write_manifest(self.path, manifest)
                except BaseException:
                    discard_unlisted(self.path)
                    raise
                sweep_unlisted(self.path, manifest)
                self._open()
        return {**report, "documents": self.n, "removed_total": self.removed,
                "version": self.manifest["version"]}

    @classmethod
    def merge(cls, paths, out: str | os.PathLike) -> Index:
        """The indexes at ``paths`` (two or more, equal options: one that differs is
        refused by name) merged into the new index ``out``, their segments copied as
        they are and their removed documents carried (:mod:`neardup.index.edit`). Holds
        each input's write lock while it copies: no add, remove or compact in between.
        Bloom indexes merge into a Bloom index (:func:`neardup.index.bloom.merge`)."""
        from . import bloom

        paths = list(paths)
        kinds = [bloom.is_bloom(p) for p in paths]
        if any(kinds):  # Bloom indexes merge into one (the OR of their filters)
            if not all(kinds):
                raise ValueError(f"{paths[kinds.index(True)]} is a Bloom index and "
                                 f"{paths[kinds.index(False)]} is not: a Bloom index merges "
                                 f"only with Bloom indexes")
            return bloom.merge(paths, out)
        real = [os.path.realpath(p) for p in paths]
        twice = sorted({str(p) for p, r in zip(paths, real) if real.count(r) > 1})
        if twice:
            raise ValueError(f"merge lists an index twice: {', '.join(twice)}")
        with contextlib.ExitStack() as locks:
            for path in paths:
                read_manifest(path)  # not an index: said before a lock file is made
                locks.enter_context(WriteLock(path))
            edit.merge_into([cls(p) for p in paths], out, INDEX_OPTIONS)
        return cls(out)

    # ---- reading about it ----

    def info(self, verify: bool = False) -> dict:
        """Documents (those that can match), removed ones (until compacted), stored rows,
        segments, bytes (per stored document and per kind of file), options, bands and
        P(t) at the tuned threshold; ``verify``: every file's SHA-256 too."""
        per_file: dict[str, int] = {}
        for entry in self.manifest["segments"]:
            for file in entry["files"]:
                kind = file["name"].split(".")[0]
                per_file[kind] = per_file.get(kind, 0) + file["bytes"]
        total = sum(per_file.values())
        info = {
            "path": str(self.path), "format_version": self.manifest["format_version"],
            "version": self.manifest["version"], "documents": self.n,
            "removed": self.removed, "stored": self.stored,
            "set_aside": self.manifest["set_aside"],
            "segments": [{"name": s["name"], "documents": s["documents"], "bytes": s["bytes"]}
                         for s in self.manifest["segments"]],
            "bytes": total,
            "bytes_per_document": round(total / self.stored, 1) if self.stored else None,
            "bytes_per_document_by_kind": {k: round(v / self.stored, 1) if self.stored else None
                                           for k, v in sorted(per_file.items())},
            "threshold": self.threshold, "bands": self.bands, "rows": self.rows,
            "p_at_threshold": round(float(lsh.s_curve(self.threshold, self.bands,
                                                      self.rows)), 6),
            "options": self.options,
        }
        if verify:
            info["corrupt_files"] = store.verify_checksums(self.path, self.manifest)
        return info

    def ids(self, documents: np.ndarray):
        """The ids (Arrow strings) of index documents ``documents`` (ascending)."""
        import pyarrow as pa

        documents = np.asarray(documents, dtype=np.int64)
        segment = np.searchsorted(self.bases, documents, side="right") - 1
        parts = [self.segments[s].ids(documents[segment == s] - self.bases[s])
                 for s in range(len(self.segments)) if (segment == s).any()]
        return pa.concat_arrays(parts) if parts else pa.array([], type=pa.string())


def _append_segment(root: Path, manifest: dict, ids, sets: ShingleSets,
                    signatures: np.ndarray) -> None:
    if not len(ids):
        return
    entry = _new_segment(root, manifest, ids, sets, signatures)
    manifest["segments"].append(entry)
    manifest["documents"] += entry["documents"]


def _new_segment(root: Path, manifest: dict, ids, sets, signatures) -> dict:
    """Write one segment under the next name; its entry (not yet listed)."""
    entry = write_segment(root, _segment_name(manifest),
                          [SegmentPiece.from_ids(ids, sets, signatures)],
                          manifest["bands"], manifest["rows"])
    manifest["next_segment"] += 1
    return entry


def _live_pieces(segments: list[Segment], removed: np.ndarray) -> list[SegmentPiece]:
    """The rows of ``segments`` not in ``removed`` (document numbers), a piece per segment
    with any (all its rows, or the live ones: gathered from the mapped files a chunk at a
    time as they are written, so compaction still holds one band's keys, not the index)."""
    pieces, base = [], 0
    for segment in segments:
        mine = removed[(removed >= base) & (removed < base + segment.n)] - base
        if not mine.size:
            pieces.append(segment.piece())
        elif mine.size < segment.n:
            keep = np.ones(segment.n, dtype=bool)
            keep[mine] = False
            pieces.append(segment.piece(np.flatnonzero(keep)))
        base += segment.n
    return pieces


def _merge(root: Path, manifest: dict, pieces: list[SegmentPiece]) -> dict:
    """One new segment holding the rows of ``pieces`` in order; its entry."""
    entry = write_segment(root, _segment_name(manifest), pieces,
                          manifest["bands"], manifest["rows"])
    manifest["next_segment"] += 1
    return entry


def _segment_name(manifest: dict) -> str:
    return f"seg-{manifest['next_segment']:06d}"


def _comparable(value):
    """A query's option value as the manifest (JSON) holds it: tuples are lists."""
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class SegmentWriter:
    """Writes segments into the index being built at ``root`` (picklable: an engine's
    workers call it where they run, on a file system the builder sees too). Segment k
    is named as the manifest's k-th next name, so workers need not agree on names."""

    root: str
    bands: int
    rows: int
    first: int  # the manifest's next_segment when the writer was made

    @classmethod
    def of(cls, root: str | os.PathLike, manifest: dict) -> SegmentWriter:
        return cls(os.fspath(root), int(manifest["bands"]), int(manifest["rows"]),
                   int(manifest["next_segment"]))

    def __call__(self, k: int, ids, sets: ShingleSets, signatures: np.ndarray) -> dict:
        """Write documents ``ids`` (their sets and signatures, in order) as segment ``k``;
        its manifest entry, listed by :meth:`append`."""
        return write_segment(self.root, f"seg-{self.first + k:06d}",
                             [SegmentPiece.from_ids(ids, sets, signatures)],
                             self.bands, self.rows)

    def append(self, manifest: dict, entries: list[dict], names: int) -> None:
        """List ``entries`` (in document order) in ``manifest``; ``names``: how many
        segment numbers k the workers may have used (the next name is past them)."""
        for entry in entries:
            manifest["segments"].append(entry)
            manifest["documents"] += entry["documents"]
        manifest["next_segment"] = self.first + names
