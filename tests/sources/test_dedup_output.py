"""The dedup copy as a file (issue 22): written in a hidden stage of its own, never onto
an input or a file of the user's; concurrent runs give one run's copy whole; a write that
fails names the copy; a CSV keeps its byte-order mark; a closed standard output is said
so. Each test is a repro from the report."""

from __future__ import annotations

import codecs
import gzip
import json
import os
import resource
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest

from neardup.cli import main
from neardup.sources import read_documents
from neardup.sources.compression import _open_output
from neardup.sources.copies import write_deduplicated

CLI = ["-t", "0.8", "--shingle", "word", "--ngram", "1", "--min-shingles", "1", "-q"]


def neardup_cli(*args, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neardup", *args], capture_output=True,
                          text=True, **options)


def left_behind(folder) -> list[str]:
    """Hidden files in ``folder``: a stage that was not renamed or removed."""
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


def test_an_input_named_like_the_old_partial_file_is_read_not_destroyed(tmp_path, capsys):
    """D1: `dedup notes.txt.partial -o notes.txt` used the input as its scratch file."""
    notes = tmp_path / "notes.txt.partial"
    notes.write_bytes(b"a b c d e f\nx y z w v u\na b c d e f\n")
    assert main(["dedup", str(notes), "-o", str(tmp_path / "notes.txt"), *CLI]) == 0
    assert notes.read_bytes() == b"a b c d e f\nx y z w v u\na b c d e f\n"
    assert (tmp_path / "notes.txt").read_bytes() == b"a b c d e f\nx y z w v u\n"
    assert left_behind(tmp_path) == []


def test_a_file_of_the_users_beside_the_copy_is_left_alone(tmp_path, capsys):
    """D22: `dedup a.jsonl -o kk.jsonl` overwrote (then removed) kk.jsonl.partial."""
    rows = [{"text": "one two three four"}, {"text": "one two three four"},
            {"text": "five six seven eight"}]
    source = tmp_path / "a.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mine = tmp_path / "kk.jsonl.partial"
    mine.write_bytes(b"my own notes\n")
    assert main(["dedup", str(source), "-o", str(tmp_path / "kk.jsonl"), *CLI]) == 0
    assert mine.read_bytes() == b"my own notes\n"
    assert (tmp_path / "kk.jsonl").read_text().count("one two") == 1
    assert left_behind(tmp_path) == []


