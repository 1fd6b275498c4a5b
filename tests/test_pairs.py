"""Every document pair is reported and counted: identical copies never hide pairs.

The truth is brute force over every pair of documents (the sparse product of the
document × shingle matrix, no grouping); the listing, the counts and the files of each
path (LSH, the exact join, a memory limit, the CLI) must equal it.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup import pairs, sinks
from neardup.cli import main
from neardup.evaluate import brute_force_document_pairs, evaluate_texts
from neardup.pipeline import find_texts
from neardup.synthetic import brute_force_pairs, planted_corpus

SHINGLES = dict(shingle_kind="word", shingle_size=1)


@pytest.fixture(scope="module")
def copies_corpus():
    """Planted near-duplicates, then identical groups of 2-8 copies, some of documents
    that have near-duplicates (so whole groups pair with other groups), shuffled."""
    rng = np.random.default_rng(11)
    base = planted_corpus(700, doc_words=60, dup_fraction=0.12, similarity=(0.45, 1.0),
                          vocabulary=20_000, seed=3)
    texts = list(base.texts)
    chosen = np.concatenate([base.planted_i[:25], base.planted_j[:15],
                             rng.choice(len(texts), 20)])
    for d in chosen:
        texts += [texts[d]] * int(rng.integers(1, 8))
    texts = [texts[k] for k in rng.permutation(len(texts))]
    texts[5] = "too short"  # set aside: never paired
    return texts, [f"d{k:04d}" for k in range(len(texts))]


def truth_of(result, threshold):
    bi, bj, bjac = brute_force_pairs(result.sets, threshold)
    usable = result.shingle_counts >= result.config.min_shingles
    keep = usable[bi] & usable[bj]
    return dict(zip(zip(bi[keep].tolist(), bj[keep].tolist()), bjac[keep].tolist()))


def listed(result):
    return dict(zip(zip(result.pair_i.tolist(), result.pair_j.tolist()),
                    result.jaccard.tolist()))


@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_exact_method_reports_exactly_the_brute_force_pairs(copies_corpus, threshold):
    texts, ids = copies_corpus
    result = find_texts(texts, ids, method="exact", threshold=threshold, keep_arrays=True,
                        **SHINGLES)
    truth = truth_of(result, threshold)
    found = listed(result)
    assert set(found) == set(truth)
    assert all(abs(found[p] - truth[p]) < 1e-9 for p in truth)
    c = result.counts
    assert c["pairs"] == len(truth) == result.pair_i.size
    assert c["identical_pairs"] == sum(jac == 1.0 for jac in truth.values())
    assert c["pairs"] == c["identical_pairs"] + c["near_duplicate_pairs"]
    assert c["identical_pairs"] > 100 and c["near_duplicate_pairs"] > c["set_pairs"]
    codes = result.pair_i * len(texts) + result.pair_j  # sorted, doc_a < doc_b, no repeat
    assert np.all(result.pair_i < result.pair_j) and np.all(np.diff(codes) > 0)


@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_lsh_pairs_are_true_pairs_and_miss_only_what_the_s_curve_allows(copies_corpus,
                                                                         threshold):
    texts, ids = copies_corpus
    result = find_texts(texts, ids, method="lsh", threshold=threshold, keep_arrays=True,
                        **SHINGLES)
    truth = truth_of(result, threshold)
    found = listed(result)
    assert set(found) <= set(truth)  # precision 1.0, exact Jaccard
    assert all(abs(found[p] - truth[p]) < 1e-9 for p in found)
    assert {p for p, jac in truth.items() if jac == 1.0} <= set(found)  # copies: always
    clear = {p for p, jac in truth.items() if jac >= threshold + 0.1}
    assert len(clear & set(found)) / len(clear) >= 0.99
    assert result.counts["pairs"] == len(found)
    # each pair of distinct sets stands for every pair of their groups' documents
    set_pairs = result.set_pairs_table()
    assert set_pairs.num_rows == result.counts["set_pairs"]
    assert result.counts["near_duplicate_pairs"] > set_pairs.num_rows


def test_memory_limit_writes_the_same_pair_files(copies_corpus, tmp_path, monkeypatch):
    from neardup.pipeline import outofcore

    monkeypatch.setattr(outofcore, "COSTS", outofcore.MemoryCosts.chunks_only())  # many chunks
    texts, ids = copies_corpus
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
    options = dict(id_field="id", threshold=0.6, method="lsh", **SHINGLES)
    for fmt in ("csv", "parquet", "jsonl"):
        whole = neardup.find(str(path), out=tmp_path / f"whole-{fmt}", output_format=fmt,
                             **options)
        chunked = neardup.find(str(path), out=tmp_path / f"chunked-{fmt}", output_format=fmt,
                               memory_limit="1M", work_dir=tmp_path, **options)
        assert chunked.counts["chunks"]["chunks_read"] >= 3
        for name in ("pairs", "identical", "clusters", "documents"):
            assert ((tmp_path / f"whole-{fmt}" / f"{name}.{fmt}").read_bytes()
                    == (tmp_path / f"chunked-{fmt}" / f"{name}.{fmt}").read_bytes()), name
    rows = pq.read_table(tmp_path / "whole-parquet" / "pairs.parquet")
    assert rows.num_rows == whole.counts["pairs"] == chunked.counts["pairs"]
    assert whole.counts["identical_pairs"] > 100


def test_1600_copies_are_1279200_pairs_counted_written_and_expanded(tmp_path):
    texts = (["the same job advert, posted again and again by one agency"] * 1600
             + ["a different text entirely, about the weather in spring"]
             + ["the same job advert, posted again and again by one agency!"] * 3)
    full = neardup.find_texts(texts, threshold=0.8, method="lsh")
    n_pairs = 1600 * 1599 // 2 + 3 + 1600 * 3  # copies, the variant's copies, across
    assert full.counts["pairs"] == n_pairs
    assert full.counts["identical_pairs"] == 1_279_200 + 3
    assert full.counts["near_duplicate_pairs"] == 4800 and full.counts["set_pairs"] == 1
    sinks.write_result(full, tmp_path / "all", "parquet")
    written = pq.read_table(tmp_path / "all" / "pairs.parquet")
    assert written.num_rows == n_pairs
    assert written.equals(full.pairs_table())
    # the compact form: pairs of distinct sets + the identical groups, expandable
    compact = neardup.find_texts(texts, threshold=0.8, method="lsh", pairs="groups")
    paths = sinks.write_result(compact, tmp_path / "groups", "csv")
    assert "pairs" not in paths and not (tmp_path / "groups" / "pairs.csv").exists()
    set_pairs = read_csv(tmp_path / "groups" / "set_pairs.csv")
    identical = read_csv(tmp_path / "groups" / "identical.csv")
    assert set_pairs.num_rows == 1 and identical.num_rows == 1603
    expanded = pairs.expand(set_pairs, identical)
    assert expanded.num_rows == n_pairs
    for name in ("id_a", "id_b", "doc_a", "doc_b", "jaccard"):
        assert expanded.column(name).to_pylist() == written.column(name).to_pylist(), name


@pytest.mark.parametrize("fmt", sinks.OUTPUT_FORMATS)
def test_expand_lists_every_pair_from_either_layout(copies_corpus, tmp_path, monkeypatch, fmt):
    """``pairs="groups"`` written as one file a table or as parts, read back by
    read_results: expand gives the listing ``pairs="all"`` writes, row for row."""
    monkeypatch.setattr(sinks, "PART_ROWS", 7)  # several parts of set_pairs and identical
    texts, ids = copies_corpus
    full = find_texts(texts, ids, threshold=0.6, method="lsh", **SHINGLES)
    compact = find_texts(texts, ids, threshold=0.6, method="lsh", pairs="groups", **SHINGLES)
    sinks.write_result(full, tmp_path / "all", fmt)
    listed = neardup.read_results(tmp_path / "all")["pairs"]
    for layout in ("single", "parts"):
        sinks.write_result(compact, tmp_path / layout, fmt, layout=layout)
        read = neardup.read_results(tmp_path / layout)
        assert "pairs" not in read and read.layout == layout
        expanded = pairs.expand(read["set_pairs"], read["identical"])
        assert expanded.num_rows == full.counts["pairs"] > compact.counts["set_pairs"]
        for name in ("id_a", "id_b", "doc_a", "doc_b", "jaccard"):
            assert expanded.column(name).to_pylist() == listed.column(name).to_pylist(), name
        assert read.pairs().to_pylist() == expanded.to_pylist()
    assert len(neardup.read_results(tmp_path / "parts").manifest["tables"]["identical"]
               ["files"]) > 1


def read_csv(path):
    types = {name: pa.string() for name in ("id_a", "id_b", "group", "id")}
    return pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(column_types=types))


def test_more_pairs_than_max_pairs_writes_nothing_and_names_count_and_option(tmp_path,
                                                                               capsys):
    path = tmp_path / "ads.txt"
    path.write_text("the same job advert, posted again and again by one agency\n" * 200)
    with pytest.raises(ValueError, match="19,900 document pairs.*--max-pairs 1,000.*--pairs "
                                         "groups"):
        neardup.find(str(path), out=tmp_path / "out", max_pairs=1000)
    assert not (tmp_path / "out").exists()
    code = main(["find", str(path), "--out", str(tmp_path / "cli"), "--max-pairs", "1000",
                 "-q"])
    assert code == 2 and not (tmp_path / "cli").exists()
    assert "19,900 document pairs" in capsys.readouterr().err
    # 0 lifts the limit; groups writes the compact form whatever the count
    assert main(["find", str(path), "--out", str(tmp_path / "all"), "--max-pairs", "0",
                 "-q"]) == 0
    assert (tmp_path / "all" / "pairs.csv").read_text().count("\n") == 19_900 + 1
    assert main(["find", str(path), "--out", str(tmp_path / "groups"), "--max-pairs", "1000",
                 "--pairs", "groups", "-q"]) == 0
    out = capsys.readouterr().out
    assert "pairs 19,900 document pairs" in out and "19,900 inside identical groups" in out
    summary = json.loads((tmp_path / "groups" / "summary.json").read_text())
    assert summary["counts"]["pairs"] == 19_900 and summary["config"]["pairs"] == "groups"


def reference_listing(head, set_i, set_j, jaccard):
    """Every document pair, by plain Python loops over groups: the kernel's reference."""
    groups: dict[int, list[int]] = {}
    for d, h in enumerate(head.tolist()):
        if h >= 0:
            groups.setdefault(h, []).append(d)
    rows = []
    for members in groups.values():
        rows += [(a, b, 1.0) for a, b in itertools.combinations(sorted(members), 2)]
    for i, j, jac in zip(set_i.tolist(), set_j.tolist(), jaccard.tolist()):
        rows += [(min(a, b), max(a, b), jac) for a in groups[i] for b in groups[j]]
    return sorted(rows)


