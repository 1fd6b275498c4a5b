"""Star ("center") clusters: no member below t to its centre, copies never split, the
same centres as a plain Python star cover, and chains broken where components join them."""

import json

import numpy as np
import pytest

import neardup
from neardup import cluster
from neardup.cli import main
from neardup.pipeline import FindConfig, find_texts
from neardup.shingling import ShingleSets
from neardup.synthetic import planted_corpus


def reference_star_cover(head, set_i, set_j):
    """Aslam's star cover, written plainly: groups by (document degree desc, head asc);
    an unassigned group becomes a centre and takes its unassigned neighbours."""
    n = len(head)
    size = {h: sum(1 for x in head if x == h) for h in set(head) if h >= 0}
    neighbours = {h: [] for h in size}
    for a, b in zip(set_i, set_j):
        neighbours[a].append(b)
        neighbours[b].append(a)
    degree = {h: size[h] - 1 + sum(size[g] for g in neighbours[h]) for h in size}
    centre_of = {}
    for h in sorted(size, key=lambda h: (-degree[h], h)):
        if h in centre_of:
            continue
        centre_of[h] = h
        for g in neighbours[h]:
            centre_of.setdefault(g, h)
    return [centre_of[head[d]] if head[d] >= 0 else d for d in range(n)]


def random_groups_and_pairs(rng, n):
    head = np.full(n, -1, dtype=np.int64)
    usable = np.flatnonzero(rng.random(n) < 0.9)
    head[usable] = usable
    for d in usable[1:]:  # some documents copy an earlier usable one
        earlier = usable[usable < d]
        if rng.random() < 0.2 and earlier.size:
            head[d] = head[earlier[rng.integers(earlier.size)]]
    heads = np.flatnonzero(head == np.arange(n))
    m = int(rng.integers(0, 3 * max(heads.size, 1)))
    a, b = rng.choice(heads, m), rng.choice(heads, m)
    keep = a != b
    codes = np.unique(np.minimum(a, b)[keep] * n + np.maximum(a, b)[keep])
    return head, codes // n, codes % n


@pytest.mark.parametrize("seed", range(30))
def test_star_cover_equals_the_plain_reference_and_keeps_its_guarantees(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    head, set_i, set_j = random_groups_and_pairs(rng, n)
    labels, centre = cluster.center_clusters(head, set_i, set_j)
    assert centre.tolist() == reference_star_cover(head.tolist(), set_i.tolist(),
                                                   set_j.tolist())
    edges = set(zip(set_i.tolist(), set_j.tolist()))
    for d in range(n):
        group = head[d] if head[d] >= 0 else d
        c = centre[d]
        # a document's group is its centre's group, or has a verified pair with it
        assert group == c or (min(group, c), max(group, c)) in edges
        assert centre[c] == c  # a centre is its own cluster's centre
    for a, b in edges:  # no two centres have a pair
        assert not (centre[a] == a and centre[b] == b)
    copies = np.flatnonzero(head >= 0)
    assert np.array_equal(centre[copies], centre[head[copies]])  # groups never split
    # labels: the smallest document of each cluster, clusters = documents of one centre
    for c in np.unique(centre):
        members = np.flatnonzero(centre == c)
        assert set(labels[members].tolist()) == {members.min()}
    keep = cluster.center_representatives(head, centre, "first")
    assert sorted(np.flatnonzero(keep).tolist()) == sorted(
        {min(np.flatnonzero(head == c).tolist() or [c]) for c in np.unique(centre)})


def brute_jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def word_sets(texts):
    return [set(t.split()) for t in texts]


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.85])
def test_no_member_is_below_t_to_its_centre(threshold):
    corpus = planted_corpus(300, doc_words=40, dup_fraction=0.3, similarity=(0.4, 1.0),
                            exact_copies=6, seed=int(threshold * 100))
    texts = corpus.texts
    result = find_texts(texts, threshold=threshold, shingle_kind="word", shingle_size=1,
                        clusters="center", method="exact", keep_arrays=True)
    offsets, values = result.sets.offsets, result.sets.values
    sets = [set(values[offsets[d]:offsets[d + 1]].tolist()) for d in range(len(texts))]
    kept_of = {}
    for d in np.flatnonzero(result.representative):
        kept_of[result.labels[d]] = d
    members = np.flatnonzero(~result.representative)
    assert members.size > 20
    lowest = min(brute_jaccard(sets[d], sets[kept_of[result.labels[d]]]) for d in members)
    assert lowest >= threshold
    assert result.counts["min_member_similarity"] == pytest.approx(lowest, abs=1e-6)
    assert np.bincount(result.labels[result.representative]).max() == 1  # one kept each
    # every cluster of "center" lies inside one component
    components = find_texts(texts, threshold=threshold, shingle_kind="word",
                            shingle_size=1, method="exact")
    for label in np.unique(result.labels):
        assert np.unique(components.labels[result.labels == label]).size == 1
    assert result.counts["pairs"] == components.counts["pairs"]  # same pairs, other clusters
    assert "min_member_similarity" not in components.counts  # the default is unchanged


def chain_of_versions(versions=30, words=60, edits=3, seed=0):
    """Each version replaces ``edits`` words of the previous one with new words."""
    rng = np.random.default_rng(seed)
    current = [f"w{k}" for k in range(words)]
    fresh = words
    texts = []
    for _ in range(versions):
        texts.append(" ".join(current))
        current = list(current)
        for position in rng.choice(words, edits, replace=False):
            current[position] = f"w{fresh}"
            fresh += 1
    return texts


