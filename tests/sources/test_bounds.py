"""Under a memory limit no read holds more than a bound (issue 22, D3): a record longer than
``max_record_bytes`` is skipped and counted without being kept, whatever holds it (a
compressed stream, a pipe, a CSV field, a file in a directory); a stream kept whole is
charged as it grows; a device is never read."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tracemalloc

import pytest

from neardup.sources import read_document_chunks

NEARDUP = [sys.executable, "-m", "neardup"]
MiB = 1 << 20
BOUND = 1 << 20
TOO_LARGE = f"record larger than {BOUND:,} bytes"
SHORT = ["the first short line of some text", "the last short line of some other text"]


def big_line(size: int):
    """``size`` bytes of one line, written a MiB at a time (never held whole)."""
    for _ in range(size // MiB):
        yield b"x" * MiB


def write_gzip(path, before: bytes, size: int, after: bytes) -> str:
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(before)
        for block in big_line(size):
            f.write(block)
        f.write(after)
    return str(path)


def read_bounded(paths, **options):
    """(ids, texts, report as a dict, peak bytes Python allocated while reading)."""
    tracemalloc.start()
    try:
        chunks, report, _ = read_document_chunks([str(p) for p in paths], chunk_chars=MiB,
                                                 max_record_bytes=BOUND, **options)
        ids, texts = [], []
        for chunk in chunks:
            ids += chunk.ids
            texts += chunk.texts
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    report.check()
    return ids, texts, report.as_dict(), peak


def summary_read(out) -> dict:
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["read"]


@pytest.mark.parametrize("fmt", ["lines", "jsonl"])
def test_a_line_past_the_bound_in_a_compressed_file_is_skipped_without_being_kept(tmp_path,
                                                                                   fmt):
    if fmt == "lines":
        before, after = (SHORT[0] + "\n").encode(), ("\n" + SHORT[1] + "\n").encode()
    else:
        before = (json.dumps({"text": SHORT[0]}) + "\n").encode() + b'{"text": "'
        after = b'"}\n' + (json.dumps({"text": SHORT[1]}) + "\n").encode()
    path = write_gzip(tmp_path / f"docs.{fmt}.gz", before, 40 * MiB, after)
    ids, texts, report, peak = read_bounded([path])
    assert texts == SHORT and ids == ["1", "3"]
    assert report["records_seen"] == 3 and report["skipped"] == {TOO_LARGE: 1}
    assert report["problems"][0]["location"] == "line 2"
    assert peak < 8 * MiB  # the 40 MiB line was never held


def test_a_line_of_exactly_the_bound_is_read(tmp_path, write):
    path = write(tmp_path / "docs.txt", b"y" * BOUND + b"\n" + b"z" * (BOUND + 1) + b"\nend")
    ids, texts, report, _ = read_bounded([path])
    assert ids == ["1", "3"] and len(texts[0]) == BOUND
    assert report["skipped"] == {TOO_LARGE: 1}


@pytest.mark.parametrize("newlines", [False, True])
def test_a_csv_field_past_the_bound_skips_its_row_only(tmp_path, newlines):
    path = tmp_path / "docs.csv"
    with open(path, "wb") as f:
        f.write(f'id,text\na,"{SHORT[0]}"\nhuge,"'.encode())
        for block in big_line((4 if newlines else 30) * MiB):
            f.write(block.replace(b"x" * 64, b"x" * 63 + b"\n") if newlines else block)
        f.write(f'"\nb,"{SHORT[1]}"\n'.encode())
    ids, texts, report, peak = read_bounded([path], id_field="id")
    # on one line or on 65,536: one record skipped, the row after it read as a row
    assert ids == ["a", "b"] and texts == SHORT
    assert (report["records_seen"], report["skipped"], report["failed"]) == \
        (3, {TOO_LARGE: 1}, {})
    assert [p["location"] for p in report["problems"]] == ["row 2 (line 3)"]
    assert peak < 8 * MiB


def _csv_text(rows, lineterminator: str, quoting: int) -> list[str]:
    """Each row's CSV text (the first the header)."""
    import csv
    import io

    texts = []
    for row in rows:
        out = io.StringIO(newline="")
        csv.writer(out, lineterminator=lineterminator, quoting=quoting).writerow(row)
        texts.append(out.getvalue())
    return texts