def reference_batches(rows, max_rows):
    """The documented batching, document by document over all n: a range [lo, hi) of doc_a
    closes before the first document whose rows would pass max_rows, taking at least lo."""
    ends = np.cumsum(rows)
    total = int(ends[-1]) if ends.size else 0
    ranges, lo, done = [], 0, 0
    while done < total:
        hi = max(int(np.searchsorted(ends, done + max_rows, side="right")), lo + 1)
        ranges.append((lo, hi))
        done += int(rows[lo:hi].sum())
        lo = hi
    return ranges


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_listing_kernel_equals_the_reference_for_any_groups(data):
    """Groups of one (in set pairs or not), copies, documents set aside (head -1): the
    listing, its batches, the counts and the identical table equal plain loops."""
    n = data.draw(st.integers(0, 40))
    group_of = np.array(data.draw(st.lists(st.integers(-1, 8), min_size=n, max_size=n)),
                        dtype=np.int64)
    head = np.full(n, -1, dtype=np.int64)
    for g in np.unique(group_of[group_of >= 0]):
        members = np.flatnonzero(group_of == g)
        head[members] = members[0]
    heads = np.unique(head[head >= 0])
    candidates = list(itertools.combinations(heads.tolist(), 2))
    chosen = data.draw(st.lists(st.sampled_from(candidates), unique=True) if candidates
                       else st.just([]))
    chosen.sort()
    set_i = np.array([c[0] for c in chosen], dtype=np.int64)
    set_j = np.array([c[1] for c in chosen], dtype=np.int64)
    jaccard = np.round(np.linspace(0.5, 0.99, set_i.size), 6)
    pair_set = pairs.PairSet(head, set_i, set_j, jaccard, jaccard / 2)
    expected = reference_listing(head, set_i, set_j, jaccard)
    max_rows = data.draw(st.integers(1, 50))
    batches = list(pair_set.batches(max_rows))
    got = [(a, b, j) for batch in batches for a, b, j in zip(*(x.tolist() for x in batch[:3]))]
    assert got == expected
    assert pair_set.counts()["pairs"] == len(expected)
    assert pair_set.counts()["identical_pairs"] == sum(j == 1.0 for _, _, j in expected)
    assert all(batch[0].size <= max_rows or np.unique(batch[0]).size == 1
               for batch in batches)
    # the same batches as the rule over every document (empty ones included)
    rows = np.bincount(np.array([a for a, _, _ in expected], dtype=np.int64), minlength=n)
    assert np.array_equal(pair_set.row_counts(), rows)
    ranges = reference_batches(rows, max_rows)
    assert len(batches) == len(ranges)
    for batch, (lo, hi) in zip(batches, ranges):
        assert batch[0].tolist() == [a for a, _, _ in expected if lo <= a < hi]
    # only groups that make pairs are held: two or more documents, or a head in a set pair
    sizes = {h: int((head == h).sum()) for h in heads.tolist()}
    held = {h for h, size in sizes.items() if size > 1} | set(set_i.tolist()) | set(set_j.tolist())
    assert pair_set.groups.heads.tolist() == sorted(held)
    ids = pa.array([f"d{k}" for k in range(n)], pa.string())
    table = pairs.identical_table(ids, pair_set)
    copied = sorted(h for h, size in sizes.items() if size > 1)
    docs = [d for h in copied for d in np.flatnonzero(head == h).tolist()]
    assert table.column("doc").to_pylist() == docs
    assert table.column("head_doc").to_pylist() == head[docs].tolist()
    assert table.column("group_size").to_pylist() == [sizes[h] for h in head[docs].tolist()]
    assert table.column("group").to_pylist() == [f"d{h}" for h in head[docs].tolist()]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=6),
       st.lists(st.one_of(st.floats(allow_nan=True), st.none()), min_size=1, max_size=6))