def test_a_chain_is_one_component_but_several_centres():
    texts = chain_of_versions()
    sets = word_sets(texts)
    t = 0.8
    assert all(brute_jaccard(sets[k], sets[k + 1]) >= t for k in range(len(texts) - 1))
    assert brute_jaccard(sets[0], sets[-1]) < 0.2
    options = dict(threshold=t, shingle_kind="word", shingle_size=1, method="exact")
    components = find_texts(texts, **options)
    centres = find_texts(texts, clusters="center", **options)
    assert np.unique(components.labels).size == 1  # the chain joins every version
    assert np.unique(centres.labels).size >= 4
    assert np.unique(centres.labels).size == centres.representative.sum()
    shingled = ShingleSets.from_sets([sorted(hash(w) & 0xFFFFFFFF for w in s) for s in sets])
    _, _, chained = cluster.member_similarities(shingled, components.labels,
                                                components.representative)
    _, _, starred = cluster.member_similarities(shingled, centres.labels,
                                                centres.representative)
    assert chained.min() < 0.2  # components keep v_0 for versions that share little
    assert starred.min() >= t
    assert centres.counts["min_member_similarity"] >= t


def test_dedup_with_center_keeps_exactly_the_centres_and_the_singletons():
    texts = chain_of_versions(seed=3) + ["a lone document with words of its own here"] * 2 + [
        "another lone text that matches nothing else at all"]
    options = dict(threshold=0.8, shingle_kind="word", shingle_size=1, clusters="center")
    result = neardup.find(texts, **options)
    kept = neardup.dedup(texts, **options)
    centres = {int(result.labels[d]): d for d in np.flatnonzero(result.representative)}
    sizes = np.bincount(result.labels, minlength=len(texts))
    singletons = [d for d in range(len(texts)) if sizes[result.labels[d]] == 1]
    expected = sorted(set(centres.values()) | set(singletons))
    assert kept == [texts[d] for d in expected]
    assert len(centres) == np.unique(result.labels).size  # one centre per cluster
    assert len(texts) - len(kept) == result.counts["removable"]


def test_the_option_is_checked():
    # (the Spark engine runs it too: tests/spark/test_spark.py holds it to the local one)
    with pytest.raises(ValueError, match="clusters must be one of"):
        FindConfig(clusters="stars")


def test_cli_center_reports_the_lowest_member_similarity(tmp_path, capsys, write_lines):
    path = tmp_path / "versions.txt"
    write_lines(path, chain_of_versions(seed=5))
    out = tmp_path / "out"
    code = main(["find", str(path), "--shingle", "word", "--ngram", "1", "-t", "0.8",
                 "--clusters", "center", "--out", str(out), "-q"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["clusters"] == "center"
    assert summary["counts"]["min_member_similarity"] >= 0.8
    assert summary["counts"]["clusters"] >= 4
    assert "lowest similarity to the kept document" in capsys.readouterr().out


def test_dedup_removes_a_document_only_for_a_kept_one_at_least_t_to_it(tmp_path, capsys):
    """Issue 22, D10: 40 versions, each 2 of 100 words off the previous one. Components
    (dedup's old default) keep v_0 alone and remove versions that share little with it;
    dedup's default, centre clusters, removes a version only for a kept one >= t to it
    (brute force), and the summary's lowest similarity is the true lowest."""
    texts = chain_of_versions(versions=40, words=100, edits=2, seed=7)
    path = tmp_path / "versions.jsonl"
    path.write_text("".join(json.dumps({"id": f"v{k}", "text": t}) + "\n"
                            for k, t in enumerate(texts)))
    t = 0.8
    options = dict(threshold=t, shingle_kind="word", shingle_size=1)
    result = neardup.dedup(str(path), tmp_path / "dd.jsonl", **options)
    sets = word_sets(texts)
    kept = np.flatnonzero(result.representative)
    kept_of = {int(result.labels[d]): d for d in kept}
    removed = np.flatnonzero(~result.representative)
    assert removed.size > 0
    to_kept = [brute_jaccard(sets[d], sets[kept_of[int(result.labels[d])]]) for d in removed]
    assert min(to_kept) >= t
    assert result.counts["min_member_similarity"] == pytest.approx(min(to_kept), abs=1e-6)
    assert result.config.clusters == cluster.DEDUP_CLUSTERS == "center"
    written = [json.loads(line)["id"] for line in (tmp_path / "dd.jsonl").open()]
    assert written == [f"v{d}" for d in kept]
    # what components did: one kept, a removed version far below t from it
    chained = neardup.dedup(str(path), tmp_path / "chained.jsonl", clusters="components",
                            **options)
    assert chained.representative.sum() == 1
    assert min(brute_jaccard(sets[0], s) for s in sets) < t / 2
    # the command line: the same default, the lowest similarity in its summary; find
    # still clusters by components unless told
    assert main(["dedup", str(path), "-o", str(tmp_path / "cli.jsonl"), "-t", "0.8",
                 "--shingle", "word", "--ngram", "1", "-q"]) == 0
    assert (tmp_path / "cli.jsonl").read_bytes() == (tmp_path / "dd.jsonl").read_bytes()
    assert (f"lowest similarity to the kept document {min(to_kept):.4f}"
            in capsys.readouterr().out)
    assert neardup.find(str(path), **options).config.clusters == "components"
