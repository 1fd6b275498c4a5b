"""Containment by MinHash LSH: size classes bound the Jaccard a contained pair can have.

C(A, B) = |A ∩ B| / min(|A|, |B|) ≥ t (see :mod:`neardup.verify`). For |A| ≤ |B|,
R = |B| / |A| and |A ∩ B| = C·|A|,

    J(A, B) = C·|A| / (|A| + |B| − C·|A|) = C / (1 + R − C) ≥ t / (1 + R − t),

so a contained pair is a Jaccard pair once R is bounded, and MinHash LSH (which finds
pairs by Jaccard) can find it. As in LSH Ensemble (Zhu, Nargesian, Pu, Miller, VLDB
2016), the distinct sets are partitioned by size so that every pair of partitions has
its own bound: class c holds the sets of size [2^c, 2^(c+1)), and for classes i ≤ j

    R_ij = (largest size in class j) / (smallest size in class i),
    t_ij = t / (1 + R_ij − t),

the lowest Jaccard of a pair with C ≥ t and one set in each (both in i when i = j).
The signatures (the run's K, seed and family, computed once) are banded with b × r from
:func:`neardup.lsh.choose_bands` for t_ij (rounded down to 0.01, so class pairs share
plans), steep point below t_ij as for Jaccard, on the sets of classes i and j; the
pairs across the two classes that share a band key are the class pair's candidates.
Candidates of all class pairs (a set pair falls in exactly one) are verified with
:func:`neardup.verify.exact_containment`.

Where LSH is hopeless the exact join runs instead: when t_ij < ``MIN_LSH_JACCARD``
(0.25; there K = 128 takes 64 × 2 and P(0.1) is already 0.47, and below 0.21 it takes
r = 1: a candidate is any pair sharing one of b minima, about every overlapping pair),
LSH would cost more than the join and still miss pairs. Those class pairs (i far below
j: a small document inside one many times its size, whose Jaccard can be near 0) go to
:func:`neardup.allpairs.all_pairs` restricted to them (``smaller_than``): every such
pair ≥ t is found, none is skipped. At t = 0.8 and 0.9 same-class pairs (R < 2:
t_ii ≥ 0.36) use LSH, and adjacent classes (R near 4: 0.19-0.23) and beyond the join;
at t = 0.95 (R = 3.9: 0.24) still the join. Below t = 0.6 even one class (R near 2)
is under 0.25: the search is then (nearly) all the join.

Why classes of ratio 2: a pair's R_ij is up to 4× its own size ratio for neighbouring
classes (2× inside one class), so a finer ratio raises t_ij for some class pairs but
multiplies them, each a banding pass and a band choice, and near-equal sizes across a
class edge still get a loose bound. Measured on Go's tree (word 5-grams, t = 0.8, the
5,014 sets of 5+ shingles): ratio 2 gave 145k LSH candidates over 15 banded class pairs,
√2 389k over 83 and 1.25 302k over 167, for recall 100 %, 99.995 % and 99.95 %. R_ij
uses the sizes found in each class (not the class edges), so a class of near-equal sizes
gets t_ii close to t / (2 − t).

Cost: the signatures, one banding pass per banded class pair over its two classes, and
the exact join over the sets that take part in a far class pair, which ranks all their
elements (its main cost on long documents). So this path pays off when sizes are close
(20,000 generated 200-word documents at t = 0.8: 0.09 s against the join's 0.26 s) and
not when small files lie inside far larger ones: on Go's tree 18,800 of its 20,684 pairs
of distinct sets are such, the join runs for them anyway, and the path took 1.18 s
against the join's 0.72 s (BENCHMARKS.md, bench/bench_sketches.py --containment-lsh).

What is exact and what is estimated:
- every reported pair's containment (and Jaccard) is exact, computed from the sets;
- pairs of classes handed to the exact join are all found;
- a pair of Jaccard J in an LSH class pair is a candidate with probability
  P(J) = 1 − (1 − J^r)^b for that class pair's b × r (:func:`neardup.lsh.s_curve`);
  with J ≥ t_ij, P ≥ P(t_ij), which the band choice puts near 1 (at K = 128: ≥ 0.95
  for every t_ij in 0.25-0.98, lowest at 0.41); the loose R_ij puts most contained pairs
  well above t_ij. Oversized buckets (``max_bucket``) can lose more, and are counted.

Shapes: ``sizes`` int64[n] of the distinct sets; signatures uint32[n, K]; candidates
two int64 arrays of local set indices (i < j), sorted, each pair once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import allpairs, lsh
from .shingling import ShingleSets

CLASS_RATIO = 2  # class c: sizes [2^c, 2^(c+1))
MIN_LSH_JACCARD = 0.25  # below it a class pair runs on the exact join


@dataclass(frozen=True)
class ClassPair:
    """Two size classes (small ≤ large) and how their cross pairs are searched."""

    small: int
    large: int
    ratio: float  # R: the largest size in ``large`` over the smallest in ``small``
    jaccard_floor: float  # t / (1 + R − t)
    plan: lsh.BandPlan | None  # None: the exact join

    def as_dict(self) -> dict:
        return {"classes": [self.small, self.large], "ratio": round(self.ratio, 3),
                "jaccard_floor": round(self.jaccard_floor, 4),
                "method": "exact" if self.plan is None else
                f"lsh {self.plan.bands}x{self.plan.rows}"}


def size_classes(sizes: np.ndarray, ratio: float = CLASS_RATIO) -> np.ndarray:
    """int64[n]: floor(log_ratio |A|) of each set (sizes ≥ 1).

    Any size-monotone split is sound, since R_ij is taken from the sizes found in
    each class, so float rounding at a class edge only moves a set to its neighbour.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size and sizes.min() < 1:
        raise ValueError("size classes need non-empty sets")
    if not ratio > 1:
        raise ValueError(f"the class ratio must be > 1, got {ratio!r}")
    if ratio == 2:  # exactly, from the float exponent
        return (np.frexp(sizes.astype(np.float64))[1] - 1).astype(np.int64)
    return np.floor(np.log(sizes) / np.log(ratio)).astype(np.int64)


