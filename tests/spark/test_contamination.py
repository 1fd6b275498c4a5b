"""contamination on Spark: the local engine's report, matches and counts, on the planted
corpus read in several partitions (JSON Lines byte ranges) and as Parquet."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from tests.contamination.planted import write_planted  # noqa: E402
from tests.spark.copies import joined, parts  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402


@pytest.fixture
def small_splits(spark):
    with split_inputs(spark, 8192):
        yield


@pytest.mark.parametrize(("fmt", "rule", "require"), [
    ("jsonl", "ngram", None), ("jsonl", "containment", "question,answer"),
    ("parquet", "ngram", None)])
def test_spark_report_and_matches_are_the_local_ones(spark, tmp_path, small_splits, fmt,
                                                     rule, require):
    planted = write_planted(tmp_path)
    train = planted["train"]
    if fmt == "parquet":
        rows = []
        for line in train.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
        train = tmp_path / "train.parquet"
        pq.write_table(pa.Table.from_pylist(rows), train)
    options = dict(fields="question,answer", eval_id="id", id="id", rule=rule,
                   containment=0.5, require=require)
    evals = {"qa": str(planted["qa"])}
    local = neardup.contamination([str(train)], evals, report=str(tmp_path / "l.json"),
                                  matches=str(tmp_path / "l.csv"), **options)
    on_spark = neardup.contamination([str(train)], evals, engine="spark",
                                     report=str(tmp_path / "s.json"),
                                     matches=str(tmp_path / "s.csv"), **options)
    assert local.matches.num_rows > 0
    assert on_spark.matches.equals(local.matches)
    assert on_spark.report == local.report
    assert on_spark.counts == local.counts
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "l.csv").read_bytes()
    assert json.loads((tmp_path / "s.json").read_text())["benchmarks"] == \
        json.loads((tmp_path / "l.json").read_text())["benchmarks"]


def _parquet(train, tmp_path):
    """The planted training file's records as Parquet (its malformed line left out)."""
    rows = []
    for line in train.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=40)
    return path


@pytest.mark.parametrize(("fmt", "rule", "require", "spans"), [
    ("jsonl", "ngram", None, False), ("jsonl", "ngram", None, True),
    ("jsonl", "containment", "question,answer", True), ("parquet", "ngram", None, True)])
def test_spark_clean_copy_and_flags_are_the_local_ones(spark, tmp_path, small_splits, fmt,
                                                       rule, require, spans):
    """--clean (whole documents, or --clean-spans) on Spark: the parts, concatenated, are
    the local clean copy byte for byte (Parquet: row for row); the counts and the
    flagged evaluation files are the local ones."""
    planted = write_planted(tmp_path)
    # "½" is one word in the text and two once cleaned: that document goes whole
    item = json.loads(planted["qa"].read_text().splitlines()[0])
    text = f"Take ½ of {item['question']} {item['answer']}"
    planted["train"].write_text(json.dumps({"id": "half", "text": text})
                                + "\n" + planted["train"].read_text())
    train = planted["train"] if fmt == "jsonl" else _parquet(planted["train"], tmp_path)
    options = dict(fields="question,answer", eval_id="id", id="id", rule=rule,
                   containment=0.5, require=require, clean_spans=spans)
    evals = {"qa": str(planted["qa"])}
    local_copy = tmp_path / f"local.{fmt}"
    local = neardup.contamination([str(train)], evals, clean=str(local_copy),
                                  flag_eval=str(tmp_path / "lflags"), **options)
    on_spark = neardup.contamination([str(train)], evals, engine="spark",
                                     clean=str(tmp_path / "spark"),
                                     flag_eval=str(tmp_path / "sflags"), **options)
    files = parts(tmp_path / "spark")
    assert len(files) >= 2  # written by several tasks
    manifest = json.loads((tmp_path / "spark" / "manifest.json").read_text())
    assert manifest["written by"] == "neardup contamination --engine spark"
    if fmt == "jsonl":
        assert joined(tmp_path / "spark") == local_copy.read_bytes()
    else:
        assert pa.concat_tables(pq.read_table(p) for p in files).equals(
            pq.read_table(local_copy))
    changed = local.counts.get("documents_changed", 0)
    assert local.counts["documents_removed"] + changed == local.counts["documents_matched"]
    assert (changed > 3) is spans and local.counts["documents_removed"] >= (1 if spans else 10)
    want, got = dict(local.counts), dict(on_spark.counts)
    local_clean, spark_clean = want.pop("clean"), got.pop("clean")
    assert got == want
    assert spark_clean == local_clean | {"outputs": [dict(local_clean["outputs"][0],
                                                          output=str(tmp_path / "spark")
                                                          + os.sep)]}
    assert on_spark.report == local.report and on_spark.matches.equals(local.matches)
    flagged = (tmp_path / "sflags" / "qa.jsonl").read_bytes()
    assert flagged == (tmp_path / "lflags" / "qa.jsonl").read_bytes()
    assert b'"neardup_contaminated": true' in flagged


def test_spark_refuses_the_clean_copy_to_standard_output(tmp_path):
    planted = write_planted(tmp_path)
    with pytest.raises(ValueError, match="^--clean - is not supported by the Spark engine"):
        neardup.contamination([str(planted["train"])], {"qa": str(planted["qa"])},
                              engine="spark", clean="-")
