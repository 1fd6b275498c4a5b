"""Bad records cost themselves only: every one is accounted for and no unique row is lost.

Each test is a repro of issue 12 ("Nothing lost: bad records"); the last one fuzzes the
line-based readers with arbitrary bytes.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import stat
import tempfile
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.sources import DEDUP_MARKER, read_documents
from neardup.sources.copies import write_deduplicated

FOX = "the quick brown fox jumps over the lazy dog near the river bank"


def utf8_clean(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@pytest.fixture
def no_hang():
    """Fail a test that blocks (reading a named pipe waits for a writer forever)."""
    if not hasattr(signal, "SIGALRM"):
        pytest.skip("needs SIGALRM")

    def timeout(signum, frame):
        raise TimeoutError("blocked: a read waited more than 20 s")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- 1. a quote left open


@pytest.mark.parametrize("sep, ext", [(",", "csv"), ("\t", "tsv")])
def test_open_quote_fails_its_record_and_the_rows_after_it_are_read(tmp_path, sep, ext, write,
                                                                    read):
    """Rows 3-5 were merged into row 2 (then dropped as a near copy of row 1); now row 2
    alone fails, naming the line its quote opened on, and rows 3-5 are documents."""
    path = write(tmp_path / f"s.{ext}",
                 f'id{sep}text\n1{sep}"hello world"\n2{sep}"unterminated quote starts here\n'
                 f"3{sep}third row text\n4{sep}fourth\n5{sep}fifth\n")
    documents, report = read([path], id_field="id")
    assert documents.ids == ["1", "3", "4", "5"]
    assert documents.texts == ["hello world", "third row text", "fourth", "fifth"]
    assert documents.record.tolist() == [0, 2, 3, 4]
    assert report.records_seen == 5 and report.processed == 4
    assert report.failed == {"quote opened on line 3 is never closed": 1}
    assert [(p.location, p.reason) for p in report.problems] == [
        ("row 2 (line 3)", "quote opened on line 3 is never closed")]


def test_dedup_with_an_open_quote_keeps_the_unique_rows_and_says_why(tmp_path, capsys, write, read):
    """The CLI repro: `neardup dedup s.csv -o out.csv` deleted unique rows 3-5. Row 4 is
    a copy of row 3 here, so the copy also shows reading and writing number rows alike."""
    path = write(tmp_path / "s.csv",
                 'id,text\n1,"hello world, said the first row"\n'
                 '2,"unterminated quote starts here\n'
                 f"3,{FOX}\n4,{FOX}\n5,fifth row with its own words\n")
    out = tmp_path / "out.csv"
    assert main(["dedup", path, "--id-field", "id", "-o", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "failed: 1 quote opened on line 3 is never closed" in printed
    assert out.read_text() == (
        'id,text\n1,"hello world, said the first row"\n'
        '2,"unterminated quote starts here\n'  # the failed record, copied as it was
        f"3,{FOX}\n5,fifth row with its own words\n")
    copy, copy_report = read([out], id_field="id")
    assert copy.ids == ["1", "3", "5"]
    assert copy_report.failed == {"quote opened on line 3 is never closed": 1}


def test_stray_quote_closing_lines_later_fails_the_record_it_opened(tmp_path, write, read):
    """A quote that closes lines later with text after it (a stray quote closed it) is
    an open quote too; the rows between are read as rows."""
    path = write(tmp_path / "s.csv",
                 'id,text\n1,"opens here\n2,plain\n3,she said "hi" there\n4,last\n')
    documents, report = read([path], id_field="id")
    assert documents.ids == ["2", "3", "4"]
    assert documents.texts == ["plain", 'she said "hi" there', "last"]
    assert report.failed == {"quote opened on line 2 closes mid-field on line 4": 1}


def test_quoted_fields_over_several_lines_still_read_as_one_field(tmp_path, write, read):
    path = write(tmp_path / "s.csv",
                 'id,text\r\n1,"two\r\nlines, ""quoted"""\r\n2,"a ""b""\n\nc"\r\n'
                 '3,"x"y\r\n4,"last\nline"')
    documents, report = read([path], id_field="id")
    assert documents.ids == ["1", "2", "3", "4"]
    assert documents.texts == ['two\r\nlines, "quoted"', 'a "b"\n\nc', "xy", "last\nline"]
    assert report.failed == {} and report.problems == []