def jaccard_floor(threshold: float, ratio) -> np.ndarray:
    """t / (1 + R − t): the lowest Jaccard of a pair with containment ≥ t and size ratio ≤ R."""
    return threshold / (1.0 + np.asarray(ratio, dtype=np.float64) - threshold)


def plan_class_pairs(sizes: np.ndarray, threshold: float, num_perm: int, *,
                     weights=lsh.DEFAULT_WEIGHTS, class_ratio: float = CLASS_RATIO
                     ) -> list[ClassPair]:
    """Every pair of non-empty classes (i ≤ j), with its R_ij, t_ij and b × r (or exact)."""
    classes = size_classes(sizes, class_ratio)
    present = np.unique(classes)
    smallest = {int(c): int(sizes[classes == c].min()) for c in present}
    largest = {int(c): int(sizes[classes == c].max()) for c in present}
    out = []
    for a, i in enumerate(present.tolist()):
        for j in present[a:].tolist():
            ratio = largest[j] / smallest[i]
            floor = float(jaccard_floor(threshold, ratio))
            # rounded down: a lower threshold only adds candidates; few distinct plans
            plan = (lsh.choose_bands(math.floor(floor * 100) / 100, num_perm,
                                     weights=weights)
                    if floor >= MIN_LSH_JACCARD else None)
            out.append(ClassPair(i, j, ratio, floor, plan))
    return out


@dataclass
class ContainmentSearch:
    """What :func:`candidate_pairs` did: the class pairs, and candidates from each side."""

    class_pairs: list[ClassPair]
    class_ratio: float = CLASS_RATIO
    lsh_candidates: int = 0
    exact_pairs: int = 0
    stats: lsh.CandidateStats = field(default_factory=lsh.CandidateStats)
    seconds: dict = field(default_factory=dict)  # "lsh", "exact join"

    def as_dict(self) -> dict:
        lsh_pairs = [c for c in self.class_pairs if c.plan is not None]
        return {"class_ratio": self.class_ratio, "min_lsh_jaccard": MIN_LSH_JACCARD,
                "class_pairs_lsh": len(lsh_pairs),
                "class_pairs_exact": len(self.class_pairs) - len(lsh_pairs),
                "lowest_lsh_jaccard_floor": (round(min(c.jaccard_floor for c in lsh_pairs), 4)
                                             if lsh_pairs else None),
                "lsh_candidates": self.lsh_candidates, "exact_pairs": self.exact_pairs,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}


