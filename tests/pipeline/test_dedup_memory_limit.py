"""dedup --memory-limit of whole documents: the copy under a limit small enough for many
chunks is byte for byte the in-memory dedup's, with the same counts, in every format
dedup copies; a limit below the floor is refused with it, before anything is written."""

from __future__ import annotations

import csv
import gzip
import json
import os
import random
import subprocess
import sys

import pytest

import neardup
from neardup.cli import main
from neardup.pipeline import outofcore
from neardup.pipeline.outofcore import MemoryCosts, MemoryLimitError, parse_size
from neardup.sources import lines as line_files

SHINGLES = dict(shingle_kind="word", shingle_size=1, threshold=0.6, method="lsh")
SMALL = "256k"  # with MemoryCosts.chunks_only(): chunks of about 1,024 characters


def _texts(seed: int = 5) -> list[str]:
    """Unrelated texts of 30 words, exact copies, and chains (each link replaces 6
    words of the one before: neighbours at J ~ 0.67, ends at J ~ 0.43)."""
    rng = random.Random(seed)
    vocabulary = [f"w{k}" for k in range(5000)]

    def text():
        return rng.sample(vocabulary, 30)

    def link(words):
        words = list(words)
        for k in rng.sample(range(len(words)), 6):
            words[k] = rng.choice(vocabulary)
        return words

    texts = []
    for k in range(12):
        words = text()
        texts.append(words)
        if k % 3 == 0:
            texts.append(list(words))  # an exact copy
        if k % 4 == 1:
            texts += [(a := link(words)), link(a)]  # a chain
    rng.shuffle(texts)
    return [" ".join(words) for words in texts]


TEXTS = _texts()


def _ids() -> list[str]:
    ids = [f"doc{k}" for k in range(len(TEXTS))]
    ids[5] = ids[2]  # a repeated id: renamed doc2#2, still one document each
    return ids


def _write(tmp_path, fmt: str) -> str:
    ids = _ids()
    if fmt in ("jsonl", "jsonl.gz", "json"):
        records = [{"id": i, "text": t, "meta": {"k": k}} for k, (i, t) in
                   enumerate(zip(ids, TEXTS))]
        if fmt == "json":
            records.insert(3, {"id": "empty", "text": ""})  # skipped: empty text
            path = tmp_path / "docs.json"
            path.write_text(json.dumps(records, indent=1), encoding="utf-8")
            return str(path)
        lines = [json.dumps(r) for r in records]
        lines.insert(3, '{"id": "broken", "text": "unterminated')  # failed: bad JSON
        lines.insert(7, json.dumps({"id": "empty", "text": ""}))  # skipped: empty text
        lines.insert(9, "")  # a blank line: no record, copied
        data = ("\n".join(lines) + "\n").encode()
        if fmt == "jsonl.gz":
            path = tmp_path / "docs.jsonl.gz"
            path.write_bytes(gzip.compress(data, mtime=0))
        else:
            path = tmp_path / "docs.jsonl"
            path.write_bytes(data)
        return str(path)
    if fmt in ("csv", "tsv"):
        path = tmp_path / f"docs.{fmt}"
        delimiter = "," if fmt == "csv" else "\t"
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, delimiter=delimiter)
            writer.writerow(["id", "text", "meta"])
            for k, (i, t) in enumerate(zip(ids, TEXTS)):
                if k == 4:
                    writer.writerow(["empty", "", "skipped"])
                if k == 6:
                    writer.writerow(["multi", "a text\nover two lines", "x"])
                writer.writerow([i, t, f"m{k}"])
            f.write(f'broken{delimiter}"never closed{delimiter}x\r\n')  # failed row
            writer.writerow(["last", "a last text after the broken row", "y"])
        return str(path)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        texts, keys = list(TEXTS), list(ids)
        texts.insert(4, None)  # skipped: null text
        keys.insert(4, "nulltext")
        texts.insert(8, "a text whose id is null")
        keys.insert(8, None)  # failed: null id
        path = tmp_path / "docs.parquet"
        pq.write_table(pa.table({"id": keys, "text": texts,
                                 "n": list(range(len(texts)))}), path)
        return str(path)
    if fmt == "lines":
        lines = list(TEXTS)
        lines.insert(4, "")  # skipped: empty line
        lines.insert(9, "   ")
        path = tmp_path / "docs.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(path)
    assert fmt == "dir"
    root = tmp_path / "tree"
    for k, text in enumerate(TEXTS):
        folder = root / f"part{k % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{k:03d}.txt").write_text(text, encoding="utf-8")
    (root / "binary.bin").write_bytes(b"\x00\x01 binary")  # skipped: binary file
    (root / "empty.txt").write_text("", encoding="utf-8")
    return str(root)