def test_jsonl_rows_read_back_as_the_table_rows(tmp_path_factory, texts, numbers):
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
    k = min(len(texts), len(numbers))
    table = pa.table({"id": texts[:k], "x": pa.array(numbers[:k], pa.float64()),
                      "n": list(range(k)), "ok": [True] * k})
    path = tmp_path_factory.mktemp("jsonl") / "t.jsonl"
    sinks.write_table(table, path)
    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == k + 1
    for line, row in zip(lines, table.to_pylist()):
        back = json.loads(line)
        assert back["id"] == row["id"] and back["n"] == row["n"] and back["ok"] is True
        x = row["x"]
        assert back["x"] is None if x is None or not np.isfinite(x) else back["x"] == x
        assert line.startswith(json.dumps({"id": row["id"]}, ensure_ascii=False)[:-1])


def test_evaluate_counts_document_pairs_and_brute_force_agrees_with_the_exact_join(
        copies_corpus, capsys):
    texts, ids = copies_corpus
    exact = evaluate_texts(texts, threshold=0.6, **SHINGLES)
    brute = evaluate_texts(texts, threshold=0.6, truth="brute", **SHINGLES)
    result = find_texts(texts, ids, method="exact", threshold=0.6, keep_arrays=True,
                        **SHINGLES)
    truth = truth_of(result, 0.6)
    usable = np.flatnonzero(result.shingle_counts >= result.config.min_shingles)
    da, db, dj = brute_force_document_pairs(result.sets, usable, 0.6)
    assert dict(zip(zip(da.tolist(), db.tolist()), dj.tolist())) == pytest.approx(truth)
    for ev in (exact, brute):
        m = ev.metrics
        assert m["true_pairs"] == len(truth)  # copies and their groups' pairs included
        assert m["found"] + m["false_negatives"] == m["true_pairs"]
        assert m["candidates"] == m["found"] + m["false_positives"]
        assert m["identical_pairs"] == sum(j == 1.0 for j in truth.values())
        assert m["recall"] == m["found"] / m["true_pairs"] >= 0.99
    lsh = find_texts(texts, ids, method="lsh", threshold=0.6, **SHINGLES)
    assert exact.metrics["found"] == brute.metrics["found"] == lsh.counts["pairs"]
    assert exact.metrics["candidates"] == brute.metrics["candidates"]