def candidate_pairs(sets: ShingleSets, matrix: np.ndarray, threshold: float, *,
                    weights=lsh.DEFAULT_WEIGHTS, max_bucket: int = 1000,
                    policy: str = "star", class_ratio: float = CLASS_RATIO
                    ) -> tuple[np.ndarray, np.ndarray, ContainmentSearch]:
    """Candidate pairs (i < j) for containment ≥ ``threshold`` among ``sets`` (distinct,
    non-empty) with MinHash ``matrix`` (n, K): LSH per class pair, the exact join where
    LSH is hopeless (see the module docstring). The exact join's pairs are ≥ t already;
    the caller verifies all of them alike.
    """
    started = time.perf_counter()
    sizes = sets.sizes
    if sets.n < 2:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), ContainmentSearch([], class_ratio)
    classes = size_classes(sizes, class_ratio)
    class_pairs = plan_class_pairs(sizes, threshold, matrix.shape[1], weights=weights,
                                   class_ratio=class_ratio)
    search = ContainmentSearch(class_pairs, class_ratio)
    found_i, found_j = [], []
    for pair in class_pairs:
        if pair.plan is None:
            continue
        members = np.flatnonzero((classes == pair.small) | (classes == pair.large))
        keys = lsh.band_keys(matrix[members], pair.plan.bands, pair.plan.rows)
        li, lj, stats = lsh.candidate_pairs(keys, max_bucket=max_bucket, policy=policy)
        _add_stats(search.stats, stats)
        ci, cj = members[li], members[lj]
        if pair.small != pair.large:  # pairs inside one class belong to its own pass
            across = classes[ci] != classes[cj]
            ci, cj = ci[across], cj[across]
        found_i.append(ci)
        found_j.append(cj)
    search.lsh_candidates = int(sum(c.size for c in found_i))
    search.seconds["lsh"] = time.perf_counter() - started

    bound = _exact_bound(sizes, classes, class_pairs)
    larger = bound > sizes.min()  # sets with a partner class on the join
    if larger.any():
        # only the sets that can take part are ranked and joined: the larger ones, and
        # those small enough to be inside one of them
        taking_part = np.flatnonzero(larger | (sizes < bound[larger].max()))
        ei, ej, _ = allpairs.all_pairs(sets.subset(taking_part), threshold, "containment",
                                       smaller_than=bound[taking_part])
        ei, ej = taking_part[ei], taking_part[ej]
        search.exact_pairs = int(ei.size)
        found_i.append(ei)
        found_j.append(ej)
    search.seconds["exact join"] = time.perf_counter() - started - search.seconds["lsh"]
    if not found_i:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), search
    ci, cj = np.concatenate(found_i), np.concatenate(found_j)
    order = np.lexsort((cj, ci))
    return ci[order], cj[order], search


def _exact_bound(sizes: np.ndarray, classes: np.ndarray,
                 class_pairs: list[ClassPair]) -> np.ndarray:
    """int64[n]: for a set in class j, the size below which its smaller partners go to the
    exact join: the smallest size in the smallest class i with an LSH pass (i, j).

    t_ij rises with i (the smallest size of class i grows), so the exact classes of j
    are those below one class; without an LSH pass for j at all, its own class too.
    """
    first_lsh = {}
    for pair in class_pairs:
        if pair.plan is not None:
            first_lsh[pair.large] = min(first_lsh.get(pair.large, pair.small), pair.small)
    present = np.unique(classes)
    lookup = np.zeros(int(present.max()) + 1, dtype=np.int64)
    for j in present.tolist():
        if j in first_lsh:
            lookup[j] = sizes[classes == first_lsh[j]].min()
        else:
            lookup[j] = sizes[classes == j].max() + 1
    return lookup[classes]


def _add_stats(total: lsh.CandidateStats, stats: lsh.CandidateStats) -> None:
    total.buckets_over_limit += stats.buckets_over_limit
    total.largest_bucket = max(total.largest_bucket, stats.largest_bucket)
    total.pairs_avoided += stats.pairs_avoided