def test_open_quote_in_the_header_is_a_usage_error(tmp_path, write):
    path = write(tmp_path / "s.csv", 'id,"text\n1,a\n2,b\n')
    assert main(["find", path, "-q"]) == 2
    with pytest.raises(ValueError, match=r"s\.csv: cannot parse the header row: "
                                         r"quote opened on line 1 is never closed"):
        read_documents([path])


# ---------------------------------------------------------------- 2. text no output can hold


def test_jsonl_lone_surrogate_fails_its_record_and_the_run_writes_its_output(tmp_path, write):
    path = write(tmp_path / "d.jsonl",
                 '{"id": "a", "text": "bad \\ud800 here, and some more words"}\n'
                 '{"id": "\\udfff", "text": "a bad id, and some more words"}\n'
                 '{"id": "b", "text": {"nested": "\\udc00"}}\n'
                 f'{{"id": "c", "text": "{FOX}"}}\n{{"id": "d", "text": "{FOX}"}}\n')
    out = tmp_path / "out"
    assert main(["find", path, "--id-field", "id", "-o", str(out), "-q"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["read"]["failed"] == {"lone surrogate escape: not valid Unicode": 3}
    assert summary["read"]["processed"] == 2
    dedup = tmp_path / "dedup.jsonl"
    assert main(["dedup", path, "--id-field", "id", "-o", str(dedup), "-q"]) == 0
    lines = dedup.read_text().splitlines()
    assert len(lines) == 4 and '"id": "d"' not in dedup.read_text()  # only the copy removed


@pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")
def test_file_name_that_is_not_utf8_gets_an_escaped_id_and_the_run_completes(tmp_path, write, read):
    root = tmp_path / "in"
    root.mkdir()
    try:
        with open(os.path.join(os.fsencode(root), b"bad\xff.txt"), "wb") as f:
            f.write(FOX.encode())
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    write(root / "ok.txt", "another document entirely, with other words\n")
    out = tmp_path / "out"
    assert main(["find", str(root), "-o", str(out), "-q"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["read"]["processed"] == 2
    [note] = summary["read"]["problems"]
    assert note["reason"] == "file name is not UTF-8; id escaped as bad\\xff.txt"
    assert note["source"] == str(root / "bad\\xff.txt")
    documents, _ = read([root])
    assert documents.ids == ["bad\\xff.txt", "ok.txt"]
    copy = tmp_path / "copy"
    assert main(["dedup", str(root), "-o", str(copy), "-q"]) == 0
    assert sorted(os.listdir(os.fsencode(copy))) == [  # same name; dedup's note on the copy
        os.fsencode(DEDUP_MARKER), b"bad\xff.txt", b"ok.txt"]


def test_no_reader_lets_a_lone_surrogate_into_ids_or_texts(tmp_path, write, read):
    """Each format with records no UTF-8 output can hold: each is skipped or failed,
    counted, and every id, text and problem left can be written out."""
    lone = "+2AA-"  # utf-7 for a lone surrogate
    write(tmp_path / "d" / "one.txt", "fine")
    write(tmp_path / "d" / "two.txt", lone)
    offsets = pa.array([0, 4, 7], pa.int32()).buffers()[1]  # Parquet does not check UTF-8
    invalid = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"finea\xffb")])
    pq.write_table(pa.table({"text": invalid}), tmp_path / "e.parquet")
    cases = [  # (input, options, records that are not documents)
        (write(tmp_path / "a.txt", f"fine\n{lone}\n"), {"encoding": "utf-7"}, 1),
        (write(tmp_path / "b.csv", b"id,text\nx,fine\n\xff,bad id\ny,bad \xfe text\n"),
         {"id_field": "id"}, 2),
        (write(tmp_path / "c.jsonl", '{"text": "fine"}\n{"text": "\\ud800"}\n'), {}, 1),
        (str(tmp_path / "d"), {"encoding": "utf-7"}, 1),
        (str(tmp_path / "e.parquet"), {}, 1),
    ]
    for path, options, bad in cases:
        documents, report = read([path], **options)
        assert documents.texts == ["fine"], path
        assert report.records_seen - report.processed == bad, path
        assert all(map(utf8_clean, documents.ids + documents.texts))
        json.dumps(report.as_dict(), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------- 3. named pipes


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_in_a_directory_is_skipped_never_opened(tmp_path, no_hang, capsys, write, read):
    root = tmp_path / "in"
    write(root / "a.txt", FOX)
    write(root / "b.txt", "another document entirely, with other words")
    os.mkfifo(root / "pipe.txt")
    documents, report = read([root])
    assert documents.ids == ["a.txt", "b.txt"]
    assert report.records_seen == 3
    assert report.skipped == {"not a regular file": 1}
    assert [(p.source, p.reason) for p in report.problems] == [
        (str(root / "pipe.txt"), "not a regular file")]
    out = tmp_path / "out"
    assert main(["dedup", str(root), "-o", str(out), "-q"]) == 0
    assert "skipped: 1 not a regular file" in capsys.readouterr().out
    assert sorted(os.listdir(out)) == [DEDUP_MARKER, "a.txt", "b.txt"]  # not the pipe


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_given_as_input_is_read_as_a_stream(tmp_path, no_hang, read):
    pipe = tmp_path / "docs.jsonl"
    os.mkfifo(pipe)
    records = "".join(json.dumps({"id": i, "text": t}) + "\n"
                      for i, t in enumerate([FOX, FOX, "something else"]))
    writer = threading.Thread(target=lambda: pipe.write_text(records))
    writer.start()
    documents, report = read([pipe], id_field="id")
    writer.join()
    assert documents.ids == ["0", "1", "2"] and report.processed == 3
    out = tmp_path / "out.jsonl"  # the copy comes from what was read: the pipe is empty now
    write_deduplicated(documents, np.array([True, False, True]), [str(pipe)], out)
    assert out.read_text().splitlines() == [records.splitlines()[0], records.splitlines()[2]]
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


# ---------------------------------------------------------------- 4. zero documents


def test_wrong_text_field_names_the_fields_the_records_have(tmp_path, capsys, write, read):
    path = write(tmp_path / "d.jsonl", '{"id": 1, "body": "x"}\n{"id": 2, "body": "y", '
                                       '"lang": "en"}\nnot json\n')
    documents, report = read([path], allow_empty=True)
    assert len(documents) == 0
    assert report.failed == {"missing field 'text'; fields are id, body, lang": 2,
                             "malformed JSON": 1}
    assert [(p.location, p.reason) for p in report.problems] == [
        ("line 1", "missing field 'text'; fields are id, body, lang"),
        ("line 2", "missing field 'text'; fields are id, body, lang"),
        ("line 3", "malformed JSON"),
    ]
    assert main(["find", path, "-q", "--allow-empty"]) == 0
    assert "failed: 2 missing field 'text'; fields are id, body, lang" in capsys.readouterr().out
    # where some records have the field, the others' reason stays short
    path = write(tmp_path / "e.jsonl", '{"id": 1, "body": "x"}\n{"text": "y"}\n')
    _, report = read([path])
    assert report.failed == {"missing field 'text'": 1}


def test_wrong_column_is_a_usage_error_naming_the_columns(tmp_path, capsys, write):
    path = write(tmp_path / "d.csv", "id,body\n1,x\n")
    assert main(["find", path, "-q"]) == 2
    assert "d.csv: no column 'text'; the columns are ['id', 'body']" in capsys.readouterr().err


@pytest.mark.parametrize("name, data", [("d.csv", "id,text,text\n1,a,b\n"),
                                        ("d.tsv", "id\ttext\ttext\n1\ta\tb\n")])
def test_a_column_named_twice_in_the_header_is_refused_naming_it(tmp_path, capsys, write,
                                                                 name, data):
    path = write(tmp_path / name, data)  # which "text" holds the text would be a guess
    assert main(["find", path, "-q"]) == 2
    assert f"{name}: the header names column 'text' 2 times (columns 2, 3)" in \
        capsys.readouterr().err
    with pytest.raises(ValueError, match="'id' 2 times"):
        read_documents([write(tmp_path / "ids.csv", "id,id,text\n1,2,a\n")], id_field="id")
    # a column named twice that is not read is no guess
    documents, _ = read_documents([write(tmp_path / "notes.csv", "n,n,text\n1,2,a b\n")])
    assert documents.texts == ["a b"]


def test_a_parquet_column_named_twice_is_refused_naming_it(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["1"]), pa.array(["a"]), pa.array(["b"])],
                                        names=["id", "text", "text"]), path)
    with pytest.raises(ValueError, match="d.parquet: the schema names column 'text' 2 times"):
        read_documents([str(path)])


