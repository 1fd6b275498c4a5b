"""Document pairs: every pair of documents with J ≥ t, held compact and listed on demand.

The pipeline groups identical shingle sets before LSH (1,600 copies of one job ad are
one entry, not 1.3 million pair checks) and finds pairs between *distinct* sets. The
document pairs follow from those exactly:

- two documents of one identical group are a pair with J = 1: a group of g documents
  holds g(g - 1)/2 of them;
- a pair of distinct sets (A, B) with its exact J(A, B) stands for every document of
  A's group paired with every document of B's group, at the same J and estimate:
  g_A · g_B pairs.

:class:`PairSet` keeps that compact form, shapes:

    head      int64[n]  each document's group head (the first document with its set),
                        -1 for a document in no pair (set aside)
    set_i, set_j int64[P]  head documents of each pair of distinct sets, set_i < set_j
    jaccard, estimate float64[P]

Its :class:`Groups` hold only the groups that make pairs: those of two or more documents
and those whose head is in a set pair (D documents in all, D ≤ n; a document alone with
its set and in no set pair has no pair and is left out), so the listing's state grows
with the documents that pair, not with the corpus.

Counts come from the group sizes, so they are exact even when the pairs are never
listed. The listing is every document pair (doc_a < doc_b) in (doc_a, doc_b) order,
produced a range of doc_a at a time in batches of about ``max_rows`` rows by numba
kernels (no Python loop over pairs): memory is bounded by a batch, not by the count.
:func:`expand` rebuilds the listing from the compact tables ``--pairs groups`` writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from ._core import columns, jit
from ._core import counts as counting
from ._core.jit import njit, prange
from ._core.kernels import sized_kernel

BATCH_ROWS = 1 << 20
SCAN_BLOCK = 1 << 16  # documents looked at a time for the copies
PAIR_FORMS = ("all", "groups")
DEFAULT_MAX_PAIRS = 100_000_000


@dataclass
class Groups:
    """The groups that make pairs (two or more documents, or a head in a set pair) as CSR:
    group g holds ``members[offsets[g]:offsets[g + 1]]`` (ascending; the first is its
    head, ``heads[g]``; heads ascending). ``documents``: int64[D], every member,
    ascending; ``group_of`` and ``rank``: int64[D], each one's group and its position
    inside it. A document in no such group has no pair."""

    heads: np.ndarray
    offsets: np.ndarray
    members: np.ndarray
    documents: np.ndarray
    group_of: np.ndarray
    rank: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sizes_of(self, heads: np.ndarray) -> np.ndarray:
        """The size of each given head's group (heads held: of set pairs, or of copies)."""
        return self.sizes[np.searchsorted(self.heads, heads)]


