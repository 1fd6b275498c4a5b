"""New documents against an index: every pair new × indexed and new × new, verified.

Shapes: the new documents' result from :func:`neardup.pipeline.find_sets` (n_new
documents, its distinct sets' signatures (h, K)) → their band keys (h, b) → per
segment and band, ``np.searchsorted`` of the keys in the segment's sorted key column
(memory-mapped) → candidate pairs (new set, indexed document) → exact Jaccard from
the new sets and the indexed CSR rows of the candidates only → one :class:`PairSet`
over n_new + m documents (the new ones, then the m indexed documents that were
candidates, in index order) → clusters.

The same answer as a batch run (tests/index/test_index.py checks it): for any split of a
corpus into OLD and NEW, the pairs of ``find(NEW, against=index(OLD))`` are the pairs of
``find(OLD ∪ NEW, method="lsh")`` (same options and bands) that involve a NEW document,
with the same exact Jaccard and estimate. Both report a pair when the two sets share
a band key and have Jaccard ≥ t (identical sets share every key): keys are a function
of the set alone, so where the pair is computed does not matter. One difference: a
batch bucket larger than ``max_bucket`` is linked as a star (or skipped), while the
index pairs a new document with every indexed document sharing a key; parity holds
whenever no batch bucket exceeds ``max_bucket`` (new × new pairs use the batch code,
buckets included).

Which side a document is from: new documents are 0..n_new-1 (``counts["new_documents"]``),
indexed ones follow, ids as the user gave them (a new id may equal an indexed one).
Provenance is its own column, never part of an id: the pairs table's ``source_a`` and
``source_b``, the documents and clusters tables' ``source``, each :data:`SOURCE_NEW` or
:data:`SOURCE_INDEX`. A pair's ``doc_a`` is always a new document; ``doc_b`` is indexed
exactly when ``doc_b >= n_new``.

Dedup: a new document is removed only for a document that stays: one it has a verified
pair with (J ≥ t) that is indexed or a new document kept before it
(:func:`neardup.cluster.anchored_cover`: the indexed documents are fixed centres, the
new ones visited with the run's choice among them first, then in input order; for
``representative="first"`` input order). Components would chain: a new b close only to
a new a that an indexed document removes would go too. ``explain_table`` lists, per
removed document, the document it is removed for, its source and their Jaccard.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import cluster, lsh, verify
from .._core import counts as counting
from ..lsh import sorted_unique
from ..minhash import Signatures
from ..pairs import PairSet
from ..result import SOURCE_NEW, FindResult
from ..shingling import ShingleSets

SOURCE_INDEX = "index"  # where a document of the result comes from (or SOURCE_NEW)


@dataclass(repr=False)  # FindResult's one-line repr
class IndexFindResult(FindResult):
    """A :class:`~neardup.result.FindResult` over the new documents (first
    ``new_documents``) and the indexed documents they were candidates of."""

    new_documents: int = 0
    matched: np.ndarray | None = None  # int64[n_new]: the document each is removed for, -1
    matched_jaccard: np.ndarray | None = None  # float64[n_new]: its Jaccard (NaN: kept)

    @property
    def kept_new(self) -> np.ndarray:
        """bool[n_new]: the new documents a dedup against the index keeps."""
        return self.matched < 0

    def explain_table(self, keep: str = "representative") -> pa.Table:
        """One row per new document a dedup removes, in input order: its ``id``, the
        ``matched_id`` of the document it is removed for (indexed, or a new one kept
        before it), that one's ``matched_source`` (:data:`SOURCE_INDEX` or
        :data:`SOURCE_NEW`) and their exact ``jaccard`` (≥ the threshold when verified;
        rounded to 6 digits as in the pairs table, so the two join). Against an index
        the kept documents are the anchored cover's: ``keep`` is "representative"."""
        if keep != "representative":
            raise ValueError(f"keep={keep!r}: a dedup against an index keeps what "
                             f"duplicates nothing that stays (keep='representative')")
        removed = np.flatnonzero(self.matched >= 0)
        matched = self.matched[removed]
        ids = self.id_array
        return pa.table({"id": ids.take(pa.array(removed)),
                         "matched_id": ids.take(pa.array(matched)),
                         "matched_source": self.sources(matched),
                         "jaccard": pa.array(np.round(self.matched_jaccard[removed], 6),
                                             type=pa.float64())})

    def sources(self, docs) -> pa.Array:
        """Where each of ``docs`` comes from: :data:`SOURCE_NEW` or :data:`SOURCE_INDEX`."""
        indexed = np.asarray(docs) >= self.new_documents
        return pa.array(np.where(indexed, SOURCE_INDEX, SOURCE_NEW), type=pa.string())

    @property
    def pairs_schema(self) -> pa.Schema:
        schema = super().pairs_schema
        return schema.append(pa.field("source_a", pa.string())).append(
            pa.field("source_b", pa.string()))

    def _pair_table(self, doc_a, doc_b, jaccard, estimate) -> pa.Table:
        table = super()._pair_table(doc_a, doc_b, jaccard, estimate)
        return table.append_column("source_a", self.sources(doc_a)).append_column(
            "source_b", self.sources(doc_b))

    def documents_rows(self, lo: int, hi: int) -> pa.Table:
        table = super().documents_rows(lo, hi)
        return table.append_column("source", self.sources(np.arange(lo, hi)))

    def clusters_table(self, include_singletons: bool = False) -> pa.Table:
        table = super().clusters_table(include_singletons)
        return table.append_column("source", self.sources(table.column("doc")))