def test_evaluate_cli_prints_the_course_projects_figures(tmp_path, capsys):
    path = tmp_path / "ads.txt"
    path.write_text("the same job advert, posted again and again by one agency\n" * 40
                    + "the same job advert, posted again and again by one agency!\n"
                    + "a different text entirely, about the weather in spring\n")
    assert main(["evaluate", str(path), "--truth", "brute", "-t", "0.8", "-q",
                 "--json", str(tmp_path / "ev.json")]) == 0
    out = capsys.readouterr().out
    assert "true pairs (J >= 0.8, brute force over every document pair): 820" in out
    assert "intersection 820: recall 1.000000" in out
    metrics = json.loads((tmp_path / "ev.json").read_text())["metrics"]
    assert metrics["true_pairs"] == 40 * 39 // 2 + 40 and metrics["identical_pairs"] == 780


def test_report_of_a_compact_folder_counts_document_pairs(tmp_path):
    path = tmp_path / "ads.txt"
    path.write_text("the same job advert, posted again and again by one agency\n" * 30
                    + "the same job advert, posted again and again by one agency!\n" * 2
                    + "a different text entirely, about the weather in spring\n")
    assert main(["find", str(path), "--out", str(tmp_path / "out"), "--pairs", "groups",
                 "--method", "lsh", "-q"]) == 0
    assert main(["report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    n_pairs = 30 * 29 // 2 + 1 + 30 * 2
    assert f"{n_pairs:,} document pairs: 436 inside identical groups" in page
    assert "J = 1.000 with the kept one" in page  # a copy's pair with the kept document