def test_two_copies_written_at_once_to_one_path_leave_one_of_them_whole(tmp_path):
    """D2: runs writing one target shared its scratch file and interleaved their lines.
    Two copies open at once, written and closed in turn: the target is the last one
    closed, byte for byte, and neither fails."""
    target = str(tmp_path / "same.jsonl")
    first, second = b"".join(b"first %d\n" % k for k in range(5000)), b"second\n" * 100
    with _open_output(target) as a:
        a.write(first[:len(first) // 2])
        with _open_output(target) as b:
            b.write(second)
            a.write(first[len(first) // 2:])
        with open(target, "rb") as f:
            assert f.read() == second  # the second copy, whole, while the first is open
    with open(target, "rb") as f:
        assert f.read() == first
    assert left_behind(tmp_path) == []


@pytest.mark.slow  # three processes at once: 3-8 s; the test above holds the property
def test_three_concurrent_runs_give_exactly_one_runs_copy(tmp_path):
    """D2 from the outside: three `dedup -o SAME.jsonl` at once all succeed, and the file
    is one of the three copies, not a mix of their lines."""
    copies = []
    for run in range(3):
        rows = [{"text": f"run {run} document {k} " + " ".join(f"w{run}x{k}x{j}"
                                                              for j in range(8))}
                for k in range(3000)]
        path = tmp_path / f"in{run}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        copies.append(path.read_bytes())  # every document distinct: the copy is the input
    target = tmp_path / "out" / "same.jsonl"
    runs = [subprocess.Popen([sys.executable, "-m", "neardup", "dedup",
                              str(tmp_path / f"in{run}.jsonl"), "-o", str(target), *CLI],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for run in range(3)]
    errors = [run.communicate()[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], errors
    assert target.read_bytes() in copies
    assert left_behind(target.parent) == []


def test_a_stale_stage_is_swept_but_an_input_named_like_one_is_not(tmp_path):
    """A killed run's stage (a pid that no longer runs) is removed on the next write of
    its target; one that is an input of this run is read and kept."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".out.txt.neardup-{dead}-0000aaaa"
    stale.write_bytes(b"half a copy\n")
    source = tmp_path / f".out.txt.neardup-{dead}-1111bbbb"
    source.write_bytes(b"a b c d\na b c d\ne f g h\n")
    documents, _ = read_documents([str(source)])
    write_deduplicated(documents, np.array([True, False, True]), [str(source)],
                       str(tmp_path / "out.txt"))
    assert not stale.exists()
    assert source.read_bytes() == b"a b c d\na b c d\ne f g h\n"
    assert (tmp_path / "out.txt").read_bytes() == b"a b c d\ne f g h\n"


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_copy_that_does_not_fit_names_its_file_and_leaves_the_old_one(tmp_path):
    """D11: the kernel refuses the copy's bytes past a file-size limit (EFBIG, as ENOSPC
    on a full disk): the error names the copy, exit 1, the previous copy is untouched and
    no stage is left."""
    source = tmp_path / "big.jsonl"
    source.write_text("".join(json.dumps({"text": f"document {k} " + "x" * (k % 50)})
                              + "\n" for k in range(20_000)))
    out = tmp_path / "full-disk" / "dd.jsonl"
    out.parent.mkdir()
    out.write_bytes(b"the previous copy\n")
    run = neardup_cli("dedup", str(source), "-o", str(out), *CLI,
                      preexec_fn=_limit_file_size(source.stat().st_size // 2))
    assert run.returncode == 1, run.stderr
    assert f"File too large: {out}" in run.stderr
    assert "Traceback" not in run.stderr
    assert out.read_bytes() == b"the previous copy\n"
    assert left_behind(out.parent) == []


@pytest.mark.skipif(not (os.path.exists("/dev/full")
                         and stat.S_ISCHR(os.stat("/dev/full").st_mode)),
                    reason="needs /dev/full (Linux)")
def test_a_full_device_is_written_in_place_and_named(tmp_path):
    """D11 with ENOSPC: a target that is a device (here a link to /dev/full, which takes
    no byte) is written in place, never replaced by a regular file, and the error names
    it."""
    source = tmp_path / "c.jsonl"
    source.write_text(json.dumps({"text": "one two three four five"}) + "\n")
    full = tmp_path / "full.jsonl"
    full.symlink_to("/dev/full")
    run = neardup_cli("dedup", str(source), "-o", str(full), *CLI)
    assert run.returncode == 1, run.stderr
    assert f"No space left on device: {full}" in run.stderr
    assert full.is_symlink() and stat.S_ISCHR(os.stat(full).st_mode)
    assert left_behind(tmp_path) == []


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_csv_copy_keeps_the_inputs_byte_order_mark(tmp_path, suffix, capsys):
    """D14: a UTF-8 CSV with a BOM came back without it (JSONL and text copies keep it)."""
    body = b"text,id\r\nhello world foo bar,1\r\nhello world foo bar,2\r\nsomething else,3\r\n"
    for name, data in (("bom", codecs.BOM_UTF8 + body), ("plain", body)):
        source = tmp_path / f"{name}.csv{suffix}"
        source.write_bytes(gzip.compress(data) if suffix else data)
        out = tmp_path / f"{name}.dd.csv"
        assert main(["dedup", str(source), "-o", str(out), *CLI]) == 0
        expected = data.replace(b"hello world foo bar,2\r\n", b"")
        assert out.read_bytes() == expected, name


def test_a_closed_standard_output_is_said_so(tmp_path):
    """D16: `dedup c.jsonl -o - >&-` failed with AttributeError on sys.stdout None."""
    source = tmp_path / "c.jsonl"
    source.write_text(json.dumps({"text": "one two three four five"}) + "\n")
    run = neardup_cli("dedup", str(source), "-o", "-", *CLI, preexec_fn=lambda: os.close(1))
    assert run.returncode == 1
    assert "standard output is closed" in run.stderr
    assert "AttributeError" not in run.stderr and "Traceback" not in run.stderr