def segment_candidates(keys: np.ndarray, segment) -> tuple[np.ndarray, np.ndarray]:
    """(query row, segment document) of every pair sharing a band key, each pair once,
    sorted. ``keys``: (q, b) uint64; the segment's ``band_keys``: (b, n) uint64, each
    row sorted, and ``band_docs``: (b, n), the document of each sorted key. Reads the
    key columns by binary search (the queries sorted, so neighbouring searches touch
    neighbouring pages) and only the ``band_docs`` entries of matching keys (checked
    to be documents of the segment: :meth:`~neardup.index.store.Segment.documents_of`)."""
    band_keys, n_segment = segment.band_keys, segment.n
    codes = []
    for band in range(keys.shape[1]):
        query = keys[:, band]
        order = np.argsort(query, kind="stable")
        sorted_query = query[order]
        column = band_keys[band]
        lo = np.searchsorted(column, sorted_query, side="left")
        hi = np.searchsorted(column, sorted_query, side="right")
        counts = hi - lo
        total = int(counts.sum())
        if total == 0:
            continue
        rows = np.repeat(order.astype(np.int64), counts)
        starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
        positions = starts + np.arange(total, dtype=np.int64)
        documents = segment.documents_of(band, positions)
        codes.append(sorted_unique(rows * n_segment + documents))
    if not codes:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy()
    unique = sorted_unique(np.concatenate(codes))
    return unique // n_segment, unique % n_segment


