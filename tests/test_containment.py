"""Containment |A ∩ B| / min(|A|, |B|) ≥ t: the exact join and ``find`` give exactly the
pairs of brute force, sizes far apart included; the option is checked at the door."""

import csv
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup import containment
from neardup.allpairs import all_pairs
from neardup.cli import main
from neardup.pipeline import FindConfig, find_texts
from neardup.shingling import ShingleSets
from neardup.verify import containment_from_jaccard, exact_containment, exact_jaccard


def brute_containment_pairs(sets_, t):
    out = []
    for a, b in itertools.combinations(range(len(sets_)), 2):
        smaller = min(len(sets_[a]), len(sets_[b]))
        if smaller and len(sets_[a] & sets_[b]) / smaller >= t:
            out.append((a, b, len(sets_[a] & sets_[b]) / smaller))
    return out


def unequal_sets(rng, n):
    """Sets of sizes 1 to ~200 over a small universe: many small sets inside big ones."""
    universe = int(rng.integers(10, 300))
    sets_ = []
    for _ in range(n):
        size = int(rng.choice([rng.integers(1, 5), rng.integers(5, 30), rng.integers(50, 200)]))
        sets_.append(set(rng.integers(0, universe, size).tolist()))
    for _ in range(n // 3):  # plant subsets of other sets
        host = sorted(sets_[int(rng.integers(n))])
        keep = rng.random(len(host)) < rng.uniform(0.05, 1.0)
        sets_.append(set(np.asarray(host)[keep].tolist()) or {host[0]})
    return sets_


@pytest.mark.parametrize("seed", range(40))
def test_exact_join_equals_brute_force_on_very_unequal_sizes(seed):
    rng = np.random.default_rng(seed)
    sets_ = unequal_sets(rng, int(rng.integers(2, 40)))
    t = float(rng.choice([0.2, 0.5, 0.7, 0.8, 0.9, 1.0, rng.uniform(0.05, 1.0)]))
    i, j, c = all_pairs(ShingleSets.from_sets(sets_), t, "containment")
    want = brute_containment_pairs(sets_, t)
    assert list(zip(i.tolist(), j.tolist())) == [(a, b) for a, b, _ in want]
    assert np.array_equal(c, np.array([v for _, _, v in want]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sets(st.integers(0, 25), max_size=25), min_size=2, max_size=12),
       st.floats(0.05, 1.0))
def test_exact_join_equals_brute_force_for_any_sets(sets_, t):
    i, j, c = all_pairs(ShingleSets.from_sets(sets_), t, "containment")
    want = brute_containment_pairs(sets_, t)
    assert list(zip(i.tolist(), j.tolist(), c.tolist())) == want


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sets(st.integers(0, 40), max_size=30), min_size=2, max_size=8))
def test_containment_values_are_exact(sets_):
    sets = ShingleSets.from_sets(sets_)
    i, j = np.triu_indices(len(sets_), k=1)
    want = [len(sets_[a] & sets_[b]) / min(len(sets_[a]), len(sets_[b]))
            if min(len(sets_[a]), len(sets_[b])) else 0.0 for a, b in zip(i, j)]
    assert exact_containment(sets, i, j).tolist() == want
    # recovered from the exact Jaccard and the sizes, as the pairs table does
    sizes = sets.sizes
    assert containment_from_jaccard(exact_jaccard(sets, i, j), sizes[i], sizes[j]).tolist() \
        == want


