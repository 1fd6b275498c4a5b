"""Units under a memory limit with a record longer than a chunk can take: the record is
skipped unread, counted in the read report, and copied unchanged (its units not
removed); the other records are deduplicated as in memory, and the run stays under its
limit whether the input is a file, compressed or standard input."""

from __future__ import annotations

import gzip
import json
import sys

import pytest

import neardup
from neardup.pipeline.outofcore import parse_size
from neardup.sources.bounded import too_large
from neardup.units.sorted_runs import chunking_for, limit_for_record

LIMIT = "384M"  # the floor of --unit span; a chunk then takes records up to 512 KiB
SMALL = [{"id": "a", "text": "Nav bar links\nsmall one"},
         {"id": "c", "text": "Nav bar links\nsmall two"}]


def long_record(lines: int) -> dict:
    return {"id": "big", "text": "Nav bar links\n" + "lorem ipsum dolor sit amet\n" * lines}


def corpus(path, lines: int) -> list[bytes]:
    """SMALL's first record, the long one, SMALL's second; the lines written."""
    rows = [json.dumps(r).encode() + b"\n" for r in (SMALL[0], long_record(lines), SMALL[1])]
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.writelines(rows)
    return rows


def expected_copy(rows: list[bytes], unit: str, tmp_path) -> bytes:
    """The small records deduplicated in memory, the long one between them as it was."""
    small = tmp_path / "small.jsonl"
    small.write_bytes(rows[0] + rows[2])
    out = tmp_path / "small.out.jsonl"
    neardup.dedup(small, out, unit=unit, id="id")
    first, last = out.read_bytes().splitlines(keepends=True)
    return first + rows[1] + last


@pytest.mark.parametrize("unit", ["line", "span"])
def test_a_record_a_chunk_cannot_take_is_copied_unchanged_and_counted(tmp_path, unit):
    rows = corpus(tmp_path / "in.jsonl", 100_000)  # 2.7 MB
    bound = chunking_for(parse_size(LIMIT), unit).record_bytes
    assert len(rows[1]) > bound
    with pytest.warns(UserWarning, match=r"the longest record \(line 2 of .*--memory-limit "
                                         r"(\S+) or more to process it") as told:
        result = neardup.dedup(tmp_path / "in.jsonl", tmp_path / "out.jsonl", unit=unit,
                               id="id", memory_limit=LIMIT, work_dir=tmp_path / "w")
    assert (tmp_path / "out.jsonl").read_bytes() == expected_copy(rows, unit, tmp_path)
    assert result.read_report["skipped"] == {too_large(bound): 1}
    assert result.read_report["problems"][0]["location"] == "line 2"
    c = result.counts
    assert (c["records_seen"], c["documents_kept"], c["skipped"], c["dedup"]["written"]) == \
        (3, 2, 1, 3)
    assert f"1 skipped (1 {too_large(bound)})" in result.describe()
    # the limit the warning names processes it: its units are removed
    advised = str(told[0].message).rsplit("--memory-limit ", 1)[1].split()[0]
    assert parse_size(advised) >= limit_for_record(len(rows[1]), unit)
    assert chunking_for(parse_size(advised), unit).record_bytes >= len(rows[1])


@pytest.mark.slow
@pytest.mark.parametrize(("unit", "given"), [("line", "file"), ("line", "gz"),
                                             ("line", "stdin"), ("span", "file")])
def test_a_long_record_keeps_the_limit(tmp_path, anon_peak, unit, given):
    """28 MB in one record of a million lines: processed in a chunk, its anonymous
    memory passed the 384M limit (file, gzip, standard input; line and span); skipped
    unread and copied a piece at a time, the run stays under it."""
    path = tmp_path / ("in.jsonl.gz" if given == "gz" else "in.jsonl")
    rows = corpus(path, 1_000_000)
    limit = parse_size(LIMIT)
    source = ["-", "--format", "jsonl"] if given == "stdin" else [str(path)]
    command = [sys.executable, "-m", "neardup", "dedup", *source, "--id-field", "id",
               "--unit", unit, "--memory-limit", LIMIT, "-q", "-o", str(tmp_path / "out.jsonl"),
               "--work-dir", str(tmp_path / "w")]
    with open(path, "rb") as stdin:
        code, peak, err = anon_peak(command, limit=limit, timeout=120,
                                    stdin=stdin if given == "stdin" else None)
    assert code == 0, err
    assert 0 < peak <= limit
    assert (tmp_path / "out.jsonl").read_bytes() == expected_copy(rows, unit, tmp_path)


