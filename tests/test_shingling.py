import re
import unicodedata
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.shingling import (
    ShingleOptions,
    ShingleSets,
    fold_light,
    hash_tokens,
    normalize_light,
    shingle,
    word_chars,
    word_token_hashes,
    word_tokens,
)

# text that mixes ASCII words with letters, digits, marks and spaces from all over Unicode
MIXED_TEXT = st.text(st.one_of(st.sampled_from("ab_ 1\t\n.-Aß\u0301ﬁＡ٣"),
                               st.characters(blacklist_categories=("Cs",))), max_size=60)


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


def test_word_chars_are_what_the_regex_calls_a_word_character():
    every = "".join(map(chr, range(0x110000)))
    expected = np.zeros(len(every), dtype=bool)
    for run in re.finditer(r"\w+", every):
        expected[run.start():run.end()] = True
    chars = word_chars()
    chars.learn(range(0x110000))
    assert chars.known.all()
    assert np.array_equal(chars.word, expected)


# characters whose folding depends on their neighbours or expands: combining marks,
# Hangul jamo, a compatibility ligature, sharp s, Greek with ypogegrammeni, Kelvin sign
TRICKY = "e\u0301\u0327Ω\u0345\u1100\u1161\u11a8ﬁßİΣς\u212aＡ\u0b47\u0b3e\u00e9 aZ_9"
FOLD_TEXT = st.text(st.one_of(st.sampled_from(TRICKY),
                              st.characters(blacklist_categories=("Cs",))), max_size=80)


@settings(max_examples=400, deadline=None)
@given(st.lists(FOLD_TEXT, max_size=5), st.integers(0, 2**64 - 1))
def test_folding_kernel_tokens_equal_the_tokens_of_fold_light(texts, seed):
    fast, fast_offsets = word_token_hashes(texts, seed, fold=True)
    slow, slow_offsets = hash_tokens([word_tokens(fold_light(t)) for t in texts], seed)
    assert np.array_equal(fast_offsets, slow_offsets)
    assert np.array_equal(fast, slow)


@settings(max_examples=300, deadline=None)
@given(st.lists(MIXED_TEXT, max_size=6), st.integers(0, 2**64 - 1))
def test_word_kernel_tokens_equal_the_regex_tokens(texts, seed):
    fast, fast_offsets = word_token_hashes(texts, seed)
    slow, slow_offsets = hash_tokens([word_tokens(t) for t in texts], seed)
    assert np.array_equal(fast_offsets, slow_offsets)
    assert np.array_equal(fast, slow)


@settings(max_examples=150, deadline=None)
@given(st.lists(MIXED_TEXT, max_size=6), st.integers(1, 5), st.sampled_from([32, 64]),
       st.integers(0, 1000))
def test_default_word_path_equals_the_regex_path(texts, size, bits, seed):
    options = ShingleOptions(kind="word", size=size, hash_bits=bits, seed=seed)
    fast = shingle(texts, options)
    regex = shingle(texts, replace(options, tokenize=lambda t: re.findall(r"\w+", t)))
    assert np.array_equal(fast.offsets, regex.offsets)
    assert np.array_equal(fast.values, regex.values)


def _reference_light(text: str) -> str:
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.split())


@settings(max_examples=300, deadline=None)
@given(MIXED_TEXT)
def test_light_normalization_is_nfkc_casefold_nfc_collapse(text):
    assert normalize_light(text) == _reference_light(text)


def test_word_shingle_values_are_pinned():
    """Saved outputs compare shingle hashes across versions: these must never change."""
    sets = shingle(["Hello, wörld: ＦＵＬＬ width_1 ok"],
                   ShingleOptions(kind="word", size=2, hash_bits=64, seed=0))
    assert sets.values.tolist() == [136594570019726958, 4947683726965944450,
                                    9124767890503114885, 14918352857397736394]


def test_char_shingle_values_are_pinned():
    sets = shingle(["Héllo ＷＯＲＬＤ"], ShingleOptions(kind="char", size=4, hash_bits=64))
    assert sets.values.tolist() == [2440856365587774267, 6616522780079534865,
                                    7276669922563663841, 8653962374489107124,
                                    9360723974790475624, 12693634597748306112,
                                    13849231006856370477, 16205083559182080892]


SPACES = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(
    list(SPACES) + list("aBcZ09_ .,é\u0301ßİΣﬁ日本\u00a0") + [chr(0x1F600), "\ufb01"]),
    max_size=40), max_size=20))
def test_normalized_code_points_equal_normalize_light(texts):
    from neardup.shingling import _code_points, normalized_code_points

    got, got_offsets = normalized_code_points(texts)
    want, want_offsets = _code_points([normalize_light(t) for t in texts])
    np.testing.assert_array_equal(got_offsets, want_offsets)
    np.testing.assert_array_equal(got, want)


def test_no_whitespace_above_the_space_table():
    assert not any(chr(c).isspace() for c in range(0x3001, 0x110000))
