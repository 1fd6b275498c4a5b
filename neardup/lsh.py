"""LSH banding: signatures cut into b bands of r rows; equal bands make candidates.

A pair of similarity s agrees on one band with probability s^r, on none of the
b bands with (1 - s^r)^b, so it becomes a candidate with probability

    P(s) = 1 - (1 - s^r)^b            (Mining of Massive Datasets, ch. 3.4)

an S-curve rising steeply near s* = (1/b)^(1/r). Given a threshold t and K
minima, :func:`choose_bands` picks b, r (b·r ≤ K) minimizing

    w_fp · ∫_0^t P(s) ds  +  w_fn · ∫_t^1 (1 - P(s)) ds

(false-positive and false-negative areas) among the shapes that find a pair at
the threshold itself with P(t) ≥ MIN_P_AT_THRESHOLD (0.995) and keep the steep point
at t/2 or above (all shapes when none does: low thresholds, small K). The default
weights (0.02, 0.98) put the steep point below t: a pair lost here cannot be brought
back, while an extra candidate only costs one exact check.
The floor matters because true pairs crowd just above t, where the area misses
little but P is lowest. Measured on Go's source tree (word 5-grams, K = 128, every
document pair by brute force, three seeds, BENCHMARKS.md): at t = 0.5 the areas alone
chose 34 × 3 (P(t) = 0.989): recall 99.77 % (worst seed 99.46 %); with the floor
40 × 3: 99.98 % (worst 99.97 %), the same LSH and verification time. At t = 0.8, 17 × 7
(P(t) = 0.982) against 18 × 6: 99.96 % against 99.87 %, within the 1-3 pairs of 744 that
seeds differ by (the S-curve expects 99.82 % against 99.96 %). datasketch's 0.5/0.5
choice at t = 0.8, 9 × 13, finds 88 %.

Candidates are found per band by grouping the documents of equal band keys (one
64-bit hash of the r minima; in cache-sized pieces, linear in n) and emitting all pairs
inside each group. A bucket larger than ``max_bucket`` would emit m(m-1)/2 pairs; the
policy decides instead: ``"star"`` links every member to the bucket's first member only
(m - 1 pairs: clusters stay connected, pairs between other members are only found
through other bands), ``"skip"`` drops the bucket. Either way it is counted and reported.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ._core.hashing import mix64
from ._core.jit import njit

BUCKET_POLICIES = ("star", "skip")
DEFAULT_WEIGHTS = (0.02, 0.98)
MIN_P_AT_THRESHOLD = 0.995  # a pair at exactly t is a candidate with at least this chance
MAX_NUM_PERM = 4096  # the most minima a signature may hold (FindConfig checks K against it)
PIECE = 8192  # band keys grouped at once: ~420 KB with their hash table, within an L2 cache


def s_curve(s, bands: int, rows: int):
    """P(s) = 1 - (1 - s^r)^b: the probability a pair of similarity s becomes a candidate."""
    s = np.asarray(s, dtype=np.float64)
    return 1.0 - (1.0 - s**rows) ** bands


def minima_to_reach(threshold: float, target: float = MIN_P_AT_THRESHOLD) -> int:
    """The fewest minima K with some b × r (b·r ≤ K) finding a pair at ``threshold`` with
    P(t) ≥ ``target``: since (1 - t)^r + t^r ≤ 1, (1 - t^r)^b ≥ (1 - t)^(b·r), so
    P(t) ≤ 1 - (1 - t)^(b·r), and b·r ≥ log(1 - target) / log(1 - t) is needed; K bands
    of one row reach it. (The steep-point guard of :func:`choose_bands` may still pick
    another shape.)"""
    if threshold >= 1.0:
        return 1
    return max(1, math.ceil(math.log1p(-target) / math.log1p(-threshold) - 1e-9))


def steep_point(bands: int, rows: int) -> float:
    """(1/b)^(1/r): where the S-curve rises fastest, roughly."""
    return (1.0 / bands) ** (1.0 / rows)


_GRID = np.linspace(0.0, 1.0, 2001)


def false_positive_area(threshold: float, bands: int, rows: int) -> float:
    """∫_0^t P(s) ds: how much of the curve lies left of the threshold."""
    return float(_curve_areas(threshold, np.array([bands]), np.array([rows]))[0][0])


def false_negative_area(threshold: float, bands: int, rows: int) -> float:
    """∫_t^1 (1 - P(s)) ds: how much of the curve is missing right of the threshold."""
    return float(_curve_areas(threshold, np.array([bands]), np.array([rows]))[1][0])


@dataclass(frozen=True)
class BandPlan:
    """The chosen b × r and what it implies."""

    threshold: float
    num_perm: int
    bands: int
    rows: int
    fp_area: float
    fn_area: float
    weights: tuple[float, float] = DEFAULT_WEIGHTS
    chosen: str = "optimized"  # or "user"

    @property
    def steep_point(self) -> float:
        return steep_point(self.bands, self.rows)

    def curve(self, points=None) -> list[tuple[float, float]]:
        points = np.round(np.arange(0.1, 1.01, 0.1), 2) if points is None else points
        return [(float(s), float(p)) for s, p in zip(points, s_curve(points, self.bands,
                                                                      self.rows))]

    @property
    def p_at_threshold(self) -> float:
        """P(t): the chance that a pair at exactly the threshold becomes a candidate."""
        return float(s_curve(self.threshold, self.bands, self.rows))

    def shortfall(self) -> str | None:
        """A warning when no b × r with b·r ≤ K finds a pair at t with P(t) ≥
        MIN_P_AT_THRESHOLD (the choice is then the best there is, and still loses pairs
        near t), naming P(t) and what would reach it; None otherwise, and for a b × r
        the user chose (FindConfig warns on those below P(t) = 0.5)."""
        found = self.p_at_threshold
        needed = minima_to_reach(self.threshold)
        if self.chosen != "optimized" or found >= MIN_P_AT_THRESHOLD or needed <= self.num_perm:
            return None
        more = (f"--num-perm {needed} or more" if needed <= MAX_NUM_PERM else
                f"{needed:,} minima, past the most a signature holds ({MAX_NUM_PERM:,})")
        return (f"LSH {self.bands} x {self.rows} finds a pair at the threshold "
                f"t = {self.threshold:g} with P(t) = {found:.3f}, below {MIN_P_AT_THRESHOLD}: "
                f"no b x r with b*r <= K = {self.num_perm} reaches it, so a pair at t is missed "
                f"{1 - found:.0%} of the time. Reaching it needs "
                f"{more}; --method exact finds every pair >= t")

    def as_dict(self) -> dict:
        plan = {"threshold": self.threshold, "num_perm": self.num_perm, "bands": self.bands,
                "rows": self.rows, "steep_point": round(self.steep_point, 4),
                "fp_area": round(self.fp_area, 6), "fn_area": round(self.fn_area, 6),
                "weights": list(self.weights), "chosen": self.chosen,
                "p_at_threshold": round(self.p_at_threshold, 6)}
        warning = self.shortfall()
        if warning is not None:
            plan["warning"] = warning
        return plan

    def describe(self) -> str:
        """A human-readable account of the choice, with the S-curve table."""
        lines = [
            f"LSH: {self.bands} bands x {self.rows} rows = {self.bands * self.rows} of "
            f"{self.num_perm} minima ({self.chosen})",
            f"P(s) = 1 - (1 - s^{self.rows})^{self.bands}; steep point (1/b)^(1/r) = "
            f"{self.steep_point:.3f}; threshold t = {self.threshold}",
            f"false-positive area {self.fp_area:.4f}, false-negative area {self.fn_area:.4f} "
            f"(weights {self.weights[0]}, {self.weights[1]})",
            "     s   P(candidate)",
        ]
        lines += [f"  {s:4.2f}   {p:.4f}" for s, p in self.curve()]
        warning = self.shortfall()
        if warning is not None:
            lines.append(f"warning: {warning}")
        return "\n".join(lines)


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")


def choose_bands(threshold: float, num_perm: int, *, weights=DEFAULT_WEIGHTS,
                 bands: int | None = None, rows: int | None = None) -> BandPlan:
    """b and r for ``threshold`` with K = ``num_perm`` minima (or the user's b, r)."""
    _check_threshold(threshold)
    if num_perm < 1:
        raise ValueError(f"num_perm must be positive, got {num_perm!r}")
    w_fp, w_fn = weights
    for name, value in (("bands", bands), ("rows", rows)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if bands is not None or rows is not None:
        if bands is None or rows is None:
            bands = bands or num_perm // rows
            rows = rows or num_perm // bands
        if bands < 1 or rows < 1 or bands * rows > num_perm:
            raise ValueError(f"bands x rows = {bands} x {rows} must be >= 1 and fit in "
                             f"num_perm = {num_perm}")
        return BandPlan(threshold, num_perm, bands, rows,
                        false_positive_area(threshold, bands, rows),
                        false_negative_area(threshold, bands, rows), tuple(weights), "user")
    b, r, fp, fn = _optimal_shape(float(threshold), int(num_perm), float(w_fp), float(w_fn))
    return BandPlan(threshold, num_perm, b, r, fp, fn, tuple(weights))


@functools.lru_cache(maxsize=64)
def _optimal_shape(threshold: float, num_perm: int, w_fp: float, w_fn: float):
    """(b, r, fp, fn) of least w_fp·fp + w_fn·fn among the shapes with P(t) at least
    MIN_P_AT_THRESHOLD and a steep point at t/2 or above (all of them when none); kept,
    since a run asks several times (config checks, planner, engine) and each integrates
    the curve for every shape."""
    b, r = _band_shapes(num_perm)
    # the floor may lower the steep point, not below t/2: below it the candidates of
    # unrelated documents multiply (at t = 0.3 it would ask for 57 x 2, which makes 13 %
    # of the pairs at s = 0.05 candidates)
    reach = (s_curve(threshold, b, r) >= MIN_P_AT_THRESHOLD) \
        & ((1.0 / b) ** (1.0 / r) >= threshold / 2)
    if reach.any():
        b, r = b[reach], r[reach]
    fp, fn = _curve_areas(threshold, b, r)
    cost = w_fp * fp + w_fn * fn
    best, costs = 0, cost.tolist()  # in (b, r) order, a later shape must win by > 1e-15
    for k, c in enumerate(costs):
        if c < costs[best] - 1e-15:
            best = k
    return int(b[best]), int(r[best]), float(fp[best]), float(fn[best])


def _band_shapes(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (b, r) with b·r ≤ K, ordered by b then r."""
    shapes = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    b, r = np.array(shapes, dtype=np.int64).T
    return b, r


def _curve_areas(threshold: float, b: np.ndarray, r: np.ndarray):
    """(∫_0^t P ds, ∫_t^1 (1 - P) ds) of every shape (b[k], r[k]), all at once."""
    left, right = _GRID[_GRID <= threshold], _GRID[_GRID >= threshold]
    fp = np.zeros(b.size)
    fn = np.zeros(b.size)
    if left.size > 1:
        fp = np.trapezoid(s_curve(left[None, :], b[:, None], r[:, None]), left, axis=1)
    if right.size > 1:
        fn = np.trapezoid(1.0 - s_curve(right[None, :], b[:, None], r[:, None]), right, axis=1)
    return fp, fn


def band_keys(matrix: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) uint64: one hash of each band's r minima, band index mixed in."""
    if bands * rows > matrix.shape[1]:
        raise ValueError(f"{bands} x {rows} rows do not fit in {matrix.shape[1]} minima")
    keys = np.empty((matrix.shape[0], bands), dtype=np.uint64)
    _band_keys(np.ascontiguousarray(matrix), bands, rows, keys)
    return keys


def band_key_column(matrix: np.ndarray, band: int) -> np.ndarray:
    """uint64[n]: :func:`band_keys` of one band alone, ``band_keys(m, b, r)[:, band]``
    for ``matrix`` = that band's r columns ``m[:, band * r:(band + 1) * r]`` (the same
    hash, band index mixed in), so that a caller can hold a band's key at a time."""
    keys = np.empty(matrix.shape[0], dtype=np.uint64)
    _band_key_column(np.ascontiguousarray(matrix), int(band), keys)
    return keys


@dataclass
class CandidateStats:
    buckets_over_limit: int = 0
    largest_bucket: int = 0
    pairs_avoided: int = 0  # pairs an oversized bucket would have emitted, minus those emitted
    per_band: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"buckets_over_limit": self.buckets_over_limit,
                "largest_bucket": self.largest_bucket, "pairs_avoided": self.pairs_avoided}


def candidate_pairs(keys: np.ndarray, *, max_bucket: int = 1000, policy: str = "star"):
    """Pairs (i < j) that share at least one band key.

    Returns (i int64, j int64, stats), sorted by (i, j), each pair once.
    """
    n, bands = keys.shape
    return candidate_pairs_by_band((keys[:, band] for band in range(bands)), n,
                                   max_bucket=max_bucket, policy=policy)


def candidate_pairs_by_band(columns, n: int, *, max_bucket: int = 1000,
                            policy: str = "star"):
    """:func:`candidate_pairs` from the band-key columns one at a time (uint64[n] each).

    Only one band is grouped at a time, so a caller can load each column from disk:
    the peak is one column and its grouping (12 bytes per document, see
    :func:`_shared_key_buckets`), plus each band's pairs (8 bytes each) until they are
    merged, by their first document then their second (:func:`_distinct_pairs`: linear,
    where one sort of every band's pairs is not).
    """
    if policy not in BUCKET_POLICIES:
        raise ValueError(f"bucket policy must be one of {BUCKET_POLICIES}, got {policy!r}")
    if max_bucket < 2:
        raise ValueError(f"max_bucket must be at least 2, got {max_bucket!r}")
    stats = CandidateStats()
    codes = []
    for column in columns:
        order, starts, sizes = _shared_key_buckets(column)
        if sizes.size == 0:
            stats.per_band.append(0)
            continue
        stats.largest_bucket = max(stats.largest_bucket, int(sizes.max()))
        big = sizes > max_bucket
        if big.any():
            stats.buckets_over_limit += int(big.sum())
            full = (sizes[big] * (sizes[big] - 1)) // 2
            kept = sizes[big] - 1 if policy == "star" else 0
            stats.pairs_avoided += int((full - kept).sum())
        band_codes = _bucket_pairs(order.astype(np.int64), starts, sizes, max_bucket,
                                   policy == "star", n)
        stats.per_band.append(band_codes.size)  # a band's pairs are distinct already
        codes.append(band_codes)
    if not codes:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), stats
    every = np.concatenate(codes) if len(codes) > 1 else codes[0]
    codes.clear()  # the bands' own arrays: not held beside their concatenation
    i, j = _distinct_pairs(every, n)
    return i, j, stats


def pairs_in_buckets(bands: np.ndarray, keys: np.ndarray, docs: np.ndarray, n: int, *,
                     max_bucket: int = 1000, policy: str = "star"):
    """:func:`candidate_pairs_by_band` from bucket entries of several bands at once: entry k
    is document ``docs[k]`` with key ``keys[k]`` in band ``bands[k]``, and a bucket is one
    (band, key). Every bucket must be whole in these entries (the Spark engine hashes
    entries by (band, key), so a partition holds whole buckets); then the pairs and the
    stats are the local engine's for those buckets. ``n``: more than the largest document
    number (pairs are coded i * n + j, so n must stay below 3e9).

    Returns (i int64, j int64, stats), sorted by (i, j), each pair once.
    """
    if policy not in BUCKET_POLICIES:
        raise ValueError(f"bucket policy must be one of {BUCKET_POLICIES}, got {policy!r}")
    if max_bucket < 2:
        raise ValueError(f"max_bucket must be at least 2, got {max_bucket!r}")
    stats = CandidateStats()
    empty = np.empty(0, dtype=np.int64)
    if docs.size == 0:
        return empty, empty.copy(), stats
    # an entry whose key no other entry has is a bucket of one: only the entries of a
    # repeated key are sorted by bucket, then by document (one sort of the keys, where a
    # three-key sort of every entry took ten times as long)
    by_key = np.argsort(keys)
    sorted_keys = keys[by_key]
    same = sorted_keys[1:] == sorted_keys[:-1]
    shared = np.zeros(keys.size, dtype=bool)
    shared[1:] |= same
    shared[:-1] |= same
    at = by_key[shared]
    order = at[np.lexsort((docs[at], keys[at], bands[at]))]
    b, k, d = bands[order], keys[order], docs[order].astype(np.int64)
    edges = np.flatnonzero(np.r_[True, (b[1:] != b[:-1]) | (k[1:] != k[:-1]), True])
    sizes = np.diff(edges)
    repeated = sizes > 1
    if not repeated.any():
        return empty, empty.copy(), stats
    run = np.repeat(repeated, sizes)
    members, sizes = d[run], sizes[repeated]
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    stats.largest_bucket = int(sizes.max())
    big = sizes > max_bucket
    if big.any():
        stats.buckets_over_limit = int(big.sum())
        full = (sizes[big] * (sizes[big] - 1)) // 2
        kept = sizes[big] - 1 if policy == "star" else 0
        stats.pairs_avoided = int((full - kept).sum())
    codes = sorted_unique(_bucket_pairs(members, starts, sizes, max_bucket, policy == "star",
                                        n))
    return (codes // n).astype(np.int64), (codes % n).astype(np.int64), stats


def _shared_key_buckets(column: np.ndarray):
    """(members, starts, sizes): the documents whose key another document shares, grouped
    by key with each group in document order, and where each group starts in ``members``
    and how long it is. Groups come by the key's top bits, then by their first document
    (not by key): what is made of them (pairs, counts) does not depend on their order.

    Linear in n: one counting pass and one stable scatter cut the keys by their top bits
    into pieces of about :data:`PIECE` keys, which fit in L2 cache; a small hash table
    groups each piece. A global argsort of n keys misses the cache more as n grows
    (``bench/bench_lsh.py`` times both from 100k to 3M documents).
    """
    column = np.ascontiguousarray(column, dtype=np.uint64)  # a band of (n, b) keys: read once
    if column.size == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    bits = min(16, max(1, math.ceil(math.log2(max(column.size / PIECE, 1.0)))))
    members, sizes = _group_repeated_keys(column, bits)
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return members, starts, sizes


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values; np.unique's hash path in numpy 2.x is ~40x slower here."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if values.size else values


@njit(cache=True)
def _band_keys(matrix, bands, rows, out):
    n = matrix.shape[0]
    for d in range(n):
        for band in range(bands):
            h = mix64(np.uint64(band) + np.uint64(0x9E3779B97F4A7C15))
            for c in range(band * rows, (band + 1) * rows):
                h = mix64(h ^ np.uint64(matrix[d, c]))
            out[d, band] = h


@njit(cache=True)
def _band_key_column(matrix, band, out):
    for d in range(matrix.shape[0]):  # as _band_keys does for one band
        h = mix64(np.uint64(band) + np.uint64(0x9E3779B97F4A7C15))
        for c in range(matrix.shape[1]):
            h = mix64(h ^ np.uint64(matrix[d, c]))
        out[d] = h


@njit(cache=True)
def _bucket_pairs(order, starts, sizes, max_bucket, star, n):
    total = 0
    for g in range(starts.size):
        m = sizes[g]
        if m <= max_bucket:
            total += m * (m - 1) // 2
        elif star:
            total += m - 1
    out = np.empty(total, dtype=np.int64)
    w = 0
    for g in range(starts.size):
        m = sizes[g]
        s = starts[g]
        if m <= max_bucket:
            for x in range(m):
                a = order[s + x]
                for y in range(x + 1, m):
                    b = order[s + y]
                    out[w] = min(a, b) * n + max(a, b)
                    w += 1
        elif star:
            # the bucket's first member in sort order, stable: its smallest index
            hub = order[s]
            for y in range(1, m):
                b = order[s + y]
                out[w] = min(hub, b) * n + max(hub, b)
                w += 1
    return out


@njit(cache=True)
def _group_repeated_keys(column, bits):
    """(members int64, sizes int64) of :func:`_shared_key_buckets`, from 2^bits pieces."""
    n = column.size
    shift = np.uint64(64 - bits)
    bounds = np.zeros((1 << bits) + 1, dtype=np.int64)
    for d in range(n):
        bounds[(column[d] >> shift) + np.uint64(1)] += 1
    largest = 0
    for p in range(1 << bits):
        largest = max(largest, bounds[p + 1])
        bounds[p + 1] += bounds[p]
    keys = np.empty(n, dtype=np.uint64)
    docs = np.empty(n, dtype=np.uint32)  # n < 2^32: pairs are coded i * n + j in 63 bits
    fill = bounds[:-1].copy()
    for d in range(n):  # stable: each piece in document order
        p = column[d] >> shift
        w = fill[p]
        keys[w] = column[d]
        docs[w] = d
        fill[p] = w + 1
    table = 2
    while table < 2 * largest:
        table *= 2
    slots = np.empty(table, dtype=np.int64)
    piece_keys = np.empty(largest, dtype=np.uint64)
    piece_docs = np.empty(largest, dtype=np.uint32)
    size = np.empty(largest, dtype=np.int64)  # at a key's first entry: its count, else 0
    link = np.empty(largest, dtype=np.int64)  # the next entry of the same key, or -1
    tail = np.empty(largest, dtype=np.int64)  # at a key's first entry: its last entry
    written = groups = 0  # members go to docs[:written], sizes to keys[:groups]: behind lo
    for p in range(1 << bits):
        lo, m = bounds[p], bounds[p + 1] - bounds[p]
        if m < 2:
            continue
        piece_keys[:m] = keys[lo:lo + m]
        piece_docs[:m] = docs[lo:lo + m]
        mask = 2
        while mask < 2 * m:
            mask *= 2
        mask -= 1
        slots[:mask + 1] = -1
        for e in range(m):
            key = piece_keys[e]
            h = np.int64(mix64(key) & np.uint64(mask))
            while slots[h] >= 0 and piece_keys[slots[h]] != key:
                h = (h + 1) & mask
            link[e] = -1
            if slots[h] < 0:
                slots[h] = e
                size[e], tail[e] = 1, e
            else:
                first = slots[h]
                size[e] = 0
                size[first] += 1
                link[tail[first]] = e
                tail[first] = e
        for e in range(m):
            if size[e] < 2:
                continue
            keys[groups] = size[e]
            groups += 1
            x = e
            while x >= 0:
                docs[written] = piece_docs[x]
                written += 1
                x = link[x]
    return docs[:written].astype(np.int64), keys[:groups].astype(np.int64)


@njit(cache=True)
def _distinct_pairs(codes, n):
    """(i int64, j int64): the distinct pairs of ``codes`` (i * n + j), sorted by (i, j).

    A counting sort on i (n counters, one pass to count and one to place each j), then
    each document's few partners sorted and deduplicated in cache: linear in the pairs,
    where a global sort of them is not.
    """
    starts = np.zeros(n + 1, dtype=np.int64)
    for c in codes:
        starts[c // n + 1] += 1
    for d in range(n):
        starts[d + 1] += starts[d]
    partners = np.empty(codes.size, dtype=np.uint32)  # n < 2^32 (codes fit in 63 bits)
    fill = starts[:-1].copy()
    for c in codes:
        i = c // n
        partners[fill[i]] = c - i * n
        fill[i] += 1
    kept = 0
    for d in range(n):  # sort each run, then keep its distinct values, moved down in place
        run = partners[starts[d]:starts[d + 1]]
        run.sort()
        for x in range(run.size):
            if x == 0 or run[x] != run[x - 1]:
                partners[kept] = run[x]
                kept += 1
        fill[d] = kept  # the distinct partners of documents <= d end here
    i = np.empty(kept, dtype=np.int64)
    j = np.empty(kept, dtype=np.int64)
    w = 0
    for d in range(n):
        while w < fill[d]:
            i[w] = d
            j[w] = partners[w]
            w += 1
    return i, j
