"""The Spark engine gives the local engine's results: pairs, estimates, clusters, keepers."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")


def _java_works() -> bool:
    java = shutil.which("java") or (os.environ.get("JAVA_HOME") and
                                    os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    if not java:
        return False
    try:
        return subprocess.run([java, "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if not _java_works():
    pytest.skip("Spark needs Java, and no working java was found", allow_module_level=True)

import neardup  # noqa: E402
from neardup import cli  # noqa: E402
from neardup import spark as neardup_spark  # noqa: E402
from neardup.synthetic import planted_corpus  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers import neardup from this env
    session = (SparkSession.builder.master("local[2]").appName("neardup-tests")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def corpus():
    c = planted_corpus(1500, dup_fraction=0.08, similarity=(0.4, 1.0), exact_copies=20, seed=3)
    texts, ids = list(c.texts), list(c.ids)
    for at, text in ((0, ""), (700, "   "), (1200, "w1 w2")):  # set aside: < min_shingles
        texts.insert(at, text)
        ids.insert(at, f"short{at}")
    return texts, ids


def _rows(table):
    return table.to_pylist()


def test_planted_corpus_same_pairs_clusters_and_counts_as_local(spark, corpus):
    texts, ids = corpus
    options = dict(shingle_kind="word", shingle_size=1, threshold=0.7,
                   representative="longest", method="lsh")
    local = neardup.find_texts(texts, ids, **options)
    # shuffled across partitions: numbering comes from order_col, not from the layout
    df = spark.createDataFrame(list(zip(range(len(texts)), ids, texts)),
                               "position long, id string, text string").repartition(3)
    result = neardup_spark.find(df, order_col="position", **options)

    pairs = neardup_spark._to_arrow(result.pairs)
    assert local.counts["identical_copies"] >= 20 and local.counts["near_duplicate_pairs"] > 50
    assert _rows(pairs) == _rows(local.pairs_table())  # ids, exact J, estimate, doc numbers
    assert (_rows(neardup_spark._to_arrow(result.clusters))
            == _rows(local.clusters_table()))  # labels and representatives
    assert (_rows(neardup_spark._to_arrow(result.documents))
            == _rows(local.documents_table()))
    assert (_rows(neardup_spark._to_arrow(result.candidates))
            == _rows(local.candidates_table()))
    assert result.counts == local.counts


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
               "--top", "3"]
    assert cli.main(["find", str(source), "--out", str(tmp_path / "local"), *options]) == 0
    assert cli.main(["find", str(source), "--out", str(tmp_path / "spark"), "--engine",
                     "spark", *options]) == 0
    local = neardup.find(source, shingle_kind="char", shingle_size=4, threshold=0.5,
                         max_bucket=2, bits=8, representative="shortest", method="lsh")
    assert local.counts["buckets"]["buckets_over_limit"] > 0  # the star branch ran
    assert local.counts["pairs"] >= 4
    for name in ("pairs.csv", "clusters.csv", "documents.csv", "candidates.csv",
                 "summary.json"):
        local_bytes = (tmp_path / "local" / name).read_bytes()
        spark_bytes = (tmp_path / "spark" / name).read_bytes()
        if name == "summary.json":  # the local engine also reports how it read the file
            import json

            local_json, spark_json = json.loads(local_bytes), json.loads(spark_bytes)
            assert local_json["counts"] == spark_json["counts"]
            assert local_json["config"] == spark_json["config"]
        else:
            assert spark_bytes == local_bytes, name


def test_connected_components_match_scipy_on_a_long_chain(spark):
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
           neardup_spark.connected_components(df, "src", "dst").collect()}

    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    smallest = np.full(component.max() + 1, n)
    np.minimum.at(smallest, component, np.arange(n))
    on_edges = np.unique(edges[edges[:, 0] != edges[:, 1]])
    assert got == {int(v): int(smallest[component[v]]) for v in on_edges}
    assert len({got[int(v)] for v in nodes[:80]}) == 1  # the chain is one component