@dataclass
class PairSet:
    """Every document pair, as identical groups plus pairs between distinct sets."""

    head: np.ndarray
    set_i: np.ndarray
    set_j: np.ndarray
    jaccard: np.ndarray
    estimate: np.ndarray
    # made from an input small enough to run the kernels' Python source: its batches too
    interpreted: bool = field(default_factory=jit.is_interpreted, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.head = np.ascontiguousarray(self.head, dtype=np.int64)
        self.set_i = np.ascontiguousarray(self.set_i, dtype=np.int64)
        self.set_j = np.ascontiguousarray(self.set_j, dtype=np.int64)
        self.jaccard = np.ascontiguousarray(self.jaccard, dtype=np.float64)
        self.estimate = np.ascontiguousarray(self.estimate, dtype=np.float64)
        if not (self.set_i.size == self.set_j.size == self.jaccard.size
                == self.estimate.size):
            raise ValueError("set_i, set_j, jaccard and estimate must have the same length")
        if self.set_i.size and (np.any(self.set_i >= self.set_j)
                                or np.any(self.head[self.set_i] != self.set_i)
                                or np.any(self.head[self.set_j] != self.set_j)):
            raise ValueError("pairs between distinct sets must join two group heads, i < j")

    @classmethod
    def from_copies(cls, n: int, usable: np.ndarray, copies_of: np.ndarray,
                    copies: np.ndarray, set_i, set_j, jaccard, estimate) -> PairSet:
        """From the pipeline's arrays: the usable documents, each copy's head, the set pairs."""
        head = np.full(n, -1, dtype=np.int64)
        head[usable] = usable
        head[copies] = copies_of
        return cls(head, set_i, set_j, jaccard, estimate)

    @property
    def n(self) -> int:
        return self.head.size

    @cached_property
    def groups(self) -> Groups:
        copies = self._copies()
        heads = np.union1d(self.head[copies], np.concatenate([self.set_i, self.set_j]))
        documents = np.union1d(heads, copies)
        del copies
        group_of = np.searchsorted(heads, self.head[documents])
        order = np.argsort(group_of, kind="stable")  # documents ascending inside each group
        members = documents[order]
        offsets = np.zeros(heads.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(group_of, minlength=heads.size), out=offsets[1:])
        rank = np.empty(documents.size, dtype=np.int64)
        rank[order] = np.arange(documents.size) - offsets[group_of[order]]
        return Groups(heads, offsets, members, documents, group_of, rank)

    def _copies(self) -> np.ndarray:
        """The documents that repeat an earlier document's set, ascending; found a block
        of documents at a time, so that no temporary of n entries is made."""
        found = []
        for lo in range(0, self.n, SCAN_BLOCK):
            head = self.head[lo:lo + SCAN_BLOCK]
            found.append(lo + np.flatnonzero(
                (head >= 0) & (head != np.arange(lo, lo + head.size))))
        return np.concatenate(found) if found else np.empty(0, dtype=np.int64)

    def copy_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(head, document) for every document that repeats an earlier document's set."""
        copies = self._copies()
        return self.head[copies], copies

    def counts(self) -> dict:
        """Exact document-pair counts, from group sizes (nothing is listed).

        pairs = identical_pairs + near_duplicate_pairs; set_pairs: pairs of distinct
        sets (each stands for g_A · g_B document pairs)."""
        g = self.groups
        sizes = g.sizes
        identical = int((sizes * (sizes - 1) // 2).sum())
        between = int((g.sizes_of(self.set_i) * g.sizes_of(self.set_j)).sum())
        return counting.pair_counts(identical, between, self.set_i.size)

    @property
    def total(self) -> int:
        return self.counts()["pairs"]

    def row_counts(self) -> np.ndarray:
        """int64[n]: how many pairs each document has with a later document."""
        out = np.zeros(self.n, dtype=np.int64)
        out[self.groups.documents] = self._rows
        return out

    @cached_property
    def _rows(self) -> np.ndarray:
        """int64[D]: the row counts of ``groups.documents`` (every other document has none)."""
        g, (adj_offsets, adj_group, _) = self.groups, self._adjacency
        out = np.zeros(g.documents.size, dtype=np.int64)
        with jit.interpreted_if(self.interpreted):
            _row_counts(g.documents, g.group_of, g.rank, g.offsets, g.members, adj_offsets,
                        adj_group, out)
        return out

    @cached_property
    def _adjacency(self):
        """Both directions of every set pair, by group: CSR (offsets, group, pair index)."""
        g = self.groups
        gi = np.searchsorted(g.heads, self.set_i)
        gj = np.searchsorted(g.heads, self.set_j)
        source = np.concatenate([gi, gj])
        target = np.concatenate([gj, gi])
        pair = np.concatenate([np.arange(gi.size), np.arange(gi.size)])
        order = np.argsort(source, kind="stable")
        offsets = np.zeros(g.heads.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(source, minlength=g.heads.size), out=offsets[1:])
        return offsets, target[order], pair[order]

    def batches(self, max_rows: int = BATCH_ROWS
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """(doc_a, doc_b, jaccard, estimate) in (doc_a, doc_b) order, doc_a < doc_b.

        A batch holds the pairs of a range of doc_a: at most ``max_rows`` rows unless
        one document alone has more pairs (then that document's pairs)."""
        if max_rows < 1:
            raise ValueError(f"max_rows must be positive, got {max_rows!r}")
        g, rows = self.groups, self._rows
        ends = np.cumsum(rows)  # over groups.documents: the rows before each one's end
        total = int(ends[-1]) if ends.size else 0
        adj_offsets, adj_group, adj_pair = self._adjacency
        # a range [lo, hi) of doc_a closes before the first document whose rows would pass
        # max_rows (taking at least lo); the documents that are not held have no rows
        lo, done = 0, 0
        while done < total:
            first = int(np.searchsorted(ends, done + max_rows, side="right"))
            hi = max(int(g.documents[first]) if first < ends.size else self.n, lo + 1)
            k_lo, k_hi = np.searchsorted(g.documents, [lo, hi])
            starts = np.zeros(k_hi - k_lo + 1, dtype=np.int64)
            np.cumsum(rows[k_lo:k_hi], out=starts[1:])
            size = int(starts[-1])
            doc_b = np.empty(size, dtype=np.int64)
            jaccard = np.empty(size, dtype=np.float64)
            estimate = np.empty(size, dtype=np.float64)
            with jit.interpreted_if(self.interpreted):
                _fill_rows(k_lo, k_hi, starts, g.documents, g.group_of, g.rank, g.offsets,
                           g.members, adj_offsets, adj_group, adj_pair, self.jaccard,
                           self.estimate, doc_b, jaccard, estimate)
            doc_a = np.repeat(g.documents[k_lo:k_hi], rows[k_lo:k_hi])
            yield doc_a, doc_b, jaccard, estimate
            done += size
            lo = hi

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every pair at once (doc_a, doc_b, jaccard, estimate): 32 bytes a pair."""
        parts = list(self.batches(max(self.total, 1)))
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.copy(), np.empty(0), np.empty(0)
        return tuple(np.concatenate(column) for column in zip(*parts))


def too_many_pairs(counts: dict, max_pairs: int | None) -> str | None:
    """The message to stop on when listing every pair would pass ``max_pairs``, else None."""
    if max_pairs is None or counts["pairs"] <= max_pairs:
        return None
    return (f"{counts['pairs']:,} document pairs ({counts['identical_pairs']:,} inside "
            f"identical groups, {counts['near_duplicate_pairs']:,} between different sets) "
            f"exceed --max-pairs {max_pairs:,} (library: max_pairs). Nothing was written. "
            f"Write the compact form with --pairs groups (pairs='groups'): "
            f"{counts['set_pairs']:,} pairs of distinct sets in set_pairs and every copy's "
            f"group in identical, from which neardup.pairs.expand lists them all; or raise "
            f"--max-pairs (0 for no limit)")


def pair_table(ids: pa.Array, doc_a, doc_b, jaccard, estimate) -> pa.Table:
    """The pairs table's columns: id_a, id_b, jaccard, estimate (6 decimals; null from the
    exact join, which estimates nothing; jaccard null where a run on embeddings did not
    compute it), doc_a, doc_b."""
    return columns.table({
        "id_a": ids.take(columns.numbers(doc_a)),
        "id_b": ids.take(columns.numbers(doc_b)),
        "jaccard": columns.nullable_floats(np.round(jaccard, 6)),
        "estimate": columns.nullable_floats(np.round(estimate, 6)),  # NaN: not estimated
        "doc_a": doc_a,
        "doc_b": doc_b,
    })


PAIR_SCHEMA = pa.schema([("id_a", pa.string()), ("id_b", pa.string()),
                         ("jaccard", pa.float64()), ("estimate", pa.float64()),
                         ("doc_a", pa.int64()), ("doc_b", pa.int64())])


def identical_table(ids: pa.Array, pair_set: PairSet) -> pa.Table:
    """One row per document in an identical group of two or more: group (its head's id),
    id, group_size, doc, head_doc; groups in head order, documents ascending."""
    g = pair_set.groups
    sizes = g.sizes
    copied = np.repeat(sizes > 1, sizes)  # members are grouped, heads first
    docs = g.members[copied]
    heads = pair_set.head[docs]
    return columns.table({
        "group": ids.take(columns.numbers(heads)),
        "id": ids.take(columns.numbers(docs)),
        "group_size": np.repeat(sizes, sizes)[copied],
        "doc": docs,
        "head_doc": heads,
    })


def expand(set_pairs: pa.Table, identical: pa.Table, max_rows: int = BATCH_ROWS) -> pa.Table:
    """Every document pair from the compact form (``set_pairs`` and ``identical`` tables,
    as ``--pairs groups`` writes them): the table ``--pairs all`` writes, row for row."""
    doc_a = _ints(set_pairs, "doc_a")
    doc_b = _ints(set_pairs, "doc_b")
    docs = _ints(identical, "doc")
    heads = _ints(identical, "head_doc")
    n = int(max([*(x.max() + 1 for x in (doc_a, doc_b, docs) if x.size)], default=0))
    head = np.full(n, -1, dtype=np.int64)
    head[doc_a] = doc_a
    head[doc_b] = doc_b
    head[docs] = heads
    ids = np.full(n, "", dtype=object)
    for table, doc_column, id_column in ((set_pairs, doc_a, "id_a"), (set_pairs, doc_b, "id_b"),
                                         (identical, docs, "id")):
        ids[doc_column] = table.column(id_column).to_numpy(zero_copy_only=False)
    pair_set = PairSet(head, doc_a, doc_b,
                       set_pairs.column("jaccard").to_numpy(zero_copy_only=False),
                       set_pairs.column("estimate").to_numpy(zero_copy_only=False))
    id_array = columns.strings(ids.tolist())
    tables = [pair_table(id_array, *batch) for batch in pair_set.batches(max_rows)]
    return pa.concat_tables(tables) if tables else PAIR_SCHEMA.empty_table()


def _ints(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.int64)


@njit(cache=True)
def _later_members(members, lo, hi, a):
    """How many of the ascending ``members[lo:hi]`` are > a, and where they start."""
    if hi == lo or members[hi - 1] <= a:
        return 0, hi
    if members[lo] > a:
        return hi - lo, lo
    # binary search for the first member > a (np.searchsorted here triples the compile)
    left, right = lo, hi - 1  # members[left] <= a < members[right]
    while right - left > 1:
        middle = (left + right) // 2
        if members[middle] <= a:
            left = middle
        else:
            right = middle
    return hi - right, right


@sized_kernel(work=lambda documents, *_: documents.size)
def _row_counts(documents, group_of, rank, offsets, members, adj_offsets, adj_group, out):
    for k in prange(documents.size):
        a = documents[k]
        g = group_of[k]
        count = offsets[g + 1] - offsets[g] - rank[k] - 1
        for e in range(adj_offsets[g], adj_offsets[g + 1]):
            h = adj_group[e]
            later, _ = _later_members(members, offsets[h], offsets[h + 1], a)
            count += later
        out[k] = count


@sized_kernel(work=lambda *args: args[13].size)
def _fill_rows(lo, hi, starts, documents, group_of, rank, offsets, members, adj_offsets,
               adj_group, adj_pair, set_jaccard, set_estimate, doc_b, jaccard, estimate):
    """The rows of ``documents[lo:hi]``, each from ``starts[k - lo]`` on."""
    for k in prange(hi - lo):
        a = documents[lo + k]
        g = group_of[lo + k]
        begin = starts[k]
        pos = begin
        for m in range(offsets[g] + rank[lo + k] + 1, offsets[g + 1]):  # the same set: J = 1
            doc_b[pos] = members[m]
            jaccard[pos] = 1.0
            estimate[pos] = 1.0
            pos += 1
        if adj_offsets[g + 1] == adj_offsets[g]:
            continue  # already ascending
        runs = np.empty(adj_offsets[g + 1] - adj_offsets[g] + 2, dtype=np.int64)
        runs[0] = begin
        runs[1] = pos
        n_runs = 2
        for e in range(adj_offsets[g], adj_offsets[g + 1]):
            h = adj_group[e]
            p = adj_pair[e]
            later, first = _later_members(members, offsets[h], offsets[h + 1], a)
            for m in range(first, first + later):
                doc_b[pos] = members[m]
                jaccard[pos] = set_jaccard[p]
                estimate[pos] = set_estimate[p]
                pos += 1
            if later:
                runs[n_runs] = pos
                n_runs += 1
        _merge_runs(doc_b, jaccard, estimate, runs[:n_runs])


@njit(cache=True)
def _merge_runs(keys, first, second, runs):
    """Sort ``keys[runs[0]:runs[-1]]`` (and the two value arrays with it), given that it is
    ascending between consecutive ``runs`` bounds: merges of neighbouring runs, O(L log k)
    instead of a sort of the whole row (a copy group of 10,000 is one long run)."""
    count = runs.size - 1
    if count < 2:
        return
    lo, hi = runs[0], runs[-1]
    src_k, src_a, src_b = keys[lo:hi].copy(), first[lo:hi].copy(), second[lo:hi].copy()
    dst_k, dst_a, dst_b = np.empty_like(src_k), np.empty_like(src_a), np.empty_like(src_b)
    bounds = runs - lo
    while count > 1:
        merged = np.empty(count // 2 + count % 2 + 1, dtype=np.int64)
        merged[0] = 0
        out = 1
        for r in range(0, count - 1, 2):
            i, i_end, j, j_end = bounds[r], bounds[r + 1], bounds[r + 1], bounds[r + 2]
            w = i
            while i < i_end and j < j_end:
                if src_k[i] <= src_k[j]:
                    dst_k[w], dst_a[w], dst_b[w] = src_k[i], src_a[i], src_b[i]
                    i += 1
                else:
                    dst_k[w], dst_a[w], dst_b[w] = src_k[j], src_a[j], src_b[j]
                    j += 1
                w += 1
            for x in range(i, i_end):
                dst_k[w], dst_a[w], dst_b[w] = src_k[x], src_a[x], src_b[x]
                w += 1
            for x in range(j, j_end):
                dst_k[w], dst_a[w], dst_b[w] = src_k[x], src_a[x], src_b[x]
                w += 1
            merged[out] = bounds[r + 2]
            out += 1
        if count % 2:  # the last run has no partner this round
            for x in range(bounds[count - 1], bounds[count]):
                dst_k[x], dst_a[x], dst_b[x] = src_k[x], src_a[x], src_b[x]
            merged[out] = bounds[count]
            out += 1
        bounds = merged[:out]
        count = out - 1
        src_k, dst_k = dst_k, src_k
        src_a, dst_a = dst_a, src_a
        src_b, dst_b = dst_b, src_b
    keys[lo:hi] = src_k
    first[lo:hi] = src_a
    second[lo:hi] = src_b
