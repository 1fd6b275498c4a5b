"""Exact all-pairs Jaccard join: every pair of sets with J(A, B) >= t, and nothing else.

No estimate is involved: the filters below only skip pairs that provably cannot
reach t, and every surviving candidate is verified by an exact intersection. The
result is the same pair set, with the same float64 Jaccard values
``|A ∩ B| / |A ∪ B|``, as comparing all n(n-1)/2 pairs. Empty sets have J = 0
with everything (the convention of ``neardup.verify``), so they never pair.

The filters, for a threshold t and sets x, y with |y| <= |x|:

* Global order. Elements are ranked rarest first (ties by value) and every set
  is written in rank order, so prefixes hold the rare elements and the inverted
  lists over them stay short.
* Size filter. J <= |y| / |x|, so y is a candidate of x only if |y| >= t·|x|.
* Prefix filter (Chaudhuri, Ganti, Kaushik 2006). J >= t needs an overlap of at
  least ⌈t·|x|⌉, so the first |x| − ⌈t·|x|⌉ + 1 elements of x (its probing
  prefix) hold a common element; otherwise the common ones would not fit into
  the remaining ⌈t·|x|⌉ − 1 places. Sets are processed by increasing size, so a
  set indexed now is only ever probed by larger ones; then the overlap is at
  least 2t/(1+t)·|y| and the shorter indexing prefix |y| − ⌈2t/(1+t)·|y|⌉ + 1
  is enough (Bayardo, Ma, Srikant 2007, "Scaling up all pairs similarity search").
* Position filter (Xiao, Wang, Lin, Yu 2008, PPJoin). J >= t is the same as an
  overlap of at least α = ⌈t/(1+t)·(|x| + |y|)⌉. When x and y meet at position
  i of x and j of y, with ``seen`` common elements found before, the overlap is
  at most seen + 1 + min(|x| − i − 1, |y| − j − 1); below α the pair is dropped.
* Verification. The common elements up to the last prefix match are already
  counted (every smaller-ranked common element lies in both prefixes), so only
  the suffixes after it are merged, stopping once α is out of reach.

Every ceiling is taken of ``value - ROUNDING_SLACK``: where float arithmetic
lands a hair above an integer (0.7 · 10 = 7.000000000000001) the bound drops to
that integer instead of the next one. A looser bound only lets one more
candidate through; a tighter one would lose pairs.

Containment (``measure="containment"``): C(x, y) = |x ∩ y| / min(|x|, |y|) >= t,
with |y| <= |x| as processed, needs an overlap of at least ⌈t·|y|⌉, set by the
smaller set alone:

* no size filter: a set of any size can lie inside a larger one;
* indexing prefix of y: |y| − ⌈t·|y|⌉ + 1 elements (the first common element lies
  at most |y| − overlap positions in);
* probing prefix of x: |x| − ⌈t·m⌉ + 1, m the smallest non-empty set of the
  collection, since the overlap is at least ⌈t·m⌉ whatever y is (nearly all of x
  when small sets exist: the cost of a measure that bounds nothing by x);
* position filter and verification as above, with α = ⌈t·|y|⌉.

When it is fast: short sets (names, titles, character q-grams) and high
thresholds, where the prefix is a small part of each set and holds its rarest
elements. When it is not: long documents at t = 0.5, where the probing prefix
is half the set and reaches into frequent elements, so the inverted lists and
the candidate count grow towards all pairs; MinHash + LSH is the tool there.
``estimate_exact_cost`` says which case a collection is in from a sample.

Memory is the ranked copy of the sets, the inverted lists over the indexing
prefixes (at most one entry per element), a few arrays of n, and the output;
never n². An element of one set alone (on text shingles, nearly all of them) has no
list: no other set can meet it. Ranking sorts every element once, as (value,
position) in 64 bits: at its peak about 16 bytes an element besides the sets
(``neardup find --method exact`` on a million documents of 196 word 5-grams: 5.8 GB
resident at the peak, 9.0 GB before elements of one set lost their lists and the
ranking its copies).
"""

from __future__ import annotations

import math

import numpy as np

from ._core.jit import njit
from .shingling import ShingleSets
from .verify import overlap_reaching

