"""Input kinds: compressed files, JSON arrays, --encoding, ignore files, dedup to standard
output, line texts in the cluster summary, a representative field of any input.

Each kind is held to the plain file it stands for: the same documents, the same pairs
(ids, Jaccard and estimate, NaN where the exact join has none), and a dedup copy that
holds the same records.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.sources import IGNORED, VCS_FOLDER, read_documents
from neardup.sources.copies import write_deduplicated
from neardup.synthetic import planted_corpus

OPTIONS = dict(threshold=0.8, shingle_kind="word", shingle_size=1)
CLI_OPTIONS = ["-t", "0.8", "--shingle", "word", "--ngram", "1", "-q"]
AD = "the same job advert, posted again and again by one agency, apply online today"


@pytest.fixture(scope="module")
def corpus():
    planted = planted_corpus(80, doc_words=40, dup_fraction=0.2, similarity=(0.82, 1.0),
                             exact_copies=4, vocabulary=5_000, seed=3)
    return [f"d{k}" for k in range(len(planted.texts))], planted.texts


def plain_bytes(fmt: str, ids: list[str], texts: list[str]) -> bytes:
    """The corpus as a plain file of ``fmt``, with a few records that are not documents."""
    if fmt == "jsonl":
        lines = [json.dumps({"id": i, "text": t}) for i, t in zip(ids, texts)]
        lines[3:3] = ["{not json", "", '{"id": "e", "text": " "}']
        return ("\n".join(lines) + "\n").encode()
    if fmt in ("csv", "tsv"):
        out = io.StringIO()
        writer = csv.writer(out, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        writer.writerow(["id", "text"])
        writer.writerows(zip(ids, texts))
        writer.writerow(["short", ""])
        return out.getvalue().encode()
    if fmt == "lines":
        return ("\n".join(texts[:5] + ["", "  "] + texts[5:]) + "\n").encode()
    if fmt == "json":
        elements = [{"id": i, "text": t} for i, t in zip(ids, texts)]
        elements[2:2] = [["not", "an", "object"], {"id": "no text"}]
        return json.dumps(elements, indent=2).encode()
    raise AssertionError(fmt)


COMPRESS = {"gzip": (".gz", gzip.compress), "bz2": (".bz2", bz2.compress),
            "xz": (".xz", lzma.compress)}


def compressor(kind: str):
    if kind == "zstd":
        zstandard = pytest.importorskip("zstandard")
        return ".zst", zstandard.ZstdCompressor().compress, \
            lambda data: zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    suffix, compress = COMPRESS[kind]
    module = {"gzip": gzip, "bz2": bz2, "xz": lzma}[kind]
    return suffix, compress, module.decompress


SUFFIX = {"jsonl": ".jsonl", "csv": ".csv", "tsv": ".tsv", "lines": ".txt", "json": ".json"}
FIELDS = {"jsonl": dict(id_field="id"), "csv": dict(id_field="id"), "tsv": dict(id_field="id"),
          "lines": {}, "json": dict(id_field="id")}


def same_pairs(a, b) -> None:
    """The same document pairs: ids, exact Jaccard and estimate (NaN where exact)."""
    ta, tb = a.pairs_table(), b.pairs_table()
    assert ta.num_rows == tb.num_rows
    for column in ("id_a", "id_b"):
        assert ta.column(column).to_pylist() == tb.column(column).to_pylist()
    for column in ("jaccard", "estimate"):
        assert np.array_equal(ta.column(column).to_numpy(), tb.column(column).to_numpy(),
                              equal_nan=True)


def read_counts(result) -> dict:
    return {k: v for k, v in result.read_report.items() if k not in ("inputs", "problems")}


# ---------------------------------------------------------------- compressed inputs


@pytest.mark.parametrize("kind", ["gzip", "zstd", "bz2", "xz"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv", "lines", "json"])
def test_compressed_input_reads_finds_and_dedups_as_the_plain_file(tmp_path, corpus, fmt, kind):
    suffix, compress, decompress = compressor(kind)
    data = plain_bytes(fmt, *corpus)
    plain = tmp_path / f"docs{SUFFIX[fmt]}"
    packed = tmp_path / f"docs{SUFFIX[fmt]}{suffix}"
    plain.write_bytes(data)
    packed.write_bytes(compress(data))

    expected = neardup.find(str(plain), **OPTIONS, **FIELDS[fmt])
    result = neardup.find(str(packed), **OPTIONS, **FIELDS[fmt])
    assert result.ids == expected.ids
    assert read_counts(result) == read_counts(expected)
    assert expected.read_report["skipped"] or expected.read_report["failed"]
    assert result.read_report["inputs"][0]["format"] == fmt
    assert expected.counts["pairs"] > 10
    same_pairs(result, expected)

    neardup.dedup(str(plain), tmp_path / f"plain.out{SUFFIX[fmt]}", **OPTIONS, **FIELDS[fmt])
    copy = tmp_path / f"packed.out{SUFFIX[fmt]}{suffix}"
    written = neardup.dedup(str(packed), copy, **OPTIONS, **FIELDS[fmt]).counts["dedup"]
    assert decompress(copy.read_bytes()) == (tmp_path / f"plain.out{SUFFIX[fmt]}").read_bytes()
    assert written["removed"] == expected.counts["removable"] > 0
    # the CLI: the same copy, compressed as its name says
    cli_copy = tmp_path / f"cli.out{SUFFIX[fmt]}{suffix}"
    id_args = ["--id-field", "id"] if FIELDS[fmt] else []
    assert main(["dedup", str(packed), *id_args, *CLI_OPTIONS, "-o", str(cli_copy)]) == 0
    assert decompress(cli_copy.read_bytes()) == decompress(copy.read_bytes())


def test_compressed_input_copy_follows_the_name_of_the_output(tmp_path, corpus):
    data = plain_bytes("jsonl", *corpus)
    (tmp_path / "docs.jsonl").write_bytes(data)
    (tmp_path / "docs.jsonl.gz").write_bytes(gzip.compress(data))
    neardup.dedup(str(tmp_path / "docs.jsonl"), tmp_path / "a.jsonl", **OPTIONS)
    neardup.dedup(str(tmp_path / "docs.jsonl.gz"), tmp_path / "b.jsonl", **OPTIONS)
    neardup.dedup(str(tmp_path / "docs.jsonl"), tmp_path / "c.jsonl.xz", **OPTIONS)
    plain = (tmp_path / "a.jsonl").read_bytes()
    assert (tmp_path / "b.jsonl").read_bytes() == plain
    assert lzma.decompress((tmp_path / "c.jsonl.xz").read_bytes()) == plain
    # two runs, byte-identical gzip (no time or name in the header)
    neardup.dedup(str(tmp_path / "docs.jsonl"), tmp_path / "d1.jsonl.gz", **OPTIONS)
    neardup.dedup(str(tmp_path / "docs.jsonl"), tmp_path / "d2.jsonl.gz", **OPTIONS)
    assert (tmp_path / "d1.jsonl.gz").read_bytes() == (tmp_path / "d2.jsonl.gz").read_bytes()
    # several inputs: each copy keeps its input's name, so its compression
    out = tmp_path / "several"
    neardup.dedup([str(tmp_path / "docs.jsonl"), str(tmp_path / "docs.jsonl.gz")], out,
                  **OPTIONS)
    assert gzip.decompress((out / "docs.jsonl.gz").read_bytes()).count(b"\n") > 0


def test_truncated_compressed_file_reads_up_to_the_break_and_fails_the_rest(tmp_path, corpus):
    data = plain_bytes("lines", *corpus)
    packed = gzip.compress(data)
    path = tmp_path / "docs.txt.gz"
    path.write_bytes(packed[: len(packed) // 2])
    documents, report = read_documents([str(path)])
    report.check()
    reasons = [r for r in report.failed if r.startswith("corrupt or truncated gzip data")]
    assert len(reasons) == 1 and report.failed[reasons[0]] == 1
    assert 0 < len(documents) < len(corpus[1])
    # the lines before the break, in order (the last one may be cut short by it)
    assert documents.texts[:-1] == corpus[1][:len(documents) - 1]
    assert corpus[1][len(documents) - 1].startswith(documents.texts[-1])
    counts = write_deduplicated(documents, np.ones(len(documents), bool), [str(path)],
                                tmp_path / "copy.txt")
    assert counts["outputs"][0]["not_copied"] == 1


def test_compressed_inputs_that_cannot_be_read_say_why(tmp_path, monkeypatch, corpus):
    table = pa.table({"text": corpus[1]})
    pq.write_table(table, tmp_path / "docs.parquet")
    (tmp_path / "docs.parquet.gz").write_bytes(
        gzip.compress((tmp_path / "docs.parquet").read_bytes()))
    with pytest.raises(ValueError, match="Parquet compresses its own columns"):
        read_documents([str(tmp_path / "docs.parquet.gz")])
    with pytest.raises(ValueError, match="Parquet compresses its own columns"):
        neardup.dedup(str(tmp_path / "docs.parquet"), tmp_path / "out.parquet.gz", **OPTIONS)
    (tmp_path / "docs.jsonl.zst").write_bytes(b"not read")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    with pytest.raises(ValueError, match=r"zstandard package \(pip install zstandard\)"):
        read_documents([str(tmp_path / "docs.jsonl.zst")])


# ---------------------------------------------------------------- JSON arrays


def test_json_array_finds_the_pairs_of_the_same_records_as_jsonl(tmp_path, corpus):
    ids, texts = corpus
    elements = [{"text": t, "n": k} for k, t in enumerate(texts)]
    (tmp_path / "docs.json").write_text(json.dumps(elements))
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(e) + "\n" for e in elements))
    as_array = neardup.find(str(tmp_path / "docs.json"), **OPTIONS)
    as_lines = neardup.find(str(tmp_path / "docs.jsonl"), **OPTIONS)
    assert as_array.ids == [str(k + 1) for k in range(len(texts))]  # 1-based positions
    same_pairs(as_array, as_lines)
    by_field = neardup.find(str(tmp_path / "docs.json"), id_field="n", **OPTIONS)
    assert by_field.ids == [str(k) for k in range(len(texts))]


def test_json_array_accounts_for_every_element_and_dedup_writes_the_rest_back(tmp_path,
                                                                              corpus):
    path = tmp_path / "docs.json"
    path.write_bytes(plain_bytes("json", *corpus))
    documents, report = read_documents([str(path)], id_field="id")
    report.check()
    assert report.records_seen == len(corpus[1]) + 2
    assert report.failed == {"not a JSON object": 1, "missing field 'text'": 1}
    assert [(p.location, p.reason) for p in report.problems] == [
        ("element 3", "not a JSON object"), ("element 4", "missing field 'text'")]
    assert documents.record.tolist()[:3] == [0, 1, 4]
    result = neardup.dedup(str(path), tmp_path / "out.json", id_field="id", **OPTIONS)
    kept = json.loads((tmp_path / "out.json").read_text())
    original = json.loads(path.read_text())
    removed = {i for i, keep in zip(result.ids, result.representative) if not keep}
    assert kept == [e for e in original if not (isinstance(e, dict) and e.get("id") in removed)]
    assert len(removed) == result.counts["removable"] > 0
    # the layout is the input's: json.dumps(indent=2) minus the removed elements
    assert (tmp_path / "out.json").read_text() == json.dumps(kept, indent=2)


def test_json_lone_object_is_one_record_and_a_malformed_file_fails_whole(tmp_path):
    (tmp_path / "one.json").write_text(json.dumps({"text": AD, "id": 7}))
    documents, report = read_documents([str(tmp_path / "one.json")])
    assert documents.ids == ["1"] and documents.texts == [AD] and report.records_seen == 1
    documents, _ = read_documents([str(tmp_path / "one.json")], id_field="id")
    assert documents.ids == ["7"]
    bad = tmp_path / "bad.json"
    bad.write_text('[{"text": "a"},\n {"text": "b"]\n')
    documents, report = read_documents([str(bad)], allow_empty=True)
    report.check()
    assert len(documents) == 0 and report.records_seen == 1
    assert report.failed == {"malformed JSON file: Expecting ',' delimiter": 1}
    assert report.problems[0].location == "line 2 column 14"
    scalar = tmp_path / "scalar.json"
    scalar.write_text('"just a string"')
    _, report = read_documents([str(scalar)], allow_empty=True)
    assert report.failed == {"not a JSON array or object": 1}
    out = tmp_path / "copy.json"
    write_deduplicated(documents, np.ones(0, bool), [str(bad)], out)
    assert out.read_bytes() == bad.read_bytes()  # a failed record is written back


# ---------------------------------------------------------------- --encoding


def test_encoding_option_reaches_every_reader(tmp_path, capsys):
    text = "café " + AD
    (tmp_path / "latin.txt").write_bytes(f"{text}\n{text}\n".encode("latin-1"))
    assert main(["find", str(tmp_path / "latin.txt"), "-q"]) == 0
    assert "skipped: 2 not UTF-8" in capsys.readouterr().out
    assert main(["find", str(tmp_path / "latin.txt"), "--encoding", "latin-1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "read 2 records: 2 documents" in out and "keep 1: café the same" in out
    rows = f'id,text\na,"{text}"\nb,"{text}"\n'.encode("cp1252")
    (tmp_path / "t.csv").write_bytes(rows)
    copy = tmp_path / "copy.csv"
    assert main(["dedup", str(tmp_path / "t.csv"), "--encoding", "cp1252", "-q",
                 "-o", str(copy)]) == 0
    assert copy.read_bytes() == f'id,text\na,"{text}"\n'.encode("cp1252")
    assert main(["find", str(tmp_path / "t.csv"), "--encoding", "no-such-codec"]) == 2
    assert "unknown encoding 'no-such-codec'" in capsys.readouterr().err


# ---------------------------------------------------------------- ignore files


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    files = {
        "a.py": AD, "b.py": AD,
        ".gitignore": "build/\n*.log\n/generated.py\n",
        "generated.py": AD,
        "build/out.py": AD,
        "debug.log": AD,
        "pkg/c.py": AD,
        "pkg/.gitignore": "!keep.log\nlocal.py\n",
        "pkg/keep.log": AD,
        "pkg/local.py": AD,
        "pkg/generated.py": AD,  # /generated.py is anchored to the root's folder
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/objects/ab": AD,
        "pkg/.hg/store": AD,
        ".svn/entries": AD,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_directory_skips_vcs_folders_and_gitignored_files_and_counts_them(repo, tmp_path):
    documents, report = read_documents([str(repo)])
    report.check()
    assert documents.ids == [".gitignore", "a.py", "b.py", "pkg/.gitignore", "pkg/c.py",
                             "pkg/generated.py", "pkg/keep.log"]
    # a file counts once, a folder not entered once, whatever it holds
    assert report.skipped == {IGNORED: 4, VCS_FOLDER: 3}  # build/ debug.log generated.py
    assert report.problems == []  # pkg/local.py; routine, not problems
    assert report.records_seen == len(documents) + 7
    out = tmp_path / "copy"
    counts = write_deduplicated(documents, np.ones(len(documents), bool), [str(repo)], out)
    copied = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert copied == sorted([*documents.ids, ".neardup-dedup.json"])
    assert counts["outputs"][0]["not_copied"] == 7


def test_ignore_switch_reads_everything(repo, capsys):
    documents, report = read_documents([str(repo)], respect_ignore=False)
    report.check()
    assert {"build/out.py", "debug.log", "pkg/local.py", ".git/objects/ab", "pkg/.hg/store",
            ".svn/entries"} <= set(documents.ids)
    assert report.skipped == {}
    assert main(["find", str(repo), "-q"]) == 0
    out = capsys.readouterr().out
    assert "skipped: 4 ignored (.gitignore)" in out and "skipped: 3 VCS folder" in out
    assert main(["find", str(repo), "--no-ignore", "-q"]) == 0
    out = capsys.readouterr().out
    assert "ignored" not in out and "read 15 records: 15 documents" in out


def test_exclude_applies_before_gitignore_and_include_still_selects(repo):
    documents, report = read_documents([str(repo)], include=["*.py"], exclude=["build"])
    report.check()
    assert documents.ids == ["a.py", "b.py", "pkg/c.py", "pkg/generated.py"]
    assert report.skipped == {IGNORED: 2, VCS_FOLDER: 3}  # generated.py, pkg/local.py


# ---------------------------------------------------------------- dedup -o -


@pytest.fixture
def many_lines(tmp_path, write_lines):
    """20,000 distinct lines (more than a pipe holds) and a few copies."""
    rng = np.random.default_rng(1)
    letters = np.array(list("abcdefghijklmnop "))
    lines = ["".join(rng.choice(letters, 40)) for _ in range(20_000)]
    lines[10:10] = [AD] * 3
    path = tmp_path / "many.txt"
    write_lines(path, lines)
    return path


def neardup_command(*args: str) -> str:
    return " ".join([sys.executable, "-m", "neardup", *args])


@pytest.mark.slow  # 20,000 lines through three processes: 4-11 s
def test_dedup_to_stdout_piped_into_head_exits_quietly(many_lines, tmp_path, run_cli):
    run = subprocess.run(neardup_command("dedup", str(many_lines), "-q", "-o", "-") + " | head -3",
                         shell=True, capture_output=True, text=True,
                         executable="/bin/bash")
    lines = many_lines.read_text().splitlines()
    assert run.stdout.splitlines() == lines[:3]
    assert "Traceback" not in run.stderr and "Broken" not in run.stderr, run.stderr
    status = subprocess.run(neardup_command("dedup", str(many_lines), "-q", "-o", "-")
                            + " | head -1 >/dev/null; echo ${PIPESTATUS[0]}", shell=True,
                            capture_output=True, text=True, executable="/bin/bash")
    assert status.stdout.strip() == "0"
    whole = run_cli("dedup", str(many_lines), "-q", "-o", "-")
    neardup.dedup(str(many_lines), tmp_path / "copy.txt")
    assert whole.stdout == (tmp_path / "copy.txt").read_text()
    assert whole.stdout.count(AD) == 1
    assert "written to standard output" in whole.stderr and "removed" in whole.stderr


def test_dedup_csv_to_stdout_read_by_a_csv_reader(tmp_path, corpus):
    path = tmp_path / "docs.csv"
    path.write_bytes(plain_bytes("csv", *corpus))
    reader = ("import csv, sys; rows = list(csv.reader(sys.stdin)); "
              "print(len(rows) - 1, rows[0], rows[1][0])")
    run = subprocess.run(neardup_command("dedup", str(path), "--id-field", "id", *CLI_OPTIONS,
                                         "-o", "-") + f" | {sys.executable} -c '{reader}'",
                         shell=True, capture_output=True, text=True)
    result = neardup.dedup(str(path), tmp_path / "copy.csv", id_field="id", **OPTIONS)
    with open(tmp_path / "copy.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert run.stdout.strip() == f"{len(rows) - 1} ['id', 'text'] {rows[1][0]}"
    assert len(rows) - 1 == len(corpus[1]) + 1 - result.counts["removable"]


def test_dedup_to_stdout_takes_one_file_and_refuses_a_directory(repo, tmp_path, capsys):
    assert main(["dedup", str(repo), "-o", "-"]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "cannot go to standard output" in err
    (tmp_path / "a.txt").write_text(AD + "\n")
    assert main(["dedup", str(tmp_path / "a.txt"), str(tmp_path / "a.txt"), "-o", "-"]) == 2
    assert "for one input only" in capsys.readouterr().err


def test_dedup_of_a_compressed_input_to_stdout_is_plain_text(tmp_path, corpus, capfd):
    data = plain_bytes("jsonl", *corpus)
    (tmp_path / "docs.jsonl.gz").write_bytes(gzip.compress(data))
    neardup.dedup(str(tmp_path / "docs.jsonl.gz"), tmp_path / "copy.jsonl", **OPTIONS)
    capfd.readouterr()
    neardup.dedup(str(tmp_path / "docs.jsonl.gz"), "-", **OPTIONS)
    assert capfd.readouterr().out == (tmp_path / "copy.jsonl").read_text()


# ---------------------------------------------------------------- line texts in clusters


def test_clusters_of_a_line_file_show_the_lines(tmp_path, capsys):
    path = tmp_path / "names.txt"
    long_line = AD + " " + "and more words " * 10
    path.write_text("\n".join(["Jonathan Smith", "jonathan smith", "Mary Jones",
                               "JONATHAN  SMITH", long_line, long_line + "!"]) + "\n")
    assert main(["find", str(path), "--shingle", "char", "-k", "3", "-t", "0.8", "-q"]) == 0
    out = capsys.readouterr().out
    assert "  [3] keep 1: Jonathan Smith\n        2: jonathan smith\n" in out
    assert "        4: JONATHAN SMITH\n" in out  # whitespace runs shown as one space
    shown = next(line for line in out.splitlines() if line.startswith("  [2] keep 5: "))
    assert shown.endswith("…") and len(shown.split(": ", 1)[1]) == 80
    assert "Mary" not in out


def test_clusters_of_stdin_lines_show_the_lines(run_cli):
    run = run_cli("find", "-", "-q", input=f"{AD}\nsomething else\n{AD}\n")
    assert run.returncode == 0
    assert f"  [2] keep 1: {AD}\n        3: {AD}\n" in run.stdout


def test_clusters_of_records_show_ids_only(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "x", "text": AD}) + "\n"
                    + json.dumps({"id": "y", "text": AD}) + "\n")
    assert main(["find", str(path), "--id-field", "id", "-q"]) == 0
    assert "  [2] keep x\n        y\n" in capsys.readouterr().out


# ---------------------------------------------------------------- representative field


RANKED = [  # (id, date, priority): the text is the same AD for all
    ("a", "2021-03-01", "10"), ("b", "2020-12-31", "9"), ("c", None, "2"),
    ("d", "2021-01-15", None),
]


def kept_id(result) -> str:
    return [i for i, keep in zip(result.ids, result.representative) if keep][0]


def test_representative_field_of_jsonl_numbers_as_numbers_strings_as_strings(tmp_path):
    path = tmp_path / "d.jsonl"
    with open(path, "w") as f:
        for doc_id, date, priority in RANKED:
            record = {"id": doc_id, "text": AD, "date": date}
            if priority is not None:
                record["priority"] = int(priority)
            f.write(json.dumps(record) + "\n")
    by_date = neardup.find(str(path), id_field="id", representative_field="date")
    assert kept_id(by_date) == "b"  # a missing date ranks last
    assert by_date.config.representative == "field"
    by_priority = neardup.find(str(path), id_field="id", representative_field="priority")
    assert kept_id(by_priority) == "c"  # 2 < 9 < 10 as numbers
    copy = tmp_path / "copy.jsonl"
    assert main(["dedup", str(path), "--id-field", "id", "--representative-field", "priority",
                 "-q", "-o", str(copy)]) == 0
    assert [json.loads(line)["id"] for line in copy.read_text().splitlines()] == ["c"]
    with pytest.raises(ValueError, match="no document has a value"):
        neardup.find(str(path), representative_field="no_such_field")


def test_representative_field_of_csv_numeric_column_compares_as_numbers(tmp_path, capsys):
    path = tmp_path / "d.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text", "date", "priority"])
        for doc_id, date, priority in RANKED:
            writer.writerow([doc_id, AD, date or "", priority or ""])
    assert kept_id(neardup.find(str(path), id_field="id", representative_field="priority")) \
        == "c"  # "2" < "9" < "10": the column reads as numbers
    assert kept_id(neardup.find(str(path), id_field="id", representative_field="date")) == "b"
    assert main(["find", str(path), "--id-field", "id", "--representative-field", "date",
                 "-q"]) == 0
    assert "keep b" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no column 'nope'"):
        neardup.find(str(path), representative_field="nope")
    with pytest.raises(ValueError, match="not 'longest'"):
        neardup.find(str(path), representative_field="date", representative="longest")


def test_representative_field_of_json_array_and_parquet(tmp_path):
    elements = [{"id": doc_id, "text": AD, "priority": None if p is None else int(p)}
                for doc_id, _, p in RANKED]
    (tmp_path / "d.json").write_text(json.dumps(elements))
    assert kept_id(neardup.find(str(tmp_path / "d.json"), id_field="id",
                                representative_field="priority")) == "c"
    pq.write_table(pa.table({"id": [r[0] for r in RANKED], "text": [AD] * len(RANKED),
                             "date": [r[1] for r in RANKED],
                             "priority": [None if r[2] is None else int(r[2]) for r in RANKED]}),
                   tmp_path / "d.parquet")
    for field, kept in (("priority", "c"), ("date", "b")):
        assert kept_id(neardup.find(str(tmp_path / "d.parquet"), id_field="id",
                                    representative_field=field)) == kept
    with pytest.raises(ValueError, match="has no fields"):
        neardup.find(str(tmp_path / "d.json"), fmt="lines", representative_field="priority")


def test_representative_field_values_are_kept_per_document(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "one", "n": 3}\n{"text": ""}\n{"text": "two"}\n'
                    '{"text": "three", "n": [1]}\n')
    documents, _ = read_documents([str(path)], extra_fields=["n"])
    assert documents.fields == {"n": [3, None, [1]]}  # the blank record is no document