@pytest.mark.parametrize("name, data", [("empty.txt", ""), ("header.csv", "id,text\n"),
                                        ("blank.jsonl", "\n\n")])
def test_inputs_without_records_read_as_zero_documents(tmp_path, name, data, write, read):
    path = write(tmp_path / name, data)
    documents, report = read([path])
    assert len(documents) == 0 and report.records_seen == 0
    assert main(["dedup", path, "-o", str(tmp_path / f"out-{name}"), "-q"]) == 0


# ---------------------------------------------------------------- 5. fuzz

PIECES = [b'"', b'""', b",", b"\t", b"\n", b"\r", b"\r\n", b"\0", b" ", b"a", b"text", b"id",
          b"\xff", b"\xc3\xa9", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\\", b"\\ud800", b"\\udc00",
          b"{", b"}", b":", b"[", b"null", b'{"text": "', b'", "id": "', b'"}']
garbage = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join) | st.binary(max_size=200)
json_text = st.lists(st.sampled_from(["a", " ", "\ud800", "\udfff", "\udcff", "é", '"', "\\",
                                     "\n", "\r", "\0"]), max_size=12).map("".join)
json_line = (st.tuples(garbage, garbage).map(
    lambda pair: b'{"id": "' + pair[0] + b'", "text": "' + pair[1] + b'"}')
    | st.fixed_dictionaries({"id": json_text, "text": json_text | st.lists(json_text)}).map(
        lambda record: json.dumps(record).encode()))  # lone surrogates as \ud800 escapes
