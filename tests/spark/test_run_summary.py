"""--summary on Spark: dedup (whole documents and units) and repeats write the records the
local engine writes (those are checked against the files in tests/sinks/test_run_summary.py),
with the same counts, and the copy holds the kept documents."""

from __future__ import annotations

import json

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from tests.sinks.test_run_summary import documents_in, expected_jsonl, jsonl_lines  # noqa: E402
from tests.spark.copies import parts  # noqa: E402


def test_spark_summaries_are_the_local_ones(spark, tmp_path):
    lines = jsonl_lines()
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    runs = {"dedup": dict(id="id"), "dedup --unit line": dict(id="id", unit="line")}
    for name, options in runs.items():
        summaries = {}
        for engine in ("local", "spark"):
            out = tmp_path / f"{name}-{engine}".replace(" ", "_")
            neardup.dedup(path, out, engine=engine, summary=tmp_path / f"{engine}.json",
                          **options)
            summaries[engine] = json.loads((tmp_path / f"{engine}.json").read_text())
        local, on_spark = summaries["local"], summaries["spark"]
        assert on_spark["records"] == local["records"]
        copy = tmp_path / "copy.jsonl"
        copy.write_bytes(b"".join(p.read_bytes() for p in parts(out)))
        units = "unit" in options
        assert on_spark["records"]["kept"] == len(documents_in(copy, units=units))
        assert {k: on_spark["records"][k] for k in ("read", "processed", "skipped",
                                                     "failed")} == expected_jsonl(lines, units)
        assert on_spark["read"] == local["read"]
        # the local engine ran the exact join, Spark LSH: the same pairs, other search counts
        same = ("documents", "shingled", "pairs", "clusters", "documents_in_clusters",
                "removable", "min_member_similarity", "units", "units_removed",
                "documents_kept", "documents_dropped", "bytes_removed")
        assert {k: v for k, v in on_spark["counts"].items() if k in same} == {
            k: v for k, v in local["counts"].items() if k in same}
        assert on_spark["counts"]["dedup"]["removed"] == local["counts"]["dedup"]["removed"]
        assert on_spark["seconds"] and on_spark["config"] == local["config"]
    neardup.repeats(path, tmp_path / "r.csv", id="id", engine="spark",
                    summary=tmp_path / "repeats.json")
    repeats = json.loads((tmp_path / "repeats.json").read_text())
    assert repeats["records"] == {**expected_jsonl(lines), "skipped_by_reason": {
        "empty text": 1}, "failed_by_reason": {"malformed JSON": 1,
                                               "missing field 'text'": 1}}
    assert list(repeats["seconds"]) == ["read", "list"]
