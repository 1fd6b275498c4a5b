"""Readers account for every record; the dedup copy holds exactly the kept records."""

from __future__ import annotations

import io
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.sources import DEDUP_MARKER, FORMATS, ReadReport, read_documents
from neardup.sources.copies import write_deduplicated


def alternate(n: int) -> np.ndarray:
    """keep, keep-not, keep, ...: every other document is a removed duplicate."""
    return np.arange(n) % 2 == 0


# ---------------------------------------------------------------- directories


@pytest.fixture
def tree(tmp_path, write):
    root = tmp_path / "src"
    write(root / "a.py", "def a(): pass\n")
    write(root / "pkg" / "b.py", "def b(): pass\n")
    write(root / "pkg" / "notes.md", "notes\n")
    write(root / "pkg" / "empty.py", "")
    write(root / "build" / "gen.py", "generated\n")
    write(root / "blob.py", b"\x89PNG\x00\x01\x02")
    write(root / "latin.py", "caf\xe9\n".encode("latin-1"))
    os.symlink(root, root / "pkg" / "loop")  # a directory linking to its ancestor
    return root


def test_directory_selects_sorted_files_and_accounts_for_each(tree, read):
    documents, report = read([tree], include=["*.py"], exclude=["build"])
    assert documents.ids == ["a.py", "pkg/b.py", "pkg/empty.py"]
    assert documents.texts == ["def a(): pass\n", "def b(): pass\n", ""]
    assert report.records_seen == 5  # the 3 above, blob.py, latin.py; notes.md and build/ filtered
    assert report.skipped == {"binary file": 1, "not UTF-8": 1}
    assert report.failed == {}
    assert {(p.source, p.reason) for p in report.problems} == {
        (str(tree / "blob.py"), "binary file"),
        (str(tree / "latin.py"), "not UTF-8"),
    }
    assert documents.source.dtype == np.int32 and documents.record.dtype == np.int64
    # record is the position in the sorted file list, which skipped files also occupy
    entries = documents.inputs[0].entries
    assert [entries[r] for r in documents.record] == documents.ids


def test_directory_symlink_loop_is_not_followed(tree, read):
    documents, _ = read([tree])
    assert not any("loop" in i for i in documents.ids)


def test_directory_globs_match_relative_path_and_root_name(tree, read):
    documents, _ = read([tree], include=["pkg/*"], exclude=["*/notes.md"])
    assert documents.ids == ["pkg/b.py", "pkg/empty.py"]
    documents, _ = read([tree], include=["src/pkg/b.py"])
    assert documents.ids == ["pkg/b.py"]


def test_directory_given_encoding_decodes_what_utf8_cannot(tree, read):
    documents, report = read([tree], include=["latin.py"], encoding="latin-1")
    assert documents.texts == ["café\n"]
    assert report.skipped == {}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads everything")
def test_directory_unreadable_file_is_failed_with_os_error(tree, read):
    (tree / "a.py").chmod(0)
    try:
        documents, report = read([tree], include=["*.py"])
    finally:
        (tree / "a.py").chmod(0o644)
    assert "a.py" not in documents.ids
    assert report.failed == {"Permission denied": 1}


def test_directory_broken_symlink_is_failed_and_not_copied(tree, tmp_path, read):
    os.symlink(tree / "missing.py", tree / "dangling.py")
    documents, report = read([tree], include=["*.py"])
    assert report.failed == {"No such file or directory": 1}
    counts = write_deduplicated(documents, np.ones(len(documents), bool), [str(tree)],
                                tmp_path / "copy")
    assert counts["outputs"][0]["not_copied"] == 1
    assert not (tmp_path / "copy" / "dangling.py").exists()
    assert (tmp_path / "copy" / "blob.py").read_bytes() == (tree / "blob.py").read_bytes()


# ---------------------------------------------------------------- JSONL


