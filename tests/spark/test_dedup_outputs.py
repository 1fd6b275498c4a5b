"""``dedup --engine spark`` with ``keep``, ``annotate`` and ``explain``: the local engine's
outputs, byte for byte (JSON Lines parts, the explain file), row for row (Parquet parts),
and the local copy itself for an input read and copied on the driver.

The corpus (tests/test_annotate.py's, where the local outputs are checked against brute
force) holds copies, chains of edits, near variants, texts too short to shingle and
records without text; its JSON Lines file adds a malformed line, a blank line, a record
with no text field, a CRLF line and a last line without a newline."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402

from ..test_annotate import ANNOTATION_FIELDS, _write_jsonl, corpus  # noqa: E402
from .copies import joined, parts, same_counts  # noqa: E402

# LSH on both engines (Spark runs no exact join): the same candidates, so the same clusters
OPTIONS = {"shingle_kind": "word", "shingle_size": 1, "threshold": 0.75, "method": "lsh",
           "id": "id"}


def _jsonl_corpus(path):
    """The corpus as JSON Lines with failed and skipped records, a CRLF line and an open
    last line."""
    _write_jsonl(path, corpus(3, families=40))
    lines = path.read_bytes().split(b"\n")
    lines[7] += b"\r"
    path.write_bytes(b"\n".join(lines).removesuffix(b"\n"))


def _both(src, tmp_path, local_out, explain, **outputs):
    """dedup of ``src`` on both engines with ``outputs``, the explain file (one path: the
    counts name it) read after each run: (local result, Spark result, local explain
    bytes, Spark explain bytes)."""
    local = neardup.dedup(src, local_out, explain=explain, **outputs, **OPTIONS)
    local_explain = explain.read_bytes()
    explain.unlink()
    result = neardup.dedup(src, tmp_path / "spark", engine="spark", explain=explain,
                           **outputs, **OPTIONS)
    return local, result, local_explain, explain.read_bytes()


@pytest.mark.parametrize(("keep", "annotate", "explain"),
                         [("none", True, "explain.csv"),
                          ("representative", False, "explain.jsonl")])
def test_jsonl_copy_and_explain_file_are_the_local_ones_byte_for_byte(
        spark, tmp_path, small_splits, keep, annotate, explain):
    src = tmp_path / "in.jsonl"
    _jsonl_corpus(src)
    local, result, want, got = _both(src, tmp_path, tmp_path / "local.jsonl",
                                     tmp_path / explain, keep=keep, annotate=annotate)
    assert len(parts(tmp_path / "spark")) >= 2  # written by several tasks
    copy = joined(tmp_path / "spark")
    assert copy == (tmp_path / "local.jsonl").read_bytes()
    assert (b'"neardup_cluster": ' in copy) is annotate
    assert got == want
    removed = local.counts["dedup"]["removed"]
    assert local.counts["explain"]["rows"] == removed > 10  # copies, chains and variants
    same_counts(result, local, tmp_path / "spark")  # dedup, explain and the rest


def test_parquet_annotated_parts_and_a_copy_made_on_the_driver_are_the_local_ones(
        spark, tmp_path, small_splits):
    records = corpus(4, families=40)
    table = pa.Table.from_pylist(records)
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=20)
    local, result, want, got = _both(tmp_path / "in.parquet", tmp_path,
                                     tmp_path / "local.parquet", tmp_path / "explain.jsonl",
                                     keep="all", annotate=True)
    files = parts(tmp_path / "spark")
    assert len(files) >= 3
    rows = pa.concat_tables(pq.read_table(p) for p in files)
    expected = pq.read_table(tmp_path / "local.parquet")
    assert rows.equals(expected)
    assert rows.column_names == table.column_names + list(ANNOTATION_FIELDS)
    assert rows.num_rows == len(records)  # keep all: every row, the empty texts' with nulls
    assert rows.column("neardup_cluster").null_count == sum(not r["text"] for r in records)
    assert got == want
    assert local.counts["dedup"]["removed"] == 0 and local.counts["explain"]["rows"] == 0
    same_counts(result, local, tmp_path / "spark")
    # a compressed CSV is read and copied on the driver, by the local writer: its columns
    src = tmp_path / "in.csv.gz"
    with gzip.open(src, "wt", newline="") as f:
        table.to_pandas().to_csv(f, index=False)
    local = neardup.dedup(src, tmp_path / "local.csv", keep="none", annotate=True, **OPTIONS)
    neardup.dedup(src, tmp_path / "spark.csv", engine="spark", keep="none", annotate=True,
                  **OPTIONS)
    assert (tmp_path / "spark.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert b"neardup_duplicate_of" in (tmp_path / "spark.csv").read_bytes()
    assert local.counts["dedup"]["removed"] > 10


def test_outputs_that_cannot_be_written_are_refused_before_spark_reads(tmp_path):
    """An input that has an added name, and an explain file inside the folder of parts
    (replaced whole by the next run), are refused at the door."""
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "x y z", "neardup_kept": 1}) + "\n")
    with pytest.raises(ValueError, match="already has 'neardup_kept'"):
        neardup.dedup(src, tmp_path / "out", engine="spark", annotate=True, **OPTIONS)
    with pytest.raises(ValueError, match="lies inside --out"):
        neardup.dedup(src, tmp_path / "out", engine="spark", explain=tmp_path / "out" / "e.csv",
                      **OPTIONS)
    assert not (tmp_path / "out").exists()
