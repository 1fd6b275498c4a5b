"""A read where no record is processed and some fail is refused, naming why.

A wrong ``--text-field`` or ``--id-field``, a CSV file named ``.jsonl`` or JSON Lines named
``.json`` fail every record: a run on no documents would then report success (and dedup
copy every record under the output's name). The read raises ValueError naming the
reasons, the fields the records have and the format the content looks like, unless
``allow_empty=True``; a read with one processed record, or with nothing failed, goes on.
"""

from __future__ import annotations

import json

import pytest

from neardup.sources import read_document_chunks, read_documents
from neardup.sources.sniff import looks_like

RECORDS = [{"id": f"d{k}", "text": f"document number {k} about things"} for k in range(6)]


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return str(path)


def test_a_wrong_text_field_is_refused_naming_the_fields(jsonl):
    with pytest.raises(ValueError) as raised:
        read_documents([jsonl], text_fields=["body"])
    message = str(raised.value)
    assert message.startswith("no record was read as a document: 6 of 6 failed (first: "
                              f"{jsonl} line 1): 6 missing field 'body'; fields are id, text.")
    assert "allow_empty=True (--allow-empty)" in message and "did you mean" not in message
    documents, report = read_documents([jsonl], text_fields=["body"], allow_empty=True)
    assert len(documents) == 0 and report.failed == {
        "missing field 'body'; fields are id, text": 6}


def test_a_wrong_id_field_is_refused(jsonl):
    with pytest.raises(ValueError, match="6 missing field 'key'; fields are id, text"):
        read_documents([jsonl], id_field="key")


def test_the_refusal_comes_when_the_chunks_are_read(jsonl):
    chunks, report, _ = read_document_chunks([jsonl], chunk_chars=10, text_fields=["body"])
    with pytest.raises(ValueError, match="no record was read as a document"):
        list(chunks)
    chunks, report, _ = read_document_chunks([jsonl], chunk_chars=10, text_fields=["body"],
                                             allow_empty=True)
    assert list(chunks) == [] and report.records_seen == 6


@pytest.mark.parametrize("name, data, hint", [
    ("table.jsonl", "id,text\n1,one two\n2,three four\n", "did you mean --format csv? "
                                                           "({path} reads as CSV)"),
    ("table.jsonl", "id\ttext\n1\tone two\n2\tthree four\n", "did you mean --format tsv?"),
    ("lines.json", "".join(json.dumps(r) + "\n" for r in RECORDS),
     "did you mean --format jsonl? ({path} reads as JSON Lines)"),
    ("array.jsonl", json.dumps(RECORDS, indent=1), "did you mean --format json?"),
])
def test_the_message_names_the_format_the_content_looks_like(tmp_path, name, data, hint):
    path = tmp_path / name
    path.write_text(data)
    with pytest.raises(ValueError) as raised:
        read_documents([str(path)])
    assert hint.format(path=path) in str(raised.value)


def test_a_read_with_a_document_or_without_failures_goes_on(tmp_path, jsonl):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"text": "one document here"}\n{"body": "x"}\nnot json\n')
    documents, report = read_documents([str(mixed)])
    assert len(documents) == 1 and sum(report.failed.values()) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_documents([str(empty)])[1].records_seen == 0
    blank = tmp_path / "blank.jsonl"
    blank.write_text('{"text": ""}\n{"text": "  "}\n')  # skipped, not failed
    assert read_documents([str(blank)])[1].skipped == {"empty text": 2}
    # several inputs: one with documents is enough
    documents, _ = read_documents([jsonl, str(tmp_path / "mixed.jsonl")])
    assert len(documents) == 7


def test_looks_like():
    assert looks_like(['{"a": 1}', '{"b": 2}']) == "jsonl"
    assert looks_like(['{"a": 1}']) is None  # one object is a JSON file too
    assert looks_like(["[", '{"a": 1}']) == "json"
    assert looks_like(["a,b", '1,"x, y"']) == "csv"
    assert looks_like(["a\tb", "1\t2"]) == "tsv"
    assert looks_like(["a,b", "1,2,3"]) is None  # widths differ
    assert looks_like(["just some prose", "and more of it"]) is None
    assert looks_like([]) is None
