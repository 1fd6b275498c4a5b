"""dedup --unit on Spark: the part files, read in order, are the local copy byte for byte,
and the counts are the local engine's, for every unit Spark runs and both keep policies,
on a planted corpus split into several partitions (boilerplate lines and paragraphs,
repeated sentences, multi-byte UTF-8, CRLF, blank and failed lines, skipped records, text
fields that hold no string (skipped with their reason and copied unchanged), a last line
without a newline) and with hash collisions forced."""

from __future__ import annotations

import gzip
import json
import os
import random

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.shingling import normalize_light  # noqa: E402
from neardup.spark.units import dedup_units_sources  # noqa: E402
from neardup.units import UnitOptions  # noqa: E402
from neardup.units import hashing as unit_hashing  # noqa: E402
from tests.spark.copies import joined, parts, same_copy, same_counts  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402

BOILERPLATE = ["Accept cookies to continue.", "ACCEPT   cookies to continue.",
               "Impressum © 2024 Ünïcode GmbH.", "日本語のナビゲーション。",
               "Home | News | Contact"]
# text fields that are no string: skipped with their reason, copied as they are (a
# boilerplate line inside one is not a unit; a repeated number is not cut to "")
NOT_STRINGS = {40: 12345678901234567890, 50: ["Accept cookies to continue.", "x"],
               60: {"Accept cookies to continue.": 1}, 70: True, 80: 1.5,
               90: 12345678901234567890}
SENTENCES = ["The river rose.", "Nobody came!", "Was it late?", "Prices fell (again).",
             "Ça va très bien.", "Der Zug fährt ab."]


def _texts(n: int = 160, seed: int = 5) -> list[str]:
    """Web-like pages: boilerplate headers and footers, a repeated paragraph, sentences
    drawn from a small set (so runs of them repeat), unique words, CRLF in some."""
    rng = random.Random(seed)
    texts = []
    for k in range(n):
        lines = [rng.choice(BOILERPLATE)] if rng.random() < 0.7 else []
        body = " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 4)))
        lines += [body, f"Unique words of page {k}: {rng.random():.6f} é."]
        if rng.random() < 0.3:
            lines += ["", "Shared paragraph line one.\nShared paragraph line two.", ""]
        if rng.random() < 0.5:
            lines.append(rng.choice(BOILERPLATE))
        if k % 17 == 3:
            lines = [rng.choice(BOILERPLATE)]  # a page of boilerplate only: dropped
        text = "\n".join(lines)
        texts.append(text.replace("\n", "\r\n") if k % 5 == 0 else text)
    return texts


def _corpus(tmp_path, texts=None) -> os.PathLike:
    texts = _texts() if texts is None else texts
    path = tmp_path / "pages.jsonl"
    with open(path, "w", encoding="utf-8", newline="") as f:
        for k, text in enumerate(texts):
            f.write(json.dumps({"id": f"p{k}", "text": text, "n": k}) + "\n")
            if k == 10:
                f.write("\n")  # blank: no record, copied as it is
            if k == 20:
                f.write("{not json\n")  # failed, copied as it is
            if k == 30:
                f.write(json.dumps({"id": "empty", "text": "  "}) + "\n")  # skipped
            if k in NOT_STRINGS:
                f.write(json.dumps({"id": f"v{k}", "text": NOT_STRINGS[k]}) + "\n")
        f.write(json.dumps({"id": "last", "text": "Accept cookies to continue.\nEnd."}))
    return path


@pytest.fixture
def small_splits(spark):
    """Input files split into several partitions (and kept so), so first occurrences and
    removed copies lie in different partitions and the copy is several parts."""
    with split_inputs(spark, 8192):
        yield


@pytest.mark.parametrize(("unit", "keep", "min_chars"), [
    ("line", "first", 1), ("line", "none", 30), ("paragraph", "none", 1),
    ("sentences:3", "first", 1), ("sentences:2", "none", 40)])
def test_spark_copy_is_the_local_copy_byte_for_byte(spark, tmp_path, small_splits, unit,
                                                     keep, min_chars):
    path = _corpus(tmp_path)
    local = same_copy(path, tmp_path, unit=unit, keep=keep, min_chars=min_chars, id="id")
    assert local.counts["units_removed"] > 10 and local.counts["bytes_removed"] > 0
    copied = joined(tmp_path / "spark").splitlines(keepends=True)
    for k, value in NOT_STRINGS.items():  # each as it was, in its place
        line = (json.dumps({"id": f"v{k}", "text": value}) + "\n").encode()
        assert line in copied
    assert local.read_report["skipped"] == {"empty text": 1} | {
        f"field 'text' holds {kind}, not a string (--unit edits strings only)": n
        for kind, n in (("a number", 3), ("a list", 1), ("an object", 1), ("a boolean", 1))}
    if min_chars > 1:
        assert local.counts["documents_dropped"] > 0


