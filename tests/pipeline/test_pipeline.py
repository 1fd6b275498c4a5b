import numpy as np
import pytest

from neardup.pipeline import FindConfig, find_texts
from neardup.synthetic import brute_force_pairs, planted_corpus


@pytest.fixture(scope="module")
def corpus():
    return planted_corpus(3000, dup_fraction=0.08, similarity=(0.4, 1.0), exact_copies=30,
                          seed=5)


@pytest.mark.parametrize("family", ["affine32", "oph", "superminhash"])
@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_recall_and_precision_against_brute_force(corpus, threshold, family):
    result = find_texts(corpus.texts, corpus.ids, shingle_kind="word", shingle_size=1,
                        threshold=threshold, keep_arrays=True, method="lsh", family=family)
    assert result.signatures.family == family
    bi, bj, bjac = brute_force_pairs(result.sets, threshold)
    truth = dict(zip(zip(bi.tolist(), bj.tolist()), bjac.tolist()))
    found = dict(zip(zip(result.pair_i.tolist(), result.pair_j.tolist()),
                     result.jaccard.tolist()))
    # precision 1.0: every reported pair is real, with its exact Jaccard
    assert set(found) <= set(truth)
    assert all(abs(found[p] - truth[p]) < 1e-9 for p in found)
    # recall >= 0.99 for the pairs well above the threshold; identical copies always found
    clear = {p for p, jac in truth.items() if jac >= threshold + 0.1}
    assert len(clear) > 50
    assert len(clear & set(found)) / len(clear) >= 0.99
    # identical copies are always reported, with every member of their group
    assert result.counts["identical_copies"] >= 30
    copies = {p for p, jac in truth.items() if jac == 1.0}
    assert copies <= set(found)


def test_identical_copies_are_grouped_before_lsh_and_form_one_cluster():
    texts = ["the same job advert, posted again and again by one agency"] * 1600 + [
        "a different text entirely, about the weather in spring"]
    result = find_texts(texts, threshold=0.8)
    assert result.counts["distinct_sets"] == 2
    assert result.counts["candidates"] == 0  # no LSH work for the copies
    assert result.counts["clusters"] == 1
    assert result.counts["documents_in_clusters"] == 1600
    assert result.counts["removable"] == 1599
    assert result.representative[0] and not result.representative[1:1600].any()
    # every pair of the 1,600 copies is a pair (J = 1): 1600 * 1599 / 2 of them, listed
    assert result.counts["pairs"] == result.counts["identical_pairs"] == 1_279_200
    assert result.pair_i.size == 1_279_200 and np.all(result.jaccard == 1.0)
    codes = result.pair_i * 1601 + result.pair_j
    assert np.all(np.diff(codes) > 0) and result.pair_j.max() == 1599


def test_empty_and_tiny_documents_are_set_aside_and_never_match():
    texts = ["", "", "   ", "ab", "ab", "a real document with enough characters in it"]
    result = find_texts(texts, threshold=0.5, min_shingles=5)
    assert result.counts["too_few_shingles"] == 5
    assert result.pair_i.size == 0
    assert list(result.status[:5]) == ["too few shingles"] * 5
    assert result.counts["documents"] == (result.counts["shingled"]
                                          + result.counts["too_few_shingles"])


def test_same_input_same_seed_same_output(corpus, tmp_path):
    from neardup.sinks import write_result

    outputs = []
    for run in range(2):
        result = find_texts(corpus.texts[:800], corpus.ids[:800], threshold=0.6)
        paths = write_result(result, tmp_path / f"run{run}", "parquet")
        outputs.append({k: p.read_bytes() for k, p in paths.items() if k != "timings"})
    assert outputs[0] == outputs[1]


def test_no_verify_reports_candidates_below_the_threshold(corpus):
    kwargs = dict(shingle_kind="word", shingle_size=1, threshold=0.9, method="lsh")
    verified = find_texts(corpus.texts, corpus.ids, **kwargs)
    unverified = find_texts(corpus.texts, corpus.ids, verify=False, **kwargs)
    assert np.all(verified.jaccard >= 0.9)
    assert unverified.pair_i.size >= verified.pair_i.size
    assert unverified.jaccard.min() < 0.9