@pytest.mark.parametrize("seed", range(30))
def test_a_csv_row_past_the_bound_is_one_record_wherever_its_quotes_span_lines(tmp_path,
                                                                               seed):
    """Random rows with quoted fields over lines, quotes, delimiters, CR and CRLF: read
    under a bound, a row longer than the bound (its lines together) is one skipped
    record, named at its row and line, and every other row is read as it is without a
    bound."""
    import csv
    import random

    from neardup.sources import read_documents

    rng = random.Random(seed)
    ending = rng.choice(["\n", "\r\n"])
    pieces = ["a", "b c", ",", '"', '""', "\n", "\r\n", " ", "xyz" * 5]
    if ending == "\r\n":  # the csv module quotes a lone CR only under a CRLF ending
        pieces.append("\r")

    def field() -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.choice([0, 1, 3, 8, 30, 90])))

    rows = [["id", "text", "n"]] + [[f"r{k}", field() + "t", field()]
                                    for k in range(rng.randint(5, 40))]
    row_texts = _csv_text(rows, ending, rng.choice([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    path = tmp_path / "in.csv"
    path.write_bytes("".join(row_texts).encode())
    bound = rng.randint(20, 200)
    starts = [1 + sum(len(t.splitlines()) for t in row_texts[:k]) for k in range(len(rows))]
    long = {k for k in range(1, len(rows)) if len(row_texts[k]) > bound}  # header: row 0
    whole, whole_report = read_documents([path], id_field="id")
    chunks, report, _ = read_document_chunks([path], id_field="id", chunk_chars=MiB,
                                             max_record_bytes=bound)
    ids, records = [], []
    for chunk in chunks:
        ids += chunk.ids
        records += chunk.record.tolist()
    kept = [k for k, r in enumerate(whole.record.tolist()) if r + 1 not in long]
    assert ids == [whole.ids[k] for k in kept] == [rows[r + 1][0] for r in records]
    assert len(whole) == len(rows) - 1 and len(ids) == len(rows) - 1 - len(long)
    report = report.as_dict()
    assert report["records_seen"] == len(rows) - 1 and report["failed"] == {}
    assert report["skipped"] == ({f"record larger than {bound:,} bytes": len(long)}
                                 if long else {})
    assert [p["location"] for p in report["problems"]] == [
        f"row {k} (line {starts[k]})" for k in sorted(long)]


def test_a_directory_file_past_the_bound_is_skipped_unread(tmp_path, write):
    root = tmp_path / "docs"
    write(root / "a.txt", SHORT[0])
    with open(root / "sparse.log", "wb") as f:
        f.truncate(64 * MiB)  # a sparse file: its size from stat, never read
    write_gzip(root / "b.txt.gz", b"", 16 * MiB, b"")  # decompresses past the bound
    ids, texts, report, peak = read_bounded([root])
    assert ids == ["a.txt"]
    assert report["skipped"] == {TOO_LARGE: 2}
    assert peak < 8 * MiB  # neither the 64 MiB nor the 16 MiB was held


def test_a_compressed_line_past_the_memory_limit_is_skipped_and_the_limit_kept(tmp_path,
                                                                               anon_peak):
    path = write_gzip(tmp_path / "big.txt.gz", (SHORT[0] + "\n").encode(), 200 * MiB,
                      ("\n" + SHORT[1] + "\n").encode())
    out = tmp_path / "out"
    limit = 256 * MiB
    code, peak, err = anon_peak([*NEARDUP, "find", path, "--memory-limit", "256M", "-q",
                                 "--out", str(out)], limit=2 * limit, timeout=60)
    assert code == 0, err
    assert peak < 2 * limit
    read = summary_read(out)
    assert read["processed"] == 2 and sum(read["skipped"].values()) == 1
    assert next(iter(read["skipped"])).startswith("record larger than")


def test_a_csv_field_past_the_memory_limit_skips_its_row_and_the_limit_is_kept(tmp_path,
                                                                               anon_peak):
    path = tmp_path / "docs.csv"
    with open(path, "wb") as f:
        f.write(f'id,text\na,"{SHORT[0]}"\nhuge,"'.encode())
        for block in big_line(60 * MiB):
            f.write(block)
        f.write(f'"\nb,"{SHORT[1]}"\n'.encode())
    out = tmp_path / "out"
    limit = 512 * MiB  # above the floor its survey asks (the longest line, read)
    code, peak, err = anon_peak([*NEARDUP, "find", str(path), "--id-field", "id",
                                 "--memory-limit", "512M", "-q", "--out", str(out)],
                                limit=limit, timeout=60)
    assert code == 0, err
    read = summary_read(out)
    assert read["processed"] == 2 and sum(read["skipped"].values()) == 1
    assert next(iter(read["skipped"])).startswith("record larger than")
    assert peak < limit


@pytest.mark.parametrize("producer", [["head", "-c", "300M", "/dev/zero"], ["yes"]])
def test_standard_input_is_charged_as_it_grows(producer, anon_peak):
    limit = 256 * MiB
    source = subprocess.Popen(producer, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        code, peak, err = anon_peak([*NEARDUP, "find", "-", "--memory-limit", "256M", "-q"],
                                    limit=2 * limit, stdin=source.stdout, timeout=30)
    finally:
        source.stdout.close()
        source.kill()
        source.wait()
    assert code == 2, err  # refused, naming why, before the limit is passed
    assert "<stdin> is a stream, kept whole" in err and "--memory-limit" in err
    assert peak < 2 * limit


def test_a_device_given_as_an_input_is_refused_unread(anon_peak):
    code, peak, err = anon_peak([*NEARDUP, "find", "/dev/zero", "-q"], limit=1 << 30,
                                timeout=30)
    assert code == 2, err
    assert "/dev/zero is a character device, not a file" in err


@pytest.mark.parametrize("seed", range(40))
def test_line_blocks_keep_every_line_within_the_bound_and_empty_the_rest(seed):
    """Whatever the block size and the bound (above or below it), the blocks' lines are
    the stream's lines in order, each longer than the bound emptied and listed, the rest
    byte for byte; every block ends at a line end or the stream's end."""
    import io
    import random

    from neardup.sources.bounded import line_blocks

    rng = random.Random(seed)
    lines = [b"y" * rng.choice([0, 1, 3, 7, 8, 9, 15, 40]) for _ in range(rng.randint(1, 60))]
    data = b"\n".join(lines) + rng.choice([b"", b"\n"])
    bound, block_bytes = rng.randint(0, 20), rng.randint(1, 50)
    expected = data.split(b"\n")
    if data.endswith(b"\n"):
        expected.pop()
    got, flagged = [], []
    for block, too_long in line_blocks(io.BytesIO(data), block_bytes, bound):
        assert block.endswith(b"\n") or len(got) + block.count(b"\n") + 1 == len(expected)
        parts = block.split(b"\n")
        if block.endswith(b"\n"):
            parts.pop()
        flagged.extend(len(got) + k for k in too_long)
        got.extend(parts)
    assert flagged == [k for k, line in enumerate(expected) if len(line) > bound]
    assert got == [b"" if len(line) > bound else line for line in expected]