# Subtracted before every ceiling of a real-valued bound; see the module docstring.
ROUNDING_SLACK = 1e-6


MEASURES = ("jaccard", "containment")
_BLOCK = 1 << 22  # elements a temporary array holds at most, where one of all is not needed


def all_pairs(sets: ShingleSets, threshold: float, measure: str = "jaccard",
              smaller_than: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact ``measure`` >= threshold.

    Returns (i int64, j int64, similarity float64), sorted by (i, j): the Jaccard, or
    with ``measure="containment"`` |A ∩ B| / min(|A|, |B|) (see the module docstring).
    The threshold must be in (0, 1]; t = 1.0 finds identical non-empty sets (and, for
    containment, every set inside another). Empty sets never pair with anything.
    ``smaller_than`` (int64[n]): only pairs whose smaller set has fewer elements than
    ``smaller_than[k]``, k the larger set (ties: either), e.g. the size-ratio classes
    that :mod:`neardup.containment` leaves to this join; the lists are scanned no further.
    """
    threshold = _check_threshold(threshold)
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    containment = measure == "containment"
    order = np.argsort(_small_keys(sets.sizes), kind="stable")  # processing order: by size
    ranked = rank_sets(sets, order)
    offsets, ranks = ranked.offsets, ranked.values
    sizes = np.diff(offsets)
    if containment:
        nonempty = sizes[sizes > 0]
        smallest = int(nonempty.min()) if nonempty.size else 1
        overlap = max(1, math.ceil(threshold * smallest - ROUNDING_SLACK))
        probe_len = np.clip(sizes - overlap + 1, 0, sizes)
        index_len = _prefix_lengths(sizes, threshold)
    else:
        probe_len = probing_prefix_lengths(sizes, threshold)
        index_len = indexing_prefix_lengths(sizes, threshold)
    post_offsets, post_doc, post_pos = _prefix_postings(
        offsets, ranks, index_len, ranked.n_elements, ranked.n_single
    )
    if smaller_than is None:
        bound = np.full(sets.n, np.iinfo(np.int64).max, dtype=np.int64)
    else:
        bound = np.asarray(smaller_than, dtype=np.int64)[order]
    x, y, jaccard = _join(
        offsets, ranks, probe_len, index_len, post_offsets, post_doc, post_pos, threshold,
        containment, bound, ranked.n_single,
    )
    x, y = order[x], order[y]
    i, j = np.minimum(x, y), np.maximum(x, y)
    by_pair = np.lexsort((j, i))
    return i[by_pair], j[by_pair], jaccard[by_pair]


def estimate_exact_cost(
    sets: ShingleSets, threshold: float, sample: int = 2000, seed: int = 0
) -> dict:
    """What ``all_pairs`` would cost on ``sets``, from a sample of documents.

    The global order (document frequencies) is computed on the whole collection,
    O(S log S) for S elements in all, the same first step as ``all_pairs``; the
    prefixes are taken from ``sample`` documents drawn without replacement and
    scaled up. Keys:

    n, sampled: documents in all, and in the sample.
    total_size: elements in all sets (exact).
    probe_prefix_total, index_prefix_total: elements in the probing and indexing
        prefixes of all sets (estimated: sample mean × n).
    prefix_fraction: probe_prefix_total / total_size; near 1 - t for long sets.
    expected_candidates: Σ over elements of C(L, 2), L the number of probing
        prefixes holding the element; unbiased from the sample with the factor
        n(n-1) / (m(m-1)). It counts the pair-element meetings the prefix filter
        lets through before the size and position filters: over the whole
        collection it bounds the candidates verified from above.
    all_pairs: n(n-1)/2, the brute-force count, for comparison.
    candidate_fraction: expected_candidates / all_pairs; it can exceed 1, a pair
        meeting once per element its prefixes share (then brute force is cheaper).
    """
    threshold = _check_threshold(threshold)
    if not isinstance(sample, int) or sample < 2:
        raise ValueError(f"sample must be an integer >= 2, got {sample!r}")
    n = sets.n
    m = min(sample, n)
    picked = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    ranked = rank_sets_numpy(sets, picked)  # the join's kernels stay uncompiled
    offsets, ranks = ranked.offsets, ranked.values
    sizes = sets.sizes
    picked_sizes = sizes[picked]
    probe_len = probing_prefix_lengths(picked_sizes, threshold)
    index_len = indexing_prefix_lengths(picked_sizes, threshold)
    in_prefix = _positions(offsets) < np.repeat(probe_len, picked_sizes)
    counts = np.bincount(ranks[in_prefix]).astype(np.float64)
    scale = n * (n - 1) / (m * (m - 1)) if m > 1 else 0.0
    expected_candidates = float(np.sum(counts * (counts - 1) / 2) * scale)
    total_pairs = n * (n - 1) / 2
    total_size = int(sizes.sum())
    probe_total = float(probe_len.sum()) * n / max(m, 1)
    return {
        "n": n,
        "sampled": m,
        "threshold": threshold,
        "total_size": total_size,
        "probe_prefix_total": probe_total,
        "index_prefix_total": float(index_len.sum()) * n / max(m, 1),
        "prefix_fraction": probe_total / total_size if total_size else 0.0,
        "expected_candidates": expected_candidates,
        "all_pairs": total_pairs,
        "candidate_fraction": expected_candidates / total_pairs if total_pairs else 0.0,
    }


class RankedSets:
    """Sets rewritten as element ranks (0 = rarest), each sorted by rank; CSR like ShingleSets.

    Ranks below ``n_single`` are the elements of one set alone in the whole collection:
    no pair shares them, so the join keeps no inverted list for them (on text shingles,
    nearly every element: 99 % of a corpus's word 5-grams)."""

    def __init__(self, offsets: np.ndarray, values: np.ndarray, n_elements: int,
                 n_single: int = 0) -> None:
        self.offsets = offsets  # int64[n + 1]
        self.values = values  # int32 (int64 beyond 2^31 distinct elements), sorted per set
        self.n_elements = n_elements
        self.n_single = n_single

    @property
    def n(self) -> int:
        return self.offsets.size - 1


def rank_sets(sets: ShingleSets, order: np.ndarray | None = None) -> RankedSets:
    """Replace every element by its rank in the global order: rarest first, ties by value.

    Each set comes out sorted by rank. With ``order`` (distinct set ids), only the
    sets at ``order``, in that order; ranks still come from the whole collection.
    """
    by_value, group_bounds = _group_by_value(sets.values)
    n_elements = group_bounds.size - 1
    # groups by frequency, rarest first; groups are numbered in value order and the
    # counting sort is stable, so ties go by value (what a stable argsort gives), with no
    # array of the frequencies and an index half the size of argsort's
    groups_by_rank = np.empty(n_elements, dtype=np.int32 if n_elements < 2**31 else np.int64)
    n_single = int(_groups_by_frequency(group_bounds, groups_by_rank))
    if order is None:
        order = np.arange(sets.n, dtype=np.int64)
    new_offsets = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(sets.sizes[order], out=new_offsets[1:])
    id_dtype = np.int32 if sets.n < 2**31 else np.int64
    new_id = np.full(sets.n, -1, dtype=id_dtype)
    new_id[order] = np.arange(order.size, dtype=id_dtype)
    ranks = np.empty(int(new_offsets[-1]), dtype=np.int32 if n_elements < 2**31 else np.int64)
    _distribute_ranks(sets.offsets, new_id, new_offsets, by_value, group_bounds,
                      groups_by_rank, ranks)
    return RankedSets(new_offsets, ranks, n_elements, n_single)


def rank_sets_numpy(sets: ShingleSets, order: np.ndarray | None = None) -> RankedSets:
    """:func:`rank_sets` in numpy alone: the same ranks, with no kernel to compile.

    The planner estimates the join's cost with it (:func:`estimate_exact_cost`), so that
    a run that then picks LSH never compiles the join. It sorts the picked sets' ranks
    once more (a packed sort of (set, rank), O(S log S) for the S elements picked) where
    :func:`rank_sets` places them in order by a counting pass: fine on a sample, slower
    on a whole collection.
    """
    by_value, group_bounds = _group_by_value(sets.values, kernels=False)
    group_sizes = np.diff(group_bounds)
    groups_by_rank = np.argsort(_small_keys(group_sizes), kind="stable")
    n_elements = groups_by_rank.size
    n_single = int(np.count_nonzero(group_sizes == 1))
    rank_dtype = np.int32 if n_elements < 2**31 else np.int64
    rank_of_group = np.empty(n_elements, dtype=np.int64)
    rank_of_group[groups_by_rank] = np.arange(n_elements, dtype=np.int64)
    rank_at = np.empty(sets.values.size, dtype=np.int64)  # the rank of each element, in place
    rank_at[by_value] = np.repeat(rank_of_group, group_sizes)
    if order is None:
        order = np.arange(sets.n, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    picked_sizes = sets.sizes[order]
    new_offsets = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(picked_sizes, out=new_offsets[1:])
    at = np.repeat(sets.offsets[order], picked_sizes) + _positions(new_offsets)
    owner = np.repeat(np.arange(order.size, dtype=np.int64), picked_sizes)
    # (set, rank) packed in one int64 (set < 2^31, rank < 2^32): one sort orders each set
    packed = owner * np.int64(max(n_elements, 1)) + rank_at[at]
    packed.sort()
    ranks = (packed - owner * np.int64(max(n_elements, 1))).astype(rank_dtype)
    return RankedSets(new_offsets, ranks, n_elements, n_single)


def _group_by_value(values: np.ndarray, kernels: bool = True):
    """(by_value, group_bounds): positions sorted by value; equal values form groups.
    ``kernels``: the bounds found by two small kernels (numpy alone otherwise)."""
    if values.dtype.itemsize <= 4 and values.size < 2**32:
        # One sort of (value, position) packed in 64 bits beats an argsort. Built, split
        # and shifted in place: one array of every element at a time besides by_value
        # (at a million documents of 200 shingles, each is 1.6 GB)
        sorted_values = values.astype(np.uint64)
        sorted_values <<= np.uint64(32)
        for at in range(0, values.size, _BLOCK):
            sorted_values[at:at + _BLOCK] |= np.arange(at, min(at + _BLOCK, values.size),
                                                       dtype=np.uint64)
        sorted_values.sort()
        by_value = sorted_values.astype(np.uint32)  # the low 32 bits: the positions
        sorted_values >>= np.uint64(32)
    else:
        by_value = np.argsort(values)
        sorted_values = values[by_value]
    if not kernels:  # numpy alone (rank_sets_numpy's): a mask of every element
        starts = np.empty(sorted_values.size + 1, dtype=bool)  # and the end, a bound too
        starts[:1] = True
        starts[-1:] = True
        np.not_equal(sorted_values[1:], sorted_values[:-1], out=starts[1:-1])
        return by_value, np.flatnonzero(starts)
    # int32 bounds below 2^31 elements: half the bytes of flatnonzero's, and no mask
    groups = _count_groups(sorted_values)
    group_bounds = np.empty(groups + 1, dtype=np.int32 if sorted_values.size < 2**31
                            else np.int64)
    _fill_bounds(sorted_values, group_bounds)
    return by_value, group_bounds


def _small_keys(keys: np.ndarray) -> np.ndarray:
    """Non-negative integer keys as uint16 where they fit: numpy's stable sort is then radix."""
    if keys.size and keys.max() < 2**16:
        return keys.astype(np.uint16)
    return keys


def probing_prefix_lengths(sizes: np.ndarray, threshold: float) -> np.ndarray:
    """|x| − ⌈t·|x|⌉ + 1 (0 for empty sets): a set with J >= t shares an element in here."""
    return _prefix_lengths(sizes, threshold)


def indexing_prefix_lengths(sizes: np.ndarray, threshold: float) -> np.ndarray:
    """|y| − ⌈2t/(1+t)·|y|⌉ + 1: enough for y when only sets at least as large probe it."""
    return _prefix_lengths(sizes, 2 * threshold / (1 + threshold))


def _prefix_lengths(sizes: np.ndarray, fraction: float) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=np.int64)
    overlap = np.maximum(np.ceil(fraction * sizes - ROUNDING_SLACK).astype(np.int64), 1)
    return np.where(sizes > 0, sizes - overlap + 1, 0)


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool):
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}") from None
    if not 0.0 < value <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    return value


