import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cluster import choose_representatives, cluster_labels
from neardup.shingling import ShingleSets
from neardup.verify import exact_jaccard, intersection_sizes


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sets(st.integers(0, 30), max_size=20), min_size=2, max_size=8))
def test_exact_jaccard_equals_python_sets(sets_):
    sets = ShingleSets.from_sets(sets_)
    n = len(sets_)
    i, j = np.triu_indices(n, k=1)
    got = exact_jaccard(sets, i, j)
    want = [len(sets_[a] & sets_[b]) / len(sets_[a] | sets_[b]) if sets_[a] | sets_[b] else 0.0
            for a, b in zip(i, j)]
    assert np.allclose(got, want)
    assert list(intersection_sizes(sets, i, j)) == [len(sets_[a] & sets_[b])
                                                    for a, b in zip(i, j)]


def test_labels_are_smallest_member_and_deterministic():
    labels = cluster_labels(7, np.array([5, 1, 2]), np.array([6, 3, 3]))
    assert list(labels) == [0, 1, 1, 1, 4, 5, 5]


def test_representative_policies():
    labels = np.array([0, 0, 0, 3, 3])
    lengths = np.array([10, 30, 30, 5, 1])
    assert list(choose_representatives(labels, "first")) == [True, False, False, True, False]
    assert list(choose_representatives(labels, "longest", lengths)) == [False, True, False,
                                                                         True, False]
    assert list(choose_representatives(labels, "shortest", lengths)) == [True, False, False,
                                                                          False, True]
    field = np.array(["b", "a", "c", "z", "y"])
    assert list(choose_representatives(labels, "field", field)) == [False, True, False,
                                                                     False, True]
    with pytest.raises(ValueError, match="policy"):
        choose_representatives(labels, "random")


@pytest.mark.parametrize("seed", range(5))
def test_union_find_labels_equal_scipy_components(seed):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    m = int(rng.integers(0, 2 * n))
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    _, component = connected_components(coo_matrix((np.ones(m), (i, j)), shape=(n, n)),
                                        directed=False)
    smallest = np.full(component.max() + 1, n)
    np.minimum.at(smallest, component, np.arange(n))
    assert np.array_equal(cluster_labels(n, i, j), smallest[component])
