import numpy as np
import pytest

from neardup.minhash import HASH_FAMILIES, family_keys, load_signatures, minhash
from neardup.shingling import ShingleSets

families = pytest.mark.parametrize("family", HASH_FAMILIES)


def _pairs_with_known_jaccard(rng, count, size=300):
    """Pairs of integer sets whose exact Jaccard is known, over many similarities."""
    sets, truth = [], []
    for _ in range(count):
        common = int(rng.integers(0, size))
        only = size - common
        base = rng.choice(10**9, size=common + 2 * only, replace=False)
        a = base[: common + only]
        b = np.concatenate([base[:common], base[common + only:]])
        sets += [a, b]
        truth.append(common / (common + 2 * only))
    return ShingleSets.from_sets(sets, dtype=np.uint64), np.array(truth)


@families
def test_estimate_within_binomial_error_over_many_pairs(family):
    rng = np.random.default_rng(7)
    sets, truth = _pairs_with_known_jaccard(rng, 400)
    K = 128
    sig = minhash(sets, num_perm=K, seed=11, family=family)
    est = sig.estimate(np.arange(0, sets.n, 2), np.arange(1, sets.n, 2))
    sigma = np.sqrt(truth * (1 - truth) / K)
    z = (est - truth) / np.maximum(sigma, 1e-9)
    # every pair within 4.5 sigma, and the spread is binomial (mean z^2 near 1), no bias
    assert np.all(np.abs(est - truth) <= 4.5 * sigma + 1e-9)
    assert 0.7 < np.mean(z[sigma > 0] ** 2) < 1.3
    assert abs(np.mean(est - truth)) < 0.01


@families
def test_structured_keys_are_not_biased(family):
    # consecutive integers are the worst case for an affine map; the mixer must fix it
    sets = ShingleSets.from_sets([range(1000), range(300, 1300)])
    truth = 700 / 1300
    est = [minhash(sets, 128, seed=s, family=family).estimate([0], [1])[0] for s in range(100)]
    assert abs(np.mean(est) - truth) < 4 * np.sqrt(truth * (1 - truth) / 128 / 100)


@families
def test_identical_sets_identical_signatures_and_seed_determinism(family):
    sets = ShingleSets.from_sets([[1, 2, 3, 99], [99, 3, 2, 1], [4, 5]])
    a = minhash(sets, 64, seed=5, family=family)
    b = minhash(sets, 64, seed=5, family=family)
    c = minhash(sets, 64, seed=6, family=family)
    assert np.array_equal(a.matrix[0], a.matrix[1])
    assert np.array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix, c.matrix)
    assert a.matrix.shape == (3, 64) and a.matrix.dtype == np.uint32


@families
def test_b_bit_estimate_is_corrected_for_chance_agreement(family):
    rng = np.random.default_rng(3)
    sets, truth = _pairs_with_known_jaccard(rng, 300)
    i, j = np.arange(0, sets.n, 2), np.arange(1, sets.n, 2)
    sig = minhash(sets, 256, seed=2, family=family).b_bit(2)
    corrected = sig.estimate(i, j)
    raw = (sig.matrix[i] == sig.matrix[j]).mean(axis=1)
    # 2 bits agree by chance a quarter of the time: raw is biased up, the correction is not
    assert np.mean(raw - truth) > 0.1
    assert abs(np.mean(corrected - truth)) < 0.02
    assert sig.matrix.dtype == np.uint8 and sig.bits == 2


@families
def test_save_and_load_refuses_other_parameters(tmp_path, family):
    sets = ShingleSets.from_sets([[1, 2, 3], [2, 3, 4]])
    sig = minhash(sets, 32, seed=9, family=family)
    path = tmp_path / "sig.npz"
    sig.save(path)
    back = load_signatures(path, family=family, num_perm=32, seed=9)
    assert np.array_equal(back.matrix, sig.matrix) and back.seed == 9
    with pytest.raises(ValueError, match="seed: file has 9, expected 10"):
        load_signatures(path, seed=10)
    with pytest.raises(ValueError, match="num_perm"):
        load_signatures(path, num_perm=128)


@families
def test_empty_set_gets_the_empty_signature(family):
    sig = minhash(ShingleSets.from_sets([[], [1], [], [1]]), 8, family=family)
    assert np.all(sig.matrix[[0, 2]] == 0xFFFFFFFF)
    assert np.array_equal(sig.matrix[1], sig.matrix[3]) and not np.all(sig.matrix[1] == 0xFFFFFFFF)


@families
@pytest.mark.parametrize("num_perm", [1, 7, 100])
def test_the_same_numbers_sign_alike_as_uint32_and_uint64(family, num_perm):
    rng = np.random.default_rng(4)
    numbers = [rng.choice(2**32, size=n, replace=False) for n in (1, 3, 30, 90, 400)]
    narrow = minhash(ShingleSets.from_sets(numbers, dtype=np.uint32), num_perm, 3, family)
    wide = minhash(ShingleSets.from_sets(numbers, dtype=np.uint64), num_perm, 3, family)
    assert np.array_equal(narrow.matrix, wide.matrix)
    assert narrow.matrix.shape == (5, num_perm)


def test_signatures_of_another_family_are_refused(tmp_path):
    sets = ShingleSets.from_sets([[1, 2, 3], [2, 3, 4]])
    path = tmp_path / "sig.npz"
    minhash(sets, 32, seed=9, family="oph").save(path)
    assert load_signatures(path, family="oph").family == "oph"
    with pytest.raises(ValueError, match="family: file has 'oph', expected 'affine32'"):
        load_signatures(path, family="affine32")
    with pytest.raises(ValueError, match="family must be one of"):
        minhash(sets, 32, family="sha1")


