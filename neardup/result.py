"""What a run found: :class:`FindResult`, columns indexed by document, and its tables.

Tables are built from the arrays on demand (pairs streamed in batches); nothing here
computes a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import cluster, lsh, minhash, verify
from ._core import columns
from .config import FindConfig
from .pairs import PAIR_SCHEMA, PairSet, identical_table, pair_table, too_many_pairs
from .shingling import ShingleSets

DOCUMENT_ROWS = 1 << 16  # rows of the documents table built at a time (a few MB)
CANDIDATE_ROWS = 1 << 20  # rows of the candidates table built at a time (~50 MB)
# an explain table's matched_source for a document of the run's own input (against an
# index, the other is neardup.index.query.SOURCE_INDEX)
SOURCE_NEW = "new"


@dataclass
class FindResult:
    """What a run found, as columns indexed by document number (input order).

    ``pair_set`` holds every document pair in compact form (identical groups plus pairs
    of distinct sets, see :mod:`neardup.pairs`); ``counts["pairs"]`` is their exact
    number. ``pair_i``, ``pair_j``, ``jaccard``, ``estimate`` list them all (doc_a < doc_b,
    sorted), built on first use and refused above ``config.max_pairs``;
    :meth:`iter_pairs_tables` streams them in bounded batches instead.
    """

    ids: list[str]  # or a columns.IdColumn (the ids as Arrow bytes, under a memory limit)
    config: FindConfig
    plan: lsh.BandPlan
    shingle_counts: np.ndarray  # int64[n]
    status: np.ndarray  # object[n]: "ok" or "too few shingles"
    pair_set: PairSet
    labels: np.ndarray  # int64[n], smallest document index in the cluster
    representative: np.ndarray  # bool[n]
    candidates: dict = field(default_factory=dict)  # i, j, jaccard, estimate: every candidate
    counts: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    read_report: dict | None = None
    sets: ShingleSets | None = None
    signatures: minhash.Signatures | None = None
    previews: dict | None = None  # document -> its line, shortened (line inputs, for display)
    # with embeddings: the exact cosine of each pair of pair_set (set_i, set_j), NaN where
    # a document has no usable vector (either); pairs tables gain a cosine column
    cosine: np.ndarray | None = None
    _listed: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _id_arrow: pa.Array | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def removable(self) -> np.ndarray:
        """bool[n]: documents that have a near-duplicate kept in their place."""
        return ~self.representative

    def __repr__(self) -> str:  # one line, whatever the size of the arrays
        c = self.counts
        return (f"FindResult({self.n:,} documents, {c.get('pairs', 0):,} pairs "
                f"({c.get('identical_pairs', 0):,} identical), {c.get('clusters', 0):,} "
                f"clusters, method {c.get('method', '?')}, t = {self.config.threshold})")

    def _all_pairs(self) -> tuple:
        if self._listed is None:
            message = too_many_pairs(self.pair_set.counts(), self.config.max_pairs or None)
            if message is not None:
                raise ValueError(message + "; or stream them with result.iter_pairs_tables()")
            self._listed = self.pair_set.arrays()
        return self._listed

    @property
    def pair_i(self) -> np.ndarray:
        """int64: the first document of every document pair (ascending, then pair_j)."""
        return self._all_pairs()[0]

    @property
    def pair_j(self) -> np.ndarray:
        return self._all_pairs()[1]

    @property
    def jaccard(self) -> np.ndarray:
        """float64: exact Jaccard of every document pair (1.0 inside identical groups)."""
        return self._all_pairs()[2]

    @property
    def estimate(self) -> np.ndarray:
        """float64: MinHash estimate of every document pair (NaN from the exact join, null
        in the tables and files; with sketch "simhash" the Jaccard its Hamming distance
        means for sets of equal size)."""
        return self._all_pairs()[3]

    @property
    def id_array(self) -> pa.Array:
        """The ids as one Arrow string array (built once; tables take from it)."""
        if self._id_arrow is None:
            self._id_arrow = columns.id_array(self.ids)
        return self._id_arrow

    def pairs_table(self) -> pa.Table:
        """Every document pair: id_a, id_b, jaccard, estimate, doc_a, doc_b (with
        measure "containment", a containment column after jaccard)."""
        return self._pair_table(*self._all_pairs())

    def iter_pairs_tables(self, max_rows: int | None = None):
        """The rows of :meth:`pairs_table` in batches of about ``max_rows`` (no limit)."""
        for batch in self.pair_set.batches(max_rows or (1 << 20)):
            yield self._pair_table(*batch)

    @property
    def pairs_schema(self) -> pa.Schema:
        """The schema of :meth:`pairs_table` (PAIR_SCHEMA, plus containment if measured)."""
        if self.cosine is not None:
            return PAIR_SCHEMA.insert(3, pa.field("cosine", pa.float64()))
        if self.config.measure == "jaccard":
            return PAIR_SCHEMA
        return PAIR_SCHEMA.insert(3, pa.field(self.config.measure, pa.float64()))

    def set_pairs_table(self) -> pa.Table:
        """The pairs of distinct sets (doc_a, doc_b: their groups' heads), pairs' columns."""
        p = self.pair_set
        return self._pair_table(p.set_i, p.set_j, p.jaccard, p.estimate)

    def _pair_table(self, doc_a, doc_b, jaccard, estimate) -> pa.Table:
        table = pair_table(self.id_array, doc_a, doc_b, jaccard, estimate)
        if self.cosine is not None:  # pairs of distinct documents: each a set pair
            p, n = self.pair_set, max(self.n, 1)
            at = np.searchsorted(p.set_i * n + p.set_j, np.asarray(doc_a) * n + doc_b)
            value = self.cosine[np.minimum(at, max(self.cosine.size - 1, 0))] \
                if self.cosine.size else np.empty(0)
            return table.add_column(3, "cosine", columns.nullable_floats(np.round(value, 6)))
        if self.config.measure == "jaccard":
            return table
        # exact, from J and the set sizes (see verify.containment_from_jaccard)
        value = verify.containment_from_jaccard(jaccard, self.shingle_counts[doc_a],
                                                self.shingle_counts[doc_b])
        return table.add_column(3, self.config.measure, pa.array(np.round(value, 6)))

    def identical_table(self) -> pa.Table:
        """Every document in an identical group of two or more: group, id, group_size,
        doc, head_doc (see :func:`neardup.pairs.identical_table`)."""
        return identical_table(self.id_array, self.pair_set)

    def candidates_table(self) -> pa.Table:
        """Every LSH candidate (distinct sets only) with its exact Jaccard and estimate."""
        return self.candidates_rows(0, len(self.candidates["i"]))

    def iter_candidates_tables(self, max_rows: int | None = None):
        """The rows of :meth:`candidates_table` in batches of ``max_rows`` (default
        CANDIDATE_ROWS): the same rows, without the rounded copies of every candidate's
        numbers held at once (tens of millions of candidates in a cosine run)."""
        total = len(self.candidates["i"])
        step = max_rows or CANDIDATE_ROWS
        for lo in range(0, total, step):
            yield self.candidates_rows(lo, min(total, lo + step))
        if total == 0:
            yield self.candidates_rows(0, 0)

    def candidates_rows(self, lo: int, hi: int) -> pa.Table:
        """The rows of :meth:`candidates_table` for candidates lo to hi - 1."""
        c = {k: v[lo:hi] for k, v in self.candidates.items()}
        measure = "cosine" if "cosine" in c else self.config.measure
        extra = {} if measure == "jaccard" else {measure: columns.nullable_floats(
            c[measure].round(6))}
        verified = c["verified"] if "verified" in c else c[measure] >= self.config.threshold
        return columns.table({"doc_a": c["i"], "doc_b": c["j"],
                              "jaccard": columns.nullable_floats(c["jaccard"].round(6)),
                              **extra,
                              "estimate": columns.nullable_floats(c["estimate"].round(6)),
                              "verified": verified})

    def documents_table(self) -> pa.Table:
        """One row per document: id, shingle count, status, cluster, kept or removable."""
        return self.documents_rows(0, self.n)

    def iter_documents_tables(self, max_rows: int | None = None):
        """The rows of :meth:`documents_table` in batches of ``max_rows`` (default 2^16),
        so that the table is never held whole (the same rows, the same files)."""
        step = max_rows or DOCUMENT_ROWS
        for lo in range(0, self.n, step):
            yield self.documents_rows(lo, min(self.n, lo + step))
        if self.n == 0:
            yield self.documents_rows(0, 0)

    def documents_rows(self, lo: int, hi: int) -> pa.Table:
        """The rows of :meth:`documents_table` for documents lo to hi - 1."""
        ids = self.id_array
        return columns.table({
            "doc": np.arange(lo, hi),
            "id": _contiguous(ids.slice(lo, hi - lo)),
            "shingles": self.shingle_counts[lo:hi],
            "status": self.status[lo:hi],
            "cluster": _contiguous(ids.take(columns.numbers(self.labels[lo:hi]))),
            "representative": self.representative[lo:hi],
        })

    def clusters_table(self, include_singletons: bool = False) -> pa.Table:
        """One row per document in a cluster of two or more, largest clusters first."""
        sizes = np.bincount(self.labels, minlength=self.n)[self.labels]
        members = np.arange(self.n) if include_singletons else np.flatnonzero(sizes > 1)
        order = np.lexsort((members, self.labels[members], -sizes[members]))
        members = members[order]
        ids = self.id_array
        return columns.table({
            "cluster": _contiguous(ids.take(columns.numbers(self.labels[members]))),
            "id": _contiguous(ids.take(columns.numbers(members))),
            "cluster_size": sizes[members],
            "representative": self.representative[members],
            "shingles": self.shingle_counts[members],
            "doc": members,
        })

    def outcomes_table(self, keep: str = "representative") -> pa.Table:
        """One row per document, in input order: what a dedup under ``keep``
        (:data:`neardup.cluster.KEEP_POLICIES`) does with it (see
        :func:`neardup.cluster.dedup_outcomes`): ``doc``, ``id``, ``cluster`` (the id of
        its cluster's first document, as in :meth:`clusters_table`), ``cluster_size``,
        ``kept`` (under "all": its cluster's representative), ``duplicate_of`` (the id
        of its cluster's representative, the document kept in its place; null for a
        representative), ``jaccard`` (their exact Jaccard, rounded to 6 digits as in
        the pairs table; null where the run verified no pair between them) and
        ``written`` (the copy holds it: ``kept``, or every document under "all"); a run on
        embeddings adds ``cosine`` after ``jaccard`` (exact, null where not measured)."""
        p = self.pair_set
        size, kept, duplicate_of, similarity = cluster.dedup_outcomes(
            self.labels, self.representative, p.head, p.set_i, p.set_j, p.jaccard, keep)
        ids = self.id_array
        by_cosine = {}
        if self.cosine is not None:  # a run on embeddings: the pair's cosine too
            by_cosine["cosine"] = pa.array(np.round(cluster.dedup_outcomes(
                self.labels, self.representative, p.head, p.set_i, p.set_j, self.cosine,
                keep)[3], 6), type=pa.float64(), from_pandas=True)
        return pa.table({
            "doc": np.arange(self.n, dtype=np.int64),
            "id": _contiguous(ids),
            "cluster": _contiguous(ids.take(columns.numbers(self.labels))),
            "cluster_size": size,
            "kept": kept,
            "duplicate_of": _contiguous(ids.take(_nullable_numbers(duplicate_of))),
            "jaccard": pa.array(np.round(similarity, 6), type=pa.float64(),
                                from_pandas=True),
            **by_cosine,
            "written": kept | (keep == "all"),
        })

    def explain_table(self, keep: str = "representative") -> pa.Table:
        """One row per document a dedup under ``keep`` leaves out, in input order: its
        ``id``, ``matched_id`` (its cluster's representative, the document kept in its
        place; null for a representative that ``keep="none"`` removes), ``matched_source``
        (:data:`SOURCE_NEW`: a document of the same input), ``jaccard`` (exact, as in
        :meth:`outcomes_table`) and ``cluster``: the columns of a dedup against an index
        (:meth:`neardup.index.query.IndexFindResult.explain_table`), and the cluster."""
        table = self.outcomes_table(keep)
        removed = table.filter(pc.invert(table.column("written")))
        return pa.table({
            "id": removed.column("id"),
            "matched_id": removed.column("duplicate_of"),
            "matched_source": pa.array([SOURCE_NEW] * removed.num_rows, pa.string()),
            "jaccard": removed.column("jaccard"),
            **({"cosine": removed.column("cosine")} if "cosine" in table.column_names
               else {}),
            "cluster": removed.column("cluster"),
        })

    def summary(self) -> dict:
        """Counts, parameters and the band plan; deterministic (no timings)."""
        return {"counts": self.counts, "config": self.config.as_dict(),
                "plan": self.plan.as_dict(), "read": self.read_report}


def _nullable_numbers(values: np.ndarray) -> pa.Array:
    """Row numbers to take, null where ``values`` is -1 (the row taken is then null)."""
    return pa.array(values, type=pa.int64(), mask=values < 0)


def _contiguous(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array (a chunked array of ids taken or sliced, combined)."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
