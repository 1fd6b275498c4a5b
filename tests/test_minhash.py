import numpy as np
import pytest

from neardup.minhash import load_signatures, minhash
from neardup.shingling import ShingleSets


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


def test_estimate_within_binomial_error_over_many_pairs():
    rng = np.random.default_rng(7)
    sets, truth = _pairs_with_known_jaccard(rng, 400)
    K = 128
    sig = minhash(sets, num_perm=K, seed=11)
    est = sig.estimate(np.arange(0, sets.n, 2), np.arange(1, sets.n, 2))
    sigma = np.sqrt(truth * (1 - truth) / K)
    z = (est - truth) / np.maximum(sigma, 1e-9)
    # every pair within 4.5 sigma, and the spread is binomial (mean z^2 near 1), no bias
    assert np.all(np.abs(est - truth) <= 4.5 * sigma + 1e-9)
    assert 0.7 < np.mean(z[sigma > 0] ** 2) < 1.3
    assert abs(np.mean(est - truth)) < 0.01


def test_structured_keys_are_not_biased():
    # consecutive integers are the worst case for an affine map; the mixer must fix it
    sets = ShingleSets.from_sets([range(1000), range(300, 1300)])
    truth = 700 / 1300
    est = [minhash(sets, 128, seed=s).estimate([0], [1])[0] for s in range(100)]
    assert abs(np.mean(est) - truth) < 4 * np.sqrt(truth * (1 - truth) / 128 / 100)


def test_identical_sets_identical_signatures_and_seed_determinism():
    sets = ShingleSets.from_sets([[1, 2, 3, 99], [99, 3, 2, 1], [4, 5]])
    a = minhash(sets, 64, seed=5)
    b = minhash(sets, 64, seed=5)
    c = minhash(sets, 64, seed=6)
    assert np.array_equal(a.matrix[0], a.matrix[1])
    assert np.array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix, c.matrix)
    assert a.matrix.shape == (3, 64) and a.matrix.dtype == np.uint32


def test_b_bit_estimate_is_corrected_for_chance_agreement():
    rng = np.random.default_rng(3)
    sets, truth = _pairs_with_known_jaccard(rng, 300)
    i, j = np.arange(0, sets.n, 2), np.arange(1, sets.n, 2)
    sig = minhash(sets, 256, seed=2).b_bit(2)
    corrected = sig.estimate(i, j)
    raw = (sig.matrix[i] == sig.matrix[j]).mean(axis=1)
    # 2 bits agree by chance a quarter of the time: raw is biased up, the correction is not
    assert np.mean(raw - truth) > 0.1
    assert abs(np.mean(corrected - truth)) < 0.02
    assert sig.matrix.dtype == np.uint8 and sig.bits == 2


def test_save_and_load_refuses_other_parameters(tmp_path):
    sets = ShingleSets.from_sets([[1, 2, 3], [2, 3, 4]])
    sig = minhash(sets, 32, seed=9)
    path = tmp_path / "sig.npz"
    sig.save(path)
    back = load_signatures(path, family="affine32", num_perm=32, seed=9)
    assert np.array_equal(back.matrix, sig.matrix) and back.seed == 9
    with pytest.raises(ValueError, match="seed: file has 9, expected 10"):
        load_signatures(path, seed=10)
    with pytest.raises(ValueError, match="num_perm"):
        load_signatures(path, num_perm=128)


def test_empty_set_gets_the_empty_signature():
    sig = minhash(ShingleSets.from_sets([[], [1]]), 8)
    assert np.all(sig.matrix[0] == 0xFFFFFFFF)