def test_forced_hash_collisions_never_remove_a_different_text(spark, tmp_path, small_splits,
                                                              monkeypatch):
    """Every unit hashed by its length mod 3: most distinct texts share a hash; the
    classes, the copy and the collision count are still the local engine's (which hashes
    the same way here)."""
    def weak(values, offsets):
        return (np.diff(offsets) % 3).astype(np.uint64)

    path = _corpus(tmp_path)
    monkeypatch.setattr(unit_hashing, "piece_hashes", weak)
    local = neardup.dedup(path, tmp_path / "local.jsonl", unit="line")
    result = dedup_units_sources([os.fspath(path)], tmp_path / "spark", UnitOptions("line"),
                                 spark=spark, normalize=normalize_light, hashes=weak)
    monkeypatch.undo()
    assert local.counts["hash_collisions"] > 20
    assert joined(tmp_path / "spark") == (tmp_path / "local.jsonl").read_bytes()
    same_counts(result, local, tmp_path / "spark")
    truth = neardup.dedup(path, tmp_path / "truth.jsonl", unit="line")  # the real hash
    assert (tmp_path / "truth.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert {k: v for k, v in truth.counts.items() if k not in ("hash_collisions", "dedup")} \
        == {k: v for k, v in result.counts.items() if k not in ("hash_collisions", "dedup")}


def test_parquet_rows_and_driver_read_inputs_as_local(spark, tmp_path, small_splits, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = _texts(90, seed=8)
    pq.write_table(pa.table({"id": [f"p{k}" for k in range(len(texts))], "text": texts,
                             "n": list(range(len(texts)))}), tmp_path / "pages.parquet",
                   row_group_size=20)
    options = dict(unit="sentences:2", min_chars=20)
    local = neardup.dedup(tmp_path / "pages.parquet", tmp_path / "local.parquet", **options)
    result = neardup.dedup(tmp_path / "pages.parquet", tmp_path / "spark", engine="spark",
                           **options)
    rows = pq.read_table(tmp_path / "local.parquet").to_pylist()
    spark_rows = [row for part in parts(tmp_path / "spark")
                  for row in pq.read_table(part).to_pylist()]
    assert spark_rows == rows and local.counts["units_removed"] > 0
    same_counts(result, local, tmp_path / "spark")

    path = _corpus(tmp_path)  # compressed: read and copied on the driver, the local layout
    with open(path, "rb") as f, gzip.open(tmp_path / "pages.jsonl.gz", "wb") as g:
        g.write(f.read())
    local = neardup.dedup(tmp_path / "pages.jsonl.gz", tmp_path / "local.jsonl", unit="line")
    assert main(["dedup", str(tmp_path / "pages.jsonl.gz"), "--unit", "line", "--engine",
                 "spark", "-o", str(tmp_path / "spark.jsonl")]) == 0  # the CLI: the same call
    assert (tmp_path / "spark.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert f"{local.counts['units_removed']:,} removed" in capsys.readouterr().out


@pytest.mark.parametrize(("values", "kind"), [([7, 8, 7], "a number"),
                                             ([["a b", "a b"], None, ["a b"]], "a list")])
def test_a_parquet_text_column_that_holds_no_string_is_copied_unchanged(spark, tmp_path,
                                                                        values, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": ["a", "b", "c"], "text": values, "n": [1, 2, 3]})
    pq.write_table(table, tmp_path / "in.parquet")
    local = neardup.dedup(tmp_path / "in.parquet", tmp_path / "local.parquet", unit="line",
                          id="id")
    result = neardup.dedup(tmp_path / "in.parquet", tmp_path / "spark", unit="line", id="id",
                           engine="spark")
    assert pq.read_table(tmp_path / "local.parquet").equals(table)
    assert pa.concat_tables(pq.read_table(p) for p in parts(tmp_path / "spark")).equals(table)
    same_counts(result, local, tmp_path / "spark")
    reason = f"field 'text' holds {kind}, not a string (--unit edits strings only)"
    assert result.read_report["skipped"] == (
        {reason: 3} if None not in values else {"null text": 1, reason: 2})


def test_a_copy_with_several_text_fields_is_refused_by_name(spark, tmp_path):
    path = _corpus(tmp_path, ["a b c"])
    with pytest.raises(ValueError, match="one --text-field"):
        neardup.dedup(path, tmp_path / "out", unit="line", engine="spark",
                      text_fields=("text", "id"))
    assert not (tmp_path / "out").exists()


CODE = ["def f(x):\n    try:\n        return g(x)\n    except KeyError:\n        pass\n"
        "    else:\n        return None\n",
        "class A:\n    \"\"\"\n    An object.\n    \"\"\"\n    def f(x):\n        try:\n"
        "            pass\n        except KeyError:\n            pass\n",
        "Steps. Open it. Then close the lid. Open it. Then close the lid. Done.\n"
        "日本語の文です。\n日本語の文です。\n"]


def test_units_under_the_minimum_are_kept_as_locally(spark, tmp_path, small_splits):
    """Short units (else:, try:, pass, a docstring's quotes) stay in the copy and out of
    the listing on Spark as locally: windows of two sentences under 14 characters or 2
    words in the copy, lines under the default 3 words in the listing; the same counts,
    and the same most frequent short texts in the listing's metadata."""
    path = _corpus(tmp_path, CODE * 40)
    local = same_copy(path, tmp_path, unit="sentences:2", min_unit_chars=14,
                      min_unit_words=2, id="id")
    assert local.counts["units_short_spared"] > 5 and local.counts["units_removed"] > 0
    listed = neardup.repeats(path, unit="line", id="id")
    on_spark = neardup.repeats(path, unit="line", id="id", engine="spark")
    assert on_spark.equals(listed) and on_spark.schema == listed.schema
    spared = json.loads(on_spark.schema.metadata[b"neardup.spared"])
    assert spared == json.loads(listed.schema.metadata[b"neardup.spared"])
    assert spared["repeated"] >= 5 and spared["most_frequent"][0]["count"] >= 120
