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

When it is fast: short sets (names, titles, character q-grams) and high
thresholds, where the prefix is a small part of each set and holds its rarest
elements. When it is not: long documents at t = 0.5, where the probing prefix
is half the set and reaches into frequent elements, so the inverted lists and
the candidate count grow towards all pairs; MinHash + LSH is the tool there.
``estimate_exact_cost`` says which case a collection is in from a sample.

Memory is the ranked copy of the sets, the inverted lists over the indexing
prefixes (at most one entry per element), a few arrays of n, and the output;
never n².
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .shingling import ShingleSets

# Subtracted before every ceiling of a real-valued bound; see the module docstring.
ROUNDING_SLACK = 1e-6


def all_pairs(sets: ShingleSets, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact Jaccard >= threshold.

    Returns (i int64, j int64, jaccard float64), sorted by (i, j). The threshold
    must be in (0, 1]; t = 1.0 finds identical non-empty sets. Empty sets never
    pair with anything.
    """
    threshold = _check_threshold(threshold)
    ranked = rank_sets(sets)
    sizes = np.diff(ranked.offsets)
    order = np.argsort(sizes, kind="stable")
    offsets, ranks = _reorder(ranked.offsets, ranked.values, order)
    sizes = sizes[order]
    probe_len = probing_prefix_lengths(sizes, threshold)
    index_len = indexing_prefix_lengths(sizes, threshold)
    post_offsets, post_doc, post_pos = _prefix_postings(
        offsets, ranks, index_len, ranked.n_elements
    )
    x, y, jaccard = _join(
        offsets, ranks, probe_len, index_len, post_offsets, post_doc, post_pos, threshold
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
        lets through before the size and position filters, so it bounds the
        candidates from above.
    all_pairs: n(n-1)/2, the brute-force count, for comparison.
    candidate_fraction: expected_candidates / all_pairs.
    """
    threshold = _check_threshold(threshold)
    if not isinstance(sample, int) or sample < 2:
        raise ValueError(f"sample must be an integer >= 2, got {sample!r}")
    n = sets.n
    ranked = rank_sets(sets)
    sizes = np.diff(ranked.offsets)
    m = min(sample, n)
    picked = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    offsets, ranks = _reorder(ranked.offsets, ranked.values, picked)
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
    """Sets rewritten as element ranks (0 = rarest), each sorted by rank; CSR like ShingleSets."""

    def __init__(self, offsets: np.ndarray, values: np.ndarray, n_elements: int) -> None:
        self.offsets = offsets  # int64[n + 1]
        self.values = values  # int32 (int64 beyond 2^31 distinct elements), sorted per set
        self.n_elements = n_elements

    @property
    def n(self) -> int:
        return self.offsets.size - 1


def rank_sets(sets: ShingleSets) -> RankedSets:
    """Replace every element by its rank in the global order: rarest first, ties by value."""
    distinct, inverse, frequency = np.unique(
        sets.values, return_inverse=True, return_counts=True
    )
    rank_dtype = np.int32 if distinct.size < 2**31 else np.int64
    # distinct is sorted by value, so a stable sort by frequency breaks ties by value.
    rank_of_distinct = np.empty(distinct.size, dtype=rank_dtype)
    rank_of_distinct[np.argsort(frequency, kind="stable")] = np.arange(
        distinct.size, dtype=rank_dtype
    )
    ranks = rank_of_distinct[inverse.reshape(-1)]
    doc = np.repeat(np.arange(sets.n, dtype=np.int64), sets.sizes)
    ranks = ranks[np.lexsort((ranks, doc))]
    return RankedSets(sets.offsets.astype(np.int64, copy=True), ranks, int(distinct.size))


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


def _reorder(offsets: np.ndarray, values: np.ndarray, order: np.ndarray):
    """The CSR sets at ``order``, in that order."""
    sizes = np.diff(offsets)[order]
    new_offsets = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    new_values = np.empty(int(new_offsets[-1]), dtype=values.dtype)
    _gather(offsets, values, order.astype(np.int64), new_offsets, new_values)
    return new_offsets, new_values


def _prefix_postings(offsets, ranks, index_len, n_elements):
    """Inverted lists over the indexing prefixes, CSR by element rank.

    Entries of one element are in processing order (set id), so the join can
    "insert" a set by advancing each list's end by one.
    """
    n = offsets.size - 1
    sizes = np.diff(offsets)
    in_prefix = _positions(offsets) < np.repeat(index_len, sizes)
    doc = np.repeat(np.arange(n, dtype=np.int32 if n < 2**31 else np.int64), sizes)[in_prefix]
    pos = _positions(offsets).astype(np.int32 if sizes.max(initial=0) < 2**31 else np.int64)
    pos = pos[in_prefix]
    element = ranks[in_prefix]
    # Stable: within one element the entries stay in set (processing) order.
    by_element = np.argsort(element, kind="stable")
    post_offsets = np.zeros(n_elements + 1, dtype=np.int64)
    np.cumsum(np.bincount(element, minlength=n_elements), out=post_offsets[1:])
    return post_offsets, doc[by_element], pos[by_element]


# ---------------------------------------------------------------- numba kernels


@nb.njit(cache=True)
def _gather(offsets, values, order, new_offsets, out):
    for k in range(order.size):
        lo = offsets[order[k]]
        w = new_offsets[k]
        for p in range(new_offsets[k + 1] - w):
            out[w + p] = values[lo + p]


@nb.njit(inline="always")
def _ceil_bound(value):
    return max(1, math.ceil(value - ROUNDING_SLACK))


@nb.njit(inline="always")
def _overlap_reaching(ranks, a, a_end, b, b_end, needed):
    """|ranks[a:a_end] ∩ ranks[b:b_end]|, or less once ``needed`` is out of reach."""
    common = 0
    while a < a_end and b < b_end:
        if common + min(a_end - a, b_end - b) < needed:
            break
        ra = ranks[a]
        rb = ranks[b]
        if ra == rb:
            common += 1
            a += 1
            b += 1
        elif ra < rb:
            a += 1
        else:
            b += 1
    return common


@nb.njit(cache=True)
def _grow(array, capacity):
    out = np.empty(capacity, dtype=array.dtype)
    out[: array.size] = array
    return out


@nb.njit(cache=True)
def _join(offsets, ranks, probe_len, index_len, post_offsets, post_doc, post_pos, threshold):
    """Sets in increasing size; each probes the lists of its probing prefix, then is indexed.

    Returns (x, y, jaccard) in processing order ids, y processed before x.
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
        min_size = _ceil_bound(threshold * sx)
        n_touched = 0
        for i in range(probe_len[x]):
            element = ranks[x_lo + i]
            q = list_start[element]
            end = list_end[element]
            while q < end and offsets[post_doc[q] + 1] - offsets[post_doc[q]] < min_size:
                q += 1
            list_start[element] = q
            for p in range(q, end):
                y = post_doc[p]
                so_far = seen[y]
                if so_far < 0:
                    continue
                if so_far == 0:
                    touched[n_touched] = y
                    n_touched += 1
                j = post_pos[p]
                sy = offsets[y + 1] - offsets[y]
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
            alpha = _ceil_bound(ratio * (sx + sy))
            common = so_far + _overlap_reaching(
                ranks, x_lo + last_x[y] + 1, x_lo + sx, y_lo + last_y[y] + 1, y_lo + sy,
                alpha - so_far,
            )
            if common < alpha:
                continue
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
            list_end[ranks[x_lo + i]] += 1
    return out_x[:found].copy(), out_y[:found].copy(), out_j[:found].copy()
