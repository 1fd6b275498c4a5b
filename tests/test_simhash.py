"""SimHash: fingerprints equal a plain Python transcription, the Hamming search finds
exactly the pairs within k of brute force, distances match θ/π, and ``find`` with it
reports only verified pairs."""

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import simhash
from neardup.cli import main
from neardup.pipeline import FindConfig, find_texts
from neardup.shingling import ShingleSets
from neardup.synthetic import planted_corpus

MASK = (1 << 64) - 1


def mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def reference_fingerprint(shingles, key: int) -> int:
    """Charikar's SimHash as written: bit b is the sign of the sum of ±1 over shingles."""
    fingerprint = 0
    for b in range(64):
        total = sum(1 if (mix64(x ^ key) >> b) & 1 else -1 for x in shingles)
        if total > 0:
            fingerprint |= 1 << b
    return fingerprint


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.integers(0, 2**64 - 1), max_size=30), min_size=1, max_size=6),
       st.integers(0, 2**31))
def test_fingerprints_equal_the_plain_reference(sets_, seed):
    got = simhash.fingerprints(ShingleSets.from_sets(sets_), seed)
    key = int(simhash.fingerprint_key(seed))
    assert [int(x) for x in got] == [reference_fingerprint(s, key) for s in sets_]


def brute_hamming_pairs(prints, k):
    return [(a, b, bin(int(prints[a]) ^ int(prints[b])).count("1"))
            for a, b in itertools.combinations(range(len(prints)), 2)
            if bin(int(prints[a]) ^ int(prints[b])).count("1") <= k]


def planted_prints(rng, n, k):
    """Random fingerprints, half of them flips of up to k + 2 bits of an earlier one."""
    prints = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    for d in range(1, n):
        if rng.random() < 0.5:
            flips = rng.choice(64, int(rng.integers(0, min(k + 3, 64))), replace=False)
            mask = np.uint64(sum(1 << int(b) for b in flips))
            prints[d] = prints[int(rng.integers(d))] ^ mask
    return prints


@pytest.mark.parametrize("k", [0, 1, 3, 7, 12, 20, 40, 63])
@pytest.mark.parametrize("seed", range(3))
def test_hamming_search_finds_exactly_the_pairs_within_k(k, seed):
    rng = np.random.default_rng(seed * 100 + k)
    prints = planted_prints(rng, int(rng.integers(2, 150)), k)
    i, j, distance, stats = simhash.hamming_pairs(prints, k)
    want = brute_hamming_pairs(prints, k)
    assert list(zip(i.tolist(), j.tolist(), distance.tolist())) == want
    assert stats.blocks == k + 1
    if k < 63:
        assert len(want) > 0 or len(prints) < 10


def test_blocks_cover_the_64_bits_once():
    for k in range(64):
        shifts, masks = simhash.blocks(k)
        covered = [int(m) << int(s) for s, m in zip(shifts, masks)]
        assert sum(covered) == 2**64 - 1  # disjoint (no carries) and complete
        widths = [int(m).bit_length() for m in masks]
        assert max(widths) - min(widths) <= 1
    with pytest.raises(ValueError, match="0..63"):
        simhash.blocks(64)


def equal_size_pairs_at(jaccard, size, count, rng):
    common = round(2 * jaccard * size / (1 + jaccard))
    sets_ = []
    for _ in range(count):
        universe = rng.choice(10**9, 2 * size - common, replace=False)
        sets_ += [universe[:size], np.r_[universe[:common], universe[size:]]]
    return sets_, common / (2 * size - common)


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
def test_mean_distance_is_64_theta_over_pi(threshold):
    """Pairs of 200-shingle sets at J: the mean distance within 4 standard errors (and
    0.1 of modelling slack) of 64 · arccos(2J / (1 + J)) / π."""
    rng = np.random.default_rng(int(threshold * 10))
    sets_, jaccard = equal_size_pairs_at(threshold, 200, 500, rng)
    prints = simhash.fingerprints(ShingleSets.from_sets(sets_), seed=3)
    distance = simhash.popcounts(prints[0::2] ^ prints[1::2])
    error = distance.std() / np.sqrt(distance.size)
    assert abs(distance.mean() - simhash.expected_distance(jaccard)) <= 4 * error + 0.1
    # the k chosen for t keeps about RECALL_AT_THRESHOLD of them
    share = (distance <= simhash.distance_for_threshold(jaccard)).mean()
    assert share >= simhash.RECALL_AT_THRESHOLD - 3 * np.sqrt(0.09 / distance.size)


