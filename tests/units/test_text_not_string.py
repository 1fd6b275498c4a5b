"""dedup --unit writes the text back into its field, so a text field that holds a
number, a boolean, a list or an object is not read as its JSON text: the record is
skipped with its reason, counted, and copied unchanged, in memory and under a limit."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup

RECORDS = [{"id": "a", "text": "Nav bar links\nstory one"},
           {"id": "n", "text": 12345678901234567890},
           {"id": "l", "text": ["Nav bar links", "x"]},
           {"id": "o", "text": {"Nav bar links": 1}},
           {"id": "f", "text": 1.5},
           {"id": "t", "text": True},
           {"id": "m", "text": 12345678901234567890},  # the same number again
           {"id": "b", "text": "Nav bar links\nstory two"}]
REASONS = {"field 'text' holds a number, not a string (--unit edits strings only)": 3,
           "field 'text' holds a list, not a string (--unit edits strings only)": 1,
           "field 'text' holds an object, not a string (--unit edits strings only)": 1,
           "field 'text' holds a boolean, not a string (--unit edits strings only)": 1}


@pytest.mark.parametrize("limit", [None, "512M"])
@pytest.mark.parametrize("unit", ["line", "span"])
def test_a_text_that_is_no_string_is_skipped_and_copied_unchanged(tmp_path, limit, unit):
    src = tmp_path / "in.jsonl"
    lines = [json.dumps(r) + "\n" for r in RECORDS]
    src.write_text("".join(lines))
    out = tmp_path / "out.jsonl"
    result = neardup.dedup(src, out, unit=unit, id="id", min_tokens=2, memory_limit=limit,
                           work_dir=None if limit is None else tmp_path / "w")
    # the string records alone, deduplicated; the others between them as they were
    (tmp_path / "strings.jsonl").write_text(lines[0] + lines[7])
    neardup.dedup(tmp_path / "strings.jsonl", tmp_path / "strings.out.jsonl", unit=unit,
                  id="id", min_tokens=2)
    first, last = (tmp_path / "strings.out.jsonl").read_text().splitlines(keepends=True)
    assert out.read_text() == first + "".join(lines[1:7]) + last
    assert last != lines[7]  # units were removed from it
    assert result.read_report["skipped"] == REASONS
    c = result.counts
    assert (c["records_seen"], c["documents_kept"], c["skipped"], c["dedup"]["written"]) == \
        (8, 2, 6, 8)


def test_a_parquet_text_column_of_numbers_is_skipped_and_copied_unchanged(tmp_path):
    table = pa.table({"id": ["a", "b"], "text": [1, 1]})
    pq.write_table(table, tmp_path / "in.parquet")
    result = neardup.dedup(tmp_path / "in.parquet", tmp_path / "out.parquet", unit="line",
                           id="id")
    assert pq.read_table(tmp_path / "out.parquet").equals(table)
    assert result.read_report["skipped"] == {
        "field 'text' holds a number, not a string (--unit edits strings only)": 2}
