"""The Spark engine gives the local engine's results: every document pair, estimates, clusters,
keepers, and the same files byte for byte."""

import dataclasses
import json
import os

import numpy as np
import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

# every test here needs pyspark and Java (skipped without) and the session: a JVM, about a
# minute to start
pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup import cli, sinks  # noqa: E402
from neardup import spark as neardup_spark  # noqa: E402
from neardup.evaluate import evaluate_texts  # noqa: E402
from neardup.pairs import PAIR_SCHEMA, expand  # noqa: E402
from neardup.spark import stages as spark_stages  # noqa: E402
from neardup.spark import write as spark_write  # noqa: E402
from neardup.synthetic import brute_force_pairs, planted_corpus  # noqa: E402

OPTIONS = dict(shingle_kind="word", shingle_size=1, threshold=0.7, representative="longest",
               method="lsh")


@pytest.fixture(scope="module")
def corpus():
    """Planted near-duplicates, documents set aside, and identical groups of 2 to 5 copies,
    some of both sides of a planted pair: one pair of distinct sets then stands for
    g_A x g_B document pairs. Copies land at random places, often before their source
    (the group's head is then the copy, and a member of B's group may precede A's)."""
    c = planted_corpus(1500, dup_fraction=0.08, similarity=(0.4, 1.0), exact_copies=20, seed=3)
    texts, ids = list(c.texts), list(c.ids)
    strong = np.flatnonzero(c.planted_jaccard >= 0.8)  # sure to be found by LSH
    base, near = c.planted_i[strong], c.planted_j[strong]
    lone = int(np.setdiff1d(np.arange(100), c.planted_i)[0])  # no planted near-duplicate
    extra = [(base[0], 3), (near[0], 1), (base[1], 1), (near[1], 2), (near[2], 4),
             (base[3], 2), (lone, 2)]  # (source, copies added)
    rng = np.random.default_rng(11)
    for source, count in extra:
        for k in range(count):
            at = int(rng.integers(0, len(texts) + 1))
            texts.insert(at, c.texts[source])
            # "=": a CSV cell a spreadsheet would run, escaped alike by both engines' writer
            ids.insert(at, f"{'=' if source == lone else ''}copy{k}-{c.ids[source]}")
    for at, text in ((0, ""), (700, "   "), (1200, "w1 w2")):  # set aside: < min_shingles
        texts.insert(at, text)
        ids.insert(at, f"short{at}")
    return texts, ids


def _both_engines(spark, corpus, options: dict):
    """The corpus through both engines: (local FindResult with its sets, Spark result)."""
    texts, ids = corpus
    local = neardup.find_texts(texts, ids, keep_arrays=True, **options)
    # shuffled across partitions: numbering comes from order_col, not from the layout
    df = spark.createDataFrame(list(zip(range(len(texts)), ids, texts)),
                               "position long, id string, text string").repartition(3)
    return local, neardup_spark.find(df, order_col="position", **options)


@pytest.fixture(scope="module")
def runs(spark, corpus):
    return _both_engines(spark, corpus, OPTIONS)


def _rows(table):
    return table.to_pylist()


def test_planted_corpus_same_pairs_clusters_and_counts_as_local(runs):
    local, result = runs
    c = local.counts
    sizes = set(local.identical_table().column("group_size").to_pylist())
    assert {2, 3, 4, 5} <= sizes  # groups of several sizes
    assert c["near_duplicate_pairs"] > c["set_pairs"] > 50  # groups on both sides expand
    assert c["pairs"] == c["identical_pairs"] + c["near_duplicate_pairs"]

    pairs = spark_write._to_arrow(result.pairs)
    assert pairs.num_rows == c["pairs"]
    assert _rows(pairs) == _rows(local.pairs_table())  # ids, exact J, estimate, doc numbers
    for name in ("set_pairs", "identical", "clusters", "documents", "candidates"):
        assert (_rows(spark_write._to_arrow(getattr(result, name)))
                == _rows(getattr(local, f"{name}_table")())), name
    assert result.counts == local.counts
    assert list(result.counts) == list(local.counts)  # summary.json: same key order


@pytest.mark.parametrize("representative", ["first", "longest"])
def test_center_clusters_same_clusters_keepers_and_counts_as_local(spark, corpus,
                                                                   representative):
    # a chain of versions too: components join it whole, stars keep a document per star
    texts, ids = corpus
    words = [f"w{k}" for k in range(100)]
    chain = []
    for version in range(30):
        words = words[:version * 2] + [f"v{version}a", f"v{version}b"] + words[version * 2 + 2:]
        chain.append(" ".join(words))
    options = dict(OPTIONS, representative=representative, clusters="center", threshold=0.8)
    local, result = _both_engines(spark, (texts + chain, ids + [f"v{k}" for k in range(30)]),
                                  options)
    assert local.counts["min_member_similarity"] >= 0.8
    for name in ("pairs", "identical", "clusters", "documents"):
        assert (_rows(spark_write._to_arrow(getattr(result, name)))
                == _rows(getattr(local, f"{name}_table")())), name
    assert result.counts == local.counts
    assert list(result.counts) == list(local.counts)
    kept = np.flatnonzero(local.representative)
    assert kept.size < len(local.ids) - 20  # clusters of several documents were formed


def test_pairs_are_every_document_pair_with_j_at_least_t(runs):
    local, result = runs
    t = local.config.threshold
    truth_i, truth_j, truth_jaccard = brute_force_pairs(local.sets, t)
    usable = local.sets.sizes >= local.config.min_shingles
    keep = usable[truth_i] & usable[truth_j]
    truth = {(int(i), int(j)): float(x)
             for i, j, x in zip(truth_i[keep], truth_j[keep], truth_jaccard[keep])}
    found = {(r["doc_a"], r["doc_b"]): r["jaccard"]
             for r in spark_write._to_arrow(result.pairs).to_pylist()}
    assert all(a < b for a, b in found)
    assert all(pair in truth and round(truth[pair], 6) == x for pair, x in found.items())
    assert {p for p, x in truth.items() if x >= t + 0.1} <= set(found)  # LSH recall there
    identical = {p for p, x in truth.items() if x == 1.0}
    assert len(identical) == local.counts["identical_pairs"] > 0
    assert all(found.get(p) == 1.0 for p in identical)  # grouped exactly: never missed