def test_distance_for_threshold_is_the_binomial_quantile():
    from math import comb

    def cdf(m, p):
        return sum(comb(64, x) * p**x * (1 - p) ** (64 - x) for x in range(m + 1))

    for t in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0):
        k = simhash.distance_for_threshold(t)
        p = simhash.bit_difference_probability(t)
        assert cdf(k, p) >= simhash.RECALL_AT_THRESHOLD
        assert k == 0 or cdf(k - 1, p) < simhash.RECALL_AT_THRESHOLD
        # found_probability is the same binomial, as evaluate's S-curve uses it
        assert simhash.found_probability(t, k)[0] == pytest.approx(cdf(k, p), abs=1e-12)
    assert simhash.distance_for_threshold(1.0) == 0


@pytest.mark.parametrize("threshold", [0.8, 0.9])
def test_find_with_simhash_reports_only_verified_pairs(threshold):
    corpus = planted_corpus(1500, doc_words=120, dup_fraction=0.2, similarity=(0.75, 1.0),
                            exact_copies=4, seed=7)
    options = dict(threshold=threshold, shingle_kind="word", shingle_size=1)
    found = find_texts(corpus.texts, sketch="simhash", keep_arrays=True, **options)
    exact = find_texts(corpus.texts, method="exact", **options)
    assert found.counts["method"] == "simhash"
    assert found.counts["simhash"]["distance"] == simhash.distance_for_threshold(threshold)
    offsets, values = found.sets.offsets, found.sets.values
    sets_ = [set(values[offsets[d]:offsets[d + 1]].tolist()) for d in range(found.n)]
    table = found.pairs_table()
    for a, b, j in zip(table.column("doc_a").to_pylist(), table.column("doc_b").to_pylist(),
                       table.column("jaccard").to_pylist()):
        true = len(sets_[a] & sets_[b]) / len(sets_[a] | sets_[b])
        assert true >= threshold and j == round(true, 6)
    mine = set(zip(table.column("doc_a").to_pylist(), table.column("doc_b").to_pylist()))
    truth = exact.pairs_table()
    every = set(zip(truth.column("doc_a").to_pylist(), truth.column("doc_b").to_pylist()))
    assert mine <= every
    assert len(mine) >= 0.9 * len(every) > 110  # copies always, planted pairs mostly
    # the same fingerprints, the same search: byte-identical runs
    again = find_texts(corpus.texts, sketch="simhash", **options)
    assert again.pairs_table().equals(table)
    assert np.array_equal(again.labels, found.labels)


def test_the_options_are_checked_at_the_door():
    with pytest.raises(ValueError, match="sketch must be one of"):
        FindConfig(sketch="bloom")
    with pytest.raises(ValueError, match="simhash_distance applies to sketch='simhash'"):
        FindConfig(simhash_distance=3)
    with pytest.raises(ValueError, match="simhash_distance must be an integer in 0..63"):
        FindConfig(sketch="simhash", simhash_distance=64)
    with pytest.raises(ValueError, match="method 'exact' uses none"):
        FindConfig(sketch="simhash", method="exact")
    with pytest.raises(ValueError, match="searches by Jaccard"):
        FindConfig(sketch="simhash", measure="containment")
    from neardup import spark

    spark._check_find_config(FindConfig(sketch="simhash"))  # the Spark engine runs it too
    with pytest.raises(ValueError, match="--measure containment is not supported by the Spark"):
        spark._check_find_config(FindConfig(measure="containment"))