def test_jsonl_records_failures_and_ids(tmp_path, write, read):
    path = write(tmp_path / "d.jsonl", "\n".join([
        '{"id": "a", "title": "T", "text": "first"}',
        "",
        "{not json",
        '{"id": "b", "title": "T"}',
        '{"id": "c", "title": "T", "text": null}',
        "   ",
        '{"id": 7, "title": 2, "text": "seventh"}',
        '["a list"]',
        '{"id": "e", "title": "", "text": " "}',
    ]) + "\n")
    documents, report = read([path], text_fields=["title", "text"], id_field="id")
    assert documents.ids == ["a", "7"]
    assert documents.texts == ["T\nfirst", "2\nseventh"]
    assert documents.record.tolist() == [0, 6]  # physical line index: line number - 1
    assert report.records_seen == 7  # blank lines are not records
    assert report.failed == {"malformed JSON": 1, "missing field 'text'": 2,
                             "not a JSON object": 1}
    assert report.skipped == {"empty text": 1}
    assert [(p.location, p.reason) for p in report.problems] == [
        ("line 3", "malformed JSON"),
        ("line 4", "missing field 'text'"),
        ("line 5", "missing field 'text'"),
        ("line 8", "not a JSON object"),
    ]


def test_jsonl_without_id_field_uses_line_numbers(tmp_path, write, read):
    path = write(tmp_path / "d.jsonl", '{"text": "x"}\n\n{"text": "y"}\n')
    documents, _ = read([path])
    assert documents.ids == ["1", "3"]


def test_duplicate_ids_are_renamed_not_dropped(tmp_path, write, read):
    path = write(tmp_path / "d.jsonl", "".join(
        json.dumps({"id": i, "text": f"t{n}"}) + "\n"
        for n, i in enumerate(["x", "x", "x#2", "x"])
    ))
    documents, report = read([path], id_field="id")
    assert documents.ids == ["x", "x#2", "x#2#2", "x#3"]
    assert report.processed == 4 and report.skipped == {} and report.failed == {}
    assert [p.reason for p in report.problems] == [
        "duplicate id 'x' (renamed to 'x#2')",
        "duplicate id 'x#2' (renamed to 'x#2#2')",
        "duplicate id 'x' (renamed to 'x#3')",
    ]


# ---------------------------------------------------------------- CSV, TSV


def test_csv_quoted_multiline_escapes_broken_rows_and_joined_columns(tmp_path, write, read):
    path = write(tmp_path / "d.csv",
                 'id,title,body\n'
                 'a,Hello,"two\nlines with ""quotes"", and a comma"\n'
                 'b,short row\n'
                 '\n'
                 'c,,third\n')
    documents, report = read([path], text_fields=["title", "body"], id_field="id")
    assert documents.ids == ["a", "c"]
    assert documents.texts == ['Hello\ntwo\nlines with "quotes", and a comma', "\nthird"]
    assert documents.record.tolist() == [0, 2]
    assert report.failed == {"row has 2 fields, header has 3": 1}
    assert report.problems[0].location == "row 2 (line 4)"


def test_csv_missing_column_is_a_usage_error_naming_file_and_columns(tmp_path, write):
    path = write(tmp_path / "d.csv", "id,body\n1,x\n")
    with pytest.raises(ValueError, match=r"d\.csv.*'text'.*\['id', 'body'\]"):
        read_documents([path])


def test_tsv_uses_tab_and_row_numbers(tmp_path, write, read):
    path = write(tmp_path / "d.tsv", "text\tn\nfirst, with comma\t1\n\t2\nthird\t3\n")
    documents, report = read([path])
    assert documents.ids == ["1", "3"]
    assert documents.texts == ["first, with comma", "third"]
    assert report.skipped == {"empty text": 1}


def test_csv_undecodable_row_is_skipped_alone(tmp_path, write, read):
    path = write(tmp_path / "d.csv", b"text\nfine\ncaf\xe9\nalso fine\n")
    documents, report = read([path])
    assert documents.texts == ["fine", "also fine"]
    assert report.skipped == {"not UTF-8": 1}


# ---------------------------------------------------------------- Parquet


def test_parquet_columns_null_text_and_ids(tmp_path, read):
    path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({"key": ["a", "b", "c"], "text": ["one", None, "three"],
                             "n": [1, 2, 3]}), path)
    documents, report = read([path], id_field="key")
    assert documents.ids == ["a", "c"]
    assert documents.texts == ["one", "three"]
    assert documents.record.tolist() == [0, 2]
    assert report.skipped == {"null text": 1}
    with pytest.raises(ValueError, match="no column 'body'"):
        read_documents([path], text_fields=["body"])


# ---------------------------------------------------------------- lines, stdin