def _tree(path: str) -> dict[str, bytes]:
    """A file's bytes, or a folder's files' bytes by relative path."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    files = {}
    for folder, _, names in os.walk(path):
        for name in names:
            full = os.path.join(folder, name)
            with open(full, "rb") as f:
                files[os.path.relpath(full, path)] = f.read()
    return files


def _both(tmp_path, monkeypatch, inputs, name: str, **options):
    """(in-memory result, limited result, in-memory copy, limited copy): the copy named
    ``name`` in two folders, the limited run in chunks of about 1,024 characters."""
    keywords = dict(id_field="id", **SHINGLES, **options)
    whole_out, small_out = tmp_path / "whole" / name, tmp_path / "small" / name
    whole_out.parent.mkdir()
    small_out.parent.mkdir()
    whole = neardup.dedup(inputs, str(whole_out), **keywords)
    with monkeypatch.context() as patch:
        patch.setattr(outofcore, "COSTS", MemoryCosts.chunks_only())
        patch.setattr(line_files, "LINE_BLOCK_BYTES", 512)  # a line file's chunks close too
        small = neardup.dedup(inputs, str(small_out), memory_limit=SMALL,
                              work_dir=str(tmp_path / "work"), **keywords)
    return whole, small, _tree(str(whole_out)), _tree(str(small_out))


def _same_counts(whole, small) -> None:
    assert small.counts["chunks"]["chunks_read"] >= 3  # many chunks, not one
    counts = {k: v for k, v in small.counts.items() if k != "chunks"}
    dedup, other = counts.pop("dedup"), dict(whole.counts)
    expected = other.pop("dedup")
    assert counts == other
    for written in (dedup, expected):  # the copies are in different folders
        for output in written["outputs"]:
            output["output"] = os.path.basename(output["output"])
    assert dedup == expected
    assert small.read_report == whole.read_report
    assert small.ids == whole.ids  # renamed repeats included


FORMATS = ["jsonl", "jsonl.gz", "json", "csv", "tsv", "parquet", "lines", "dir"]
OUT_NAMES = {"jsonl": "out.jsonl", "jsonl.gz": "out.jsonl.gz", "json": "out.json",
             "csv": "out.csv", "tsv": "out.tsv", "parquet": "out.parquet", "lines": "out.txt",
             "dir": "out"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_copy_under_a_limit_is_the_in_memory_copy(fmt, tmp_path, monkeypatch):
    path = _write(tmp_path, fmt)
    whole, small, whole_copy, small_copy = _both(tmp_path, monkeypatch, path, OUT_NAMES[fmt])
    assert small_copy == whole_copy
    _same_counts(whole, small)
    assert whole.counts["dedup"]["removed"] >= 6  # copies and chain links went
    report = whole.read_report
    assert report["records_seen"] == report["processed"] + sum(
        report["skipped"].values()) + sum(report["failed"].values())
    if fmt not in ("dir", "json"):
        assert report["failed"] or report["skipped"]
    if fmt in ("jsonl", "jsonl.gz", "csv", "tsv", "parquet"):
        assert report["failed"] and report["skipped"]  # both were copied back
    assert not (tmp_path / "work").exists() or not os.listdir(tmp_path / "work")


def test_several_inputs_under_a_limit_give_the_in_memory_folder(tmp_path, monkeypatch):
    inputs = [_write(tmp_path, fmt) for fmt in ("jsonl", "csv", "lines", "parquet")]
    whole, small, whole_copy, small_copy = _both(tmp_path, monkeypatch, inputs, "copies")
    assert set(small_copy) >= {"docs.jsonl", "docs.csv", "docs.txt", "docs.parquet"}
    assert small_copy == whole_copy  # the marker file with its counts included
    _same_counts(whole, small)


def test_the_copy_to_standard_output_under_a_limit(tmp_path, monkeypatch, capfdbinary):
    path = _write(tmp_path, "jsonl")
    neardup.dedup(path, "-", id_field="id", **SHINGLES)
    whole = capfdbinary.readouterr().out
    monkeypatch.setattr(outofcore, "COSTS", MemoryCosts.chunks_only())
    neardup.dedup(path, "-", id_field="id", memory_limit=SMALL, **SHINGLES)
    assert capfdbinary.readouterr().out == whole
    assert 0 < whole.count(b"\n") < len(TEXTS)


def test_below_the_floor_dedup_is_refused_naming_it_and_writes_nothing(tmp_path):
    path = _write(tmp_path, "jsonl")
    out = tmp_path / "out.jsonl"
    with pytest.raises(MemoryLimitError) as refused:
        neardup.dedup(path, str(out), id_field="id", memory_limit="64M",
                      work_dir=str(tmp_path / "work"))
    message = str(refused.value)
    assert "memory limit of 64 MiB is below the floor of ~" in message
    assert "give --memory-limit" in message
    assert not out.exists() and not (tmp_path / "work").exists()


def test_the_cli_dedups_under_a_limit_as_without(tmp_path, capsys):
    path = _write(tmp_path, "jsonl")
    options = ["--id-field", "id", "--method", "lsh", "--shingle", "word", "-k", "1",
               "-t", "0.6", "-q"]
    assert main(["dedup", path, *options, "-o", str(tmp_path / "whole.jsonl")]) == 0
    assert main(["dedup", path, *options, "--memory-limit", "1G",
                 "-o", str(tmp_path / "limited.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert (tmp_path / "limited.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert "documents removed" in printed
    assert main(["dedup", path, *options, "--memory-limit", "64M",
                 "-o", str(tmp_path / "refused.jsonl")]) == 2
    assert "below the floor" in capsys.readouterr().err
    assert not (tmp_path / "refused.jsonl").exists()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")
@pytest.mark.slow  # 20,000 documents, twice, in processes: about 5 s
def test_a_dedup_stays_under_its_limit(tmp_path, write_jsonl, anon_peak):
    """The whole run, the copy included, in a fresh process (as find's test: the
    model's figures are upper bounds)."""
    from neardup.synthetic import planted_corpus

    corpus = planted_corpus(20_000, doc_words=60, dup_fraction=0.02, vocabulary=30_000,
                            seed=3)
    path = write_jsonl(tmp_path / "docs.jsonl", corpus.texts, corpus.ids)
    command = [sys.executable, "-m", "neardup.cli", "dedup", path, "--id-field", "id", "-q"]
    warm = subprocess.run([*command, "--memory-limit", "1G", "-o", str(tmp_path / "warm.jsonl")],
                          capture_output=True)
    assert warm.returncode == 0  # the first run after an install compiles the kernels
    code, peak, _ = anon_peak([*command, "--memory-limit", "200M",
                               "-o", str(tmp_path / "out.jsonl")])
    assert code == 0
    assert 0 < peak <= parse_size("200M")
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "warm.jsonl").read_bytes()
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) < 20_000
