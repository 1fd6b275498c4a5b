"""JSON Lines through Arrow read exactly as line by line: same documents, same accounting."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.sources import jsonl, read_document_chunks, read_documents

LINES = [
    b'{"text": "alpha beta gamma", "id": "a1", "rank": 3}',
    b'{"text": "alpha beta gamma", "id": "a1"}',  # a duplicate id
    b'{"id": 7, "text": "numbered id", "rank": "x"}',
    b'{"text": "", "id": "empty"}',
    b'{"text": "   ", "id": "blank text"}',
    b'{"text": 12, "id": "number as text"}',
    b'{"text": {"nested": true}, "id": "object as text"}',
    b'{"text": null, "id": "null text"}',
    b'{"id": "no text"}',
    b'{"text": "no id"}',
    b'{"text": "dup key", "text": "second"}',
    b'{"text": "caf\\u00e9 \\ud83d\\ude00", "id": "escapes"}',
    b'{"text": "lone \\ud800", "id": "surrogate"}',
    b'{"text": "raw \xc3\xa9 utf8", "id": "u"}',
    b'{"text": "bad \xff byte", "id": "bad"}',
    b'{"text": "tab\there", "id": "control"}',
    b'{"text": NaN, "id": "nan"}',
    b'{"text": "x"} trailing',
    b'{"text": "a"} {"text": "b"}',
    b'{"text": "big", "id": 123456789012345678901234567890}',
    b'{"text": "rank true", "rank": true}',
    b'{"text": "rank float", "rank": 1.5}',
    b'null',
    b'[1, 2]',
    b'"a string"',
    b'{broken',
    b'',
    b'   ',
    b'\t',
    b'\x0c',
]


def _read(path, arrow: bool, block: int, **options):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonl, "BLOCK_BYTES", block)
        if not arrow:
            patch.setattr(jsonl, "parse_block", lambda *args: None)
        # lines that all fail are a case to compare: the read is allowed to process none
        return read_documents([str(path)], allow_empty=True, **options)


def _same(path, block: int = jsonl.BLOCK_BYTES, **options):
    fast, fast_report = _read(path, True, block, **options)
    slow, slow_report = _read(path, False, block, **options)
    assert fast.ids == slow.ids
    assert fast.texts == slow.texts
    assert fast.record.tolist() == slow.record.tolist()
    assert fast.fields == slow.fields
    assert fast_report.as_dict() == slow_report.as_dict()
    fast_report.check()
    return fast, fast_report


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=40),
       block=st.sampled_from([16, 64, 1 << 20]), bom=st.booleans(), crlf=st.booleans(),
       final_newline=st.booleans(), id_field=st.sampled_from([None, "id"]),
       extra=st.sampled_from([(), ("rank",)]))
def test_arrow_blocks_read_as_line_by_line(tmp_path_factory, lines, block, bom, crlf,
                                           final_newline, id_field, extra):
    data = (b"\r\n" if crlf else b"\n").join(lines) + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("jsonl") / "docs.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    _same(path, block, id_field=id_field, extra_fields=extra)


def test_clean_file_goes_through_arrow(tmp_path, monkeypatch):
    rows = [{"id": f"d{k}", "text": f"document number {k}", "rank": k} for k in range(500)]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    calls = []
    real = jsonl.parse_block

    def counting(*args):
        block = real(*args)
        calls.append(block is not None)
        return block

    monkeypatch.setattr(jsonl, "parse_block", counting)
    documents, report = read_documents([str(path)], id_field="id", extra_fields=["rank"])
    monkeypatch.undo()
    assert calls and all(calls)  # every block was Arrow's
    assert documents.ids == [r["id"] for r in rows]
    assert documents.fields["rank"] == list(range(500))
    assert report.records_seen == report.processed == 500
    _same(path, id_field="id", extra_fields=["rank"])


def test_compressed_and_several_inputs(tmp_path, monkeypatch):
    import gzip

    one = tmp_path / "one.jsonl.gz"
    with gzip.open(one, "wb") as f:
        f.write(b'{"text": "first file"}\n\n{"text": ""}\n{"text": "again"}\n')
    two = tmp_path / "two.jsonl"
    two.write_bytes(b'{"text": "second file"}\nnull\n{"text": "more"}\n')
    fast, fast_report = read_documents([str(one), str(two)])
    monkeypatch.setattr(jsonl, "parse_block", lambda *args: None)
    slow, slow_report = read_documents([str(one), str(two)])
    assert fast.ids == slow.ids == ["one.jsonl.gz:1", "one.jsonl.gz:4", "two.jsonl:1",
                                    "two.jsonl:3"]
    assert fast.texts == slow.texts
    assert fast_report.as_dict() == slow_report.as_dict()


# lines Arrow reads as the line reader does (with no id field and no kept fields)
CLEAN = [LINES[k] for k in (0, 1, 3, 4, 11, 13, 26, 27)]


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.sampled_from(CLEAN), min_size=1, max_size=60),
       chunk_chars=st.integers(1, 200), chunk_docs=st.sampled_from([None, 1, 3]))
def test_chunks_close_where_line_by_line_reading_closes_them(tmp_path_factory, lines,
                                                            chunk_chars, chunk_docs):
    path = tmp_path_factory.mktemp("jsonl") / "docs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    parsed = []
    real = jsonl.parse_block

    def chunks(arrow: bool):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(jsonl, "parse_block",
                          lambda *args: parsed.append(real(*args)) or parsed[-1] if arrow
                          else None)
            read, report, _ = read_document_chunks([str(path)], chunk_chars=chunk_chars,
                                                   chunk_docs=chunk_docs)
            return [(chunk.start, chunk.ids, chunk.texts) for chunk in read], report.as_dict()

    assert chunks(True) == chunks(False)
    assert parsed[0] is not None or not any(line.strip() for line in lines)