def corpus_with_quotes(seed=0):
    """Documents, some quoted whole inside longer ones, some copied, some unrelated."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{k}" for k in range(400)]
    base = [" ".join(rng.choice(vocabulary, int(rng.integers(6, 40)))) for _ in range(40)]
    texts = list(base)
    for _ in range(30):
        quoted = base[int(rng.integers(len(base)))].split()
        cut = quoted[: max(5, int(len(quoted) * rng.uniform(0.5, 1.0)))]
        padding = list(rng.choice(vocabulary, int(rng.integers(0, 200))))
        at = int(rng.integers(len(padding) + 1))
        texts.append(" ".join(padding[:at] + cut + padding[at:]))
    texts += texts[:5]  # identical copies
    return texts


@pytest.mark.parametrize("threshold", [0.5, 0.8, 1.0])
def test_find_reports_exactly_the_pairs_of_brute_force(threshold):
    texts = corpus_with_quotes()
    result = find_texts(texts, threshold=threshold, shingle_kind="word", shingle_size=1,
                        measure="containment", keep_arrays=True)
    assert result.counts["method"] == "exact"
    assert "containment" in result.counts["method_choice"]["reason"]
    offsets, values = result.sets.offsets, result.sets.values
    sets_ = [set(values[offsets[d]:offsets[d + 1]].tolist()) for d in range(len(texts))]
    usable = [d for d in range(len(texts)) if len(sets_[d]) >= 5]
    want = [(usable[a], usable[b], v) for a, b, v in
            brute_containment_pairs([sets_[d] for d in usable], threshold)]
    table = result.pairs_table()
    got = list(zip(table.column("doc_a").to_pylist(), table.column("doc_b").to_pylist()))
    assert got == [(a, b) for a, b, _ in want]
    assert len(want) >= 10  # the copies and the quotes cut at more than t
    assert table.column("containment").to_pylist() == [round(v, 6) for _, _, v in want]
    jaccard = [round(len(sets_[a] & sets_[b]) / len(sets_[a] | sets_[b]), 6)
               for a, b, _ in want]
    assert table.column("jaccard").to_pylist() == jaccard
    assert any(j < threshold for j in jaccard) or threshold == 1.0
    candidates = result.candidates_table()
    assert all(candidates.column("verified").to_pylist())
    assert table.column_names == ["id_a", "id_b", "jaccard", "containment", "estimate",
                                  "doc_a", "doc_b"]


def test_the_option_is_checked_at_the_door_and_refused_where_unsound():
    with pytest.raises(ValueError, match="measure must be one of"):
        FindConfig(measure="overlap")
    assert FindConfig(measure="containment", method="lsh").method == "lsh"  # no refusal
    with pytest.raises(ValueError, match="chooses bands x rows for each pair of size"):
        FindConfig(measure="containment", method="lsh", bands=16)
    from neardup import spark

    with pytest.raises(ValueError, match="not supported by the Spark engine"):
        spark._check_find_config(FindConfig(measure="containment"))


def test_memory_limit_is_refused(tmp_path, write_lines):
    path = tmp_path / "docs.txt"
    write_lines(path, corpus_with_quotes())
    with pytest.raises(ValueError, match="^--measure containment is not supported with "
                                         "memory_limit .*holds every set in memory"):
        neardup.find(path, measure="containment", memory_limit="64M")


def test_cli_writes_the_containment_column(tmp_path, write_lines):
    path = tmp_path / "docs.txt"
    texts = corpus_with_quotes(seed=1)
    write_lines(path, texts)
    out = tmp_path / "out"
    code = main(["find", str(path), "--shingle", "word", "--ngram", "1", "-t", "0.9",
                 "--measure", "containment", "--out", str(out), "-q"])
    assert code == 0
    library = neardup.find(path, shingle_kind="word", shingle_size=1, threshold=0.9,
                           measure="containment")
    with open(out / "pairs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["containment"]) for r in rows] == library.pairs_table().column(
        "containment").to_pylist()
    assert min(float(r["containment"]) for r in rows) >= 0.9
    assert len(rows) == library.counts["pairs"] > 0


# ---------------------------------------------------------------- method "lsh": size classes


@pytest.mark.parametrize("seed", range(25))
def test_exact_join_limited_to_smaller_sets_equals_brute_force(seed):
    """The fallback's join: only pairs whose smaller set is below the larger one's bound."""
    rng = np.random.default_rng(seed)
    sets_ = unequal_sets(rng, int(rng.integers(2, 40)))
    t = float(rng.choice([0.5, 0.8, 1.0, rng.uniform(0.1, 1.0)]))
    sizes = np.array([len(s) for s in sets_])
    by_size = rng.integers(1, 250, size=sizes.max() + 1)  # a bound that depends on size only
    i, j, c = all_pairs(ShingleSets.from_sets(sets_), t, "containment",
                        smaller_than=by_size[sizes])
    want = [(a, b, v) for a, b, v in brute_containment_pairs(sets_, t)
            if min(sizes[a], sizes[b]) < by_size[max(sizes[a], sizes[b])]]
    assert list(zip(i.tolist(), j.tolist(), c.tolist())) == want


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.95])
def test_every_contained_pair_has_the_jaccard_floor_of_its_class_pair(threshold):
    """t_ij = t / (1 + R_ij - t) bounds the Jaccard of every pair with containment >= t."""
    rng = np.random.default_rng(3)
    sets_ = [s for s in unequal_sets(rng, 80) if s]
    sizes = np.array([len(s) for s in sets_])
    classes = containment.size_classes(sizes)
    floors = {(p.small, p.large): p.jaccard_floor
              for p in containment.plan_class_pairs(sizes, threshold, 128)}
    checked = 0
    for a, b, _ in brute_containment_pairs(sets_, threshold):
        jaccard = len(sets_[a] & sets_[b]) / len(sets_[a] | sets_[b])
        key = tuple(sorted((int(classes[a]), int(classes[b]))))
        assert jaccard >= floors[key] - 1e-12
        checked += 1
    assert checked > 20


def pasted_corpus(seed=0):
    """Small documents pasted (a third whole, the others cut to 60-100 %) inside hosts 1.05x
    to 40x their length, plus unrelated documents of every size and identical copies."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{k}" for k in range(20_000)])
    texts = []
    for _ in range(120):
        small = list(rng.choice(words, int(rng.integers(20, 300))))
        texts.append(" ".join(small))
        kept = 1.0 if rng.random() < 1 / 3 else rng.uniform(0.6, 1.0)
        cut = small[: int(len(small) * kept)]
        ratio = float(rng.choice([1.05, 1.1, 1.2, 1.3, 1.5, 1.7, 2.5, 4.0, 8.0, 40.0]))
        padding = list(rng.choice(words, int(len(small) * (ratio - 1)) + 1))
        at = int(rng.integers(len(padding) + 1))
        texts.append(" ".join(padding[:at] + cut + padding[at:]))
    texts += [" ".join(rng.choice(words, int(rng.integers(20, 3000)))) for _ in range(60)]
    return texts + texts[:4]