def test_lines_strip_endings_and_skip_blank_lines(tmp_path, write, read):
    path = write(tmp_path / "names.txt", "alice\r\n\nbob\n  \ncarol")
    documents, report = read([path])
    assert documents.ids == ["1", "3", "5"]
    assert documents.texts == ["alice", "bob", "carol"]
    assert report.skipped == {"empty line": 2}
    assert report.problems == []  # routine skips are counted, not listed


def test_lines_undecodable_line_is_skipped_alone_and_copied_back(tmp_path, write, read):
    path = write(tmp_path / "names.txt", b"\xef\xbb\xbfann\ncaf\xe9\nbob\n")
    documents, report = read([path])
    assert documents.texts == ["ann", "bob"]  # byte-order mark dropped
    assert report.skipped == {"not UTF-8": 1}
    write_deduplicated(documents, np.array([False, True]), [path], tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_bytes() == b"caf\xe9\nbob\n"


def test_stdin_reads_lines_or_the_format_given(monkeypatch, read):
    monkeypatch.setattr(sys, "stdin", io.StringIO("x\n\ny\n"))
    documents, report = read(["-"])
    assert documents.texts == ["x", "y"] and documents.ids == ["1", "3"]
    assert documents.inputs[0].fmt == "lines"
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"text": "j"}\n'))
    documents, _ = read(["-"], fmt="jsonl")
    assert documents.texts == ["j"]


# ---------------------------------------------------------------- usage errors


def test_missing_input_and_unknown_format_are_reported_clearly(tmp_path, write):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_documents([missing])
    path = write(tmp_path / "a.txt", "x\n")
    with pytest.raises(ValueError, match="fmt must be one of") as err:
        read_documents([path], fmt="xml")
    assert all(f in str(err.value) for f in FORMATS)


def test_check_catches_broken_accounting():
    report = ReadReport(records_seen=3, processed=1, skipped={"binary file": 1})
    with pytest.raises(AssertionError, match="3 records seen"):
        report.check()


# ---------------------------------------------------------------- the dedup copy


@pytest.fixture(scope="session")
def make_input(write):
    """``make_input(tmp_path, fmt)``: an input of each format with 6 documents and some
    records that are not documents; its path and the options to read it."""

    def make(tmp_path, fmt: str) -> tuple[str, dict]:
        texts = [f"document {i}, \"quoted\"\nsecond line" if fmt != "lines" else f"line {i}"
                 for i in range(6)]
        if fmt == "lines":
            return write(tmp_path / "in.txt",
                         "line 0\n\nline 1\nline 2\r\nline 3\nline 4\nline 5"), {}
        if fmt == "jsonl":
            rows = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(texts)]
            rows.insert(2, "{broken")
            rows.insert(4, "")
            return write(tmp_path / "in.jsonl", "\n".join(rows) + "\n"), {"id_field": "id"}
        if fmt in ("csv", "tsv"):
            sep = "," if fmt == "csv" else "\t"
            lines = [f"id{sep}text"]
            for i, t in enumerate(texts):
                quoted = '"' + t.replace('"', '""') + '"'
                lines.append(f"d{i}{sep}{quoted}")
            lines.insert(3, f"bad{sep}row{sep}extra")
            return write(tmp_path / f"in.{fmt}", "\r\n".join(lines) + "\r\n"), {"id_field": "id"}
        if fmt == "parquet":
            path = str(tmp_path / "in.parquet")
            column = texts[:3] + [None] + texts[3:]
            ids = [f"d{i}" for i in range(3)] + ["null"] + [f"d{i}" for i in range(3, 6)]
            pq.write_table(pa.table({"id": ids, "text": column}), path)
            return path, {"id_field": "id"}
        root = tmp_path / "in"
        for i, t in enumerate(texts):
            write(root / f"d{i}.txt", t)
        write(root / "zz.bin", b"\x00binary")
        return str(root), {}

    return make


