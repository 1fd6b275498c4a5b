"""Verification: the exact similarity of candidate pairs, from the shingle sets.

J(A, B) = |A ∩ B| / |A ∪ B| is computed exactly by merging the two sorted
arrays of each pair, in parallel over pairs: no estimate is involved. Two empty
sets have J = 0 here (they share nothing), so they never verify as duplicates.

The measures (``MEASURES``):

- ``"jaccard"``: J(A, B) above;
- ``"containment"``: C(A, B) = |A ∩ B| / min(|A|, |B|), the symmetric (max-)containment:
  the share of the smaller set found in the larger, so a document quoted whole inside
  a longer one scores 1. The directed form |A ∩ B| / |A| (Broder 1997, "On the
  resemblance and containment of documents") asks which document is inside which and
  makes pairs ordered; its larger direction is this value, which keeps pairs
  unordered like Jaccard's. C ≥ J always, and C = 1 for a subset.
"""

from __future__ import annotations

import numpy as np

from ._core.jit import njit, prange
from ._core.kernels import sized_kernel
from .shingling import ShingleSets


def exact_jaccard(sets: ShingleSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """float64 array: the exact Jaccard of each pair (sets[i[p]], sets[j[p]])."""
    return _per_pair(_jaccard_pairs, sets, i, j)


def _per_pair(kernel, sets: ShingleSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """float64 array: ``kernel``'s value for each pair (sets[i[p]], sets[j[p]])."""
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    if i.shape != j.shape:
        raise ValueError("i and j must have the same shape")
    out = np.empty(i.size, dtype=np.float64)
    kernel(sets.offsets, sets.values, i, j, out)
    return out


MEASURES = ("jaccard", "containment")


def exact_containment(sets: ShingleSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """float64 array: |A ∩ B| / min(|A|, |B|) of each pair (0 when either set is empty)."""
    return _per_pair(_containment_pairs, sets, i, j)


def exact_similarity(sets: ShingleSets, i: np.ndarray, j: np.ndarray,
                     measure: str = "jaccard") -> np.ndarray:
    """The exact ``measure`` (one of ``MEASURES``) of each pair (sets[i[p]], sets[j[p]])."""
    if measure == "jaccard":
        return exact_jaccard(sets, i, j)
    if measure == "containment":
        return exact_containment(sets, i, j)
    raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")


def containment_from_jaccard(jaccard: np.ndarray, size_a: np.ndarray,
                             size_b: np.ndarray) -> np.ndarray:
    """The exact containment of pairs whose exact Jaccard and set sizes are known.

    |A ∩ B| = J·(|A| + |B|) / (1 + J) is an integer; float64 lands within far less than
    0.5 of it below 2^40 elements, so rounding recovers it exactly.
    """
    jaccard = np.asarray(jaccard, dtype=np.float64)
    size_a = np.asarray(size_a, dtype=np.float64)
    size_b = np.asarray(size_b, dtype=np.float64)
    common = np.rint(jaccard * (size_a + size_b) / (1.0 + jaccard))
    smaller = np.minimum(size_a, size_b)
    return np.divide(common, smaller, out=np.zeros_like(common), where=smaller > 0)


def intersection_sizes(sets: ShingleSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """int64 array: |A ∩ B| of each pair."""
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    out = np.empty(i.size, dtype=np.int64)
    _intersections(sets.offsets, sets.values, i, j, out)
    return out


@njit(inline="always")
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
    for p in prange(i.size):
        a_lo, a_hi = offsets[i[p]], offsets[i[p] + 1]
        b_lo, b_hi = offsets[j[p]], offsets[j[p] + 1]
        common = overlap_reaching(values, a_lo, a_hi, b_lo, b_hi, 0)
        union = (a_hi - a_lo) + (b_hi - b_lo) - common
        out[p] = common / union if union > 0 else 0.0


@sized_kernel(work=_pair_work)
def _intersections(offsets, values, i, j, out):
    for p in prange(i.size):
        out[p] = overlap_reaching(values, offsets[i[p]], offsets[i[p] + 1],
                            offsets[j[p]], offsets[j[p] + 1], 0)


@sized_kernel(work=_pair_work)
def _containment_pairs(offsets, values, i, j, out):
    for p in prange(i.size):
        a_lo, a_hi = offsets[i[p]], offsets[i[p] + 1]
        b_lo, b_hi = offsets[j[p]], offsets[j[p] + 1]
        common = overlap_reaching(values, a_lo, a_hi, b_lo, b_hi, 0)
        smaller = min(a_hi - a_lo, b_hi - b_lo)
        out[p] = common / smaller if smaller > 0 else 0.0