def _positions(offsets: np.ndarray) -> np.ndarray:
    """Each element's position within its own set, for CSR offsets."""
    sizes = np.diff(offsets)
    return np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], sizes)


def _prefix_postings(offsets, ranks, index_len, n_elements, first=0):
    """Inverted lists over the indexing prefixes, CSR by element rank less ``first``:
    the elements of rank ``first`` and above (below it, elements of one set alone,
    which no other set can meet, have none).

    Entries of one element are in processing order (set id), so the join can
    "insert" a set by advancing each list's end by one.
    """
    n = offsets.size - 1
    post_offsets = np.zeros(n_elements - first + 1, dtype=np.int64)
    _count_postings(offsets, ranks, index_len, post_offsets, first)
    total = int(post_offsets[-1])
    post_doc = np.empty(total, dtype=np.int32 if n < 2**31 else np.int64)
    post_pos = np.empty(total, dtype=np.int32 if total < 2**31 else np.int64)
    _fill_postings(offsets, ranks, index_len, post_offsets, post_doc, post_pos, first)
    return post_offsets, post_doc, post_pos


# ---------------------------------------------------------------- numba kernels


@njit(cache=True)
def _count_groups(sorted_values):
    """The runs of equal values in ``sorted_values``."""
    groups = 1 if sorted_values.size else 0
    for k in range(1, sorted_values.size):
        if sorted_values[k] != sorted_values[k - 1]:
            groups += 1
    return groups


