"""index build --engine spark: the executors write the segments; the index holds the local
build's rows, ids and options, in a segment per partition, and after compact the local
build's files byte for byte; queries against it give the local index's pairs."""

import json

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup import cli  # noqa: E402
from neardup.index.store import SEGMENT_FILES, read_manifest  # noqa: E402
from neardup.synthetic import planted_corpus  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402

OPTIONS = dict(threshold=0.7, shingle_kind="char", shingle_size=5)


@pytest.fixture
def small_partitions(spark):
    """Inputs read in several partitions, so the index gets several segments."""
    with split_inputs(spark, 32768):
        yield


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two JSON Lines files of planted near-duplicates and copies, with a malformed line
    and a document below min_shingles (read, accounted for, not indexed); and a query."""
    root = tmp_path_factory.mktemp("build")
    c = planted_corpus(1400, dup_fraction=0.15, similarity=(0.5, 1.0), exact_copies=20,
                       seed=5)
    lines = [json.dumps({"id": i, "text": t}) for i, t in zip(c.ids, c.texts)]
    lines[40:40] = ['{"text": "never closed', json.dumps({"id": "tiny", "text": "w1"})]
    (root / "a.jsonl").write_text("\n".join(lines[:700]) + "\n")
    (root / "b.jsonl").write_text("\n".join(lines[700:1200]) + "\n")
    (root / "new.jsonl").write_text("\n".join(lines[1200:]) + "\n")
    return root


def _segment_bytes(idx):
    manifest = read_manifest(idx)
    assert len(manifest["segments"]) == 1
    folder = idx / "segments" / manifest["segments"][0]["name"]
    return {name: (folder / name).read_bytes() for name in SEGMENT_FILES}


def test_spark_build_holds_the_local_rows_and_compacts_to_its_files(spark, corpus, tmp_path,
                                                                     small_partitions):
    inputs = [corpus / "a.jsonl", corpus / "b.jsonl"]
    local = neardup.build_index(inputs, tmp_path / "local", **OPTIONS)
    built = neardup.build_index(inputs, tmp_path / "spark", engine="spark", **OPTIONS)
    assert len(built.segments) > 1  # a segment per partition
    assert (built.n, built.manifest["set_aside"]) == (local.n, local.manifest["set_aside"])
    assert built.manifest["set_aside"] == 1  # "tiny"
    report = built.build_report
    assert report["documents"] == local.n + 1
    assert report["read_report"]["processed"] == report["documents"]
    assert sum(report["read_report"]["failed"].values()) == 1  # the malformed line
    assert built.options == local.options
    assert (built.bands, built.rows, built.threshold) == (local.bands, local.rows,
                                                          local.threshold)
    every = built.live_documents()
    assert built.ids(every).to_pylist() == local.ids(local.live_documents()).to_pylist()
    # the same pairs for a query, from the index in segments
    query = corpus / "new.jsonl"
    pairs_local = neardup.find(query, against=tmp_path / "local").pairs_table()
    pairs_spark = neardup.find(query, against=tmp_path / "spark").pairs_table()
    assert pairs_spark.equals(pairs_local) and pairs_local.num_rows > 0
    built.compact()
    assert _segment_bytes(tmp_path / "spark") == _segment_bytes(tmp_path / "local")


def test_cli_index_build_on_spark_and_its_refusals(spark, corpus, tmp_path, capsys):
    code = cli.main(["index", "build", str(corpus / "a.jsonl"), "--engine", "spark", "-q",
                     "-t", "0.7", "--shingle", "char", "-k", "5", "-o", str(tmp_path / "i")])
    assert code == 0
    out = capsys.readouterr().out
    assert "written to" in out
    assert neardup.Index(tmp_path / "i").n == neardup.Index.build(
        corpus / "a.jsonl", tmp_path / "l", **OPTIONS).n
    with pytest.raises(ValueError, match="size a Bloom index: give --bloom"):
        neardup.build_index(corpus / "a.jsonl", tmp_path / "b", engine="spark", fp=0.01)
    with pytest.raises(ValueError, match="engine must be one of"):
        neardup.build_index(corpus / "a.jsonl", tmp_path / "c", engine="dask")
