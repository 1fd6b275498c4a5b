"""On Spark too, a read where no record is processed and some fail is refused before
anything is written (the local reader's rule: tests/sources/test_nothing_read.py)."""

from __future__ import annotations

import json

import pytest

import neardup

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RECORDS = [{"id": f"d{k}", "text": f"shared words of every record and then {k % 3}"}
           for k in range(12)]


def test_a_wrong_field_or_format_is_refused_on_spark(spark, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    with pytest.raises(ValueError, match="12 missing field 'body'; fields are id, text"):
        neardup.find(corpus, out=tmp_path / "results", engine="spark", text="body")
    assert not (tmp_path / "results").exists()
    with pytest.raises(ValueError, match="12 missing field 'body'"):
        neardup.dedup(corpus, tmp_path / "copy", engine="spark", unit="line", text="body")
    assert not (tmp_path / "copy").exists()
    table = tmp_path / "table.jsonl"
    table.write_text("id,text\n" + "".join(f"d{k},words {k}\n" for k in range(4)))
    with pytest.raises(ValueError, match="did you mean --format csv"):
        neardup.dedup(table, tmp_path / "copy2", engine="spark")
    assert not (tmp_path / "copy2").exists()
    result = neardup.find(corpus, engine="spark", text="body", allow_empty=True)
    assert result.read_report["failed"] == {"missing field 'body'; fields are id, text": 12}
