"""Clusters of the verified pairs, and one representative each.

Two policies (``CLUSTER_POLICIES``):

- ``"components"``: connected components. Near-duplicate is not transitive: a
  component can hold a and c with J(a, c) < t when both are close to b, and a chain
  of versions v_0, v_1, ..., each an edit of the previous, is one component however
  far v_0 is from the last; each pair reported was still verified.
- ``"center"``: star clustering (Aslam, Pelekhov, Rus 2004, "The star clustering
  algorithm for static and dynamic information organization", JGAA 8(1)), the
  greedy cover that Hassanzadeh, Chiang, Lee, Miller 2009 ("Framework for evaluating
  clustering algorithms in duplicate detection", VLDB) evaluate next to CENTER
  (Haveliwala et al. 2000). Clusters do not chain: every member has a verified
  pair with its cluster's centre, so it is ≥ t to the document kept for it. See
  :func:`center_clusters` for the order, which makes it deterministic.

``find`` clusters by components unless told (:class:`neardup.config.FindConfig`);
``dedup`` by centres (``DEDUP_CLUSTERS``), since what it removes is gone from the copy.

Labels are deterministic: a cluster's label is the smallest document index in
it, so the same pairs always give the same labels. A document in no pair is a
cluster of one.
"""

from __future__ import annotations

import numpy as np

from ._core.jit import njit

REPRESENTATIVE_POLICIES = ("first", "longest", "shortest", "field")
CLUSTER_POLICIES = ("components", "center")
# dedup's clusters, on every engine: a document is removed only for a kept one >= t to it
# (components would remove the far end of a chain of edits for its first version)
DEDUP_CLUSTERS = "center"
# which documents of a cluster a dedup writes: its representative (the default), every one
# (with --annotate, to mark the duplicates instead of removing them), or none of a cluster
# of two or more (every member of a duplicated cluster goes)
KEEP_POLICIES = ("representative", "all", "none")