def test_cli_simhash_with_a_chosen_distance(tmp_path, capsys, write_lines):
    corpus = planted_corpus(300, doc_words=80, dup_fraction=0.2, similarity=(0.9, 1.0),
                            seed=3)
    path = tmp_path / "docs.txt"
    write_lines(path, corpus.texts)
    out = tmp_path / "out"
    code = main(["find", str(path), "--shingle", "word", "--ngram", "3", "-t", "0.9",
                 "--sketch", "simhash", "--simhash-distance", "6", "--out", str(out), "-q"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["simhash"]["distance"] == 6
    assert summary["counts"]["simhash"]["blocks"] == 7
    assert summary["config"]["sketch"] == "simhash"
    assert "SimHash: Hamming distance <= 6" in capsys.readouterr().out
    code = main(["find", str(path), "--simhash-distance", "6", "-q"])
    assert code == 2  # without --sketch simhash: a usage error naming the option
    assert "simhash_distance applies" in capsys.readouterr().err


def test_compare_sketches_counts_each_against_the_same_truth(tmp_path, capsys, write_lines):
    from neardup.evaluate import brute_force_document_pairs, evaluate_sets
    from neardup.pipeline import shingle_in_batches

    corpus = planted_corpus(800, doc_words=100, dup_fraction=0.25, similarity=(0.7, 1.0),
                            exact_copies=5, seed=11)
    config = FindConfig(threshold=0.8, shingle_kind="word", shingle_size=2)
    sets = shingle_in_batches(corpus.texts, config.shingle_options())
    both = evaluate_sets(sets, config, compare_sketches=True)
    assert [r["sketch"] for r in both.sketches] == ["minhash", "simhash", "truth"]
    alone = {"minhash": both, "simhash": evaluate_sets(
        sets, FindConfig(threshold=0.8, shingle_kind="word", shingle_size=2,
                         sketch="simhash"))}
    usable = (sets.sizes >= config.min_shingles).nonzero()[0]
    brute = brute_force_document_pairs(sets, usable, 0.8)[0].size
    for row in both.sketches:
        if row["sketch"] == "truth":
            assert row["found"] == row["candidates"] == brute
            continue
        metrics = alone[row["sketch"]].metrics
        assert row["found"] == metrics["found"] and row["candidates"] == metrics["candidates"]
        assert row["recall"] == metrics["recall"] == row["found"] / brute
        assert row["found"] <= brute and row["seconds"] > 0
    assert alone["simhash"].sketch == "simhash"
    assert alone["simhash"].distance == simhash.distance_for_threshold(0.8)
    assert "sketches" not in alone["simhash"].as_dict() and "sketch" not in both.as_dict()
    with pytest.raises(ValueError, match="sweep tries other b x r"):
        evaluate_sets(sets, FindConfig(sketch="simhash"), sweep=True)

    path = tmp_path / "docs.txt"
    write_lines(path, corpus.texts)
    code = main(["evaluate", str(path), "--shingle", "word", "--ngram", "2", "-t", "0.8",
                 "--compare-sketches", "--json", str(tmp_path / "e.json"), "-q"])
    assert code == 0
    assert "simhash k=" in capsys.readouterr().out
    saved = json.loads((tmp_path / "e.json").read_text())
    assert [r["sketch"] for r in saved["sketches"]] == ["minhash", "simhash", "truth"]
    assert saved["sketches"][2]["found"] == brute


def test_plain_and_parallel_forms_give_the_same_simhash_and_containment(monkeypatch):
    from neardup._core import kernels

    corpus = planted_corpus(400, doc_words=60, dup_fraction=0.3, similarity=(0.7, 1.0),
                            exact_copies=4, seed=9)
    results = {}
    for parallel_from in (10**18, 0):
        monkeypatch.setattr(kernels, "PARALLEL_FROM", parallel_from)
        results[parallel_from] = [
            find_texts(corpus.texts, threshold=0.8, shingle_kind="word", shingle_size=1,
                       **options).pairs_table()
            for options in ({"sketch": "simhash"}, {"measure": "containment"})]
    plain, parallel = results[10**18], results[0]
    for a, b in zip(plain, parallel):
        assert a.to_pandas().equals(b.to_pandas()) and a.num_rows > 20  # NaN estimates


def test_compare_sketches_is_refused_by_the_spark_engine(tmp_path):
    from neardup import api

    path = tmp_path / "docs.txt"
    path.write_text("one two three four five six\n")
    with pytest.raises(ValueError, match="--compare-sketches is not supported by the Spark"):
        api.evaluate(path, engine="spark", compare_sketches=True)
