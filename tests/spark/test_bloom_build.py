"""index build --engine spark --bloom: the executors set the filters, the driver ORs them;
the index is the local Bloom build's, file for file and byte for byte, under any
partitioning of the input (one generation, or several past --capacity), and a query
against it flags what a query against the local one flags."""

import json

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup import cli  # noqa: E402
from neardup.index import bloom  # noqa: E402
from neardup.index.bloom import BloomIndex  # noqa: E402
from neardup.synthetic import planted_corpus  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402

OPTIONS = dict(threshold=0.7, shingle_kind="char", shingle_size=5)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two JSON Lines files of planted near-duplicates and identical copies, with texts
    too short to pair (set aside), empty ones (skipped) and a malformed line (failed);
    and new documents, some of them copies of indexed ones."""
    root = tmp_path_factory.mktemp("bloom")
    c = planted_corpus(1300, doc_words=80, dup_fraction=0.2, similarity=(0.6, 1.0),
                       exact_copies=40, seed=11)
    lines = [json.dumps({"id": i, "text": t}) for i, t in zip(c.ids, c.texts)]
    for at in (3, 250, 700, 701, 1100):
        lines[at:at] = [json.dumps({"id": f"short-{at}", "text": "w1"}),
                        json.dumps({"id": f"empty-{at}", "text": ""})]
    lines[40:40] = ['{"text": "never closed']
    (root / "a.jsonl").write_text("\n".join(lines[:650]) + "\n")
    (root / "b.jsonl").write_text("\n".join(lines[650:1150]) + "\n")
    (root / "new.jsonl").write_text("\n".join(lines[1150:] + lines[100:140]) + "\n")
    return root


def _files(idx) -> dict:
    """Every file of the index folder: its bytes (the manifest as JSON)."""
    files = {p.relative_to(idx).as_posix(): p.read_bytes()
             for p in sorted(idx.rglob("*")) if p.is_file() and p.name != "lock"}
    files["manifest.json"] = json.loads(files["manifest.json"])
    return files


def test_spark_bloom_build_is_the_local_build_byte_for_byte(spark, corpus, tmp_path):
    inputs = [corpus / "a.jsonl", corpus / "b.jsonl"]
    local = neardup.build_index(inputs, tmp_path / "local", bloom=True, **OPTIONS)
    assert isinstance(local, BloomIndex) and local.manifest["set_aside"] == 5
    new = corpus / "new.jsonl"
    flags = local.query(new, **OPTIONS).flagged
    assert flags.any() and not flags.all()
    partitions = []
    for name, partition_bytes in (("few", 1 << 20), ("many", 16384)):
        with split_inputs(spark, partition_bytes):
            partitions.append(spark.read.text([str(p) for p in inputs])
                              .rdd.getNumPartitions())
            built = neardup.build_index(inputs, tmp_path / name, engine="spark", bloom=True,
                                        **OPTIONS)
        assert isinstance(built, BloomIndex)
        assert _files(tmp_path / name) == _files(tmp_path / "local")
        report = built.build_report
        assert (report["documents"], report["set_aside"]) == (local.n + 5, 5)
        read = report["read_report"]
        assert read["processed"] == report["documents"]
        assert read["skipped"] == {"empty text": 5} and read["failed"] == {"malformed JSON": 1}
        assert np.array_equal(built.query(new, **OPTIONS).flagged, flags)
    assert partitions[0] < partitions[1]


def test_generations_past_capacity_match_the_local_build(spark, corpus, tmp_path,
                                                         monkeypatch, capsys):
    # blocks of 1,000 documents and ranks found in blocks of 64 numbers: a build of
    # 1,139 documents at --capacity 100 (the filters' floor holds 237) opens generation 1
    # as large as what its block has left (763), and generation 2 twice that; their
    # first documents fall inside rank blocks and partitions
    monkeypatch.setattr(bloom, "BUILD_BLOCK", 1000)
    monkeypatch.setattr("neardup.spark.bloom.RANK_BLOCK", 64)
    inputs = [corpus / "a.jsonl", corpus / "b.jsonl"]
    local = neardup.build_index(inputs, tmp_path / "local", bloom=True, capacity=100,
                                fp=0.01, **OPTIONS)
    generations = local.info()["generations"]
    assert [(g["capacity"], g["documents"]) for g in generations] == \
        [(237, 237), (763, 763), (1526, local.n - 1000)]
    args = ["index", "build", *map(str, inputs), "--engine", "spark", "--bloom",
            "--capacity", "100", "--fp", "0.01", "-q", "-t", "0.7", "--shingle", "char",
            "-k", "5", "-o", str(tmp_path / "spark")]
    with split_inputs(spark, 16384):
        assert cli.main(args) == 0
    assert "written to" in capsys.readouterr().out
    assert _files(tmp_path / "spark") == _files(tmp_path / "local")
    # no usable document ("w1"; the empty text is skipped) and no --capacity: refused as
    # locally, nothing written
    (tmp_path / "empty.jsonl").write_text('{"text": ""}\n{"text": "w1"}\n')
    with pytest.raises(ValueError, match=r"no documents to size .* 1 set aside"):
        neardup.build_index(tmp_path / "empty.jsonl", tmp_path / "none", engine="spark",
                            bloom=True, **OPTIONS)
    assert not (tmp_path / "none").exists()