def cluster_labels(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """int64[n]: for each document, the smallest document index in its component.

    Union-find in numba: a union hangs the larger root under the smaller, so every
    root is its component's smallest index; path halving keeps the trees flat.
    """
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    if i.shape != j.shape:
        raise ValueError("i and j must have the same shape")
    if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
        raise ValueError(f"pair indices must lie in [0, {n})")
    return _components(n, i, j)


@njit(cache=True)
def _root(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def _components(n, i, j):
    parent = np.arange(n)
    for k in range(i.size):
        a = _root(parent, i[k])
        b = _root(parent, j[k])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    for d in range(n):  # parents come before children: one pass makes every entry a root
        parent[d] = parent[parent[d]]
    return parent


def choose_representatives(labels: np.ndarray, policy: str = "first",
                           key: np.ndarray | None = None) -> np.ndarray:
    """bool[n]: True for the one document kept per cluster.

    policy "first": the earliest document in input order; "longest"/"shortest":
    by ``key`` (e.g. text length or shingle count), ties to the earliest;
    "field": the document with the smallest ``key`` value (e.g. a date or a
    priority column), ties to the earliest.
    """
    if policy not in REPRESENTATIVE_POLICIES:
        raise ValueError(f"representative policy must be one of {REPRESENTATIVE_POLICIES}, "
                         f"got {policy!r}")
    n = labels.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    index = np.arange(n, dtype=np.int64)
    if policy == "first":
        primary = index
    else:
        if key is None or len(key) != n:
            raise ValueError(f"policy {policy!r} needs a key with one value per document")
        key = np.asarray(key)
        primary = -key if policy == "longest" else key
    # sort by (label, primary, index); the first of each label wins
    order = np.lexsort((index, primary, labels))
    first = np.r_[True, labels[order][1:] != labels[order][:-1]]
    keep = np.zeros(n, dtype=bool)
    keep[order[first]] = True
    return keep


def center_clusters(head: np.ndarray, set_i: np.ndarray, set_j: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Star clusters over the pairs of distinct sets: (labels int64[n], centre int64[n]).

    ``head``: each document's identical group head (-1: in no pair, a cluster of its
    own); ``set_i``, ``set_j``: the verified pairs of distinct sets, between heads (the
    arrays of a :class:`neardup.pairs.PairSet`). ``centre[d]`` is the head of the
    centre group of d's cluster (d itself for a document in no pair); ``labels`` the
    smallest document index of each cluster.

    The greedy star cover (Aslam et al. 2004): groups are visited by descending
    degree, counted in documents (the documents of its neighbouring groups plus its own
    copies), ties in input order (the smaller head first, as CENTER visits input
    order); an unassigned group becomes a centre and takes every unassigned neighbour
    as a satellite, with all their copies. Visiting the best-connected first is the
    greedy set-cover order, so few centres cover many documents (ln Δ of the fewest
    possible, Δ the largest degree, for the dynamic-degree variant; the static order
    used here is Aslam's). Guarantees: a satellite group has a verified pair with its
    centre group (similarity ≥ t), a copy is identical to its head, and an identical
    group is never split. No two centres have a pair: a centre was unassigned when
    visited, so no earlier centre is its neighbour. Cost: one sort of the groups and one
    pass over the adjacency (numba).
    """
    head = np.ascontiguousarray(head, dtype=np.int64)
    set_i = np.ascontiguousarray(set_i, dtype=np.int64)
    set_j = np.ascontiguousarray(set_j, dtype=np.int64)
    n = head.size
    in_pairs = head >= 0
    group_size = np.bincount(head[in_pairs], minlength=n).astype(np.int64)
    source = np.concatenate([set_i, set_j])
    target = np.concatenate([set_j, set_i])
    order = np.argsort(source, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=offsets[1:])
    neighbours = target[order]
    degree = group_size - 1 + np.bincount(source, weights=group_size[target],
                                          minlength=n).astype(np.int64)
    heads = np.flatnonzero(in_pairs & (head == np.arange(n)))
    visit = heads[np.lexsort((heads, -degree[heads]))]
    centre_of_group = _star_cover(n, visit, offsets, neighbours)
    centre = np.arange(n, dtype=np.int64)
    centre[in_pairs] = centre_of_group[head[in_pairs]]
    return cluster_labels(n, np.arange(n, dtype=np.int64), centre), centre


@njit(cache=True)
def _star_cover(n, visit, offsets, neighbours):
    centre = np.full(n, -1, dtype=np.int64)
    for k in range(visit.size):
        g = visit[k]
        if centre[g] >= 0:
            continue
        centre[g] = g
        for e in range(offsets[g], offsets[g + 1]):
            h = neighbours[e]
            if centre[h] < 0:
                centre[h] = g
    return centre


def anchored_cover(head: np.ndarray, set_i: np.ndarray, set_j: np.ndarray,
                   jaccard: np.ndarray, free: int, rank: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Which free documents a dedup against kept ones removes, and for which document:
    (matched int64[free], similarity float64[free]); matched -1: kept.

    Documents ``free``.. n-1 are anchored (an index's documents: kept whatever they pair
    with, each its own group); documents 0..free-1 are visited by ascending ``rank``
    (int64[free], a permutation), a group of identical sets at its first member's rank.
    A visited group is removed when it has a verified pair with an anchored document or
    with a group kept before it; it is then matched to the best such document (highest
    Jaccard, ties to an anchored one, then the smallest number). Otherwise its first
    member is kept and its copies are matched to it at similarity 1. So every removed
    document is ≥ t (the pairs' threshold) to a document that stays, and no two kept
    free documents have a pair: the rule of star clusters whose centres include every
    anchored document (:func:`center_clusters`), without components' chains.
    ``head``, ``set_i``, ``set_j``, ``jaccard``: a :class:`neardup.pairs.PairSet`'s.
    """
    head = np.ascontiguousarray(head, dtype=np.int64)
    n = head.size
    rank = np.ascontiguousarray(rank, dtype=np.int64)
    members = np.flatnonzero(head[:free] >= 0)
    by_rank = members[np.lexsort((members, rank[members], head[members]))]
    first = np.r_[True, head[by_rank][1:] != head[by_rank][:-1]] if by_rank.size \
        else np.zeros(0, dtype=bool)
    leader = np.arange(n, dtype=np.int64)  # a free group's first member by rank
    leader[head[by_rank[first]]] = by_rank[first]
    visit = head[by_rank[first]]
    visit = visit[np.argsort(rank[leader[visit]], kind="stable")]
    source = np.concatenate([set_i, set_j]).astype(np.int64)
    order = np.argsort(source, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=offsets[1:])
    neighbours = np.concatenate([set_j, set_i]).astype(np.int64)[order]
    weights = np.concatenate([jaccard, jaccard]).astype(np.float64)[order]
    group_match, group_similarity = _anchored_cover(n, free, visit, leader, offsets,
                                                    neighbours, weights)
    matched = np.full(free, -1, dtype=np.int64)
    similarity = np.full(free, np.nan)
    grouped = head[:free] >= 0
    docs = np.flatnonzero(grouped)
    g = head[docs]
    removed = group_match[g] >= 0
    matched[docs[removed]] = group_match[g[removed]]
    similarity[docs[removed]] = group_similarity[g[removed]]
    copy = ~removed & (leader[g] != docs)
    matched[docs[copy]] = leader[g[copy]]
    similarity[docs[copy]] = 1.0
    return matched, similarity


@njit(cache=True)
def _anchored_cover(n, free, visit, leader, offsets, neighbours, weights):
    kept = np.zeros(n, dtype=np.bool_)
    kept[free:] = True
    match = np.full(n, -1, dtype=np.int64)
    similarity = np.full(n, np.nan)
    for k in range(visit.size):
        g = visit[k]
        best, best_j, best_anchored = -1, -1.0, False
        for e in range(offsets[g], offsets[g + 1]):
            h = neighbours[e]
            if not kept[h]:
                continue
            doc = h if h >= free else leader[h]
            j = weights[e]
            anchored = h >= free
            if (best < 0 or j > best_j or (j == best_j and anchored and not best_anchored)
                    or (j == best_j and anchored == best_anchored and doc < best)):
                best, best_j, best_anchored = doc, j, anchored
        if best >= 0:
            match[g], similarity[g] = best, best_j
        else:
            kept[g] = True
    return match, similarity


def center_representatives(head: np.ndarray, centre: np.ndarray, policy: str = "first",
                           key: np.ndarray | None = None) -> np.ndarray:
    """bool[n]: the one document kept per star cluster, a document of its centre group.

    The centre is a group of identical sets; ``policy`` and ``key`` choose among them as
    :func:`choose_representatives` does among a cluster (all are ≥ t to every member).
    """
    n = head.size
    own = np.arange(n, dtype=np.int64)
    group = np.where(head >= 0, head, own)
    return choose_representatives(group, policy, key) & (centre == group)


def member_similarities(sets, labels: np.ndarray, representative: np.ndarray,
                        measure: str = "jaccard"
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(member, kept, similarity): every document not kept, the document kept in its
    cluster, and their exact ``measure`` (:func:`neardup.verify.exact_similarity`;
    ``measure=None``: no similarity, None, for a caller that measures it otherwise).

    Under "center" every similarity is ≥ t; under "components" a chain shows here as
    a member far below t from the document kept for it.
    """
    from .verify import exact_similarity

    kept_of_label = np.full(labels.size, -1, dtype=np.int64)
    kept = np.flatnonzero(representative)
    kept_of_label[labels[kept]] = kept
    member = np.flatnonzero(~representative)
    kept_for = kept_of_label[labels[member]]
    if measure is None:
        return member, kept_for, None
    return member, kept_for, exact_similarity(sets, member, kept_for, measure)


def dedup_outcomes(labels: np.ndarray, representative: np.ndarray, head: np.ndarray,
                   set_i: np.ndarray, set_j: np.ndarray, jaccard: np.ndarray,
                   keep: str = "representative"
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What a dedup does with each of n documents: (cluster_size int64[n], kept bool[n],
    duplicate_of int64[n], similarity float64[n]).

    ``labels``, ``representative``: a run's clusters; ``head``, ``set_i``, ``set_j``,
    ``jaccard``: its :class:`neardup.pairs.PairSet` (the pairs of distinct sets between
    group heads, i < j). ``kept[d]``, under ``keep`` (:data:`KEEP_POLICIES`):
    "representative" and "all", d is its cluster's representative (with "all" every
    document is written, and ``kept`` marks those the default keeps); "none", d's
    cluster is d alone.

    ``duplicate_of[d]``: the representative of d's cluster for every other member (under
    star clusters its centre: the document kept in its place), -1 for a representative
    (a document in no pair included), whatever ``keep``. ``similarity[d]``: their exact
    Jaccard, read from the run, not estimated: 1.0 inside an identical group, the
    verified pair's Jaccard between two groups; NaN for a representative and where the
    run verified no pair between the two (components can chain a member to its
    representative through others; star clusters never do). Cost: a bincount and a
    binary search of the members in the sorted pairs.
    """
    if keep not in KEEP_POLICIES:
        raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {keep!r}")
    labels = np.asarray(labels, dtype=np.int64)
    representative = np.asarray(representative, dtype=bool)
    head = np.asarray(head, dtype=np.int64)
    n = labels.size
    size = np.bincount(labels, minlength=n).astype(np.int64)[labels]
    kept_of_label = np.full(n, -1, dtype=np.int64)
    kept = np.flatnonzero(representative)
    kept_of_label[labels[kept]] = kept
    member = np.flatnonzero(~representative)
    duplicate_of = np.full(n, -1, dtype=np.int64)
    duplicate_of[member] = kept_of_label[labels[member]]
    similarity = np.full(n, np.nan)
    a, b = head[member], head[duplicate_of[member]]
    grouped = (a >= 0) & (b >= 0)
    same = grouped & (a == b)
    similarity[member[same]] = 1.0
    between = np.flatnonzero(grouped & ~same)
    if between.size and np.size(set_i):
        lo, hi = np.minimum(a[between], b[between]), np.maximum(a[between], b[between])
        keys = np.asarray(set_i, dtype=np.int64) * n + np.asarray(set_j, dtype=np.int64)
        order = np.argsort(keys, kind="stable")  # sorted already on every engine: cheap
        wanted = lo * n + hi
        at = np.minimum(np.searchsorted(keys, wanted, sorter=order), keys.size - 1)
        found = keys[order[at]] == wanted
        similarity[member[between[found]]] = np.asarray(jaccard, dtype=np.float64)[
            order[at[found]]]
    kept_mask = size == 1 if keep == "none" else representative.copy()
    return size, kept_mask, duplicate_of, similarity