FUZZ_INPUTS = {
    "csv": st.tuples(st.sampled_from([b"", b"id,text\n", b"text\r\n"]), garbage),
    "tsv": st.tuples(st.sampled_from([b"", b"id\ttext\n", b"text\n"]), garbage),
    "jsonl": st.tuples(st.just(b""), st.lists(json_line | garbage, max_size=6).map(b"\n".join)),
    "lines": st.tuples(st.just(b""), garbage),
}


@pytest.mark.parametrize("fmt", list(FUZZ_INPUTS))
def test_readers_account_for_every_record_of_arbitrary_bytes(fmt):
    work = tempfile.mkdtemp()

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(data=FUZZ_INPUTS[fmt], id_field=st.sampled_from([None, "id"]))
    def check(data, id_field):
        path = os.path.join(work, f"in.{fmt}")
        with open(path, "wb") as f:
            f.write(b"".join(data))
        id_field = id_field if fmt != "lines" else None
        try:
            documents, report = read_documents([path], fmt=fmt, id_field=id_field)
        except ValueError as err:  # a usage problem (a missing column), said clearly
            assert type(err) is ValueError and path in str(err)
            return
        seen = report.as_dict()
        assert seen["records_seen"] == (seen["processed"] + sum(seen["skipped"].values())
                                        + sum(seen["failed"].values()))
        assert len(documents) == report.processed
        assert all(map(utf8_clean, documents.ids + documents.texts))
        json.dumps(seen, ensure_ascii=False).encode("utf-8")
        keep = np.arange(len(documents)) % 2 == 0
        counts = write_deduplicated(documents, keep, [path], os.path.join(work, f"out.{fmt}"))
        assert counts["removed"] == int((~keep).sum())
        assert counts["written"] == report.records_seen - counts["removed"]

    check()


letters = st.text(alphabet="ab", min_size=1, max_size=3)