def _same_files(local_dir, spark_dir):
    names = sorted(p.name for p in local_dir.iterdir())
    assert names == sorted(p.name for p in spark_dir.iterdir())
    for name in names:
        if name != "timings.json":  # seconds differ from run to run
            assert (spark_dir / name).read_bytes() == (local_dir / name).read_bytes(), name
    return names


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize("engines", ["runs", "simhash_runs"])  # MinHash + LSH, SimHash
def test_written_files_same_bytes_as_local(request, engines, tmp_path, fmt):
    local, result = request.getfixturevalue(engines)
    sinks.write_result(local, tmp_path / "local", fmt)
    neardup_spark.write_result(result, tmp_path / "spark", fmt, layout="single")
    names = _same_files(tmp_path / "local", tmp_path / "spark")
    assert {f"{name}.{fmt}" for name in ("pairs", "identical", "clusters", "documents",
                                         "candidates")} | {"summary.json"} <= set(names)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_parts_layout_same_rows_in_order_as_local_every_table(runs, tmp_path, fmt, many_parts,
                                                              manifest_is_true):
    local, result = runs
    sinks.write_result(local, tmp_path / "local", fmt)
    neardup_spark.write_result(result, tmp_path / "spark", fmt)  # auto: parts on Spark
    single, parts = (neardup.read_results(tmp_path / e) for e in ("local", "spark"))
    assert (single.layout, parts.layout) == ("single", "parts")
    names = ["pairs", "identical", "clusters", "documents", "candidates"]
    assert list(parts.tables) == list(single.tables) == names
    for name in names:  # through the same reader: CSV escapes and JSON types alike
        assert _rows(parts[name]) == _rows(single[name]), name
        if fmt == "parquet":  # the local tables, their schema included
            assert parts[name].equals(getattr(local, f"{name}_table")()), name
    manifest = manifest_is_true(tmp_path / "spark")  # rows, bytes, SHA-256 recomputed
    files = {name: manifest["tables"][name]["files"] for name in names}
    assert len(files["pairs"]) > 1 and len(files["documents"]) > 1  # several partitions
    for name, listed in files.items():
        numbers = [int(f.split("part-")[1].split(".")[0]) for f in listed]
        assert numbers == sorted(numbers) and all(f.startswith(f"{name}/") for f in listed)
    assert manifest["tables"]["pairs"]["rows"] == local.counts["pairs"]
    assert ((tmp_path / "spark" / "summary.json").read_bytes()
            == (tmp_path / "local" / "summary.json").read_bytes())
    if fmt == "csv":  # neardup report reads the parts as it reads the single files
        from neardup import report

        for engine in ("local", "spark"):
            assert cli.main(["report", str(tmp_path / engine), "-o",
                             str(tmp_path / f"{engine}.html")]) == 0
        local_data, spark_data = (report.load(tmp_path / e) for e in ("local", "spark"))
        assert spark_data.ids == local_data.ids
        assert spark_data.head.tolist() == local_data.head.tolist()
        for name in ("doc_a", "doc_b", "jaccard"):
            assert spark_data.pairs[name].tolist() == local_data.pairs[name].tolist(), name
            assert (spark_data.candidates[name].tolist()
                    == local_data.candidates[name].tolist()), name


