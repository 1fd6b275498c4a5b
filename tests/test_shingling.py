import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.shingling import ShingleOptions, ShingleSets, normalize_light, shingle


def _is_csr(sets: ShingleSets) -> bool:
    for d in range(sets.n):
        seg = sets.get(d)
        if seg.size > 1 and not np.all(seg[1:] > seg[:-1]):
            return False
    return sets.offsets[0] == 0 and np.all(np.diff(sets.offsets) >= 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=8), st.sampled_from(["char", "word"]),
       st.integers(1, 6), st.sampled_from([32, 64]))
def test_sets_are_sorted_unique_csr_for_any_text(texts, kind, size, bits):
    sets = shingle(texts, ShingleOptions(kind=kind, size=size, hash_bits=bits))
    assert sets.n == len(texts)
    assert sets.values.dtype == (np.uint32 if bits == 32 else np.uint64)
    assert _is_csr(sets)


def test_char_shingle_count_matches_distinct_kgrams():
    text = "abcabcabd"
    sets = shingle([text], ShingleOptions(kind="char", size=3, normalize=None))
    distinct = {text[p:p + 3] for p in range(len(text) - 2)}
    assert sets.sizes[0] == len(distinct)


def test_word_ngrams_share_exactly_the_common_ngrams():
    a = "one two three four five six"
    b = "one two three four five seven"
    sets = shingle([a, b], ShingleOptions(kind="word", size=2))
    common = np.intersect1d(sets.get(0), sets.get(1)).size
    assert (sets.sizes[0], sets.sizes[1], common) == (5, 5, 4)


def test_short_document_is_one_shingle_and_empty_is_none():
    sets = shingle(["ab", "", "   "], ShingleOptions(kind="char", size=5))
    assert list(sets.sizes) == [1, 0, 0]


def test_light_normalization_ignores_case_width_and_spacing():
    sets = shingle(["Hello   World", "hello world", "ＨＥＬＬＯ world"], ShingleOptions())
    assert np.array_equal(sets.get(0), sets.get(1))
    assert np.array_equal(sets.get(0), sets.get(2))
    assert normalize_light("  A\tB\n") == "a b"


def test_same_seed_same_hashes_other_seed_other_hashes():
    texts = ["the quick brown fox", "jumps over the lazy dog"]
    a = shingle(texts, ShingleOptions(seed=3))
    b = shingle(texts, ShingleOptions(seed=3))
    c = shingle(texts, ShingleOptions(seed=4))
    assert np.array_equal(a.values, b.values)
    assert not np.array_equal(a.values, c.values)


def test_subset_and_concat_keep_the_sets():
    sets = ShingleSets.from_sets([[5, 1, 3], [], [2, 2, 9]])
    assert list(sets.get(0)) == [1, 3, 5] and list(sets.get(2)) == [2, 9]
    sub = sets.subset(np.array([2, 0]))
    assert list(sub.get(0)) == [2, 9] and list(sub.get(1)) == [1, 3, 5]
    both = ShingleSets.concat([sets, sub])
    assert both.n == 5 and list(both.get(3)) == [2, 9]


def test_bad_options_fail_with_the_parameter_named():
    with pytest.raises(ValueError, match="kind"):
        ShingleOptions(kind="token")
    with pytest.raises(ValueError, match="size"):
        ShingleOptions(size=0)
    with pytest.raises(ValueError, match="hash_bits"):
        ShingleOptions(hash_bits=16)
