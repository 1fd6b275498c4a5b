import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import lsh
from neardup.lsh import (
    band_keys,
    candidate_pairs,
    choose_bands,
    false_negative_area,
    s_curve,
    steep_point,
)
from neardup.minhash import HASH_FAMILIES, minhash
from neardup.shingling import ShingleSets


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8, 0.9])
@pytest.mark.parametrize("num_perm", [48, 128])
def test_chosen_bands_fit_and_put_the_steep_point_below_the_threshold(threshold, num_perm):
    plan = choose_bands(threshold, num_perm)
    assert plan.bands * plan.rows <= num_perm
    assert plan.steep_point < threshold
    # fewer misses than an even-weighted choice (datasketch's default weights)
    even = choose_bands(threshold, num_perm, weights=(0.5, 0.5))
    assert plan.fn_area <= even.fn_area


@pytest.mark.parametrize("num_perm", [16, 64, 128])
def test_a_plan_short_of_the_floor_warns_exactly_when_no_shape_reaches_it(num_perm):
    """D18 (issue 22): at t = 0.001, K = 128 the choice is 128 x 1 with P(t) = 0.12; it was
    silent. The plan warns exactly when no b x r with b*r <= K reaches P(t) >= 0.995
    (every shape tried), names P(t), and the K that reaches it is the fewest that does."""
    for threshold in (0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 0.95):
        plan = choose_bands(threshold, num_perm)
        bands = np.arange(1, num_perm + 1)
        best = max(float(s_curve(threshold, b, r).max())  # every shape, by brute force
                   for r in range(1, num_perm + 1) for b in [bands[bands * r <= num_perm]]
                   if b.size)
        warning = plan.shortfall()
        assert (warning is not None) == (best < lsh.MIN_P_AT_THRESHOLD), (threshold, num_perm)
        assert plan.as_dict().get("warning") == warning
        if warning is None:
            continue
        assert f"P(t) = {plan.p_at_threshold:.3f}" in warning and "--method exact" in warning
        needed = lsh.minima_to_reach(threshold)
        assert s_curve(threshold, needed, 1) >= lsh.MIN_P_AT_THRESHOLD  # K bands of 1 row
        assert s_curve(threshold, needed - 1, 1) < lsh.MIN_P_AT_THRESHOLD  # the best of K - 1
        assert (f"--num-perm {needed} or more" in warning if needed <= lsh.MAX_NUM_PERM
                else f"{needed:,} minima, past the most" in warning)
    plan = choose_bands(0.001, 128)
    assert (plan.bands, plan.rows) == (128, 1) and "P(t) = 0.120" in plan.shortfall()
    assert "warning: " in plan.describe()
    assert choose_bands(0.001, 128, bands=128, rows=1).shortfall() is None  # the user's


def test_user_bands_are_kept_and_checked():
    plan = choose_bands(0.5, 48, bands=16, rows=3)
    assert (plan.bands, plan.rows, plan.chosen) == (16, 3, "user")
    assert abs(plan.steep_point - steep_point(16, 3)) < 1e-12
    with pytest.raises(ValueError, match="fit"):
        choose_bands(0.5, 48, bands=16, rows=4)
    with pytest.raises(ValueError, match="threshold"):
        choose_bands(1.5, 48)


def test_s_curve_matches_the_article():
    # Go tree article: 12 bands of 4 rows: P(0.8) = 0.998, P(0.2) = 0.019
    assert round(float(s_curve(0.8, 12, 4)), 3) == 0.998
    assert round(float(s_curve(0.2, 12, 4)), 3) == 0.019
    assert false_negative_area(0.5, 16, 3) < false_negative_area(0.5, 12, 4)


def _planted_pairs(rng, similarity, count, size=200):
    sets = []
    common = int(round(2 * size * similarity / (1 + similarity)))
    only = size - common
    for _ in range(count):
        base = rng.choice(10**9, size=common + 2 * only, replace=False)
        sets += [base[: common + only], np.concatenate([base[:common], base[common + only:]])]
    return ShingleSets.from_sets(sets), common / (common + 2 * only)


@pytest.mark.parametrize("family", HASH_FAMILIES)
@pytest.mark.parametrize("similarity", [0.3, 0.5, 0.7, 0.9])
def test_candidate_rate_of_planted_pairs_follows_the_s_curve(similarity, family):
    rng = np.random.default_rng(int(similarity * 100))
    count, bands, rows = 400, 20, 5
    sets, exact = _planted_pairs(rng, similarity, count)
    sig = minhash(sets, bands * rows, seed=17, family=family)
    i, j, _ = candidate_pairs(band_keys(sig.matrix, bands, rows))
    planted = set(zip(range(0, 2 * count, 2), range(1, 2 * count, 2)))
    rate = len(planted & set(zip(i.tolist(), j.tolist()))) / count
    p = float(s_curve(exact, bands, rows))
    sigma = np.sqrt(p * (1 - p) / count)
    assert abs(rate - p) <= 4 * sigma + 0.01


