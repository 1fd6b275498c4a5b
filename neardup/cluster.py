"""Clusters: connected components of the verified pairs, and one representative each.

Labels are deterministic: a cluster's label is the smallest document index in
it, so the same pairs always give the same labels. A document in no pair is a
cluster of one. Near-duplicate is not transitive: a cluster can hold a and c
with J(a, c) < t when both are close to b; each pair reported was verified.
"""

from __future__ import annotations

import numba as nb
import numpy as np

REPRESENTATIVE_POLICIES = ("first", "longest", "shortest", "field")


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


@nb.njit(cache=True)
def _root(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@nb.njit(cache=True)
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