@njit(cache=True)
def _fill_bounds(sorted_values, out):
    """``out``: where each run of equal values starts, then the end."""
    g = 0
    for k in range(sorted_values.size):
        if k == 0 or sorted_values[k] != sorted_values[k - 1]:
            out[g] = k
            g += 1
    out[g] = sorted_values.size


@njit(cache=True)
def _groups_by_frequency(group_bounds, out):
    """``out``: the groups (bounds in ``group_bounds``) by their size, smallest first,
    ties in group order (a stable counting sort); returns the groups of size 1."""
    groups = group_bounds.size - 1
    largest = 0
    for g in range(groups):
        largest = max(largest, group_bounds[g + 1] - group_bounds[g])
    at = np.zeros(largest + 3, dtype=np.int64)  # at[2] even with no group
    for g in range(groups):
        at[group_bounds[g + 1] - group_bounds[g] + 1] += 1
    for f in range(largest + 1):
        at[f + 1] += at[f]
    single = at[2] - at[1]
    for g in range(groups):
        f = group_bounds[g + 1] - group_bounds[g]
        out[at[f]] = g
        at[f] += 1
    return single


@njit(cache=True)
def _distribute_ranks(offsets, new_id, new_offsets, by_value, group_bounds, groups_by_rank, out):
    """Write each element's rank into its set's slot, visiting elements in rank order.

    A counting sort: every set receives its ranks in increasing order, so no set
    needs sorting afterwards.
    """
    doc_of = np.empty(offsets[-1], dtype=new_id.dtype)
    for d in range(offsets.size - 1):
        for p in range(offsets[d], offsets[d + 1]):
            doc_of[p] = new_id[d]
    fill = new_offsets[:-1].copy()
    for rank in range(groups_by_rank.size):
        g = groups_by_rank[rank]
        for q in range(group_bounds[g], group_bounds[g + 1]):
            d = doc_of[by_value[q]]
            if d >= 0:
                out[fill[d]] = rank
                fill[d] += 1


