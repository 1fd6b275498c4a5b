"""SimHash: one 64-bit fingerprint per set, and every pair within Hamming distance k.

Fingerprints (Charikar 2002, "Similarity estimation techniques from rounding
algorithms", STOC): each shingle x draws 64 random signs, the bits of
h(x) = splitmix64(x xor key(seed)) (1: +1, 0: -1); bit b of a set's fingerprint is 1
when the signs of bit b over its shingles sum above 0 (more shingles have it set than
not; an even tie gives 0). That is the sign of the set's 0/1 vector projected on a
random ±1 hyperplane, so two sets differ in a bit with probability about θ/π, θ the
angle between their vectors (exact for Gaussian hyperplanes; for ±1 signs the sums
approach Gaussians as sets grow):

    cos θ = |A ∩ B| / sqrt(|A| · |B|)

and the Hamming distance of two fingerprints is about Binomial(64, θ/π). Sets of equal
size with Jaccard J have cos θ = 2J / (1 + J); unequal sizes lower cos θ for the same
J, so a pair of unequal sizes lies further apart than the threshold's distance below
says. Shapes: sets (n, CSR) → uint64[n].

Search (Manku, Jain, Das Sarma 2007, "Detecting near-duplicates for web crawling",
WWW): cut the 64 bits into k + 1 blocks; two fingerprints within distance k differ in
at most k blocks, so by pigeonhole they agree exactly on at least one. For each block
the documents are sorted by its bits, and every pair inside a run of equal blocks is
checked with a popcount of the xor; a pair is emitted by the first block it agrees on
only, so each appears once. The search is exact for Hamming ≤ k: it finds every such
pair and nothing else. Its cost is the pairs inside the runs, about
(k + 1) · n² / 2^(64 / (k + 1)) / 2 for uniform fingerprints: small for k ≤ 3 (16-bit
blocks, Manku's setting for J near 0.95 and above), close to all pairs by k ≈ 15
(4-bit blocks), which t = 0.8 needs (64 · θ/π ≈ 9.7 expected bits at J = 0.8).
:func:`distance_for_threshold` picks k from the threshold; the caller may set it.

The reported pairs are verified on the exact sets like MinHash's candidates: what is
estimated is only which pairs are found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._core.hashing import mix64
from ._core.jit import njit, prange
from ._core.kernels import sized_kernel
from .shingling import ShingleSets

BITS = 64
# k is chosen so that a pair of equal sizes at J = t is within k with this probability
RECALL_AT_THRESHOLD = 0.9


def fingerprint_key(seed: int) -> np.uint64:
    """The 64-bit key of the shingle hash for ``seed``."""
    rng = np.random.default_rng([seed, 0x5348])  # "SH": apart from MinHash's keys
    return rng.integers(0, 2**64, dtype=np.uint64, endpoint=False)


def fingerprints(sets: ShingleSets, seed: int = 1) -> np.ndarray:
    """uint64[n]: the SimHash fingerprint of every set (0 for an empty set)."""
    out = np.empty(sets.n, dtype=np.uint64)
    _fingerprints(sets.offsets, sets.values, fingerprint_key(seed), out)
    return out


def bit_difference_probability(threshold: float) -> float:
    """θ/π for two sets of equal size with Jaccard ``threshold``: cos θ = 2t / (1 + t)."""
    cosine = 2.0 * threshold / (1.0 + threshold)
    return math.acos(min(1.0, cosine)) / math.pi


def expected_distance(threshold: float) -> float:
    """64 · θ/π: the mean Hamming distance of a pair of equal sizes at Jaccard t."""
    return BITS * bit_difference_probability(threshold)


def distance_for_threshold(threshold: float, recall: float = RECALL_AT_THRESHOLD) -> int:
    """The smallest k with P[Binomial(64, θ/π) ≤ k] ≥ ``recall`` at Jaccard ``threshold``
    (equal sizes), capped at 63."""
    p = bit_difference_probability(threshold)
    total = 0.0
    for k in range(BITS):
        total += math.comb(BITS, k) * p**k * (1.0 - p) ** (BITS - k)
        if total >= recall:
            return k
    return BITS - 1


def found_probability(jaccard, k: int) -> np.ndarray:
    """P[Binomial(64, θ/π) ≤ k]: the chance that a pair of equal sizes at this Jaccard
    is found by the search at distance k (SimHash's counterpart of LSH's S-curve)."""
    jaccard = np.atleast_1d(np.asarray(jaccard, dtype=np.float64))
    cosine = np.clip(2.0 * jaccard / (1.0 + jaccard), -1.0, 1.0)
    p = np.arccos(cosine)[:, None] / np.pi
    x = np.arange(k + 1)[None, :]
    log_comb = np.array([math.lgamma(BITS + 1) - math.lgamma(v + 1) - math.lgamma(BITS - v + 1)
                         for v in range(k + 1)])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.exp(log_comb + x * np.log(p) + (BITS - x) * np.log1p(-p))
    terms = np.where(p == 0.0, (x == 0).astype(np.float64), terms)  # identical: distance 0
    return np.clip(np.nan_to_num(terms).sum(axis=1), 0.0, 1.0)


def jaccard_estimate(distance: np.ndarray) -> np.ndarray:
    """The Jaccard of a pair of equal sizes at this Hamming distance: with
    cos θ = cos(π · d / 64), J = cos θ / (2 - cos θ) (0 where cos θ ≤ 0)."""
    cosine = np.cos(np.pi * np.asarray(distance, dtype=np.float64) / BITS)
    return np.clip(cosine / (2.0 - cosine), 0.0, 1.0)


def blocks(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(shifts, masks) of the k + 1 blocks of 64 bits, as equal in width as they can be."""
    if not isinstance(k, (int, np.integer)) or not 0 <= k < BITS:
        raise ValueError(f"the Hamming distance must be an integer in 0..{BITS - 1}, "
                         f"got {k!r}")
    count = k + 1
    widths = np.full(count, BITS // count, dtype=np.int64)
    widths[: BITS % count] += 1
    shifts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.uint64)
    masks = np.array([(1 << int(w)) - 1 for w in widths], dtype=np.uint64)
    return shifts, masks