def test_b_bit_signatures_find_the_same_clear_pairs(corpus):
    kwargs = dict(shingle_kind="word", shingle_size=1, threshold=0.7, method="lsh")
    full = find_texts(corpus.texts, corpus.ids, **kwargs)
    low = find_texts(corpus.texts, corpus.ids, bits=16, **kwargs)
    clear_full = set(zip(full.pair_i[full.jaccard > 0.8].tolist(),
                         full.pair_j[full.jaccard > 0.8].tolist()))
    clear_low = set(zip(low.pair_i.tolist(), low.pair_j.tolist()))
    assert clear_full <= clear_low


def test_config_is_checked_at_the_door():
    with pytest.raises(ValueError, match="threshold"):
        FindConfig(threshold=0)
    with pytest.raises(ValueError, match="num_perm"):
        FindConfig(num_perm=0)
    with pytest.raises(ValueError, match="bucket_policy"):
        FindConfig(bucket_policy="all")
    with pytest.raises(ValueError, match="unknown option"):
        FindConfig.from_options(treshold=0.5)
    with pytest.raises(ValueError, match="fit"):
        FindConfig(num_perm=16, bands=8, rows=4)
    with pytest.raises(ValueError, match="family must be one of"):
        FindConfig(family="sha1")


@pytest.mark.parametrize("threshold", [0.5, 0.9])
def test_exact_method_finds_every_pair_of_brute_force(threshold):
    # no exact copies: those are reported as (first, copy) pairs, not all pairs among them
    corpus = planted_corpus(2000, dup_fraction=0.1, similarity=(0.3, 1.0), seed=8)
    result = find_texts(corpus.texts, corpus.ids, shingle_kind="word", shingle_size=1,
                        threshold=threshold, keep_arrays=True, method="exact")
    bi, bj, bjac = brute_force_pairs(result.sets, threshold)
    assert np.array_equal(result.pair_i, bi) and np.array_equal(result.pair_j, bj)
    assert np.allclose(result.jaccard, bjac)
    assert result.counts["method"] == "exact"


def test_auto_method_says_which_and_why():
    short = planted_corpus(2000, doc_words=12, dup_fraction=0.05, similarity=(0.8, 1.0),
                           vocabulary=5000, seed=9)
    result = find_texts(short.texts, short.ids, shingle_kind="word", shingle_size=1,
                        threshold=0.9)
    choice = result.counts["method_choice"]
    assert choice["method"] == result.counts["method"] == "exact"
    assert "exact join estimated" in choice["reason"]
    long_docs = planted_corpus(3000, doc_words=200, seed=9)
    result = find_texts(long_docs.texts, long_docs.ids, shingle_kind="word", shingle_size=1,
                        threshold=0.5)
    choice = result.counts["method_choice"]
    assert result.counts["method"] == "lsh"
    assert "prefixes hold" in choice["reason"] or "ranking" in choice["reason"]
    if choice["exact_candidates_estimate"] is None:  # the join's ranking alone lost
        assert choice["exact_seconds_estimate"] > 1.5 * choice["lsh_seconds_estimate"]


def test_worker_processes_give_the_same_sets_in_the_same_order():
    from neardup.pipeline import shingle_in_batches
    from neardup.shingling import ShingleOptions

    corpus = planted_corpus(300, doc_words=40, dup_fraction=0.1, seed=5)
    texts = [t if k % 7 else t.upper() + " Straße ﬁn" for k, t in enumerate(corpus.texts)]
    for options in (ShingleOptions(kind="word", size=3), ShingleOptions(kind="char", size=4)):
        here = shingle_in_batches(texts, options, workers=1)
        spread = shingle_in_batches(texts, options, workers=2)
        assert np.array_equal(here.offsets, spread.offsets)
        assert np.array_equal(here.values, spread.values)


def test_workers_must_be_a_positive_integer():
    from neardup.pipeline import shingle_in_batches
    from neardup.shingling import ShingleOptions

    with pytest.raises(ValueError, match="workers"):
        shingle_in_batches(["a b c"], ShingleOptions(), workers=0)