def against(index, new: FindResult) -> IndexFindResult:
    """The pairs of ``new`` (a local-engine result kept with ``keep_arrays=True``, run
    with the index's options) and with the index ``index``; see the module docstring."""
    started = time.perf_counter()
    config = new.config
    n_new = new.n
    heads = np.flatnonzero(new.pair_set.head == np.arange(n_new))  # rows of new.signatures
    keys = lsh.band_keys(new.signatures.matrix, index.bands, index.rows)
    rows_parts, old_parts = [], []
    for s, segment in enumerate(index.segments):
        rows, documents = segment_candidates(keys, segment)
        rows_parts.append(rows)
        old_parts.append(documents + index.bases[s])
    head_row = np.concatenate(rows_parts) if rows_parts else np.empty(0, dtype=np.int64)
    old = np.concatenate(old_parts) if old_parts else np.empty(0, dtype=np.int64)
    live = ~index.is_removed(old)  # a removed document is no candidate (Index.remove)
    head_row, old = head_row[live], old[live]

    listed = sorted_unique(old)  # the indexed documents of the result, in index order
    m = listed.size
    position = np.searchsorted(listed, old)
    old_sets, old_signatures, old_sizes = _gather(index, listed)
    combined = ShingleSets.concat([new.sets, old_sets]) if m else new.sets
    doc_i = heads[head_row]
    doc_j = n_new + position
    jaccard = verify.exact_jaccard(combined, doc_i, doc_j)
    matrix = np.concatenate([new.signatures.matrix, old_signatures]) if m \
        else new.signatures.matrix
    estimate = Signatures(matrix, config.family, config.num_perm, config.seed,
                          new.signatures.bits).estimate(head_row, heads.size + position)
    candidates = {k: np.concatenate([new.candidates[k], v]) for k, v in
                  (("i", doc_i), ("j", doc_j), ("jaccard", jaccard), ("estimate", estimate))}
    if config.verify:
        real = jaccard >= config.threshold
        doc_i, doc_j, jaccard, estimate = doc_i[real], doc_j[real], jaccard[real], \
            estimate[real]

    p = new.pair_set
    n = n_new + m
    set_i = np.concatenate([p.set_i, doc_i])
    set_j = np.concatenate([p.set_j, doc_j])
    order = np.lexsort((set_j, set_i))
    head = np.concatenate([p.head, n_new + np.arange(m, dtype=np.int64)])
    pair_set = PairSet(head, set_i[order], set_j[order],
                       np.concatenate([p.jaccard, jaccard])[order],
                       np.concatenate([p.estimate, estimate])[order])
    copies_of, copies = pair_set.copy_edges()
    labels = cluster.cluster_labels(n, np.concatenate([set_i, copies_of]),
                                    np.concatenate([set_j, copies]))
    with_index = np.zeros(n, dtype=bool)
    with_index[labels[n_new:]] = True
    # the run's choice among new documents first, then input order (for "first": input order)
    visit = np.concatenate([np.flatnonzero(new.representative),
                            np.flatnonzero(~new.representative)])
    rank = np.empty(n_new, dtype=np.int64)
    rank[visit] = np.arange(n_new, dtype=np.int64)
    matched, matched_jaccard = cluster.anchored_cover(pair_set.head, pair_set.set_i,
                                                      pair_set.set_j, pair_set.jaccard,
                                                      n_new, rank)
    representative = np.concatenate([matched < 0, np.ones(m, dtype=bool)])

    # a new document and an indexed one with equal sets are a pair of identical sets, as
    # a batch run (which groups them) counts it: identical, not a pair of distinct sets
    identical, identical_set_pairs = _identical_with_index(pair_set, doc_i, jaccard)
    pairs = pair_set.counts()
    in_pairs = sorted_unique(doc_j[doc_j >= n_new])
    counts = counting.against_index(
        new.counts,
        pairs=counting.pair_counts(pairs["identical_pairs"] + identical,
                                     pairs["near_duplicate_pairs"] - identical,
                                     pairs["set_pairs"] - identical_set_pairs),
        candidates=new.counts["candidates"] + old.size,
        **counting.cluster_counts(np.bincount(labels, minlength=n)),
        removable=n_new - representative[:n_new].sum(), new_documents=n_new,
        index=counting.index_section(
            path=index.path, documents=index.n, segments=len(index.segments),
            candidates=old.size, documents_listed=m, documents_in_pairs=in_pairs.size,
            pairs_with_index=_pairs_with_index(pair_set, n_new),
            identical_pairs_with_index=identical,
            new_in_clusters_with_index=with_index[labels[:n_new]].sum()))
    old_ids = index.ids(listed).to_pylist()
    indexed = np.empty(m, dtype=object)
    indexed.fill("indexed")  # one str for all (np.full makes one a row)
    status = np.concatenate([new.status, indexed])
    return IndexFindResult(
        ids=list(new.ids) + old_ids, config=config,
        plan=new.plan, shingle_counts=np.concatenate([new.shingle_counts, old_sizes]),
        status=status, pair_set=pair_set, labels=labels, representative=representative,
        candidates=candidates, counts=counts,
        seconds={**new.seconds, "against index": time.perf_counter() - started},
        read_report=new.read_report, previews=new.previews, new_documents=n_new,
        matched=matched, matched_jaccard=matched_jaccard)


def _gather(index, documents: np.ndarray):
    """(sets, signature rows, set sizes) of index documents ``documents`` (ascending),
    read from each segment's memory-mapped CSR and signature rows."""
    segment = np.searchsorted(index.bases, documents, side="right") - 1
    sets, signatures = [], []
    for s, seg in enumerate(index.segments):
        local = documents[segment == s] - index.bases[s]
        if local.size:
            sets.append(seg.sets_of(local))
            signatures.append(np.asarray(seg.signatures[local]))
    if not sets:
        return None, None, np.empty(0, dtype=np.int64)
    gathered = ShingleSets.concat(sets)
    return gathered, np.concatenate(signatures), gathered.sizes