def test_candidates_are_unique_sorted_and_from_shared_keys():
    keys = np.array([[1, 7], [1, 8], [2, 7], [3, 9], [1, 9]], dtype=np.uint64)
    i, j, stats = candidate_pairs(keys)
    assert list(zip(i.tolist(), j.tolist())) == [(0, 1), (0, 2), (0, 4), (1, 4), (3, 4)]
    assert stats.largest_bucket == 3 and stats.buckets_over_limit == 0


def test_oversized_bucket_policies():
    keys = np.zeros((50, 1), dtype=np.uint64)  # one bucket of 50: 1225 pairs in full
    i, j, stats = candidate_pairs(keys, max_bucket=10, policy="star")
    assert i.size == 49 and set(i.tolist()) == {0}
    assert stats.buckets_over_limit == 1 and stats.pairs_avoided == 1225 - 49
    i, j, stats = candidate_pairs(keys, max_bucket=10, policy="skip")
    assert i.size == 0 and stats.pairs_avoided == 1225
    i, j, _ = candidate_pairs(keys, max_bucket=50)
    assert i.size == 1225
    with pytest.raises(ValueError, match="policy"):
        candidate_pairs(keys, policy="explode")


def test_describe_shows_formula_steep_point_and_table():
    text = choose_bands(0.8, 128).describe()
    assert "P(s) = 1 - (1 - s^" in text and "steep point" in text and "0.50" in text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=60), st.sampled_from([0, 1, 40, 61, 63]))
def test_shared_key_buckets_are_the_repeated_keys_each_in_document_order(keys, shift):
    """Every key held by two or more documents is one group, whole, its documents in
    increasing order (the star policy's hub is the first); no other document appears.
    Shifted keys put every group in one piece (top bits) or spread them over pieces."""
    from neardup.lsh import _shared_key_buckets

    column = np.array(keys, dtype=np.uint64) << np.uint64(shift)
    stable = np.argsort(column, kind="stable")
    values, counts = np.unique(column, return_counts=True)
    expected = {int(v): np.flatnonzero(column == v).tolist()
                for v, c in zip(values, counts) if c > 1}
    members, starts, sizes = _shared_key_buckets(column)
    assert sizes.sum() == members.size and np.all(sizes > 1)
    assert np.array_equal(starts, np.cumsum(sizes) - sizes)
    found = {int(column[members[s]]): members[s:s + z].tolist() for s, z in zip(starts, sizes)}
    assert found == expected and len(found) == sizes.size
    assert sorted(members.tolist()) == sorted(stable[np.isin(column[stable], values[counts > 1])]
                                              .tolist())


def _reference_candidate_pairs(keys, max_bucket, policy):
    """The algorithm before issue 23: a stable argsort of each band, all pairs of each run
    of equal keys (star or skip past max_bucket), one global sort of every band's codes."""
    n, bands = keys.shape
    stats, codes = lsh.CandidateStats(), []
    for band in range(bands):
        column = keys[:, band]
        order = np.argsort(column, kind="stable")
        edges = np.flatnonzero(np.r_[True, column[order][1:] != column[order][:-1], True])
        band_codes = []
        for start, stop in zip(edges[:-1], edges[1:]):
            members, m = order[start:stop], stop - start
            if m < 2:
                continue
            stats.largest_bucket = max(stats.largest_bucket, int(m))
            if m > max_bucket:
                stats.buckets_over_limit += 1
                kept = m - 1 if policy == "star" else 0
                stats.pairs_avoided += m * (m - 1) // 2 - kept
                band_codes += [] if policy == "skip" else [members[0] * n + b
                                                          for b in members[1:]]
            else:
                band_codes += [a * n + b for x, a in enumerate(members) for b in members[x + 1:]]
        stats.per_band.append(len(band_codes))
        codes += band_codes
    unique = np.unique(np.array(codes, dtype=np.int64))
    return unique // n, unique % n, stats


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 300), st.integers(1, 5), st.integers(1, 400), st.integers(0, 63),
       st.sampled_from([2, 3, 8, 1000]), st.sampled_from(lsh.BUCKET_POLICIES),
       st.integers(0, 2**32 - 1))
