"""Verification: the exact Jaccard similarity of candidate pairs, from the shingle sets.

J(A, B) = |A ∩ B| / |A ∪ B| is computed exactly by merging the two sorted
arrays of each pair, in parallel over pairs: no estimate is involved. Two empty
sets have J = 0 here (they share nothing), so they never verify as duplicates.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import sized_kernel
from .shingling import ShingleSets


def exact_jaccard(sets: ShingleSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """float64 array: the exact Jaccard of each pair (sets[i[p]], sets[j[p]])."""
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    if i.shape != j.shape:
        raise ValueError("i and j must have the same shape")
    out = np.empty(i.size, dtype=np.float64)
    _jaccard_pairs(sets.offsets, sets.values, i, j, out)
    return out


def intersection_sizes(sets: ShingleSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """int64 array: |A ∩ B| of each pair."""
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    out = np.empty(i.size, dtype=np.int64)
    _intersections(sets.offsets, sets.values, i, j, out)
    return out


@nb.njit(inline="always")
def overlap_reaching(values, a, a_end, b, b_end, needed):
    """|values[a:a_end] ∩ values[b:b_end]| of two sorted runs, by merging.

    Stops early, returning less, once ``needed`` common elements are out of reach
    (the exact join's verification); ``needed = 0`` merges to the end.
    """
    common = 0
    while a < a_end and b < b_end:
        if common + min(a_end - a, b_end - b) < needed:
            break
        x = values[a]
        y = values[b]
        if x == y:
            common += 1
            a += 1
            b += 1
        elif x < y:
            a += 1
        else:
            b += 1
    return common


def _pair_work(offsets, values, i, *_):
    """Elements a batch of pairs reads: pairs times the mean set size."""
    return i.size * (values.size // max(offsets.size - 1, 1))


@sized_kernel(work=_pair_work)
def _jaccard_pairs(offsets, values, i, j, out):
    for p in nb.prange(i.size):
        a_lo, a_hi = offsets[i[p]], offsets[i[p] + 1]
        b_lo, b_hi = offsets[j[p]], offsets[j[p] + 1]
        common = overlap_reaching(values, a_lo, a_hi, b_lo, b_hi, 0)
        union = (a_hi - a_lo) + (b_hi - b_lo) - common
        out[p] = common / union if union > 0 else 0.0


@sized_kernel(work=_pair_work)
def _intersections(offsets, values, i, j, out):
    for p in nb.prange(i.size):
        out[p] = overlap_reaching(values, offsets[i[p]], offsets[i[p] + 1],
                            offsets[j[p]], offsets[j[p] + 1], 0)