@njit(cache=True)
def _count_postings(offsets, ranks, index_len, post_offsets, first):
    """``post_offsets``: the CSR bounds of the indexing-prefix entries by element (rank
    less ``first``; the elements below ``first`` have no list)."""
    for d in range(offsets.size - 1):
        for p in range(offsets[d], offsets[d] + index_len[d]):
            if ranks[p] >= first:
                post_offsets[ranks[p] - first + 1] += 1
    for e in range(post_offsets.size - 1):
        post_offsets[e + 1] += post_offsets[e]


@njit(cache=True)
def _fill_postings(offsets, ranks, index_len, post_offsets, post_doc, post_pos, first):
    """Counting sort of the indexing-prefix entries into the lists of
    :func:`_count_postings`, sets in order."""
    fill = post_offsets[:-1].copy()
    for d in range(offsets.size - 1):
        for i in range(index_len[d]):
            e = ranks[offsets[d] + i] - first
            if e < 0:
                continue
            post_doc[fill[e]] = d
            post_pos[fill[e]] = i
            fill[e] += 1


@njit(inline="always")
def _ceil_bound(value):
    return max(1, math.ceil(value - ROUNDING_SLACK))


@njit(cache=True)
def _grow(array, capacity):
    out = np.empty(capacity, dtype=array.dtype)
    out[: array.size] = array
    return out


