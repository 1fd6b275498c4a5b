"""Clusters: connected components of the verified pairs, and one representative each.

Labels are deterministic: a cluster's label is the smallest document index in
it, so the same pairs always give the same labels. A document in no pair is a
cluster of one. Near-duplicate is not transitive: a cluster can hold a and c
with J(a, c) < t when both are close to b; each pair reported was verified.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

REPRESENTATIVE_POLICIES = ("first", "longest", "shortest", "field")


def cluster_labels(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """int64[n]: for each document, the smallest document index in its component."""
    if n == 0:
        return np.empty(0, dtype=np.int64)
    graph = coo_matrix((np.ones(i.size, dtype=np.int8), (i, j)), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    smallest = np.full(component.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, component, np.arange(n, dtype=np.int64))
    return smallest[component]


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