@pytest.mark.parametrize("sep", [",", "\t"])
def test_one_open_quote_costs_one_record_wherever_it_is(tmp_path_factory, sep, read):
    """Rows the csv module wrote, with one line whose quote never closes put among them:
    every written row is a document, the bad line alone fails. (A field that starts
    with a letter: a stray quote closing the open one then has text after it.)"""
    work = tmp_path_factory.mktemp("quote")
    field = st.tuples(letters, st.text(alphabet=f'ab "\n{sep}', max_size=8)).map("".join)

    @settings(max_examples=100, deadline=None, database=None)
    @given(texts=st.lists(field, min_size=1, max_size=8), at=st.integers(0, 8))
    def check(texts, at):
        at = min(at, len(texts))
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=sep, lineterminator="\n")
        writer.writerow(["id", "text"])
        writer.writerows([str(i), text] for i, text in enumerate(texts))
        lines = buffer.getvalue().splitlines(keepends=True)
        row_lines = [n for n, line in enumerate(lines) if line.split(sep, 1)[0].isdigit()
                     and n > 0]  # first line of each row, ids being digits
        bad_line = row_lines[at] if at < len(texts) else len(lines)
        lines.insert(bad_line, f'bad{sep}"never closed, this quote\n')
        path = work / "in.csv"
        path.write_text("".join(lines))
        documents, report = read([path], id_field="id", delimiter=sep)
        assert documents.ids == [str(i) for i in range(len(texts))]
        assert documents.texts == texts
        assert report.failed == {f"quote opened on line {bad_line + 1} is never closed": 1} or (
            list(report.failed) == [f"quote opened on line {bad_line + 1} closes mid-field on "
                                    f"line {list(report.failed)[0].rsplit(' ', 1)[1]}"])

    check()


@pytest.mark.parametrize("sep", [",", "\t"])
def test_rows_the_csv_module_writes_read_back_exactly(tmp_path_factory, sep, read):
    """No open quote is seen where there is none: any text the csv module writes,
    quotes, delimiters and line breaks included, reads back as the same rows."""
    work = tmp_path_factory.mktemp("written")
    text = st.text(alphabet=st.sampled_from(['"', sep, "\n", "\r", " ", "a", "é", "\0"]),
                   min_size=1, max_size=10).filter(lambda t: t.strip())

    @settings(max_examples=100, deadline=None, database=None)
    @given(texts=st.lists(text, max_size=8), terminator=st.sampled_from(["\n", "\r\n"]))
    def check(texts, terminator):
        path = work / "in.csv"
        with open(path, "w", newline="") as f:
            # (with "\n" lines, the csv module leaves a "\r" unquoted: unreadable)
            quoting = csv.QUOTE_MINIMAL if terminator == "\r\n" else csv.QUOTE_ALL
            writer = csv.writer(f, delimiter=sep, lineterminator=terminator, quoting=quoting)
            writer.writerow(["id", "text"])
            writer.writerows([str(i), text] for i, text in enumerate(texts))
        documents, report = read([path], id_field="id", delimiter=sep)
        assert documents.texts == texts
        assert report.failed == {} and report.skipped == {}

    check()


def test_dedup_copy_quotes_a_carriage_return_inside_a_field(tmp_path, write, read):
    """The csv module would write "a\\r" unquoted in a file of "\\n" lines; read again,
    the "\\r" would end the row."""
    path = write(tmp_path / "in.csv", f'id,text\n0,"a\r"\n1,{FOX}\n2,{FOX}\n3,"b\rc"\n')
    documents, _ = read([path], id_field="id")
    out = tmp_path / "out.csv"
    write_deduplicated(documents, np.array([True, True, False, True]), [path], out)
    assert out.read_bytes() == f'id,text\n"0","a\r"\n1,{FOX}\n"3","b\rc"\n'.encode()
    copy, _ = read([out], id_field="id")
    assert copy.ids == ["0", "1", "3"] and copy.texts == ["a\r", FOX, "b\rc"]


@pytest.mark.parametrize("tail", [b" ", b"\t \r"])
def test_a_blank_last_line_without_newline_is_no_record_in_the_copy(tmp_path, tail):
    """JSON Lines: a last line of spaces and no newline is copied but counted as no record
    (it is none when read), however the copy reads it."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"text": "a b c"}\n' + tail)
    documents, report = read_documents([str(path)], fmt="jsonl")
    assert report.records_seen == 1 == len(documents)
    counts = write_deduplicated(documents, np.ones(1, dtype=bool), [str(path)],
                                str(tmp_path / "out.jsonl"))
    assert counts["written"] == report.records_seen
    assert (tmp_path / "out.jsonl").read_bytes() == path.read_bytes()
