"""JSON Lines files read in byte ranges by the Python workers give the lines Spark's text
reader (Hadoop's line reader, "\\n" only) gives, each exactly once and in order, however
the file is cut."""

from __future__ import annotations

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

from neardup.spark.read import _lines_of, _lines_ranked, line_splits, read_lines  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402

BOM = b"\xef\xbb\xbf"
AWKWARD = [b"", b"\n", b"\n\n", b"a", b"a\n", BOM, BOM + b"\n", BOM + b"ab\ncd",
           b"ab\r\ncd\r\n\r\n", b"x" * 50 + b"\ny", b"\n\na\n\nb\n\n",
           b'{"text": "caf\xe9"}\n{"text": "b"}']


def _lines(original: bytes) -> list[bytes]:
    """The file's lines by hand: cut at "\\n", no line after a last "\\n", a UTF-8
    byte-order mark at the start left out (a file of only one is one empty line)."""
    data = original.removeprefix(BOM)
    lines = data.split(b"\n")
    if original.endswith(b"\n") or not original:
        lines.pop()
    return lines


def _read(path, splits, batch_rows):
    """The lines as read for a find (each with its "\n": the file's bytes as they are)
    and as read for a copy (without), checked to be the same lines."""
    got, bare = [], []
    for part, (start, end) in enumerate(splits):
        ranks = []
        for batch in _lines_of(str(path), start, end, part, batch_rows):
            assert batch.num_rows <= batch_rows
            assert batch.column("part").to_pylist() == [part] * batch.num_rows
            ranks += batch.column("record").to_pylist()
            got += batch.column("raw").to_pylist()
        assert ranks == list(range(len(ranks)))  # the line's rank in its split
        for batch in _lines_of(str(path), start, end, part, batch_rows, newlines=False):
            bare += batch.column("raw").to_pylist()
    data = path.read_bytes()
    assert b"".join(got) == data.removeprefix(BOM)[:len(b"".join(got))]
    assert all(line.endswith(b"\n") for line in got[:-1])
    assert [line.removesuffix(b"\n") for line in got] == bare
    return bare


def test_every_cut_of_a_file_gives_each_line_once_in_order(tmp_path):
    rng = np.random.default_rng(3)
    files = AWKWARD + [bytes(rng.choice(list(b"ab\n\r"), size=int(rng.integers(0, 40))))
                       for _ in range(150)]
    path = tmp_path / "lines.jsonl"
    for data in files:
        path.write_bytes(data)
        for n in range(1, 10):
            splits = [(k * len(data) // n, (k + 1) * len(data) // n) for k in range(n)]
            for batch_rows in (1, 3, 1000):
                assert _read(path, splits, batch_rows) == _lines(data), (data, n, batch_rows)


def test_lines_read_again_by_rank_are_the_lines_read_first(tmp_path):
    """The lines a verification reads again (a few ranks of a split) are, byte for byte,
    the lines of those ranks the first pass read; a file that lost lines since is an
    error, not another document."""
    rng = np.random.default_rng(5)
    files = AWKWARD + [bytes(rng.choice(list(b"ab\n\r"), size=int(rng.integers(1, 60))))
                       for _ in range(100)]
    path = tmp_path / "lines.jsonl"
    for data in files:
        path.write_bytes(data)
        for n in (1, 2, 5):
            for part, (start, end) in enumerate(
                    [(k * len(data) // n, (k + 1) * len(data) // n) for k in range(n)]):
                first = [line for batch in _lines_of(str(path), start, end, part, 7)
                         for line in batch.column("raw").to_pylist()]
                ranks = np.flatnonzero(rng.random(len(first)) < 0.5)
                again = _lines_ranked(str(path), start, end, part, ranks)
                assert again.column("raw").to_pylist() == [first[k] for k in ranks], data
                assert again.column("record").to_pylist() == ranks.tolist()
                assert again.column("part").to_pylist() == [part] * ranks.size
    path.write_bytes(b"a\nb\n")
    with pytest.raises(RuntimeError, match="changed since it was read"):
        _lines_ranked(str(path), 0, 4, 0, np.array([0, 5]))


def test_splits_cover_the_file_within_the_settings(spark, tmp_path):
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"0123456789\n" * 10_000)  # 110,000 bytes
    with split_inputs(spark, 4096):
        splits = line_splits(spark, str(path))
    cores = spark.sparkContext.defaultParallelism
    assert splits[0][0] == 0 and splits[-1][1] == 110_000
    assert all(a[1] == b[0] for a, b in zip(splits, splits[1:]))
    assert all(0 < end - start <= 4096 for start, end in splits)
    assert len(splits) % cores == 0
    # by default, as Spark's file reader: a file below openCostInBytes (4 MiB) is one split
    assert line_splits(spark, str(path)) == [(0, 110_000)]


@pytest.mark.parametrize("data", [b"".join(AWKWARD[-5:]) * 40, BOM + b"a\r\nb\n" * 300])
def test_the_split_lines_are_spark_text_readers_lines(spark, tmp_path, data):
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    with split_inputs(spark, 64):
        theirs = [row["value"] for row in spark.read.text(str(path), lineSep="\n")
                  .selectExpr("cast(value as binary) value").collect()]
        splits = line_splits(spark, str(path))
        ours = read_lines(spark, str(path), splits).orderBy("part", "record").collect()
    assert len(splits) > 10
    assert [bytes(row["raw"]) for row in ours] == [bytes(v) for v in theirs] == _lines(data)