def block_keys(prints: np.ndarray, k: int) -> np.ndarray:
    """uint64[n, k + 1]: column q is block q of each fingerprint, the key the search
    groups by (as :func:`~neardup.lsh.band_keys` is LSH's; the Spark engine's buckets)."""
    shifts, masks = blocks(k)
    prints = np.ascontiguousarray(prints, dtype=np.uint64)
    return (prints[:, None] >> shifts[None, :]) & masks[None, :]


@dataclass
class SearchStats:
    distance: int
    blocks: int
    comparisons: int = 0  # pairs inside runs of an equal block, each a popcount
    largest_run: int = 0

    def as_dict(self) -> dict:
        return {"distance": self.distance, "blocks": self.blocks,
                "comparisons": self.comparisons, "largest_run": self.largest_run}


def hamming_pairs(prints: np.ndarray, k: int):
    """Every pair (i < j) with popcount(prints[i] xor prints[j]) ≤ k, exactly.

    Returns (i int64, j int64, distance int64, stats), sorted by (i, j), each pair once.
    """
    prints = np.ascontiguousarray(prints, dtype=np.uint64)
    shifts, masks = blocks(k)
    n = prints.size
    stats = SearchStats(int(k), int(shifts.size))
    codes = []
    for q in range(shifts.size):
        keys = (prints >> shifts[q]) & masks[q]
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        edges = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1], True])
        sizes = np.diff(edges)
        repeated = sizes > 1
        starts, sizes = edges[:-1][repeated], sizes[repeated]
        if sizes.size == 0:
            continue
        stats.comparisons += int((sizes * (sizes - 1) // 2).sum())
        stats.largest_run = max(stats.largest_run, int(sizes.max()))
        found = np.zeros(sizes.size, dtype=np.int64)
        _run_pairs(prints, order, starts, sizes, shifts, masks, q, k, n, found,
                   np.zeros(0, dtype=np.int64), False)
        bounds = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(found, out=bounds[1:])
        block_codes = np.empty(int(bounds[-1]), dtype=np.int64)
        _run_pairs(prints, order, starts, sizes, shifts, masks, q, k, n, bounds,
                   block_codes, True)
        codes.append(block_codes)
    codes = np.sort(np.concatenate(codes)) if codes else np.empty(0, dtype=np.int64)
    i, j = codes // max(n, 1), codes % max(n, 1)
    distance = popcounts(prints[i] ^ prints[j])
    return i, j, distance, stats


def popcounts(x: np.ndarray) -> np.ndarray:
    """int64: the number of 1 bits of each uint64."""
    x = np.ascontiguousarray(x, dtype=np.uint64)
    out = np.empty(x.size, dtype=np.int64)
    _popcounts(x, out)
    return out


# ---------------------------------------------------------------- numba kernels


@sized_kernel(work=lambda offsets, values, *_: values.size * 8)  # 64 bit counts a shingle
def _fingerprints(offsets, values, key, out):
    for d in prange(offsets.size - 1):
        lo, hi = offsets[d], offsets[d + 1]
        ones = np.zeros(64, dtype=np.int64)
        for p in range(lo, hi):
            h = mix64(np.uint64(values[p]) ^ key)
            for b in range(64):
                ones[b] += np.int64((h >> np.uint64(b)) & np.uint64(1))
        fingerprint = np.uint64(0)
        for b in range(64):
            if 2 * ones[b] > hi - lo:  # sum of signs > 0
                fingerprint |= np.uint64(1) << np.uint64(b)
        out[d] = fingerprint


@njit(inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@sized_kernel(work=lambda x, out: x.size)
def _popcounts(x, out):
    for p in prange(x.size):
        out[p] = _popcount(x[p])


def _comparisons(prints, order, starts, sizes, *_):
    """Units of work of :func:`_run_pairs`: the pairs inside the runs."""
    return int((sizes * (sizes - 1) // 2).sum())


@sized_kernel(work=_comparisons)
def _run_pairs(prints, order, starts, sizes, shifts, masks, block, k, n, counts, out, fill):
    """Pass 1 (``fill`` False): how many pairs of each run are within k and agree on no
    earlier block; ``counts[r]``. Pass 2: their codes min·n + max from ``counts[r]`` on."""
    for r in prange(starts.size):
        s, m = starts[r], sizes[r]
        w = counts[r] if fill else 0
        found = 0
        for x in range(m):
            a = order[s + x]
            for y in range(x + 1, m):
                b = order[s + y]
                diff = prints[a] ^ prints[b]
                if _popcount(diff) > k:
                    continue
                first = True
                for q in range(block):  # emitted by the first block the pair agrees on
                    if (diff >> shifts[q]) & masks[q] == 0:
                        first = False
                        break
                if not first:
                    continue
                if fill:
                    out[w] = min(a, b) * n + max(a, b)
                    w += 1
                found += 1
        if not fill:
            counts[r] = found
