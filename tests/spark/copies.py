"""What the units' Spark tests compare: a dedup copy written as parts against the local
engine's single file, and the counts of both runs."""

import json
import os

import neardup


def parts(folder) -> list:
    """The part files of a results folder, in the manifest's order."""
    manifest = json.loads((folder / "manifest.json").read_text())
    return [folder / f["name"] for f in manifest["files"]]


def same_counts(spark_result, local_result, out) -> None:
    """The counts dicts and read reports are equal, but for the output's name."""
    want = dict(local_result.counts)
    got = dict(spark_result.counts)
    local_dedup, spark_dedup = want.pop("dedup"), got.pop("dedup")
    assert got == want
    assert spark_dedup == local_dedup | {"outputs": [dict(local_dedup["outputs"][0],
                                                          output=str(out) + os.sep)]}
    assert spark_result.read_report == local_result.read_report


def same_copy(path, tmp_path, **options):
    """``dedup`` of ``path`` on both engines: the parts (at least 3, so first occurrences
    and their copies lie in different partitions) read in order are the local copy byte
    for byte and the counts are equal. The local result."""
    local = neardup.dedup(path, tmp_path / "local.jsonl", **options)
    result = neardup.dedup(path, tmp_path / "spark", engine="spark", **options)
    assert len(parts(tmp_path / "spark")) >= 3
    assert joined(tmp_path / "spark") == (tmp_path / "local.jsonl").read_bytes()
    same_counts(result, local, tmp_path / "spark")
    return local


def joined(folder) -> bytes:
    """The part files of a results folder, read in order, back to back."""
    return b"".join(p.read_bytes() for p in parts(folder))