@pytest.mark.parametrize("held", [True, False], ids=["driver holds the columns", "jobs"])
def test_files_run_same_tables_and_repeated_ids_as_local_either_way(spark, corpus, tmp_path,
                                                                     monkeypatch, held):
    """A find on files: the driver holds every document's columns (identical sets, the
    repeated ids and the documents table from them, no job for each) or, past
    DRIVER_DOCUMENTS, a Spark job does each; both give the local engine's tables."""
    from collections import Counter

    from neardup.spark import found as spark_found

    if not held:
        monkeypatch.setattr(spark_found, "DRIVER_DOCUMENTS", 0)
    texts, ids = zip(*[(t, i) for t, i in zip(*corpus) if t.strip()])  # all documents
    ids = [ids[k] if k % 97 else ids[k // 2] for k in range(len(ids))]  # some ids again
    path = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": i, "text": t}) for i, t in zip(ids, texts)]
    # records that are no documents: malformed, without text, an empty text, blank lines
    for at, line in ((0, "not json"), (40, '{"id": "x1"}'), (41, ""),
                     (400, json.dumps({"id": "x2", "text": ""})), (900, "{]")):
        lines.insert(at, line)
    path.write_text("\n".join(lines) + "\n")
    options = {k: v for k, v in OPTIONS.items()}
    local = neardup.find(path, id_field="id", **options)
    result = neardup_spark.find_sources([path], id_field="id", spark=spark,
                                        out=tmp_path / "spark", output_format="parquet",
                                        **options)
    assert result.counts == local.counts
    assert local.counts["identical_copies"] > 0 and local.counts["pairs"] > 20
    assert local.counts["documents"] == len(ids)  # the records above are not documents
    for key in ("records_seen", "processed", "skipped", "failed"):
        assert result.read_report[key] == local.read_report[key], key
    written = neardup.read_results(tmp_path / "spark")
    assert written.layout == "parts" and len(written.manifest["tables"]["documents"]["files"]) > 1
    # the local reader renames a repeated id (id#2, ...); Spark keeps it and counts it
    renamed = [k for k, (a, b) in enumerate(zip(ids, local.ids)) if a != b]
    repeated = sum(n - 1 for n in Counter(ids).values())
    assert len(renamed) == repeated > 0
    for name in ("pairs", "identical", "clusters", "candidates", "documents"):
        table, local_table = written[name], getattr(local, f"{name}_table")()
        named = [f.name for f in table.schema if f.type == pa.string() and f.name != "status"]
        assert table.drop_columns(named).equals(local_table.drop_columns(named)), name
        docs = [c for c in table.column_names if c.startswith("doc")]
        for column, doc in zip([c for c in named if c.startswith("id")], docs):
            assert table.column(column).to_pylist() == [ids[d] for d in
                                                        table.column(doc).to_pylist()], name
    (note,) = [n for n in result.read_report["notes"] if "an id an earlier document" in n]
    assert note.startswith(f"{repeated:,} documents have an id an earlier document has")


def test_documents_signed_again_are_as_first_signed_and_a_changed_input_is_refused(spark,
                                                                                  tmp_path):
    """The pass on line files keeps no shingles and signatures; the documents verified are
    read and signed again: the sets and signatures of a pass that kept them. An input
    changed since the pass is an error, never another document's sets."""
    from neardup.config import FindConfig
    from neardup.spark import found as spark_found
    from neardup.spark import read as spark_read

    path = tmp_path / "docs.jsonl"
    texts = [" ".join(f"w{(k * 7 + i) % 40}" for i in range(30)) for k in range(60)]
    lines = [json.dumps({"id": str(k), "text": t}) for k, t in enumerate(texts)]
    lines[5:5] = ["", "not json"]  # a blank line and a failed record shift the ranks
    path.write_text("\n".join(lines) + "\n")
    config = FindConfig.from_options(shingle_kind="word", shingle_size=3, threshold=0.5)
    signers = [spark_stages._signer(config, config.band_plan(), None, None,
                                    char_fallback=True, sketches=k) for k in (True, False)]
    reads = [spark_read._read(spark, [path], id_field="id", signer=signers[0],
                              light_signer=light, min_shingles=config.min_shingles)
             for light in (None, signers[1])]
    full, light = reads
    assert full.signer is None and light.signer is signers[0]
    docs = np.array([0, 3, 4, 5, 30, 59])
    kept, again = (spark_found.fetched(r.signed, docs, r) for r in reads)
    assert kept.column("shingles").null_count == 0
    assert again.equals(kept)
    path.write_text("\n".join(reversed(lines)) + "\n")  # the same bytes, other lines
    with pytest.raises(RuntimeError, match="changed since it was read"):
        spark_found.fetched(light.signed, docs, light)


def test_an_empty_table_is_one_part_with_the_local_columns(runs, tmp_path, manifest_is_true):
    local, result = runs
    empty = dataclasses.replace(result, identical=result.identical.limit(0))
    folder = tmp_path / "spark"
    neardup_spark.write_result(empty, folder, "parquet")
    manifest = manifest_is_true(folder)
    assert manifest["tables"]["identical"] == {"rows": 0,
                                               "files": ["identical/part-00000.parquet"]}
    identical = neardup.read_results(folder, tables=["identical"])["identical"]
    assert identical.num_rows == 0 and identical.schema == local.identical_table().schema


def test_pairs_groups_writes_the_compact_form_that_expands_to_every_pair(runs, corpus,
                                                                           tmp_path):
    import pyarrow.parquet as pq

    local, result = runs
    texts, ids = corpus
    compact = neardup.find_texts(texts, ids, pairs="groups", **OPTIONS)
    sinks.write_result(compact, tmp_path / "local", "parquet")
    # find does not depend on how pairs are written: the same DataFrames, the new config
    spark_compact = dataclasses.replace(result, config=compact.config)
    neardup_spark.write_result(spark_compact, tmp_path / "spark", "parquet", layout="single")
    names = _same_files(tmp_path / "local", tmp_path / "spark")
    assert "set_pairs.parquet" in names and "pairs.parquet" not in names
    expanded = expand(pq.read_table(tmp_path / "spark" / "set_pairs.parquet"),
                      pq.read_table(tmp_path / "spark" / "identical.parquet"))
    assert _rows(expanded) == _rows(local.pairs_table())
    # the parts layout (Spark's default): the same tables, read back, expand alike
    neardup_spark.write_result(spark_compact, tmp_path / "parts", "parquet")
    parts = neardup.read_results(tmp_path / "parts")
    assert parts.layout == "parts" and "pairs" not in parts
    for name in ("set_pairs", "identical"):
        assert parts[name].equals(getattr(compact, f"{name}_table")()), name
    assert _rows(expand(parts["set_pairs"], parts["identical"])) == _rows(local.pairs_table())
    assert _rows(parts.pairs()) == _rows(local.pairs_table())


def test_max_pairs_refused_before_anything_is_written(runs, tmp_path):
    local, result = runs
    config = dataclasses.replace(local.config, max_pairs=local.counts["pairs"] - 1)
    messages = []
    for write, run, out in ((sinks.write_result, local, "local"),
                            (neardup_spark.write_result, result, "spark")):
        with pytest.raises(ValueError, match="exceed --max-pairs") as refused:
            write(dataclasses.replace(run, config=config), tmp_path / out, "csv")
        assert not (tmp_path / out).exists()
        messages.append(str(refused.value))
    assert messages[0] == messages[1]


def test_pairs_in_spark_batches_write_the_bytes_of_one_table(tmp_path):
    # 150,000 rows of 12-character ids: past Parquet's 1 MB pages, where the same rows
    # written as Spark's 10,000-row batches come (not regrouped) give other bytes
    rng = np.random.default_rng(5)
    n = 150_000
    doc_a = np.sort(rng.integers(0, 200_000, n))
    doc_b = doc_a + rng.integers(1, 1_000, n)
    ids = pa.array([f"doc{d:09d}" for d in range(201_000)])
    whole = pa.table({"id_a": ids.take(pa.array(doc_a)), "id_b": ids.take(pa.array(doc_b)),
                      "jaccard": rng.random(n).round(6), "estimate": rng.random(n).round(6),
                      "doc_a": doc_a, "doc_b": doc_b}).cast(PAIR_SCHEMA)
    spark_sized = [whole.slice(s, 10_000) for s in range(0, n, 10_000)]  # Arrow batch size
    sinks.write_tables([whole], tmp_path / "whole.parquet", schema=PAIR_SCHEMA)
    sinks.write_tables(spark_write._row_groups(iter(spark_sized), sinks.ROW_GROUP_ROWS),
                       tmp_path / "batches.parquet", schema=PAIR_SCHEMA)
    assert (tmp_path / "batches.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()

    groups = list(spark_write._row_groups(iter(spark_sized), 40_000))
    assert [t.num_rows for t in groups] == [40_000] * 3 + [30_000]
    assert all(column.num_chunks == 1 for t in groups for column in t.columns)
    assert pa.concat_tables(groups).equals(whole)


def test_arrow_batches_keep_the_order_across_partitions(spark):
    from pyspark.sql import functions as F

    ordered = spark.range(0, 50_000, 1, 7)  # 7 partitions of several Arrow batches each
    batches = list(spark_write._arrow_batches(ordered))
    assert len(batches) >= 7
    assert np.array_equal(np.concatenate([b.column("id").to_numpy() for b in batches]),
                          np.arange(50_000))
    reverse = spark.range(0, 3_000, 1, 3).orderBy(F.col("id").desc())  # a global sort
    got = np.concatenate([b.column("id").to_numpy()
                          for b in spark_write._arrow_batches(reverse)])
    assert np.array_equal(got, np.arange(3_000)[::-1])


CSV_ROWS = [
    ("title", "text"),
    ("a", 'The quick brown fox, said "hello", jumped\nover the lazy dog near the river bank.'),
    ("b", 'The quick brown fox, said "hello", jumped\nover the lazy dog near the river bank!'),
    ("c", 'The quick brown fox said "hello" and jumped\r\nover a lazy dog near the river bank.'),
    ("d", "Completely different: a recipe for bread.\nFlour, water, salt, yeast; knead well."),
    ("e", ""),  # no text: skipped, but it keeps its row number
    ("f", "Completely different: a recipe for bread.\nFlour, water, salt, yeast; knead well."),
    ("g", 'Quoted ""inside"" and commas, many, of, them\nacross "two" lines of text here.'),
    ("h", 'Quoted ""inside"" and commas, many, of, them\nacross "two" lines of text, here.'),
    ("i", "Completely different: a recipe for bread.\nFlour, water, salt, yeast: knead well."),
    ("j", "short"),
    ("k", "The quick brown fox, said hello, jumped over the lazy dog near the river bank."),
    ("l", "three fields", "where the header has two"),  # failed, by both readers
]


def _write_csv(path):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(CSV_ROWS)  # quotes multi-line fields, doubles inner quotes


def test_csv_with_multiline_quoted_fields_same_files_as_local(spark, tmp_path):
    source = tmp_path / "docs.csv"
    _write_csv(source)
    data = source.read_bytes()
    assert b'""inside""' in data and b"jumped\nover" in data  # escapes, newlines in quotes
    # star policy with buckets of 2 and 8-bit signatures: every branch of the parity
    options = ["--shingle", "char", "--ngram", "4", "--threshold", "0.5", "--max-bucket", "2",
               "--bits", "8", "--representative", "shortest", "--method", "lsh", "--quiet",
               "--top", "3", "--layout", "single"]  # the local engine's files, byte for byte
    assert cli.main(["find", str(source), "--out", str(tmp_path / "local"), *options]) == 0
    assert cli.main(["find", str(source), "--out", str(tmp_path / "spark"), "--engine",
                     "spark", *options]) == 0
    local = neardup.find(source, shingle_kind="char", shingle_size=4, threshold=0.5,
                         max_bucket=2, bits=8, representative="shortest", method="lsh")
    assert local.counts["buckets"]["buckets_over_limit"] > 0  # the star branch ran
    assert local.counts["pairs"] >= 4
    for name in ("pairs.csv", "identical.csv", "clusters.csv", "documents.csv",
                 "candidates.csv", "summary.json"):
        local_bytes = (tmp_path / "local" / name).read_bytes()
        spark_bytes = (tmp_path / "spark" / name).read_bytes()
        if name == "summary.json":
            local_json, spark_json = json.loads(local_bytes), json.loads(spark_bytes)
            assert local_json["counts"] == spark_json["counts"]
            assert local_json["config"] == spark_json["config"]
            local_read, spark_read = local_json["read"], spark_json["read"]
            for key in ("records_seen", "processed", "skipped", "failed", "problems_total"):
                assert spark_read[key] == local_read[key], key
            assert local_read["failed"] == {"row has 3 fields, header has 2": 1}
            assert local_read["skipped"] == {"empty text": 1}
            assert "CSV/TSV read by Spark" in spark_read["notes"][0]  # what it cannot tell
        else:
            assert spark_bytes == local_bytes, name


@pytest.mark.parametrize("local_edges", [0, 10_000], ids=["star rounds", "one task"])
def test_connected_components_match_scipy_on_a_long_chain(spark, local_edges):
    """Both ways of labelling: rounds of large-star / small-star over the cluster, and
    the local union-find in one task (up to local_edges distinct edges)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(7)
    n = 300
    nodes = rng.permutation(n)  # a chain whose node numbers go up and down
    chain = np.c_[nodes[:80][:-1], nodes[:80][1:]]
    rest = rng.integers(80, n, size=(120, 2))  # small random components among the others
    edges = np.r_[chain, rest, [[5, 5]]]  # and a self loop
    edges = edges[rng.permutation(len(edges))]
    df = spark.createDataFrame([(int(a), int(b)) for a, b in edges], "src long, dst long")
    got = {r["node"]: r["label"] for r in
           neardup_spark.connected_components(df, "src", "dst", local_edges=local_edges)
           .collect()}

    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    smallest = np.full(component.max() + 1, n)
    np.minimum.at(smallest, component, np.arange(n))
    on_edges = np.unique(edges[edges[:, 0] != edges[:, 1]])
    assert got == {int(v): int(smallest[component[v]]) for v in on_edges}
    assert len({got[int(v)] for v in nodes[:80]}) == 1  # the chain is one component


def test_jsonl_with_malformed_lines_same_documents_and_read_report_as_local(spark, tmp_path):
    # issue 12: Spark's JSON reader made the array line two documents (11 against 10),
    # dropped the malformed lines silently and numbered records past blank lines wrongly
    text = "the quick brown fox jumps over the lazy dog near the river bank today"
    lines = [json.dumps({"text": text, "n": 1}), "", json.dumps({"text": text + " again"}),
             '{"text": "malformed, never closed"', "   ",
             json.dumps([{"text": "an array line"}, {"text": "is not a record"}]),
             "{'text': 'single quotes are not JSON'}", json.dumps({"body": "no text field"}),
             json.dumps({"text": "   "}), json.dumps({"text": text}) + " trailing words",
             json.dumps("a string, not an object"), json.dumps({"text": None}),
             json.dumps({"text": {"b": 1, "a": [2, 3]}}), json.dumps({"text": 12345})]
    lines += [json.dumps({"text": f"document {k} {text}"}) for k in range(4)]
    path = tmp_path / "records.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"text": "caf\xe9"}\n'
                     + json.dumps({"text": "last " + text}).encode())
    options = ["--method", "lsh", "--shingle", "word", "--ngram", "1", "-t", "0.5", "-q",
               "--layout", "single"]
    for engine in ("local", "spark"):
        assert cli.main(["find", str(path), "--out", str(tmp_path / engine), "--engine",
                         engine, *options]) == 0
    local_json, spark_json = (json.loads((tmp_path / e / "summary.json").read_text())
                              for e in ("local", "spark"))
    local_read, spark_read = local_json["read"], spark_json["read"]
    assert local_read["processed"] == local_json["counts"]["documents"] == 9
    assert local_read["failed"] == {"malformed JSON": 3, "missing field 'text'": 2,
                                    "not a JSON object": 2}
    assert local_read["skipped"] == {"empty text": 1, "not UTF-8": 1}
    assert spark_read == local_read  # counts, reasons, problems, inputs; nothing to note
    assert local_json["counts"]["char_fallback"] == 0  # no text here without spaces
    assert spark_json["counts"] == local_json["counts"]
    assert list(spark_json["counts"]) == list(local_json["counts"])
    for name in ("documents.csv", "pairs.csv"):  # same ids, same numbering
        assert ((tmp_path / "spark" / name).read_bytes()
                == (tmp_path / "local" / name).read_bytes()), name


def test_document_counts_from_the_reading_job_are_brute_force_over_partitions(
        spark, tmp_path, write_jsonl, small_splits):
    """The documents' counts of a run on files come from the job that numbers the records
    (per partition and outcome), not from a query of their own: over several partitions,
    with documents below min_shingles, one shingled by characters, skipped and failed
    records, they are each document's own shingle count summed, and the local engine's."""
    from neardup.shingling import ShingleOptions
    from neardup.text import prepare

    rng = np.random.default_rng(5)
    vocabulary = [f"w{k}" for k in range(400)]
    texts = [" ".join(rng.choice(vocabulary, size=int(rng.integers(1, 30))))
             for _ in range(160)]
    texts[7] = "这是一个没有空格的中文句子用来测试字符回退的路线" * 3
    path = tmp_path / "short.jsonl"
    write_jsonl(path, texts)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"text": "never closed\n' + json.dumps({"id": "blank", "text": "  "}) + "\n")
    options = ["--id-field", "id", "--shingle", "word", "--ngram", "3", "-t", "0.6",
               "--min-shingles", "8", "--method", "lsh", "-q", "--top", "0",
               "--layout", "single"]
    for engine in ("local", "spark"):
        assert cli.main(["find", str(path), "--out", str(tmp_path / engine),
                         "--engine", engine, *options]) == 0
    local_json, spark_json = (json.loads((tmp_path / e / "summary.json").read_text())
                              for e in ("local", "spark"))
    sets, chars = prepare.shingle_prose(texts, ShingleOptions(kind="word", size=3))
    sizes = sets.sizes
    assert chars.sum() == 1 and sizes[7] >= 8  # the character route, counted
    usable = sizes >= 8
    counts = spark_json["counts"]
    assert counts["documents"] == len(texts) == spark_json["read"]["processed"]
    assert counts["too_few_shingles"] == int((~usable).sum()) > 0
    assert counts["shingled"] == int(usable.sum())
    assert counts["shingles"] == int(sizes[usable].sum())
    assert counts["char_fallback"] == 1
    assert spark_json["read"]["failed"] == {"malformed JSON": 1}
    assert spark_json["read"]["skipped"] == {"empty text": 1}
    assert counts == local_json["counts"] and spark_json["read"] == local_json["read"]


def _cjk_corpus():
    """English documents and Chinese ones (no spaces): each Chinese text has a near
    duplicate (three characters changed of 90) and the first an exact copy too, mixed
    among English near-duplicates, so both routes have pairs."""
    rng = np.random.default_rng(21)
    hanzi = np.array([chr(c) for c in range(0x4E00, 0x4E00 + 600)])
    vocabulary = [f"w{k}" for k in range(300)]
    texts, ids = [], []
    for k in range(6):
        chars = rng.choice(hanzi, size=90)
        near = chars.copy()
        near[rng.choice(90, size=3, replace=False)] = rng.choice(hanzi, size=3)
        texts += ["".join(chars[:45]) + "，" + "".join(chars[45:]), "".join(near)]
        ids += [f"zh{k}", f"zh{k}-near"]
    texts.append(texts[0])
    ids.append("zh0-copy")
    for k in range(30):
        words = list(rng.choice(vocabulary, size=40))
        texts.append(" ".join(words))
        ids.append(f"en{k}")
        if k % 3 == 0:
            words[int(rng.integers(40))] = "changed"
            texts.append(" ".join(words))
            ids.append(f"en{k}-near")
    order = rng.permutation(len(texts))
    return [texts[k] for k in order], [ids[k] for k in order]


def test_texts_without_spaces_shingled_by_characters_as_local(spark, tmp_path, write_jsonl,
                                                              capsys):
    """Word shingles: a text mostly in a script without spaces takes the character route
    on both engines (text.prepare.shingle_prose); same pairs, clusters, counts, files."""
    texts, ids = _cjk_corpus()
    path = write_jsonl(tmp_path / "mixed.jsonl", texts, ids)
    options = ["--id-field", "id", "--shingle", "word", "--ngram", "3", "-t", "0.6",
               "--method", "lsh", "-q", "--top", "0", "--layout", "single"]
    for engine in ("local", "spark"):
        assert cli.main(["find", str(path), "--out", str(tmp_path / engine),
                         "--engine", engine, *options]) == 0
        assert "13 document(s) mostly in scripts without spaces" in capsys.readouterr().err
    local_json, spark_json = (json.loads((tmp_path / e / "summary.json").read_text())
                              for e in ("local", "spark"))
    chinese = sum(i.startswith("zh") for i in ids)
    assert local_json["counts"]["char_fallback"] == chinese == 13
    assert spark_json["counts"] == local_json["counts"]
    assert list(spark_json["counts"]) == list(local_json["counts"])
    pairs = neardup.read_results(tmp_path / "local", tables=["pairs"])["pairs"]
    found = set(zip(pairs["id_a"].to_pylist(), pairs["id_b"].to_pylist()))
    # the Chinese near-duplicates are found through their character shingles
    assert sum(a.startswith("zh") for a, _ in found) >= 6
    assert {("zh0", "zh0-copy"), ("zh0-copy", "zh0")} & found
    for name in ("pairs.csv", "identical.csv", "clusters.csv", "documents.csv",
                 "candidates.csv"):
        assert ((tmp_path / "spark" / name).read_bytes()
                == (tmp_path / "local" / name).read_bytes()), name


def test_evaluate_on_spark_counts_as_local_brute_and_exact(spark, tmp_path, capsys):
    c = planted_corpus(240, dup_fraction=0.2, similarity=(0.45, 1.0), seed=5)
    texts = list(c.texts)
    rng = np.random.default_rng(2)
    # identical groups, some of both sides of a planted pair, at random places
    for source, count in ((c.planted_i[0], 3), (c.planted_j[0], 2), (c.planted_i[1], 1),
                          (int(rng.integers(len(texts))), 2)):
        for _ in range(count):
            texts.insert(int(rng.integers(len(texts) + 1)), c.texts[source])
    texts.insert(5, "w1 w2")  # below min_shingles: set aside by both
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    options = dict(shingle_kind="word", shingle_size=1, threshold=0.6, bands=16, rows=8, seed=9)
    brute = evaluate_texts(texts, truth="brute", **options).metrics
    exact = evaluate_texts(texts, truth="exact", **options).metrics
    assert brute["identical_pairs"] > 5 and brute["true_pairs"] > brute["identical_pairs"]
    assert brute["false_negatives"] > 0 and brute["false_positives"] > 0  # both counted

    assert cli.main(["evaluate", str(path), "--engine", "spark", "--shingle", "word",
                     "--ngram", "1", "-t", "0.6", "--bands", "16", "--rows", "8", "--seed", "9",
                     "-q", "--json", str(tmp_path / "ev.json")]) == 0
    out = capsys.readouterr().out
    saved = json.loads((tmp_path / "ev.json").read_text())
    spark = saved["metrics"]
    assert list(spark) == list(brute)  # the same keys, in the same order
    for key in ("documents", "sets", "all_pairs", "identical_pairs", "true_pairs",
                "candidates", "found", "false_positives", "false_negatives", "set_true_pairs",
                "set_candidates", "set_false_positives"):
        assert spark[key] == brute[key] == exact[key], key
    for key in ("recall", "precision_before", "f1", "false_positive_rate", "set_recall"):
        assert spark[key] == brute[key], key
    assert spark["truth"] == "brute" and saved["curve"] == [] and saved["sweep"] == []
    assert saved["read"]["processed"] == len(texts)
    assert f"intersection {brute['found']:,}: recall {brute['recall']:.6f}" in out
    assert "note: Spark engine: the truth is a cartesian join" in out
    with pytest.raises(ValueError, match=f"{len(texts) - 1:,} documents are over its limit "
                                         "of 100; use the local engine"):
        neardup_spark.evaluate_sources(path, max_documents=100, **options)
    with pytest.raises(ValueError, match="^--sweep is not supported by the Spark engine: "
                                         "it computes no S-curve"):
        neardup.api.evaluate(path, engine="spark", sweep=True)


# ---------------------------------------------------------------- SimHash on Spark

# k = 10: 11 blocks of 5-6 bits, about J = 0.79 for equal sizes; below the default k for
# t = 0.7, so some planted pairs are missed, and some candidates fail verification
SIMHASH = dict(OPTIONS, sketch="simhash", simhash_distance=10)


@pytest.fixture(scope="module")
def simhash_runs(spark, corpus):
    """The planted corpus through both engines with the SimHash search."""
    return _both_engines(spark, corpus, SIMHASH)


def test_simhash_same_pairs_clusters_and_counts_as_local(simhash_runs):
    local, result = simhash_runs
    c = local.counts
    assert c["method"] == "simhash" and c["simhash"]["distance"] == 10
    assert c["simhash"]["comparisons"] > c["candidates"] > c["set_pairs"] > 20
    assert c["near_duplicate_pairs"] > c["set_pairs"]  # identical groups on both sides
    assert c["identical_pairs"] > 0
    verified = local.candidates_table().column("verified").to_pylist()
    assert False in verified and True in verified  # verification drops some candidates

    pairs = spark_write._to_arrow(result.pairs)
    assert pairs.num_rows == c["pairs"]
    assert _rows(pairs) == _rows(local.pairs_table())  # ids, exact J, SimHash estimate
    for name in ("set_pairs", "identical", "clusters", "documents", "candidates"):
        assert (_rows(spark_write._to_arrow(getattr(result, name)))
                == _rows(getattr(local, f"{name}_table")())), name
    assert result.counts == local.counts  # with the search's comparisons and largest run
    assert list(result.counts) == list(local.counts)


@pytest.mark.parametrize("k", [0, 4, 21])
def test_hamming_search_as_a_join_finds_the_local_search_pairs(spark, k):
    from neardup import simhash

    rng = np.random.default_rng(k)
    base = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    # near copies: a few bits flipped, so pairs agree on several blocks, or on one only
    flips = [np.bitwise_or.reduce(np.uint64(1) << rng.choice(64, size=m, replace=False)
                                  .astype(np.uint64)) for m in rng.integers(0, 30, 120)]
    prints = np.r_[base, base[rng.integers(0, 40, 120)] ^ np.array(flips, dtype=np.uint64)]
    prints = prints[rng.permutation(prints.size)]
    keys = simhash.block_keys(prints, k)
    heads = spark.createDataFrame(
        [(d, int(p), keys[d].view(np.int64).tobytes())  # the signer's keys: 8 bytes each
         for d, p in enumerate(prints.view(np.int64).tolist())],
        "doc long, simhash long, keys binary")
    entries, candidates = spark_stages._hamming_search(heads, k)
    got = sorted((r["doc_a"], r["doc_b"]) for r in candidates.collect())
    i, j, _, stats = simhash.hamming_pairs(prints, k)
    assert got == list(zip(i.tolist(), j.tolist()))  # the same pairs, each once
    assert len(got) > 0 and (k == 0 or stats.comparisons > len(got))
    from neardup.spark.found import hamming_stats

    assert hamming_stats(entries, k)["simhash"] == stats.as_dict()


def test_evaluate_on_spark_with_simhash_counts_as_local_brute(spark):
    c = planted_corpus(240, dup_fraction=0.2, similarity=(0.45, 1.0), seed=5)
    texts = list(c.texts)
    for source, count in ((c.planted_i[0], 3), (c.planted_j[0], 2)):
        texts[10:10] = [c.texts[source]] * count
    options = dict(shingle_kind="word", shingle_size=1, threshold=0.8, sketch="simhash",
                   seed=9)
    local = evaluate_texts(texts, truth="brute", **options)
    df = spark.createDataFrame(list(enumerate(texts)), "doc long, text string")
    got = neardup_spark.evaluate(df, order_col="doc", **options)
    assert local.metrics["identical_pairs"] > 0 and local.metrics["candidates"] > 0
    assert got.metrics == {**local.metrics, "lsh_seconds": got.metrics["lsh_seconds"],
                           "truth_seconds": got.metrics["truth_seconds"]}
    assert (got.sketch, got.distance) == ("simhash", local.distance) == (
        "simhash", neardup.FindConfig(**options).hamming_distance())


def test_cli_find_engine_spark_sketch_simhash_same_files_as_local(spark, tmp_path):
    source = tmp_path / "docs.csv"
    _write_csv(source)
    options = ["--shingle", "char", "--ngram", "4", "--threshold", "0.5", "--sketch",
               "simhash", "--simhash-distance", "16", "--representative", "shortest",
               "--quiet"]
    for engine in ("local", "spark"):  # the default layouts: single, parts
        assert cli.main(["find", str(source), "--out", str(tmp_path / engine), "--engine",
                         engine, *options]) == 0
    local_read, spark_read = (neardup.read_results(tmp_path / e) for e in ("local", "spark"))
    assert (local_read.layout, spark_read.layout) == ("single", "parts")
    local_counts = local_read.summary["counts"]  # character shingles: no char_fallback
    assert spark_read.summary["counts"] == local_counts
    assert local_counts["method"] == "simhash" and local_counts["near_duplicate_pairs"] >= 2
    assert spark_read.summary["config"] == local_read.summary["config"]
    for name in ("pairs", "identical", "clusters", "documents", "candidates"):
        assert _rows(spark_read[name]) == _rows(local_read[name]), name
    assert (tmp_path / "spark" / "pairs" / "part-00000.csv").is_file()


def _manifest_files(folder) -> list[dict]:
    """The manifest's entries (name, rows, bytes, sha256) but for the timings."""
    manifest = json.loads((folder / "manifest.json").read_text())
    return [f for f in manifest["files"] if f["name"] != "timings.json"]


def test_parts_depend_on_the_rows_alone_not_on_the_partitioning(spark, corpus, tmp_path,
                                                                many_parts):
    """The same run with other shuffle and input partitions writes the same part files
    and manifest (the parts were once a range partitioner's, cut where its samples of
    the shuffled rows fell: different from run to run at scale)."""
    texts, ids = corpus
    rows = list(zip(range(len(texts)), ids, texts))
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    written = []
    try:
        for width, splits in ((3, 2), (7, 5)):
            spark.conf.set(key, str(width))
            df = spark.createDataFrame(rows, "position long, id string, text string")
            result = neardup_spark.find(df.repartition(splits), order_col="position",
                                        **OPTIONS)
            neardup_spark.write_result(result, tmp_path / str(width), "parquet")
            written.append(_manifest_files(tmp_path / str(width)))
    finally:
        spark.conf.set(key, before)
    assert written[0] == written[1]
    for table in ("pairs", "documents", "clusters", "candidates"):
        assert sum(f["name"].startswith(table + "/") for f in written[0]) > 1, table


def test_part_cuts_join_buckets_in_order_up_to_the_rows_a_part():
    counts = [(0, 3), (1, 4), (5, 2), (9, 9), (12, 1), (13, 1)]
    cuts = spark_write.part_cuts(counts, 6)
    assert cuts == {0: 0, 1: 1, 5: 1, 9: 2, 12: 3, 13: 3}  # 9 rows: a bucket alone
    assert spark_write.part_cuts([], 6) == {}
    rng = np.random.default_rng(5)
    for _ in range(50):
        buckets = np.unique(rng.integers(0, 1000, 40))
        counts = list(zip(buckets.tolist(), rng.integers(1, 30, buckets.size).tolist()))
        cap = int(rng.integers(1, 100))
        cuts = spark_write.part_cuts(counts, cap)
        parts = [cuts[b] for b, _ in counts]
        assert parts[0] == 0 and all(b - a in (0, 1) for a, b in zip(parts, parts[1:]))
        held = {}
        for (_, count), part in zip(counts, parts):
            held.setdefault(part, []).append(count)
        assert all(sum(c) <= cap or len(c) == 1 for c in held.values())
        # a part ends only where the next bucket would not fit
        for part in range(max(parts)):
            assert sum(held[part]) + held[part + 1][0] > cap


def test_part_runs_cut_batches_where_the_part_changes():
    batches = [pa.record_batch({"_part": [0, 0, 1], "x": [1, 2, 3]}),
               pa.record_batch({"_part": [1, 4], "x": [4, 5]}),
               pa.record_batch({"_part": pa.array([], pa.int64()),
                                "x": pa.array([], pa.int64())}),
               pa.record_batch({"_part": [4], "x": [6]})]
    got = [(part, pa.concat_tables(list(tables)).column("x").to_pylist())
           for part, tables in spark_write.part_runs(iter(batches))]
    assert got == [(0, [1, 2]), (1, [3, 4]), (4, [5, 6])]


def test_dedup_parts_depend_on_the_rows_alone(spark, tmp_path, many_parts):
    """A dedup copy's parts are cut by position alone: other input splits and shuffle
    partitions give the same parts."""
    path = _dedup_corpus(tmp_path)
    options = dict(threshold=0.7, shingle_kind="word", shingle_size=2, method="lsh")
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.shuffle.partitions")
    before = [spark.conf.get(key) for key in keys]
    written = []
    try:
        for split, width in (("4096", "3"), ("9000", "6")):
            spark.conf.set(keys[0], split)
            spark.conf.set(keys[1], width)
            neardup.dedup(path, tmp_path / width, engine="spark", **options)
            written.append(_manifest_files(tmp_path / width))
    finally:
        for key, value in zip(keys, before):
            spark.conf.set(key, value)
    assert written[0] == written[1] and len(written[0]) > 1


def _dedup_corpus(tmp_path):
    """Planted near-duplicates and copies as JSON Lines with malformed, blank and
    skipped lines, CRLF and a last line without a newline."""
    c = planted_corpus(300, dup_fraction=0.2, similarity=(0.6, 1.0), exact_copies=15, seed=9)
    lines = [json.dumps({"id": i, "text": t}) for i, t in zip(c.ids, c.texts)]
    lines[5:5] = ["", '{"text": "never closed', json.dumps({"text": "  "}) + "\r", "   "]
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(("\n".join(lines[:-1]) + "\n" + lines[-1]).encode())
    return path


@pytest.mark.parametrize("clusters", ["components", "center"])
def test_dedup_on_spark_parts_are_the_local_copy_byte_for_byte(spark, tmp_path, small_splits,
                                                               clusters):
    path = _dedup_corpus(tmp_path)
    options = dict(threshold=0.7, shingle_kind="word", shingle_size=2, method="lsh",
                   clusters=clusters)
    local = neardup.dedup(path, tmp_path / "local.jsonl", **options)
    result = neardup.dedup(path, tmp_path / "spark", engine="spark", **options)
    assert result.counts["dedup"] == local.counts["dedup"] | {
        "outputs": [dict(local.counts["dedup"]["outputs"][0],
                         output=str(tmp_path / "spark") + os.sep)]}
    assert local.counts["dedup"]["removed"] > 20  # copies and near-duplicates removed
    manifest = json.loads((tmp_path / "spark" / "manifest.json").read_text())
    parts = [tmp_path / "spark" / f["name"] for f in manifest["files"]]
    assert len(parts) > 1  # written by several tasks
    assert sorted(p.name for p in (tmp_path / "spark").iterdir()) == sorted(
        [p.name for p in parts] + ["manifest.json"])
    copy = b"".join(p.read_bytes() for p in parts)
    assert copy == (tmp_path / "local.jsonl").read_bytes()
    lines = copy.count(b"\n") + (not copy.endswith(b"\n"))
    assert sum(f["rows"] for f in manifest["files"]) == lines


def test_dedup_on_spark_parquet_rows_and_driver_read_inputs_as_local(spark, tmp_path,
                                                                     small_splits):
    import pyarrow.parquet as pq

    path = _dedup_corpus(tmp_path)
    options = dict(threshold=0.7, shingle_kind="word", shingle_size=2, method="lsh")
    rows = [json.loads(line) for line in path.read_text().splitlines()
            if line.strip().startswith('{"id"')]
    table = pa.table({"id": [str(r["id"]) for r in rows], "text": [r["text"] for r in rows],
                      "n": list(range(len(rows)))})
    pq.write_table(table, tmp_path / "corpus.parquet", row_group_size=50)
    local = neardup.dedup(tmp_path / "corpus.parquet", tmp_path / "local.parquet",
                          id_field="id", **options)
    neardup.dedup(tmp_path / "corpus.parquet", tmp_path / "spark", engine="spark",
                  id_field="id", **options)
    parts = sorted((tmp_path / "spark").glob("part-*.parquet"))
    assert len(parts) > 1
    spark_rows = pa.concat_tables(pq.read_table(p) for p in parts)
    assert spark_rows.equals(pq.read_table(tmp_path / "local.parquet"))
    assert spark_rows.num_rows == len(rows) - local.counts["dedup"]["removed"]
    # a compressed input is read and copied on the driver: the local copy, byte for byte
    import gzip

    (tmp_path / "corpus.jsonl.gz").write_bytes(gzip.compress(path.read_bytes()))
    neardup.dedup(tmp_path / "corpus.jsonl.gz", tmp_path / "local.jsonl", **options)
    neardup.dedup(tmp_path / "corpus.jsonl.gz", tmp_path / "spark.jsonl", engine="spark",
                  **options)
    assert (tmp_path / "spark.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    (tmp_path / "ads.csv").write_text("id,text\n1,a b c\n")
    with pytest.raises(ValueError, match="Spark's CSV parser keeps no row's bytes"):
        neardup.dedup(tmp_path / "ads.csv", tmp_path / "ads-spark", engine="spark")
    assert not (tmp_path / "ads-spark").exists()


@pytest.mark.parametrize("id_field", [None, "id"])
@pytest.mark.parametrize("newlines", [False, True])
def test_jsonl_batches_parsed_at_once_sort_records_as_line_by_line(monkeypatch, id_field,
                                                                   newlines):
    from neardup.spark import read as spark_read

    lines = [json.dumps({"id": f"d{k}", "text": f"document {k} caf\u00e9 \U0001f600"})
             for k in range(6)]
    # (a lone surrogate escape makes Arrow refuse the batch: line by line, tested above)
    lines[2:2] = ["", "   ", json.dumps({"id": "e", "text": "  "}), "\t"]
    raw = [line.encode() for line in lines]  # ASCII: json escapes the surrogate and emoji
    if newlines:  # as a split's lines are read (the last line of a file may have none)
        raw = [line + b"\n" for line in raw[:-1]] + [raw[-1]]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(raw, pa.binary()), pa.array(np.arange(10, 10 + len(raw)))],
        names=["raw", "record"])

    def records():
        body = spark_read._jsonl_records(0, "utf-8", "not UTF-8", ["text"], id_field, "p:")
        return pa.Table.from_batches(list(body(iter([batch])))).to_pylist()

    parsed = spark_read._parsed_block
    used = []
    monkeypatch.setattr(spark_read, "_parsed_block", lambda *args: used.append(parsed(*args))
                        or used[-1])
    at_once = records()
    assert used == [True]  # Arrow parsed the batch
    assert sum(r["outcome"] == "processed" for r in at_once) == 6
    assert [r["outcome"] for r in at_once[2:6]] == ["blank", "blank", "skipped", "blank"]
    monkeypatch.setattr(spark_read, "_parsed_block", lambda *args: False)
    assert at_once == records()