def test_standard_input_past_what_the_limit_leaves_for_it_is_refused(tmp_path):
    """Standard input is kept whole for the copy: past a quarter of what the fixed part
    leaves, the run ends saying so and writes nothing."""
    import subprocess

    room = chunking_for(parse_size(LIMIT), "line").stream_bytes
    line = json.dumps({"id": "x", "text": "a line\n" * 1000}).encode() + b"\n"
    data = line * (room // len(line) + 1)
    run = subprocess.run([sys.executable, "-m", "neardup", "dedup", "-", "--format", "jsonl",
                          "--unit", "line", "--memory-limit", LIMIT, "-o",
                          str(tmp_path / "out.jsonl")], input=data, capture_output=True)
    assert run.returncode == 2
    assert f"holds more than {room:,} bytes" in run.stderr.decode()
    assert not (tmp_path / "out.jsonl").exists()


def csv_corpus(path, lines: int) -> list[bytes]:
    """As :func:`corpus` in CSV: the long record a quoted cell over ``lines`` lines, with
    quotes, delimiters and CRLF inside it; the rows written (the header first)."""
    big = 'Nav bar links, "quoted"\n' + 'lorem ipsum, "dolor" sit amet\r\n' * lines
    rows = [b"id,text\n", b'a,"Nav bar links\nsmall one"\n',
            b'big,"' + big.replace('"', '""').encode() + b'"\n', b'c,"Nav bar links\nsmall two"\n']
    with open(path, "wb") as f:
        f.writelines(rows)
    return rows


@pytest.mark.parametrize("unit", ["line", "span"])
def test_a_csv_cell_over_many_lines_a_chunk_cannot_take_is_one_record_copied_unchanged(
        tmp_path, unit):
    rows = csv_corpus(tmp_path / "in.csv", 100_000)  # 3 MB over 100,001 lines
    bound = chunking_for(parse_size(LIMIT), unit).record_bytes
    assert len(rows[2]) > bound
    result = neardup.dedup(tmp_path / "in.csv", tmp_path / "out.csv", unit=unit, id="id",
                           memory_limit=LIMIT, work_dir=tmp_path / "w")
    (tmp_path / "small.csv").write_bytes(rows[0] + rows[1] + rows[3])
    neardup.dedup(tmp_path / "small.csv", tmp_path / "small.out.csv", unit=unit, id="id")
    small = (tmp_path / "small.out.csv").read_bytes()
    if unit == "line":
        assert small.endswith(b"\nc,small two\n")  # its repeated line removed
    at = small.rindex(b"\nc,") + 1
    assert (tmp_path / "out.csv").read_bytes() == small[:at] + rows[2] + small[at:]
    assert result.read_report["skipped"] == {too_large(bound): 1}
    assert result.read_report["failed"] == {}
    assert [p["location"] for p in result.read_report["problems"]] == ["row 2 (line 4)"]
    c = result.counts
    assert (c["records_seen"], c["documents_kept"], c["skipped"], c["dedup"]["written"]) == \
        (3, 2, 1, 3)


@pytest.mark.slow
def test_a_long_csv_cell_over_many_lines_keeps_the_limit(tmp_path, anon_peak):
    """33 MB in one quoted cell of a million lines: read on at the next line inside the
    cell, its lines were 961,165 failed rows and the run passed the 384M limit; skipped
    to where its quote closes, it is one record, copied unchanged, under the limit."""
    rows = csv_corpus(tmp_path / "in.csv", 1_000_000)
    command = [sys.executable, "-m", "neardup", "dedup", str(tmp_path / "in.csv"),
               "--id-field", "id", "--unit", "line", "--memory-limit", LIMIT, "-q", "-o",
               str(tmp_path / "out.csv"), "--work-dir", str(tmp_path / "w")]
    code, peak, err = anon_peak(command, limit=parse_size(LIMIT), timeout=120)
    assert code == 0, err
    assert 0 < peak <= parse_size(LIMIT)
    copy = (tmp_path / "out.csv").read_bytes()
    assert copy.startswith(rows[0] + rows[1] + rows[2]) and copy.endswith(b"c,small two\n")