def test_candidate_pairs_are_the_reference_algorithms_exactly(n, bands, alphabet, shift,
                                                              max_bucket, policy, seed):
    """Issue 23: the linear grouping gives the same pairs, in the same order, and the same
    counts (per band too) as the sorting algorithm it replaced, for keys with duplicates,
    buckets past max_bucket, every key in one piece (small keys) or spread (shifted), and
    n = 0 or 1."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, alphabet, size=(n, bands)).astype(np.uint64) << np.uint64(shift)
    expected_i, expected_j, expected = _reference_candidate_pairs(keys, max_bucket, policy)
    i, j, stats = candidate_pairs(keys, max_bucket=max_bucket, policy=policy)
    assert i.dtype == j.dtype == np.int64
    assert np.array_equal(i, expected_i) and np.array_equal(j, expected_j)
    assert stats == expected
    by_band = lsh.candidate_pairs_by_band((np.ascontiguousarray(keys[:, b])
                                           for b in range(bands)), n,
                                          max_bucket=max_bucket, policy=policy)
    assert np.array_equal(by_band[0], i) and np.array_equal(by_band[1], j)
    assert by_band[2] == expected


def test_candidate_pairs_of_hashed_keys_at_scale_are_the_reference_algorithms():
    """Band keys of 60,000 signatures with planted near copies (many pieces, real
    bucket sizes): the same pairs and counts as the reference."""
    rng = np.random.default_rng(3)
    matrix = rng.integers(0, 2**32, size=(60_000, 24), dtype=np.uint32)
    copies = rng.choice(60_000, size=3_000, replace=False)
    keep = rng.random((3_000, 24)) < 0.85
    matrix[copies] = np.where(keep, matrix[(copies + 17) % 60_000], matrix[copies])
    matrix[:500] = matrix[500]  # one bucket of 501 in every band
    keys = band_keys(matrix, 6, 4)
    for max_bucket, policy in ((1000, "star"), (100, "star"), (100, "skip")):
        expected_i, expected_j, expected = _reference_candidate_pairs(keys, max_bucket, policy)
        i, j, stats = candidate_pairs(keys, max_bucket=max_bucket, policy=policy)
        assert np.array_equal(i, expected_i) and np.array_equal(j, expected_j)
        assert stats == expected and stats.largest_bucket >= 501


@pytest.mark.parametrize(("max_bucket", "policy"), [(1000, "star"), (4, "star"), (4, "skip")])
def test_pairs_in_buckets_split_by_bucket_give_the_local_pairs_and_stats(max_bucket, policy):
    """Entries of every band at once, shuffled, cut into parts that each hold whole
    (band, key) buckets (as the Spark engine hashes them): the parts' pairs together are
    candidate_pairs's, and their stats add up to its stats."""
    rng = np.random.default_rng(7)
    n, bands = 2_000, 5
    keys = rng.integers(0, 300, size=(n, bands)).astype(np.uint64)  # buckets of every size
    i, j, stats = lsh.candidate_pairs(keys, max_bucket=max_bucket, policy=policy)
    band = np.repeat(np.arange(bands), n)
    key = keys.T.ravel().view(np.int64)
    doc = np.tile(np.arange(n), bands)
    shuffled = rng.permutation(band.size)
    band, key, doc = band[shuffled], key[shuffled], doc[shuffled]
    part = (band * 1_000_003 + key) % 3
    found = [lsh.pairs_in_buckets(band[part == p], key[part == p], doc[part == p], n,
                                  max_bucket=max_bucket, policy=policy) for p in range(3)]
    codes = np.unique(np.concatenate([a * n + b for a, b, _ in found]))
    assert np.array_equal(codes, i * n + j)
    assert max(s.largest_bucket for *_, s in found) == stats.largest_bucket
    assert sum(s.buckets_over_limit for *_, s in found) == stats.buckets_over_limit
    assert sum(s.pairs_avoided for *_, s in found) == stats.pairs_avoided
    whole = lsh.pairs_in_buckets(band, key, doc, n, max_bucket=max_bucket, policy=policy)
    assert np.array_equal(whole[0], i) and np.array_equal(whole[1], j)
    assert whole[2].as_dict() == stats.as_dict()


def _mix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@pytest.mark.parametrize(("bands", "rows", "num_perm"), [(18, 6, 128), (1, 1, 1), (5, 3, 16)])
def test_band_keys_are_each_bands_chained_hash(bands, rows, num_perm):
    """Key of band b: mix64 chained over its r minima from mix64(b + golden ratio), the
    values every spilled band file and index holds (the kernel interleaves the bands)."""
    matrix = np.random.default_rng(bands).integers(0, 2**32, size=(257, num_perm),
                                                   dtype=np.uint32)
    expected = np.empty((257, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for band in range(bands):
            h = np.full(257, _mix64(np.uint64(band) + np.uint64(0x9E3779B97F4A7C15)))
            for c in range(band * rows, (band + 1) * rows):
                h = _mix64(h ^ matrix[:, c].astype(np.uint64))
            expected[:, band] = h
    assert np.array_equal(band_keys(matrix, bands, rows), expected)
    assert band_keys(matrix[:0], bands, rows).shape == (0, bands)