@pytest.mark.parametrize("fmt", ["dir", "jsonl", "csv", "tsv", "parquet", "lines"])
def test_dedup_copy_holds_exactly_the_kept_documents_and_is_deterministic(tmp_path, fmt, read,
                                                                          make_input):
    path, options = make_input(tmp_path, fmt)
    documents, report = read([path], **options)
    assert len(documents) == 6
    keep = alternate(len(documents))
    suffix = "" if fmt == "dir" else os.path.splitext(path)[1]
    first, second = str(tmp_path / f"out1{suffix}"), str(tmp_path / f"out2{suffix}")
    counts = write_deduplicated(documents, keep, [path], first)
    write_deduplicated(documents, keep, [path], second)

    copy, copy_report = read([first], **options)
    assert copy.texts == [t for t, k in zip(documents.texts, keep, strict=True) if k]
    if options.get("id_field") or fmt == "dir":
        assert copy.ids == [i for i, k in zip(documents.ids, keep, strict=True) if k]
    # skipped and failed records survive the copy: only documents are removed
    assert copy_report.skipped == report.skipped and copy_report.failed == report.failed
    assert counts["removed"] == 3
    assert counts["written"] == report.records_seen - 3
    assert _snapshot(first) == _snapshot(second)


@pytest.mark.parametrize("fmt", ["jsonl", "lines"])
def test_dedup_copy_of_line_formats_is_byte_identical_minus_removed_lines(tmp_path, fmt, read,
                                                                          make_input):
    path, options = make_input(tmp_path, fmt)
    documents, _ = read([path], **options)
    keep = alternate(len(documents))
    out = tmp_path / "out"
    write_deduplicated(documents, keep, [path], out)
    removed = set(documents.record[~keep].tolist())
    with open(path, "rb") as f:
        expected = b"".join(raw for i, raw in enumerate(f) if i not in removed)
    assert out.read_bytes() == expected


def test_dedup_copy_of_csv_keeps_delimiter_line_ending_and_header(tmp_path, read, make_input):
    path, options = make_input(tmp_path, "tsv")
    documents, _ = read([path], **options)
    out = tmp_path / "out.tsv"
    write_deduplicated(documents, alternate(len(documents)), [path], out)
    data = out.read_bytes()
    assert data.startswith(b"id\ttext\r\n")
    assert b"\r\nbad\trow\textra\r\n" in data  # a failed row is written back, as a row


def test_several_inputs_get_prefixed_ids_and_one_output_each(tmp_path, monkeypatch, write, read):
    a = write(tmp_path / "x" / "names.txt", "ann\nbob\n")
    b = write(tmp_path / "y" / "names.txt", "cid\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO("dan\neve\n"))
    documents, _ = read([a, b, "-"])
    assert documents.ids == ["names.txt:1", "names.txt:2", "names-2.txt:1",
                             "stdin.txt:1", "stdin.txt:2"]
    assert documents.source.tolist() == [0, 0, 1, 2, 2]
    keep = np.array([True, False, True, False, True])
    counts = write_deduplicated(documents, keep, [a, b, "-"], tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == [DEDUP_MARKER, "names-2.txt", "names.txt",
                                                    "stdin.txt"]
    assert (tmp_path / "out" / "names.txt").read_text() == "ann\n"
    assert (tmp_path / "out" / "names-2.txt").read_text() == "cid\n"
    assert (tmp_path / "out" / "stdin.txt").read_text() == "eve\n"
    assert (counts["written"], counts["removed"]) == (3, 2)


def test_dedup_copy_refuses_a_changed_input_and_mismatched_arguments(tmp_path, write, read):
    path = write(tmp_path / "a.txt", "x\ny\n")
    documents, _ = read([path])
    keep = np.array([True, False])
    with pytest.raises(ValueError, match="not the inputs"):
        write_deduplicated(documents, keep, [str(tmp_path / "b.txt")], tmp_path / "out.txt")
    with pytest.raises(ValueError, match="bool array"):
        write_deduplicated(documents, keep[:1], [path], tmp_path / "out.txt")
    with pytest.raises(ValueError, match="is the input"):
        write_deduplicated(documents, keep, [path], path)
    write(tmp_path / "a.txt", "x\ny\nz\n")
    with pytest.raises(RuntimeError, match="changed since it was read"):
        write_deduplicated(documents, keep, [path], tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def _snapshot(path: str) -> dict[str, bytes]:
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    snapshot = {}
    for directory, _, files in os.walk(path):
        for name in files:
            full = os.path.join(directory, name)
            with open(full, "rb") as f:
                snapshot[os.path.relpath(full, path)] = f.read()
    return snapshot