def _identical_with_index(pair_set: PairSet, doc_i, jaccard) -> tuple[int, int]:
    """(document pairs, set pairs) new × indexed whose sets are equal (J = 1 exactly): each
    set pair stands for (copies of the new set) × 1 such document pairs."""
    same = jaccard == 1.0
    if not same.any():
        return 0, 0
    sizes = pair_set.groups.sizes_of(doc_i[same])
    return int(sizes.sum()), int(same.sum())


def _pairs_with_index(pair_set: PairSet, n_new: int) -> int:
    """Document pairs whose second document is an indexed one."""
    with_old = pair_set.set_j >= n_new
    return int(pair_set.groups.sizes_of(pair_set.set_i[with_old]).sum())


def add_kept(index, new: FindResult, result: IndexFindResult) -> dict:
    """Add to ``index`` the new documents a dedup keeps that can pair (the caller holds
    ``index.writing()``): their sets and signatures, as computed for the query."""
    head = new.pair_set.head
    rows = np.flatnonzero(result.kept_new & (head >= 0))
    heads = np.flatnonzero(head == np.arange(new.n))
    signatures = new.signatures.matrix[np.searchsorted(heads, head[rows])]
    ids = np.asarray(new.ids, dtype=object)[rows]
    return index.add_documents(ids, new.sets.subset(rows), signatures, locked=True)


class IndexProbe:
    """The segments an open index listed, readable in another process: what a Spark
    executor needs to query the index (:mod:`neardup.spark.against`), without the engine
    knowing the index's format.

    Pickled as the index's path and the manifest the opening process read (so every
    task sees those segments, immutable, whatever is added meanwhile); mapped again where
    it is unpickled, with the layout checked (the opening process checked the hashes,
    :class:`~neardup.index.Index`). Reads are the local query's: :meth:`candidates` is
    :func:`segment_candidates` over the segments, :meth:`rows` the CSR rows, signatures
    and ids of the candidates only. The folder must be at the same path on every machine
    that runs a task (as a Spark results folder must).
    """

    def __init__(self, path, manifest: dict):
        self.path, self.manifest = str(path), manifest
        self._segments = None

    @classmethod
    def of(cls, index) -> IndexProbe:
        return cls(index.path, index.manifest)

    def __getstate__(self) -> dict:
        return {"path": self.path, "manifest": self.manifest}  # never the mapped arrays

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["manifest"])

    @property
    def documents(self) -> int:
        return int(self.manifest["documents"])

    @property
    def segments(self) -> list:
        if self._segments is None:
            from .store import Segment

            # the opening process hashed these files: here the layout is checked only
            self._segments = [Segment.open(self.path, self.manifest, entry, written=True)
                              for entry in self.manifest["segments"]]
            sizes = np.array([s.n for s in self._segments], dtype=np.int64)
            self.bases = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return self._segments

    def candidates(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, index document, segment) of every pair sharing a band key of
        ``keys`` ((q, b) uint64, the index's bands); segment after segment, each sorted by
        (row, document), as :func:`against` lists them."""
        parts = [(rows, documents + self.bases[s], np.full(rows.size, s, dtype=np.int64))
                 for s, (rows, documents) in enumerate(segment_candidates(keys, segment)
                                                       for segment in self.segments)]
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.copy(), empty.copy()
        return tuple(np.concatenate(column) for column in zip(*parts))

    def rows(self, documents: np.ndarray) -> tuple[ShingleSets, np.ndarray, pa.Array]:
        """(sets, signature rows, ids) of index documents ``documents`` (ascending, at
        least one)."""
        self.segments  # noqa: B018 - maps them and sets the bases
        sets, signatures, _ = _gather(self, documents)
        segment = np.searchsorted(self.bases, documents, side="right") - 1
        ids = [self._segments[s].ids(documents[segment == s] - self.bases[s])
               for s in range(len(self._segments)) if (segment == s).any()]
        return sets, signatures, pa.concat_arrays(ids)
