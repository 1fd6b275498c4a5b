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
from ._core.jit import njit, prange
from ._core.kernels import sized_kernel

BATCH_ROWS = 1 << 20
PAIR_FORMS = ("all", "groups")
DEFAULT_MAX_PAIRS = 100_000_000


@dataclass
class Groups:
    """Identical groups as CSR: group g holds ``members[offsets[g]:offsets[g + 1]]``
    (ascending; the first is the head). ``group_of``: int64[n], -1 for none;
    ``rank``: int64[n], a document's position inside its group."""

    heads: np.ndarray
    offsets: np.ndarray
    members: np.ndarray
    group_of: np.ndarray
    rank: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass
class PairSet:
    """Every document pair, as identical groups plus pairs between distinct sets."""

    head: np.ndarray
    set_i: np.ndarray
    set_j: np.ndarray
    jaccard: np.ndarray
    estimate: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
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
        in_pairs = np.flatnonzero(self.head >= 0)
        heads, group = np.unique(self.head[in_pairs], return_inverse=True)
        order = np.argsort(group, kind="stable")  # documents ascending inside each group
        members = in_pairs[order]
        offsets = np.zeros(heads.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(group, minlength=heads.size), out=offsets[1:])
        group_of = np.full(self.n, -1, dtype=np.int64)
        group_of[in_pairs] = group
        rank = np.full(self.n, -1, dtype=np.int64)
        rank[members] = np.arange(members.size) - offsets[group[order]]
        return Groups(heads, offsets, members, group_of, rank)

    def copy_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(head, document) for every document that repeats an earlier document's set."""
        copies = np.flatnonzero((self.head >= 0) & (self.head != np.arange(self.n)))
        return self.head[copies], copies

    def counts(self) -> dict:
        """Exact document-pair counts, from group sizes (nothing is listed).

        pairs = identical_pairs + near_duplicate_pairs; set_pairs: pairs of distinct
        sets (each stands for g_A · g_B document pairs)."""
        g = self.groups
        sizes = g.sizes
        identical = int((sizes * (sizes - 1) // 2).sum())
        size_of_head = np.zeros(self.n, dtype=np.int64)
        size_of_head[g.heads] = sizes
        between = int((size_of_head[self.set_i] * size_of_head[self.set_j]).sum())
        return {"pairs": identical + between, "identical_pairs": identical,
                "near_duplicate_pairs": between, "set_pairs": int(self.set_i.size)}

    @property
    def total(self) -> int:
        return self.counts()["pairs"]

    def row_counts(self) -> np.ndarray:
        """int64[n]: how many pairs each document has with a later document."""
        if "rows" not in self._cache:
            g, (adj_offsets, adj_group, _) = self.groups, self._adjacency
            out = np.zeros(self.n, dtype=np.int64)
            with jit.interpreted_if(self.interpreted):
                _row_counts(g.group_of, g.rank, g.offsets, g.members, adj_offsets,
                            adj_group, out)
            self._cache["rows"] = out
        return self._cache["rows"]

    @cached_property
    def _adjacency(self):
        """Both directions of every set pair, by group: CSR (offsets, group, pair index)."""
        g = self.groups
        gi = g.group_of[self.set_i]
        gj = g.group_of[self.set_j]
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
        rows = self.row_counts()
        ends = np.cumsum(rows)
        total = int(ends[-1]) if ends.size else 0
        g, (adj_offsets, adj_group, adj_pair) = self.groups, self._adjacency
        lo, done = 0, 0
        while done < total:
            hi = max(int(np.searchsorted(ends, done + max_rows, side="right")), lo + 1)
            starts = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(rows[lo:hi], out=starts[1:])
            size = int(starts[-1])
            doc_b = np.empty(size, dtype=np.int64)
            jaccard = np.empty(size, dtype=np.float64)
            estimate = np.empty(size, dtype=np.float64)
            with jit.interpreted_if(self.interpreted):
                _fill_rows(lo, hi, starts, g.group_of, g.rank, g.offsets, g.members,
                           adj_offsets, adj_group, adj_pair, self.jaccard, self.estimate,
                           doc_b, jaccard, estimate)
            doc_a = np.repeat(np.arange(lo, hi, dtype=np.int64), rows[lo:hi])
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
    exact join, which estimates nothing), doc_a, doc_b."""
    return columns.table({
        "id_a": ids.take(columns.numbers(doc_a)),
        "id_b": ids.take(columns.numbers(doc_b)),
        "jaccard": np.round(jaccard, 6),
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
    docs = g.members[np.repeat(sizes > 1, sizes)]  # members are grouped, heads first
    heads = pair_set.head[docs]
    return columns.table({
        "group": ids.take(columns.numbers(heads)),
        "id": ids.take(columns.numbers(docs)),
        "group_size": sizes[g.group_of[docs]],
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


@sized_kernel(work=lambda group_of, *_: group_of.size)
def _row_counts(group_of, rank, offsets, members, adj_offsets, adj_group, out):
    for a in prange(group_of.size):
        g = group_of[a]
        if g < 0:
            continue
        count = offsets[g + 1] - offsets[g] - rank[a] - 1
        for e in range(adj_offsets[g], adj_offsets[g + 1]):
            h = adj_group[e]
            later, _ = _later_members(members, offsets[h], offsets[h + 1], a)
            count += later
        out[a] = count


@sized_kernel(work=lambda *args: args[12].size)
def _fill_rows(lo, hi, starts, group_of, rank, offsets, members, adj_offsets, adj_group,
               adj_pair, set_jaccard, set_estimate, doc_b, jaccard, estimate):
    for k in prange(hi - lo):
        a = lo + k
        g = group_of[a]
        if g < 0:
            continue
        begin = starts[k]
        pos = begin
        for m in range(offsets[g] + rank[a] + 1, offsets[g + 1]):  # the same set: J = 1
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