def set_pairs(result):
    return dict(zip(zip(result.pair_set.set_i.tolist(), result.pair_set.set_j.tolist()),
                    result.pair_set.jaccard.tolist()))


@pytest.mark.parametrize("threshold", [0.7, 0.8, 0.9])
def test_lsh_pairs_are_exact_pairs_and_recall_is_high(threshold):
    texts = pasted_corpus()
    options = dict(threshold=threshold, shingle_kind="word", shingle_size=3,
                   measure="containment", keep_arrays=True)
    exact = find_texts(texts, method="exact", **options)
    approximate = find_texts(texts, method="lsh", **options)
    assert approximate.counts["method"] == "lsh"
    truth, found = set_pairs(exact), set_pairs(approximate)
    assert set(found) <= set(truth)  # precision 1.0
    assert all(found[pair] == truth[pair] for pair in found)
    table, want = approximate.pairs_table(), exact.pairs_table()
    values = dict(zip(zip(want.column("doc_a").to_pylist(), want.column("doc_b").to_pylist()),
                      want.column("containment").to_pylist()))
    got = dict(zip(zip(table.column("doc_a").to_pylist(), table.column("doc_b").to_pylist()),
                   table.column("containment").to_pylist()))
    assert got and all(values[pair] == value for pair, value in got.items())
    # recall among the pairs clearly above t (the S-curve's promise), on both sides
    sets = exact.sets
    a, b = np.array(list(truth), dtype=np.int64).T
    clear = exact_containment(sets, a, b) >= threshold + 0.1
    hits = np.array([pair in found for pair in zip(a.tolist(), b.tolist())])
    assert clear.sum() >= 40 and hits[clear].mean() >= 0.95
    # and among those the LSH passes had to find (size classes with an LSH plan)
    classes = containment.size_classes(sets.sizes)
    plans = {(p.small, p.large): p.plan for p in containment.plan_class_pairs(
        sets.sizes[sets.sizes >= 5], threshold, 128)}
    by_lsh = np.array([plans[tuple(sorted((int(classes[x]), int(classes[y]))))] is not None
                       for x, y in zip(a.tolist(), b.tolist())])
    assert (clear & by_lsh).sum() >= 10 and hits[clear & by_lsh].mean() >= 0.95
    # both searches took part: LSH inside near sizes, the join for far ratios
    search = approximate.counts["containment_search"]
    assert search["class_pairs_lsh"] > 0 and search["class_pairs_exact"] > 0
    assert search["lsh_candidates"] > 0 and search["exact_pairs"] > 0
    assert approximate.counts["candidates"] == approximate.candidates_table().num_rows
    assert approximate.counts["candidates"] == search["lsh_candidates"] + search["exact_pairs"]
    assert approximate.counts["identical_pairs"] == exact.counts["identical_pairs"] > 0


def test_lsh_path_is_deterministic():
    texts = pasted_corpus(seed=1)
    runs = [find_texts(texts, threshold=0.8, shingle_kind="word", shingle_size=3,
                       measure="containment", method="lsh", seed=7) for _ in range(2)]
    assert set_pairs(runs[0]) == set_pairs(runs[1])
    assert np.array_equal(runs[0].candidates["i"], runs[1].candidates["i"])
    assert np.array_equal(runs[0].candidates["j"], runs[1].candidates["j"])


def test_cli_method_lsh_mirrors_the_library(tmp_path, capsys, write_lines):
    path = tmp_path / "docs.txt"
    write_lines(path, pasted_corpus(seed=2))
    out = tmp_path / "out"
    assert main(["find", str(path), "--shingle", "word", "--ngram", "3", "-t", "0.8",
                 "--measure", "containment", "--method", "lsh", "--out", str(out)]) == 0
    assert "LSH by size class:" in capsys.readouterr().out
    library = neardup.find(path, shingle_kind="word", shingle_size=3, threshold=0.8,
                           measure="containment", method="lsh")
    with open(out / "pairs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["doc_a"]), int(r["doc_b"])) for r in rows] == list(zip(
        library.pairs_table().column("doc_a").to_pylist(),
        library.pairs_table().column("doc_b").to_pylist()))
    assert len(rows) == library.counts["pairs"] > 0


@pytest.mark.parametrize("texts", [[], ["one two three four five six"],
                                   ["a b", "one two three four five six seven"]])
def test_lsh_path_on_inputs_with_fewer_than_two_sets(texts):
    result = find_texts(texts, threshold=0.8, shingle_kind="word", shingle_size=1,
                        measure="containment", method="lsh")
    assert result.counts["pairs"] == 0 and result.counts["candidates"] == 0