def test_oph_is_unbiased_on_sets_much_smaller_than_k():
    # 5 shingles, K = 128: at most 10 of the 128 bins are filled, the rest are densified
    rng = np.random.default_rng(5)
    count, size, K = 4000, 5, 128
    sets, truth = [], []
    for _ in range(count):
        common = int(rng.integers(0, size + 1))
        only = size - common
        base = rng.choice(10**9, size=common + 2 * only, replace=False)
        sets += [base[: common + only], np.concatenate([base[:common], base[common + only:]])]
        truth.append(common / (common + 2 * only))
    sets, truth = ShingleSets.from_sets(sets, dtype=np.uint64), np.array(truth)
    est = minhash(sets, K, seed=3, family="oph").estimate(np.arange(0, 2 * count, 2),
                                                          np.arange(1, 2 * count, 2))
    assert np.all(est[truth == 0.0] == 0.0) and np.all(est[truth == 1.0] == 1.0)
    for j in np.unique(truth[(truth > 0) & (truth < 1)]):
        at_j = est[truth == j]
        # the mean of ~650 estimates is within 4 standard errors of J, and one estimate
        # spreads at most 1.5x as far as K independent minima would (measured: 1.2-1.3x)
        assert abs(at_j.mean() - j) < 4 * at_j.std() / np.sqrt(at_j.size)
        assert at_j.std() < 1.5 * np.sqrt(j * (1 - j) / K)


_MASK64 = (1 << 64) - 1


def _mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _superminhash_as_in_the_paper(elements, K, seed):
    """Algorithm 1 of Ertl (2017), line by line, with superminhash's draws: no shortcuts."""
    shingle_key, output_key = (int(k) for k in family_keys(seed))
    if len(elements) == 0:
        return [0xFFFFFFFF] * K
    h = [_MASK64] * K  # (j << 32) | r: j + r in fixed point; all ones is infinity
    p, q = [0] * K, [-1] * K
    b = [0] * K
    b[K - 1] = K
    a = K - 1
    for i, d in enumerate(elements):
        s = _mix64(int(d) ^ shingle_key)
        j = 0
        while j <= a:
            draw = s if j == 0 else _mix64((s + j * 0x9E3779B97F4A7C15) & _MASK64)
            r = draw >> 32
            k = j + (((draw & 0xFFFFFFFF) * (K - j)) >> 32)
            if q[j] != i:
                q[j], p[j] = i, j
            if q[k] != i:
                q[k], p[k] = i, k
            p[j], p[k] = p[k], p[j]
            if (j << 32) | r < h[p[j]]:
                jj = min(h[p[j]] >> 32, K - 1)
                h[p[j]] = (j << 32) | r
                if j < jj:
                    b[jj] -= 1
                    b[j] += 1
                    while b[a] == 0:
                        a -= 1
            j += 1
    return [_mix64(x ^ output_key) >> 32 for x in h]


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("num_perm", [1, 7, 100, 128])
def test_superminhash_equals_the_papers_algorithm(num_perm, dtype):
    # the kernel fills registers position by position and stops early; the paper goes
    # shingle by shingle: both must give the same registers, for every set size
    rng = np.random.default_rng(num_perm)
    sizes = [0, 1, 2, 5, 20, 63, 64, 65, 200, 700]
    high = np.iinfo(dtype).max
    sets = ShingleSets.from_sets([rng.integers(0, high, size=n, dtype=dtype, endpoint=True)
                                  for n in sizes], dtype=dtype)
    sig = minhash(sets, num_perm, seed=8, family="superminhash")
    for d in range(sets.n):
        expected = _superminhash_as_in_the_paper(sets.get(d), num_perm, seed=8)
        assert sig.matrix[d].tolist() == expected, f"set of {sizes[d]} shingles"


def test_superminhash_is_tighter_than_binomial_on_small_sets():
    # 3000 independent pairs of 20-60 shingles, K = 128: each estimate is one draw of the
    # error; classic MinHash (affine32) spreads as J (1 - J) / K, superminhash's positions
    # are sampled without replacement and spread less (measured: about half the variance)
    rng = np.random.default_rng(12)
    count, K = 3000, 128
    sets, truth = [], []
    for _ in range(count):
        size = int(rng.integers(20, 61))
        common = int(rng.integers(1, size))
        only = size - common
        base = rng.choice(10**9, size=common + 2 * only, replace=False)
        sets += [base[: common + only], np.concatenate([base[:common], base[common + only:]])]
        truth.append(common / (common + 2 * only))
    sets, truth = ShingleSets.from_sets(sets, dtype=np.uint64), np.array(truth)
    i, j = np.arange(0, 2 * count, 2), np.arange(1, 2 * count, 2)
    binomial = truth * (1 - truth) / K
    ratio = {}
    for family in ("affine32", "superminhash"):
        err = minhash(sets, K, seed=6, family=family).estimate(i, j) - truth
        assert abs(err.mean()) < 4 * err.std() / np.sqrt(count)  # unbiased
        ratio[family] = np.mean(err**2) / np.mean(binomial)
    assert 0.85 < ratio["affine32"] < 1.15
    assert ratio["superminhash"] < 0.7