@njit(cache=True)
def _join(offsets, ranks, probe_len, index_len, post_offsets, post_doc, post_pos, threshold,
          containment, bound, first):
    """Sets in increasing size; each probes the lists of its probing prefix, then is indexed.
    Elements of rank below ``first`` belong to one set alone: no list, nothing to meet.

    Returns (x, y, similarity) in processing order ids, y processed before x; with
    ``containment`` the required overlap is ⌈t·|y|⌉ and nothing is skipped by size.
    Only y with |y| < bound[x] are met: list entries are in increasing size, so a
    list is left at the first larger one.
    """
    n = offsets.size - 1
    ratio = threshold / (1.0 + threshold)
    list_start = post_offsets[:-1].copy()  # entries before it are too small for every later set
    list_end = post_offsets[:-1].copy()  # entries of sets already indexed
    # Overlap seen so far between the current set and each earlier one; -1: pruned.
    seen = np.zeros(n, dtype=np.int64)
    last_x = np.zeros(n, dtype=np.int64)
    last_y = np.zeros(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    capacity = 1024
    out_x = np.empty(capacity, dtype=np.int64)
    out_y = np.empty(capacity, dtype=np.int64)
    out_j = np.empty(capacity, dtype=np.float64)
    found = 0
    for x in range(n):
        x_lo = offsets[x]
        sx = offsets[x + 1] - x_lo
        if sx == 0:
            continue
        min_size = 1 if containment else _ceil_bound(threshold * sx)
        max_size = bound[x]  # exclusive
        n_touched = 0
        for i in range(probe_len[x] if max_size > 1 else 0):
            element = ranks[x_lo + i] - first
            if element < 0:
                continue
            q = list_start[element]
            end = list_end[element]
            while q < end and offsets[post_doc[q] + 1] - offsets[post_doc[q]] < min_size:
                q += 1
            list_start[element] = q
            for p in range(q, end):
                y = post_doc[p]
                if offsets[y + 1] - offsets[y] >= max_size:
                    break
                so_far = seen[y]
                if so_far < 0:
                    continue
                if so_far == 0:
                    touched[n_touched] = y
                    n_touched += 1
                j = post_pos[p]
                sy = offsets[y + 1] - offsets[y]
                if containment:
                    alpha = _ceil_bound(threshold * sy)
                else:
                    alpha = _ceil_bound(ratio * (sx + sy))
                if so_far + 1 + min(sx - i - 1, sy - j - 1) >= alpha:
                    seen[y] = so_far + 1
                    last_x[y] = i
                    last_y[y] = j
                else:
                    seen[y] = -1
        for k in range(n_touched):
            y = touched[k]
            so_far = seen[y]
            seen[y] = 0
            if so_far <= 0:
                continue
            y_lo = offsets[y]
            sy = offsets[y + 1] - y_lo
            if containment:
                alpha = _ceil_bound(threshold * sy)
            else:
                alpha = _ceil_bound(ratio * (sx + sy))
            common = so_far + overlap_reaching(
                ranks, x_lo + last_x[y] + 1, x_lo + sx, y_lo + last_y[y] + 1, y_lo + sy,
                alpha - so_far,
            )
            if common < alpha:
                continue
            if containment:
                jaccard = common / sy
            else:
                jaccard = common / (sx + sy - common)
            if jaccard < threshold:
                continue
            if found == capacity:
                capacity *= 2
                out_x = _grow(out_x, capacity)
                out_y = _grow(out_y, capacity)
                out_j = _grow(out_j, capacity)
            out_x[found] = x
            out_y[found] = y
            out_j[found] = jaccard
            found += 1
        for i in range(index_len[x]):
            element = ranks[x_lo + i] - first
            if element >= 0:
                list_end[element] += 1
    return out_x[:found].copy(), out_y[:found].copy(), out_j[:found].copy()
