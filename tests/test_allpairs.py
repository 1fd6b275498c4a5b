"""The exact join finds exactly the pairs brute force finds, with the same Jaccard values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.allpairs import (
    all_pairs,
    estimate_exact_cost,
    indexing_prefix_lengths,
    probing_prefix_lengths,
    rank_sets,
    rank_sets_numpy,
)
from neardup.shingling import ShingleOptions, ShingleSets, shingle

THRESHOLDS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def brute_force(sets: list[set[int]], threshold: float) -> dict[tuple[int, int], float]:
    """All pairs by Python sets; J of two empty sets is 0."""
    pairs = {}
    for a, b in itertools.combinations(range(len(sets)), 2):
        union = len(sets[a] | sets[b])
        if union and len(sets[a] & sets[b]) / union >= threshold:
            pairs[(a, b)] = len(sets[a] & sets[b]) / union
    return pairs


def sparse_brute_force(sets: ShingleSets, threshold: float):
    """All pairs by A·Aᵀ over the binary set-element matrix (intersection sizes)."""
    _, columns = np.unique(sets.values, return_inverse=True)
    matrix = sp.csr_matrix(
        (np.ones(sets.values.size, dtype=np.int32), columns.reshape(-1), sets.offsets),
        shape=(sets.n, columns.max(initial=-1) + 1),
    )
    common = sp.triu(matrix @ matrix.T, k=1).tocoo()
    sizes = sets.sizes
    jaccard = common.data / (sizes[common.row] + sizes[common.col] - common.data)
    keep = jaccard >= threshold
    return {
        (int(a), int(b)): float(c)
        for a, b, c in zip(common.row[keep], common.col[keep], jaccard[keep], strict=True)
    }


def as_dict(result) -> dict[tuple[int, int], float]:
    i, j, jaccard = result
    return {(a, b): c for a, b, c in zip(i.tolist(), j.tolist(), jaccard.tolist(), strict=True)}


@settings(max_examples=150, deadline=None)
@given(
    collection=st.lists(
        st.one_of(
            st.sets(st.integers(0, 12), max_size=12),
            st.sets(st.integers(0, 40), max_size=30),
        ),
        max_size=25,
    ),
    threshold=st.one_of(st.sampled_from(THRESHOLDS), st.floats(0.01, 1.0)),
)
def test_same_pairs_and_values_as_brute_force(collection, threshold):
    # Small universes so that overlaps, ties and exact hits of t are frequent.
    sets = ShingleSets.from_sets(collection)
    assert as_dict(all_pairs(sets, threshold)) == brute_force(collection, threshold)


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_pairs_exactly_at_the_threshold_are_kept(threshold):
    # Every (overlap, union) with overlap / union == t in float: where rounding
    # of t·|x| (0.7 · 10 = 7.000000000000001) would cut a prefix one too short.
    collection, expected = [], set()
    for union in range(1, 41):
        for overlap in range(1, union + 1):
            if overlap / union != threshold:
                continue
            for only_a in range(union - overlap + 1):
                only_b = union - overlap - only_a
                base = 1000 * len(collection)
                common = set(range(base, base + overlap))
                a = common | set(range(base + overlap, base + overlap + only_a))
                b = common | set(range(base + 500, base + 500 + only_b))
                expected.add((len(collection), len(collection) + 1))
                collection += [a, b]
    result = as_dict(all_pairs(ShingleSets.from_sets(collection), threshold))
    assert set(result) == expected
    assert all(value == threshold for value in result.values())


def test_sets_of_size_one_pair_only_when_equal():
    collection = [{1}, {2}, {1}, {3}, {1}, {2}]
    for threshold in (0.3, 0.5, 1.0):
        assert set(as_dict(all_pairs(ShingleSets.from_sets(collection), threshold))) == {
            (0, 2), (0, 4), (2, 4), (1, 5)
        }


@pytest.mark.parametrize("threshold", [0.2, 0.5, 1.0])
def test_identical_sets_pair_with_jaccard_one(threshold):
    collection = [{1, 2, 3}, {4, 5}, {1, 2, 3}, {4, 5}, {1, 2, 3}, {9, 10, 11, 12}]
    result = as_dict(all_pairs(ShingleSets.from_sets(collection), threshold))
    identical = {(0, 2): 1.0, (0, 4): 1.0, (2, 4): 1.0, (1, 3): 1.0}
    assert {k: v for k, v in result.items() if v == 1.0} == identical
    if threshold == 1.0:
        assert result == identical


def test_empty_sets_never_pair():
    collection = [set(), {1, 2}, set(), {1, 2}, set()]
    for threshold in (0.01, 0.5, 1.0):
        assert as_dict(all_pairs(ShingleSets.from_sets(collection), threshold)) == {(1, 3): 1.0}
    i, j, jaccard = all_pairs(ShingleSets.from_sets([set(), set()]), 0.5)
    assert i.size == j.size == jaccard.size == 0


def test_empty_collection_gives_typed_empty_arrays():
    i, j, jaccard = all_pairs(ShingleSets.from_sets([]), 0.5)
    assert (i.dtype, j.dtype, jaccard.dtype) == (np.int64, np.int64, np.float64)
    assert i.size == 0


def planted_collection(n: int, seed: int) -> ShingleSets:
    """Sets of 5-60 elements, skewed vocabulary; 10% copy another (a fifth of those exactly)."""
    rng = np.random.default_rng(seed)
    vocabulary = 3000
    weights = 1.0 / (np.arange(vocabulary) + 20.0)
    cdf = np.cumsum(weights) / weights.sum()
    collection = []
    for _ in range(n):
        if collection and rng.random() < 0.1:
            base = sorted(collection[rng.integers(len(collection))])
            exact = rng.random() < 0.2
            keep = rng.random(len(base)) < (1.0 if exact else rng.uniform(0.6, 1.0))
            extra = np.searchsorted(cdf, rng.random(0 if exact else rng.integers(0, 4)))
            collection.append(set(np.asarray(base)[keep].tolist()) | set(extra.tolist()))
        else:
            size = rng.integers(5, 60)
            collection.append(set(np.searchsorted(cdf, rng.random(size)).tolist()))
    return ShingleSets.from_sets(collection, dtype=np.uint32)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8, 1.0])
def test_bigger_collection_matches_sparse_brute_force(threshold):
    sets = planted_collection(2000, seed=7)
    expected = sparse_brute_force(sets, threshold)
    assert len(expected) >= 20  # the planted copies are there
    assert as_dict(all_pairs(sets, threshold)) == expected


def test_output_sorted_deterministic_and_independent_of_input_order():
    sets = planted_collection(800, seed=3)
    first = all_pairs(sets, 0.5)
    i, j, _ = first
    assert np.all(i < j)
    assert np.all(np.diff(i * sets.n + j) > 0)  # strictly sorted by (i, j)
    second = all_pairs(sets, 0.5)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    shuffle = np.random.default_rng(0).permutation(sets.n)
    si, sj, sjaccard = all_pairs(sets.subset(shuffle), 0.5)
    mapped = {
        (min(a, b), max(a, b)): c
        for a, b, c in zip(shuffle[si].tolist(), shuffle[sj].tolist(), sjaccard.tolist(),
                           strict=True)
    }
    assert mapped == as_dict(first)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7])
def test_short_strings_as_character_bigrams(threshold):
    names = [
        "jon smith", "john smith", "jonathan smith", "j smith", "smith john", "jane smyth",
        "anna", "ana", "hanna", "hannah", "anne", "a", "an", "", "x", "xx", "maria garcia",
        "mario garcia", "maria garcía", "marie curie", "mary curry", "li", "lee", "le",
    ]
    options = ShingleOptions(kind="char", size=2, hash_bits=64)
    sets = shingle(names, options)
    collection = [set(sets.get(d).tolist()) for d in range(sets.n)]
    expected = brute_force(collection, threshold)
    assert len(expected) >= 5
    assert as_dict(all_pairs(sets, threshold)) == expected


@pytest.mark.parametrize("threshold", [0.0, -0.5, 1.01, float("nan"), "high", None, True])
def test_threshold_outside_unit_interval_is_rejected(threshold):
    sets = ShingleSets.from_sets([{1, 2}, {1, 2}])
    with pytest.raises(ValueError, match="threshold"):
        all_pairs(sets, threshold)
    with pytest.raises(ValueError, match="threshold"):
        estimate_exact_cost(sets, threshold)


def test_ranks_put_rare_elements_first_and_ties_by_value():
    sets = ShingleSets.from_sets([{5, 7, 9}, {7, 9}, {9, 3}])
    ranked = rank_sets(sets)
    # frequencies: 3:1, 5:1, 7:2, 9:3 -> ranks 3:0, 5:1, 7:2, 9:3
    assert ranked.values.tolist() == [1, 2, 3, 2, 3, 0, 3]


@pytest.mark.parametrize("seed", range(5))
def test_ranks_below_n_single_are_the_elements_of_one_set_alone(seed, monkeypatch):
    """The join keeps no list for them: they must be exactly the elements no two sets
    share, ranked as a stable sort by frequency ranks them (both rankings agree; the
    elements packed with their positions a few at a time)."""
    from neardup import allpairs

    monkeypatch.setattr(allpairs, "_BLOCK", 7)
    rng = np.random.default_rng(seed)
    sets = ShingleSets.from_sets([set(rng.integers(0, 60, int(rng.integers(0, 12))).tolist())
                                  for _ in range(40)])
    order = rng.permutation(sets.n)
    for ranked in (rank_sets(sets, order), rank_sets_numpy(sets, order)):
        values, counts = np.unique(sets.values, return_counts=True)
        assert ranked.n_single == int((counts == 1).sum())
        expected = np.argsort(counts, kind="stable")  # rarest first, ties by value
        rank_of = dict(zip(values[expected].tolist(), range(values.size)))
        picked = [sorted(rank_of[v] for v in sets.values[sets.offsets[d]:sets.offsets[d + 1]])
                  for d in order]
        assert [ranked.values[ranked.offsets[k]:ranked.offsets[k + 1]].tolist()
                for k in range(order.size)] == picked
        singles = {rank_of[v] for v in values[counts == 1].tolist()}
        assert singles == set(range(ranked.n_single))


def test_prefix_lengths_follow_the_formulas():
    sizes = np.array([0, 1, 2, 5, 10, 100])
    assert probing_prefix_lengths(sizes, 1.0).tolist() == [0, 1, 1, 1, 1, 1]
    assert probing_prefix_lengths(sizes, 0.5).tolist() == [0, 1, 2, 3, 6, 51]
    # 0.7 · 10 is 7.000000000000001 in float; the overlap bound must still be 7.
    assert probing_prefix_lengths(np.array([10]), 0.7).tolist() == [4]
    # 2t/(1+t) at t = 0.5 is 2/3: ⌈2/3 · 9⌉ = 6.
    assert indexing_prefix_lengths(np.array([9, 3]), 0.5).tolist() == [4, 2]


def test_cost_estimate_on_full_sample_counts_prefix_meetings_exactly():
    sets = planted_collection(300, seed=5)
    threshold = 0.6
    cost = estimate_exact_cost(sets, threshold, sample=10_000)
    ranked = rank_sets(sets)
    probe = probing_prefix_lengths(ranked.offsets[1:] - ranked.offsets[:-1], threshold)
    lists: dict[int, int] = {}
    for d in range(ranked.n):
        for element in ranked.values[ranked.offsets[d] : ranked.offsets[d] + probe[d]].tolist():
            lists[element] = lists.get(element, 0) + 1
    assert cost["sampled"] == 300
    assert cost["expected_candidates"] == sum(c * (c - 1) / 2 for c in lists.values())
    assert cost["probe_prefix_total"] == probe.sum()
    # The meetings bound the true pairs from above.
    assert cost["expected_candidates"] >= all_pairs(sets, threshold)[0].size


def test_cost_estimate_from_a_sample_is_close_to_the_full_count():
    sets = planted_collection(4000, seed=11)
    full = estimate_exact_cost(sets, 0.5, sample=4000)
    sampled = [estimate_exact_cost(sets, 0.5, sample=1000, seed=s) for s in range(5)]
    mean = np.mean([c["expected_candidates"] for c in sampled])
    assert abs(mean / full["expected_candidates"] - 1) < 0.1
    for c in sampled:
        assert abs(c["probe_prefix_total"] / full["probe_prefix_total"] - 1) < 0.1
