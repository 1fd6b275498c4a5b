"""contamination on Spark: the local engine's report, matches and counts, on the planted
corpus read in several partitions (JSON Lines byte ranges) and as Parquet."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from tests.contamination.planted import write_planted  # noqa: E402
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


def test_spark_refuses_the_clean_copy(tmp_path):
    planted = write_planted(tmp_path)
    with pytest.raises(ValueError, match="^--clean is not supported by the Spark engine"):
        neardup.contamination([str(planted["train"])], {"qa": str(planted["qa"])},
                              engine="spark", clean=str(tmp_path / "c.jsonl"))
